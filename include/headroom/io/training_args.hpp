// SPDX-License-Identifier: MIT
// Training configs as users write them: transformers TrainingArguments / TRL SFTConfig fields, with a
// PEFT LoraConfig section ("peft_config") and a BitsAndBytesConfig section ("quantization_config"),
// resolved with each library's own defaults into a run_config (docs/training-args.md). nlohmann_json.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../packing.hpp"
#include "../peak.hpp"
#include "../request.hpp"
#include "../schedules.hpp"
#include "config.hpp"
#include "deepspeed.hpp"

namespace headroom {

/// A training config, resolved: the run, the schedule, and what was assumed or ignored.
struct training_args {
  run_config run{};          ///< resolve_over(defaults, request)
  run_request request{};     ///< what the file said, with the caller's knobs (`later`) merged over it
  run_request defaults{};    ///< the config class's defaults (config_class_defaults) under the request
  std::string config_class;  ///< "SFTConfig" (default) or "TrainingArguments"
  std::string read_as;       ///< the file's kind and the rule that decided it ("TRL script config (...)")
  std::string lr_scheduler_type = "linear";
  double learning_rate = 5e-5;
  double warmup_steps = 0;    ///< as written: a count, or a fraction below 1
  bool packing = false;       ///< rows packed to max_length (throughput: no padding)
  bool padding_free = false;  ///< TRL: forced on by packing with the bfd strategies
  bool torch_compile = false;
  bool deepspeed = false;             ///< the file's `deepspeed` field named a DeepSpeed config
  batching_config batching{};         ///< how the collator shapes variable-length batches (--lengths)
  std::vector<std::string> notes;     ///< defaults applied and consequences worth knowing
  std::vector<std::string> warnings;  ///< fields that change memory but are not modelled
  std::vector<std::string> ignored;   ///< fields read but not used by the estimate
};

namespace detail {
using json = nlohmann::json;

inline std::uint64_t args_count(const json& j, std::string_view key, const std::string& origin,
                                std::uint64_t fallback, std::uint64_t limit) {
  if (!given(j, key)) return fallback;
  return read_count(j, key, origin, limit);
}
inline double args_number(const json& j, std::string_view key, const std::string& origin, double fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
    throw input_error(key_path(origin, key), "must be a finite number >= 0, got " + it->dump());
  return it->get<double>();
}
inline std::string dtype_name(const json& j, const std::string& origin) {
  const auto it = j.find("dtype") != j.end() ? j.find("dtype") : j.find("torch_dtype");
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) throw input_error(origin + ": /dtype", "must be a string such as \"bfloat16\"");
  std::string d = it->get<std::string>();
  if (d.rfind("torch.", 0) == 0) d = d.substr(6);
  static const std::set<std::string> known{"float32", "bfloat16", "float16", "auto"};
  if (known.count(d) == 0)
    throw input_error(origin + ": /dtype", "unknown '" + d + "'; valid: float32, bfloat16, float16, auto");
  return d;
}
/// PEFT's default target_modules for the families headroom reads (utils/constants.py at 5d602fdb:
/// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING and TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING).
/// A model_type without a row (Phi-3, Qwen3-MoE, OLMo-2, Granite, gpt-oss, StarCoder2, Cohere, DeepSeek, …)
/// makes PEFT raise "Please specify `target_modules`".
struct peft_default_mapping {
  std::string_view model_type, lora, ia3;
};
inline constexpr std::array<peft_default_mapping, 9> peft_default_mappings{{
    {"llama", "q_proj,v_proj", "k_proj,v_proj,down_proj"},
    {"mistral", "q_proj,v_proj", "k_proj,v_proj,down_proj"},
    {"mixtral", "q_proj,v_proj", "k_proj,v_proj,down_proj"},  // IA3's w2: the experts' down projection
    {"gemma", "q_proj,v_proj", "q_proj,v_proj,down_proj"},
    {"gemma2", "q_proj,v_proj", "q_proj,v_proj,down_proj"},
    {"gemma3_text", "q_proj,v_proj", "q_proj,v_proj,down_proj"},
    {"qwen2", "q_proj,v_proj", "q_proj,v_proj,down_proj"},
    {"qwen3", "q_proj,v_proj", "q_proj,v_proj,down_proj"},
    {"gpt_neox", "query_key_value", "query_key_value,dense_4h_to_h"},
}};
/// The row for `model_type`, or nullptr when PEFT has none.
inline const peft_default_mapping* peft_defaults(const std::string& model_type) {
  for (const peft_default_mapping& row : peft_default_mappings)
    if (row.model_type == model_type) return &row;
  return nullptr;
}
/// PeftConfig.peft_type strings (peft/utils/peft_types.py PeftType) that headroom models.
inline std::optional<peft_method> peft_method_named(const std::string& type) {
  if (type == "LORA") return peft_method::lora;
  if (type == "IA3") return peft_method::ia3;
  if (type == "VERA") return peft_method::vera;
  if (type == "LN_TUNING") return peft_method::ln_tuning;
  if (type == "PROMPT_TUNING") return peft_method::prompt_tuning;
  if (type == "P_TUNING") return peft_method::p_tuning;
  if (type == "PREFIX_TUNING") return peft_method::prefix_tuning;
  return std::nullopt;
}
/// P-tuning's PromptEncoderConfig and prefix tuning's PrefixTuningConfig fields that change memory.
/// PEFT derives token_dim, num_layers and num_attention_heads from the model; set by hand they are not
/// modelled, and the LSTM head of P-tuning is not either.
inline void read_prompt_encoder(const nlohmann::json& peft, const std::string& po, lora_config& l) {
  for (const char* key : {"token_dim", "num_layers", "num_attention_heads", "num_transformer_submodules"})
    if (const auto v = peft.find(key); v != peft.end() && !v->is_null())
      throw input_error(po + "/" + key, "set by hand is not modelled: PEFT derives it from the model config");
  const bool encoder = l.method == peft_method::p_tuning || l.method == peft_method::prefix_tuning;
  if (const auto v = peft.find("encoder_hidden_size"); v != peft.end() && !v->is_null()) {
    if (!encoder) throw input_error(po + "/encoder_hidden_size", "belongs to P_TUNING and PREFIX_TUNING");
    l.encoder_hidden_size = args_count(peft, "encoder_hidden_size", po, 0, max_encoder_hidden_size);
  }
  if (l.method == peft_method::prefix_tuning)
    l.prefix_projection = read_bool_or(peft, "prefix_projection", po, false);
  if (l.method == peft_method::p_tuning) {
    const std::string head = read_string_or(peft, "encoder_reparameterization_type", po, "MLP");
    if (head == "LSTM")
      throw input_error(
          po + "/encoder_reparameterization_type",
          "'LSTM' is not modelled (its bidirectional LSTM's saved gates); use MLP, PEFT's default");
    if (head != "MLP")
      throw input_error(po + "/encoder_reparameterization_type", "unknown '" + head + "'; valid: MLP, LSTM");
  }
}
}  // namespace detail

/// What the trainer that runs a training-args file does beyond its keys. The defaults are TRL's SFTTrainer
/// (and the Trainer's); a recipe reader names its framework's (recipes/recipe.hpp).
struct trainer_behaviour {
  /// Why the trainer keeps a QLoRA run's adapters in PEFT's fp32 upcast (get_peft_model's
  /// autocast_adapter_dtype); empty: it casts QLoRA's trainable parameters to bf16, as TRL's SFTTrainer does
  /// (sft_trainer.py).
  std::string keeps_fp32_qlora_adapters;
  load_path qlora_load = load_path::bnb_4bit;  ///< how a 4-bit base is loaded (torchtune: torchao's NF4)
  std::string unfrozen_vision_tower;  ///< where the file unfreezes a multimodal model's tower ("": frozen)
};

namespace detail {
/// What the sections of one training-args file share: the file, its class, the precision it chose, and the
/// run as it fills: `q` what the file says (with what its keys imply), `defaults` its config class's defaults
/// for what it leaves out, `later` what the caller sets over the file (the command line's flags).
struct args_reading {
  const json& j;
  const std::string& origin;
  const loaded_model& model;
  const run_request& later;
  const trainer_behaviour& trainer;
  run_request q{};
  run_request defaults{};
  bool sft = true;             ///< SFTConfig (TRL's defaults) rather than TrainingArguments
  bool bf16 = false;           ///< bf16 autocast (or a bf16 run)
  bool fp16 = false;           ///< fp16 autocast
  bool fp32_load = false;      ///< the model is loaded in float32
  bool liger = false;          ///< use_liger_kernel
  json init = json::object();  ///< model_init_kwargs
  /// A knob as it will resolve: the caller's, else the file's, else the class default.
  template <class T>
  [[nodiscard]] std::optional<T> effective(std::optional<T> run_request::*knob) const {
    if (later.*knob) return later.*knob;
    if (q.*knob) return q.*knob;
    return defaults.*knob;
  }
  /// The method as it will resolve (full fine-tuning, headroom's default, when nobody says).
  [[nodiscard]] training_method method() const {
    return effective(&run_request::method).value_or(*headroom_defaults().method);
  }
};

/// Batch and length (TrainingArguments: per_device_train_batch_size 8; SFTConfig max_length 1024).
inline void read_args_batch(args_reading& in, training_args& a) {
  const json& j = in.j;
  if (given(j, "per_device_train_batch_size"))
    in.q.batch = read_count(j, "per_device_train_batch_size", in.origin, max_solver_batch);
  if (given(j, "gradient_accumulation_steps"))
    in.q.grad_accum = read_count(j, "gradient_accumulation_steps", in.origin, 1u << 20);
  if (given(j, "max_length")) in.q.seq_len = read_count(j, "max_length", in.origin, max_solver_seq_len);
  if (!j.contains("max_length") && !in.later.seq_len)
    a.notes.emplace_back("max_length not set: SFTConfig's default 1024 is used");
}

/// Precision: the load dtype (TRL loads float32 unless model_init_kwargs.dtype says otherwise) and
/// bf16 / fp16 autocast. bf16=True on a bf16 model is the course's third route (no master copy).
inline void read_args_precision(args_reading& in, training_args& a) {
  const json& j = in.j;
  const bool bf16_given = given(j, "bf16");
  in.fp16 = read_bool_or(j, "fp16", in.origin, false);
  in.bf16 = read_bool_or(j, "bf16", in.origin, false);
  if (in.sft && !bf16_given) in.bf16 = !in.fp16;  // TRL: bf16 defaults to `not fp16`
  if (in.bf16 && in.fp16) throw input_error(in.origin + ": /bf16", "bf16 and fp16 cannot both be true");
  in.init = j.value("model_init_kwargs", json::object());
  if (in.init.is_null()) in.init = json::object();
  if (!in.init.is_object()) throw input_error(in.origin + ": /model_init_kwargs", "must be an object");
  std::string dtype = dtype_name(in.init, in.origin + ": /model_init_kwargs");
  if (dtype.empty()) {
    dtype = in.sft ? "float32" : "auto";
    a.notes.emplace_back(
        in.sft ? "model_init_kwargs.dtype not set: TRL loads the model in float32"
               : "no load dtype given: transformers v5 loads the checkpoint's dtype (assumed bfloat16)");
  }
  in.fp32_load = dtype == "float32";
  if (in.fp32_load) {
    in.q.precision = in.bf16   ? precision_route::fp32_autocast
                     : in.fp16 ? precision_route::fp16_autocast
                               : precision_route::fp32;
  } else {
    in.q.precision = precision_route::bf16_pure;
    if (dtype == "float16")
      a.notes.emplace_back("a float16 model is priced like bfloat16 (same bytes); fp16 needs loss scaling");
  }
}

/// Checkpointing (TRL turns it on for every trainer), selective mode, activation offloading.
inline void read_args_checkpointing(args_reading& in) {
  const json& j = in.j;
  const bool ckpt = read_bool_or(j, "gradient_checkpointing", in.origin, in.sft);
  json ckpt_kwargs = j.value("gradient_checkpointing_kwargs", json::object());
  if (ckpt_kwargs.is_null()) ckpt_kwargs = json::object();
  const std::string ko = in.origin + ": /gradient_checkpointing_kwargs";
  if (!ckpt_kwargs.is_object())  // passed as **kwargs to checkpoint(): a dict or nothing (issue 31, SI-24)
    throw input_error(
        ko, "must be an object such as {\"use_reentrant\": false}, got " + json_excerpt(ckpt_kwargs));
  const bool selective = read_bool_or(ckpt_kwargs, "selective", ko, false);
  const bool offload = read_bool_or(j, "activation_offloading", in.origin, false);
  // transformers' gradient_checkpointing_enable passes use_reentrant=True unless the kwargs say otherwise.
  if (given(ckpt_kwargs, "use_reentrant"))
    in.q.reentrant = read_bool_or(ckpt_kwargs, "use_reentrant", ko, true);
  // TRL's activation_offloading wraps training_step in OffloadActivations (sft_trainer.py, training_step):
  // over checkpointed blocks it offloads their inputs, and the loss's saved tensors too.
  const checkpointing mode = !ckpt ? (offload ? checkpointing::offload : checkpointing::none)
                                   : (offload     ? checkpointing::checkpoint_offload
                                      : selective ? checkpointing::selective
                                                  : checkpointing::full);
  if (given(j, "gradient_checkpointing") || offload || selective) in.q.ckpt = mode;  // else the class's
  if (offload) in.q.offload_wraps = offload_scope::step;
}

/// torchtune's recipe keys: non-reentrant checkpoint wrappers, offloading around the model forward only
/// (recipes/*_single_device.py _setup_model; offloading without checkpointing raises).
inline void read_torchtune_checkpointing(args_reading& in) {
  const json& j = in.j;
  const bool tt_ckpt = given(j, "enable_activation_checkpointing");
  const bool tt_offload = read_bool_or(j, "enable_activation_offloading", in.origin, false);
  if (!tt_ckpt && !tt_offload) return;
  if (j.contains("gradient_checkpointing") || j.contains("activation_offloading"))
    throw input_error(
        key_path(in.origin, "enable_activation_checkpointing"),
        "torchtune's keys cannot be combined with gradient_checkpointing / activation_offloading");
  const bool on = read_bool_or(j, "enable_activation_checkpointing", in.origin, false);
  if (tt_offload && !on)
    throw input_error(key_path(in.origin, "enable_activation_offloading"),
                      "needs enable_activation_checkpointing: true (torchtune's recipes raise the same)");
  in.q.ckpt =
      tt_offload ? checkpointing::checkpoint_offload : (on ? checkpointing::full : checkpointing::none);
  in.q.reentrant = false;
  in.defaults.offload_wraps = offload_scope::model;  // torchtune's recipes offload around the model forward
  if (tt_offload) in.q.offload_wraps = offload_scope::model;
}

/// Unsloth's FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth"): its own offloaded
/// checkpoint function (unsloth_zoo gradient_checkpointing.py).
inline void read_unsloth_checkpointing(args_reading& in) {
  const auto u = in.j.find("use_gradient_checkpointing");
  if (u == in.j.end() || u->is_null()) return;
  if (u->is_string() && u->get<std::string>() == "unsloth")
    in.q.ckpt = checkpointing::offload_checkpointed;
  else if (u->is_boolean())
    in.q.ckpt = u->get<bool>() ? checkpointing::full : checkpointing::none;
  else
    throw input_error(key_path(in.origin, "use_gradient_checkpointing"),
                      "must be true, false or \"unsloth\", got " + u->dump());
}

/// Attention implementation (transformers' default is sdpa).
inline void read_args_attention(args_reading& in) {
  if (!given(in.init, "attn_implementation")) return;
  const std::string attn =
      read_string_or(in.init, "attn_implementation", in.origin + ": /model_init_kwargs", "");
  if (attn == "eager")
    in.q.attention = attention_impl::eager;
  else if (attn == "sdpa")
    in.q.attention = attention_impl::sdpa;
  else if (attn.find("flash") != std::string::npos)
    in.q.attention = attention_impl::flash;
  else
    throw input_error(
        in.origin + ": /model_init_kwargs/attn_implementation",
        "unknown '" + attn +
            "'; valid: eager, sdpa, flash_attention_2, flash_attention_3, kernels-community/flash-attn2");
}

/// Loss head: SFTConfig's loss_type defaults to chunked_nll, or nll with use_liger_kernel.
inline void read_args_loss(args_reading& in) {
  in.liger = read_bool_or(in.j, "use_liger_kernel", in.origin, false);
  const std::string type =
      read_string_or(in.j, "loss_type", in.origin, in.sft ? (in.liger ? "nll" : "chunked_nll") : "nll");
  if (!given(in.j, "loss_type") && !in.liger) return;  // the class's: chunked_nll (SFTConfig) or nll
  if (type == "chunked_nll") {
    if (in.liger)
      throw input_error(in.origin + ": /loss_type", "chunked_nll cannot be combined with use_liger_kernel");
    in.q.loss = loss_impl::chunked;
    in.q.chunk_tokens = 256;  // TRL _CHUNKED_LM_HEAD_CHUNK_SIZE
  } else if (type == "nll" || type == "dft") {
    in.q.loss = in.liger ? loss_impl::fused_liger : loss_impl::naive;
  } else {
    throw input_error(in.origin + ": /loss_type", "unknown '" + type + "'; valid: nll, dft, chunked_nll");
  }
}

/// The optimizer and the learning-rate schedule (SFTConfig's learning_rate 2e-5, TrainingArguments' 5e-5).
inline void read_args_optimizer(args_reading& in, training_args& a) {
  if (given(in.j, "optim")) {
    in.q.optimizer = read_string_or(in.j, "optim", in.origin, "");
    (void)optimizer_by_name(*in.q.optimizer);  // an unknown name is refused here, before later sections
  }
  // torchtune's recipe key; TrainingArguments has none (headroom reads it from either file).
  if (given(in.j, "optimizer_in_bwd"))
    in.q.optimizer_in_backward = read_bool_or(in.j, "optimizer_in_bwd", in.origin, false);
  a.learning_rate = args_number(in.j, "learning_rate", in.origin, in.sft ? 2e-5 : 5e-5);
  a.warmup_steps = args_number(in.j, "warmup_steps", in.origin, 0);
  a.lr_scheduler_type = read_string_or(in.j, "lr_scheduler_type", in.origin, "linear");
  if (a.lr_scheduler_type != "reduce_lr_on_plateau")
    (void)parse_choice(schedule_names, a.lr_scheduler_type, "lr_scheduler_type");
}

/// Packing and padding-free batches, and torch_compile (torchtune's recipe key `compile` too).
inline void read_args_packing(args_reading& in, training_args& a) {
  a.packing = read_bool_or(in.j, "packing", in.origin, false);
  std::string strategy = read_string_or(in.j, "packing_strategy", in.origin, "bfd");
  // bfd_split's deprecated spelling (sft_config.py __post_init__), and bfd's first name: TRL #3696 (0353d676)
  // renamed "ffd" once the algorithm was seen to be best-fit decreasing.
  if (strategy == "bfd-requeue" || strategy == "ffd") {
    a.notes.push_back("packing_strategy " + strategy + ": read as " +
                      (strategy == "ffd" ? "bfd, its name since TRL #3696" : "bfd_split, its name now"));
    strategy = strategy == "ffd" ? "bfd" : "bfd_split";
  }
  if (strategy != "bfd" && strategy != "bfd_split" && strategy != "wrapped")
    throw input_error(key_path(in.origin, "packing_strategy"),
                      "unknown '" + strategy + "'; valid: bfd, bfd_split, wrapped");
  a.padding_free = read_bool_or(in.j, "padding_free", in.origin, false) ||
                   (a.packing && (strategy == "bfd" || strategy == "bfd_split"));
  // TRL: bfd packing forces padding_free; "wrapped" cuts full max_length rows (flattened or not, the
  // same tokens); otherwise the collator pads to the longest.
  a.batching.layout = a.packing && strategy == "wrapped" ? batch_layout::packed
                      : a.padding_free                   ? batch_layout::padding_free
                                                         : batch_layout::padded;
  a.batching.bfd_packed = a.packing && strategy != "wrapped";
  a.batching.split_overflow = strategy == "bfd_split";
  a.batching.pad_to_multiple = args_count(in.j, "pad_to_multiple_of", in.origin, 1, max_solver_seq_len);
  if (a.padding_free && in.effective(&run_request::attention) != attention_impl::flash)
    a.notes.emplace_back(
        "padding_free / bfd packing needs FlashAttention 2 or 3 (TRL warns of contamination otherwise)");
  a.torch_compile = read_bool_or(in.j, "torch_compile", in.origin, false) ||
                    read_bool_or(in.j, "compile", in.origin, false);
  if (given(in.j, "torch_compile") || given(in.j, "compile")) in.q.compiled = a.torch_compile;
}

/// FSDP through TrainingArguments' `fsdp` words ("full_shard auto_wrap", ...; transformers training_args.py;
/// the world size comes from the launcher: --gpus).
inline void read_args_fsdp_words(args_reading& in) {
  const auto f = in.j.find("fsdp");
  if (f == in.j.end() || f->is_null()) return;
  std::string words;
  if (f->is_string())
    words = f->get<std::string>();
  else if (f->is_array())
    for (const auto& w : *f) words += (w.is_string() ? w.get<std::string>() : std::string("?")) + " ";
  else
    throw input_error(key_path(in.origin, "fsdp"), "must be a string such as \"full_shard auto_wrap\"");
  std::string word, sharded;  // sharded: the sharding word already read (transformers takes one)
  for (std::size_t i = 0; i <= words.size(); ++i) {
    if (i < words.size() && words[i] != ' ') {
      word += words[i];
      continue;
    }
    if (word == "full_shard" || word == "shard_grad_op" || word == "hybrid_shard") {
      if (!sharded.empty() && sharded != word)
        throw input_error(key_path(in.origin, "fsdp"),
                          sharded + " and " + word + " exclude each other; give one (transformers raises)");
      sharded = word;
      in.q.shard = parse_choice(sharding_names, word, "fsdp");
    } else if (word == "offload")
      in.q.offload_optimizer = in.q.offload_params = true;
    else if (!word.empty() && word != "auto_wrap")
      throw input_error(
          key_path(in.origin, "fsdp"),
          "unknown '" + word + "'; valid: full_shard, shard_grad_op, hybrid_shard, offload, auto_wrap");
    word.clear();
  }
}

/// An fsdp_config object (`fo` names it in errors): the version, the backward prefetch and FSDP1's
/// use_orig_params (true unless it says false: the Trainer's fsdp_config default, docs/training-args.md).
inline void read_args_fsdp_object(args_reading& in, training_args& a, const json& fc, const std::string& fo) {
  in.q.fsdp_version = read_version_or(fc, "fsdp_version", fo, 1, 2);
  if (*in.q.fsdp_version == 2 && given(fc, "use_orig_params"))  // as --fsdp-version 2 --fsdp-use-orig-params
    throw input_error(key_path(fo, "use_orig_params"),
                      "is FSDP1's setting; fsdp_version is 2 (FSDP2 always steps the original parameters)");
  const std::string prefetch = read_string_or(fc, "backward_prefetch", fo, "backward_pre");
  if (prefetch != "backward_pre" && prefetch != "backward_post" && prefetch != "no_prefetch")
    throw input_error(fo + "/backward_prefetch",
                      "unknown '" + prefetch + "'; valid: backward_pre, backward_post, no_prefetch");
  in.q.prefetch_units = prefetch == "no_prefetch" ? 0 : 1;
  const bool orig = read_bool_or(fc, "use_orig_params", fo, true);
  if (in.q.shard && *in.q.fsdp_version == 1) in.q.use_orig_params = orig;
  if (!in.q.shard)
    a.notes.emplace_back(
        "fsdp_config without fsdp: FSDP is not enabled (set \"fsdp\": \"full_shard auto_wrap\")");
}

/// TrainingArguments' fsdp_config: the object, or a path to a JSON file of it (transformers opens it from the
/// working directory).
inline void read_args_fsdp_config(args_reading& in, training_args& a) {
  const auto fc = in.j.find("fsdp_config");
  const std::string fo = in.origin + ": /fsdp_config";
  if (fc == in.j.end() || fc->is_null()) {
    if (in.q.shard) in.q.use_orig_params = true;
    return;
  }
  if (!fc->is_string()) {
    if (!fc->is_object()) throw input_error(fo, "must be an object, or a path to a JSON file of one");
    read_args_fsdp_object(in, a, *fc, fo);
    return;
  }
  const std::string path = fc->get<std::string>();
  const json from_file = named_by(fo, [&] { return parse_json_file(path); });  // the key first (MI-48)
  if (!from_file.is_object()) throw input_error(fo + ": " + path, "must hold a JSON object");
  read_args_fsdp_object(in, a, from_file, fo + ": " + path);
}

/// The Trainer's bf16 on a float32 model under FSDP is accelerate's MixedPrecision, with a note
/// (accelerate_precision, request.hpp: a full fine-tune is priced as --precision bf16-mixed; LoRA keeps
/// fp32-autocast, its frozen base would be fp32 slices).
inline void read_args_fsdp_precision(args_reading& in, training_args& a) {
  if (!in.q.precision) return;
  const precision_route route = accelerate_precision(*in.q.precision, in.method(), in.q.shard);
  if (route == *in.q.precision) return;
  in.q.precision = route;
  a.notes.emplace_back(
      "FSDP with bf16 on a float32 model: accelerate sets MixedPrecision(param_dtype=bfloat16), fp32 "
      "FlatParameters gathered in bf16 (priced as --precision bf16-mixed)");
}

/// TrainingArguments' accelerator_config: gradient_accumulation_kwargs.sync_each_batch (accelerate's
/// GradientAccumulationPlugin; off: the micro-batches before the last run under no_sync).
inline void read_args_accelerator_config(args_reading& in) {
  const auto ac = in.j.find("accelerator_config");
  if (ac == in.j.end() || ac->is_null()) return;
  const std::string ao = in.origin + ": /accelerator_config";
  if (!ac->is_object()) throw input_error(ao, "must be an object (a path to one is not read)");
  const auto gk = ac->find("gradient_accumulation_kwargs");
  if (gk == ac->end() || gk->is_null()) return;
  if (!gk->is_object()) throw input_error(ao + "/gradient_accumulation_kwargs", "must be an object");
  if (gk->contains("sync_each_batch"))
    in.q.sync_each_batch = read_bool_or(*gk, "sync_each_batch", ao + "/gradient_accumulation_kwargs", false);
}

/// A PEFT module list: a string (one name or "all-linear") or a list of names.
inline lora_targets read_peft_modules(const json& v, const std::string& path) {
  if (v.is_string()) return parse_lora_targets(v.get<std::string>());
  if (!v.is_array()) throw input_error(path, "must be a string or a list of strings");
  std::string list;
  for (const auto& item : v) {
    if (!item.is_string()) throw input_error(path, "must hold strings");
    append_listed(list, item.get<std::string>(), ",");
  }
  return parse_lora_targets(list);
}

/// LoraConfig target_modules, or PEFT's default for the model_type (none: _prepare_adapter_config raises).
inline void read_peft_targets(const json& peft, const std::string& po, peft_method method, args_reading& in,
                              training_args& a) {
  const auto tm = peft.find("target_modules");
  const std::string& model_type = in.model.model_type;
  if (method == peft_method::ln_tuning || prompt_learning(method)) {
    if (tm != peft.end() && !tm->is_null())
      a.notes.emplace_back(
          "target_modules: " + read_string_or(peft, "peft_type", po, "LORA") +
          " is priced over every norm (LN tuning) or the prompt encoder; the list is not read");
  } else if (tm == peft.end() || tm->is_null()) {
    const peft_default_mapping* defaults = peft_defaults(model_type);
    if (defaults == nullptr)
      throw input_error(po + "/target_modules",
                        "not set, and PEFT has no default for '" + model_type +
                            "' (\"Please specify `target_modules`\"): list the modules");
    in.q.targets = parse_lora_targets(method == peft_method::ia3 ? defaults->ia3 : defaults->lora);
    a.notes.push_back("target_modules not set: PEFT's default for " + model_type + " is " +
                      lora_targets_text(*in.q.targets));
  } else {
    in.q.targets = read_peft_modules(*tm, po + "/target_modules");
  }
  if (method == peft_method::ia3)  // else ia3_default_feedforward of the targets (resolve)
    if (const auto ff = peft.find("feedforward_modules"); ff != peft.end() && !ff->is_null())
      in.q.ia3_feedforward = read_peft_modules(*ff, po + "/feedforward_modules");
}

/// LoraConfig's DoRA, dropout, rsLoRA, init_lora_weights and modules_to_save.
inline void read_peft_options(const json& peft, const std::string& po, peft_method method, args_reading& in,
                              training_args& a) {
  const bool dora = read_bool_or(peft, "use_dora", po, false);
  if (dora && method == peft_method::lora) in.q.peft = peft_type::dora;
  // LoraConfig lora_dropout 0.0; VeraConfig vera_dropout 0.0.
  const char* dropout_key = method == peft_method::vera ? "vera_dropout" : "lora_dropout";
  const double dropout = args_number(peft, dropout_key, po, 0.0);
  if (!(dropout < 1.0)) throw input_error(po + "/lora_dropout", "must be in [0, 1)");
  if (given(peft, dropout_key)) in.q.lora_dropout = dropout;
  // rsLoRA only changes the scaling (alpha / sqrt(r)); PiSSA and OLoRA initialise from an fp32 SVD / QR of
  // each base weight (peft/tuners/lora/layer.py pissa_init, olora_init): a load-phase transient.
  if (read_bool_or(peft, "use_rslora", po, false))
    a.notes.emplace_back("use_rslora: scaling alpha/sqrt(r) only, no memory effect");
  if (const auto init_weights = peft.find("init_lora_weights");
      init_weights != peft.end() && init_weights->is_string()) {
    const std::string how = init_weights->get<std::string>();
    if (how == "corda" || how == "eva" || how == "loftq" || how == "orthogonal")
      a.notes.push_back(
          "init_lora_weights \"" + how +
          "\": its one-off initialisation at get_peft_model is not priced; the training step is");
    else
      in.q.init_lora_weights = parse_lora_init(how, po + "/init_lora_weights");
  }
  if (dora)
    a.notes.emplace_back(
        "DoRA: magnitude vectors, the products' saved tensors and each module's weight-norm temporaries "
        "are counted (docs/activations.md)");
  if (const auto mts = peft.find("modules_to_save"); mts != peft.end() && !mts->is_null()) {
    if (!mts->is_array()) throw input_error(po + "/modules_to_save", "must be a list of module names");
    if (!mts->empty()) in.q.modules_to_save = read_peft_modules(*mts, po + "/modules_to_save");
  }
}

/// P-tuning's PromptEncoderConfig and prefix tuning's PrefixTuningConfig fields that change memory, and
/// num_virtual_tokens (required: PEFT has no default).
inline void read_prompt_config(const json& peft, const std::string& po, peft_method method, args_reading& in,
                               const std::string& type) {
  in.q.virtual_tokens = args_count(peft, "num_virtual_tokens", po, 0, max_virtual_tokens);
  if (*in.q.virtual_tokens == 0)
    throw input_error(po + "/num_virtual_tokens", "is required for " + type + " (PEFT has no default)");
  lora_config l;
  l.method = method;
  read_prompt_encoder(peft, po, l);
  if (l.encoder_hidden_size != 0) in.q.encoder_hidden_size = l.encoder_hidden_size;
  if (method == peft_method::prefix_tuning) in.q.prefix_projection = l.prefix_projection;
}

/// The PEFT section (a LoraConfig and its kin). PeftConfig.peft_type: LoRA (with DoRA), IA3, VeRA, LN tuning
/// and prompt, P- and prefix tuning are modelled; the other methods are refused by name.
inline void read_peft_config(args_reading& in, training_args& a) {
  const auto peft = in.j.find("peft_config");
  if (peft == in.j.end() || peft->is_null()) return;
  if (!peft->is_object())
    throw input_error(in.origin + ": /peft_config", "must be an object (LoraConfig fields)");
  const std::string po = in.origin + ": /peft_config";
  const std::string type = read_string_or(*peft, "peft_type", po, "LORA");
  const auto method = peft_method_named(type);
  if (!method)
    throw input_error(po + "/peft_type",
                      "'" + type +
                          "' is not modelled yet; valid: LORA (use_dora: true for DoRA), "
                          "IA3, VERA, LN_TUNING, PROMPT_TUNING, P_TUNING, PREFIX_TUNING. Not yet: " +
                          std::string(unmodelled_peft_types));
  in.q.method = training_method::lora;
  for (const peft_type_method& e : peft_type_methods)
    if (e.method == *method && !in.q.peft) in.q.peft = e.type;  // the first: lora, not dora or lora-fa
  // LoraConfig r = 8; VeraConfig r = 256.
  in.q.rank = args_count(*peft, "r", po, *method == peft_method::vera ? 256 : 8, max_lora_rank);
  read_peft_targets(*peft, po, *method, in, a);
  if (prompt_learning(*method)) read_prompt_config(*peft, po, *method, in, type);
  read_peft_options(*peft, po, *method, in, a);
}

/// PEFT refuses prefix tuning with gradient checkpointing; SFTConfig's default (True) yields to it (resolve
/// turns it off when nobody asked for it), an explicit true is an error (validate_prefix).
inline void note_prefix_checkpointing(const args_reading& in, training_args& a) {
  const bool prefix =
      in.method() != training_method::full && in.effective(&run_request::peft) == peft_type::prefix_tuning;
  if (!prefix || in.q.ckpt || in.later.ckpt || in.defaults.ckpt != checkpointing::full) return;
  a.notes.emplace_back(
      "gradient_checkpointing off: PEFT raises 'PREFIX_TUNING does not work with gradient checkpointing' "
      "(peft_model.py _setup_prompt_encoder), so SFTConfig's default True cannot apply");
}

/// BitsAndBytesConfig: a 4-bit base under a PEFT section is QLoRA.
inline void read_quantization_config(args_reading& in) {
  const auto q = in.j.find("quantization_config");
  if (q == in.j.end() || q->is_null()) return;
  if (!q->is_object())
    throw input_error(in.origin + ": /quantization_config", "must be an object (BitsAndBytesConfig)");
  const std::string qo = in.origin + ": /quantization_config";
  if (read_bool_or(*q, "load_in_8bit", qo, false))
    throw input_error(qo + "/load_in_8bit", "8-bit base weights are not modelled yet; use load_in_4bit");
  if (!read_bool_or(*q, "load_in_4bit", qo, false)) return;
  if (in.q.method != training_method::lora)
    throw input_error(qo + "/load_in_4bit", "a 4-bit base needs a peft_config (QLoRA)");
  in.q.method = training_method::qlora;
  const std::string qt = read_string_or(*q, "bnb_4bit_quant_type", qo, "fp4");
  if (qt != "nf4" && qt != "fp4")
    throw input_error(qo + "/bnb_4bit_quant_type", "unknown '" + qt + "'; valid: nf4, fp4");
  in.q.double_quant = read_bool_or(*q, "bnb_4bit_use_double_quant", qo, false);  // HF default
  in.q.precision = precision_route::bf16_pure;  // TRL casts QLoRA's trainable params to bf16
  in.q.load =
      in.trainer.qlora_load;  // bitsandbytes: from_pretrained quantises each Linear weight as it arrives
}

/// torchtune's recipe loss (`loss: {_component_: ..., num_output_chunks: 8}`), accepted here until recipes
/// are read natively: its class path names the loss layout.
inline void read_torchtune_loss(args_reading& in, training_args& a) {
  const auto tl = in.j.find("loss");
  if (tl == in.j.end() || tl->is_null()) return;
  const std::string lo = in.origin + ": /loss";
  if (!tl->is_object()) throw input_error(lo, "must be an object with _component_ (a torchtune loss)");
  if (in.j.contains("loss_type") || in.liger)
    throw input_error(lo, "a torchtune loss cannot be combined with loss_type or use_liger_kernel");
  const std::string component = read_string_or(*tl, "_component_", lo, "");
  // A plain torch.nn.CrossEntropyLoss: the recipe flattens the full logits and hands them over
  // (recipes/full_finetune_single_device.py _loss_step at bd2a0fc7). Priced as transformers' loss, whose fp32
  // upcast of the logits torch's loss on 16-bit logits does not make: an upper bound, said as such.
  if (component == "torch.nn.CrossEntropyLoss") {
    in.q.loss = loss_impl::naive;
    a.notes.emplace_back(
        "loss torch.nn.CrossEntropyLoss: priced as transformers' loss, an upper bound (torch's loss on "
        "16-bit "
        "logits makes no fp32 copy and keeps its log-softmax in 16 bits)");
    return;
  }
  static constexpr std::array<std::pair<std::string_view, loss_impl>, 2> torchtune_losses{
      {{"torchtune.modules.loss.LinearCrossEntropyLoss", loss_impl::linear_ce},
       {"torchtune.modules.loss.CEWithChunkedOutputLoss", loss_impl::chunked_output}}};
  const auto found = std::find_if(torchtune_losses.begin(), torchtune_losses.end(),
                                  [&](const auto& e) { return e.first == component; });
  if (found == torchtune_losses.end())
    throw input_error(lo + "/_component_", "unknown '" + component +
                                               "'; valid: torchtune.modules.loss.LinearCrossEntropyLoss, "
                                               "torchtune.modules.loss.CEWithChunkedOutputLoss, "
                                               "torch.nn.CrossEntropyLoss");
  in.q.loss = found->second;
  in.q.output_chunks = args_count(*tl, "num_output_chunks", lo, 8, max_solver_seq_len);  // torchtune: 8
}

/// transformers' `deepspeed` argument: a ds_config path (relative to this file) or the object itself;
/// "auto" values come from the fields above (integrations/deepspeed.py HfTrainerDeepSpeedConfig).
inline void read_args_deepspeed(const args_reading& in, training_args& a) {
  const auto d = in.j.find("deepspeed");
  if (d == in.j.end() || d->is_null()) return;
  if (const auto f = in.j.find("fsdp"); f != in.j.end() && !f->is_null() && !f->empty() && *f != "")
    throw input_error(key_path(in.origin, "fsdp"),
                      "and /deepspeed: give one of them (the Trainer runs DeepSpeed or FSDP, not both)");
  run_config& r = a.run;
  const deepspeed_inputs ds_in{r.activations.batch,
                               r.grad_accum_steps,
                               in.later.gpus.value_or(0),
                               in.bf16,
                               in.fp16,
                               in.model.spec.shape.hidden_size,
                               ""};
  deepspeed_config ds;
  if (d->is_object()) {
    ds = deepspeed_from_json(*d, ds_in, in.origin + ": /deepspeed");
  } else if (d->is_string()) {
    std::filesystem::path file = d->get<std::string>();
    if (file.is_relative() && std::filesystem::is_regular_file(in.origin))
      file = std::filesystem::path(in.origin).parent_path() / file;
    ds = load_deepspeed(file, ds_in);
  } else {
    throw input_error(in.origin + ": /deepspeed",
                      "must be a path to a ds_config.json or a DeepSpeed config object");
  }
  a.request = merge(a.request, deepspeed_request(ds, r.setup.method, a.notes, a.warnings, a.ignored));
  r = resolve_over(a.defaults, a.request);
  a.deepspeed = true;
}

/// merge(file, later), less what the caller's method or checkpointing leaves without a meaning: a full
/// fine-tune has no adapters (nor the file's modules_to_save), a base that is not 4-bit no NF4 constants or
/// bitsandbytes load, and a run without offloading no offloading scope.
inline run_request file_under(args_reading& in) {
  run_request file = in.q;
  if (const std::optional<training_method> method = in.later.method) {
    if (*method != training_method::qlora) {
      file.double_quant.reset();
      file.load.reset();
    }
    if (*method == training_method::full) {
      drop_adapter_knobs(file);
    }
  }
  run_request asked = merge(file, in.later);
  if (asked.offload_wraps && asked.ckpt && !offloads_activations(*asked.ckpt)) asked.offload_wraps.reset();
  return asked;
}

/// What the trainer decides for the method the run resolves to: a QLoRA run's adapters kept in fp32 (unless
/// the caller sets their dtype), a multimodal model's tower trained by a full fine-tune. Returns the notes
/// and warnings to add once the rest of the file is read.
struct trainer_choices {
  std::string note;
  std::string warning;
};
inline trainer_choices read_trainer_choices(args_reading& in, bool autocast_adapters) {
  trainer_choices out;
  const training_method method = in.method();
  const trainer_behaviour& t = in.trainer;
  if (!t.keeps_fp32_qlora_adapters.empty() && autocast_adapters && method == training_method::qlora &&
      !in.later.adapter_dtype) {
    in.q.adapter_dtype = adapter_precision::fp32;
    out.note = "QLoRA adapters in fp32: " + t.keeps_fp32_qlora_adapters;
  }
  if (t.unfrozen_vision_tower.empty()) return out;
  if (method == training_method::full && in.model.spec.vision.params != 0)
    in.q.train_vision_tower = true;
  else
    out.warning =
        t.unfrozen_vision_tower +
        ": false changes nothing priced here (only full fine-tuning of a multimodal model trains its "
        "tower); the tower is priced frozen";
  return out;
}

/// torch_compile: Inductor's fusions where headroom models them; otherwise priced eager, said so.
inline void apply_args_compile(const args_reading& in, training_args& a) {
  run_config& r = a.run;
  if (!r.activations.compiled) return;
  if (const char* why = compile_not_modelled(in.model.spec.shape, r.setup, r.activations)) {
    a.request.compiled = r.activations.compiled = false;
    a.notes.push_back(std::string("torch_compile: not modelled for ") + why +
                      "; priced eager (an upper bound)");
  }
}

/// The keys training_args_from_json reads; every other key is listed as ignored.
inline bool args_key_read(const std::string& key) {
  static const std::set<std::string> used{"config_class",
                                          "per_device_train_batch_size",
                                          "gradient_accumulation_steps",
                                          "max_length",
                                          "bf16",
                                          "fp16",
                                          "model_init_kwargs",
                                          "gradient_checkpointing",
                                          "gradient_checkpointing_kwargs",
                                          "activation_offloading",
                                          "enable_activation_checkpointing",
                                          "enable_activation_offloading",
                                          "use_gradient_checkpointing",
                                          "use_liger_kernel",
                                          "loss_type",
                                          "loss",
                                          "optim",
                                          "optimizer_in_bwd",
                                          "autocast_adapter_dtype",
                                          "learning_rate",
                                          "warmup_steps",
                                          "lr_scheduler_type",
                                          "packing",
                                          "packing_strategy",
                                          "padding_free",
                                          "pad_to_multiple_of",
                                          "fsdp",
                                          "fsdp_config",
                                          "accelerator_config",
                                          "deepspeed",
                                          "torch_compile",
                                          "compile",
                                          "peft_config",
                                          "quantization_config"};
  return used.count(key) != 0;
}

/// The keys not read, renamed keys that are no longer read, and a file with nothing headroom reads.
inline void list_args_ignored(const args_reading& in, training_args& a) {
  const json& j = in.j;
  for (const auto& item : j.items())
    if (!args_key_read(item.key())) a.ignored.push_back(item.key());
  // Renamed keys change memory when ignored: TRL's SFTConfig max_seq_length is max_length now (removed).
  for (const auto& [old_key, new_key] : {std::pair<const char*, const char*>{"max_seq_length", "max_length"},
                                         {"per_gpu_train_batch_size", "per_device_train_batch_size"}})
    if (j.contains(old_key))
      a.warnings.push_back(key_path(in.origin, old_key) + ": deprecated and not read; its value goes in " +
                           new_key + (j.contains(new_key) ? "" : " (the default is priced)"));
  if (a.ignored.size() == j.size())
    a.warnings.push_back(in.origin + (j.empty() ? " is empty" : " has no key headroom reads") +
                         ": every value is the trainer's default (check the file is a TrainingArguments / "
                         "SFTConfig JSON)");
}
}  // namespace detail

namespace detail {
/// TRL's ModelConfig fields (trl/trainer/model_config.py at f2cd5771) that move memory, and where
/// trl/scripts/sft.py puts each: model_init_kwargs (dtype, attn_implementation), BitsAndBytesConfig
/// (get_quantization_config) and LoraConfig (get_peft_config, trl/trainer/utils.py). A data table.
struct trl_model_key {
  std::string_view flat;    ///< the script's key
  std::string_view nested;  ///< where the training-args reader reads it
};
inline constexpr std::array<trl_model_key, 14> trl_model_keys{{
    {"dtype", "model_init_kwargs/dtype"},
    {"torch_dtype", "model_init_kwargs/dtype"},  // the same field's former name
    {"attn_implementation", "model_init_kwargs/attn_implementation"},
    {"lora_r", "peft_config/r"},
    {"lora_alpha", "peft_config/lora_alpha"},
    {"lora_dropout", "peft_config/lora_dropout"},
    {"lora_target_modules", "peft_config/target_modules"},
    {"lora_modules_to_save", "peft_config/modules_to_save"},
    {"use_rslora", "peft_config/use_rslora"},
    {"use_dora", "peft_config/use_dora"},
    {"load_in_4bit", "quantization_config/load_in_4bit"},
    {"load_in_8bit", "quantization_config/load_in_8bit"},
    {"bnb_4bit_quant_type", "quantization_config/bnb_4bit_quant_type"},
    {"use_bnb_nested_quant", "quantization_config/bnb_4bit_use_double_quant"},
}};
/// ModelConfig's other fields: they say which checkpoint and how to wrap it, not how much memory it takes
/// (lora_target_parameters, which adapts MoE expert parameters, is refused where it is set).
inline constexpr std::array<std::string_view, 6> trl_model_other_keys{
    {"use_peft", "model_name_or_path", "model_revision", "lora_task_type", "lora_target_parameters",
     "bnb_4bit_quant_storage"}};

/// Whether a training-args object is TRL's script form: ModelConfig fields beside SFTConfig's, as TrlParser
/// reads one YAML or JSON file for trl/scripts/sft.py (alignment-handbook's recipes are this form).
inline bool is_trl_script(const json& j) {
  return std::any_of(trl_model_keys.begin(), trl_model_keys.end(),
                     [&](const trl_model_key& k) { return j.contains(k.flat); }) ||
         std::any_of(trl_model_other_keys.begin(), trl_model_other_keys.end(),
                     [&](std::string_view k) { return j.contains(k); });
}

/// What the script form says, in the sections sft.py builds: `from` maps each built path back to its key.
struct trl_script {
  json args = json::object();
  std::vector<std::pair<std::string, std::string>> from;  ///< built path ("peft_config/r") → script key
  std::vector<std::string> unused;  ///< LoRA / bitsandbytes keys without use_peft / 4-bit
  bool renamed = false;             ///< max_seq_length read as max_length
};
/// Sets `nested` ("section/key") in `out` to `value`, remembering the script key it came from.
inline void put_trl(trl_script& out, std::string_view nested, std::string_view flat, const json& value) {
  const std::size_t slash = nested.find('/');
  out.args[std::string(nested.substr(0, slash))][std::string(nested.substr(slash + 1))] = value;
  out.from.emplace_back(std::string(nested), std::string(flat));
}
/// sft.py's sections from the script keys: model_init_kwargs always (ModelConfig dtype defaults to float32),
/// quantization_config with load_in_4bit / load_in_8bit, peft_config with use_peft (ModelConfig's LoRA
/// defaults r 16, alpha 32, dropout 0.05 — not PEFT's — and PEFT's target modules when none are named).
inline trl_script from_trl_script(const json& j, const std::string& origin) {
  for (const char* section : {"model_init_kwargs", "quantization_config", "peft_config"})
    if (given(j, section))
      throw input_error(key_path(origin, section),
                        "TRL's script form (use_peft, lora_r, load_in_4bit, dtype, ...) "
                        "builds it from the ModelConfig fields: give one or the other");
  if (given(j, "dtype") && given(j, "torch_dtype"))
    throw input_error(key_path(origin, "torch_dtype"), "is dtype's former name: give one of them");
  if (given(j, "lora_target_parameters"))
    throw input_error(key_path(origin, "lora_target_parameters"),
                      "adapts MoE expert parameters (PEFT target_parameters): not modelled yet");
  trl_script out;
  // alignment-handbook's recipes predate TRL #2895 (be1e3400), which renamed SFTConfig's max_seq_length to
  // max_length: the script form reads the old name as the length it was.
  if (given(j, "max_seq_length") && !given(j, "max_length")) {
    out.args["max_length"] = j.at("max_seq_length");
    out.from.emplace_back("max_length", "max_seq_length");
    out.renamed = true;
  }
  for (const auto& item : j.items())
    if (std::none_of(trl_model_keys.begin(), trl_model_keys.end(),
                     [&](const trl_model_key& k) { return k.flat == item.key(); }) &&
        std::find(trl_model_other_keys.begin(), trl_model_other_keys.end(), item.key()) ==
            trl_model_other_keys.end() &&
        !(out.renamed && item.key() == "max_seq_length"))
      out.args[item.key()] = item.value();
  const bool peft = read_bool_or(j, "use_peft", origin, false);
  const bool four_bit = read_bool_or(j, "load_in_4bit", origin, false);
  const bool eight_bit = read_bool_or(j, "load_in_8bit", origin, false);
  put_trl(out, "model_init_kwargs/dtype", "dtype", "float32");
  if (peft) {
    put_trl(out, "peft_config/peft_type", "use_peft", "LORA");
    put_trl(out, "peft_config/r", "lora_r", 16);
    put_trl(out, "peft_config/lora_alpha", "lora_alpha", 32);
    put_trl(out, "peft_config/lora_dropout", "lora_dropout", 0.05);
  }
  if (four_bit) {
    put_trl(out, "quantization_config/bnb_4bit_quant_type", "bnb_4bit_quant_type", "nf4");
    put_trl(out, "quantization_config/bnb_4bit_use_double_quant", "use_bnb_nested_quant", false);
  }
  for (const trl_model_key& k : trl_model_keys) {
    const auto v = j.find(k.flat);
    if (v == j.end() || v->is_null()) continue;
    const std::string_view section = k.nested.substr(0, k.nested.find('/'));
    // bitsandbytes' keys build a config only with a quantised load, the 4-bit ones only with load_in_4bit.
    const bool load_key = k.flat.rfind("load_in", 0) == 0;
    const bool used = section == "model_init_kwargs" || (section == "peft_config" && peft) ||
                      (section == "quantization_config" && (load_key ? four_bit || eight_bit : four_bit));
    if (used)
      put_trl(out, k.nested, k.flat, *v);
    else
      out.unused.emplace_back(k.flat);
  }
  return out;
}

/// An error in a built section ("file: /peft_config/r") named by the script key it came from.
inline input_error trl_script_error(const input_error& e, const std::string& origin, const trl_script& t) {
  const std::string& field = e.field();
  const std::string message = std::string(e.what()).substr(field.size() + 2);
  const std::string prefix = key_path(origin, "");
  if (field.rfind(prefix, 0) != 0) return e;
  std::string path;  // "peft_config: /r" (a section's reader nests its paths) → "peft_config/r"
  for (std::size_t i = prefix.size(); i < field.size(); ++i) {
    const bool nested = field.compare(i, 3, ": /") == 0;
    path += nested ? '/' : field[i];
    if (nested) i += 2;
  }
  for (const auto& [built, flat] : t.from)
    if (path == built || path.rfind(built + "/", 0) == 0) return input_error(key_path(origin, flat), message);
  for (const auto& [built, flat] : t.from)  // a section's own error ("file: /peft_config")
    if (path == built.substr(0, built.find('/'))) return input_error(key_path(origin, flat), message);
  return e;
}
}  // namespace detail

namespace detail {
/// A training-args object in the trainer's own form, each section in the file's documented order.
inline training_args read_training_args(const json& j, const loaded_model& model, const std::string& origin,
                                        const run_request& later, const trainer_behaviour& trainer) {
  training_args a;
  a.config_class = read_string_or(j, "config_class", origin, "SFTConfig");
  if (a.config_class != "SFTConfig" && a.config_class != "TrainingArguments")
    throw input_error(origin + ": /config_class",
                      "unknown '" + a.config_class + "'; valid: SFTConfig, TrainingArguments");
  args_reading in{j, origin, model, later, trainer};
  in.sft = a.config_class == "SFTConfig";
  in.defaults = config_class_defaults(in.sft);
  in.q.basis = params_basis::exact;  // a real config: exact counts
  read_args_batch(in, a);
  read_args_precision(in, a);
  read_args_checkpointing(in);
  read_torchtune_checkpointing(in);
  read_unsloth_checkpointing(in);
  read_args_attention(in);
  read_args_loss(in);
  read_args_optimizer(in, a);
  read_args_packing(in, a);
  read_args_fsdp_words(in);
  read_args_fsdp_config(in, a);
  read_args_accelerator_config(in);
  read_peft_config(in, a);
  note_prefix_checkpointing(in, a);
  read_quantization_config(in);
  read_args_fsdp_precision(in, a);
  // PEFT's get_peft_model(autocast_adapter_dtype=True) upcasts the adapters of a bf16/fp16 model to fp32
  // (peft/tuners/tuners_utils.py cast_adapter_dtype); TRL's SFTTrainer keeps that default except under
  // DeepSpeed ZeRO-3, and casts QLoRA's trainable parameters back to bf16 (sft_trainer.py __init__).
  const bool autocast_adapters = read_bool_or(j, "autocast_adapter_dtype", origin, true);
  if (in.method() == training_method::lora && !in.fp32_load && autocast_adapters)
    in.q.adapter_dtype = adapter_precision::fp32;  // said below, unless a DeepSpeed engine casts them back
  read_torchtune_loss(in, a);
  const trainer_choices chose = read_trainer_choices(in, autocast_adapters);
  a.defaults = in.defaults;
  a.request = file_under(in);
  a.run = resolve_over(a.defaults, a.request);
  read_args_deepspeed(in, a);
  run_config& r = a.run;
  if (r.setup.method == training_method::lora && r.setup.lora.dtype == adapter_precision::fp32 &&
      !in.fp32_load && autocast_adapters)
    a.notes.emplace_back(
        "adapters in fp32: PEFT's get_peft_model upcasts a 16-bit model's adapters "
        "(autocast_adapter_dtype=True; "
        "TRL passes False only under DeepSpeed ZeRO-3)");
  apply_args_compile(in, a);
  list_args_ignored(in, a);
  if (!chose.note.empty()) a.notes.push_back(chose.note);
  if (!chose.warning.empty()) a.warnings.push_back(chose.warning);
  return a;
}
}  // namespace detail

namespace detail {
/// "read as" for TRL's script form, YAML or JSON: the rule (its ModelConfig keys, or --framework) and what it
/// means.
inline std::string trl_script_read_as(bool by_keys) {
  return std::string("TRL script config (model_name_or_path") +
         (by_keys ? " with ModelConfig keys: use_peft, lora_r, dtype, ..." : "; --framework says so") +
         "); ModelConfig's fields built into model_init_kwargs, quantization_config and peft_config as "
         "trl/scripts/sft.py does";
}
}  // namespace detail

/// Resolves a training-args JSON object against a model (its model_type picks PEFT's default targets): the
/// file fills a run_request (docs/run-request.md), `later` (the command line's flags) is merged over it knob
/// by knob, and resolve fills the rest from the config class's defaults. Each section reads its keys in the
/// file's documented order (docs/training-args.md). TRL's script form (ModelConfig's flat fields beside
/// SFTConfig's) is read as trl/scripts/sft.py builds its sections (docs/frameworks.md).
[[nodiscard]] inline training_args training_args_from_json(const nlohmann::json& j, const loaded_model& model,
                                                           const std::string& origin,
                                                           const run_request& later = {},
                                                           const trainer_behaviour& trainer = {}) {
  if (!j.is_object())
    throw input_error(origin, "expected a JSON object of TrainingArguments / SFTConfig fields");
  if (!detail::is_trl_script(j)) {
    training_args a = detail::read_training_args(j, model, origin, later, trainer);
    a.read_as = a.config_class + " JSON (TrainingArguments / SFTConfig fields without model_name_or_path; " +
                (j.contains("config_class") ? "config_class names the class)"
                                            : "SFTConfig unless config_class says)");
    return a;
  }
  // The script form: errors name the script's keys.
  const detail::trl_script script = detail::from_trl_script(j, origin);
  training_args a;
  try {
    a = detail::read_training_args(script.args, model, origin, later, trainer);
  } catch (const input_error& e) {
    throw detail::trl_script_error(e, origin, script);
  }
  a.read_as = detail::trl_script_read_as(true);
  if (script.renamed)
    a.notes.insert(a.notes.begin(), "max_seq_length: read as max_length, its name since TRL #2895");
  for (const std::string& k : script.unused) a.ignored.push_back(k + " (without use_peft / load_in_4bit)");
  return a;
}

/// The model a training-args file names, as TRL's ModelConfig does (model_name_or_path, with model_revision
/// as
/// @REVISION), for load_model_named; nullopt when it names none (TrainingArguments itself holds no model).
[[nodiscard]] inline std::optional<std::string> training_args_model_id(const std::filesystem::path& file) {
  const nlohmann::json j = detail::parse_json_file(file);
  const auto name = j.is_object() ? j.find("model_name_or_path") : j.end();
  if (name == j.end()) return std::nullopt;
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    throw input_error(file.string() + ": /model_name_or_path",
                      "must be a non-empty string: a Hub id or a path");
  std::string id = name->get<std::string>();
  std::error_code ec;  // a local folder wins over a Hub id, as from_pretrained decides
  if (std::filesystem::exists(id, ec)) return id;
  if (const auto rev = j.find("model_revision"); rev != j.end() && rev->is_string() && *rev != "main")
    id += "@" + rev->get<std::string>();
  return id;
}

/// Reads a training-args JSON file for `model`, with `later` (the command line's flags) over it.
[[nodiscard]] inline training_args load_training_args(const std::filesystem::path& file,
                                                      const loaded_model& model,
                                                      const run_request& later = {}) {
  return training_args_from_json(detail::parse_json_file(file), model, file.string(), later);
}

}  // namespace headroom
