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
#include "../schedules.hpp"
#include "config.hpp"
#include "deepspeed.hpp"

namespace headroom {

/// A training config, resolved: the run, the schedule, and what was assumed or ignored.
struct training_args {
  run_config run{};
  std::string config_class;  ///< "SFTConfig" (default) or "TrainingArguments"
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
  if (!j.contains(key) || j.at(std::string(key)).is_null()) return fallback;
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

/// Resolves a training-args JSON object against a model (its model_type picks PEFT's default targets).
[[nodiscard]] inline training_args training_args_from_json(const nlohmann::json& j, const loaded_model& model,
                                                           const std::string& origin) {
  using detail::args_count;
  if (!j.is_object())
    throw input_error(origin, "expected a JSON object of TrainingArguments / SFTConfig fields");
  training_args a;
  a.config_class = detail::read_string_or(j, "config_class", origin, "SFTConfig");
  if (a.config_class != "SFTConfig" && a.config_class != "TrainingArguments")
    throw input_error(origin + ": /config_class",
                      "unknown '" + a.config_class + "'; valid: SFTConfig, TrainingArguments");
  const bool sft = a.config_class == "SFTConfig";
  run_config& r = a.run;
  r.basis = params_basis::exact;  // a real config: exact counts

  // Batch and length (TrainingArguments: per_device_train_batch_size 8; SFTConfig max_length 1024).
  r.activations.batch = args_count(j, "per_device_train_batch_size", origin, 8, max_solver_batch);
  r.grad_accum_steps = args_count(j, "gradient_accumulation_steps", origin, 1, 1u << 20);
  r.activations.seq_len = args_count(j, "max_length", origin, 1024, max_solver_seq_len);
  if (!j.contains("max_length")) a.notes.emplace_back("max_length not set: SFTConfig's default 1024 is used");

  // Precision: the load dtype (TRL loads float32 unless model_init_kwargs.dtype says otherwise) and
  // bf16 / fp16 autocast. bf16=True on a bf16 model is the course's third route (no master copy).
  const bool bf16_given = j.contains("bf16") && !j.at("bf16").is_null();
  const bool fp16 = detail::read_bool_or(j, "fp16", origin, false);
  bool bf16 = detail::read_bool_or(j, "bf16", origin, false);
  if (sft && !bf16_given) bf16 = !fp16;  // TRL: bf16 defaults to `not fp16`
  if (bf16 && fp16) throw input_error(origin + ": /bf16", "bf16 and fp16 cannot both be true");
  nlohmann::json init = j.value("model_init_kwargs", nlohmann::json::object());
  if (init.is_null()) init = nlohmann::json::object();
  if (!init.is_object()) throw input_error(origin + ": /model_init_kwargs", "must be an object");
  std::string dtype = detail::dtype_name(init, origin + ": /model_init_kwargs");
  if (dtype.empty()) {
    dtype = sft ? "float32" : "auto";
    a.notes.emplace_back(
        sft ? "model_init_kwargs.dtype not set: TRL loads the model in float32"
            : "no load dtype given: transformers v5 loads the checkpoint's dtype (assumed bfloat16)");
  }
  const bool fp32_load = dtype == "float32";
  if (fp32_load) {
    r.setup.precision = bf16   ? precision_route::fp32_autocast
                        : fp16 ? precision_route::fp16_autocast
                               : precision_route::fp32;
  } else {
    r.setup.precision = precision_route::bf16_pure;
    if (dtype == "float16")
      a.notes.emplace_back("a float16 model is priced like bfloat16 (same bytes); fp16 needs loss scaling");
  }

  // Checkpointing (TRL turns it on for every trainer), selective mode, activation offloading.
  const bool ckpt = detail::read_bool_or(j, "gradient_checkpointing", origin, sft);
  nlohmann::json ckpt_kwargs = j.value("gradient_checkpointing_kwargs", nlohmann::json::object());
  if (ckpt_kwargs.is_null()) ckpt_kwargs = nlohmann::json::object();
  const bool selective =
      detail::read_bool_or(ckpt_kwargs, "selective", origin + ": /gradient_checkpointing_kwargs", false);
  const bool offload = detail::read_bool_or(j, "activation_offloading", origin, false);
  // transformers' gradient_checkpointing_enable passes use_reentrant=True unless the kwargs say otherwise.
  r.activations.reentrant =
      detail::read_bool_or(ckpt_kwargs, "use_reentrant", origin + ": /gradient_checkpointing_kwargs", true);
  // TRL's activation_offloading wraps training_step in OffloadActivations (sft_trainer.py, training_step):
  // over checkpointed blocks it offloads their inputs, and the loss's saved tensors too.
  r.activations.ckpt = !ckpt ? (offload ? checkpointing::offload : checkpointing::none)
                             : (offload     ? checkpointing::checkpoint_offload
                                : selective ? checkpointing::selective
                                            : checkpointing::full);
  r.activations.offload_wraps = offload_scope::step;
  // torchtune's recipe keys: non-reentrant checkpoint wrappers, offloading around the model forward only
  // (recipes/*_single_device.py _setup_model; offloading without checkpointing raises).
  const bool tt_ckpt =
      j.contains("enable_activation_checkpointing") && !j.at("enable_activation_checkpointing").is_null();
  const bool tt_offload = detail::read_bool_or(j, "enable_activation_offloading", origin, false);
  if (tt_ckpt || tt_offload) {
    if (j.contains("gradient_checkpointing") || j.contains("activation_offloading"))
      throw input_error(
          detail::key_path(origin, "enable_activation_checkpointing"),
          "torchtune's keys cannot be combined with gradient_checkpointing / activation_offloading");
    const bool on = detail::read_bool_or(j, "enable_activation_checkpointing", origin, false);
    if (tt_offload && !on)
      throw input_error(detail::key_path(origin, "enable_activation_offloading"),
                        "needs enable_activation_checkpointing: true (torchtune's recipes raise the same)");
    r.activations.ckpt =
        tt_offload ? checkpointing::checkpoint_offload : (on ? checkpointing::full : checkpointing::none);
    r.activations.reentrant = false;
    r.activations.offload_wraps = offload_scope::model;
  }
  // Unsloth's FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth"): its own offloaded
  // checkpoint function (unsloth_zoo gradient_checkpointing.py).
  if (const auto u = j.find("use_gradient_checkpointing"); u != j.end() && !u->is_null()) {
    if (u->is_string() && u->get<std::string>() == "unsloth")
      r.activations.ckpt = checkpointing::offload_checkpointed;
    else if (u->is_boolean())
      r.activations.ckpt = u->get<bool>() ? checkpointing::full : checkpointing::none;
    else
      throw input_error(detail::key_path(origin, "use_gradient_checkpointing"),
                        "must be true, false or \"unsloth\", got " + u->dump());
  }

  // Attention implementation (transformers' default is sdpa).
  const std::string attn =
      detail::read_string_or(init, "attn_implementation", origin + ": /model_init_kwargs", "sdpa");
  if (attn == "eager")
    r.activations.attention = attention_impl::eager;
  else if (attn == "sdpa")
    r.activations.attention = attention_impl::sdpa;
  else if (attn.find("flash") != std::string::npos)
    r.activations.attention = attention_impl::flash;
  else
    throw input_error(
        origin + ": /model_init_kwargs/attn_implementation",
        "unknown '" + attn +
            "'; valid: eager, sdpa, flash_attention_2, flash_attention_3, kernels-community/flash-attn2");

  // Loss head: SFTConfig's loss_type defaults to chunked_nll, or nll with use_liger_kernel.
  const bool liger = detail::read_bool_or(j, "use_liger_kernel", origin, false);
  const std::string loss =
      detail::read_string_or(j, "loss_type", origin, sft ? (liger ? "nll" : "chunked_nll") : "nll");
  if (loss == "chunked_nll") {
    if (liger)
      throw input_error(origin + ": /loss_type", "chunked_nll cannot be combined with use_liger_kernel");
    r.loss = {loss_impl::chunked, 256};
  } else if (loss == "nll" || loss == "dft") {
    r.loss.impl = liger ? loss_impl::fused_liger : loss_impl::naive;
  } else {
    throw input_error(origin + ": /loss_type", "unknown '" + loss + "'; valid: nll, dft, chunked_nll");
  }

  r.setup.optimizer = optimizer_by_name(detail::read_string_or(j, "optim", origin, "adamw_torch_fused"));
  // torchtune's recipe key; TrainingArguments has none (headroom reads it from either file).
  r.setup.optim.in_backward = detail::read_bool_or(j, "optimizer_in_bwd", origin, false);
  a.learning_rate = detail::args_number(j, "learning_rate", origin, sft ? 2e-5 : 5e-5);
  a.warmup_steps = detail::args_number(j, "warmup_steps", origin, 0);
  a.lr_scheduler_type = detail::read_string_or(j, "lr_scheduler_type", origin, "linear");
  if (a.lr_scheduler_type != "reduce_lr_on_plateau")
    (void)parse_choice(schedule_names, a.lr_scheduler_type, "lr_scheduler_type");
  a.packing = detail::read_bool_or(j, "packing", origin, false);
  const std::string strategy = detail::read_string_or(j, "packing_strategy", origin, "bfd");
  if (strategy != "bfd" && strategy != "bfd_split" && strategy != "wrapped")
    throw input_error(detail::key_path(origin, "packing_strategy"),
                      "unknown '" + strategy + "'; valid: bfd, bfd_split, wrapped");
  a.padding_free = detail::read_bool_or(j, "padding_free", origin, false) ||
                   (a.packing && (strategy == "bfd" || strategy == "bfd_split"));
  // TRL: bfd packing forces padding_free; "wrapped" cuts full max_length rows (flattened or not, the
  // same tokens); otherwise the collator pads to the longest.
  a.batching.layout = a.packing && strategy == "wrapped" ? batch_layout::packed
                      : a.padding_free                   ? batch_layout::padding_free
                                                         : batch_layout::padded;
  a.batching.bfd_packed = a.packing && strategy != "wrapped";
  a.batching.split_overflow = strategy == "bfd_split";
  a.batching.pad_to_multiple = detail::args_count(j, "pad_to_multiple_of", origin, 1, max_solver_seq_len);
  if (a.padding_free && r.activations.attention != attention_impl::flash)
    a.notes.emplace_back(
        "padding_free / bfd packing needs FlashAttention 2 or 3 (TRL warns of contamination otherwise)");
  // TrainingArguments torch_compile; torchtune's recipe key `compile` (applied once the PEFT setup is known).
  a.torch_compile = detail::read_bool_or(j, "torch_compile", origin, false) ||
                    detail::read_bool_or(j, "compile", origin, false);

  // FSDP through TrainingArguments: `fsdp` ("full_shard auto_wrap", ...) and fsdp_config (transformers
  // training_args.py; the world size comes from the launcher: --gpus).
  if (const auto f = j.find("fsdp"); f != j.end() && !f->is_null()) {
    std::string words;
    if (f->is_string())
      words = f->get<std::string>();
    else if (f->is_array())
      for (const auto& w : *f) words += (w.is_string() ? w.get<std::string>() : std::string("?")) + " ";
    else
      throw input_error(detail::key_path(origin, "fsdp"),
                        "must be a string such as \"full_shard auto_wrap\"");
    std::string word;
    for (std::size_t i = 0; i <= words.size(); ++i) {
      if (i < words.size() && words[i] != ' ') {
        word += words[i];
        continue;
      }
      if (word == "full_shard" || word == "shard_grad_op" || word == "hybrid_shard")
        r.parallel.shard = parse_choice(sharding_names, word, "fsdp");
      else if (word == "offload")
        r.parallel.offload_optimizer = r.parallel.offload_params = true;
      else if (!word.empty() && word != "auto_wrap")
        throw input_error(
            detail::key_path(origin, "fsdp"),
            "unknown '" + word + "'; valid: full_shard, shard_grad_op, hybrid_shard, offload, auto_wrap");
      word.clear();
    }
  }
  if (const auto fc = j.find("fsdp_config"); fc != j.end() && !fc->is_null()) {
    const std::string fo = origin + ": /fsdp_config";
    if (!fc->is_object()) throw input_error(fo, "must be an object");
    r.parallel.fsdp_version = detail::args_count(*fc, "fsdp_version", fo, 1, 2);
    const std::string prefetch = detail::read_string_or(*fc, "backward_prefetch", fo, "backward_pre");
    if (prefetch != "backward_pre" && prefetch != "backward_post" && prefetch != "no_prefetch")
      throw input_error(fo + "/backward_prefetch",
                        "unknown '" + prefetch + "'; valid: backward_pre, backward_post, no_prefetch");
    r.parallel.prefetch_units = prefetch == "no_prefetch" ? 0 : 1;
    if (r.parallel.shard == sharding::none)
      a.notes.emplace_back(
          "fsdp_config without fsdp: FSDP is not enabled (set \"fsdp\": \"full_shard auto_wrap\")");
  }

  // PEFT LoraConfig and BitsAndBytesConfig sections.
  r.setup.method = training_method::full;
  if (const auto peft = j.find("peft_config"); peft != j.end() && !peft->is_null()) {
    if (!peft->is_object())
      throw input_error(origin + ": /peft_config", "must be an object (LoraConfig fields)");
    const std::string po = origin + ": /peft_config";
    // PeftConfig.peft_type: LoRA (with DoRA), IA3, VeRA, LN tuning and prompt, P- and prefix tuning are
    // modelled; the other methods are refused by name.
    const std::string type = detail::read_string_or(*peft, "peft_type", po, "LORA");
    const auto method = detail::peft_method_named(type);
    if (!method)
      throw input_error(po + "/peft_type",
                        "'" + type +
                            "' is not modelled yet; valid: LORA (use_dora: true for DoRA), "
                            "IA3, VERA, LN_TUNING, PROMPT_TUNING, P_TUNING, PREFIX_TUNING. Not yet: " +
                            std::string(unmodelled_peft_types));
    r.setup.method = training_method::lora;
    r.setup.lora.method = *method;
    // LoraConfig r = 8; VeraConfig r = 256.
    r.setup.lora.rank = args_count(*peft, "r", po, *method == peft_method::vera ? 256 : 8, max_lora_rank);
    // A module list: a string (one name or "all-linear") or a list of names.
    auto modules = [&](const nlohmann::json& v, const char* key) {
      if (v.is_string()) return parse_lora_targets(v.get<std::string>());
      if (!v.is_array()) throw input_error(po + "/" + key, "must be a string or a list of strings");
      std::string list;
      for (const auto& item : v) {
        if (!item.is_string()) throw input_error(po + "/" + key, "must hold strings");
        detail::append_listed(list, item.get<std::string>(), ",");
      }
      return parse_lora_targets(list);
    };
    const auto tm = peft->find("target_modules");
    if (*method == peft_method::ln_tuning || prompt_learning(r.setup.lora)) {
      if (tm != peft->end() && !tm->is_null())
        a.notes.emplace_back("target_modules: " + type +
                             " is priced over every norm (LN tuning) or the prompt encoder; the list is "
                             "not read");
    } else if (tm == peft->end() || tm->is_null()) {
      // No row in PEFT's mappings: _prepare_adapter_config raises.
      const detail::peft_default_mapping* defaults = detail::peft_defaults(model.model_type);
      if (defaults == nullptr)
        throw input_error(po + "/target_modules",
                          "not set, and PEFT has no default for '" + model.model_type +
                              "' (\"Please specify `target_modules`\"): list the modules");
      r.setup.lora.targets = parse_lora_targets(*method == peft_method::ia3 ? defaults->ia3 : defaults->lora);
      a.notes.push_back("target_modules not set: PEFT's default for " + model.model_type + " is " +
                        lora_targets_text(r.setup.lora.targets));
    } else {
      r.setup.lora.targets = modules(*tm, "target_modules");
    }
    if (*method == peft_method::ia3) {
      r.setup.lora.feedforward = ia3_default_feedforward(r.setup.lora.targets);
      if (const auto ff = peft->find("feedforward_modules"); ff != peft->end() && !ff->is_null())
        r.setup.lora.feedforward = modules(*ff, "feedforward_modules");
    }
    if (prompt_learning(r.setup.lora)) {
      r.setup.lora.virtual_tokens = args_count(*peft, "num_virtual_tokens", po, 0, max_virtual_tokens);
      if (r.setup.lora.virtual_tokens == 0)
        throw input_error(po + "/num_virtual_tokens", "is required for " + type + " (PEFT has no default)");
      detail::read_prompt_encoder(*peft, po, r.setup.lora);
    }
    r.setup.lora.use_dora = detail::read_bool_or(*peft, "use_dora", po, false);
    // LoraConfig lora_dropout 0.0; VeraConfig vera_dropout 0.0.
    r.setup.lora.dropout =
        detail::args_number(*peft, *method == peft_method::vera ? "vera_dropout" : "lora_dropout", po, 0.0);
    if (!(r.setup.lora.dropout < 1.0)) throw input_error(po + "/lora_dropout", "must be in [0, 1)");
    // rsLoRA only changes the scaling (alpha / sqrt(r)); PiSSA and OLoRA initialise from an fp32 SVD / QR of
    // each base weight (peft/tuners/lora/layer.py pissa_init, olora_init): a load-phase transient.
    if (detail::read_bool_or(*peft, "use_rslora", po, false))
      a.notes.emplace_back("use_rslora: scaling alpha/sqrt(r) only, no memory effect");
    if (const auto init_weights = peft->find("init_lora_weights");
        init_weights != peft->end() && init_weights->is_string()) {
      const std::string how = init_weights->get<std::string>();
      if (how == "corda" || how == "eva" || how == "loftq" || how == "orthogonal")
        a.notes.push_back(
            "init_lora_weights \"" + how +
            "\": its one-off initialisation at get_peft_model is not priced; the training step is");
      else
        r.setup.lora.init = parse_lora_init(how, po + "/init_lora_weights");
    }
    if (r.setup.lora.use_dora)
      a.notes.emplace_back(
          "DoRA: magnitude vectors, the products' saved tensors and each module's weight-norm temporaries "
          "are counted (docs/activations.md)");
    if (const auto mts = peft->find("modules_to_save"); mts != peft->end() && !mts->is_null()) {
      if (!mts->is_array()) throw input_error(po + "/modules_to_save", "must be a list of module names");
      if (!mts->empty()) r.setup.lora.modules_to_save = modules(*mts, "modules_to_save");
    }
  }
  // PEFT refuses prefix tuning with gradient checkpointing; SFTConfig's default (True) yields to it, an
  // explicit true is an error (validate_prefix).
  if (trains_prefix(r.setup) && !j.contains("gradient_checkpointing") &&
      r.activations.ckpt == checkpointing::full) {
    r.activations.ckpt = checkpointing::none;
    a.notes.emplace_back(
        "gradient_checkpointing off: PEFT raises 'PREFIX_TUNING does not work with gradient checkpointing' "
        "(peft_model.py _setup_prompt_encoder), so SFTConfig's default True cannot apply");
  }
  if (const auto q = j.find("quantization_config"); q != j.end() && !q->is_null()) {
    if (!q->is_object())
      throw input_error(origin + ": /quantization_config", "must be an object (BitsAndBytesConfig)");
    const std::string qo = origin + ": /quantization_config";
    if (detail::read_bool_or(*q, "load_in_8bit", qo, false))
      throw input_error(qo + "/load_in_8bit", "8-bit base weights are not modelled yet; use load_in_4bit");
    if (detail::read_bool_or(*q, "load_in_4bit", qo, false)) {
      if (r.setup.method != training_method::lora)
        throw input_error(qo + "/load_in_4bit", "a 4-bit base needs a peft_config (QLoRA)");
      r.setup.method = training_method::qlora;
      const std::string qt = detail::read_string_or(*q, "bnb_4bit_quant_type", qo, "fp4");
      if (qt != "nf4" && qt != "fp4")
        throw input_error(qo + "/bnb_4bit_quant_type", "unknown '" + qt + "'; valid: nf4, fp4");
      r.setup.nf4.double_quant =
          detail::read_bool_or(*q, "bnb_4bit_use_double_quant", qo, false);  // HF default
      r.setup.precision = precision_route::bf16_pure;  // TRL casts QLoRA's trainable params to bf16
      r.load = load_path::bnb_4bit;  // from_pretrained quantises each Linear weight as it arrives
    }
  }

  // PEFT's get_peft_model(autocast_adapter_dtype=True) upcasts the adapters of a bf16/fp16 model to fp32
  // (peft/tuners/tuners_utils.py cast_adapter_dtype); TRL's SFTTrainer keeps that default except under
  // DeepSpeed ZeRO-3, and casts QLoRA's trainable parameters back to bf16 (sft_trainer.py __init__).
  const bool autocast_adapters = detail::read_bool_or(j, "autocast_adapter_dtype", origin, true);
  if (r.setup.method == training_method::lora && !fp32_load && autocast_adapters)
    r.setup.lora.dtype = adapter_precision::fp32;  // said below, unless a DeepSpeed engine casts them back

  // torchtune's recipe loss (`loss: {_component_: ..., num_output_chunks: 8}`), accepted here until recipes
  // are read natively: its class path names the loss layout.
  if (const auto tl = j.find("loss"); tl != j.end() && !tl->is_null()) {
    const std::string lo = origin + ": /loss";
    if (!tl->is_object()) throw input_error(lo, "must be an object with _component_ (a torchtune loss)");
    if (j.contains("loss_type") || liger)
      throw input_error(lo, "a torchtune loss cannot be combined with loss_type or use_liger_kernel");
    const std::string component = detail::read_string_or(*tl, "_component_", lo, "");
    static constexpr std::array<std::pair<std::string_view, loss_impl>, 2> torchtune_losses{
        {{"torchtune.modules.loss.LinearCrossEntropyLoss", loss_impl::linear_ce},
         {"torchtune.modules.loss.CEWithChunkedOutputLoss", loss_impl::chunked_output}}};
    const auto found = std::find_if(torchtune_losses.begin(), torchtune_losses.end(),
                                    [&](const auto& e) { return e.first == component; });
    if (found == torchtune_losses.end())
      throw input_error(lo + "/_component_", "unknown '" + component +
                                                 "'; valid: torchtune.modules.loss.LinearCrossEntropyLoss, "
                                                 "torchtune.modules.loss.CEWithChunkedOutputLoss");
    r.loss.impl = found->second;
    r.loss.output_chunks = args_count(*tl, "num_output_chunks", lo, 8, max_solver_seq_len);  // torchtune: 8
  }

  // transformers' `deepspeed` argument: a ds_config path (relative to this file) or the object itself;
  // "auto" values come from the fields above (integrations/deepspeed.py HfTrainerDeepSpeedConfig).
  if (const auto d = j.find("deepspeed"); d != j.end() && !d->is_null()) {
    const deepspeed_inputs in{r.activations.batch,         r.grad_accum_steps, 0, bf16, fp16,
                              model.spec.shape.hidden_size};
    deepspeed_config ds;
    if (d->is_object()) {
      ds = deepspeed_from_json(*d, in, origin + ": /deepspeed");
    } else if (d->is_string()) {
      std::filesystem::path file = d->get<std::string>();
      if (file.is_relative() && std::filesystem::is_regular_file(origin))
        file = std::filesystem::path(origin).parent_path() / file;
      ds = load_deepspeed(file, in);
    } else {
      throw input_error(origin + ": /deepspeed",
                        "must be a path to a ds_config.json or a DeepSpeed config object");
    }
    add_deepspeed(ds, r, a.notes, a.warnings, a.ignored);
    a.deepspeed = true;
  }
  if (r.setup.method == training_method::lora && r.setup.lora.dtype == adapter_precision::fp32 &&
      !fp32_load && autocast_adapters)
    a.notes.emplace_back(
        "adapters in fp32: PEFT's get_peft_model upcasts a 16-bit model's adapters "
        "(autocast_adapter_dtype=True; "
        "TRL passes False only under DeepSpeed ZeRO-3)");
  if (a.torch_compile) {  // Inductor's fusions, where headroom models them; otherwise priced eager, said so
    r.activations.compiled = true;
    if (const char* why = compile_not_modelled(model.spec.shape, r.setup, r.activations)) {
      r.activations.compiled = false;
      a.notes.push_back(std::string("torch_compile: not modelled for ") + why +
                        "; priced eager (an upper bound)");
    }
  }
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
                                          "deepspeed",
                                          "torch_compile",
                                          "compile",
                                          "peft_config",
                                          "quantization_config"};
  for (const auto& item : j.items())
    if (used.count(item.key()) == 0) a.ignored.push_back(item.key());
  // Renamed keys change memory when ignored: TRL's SFTConfig max_seq_length is max_length now (removed).
  for (const auto& [old_key, new_key] : {std::pair<const char*, const char*>{"max_seq_length", "max_length"},
                                         {"per_gpu_train_batch_size", "per_device_train_batch_size"}})
    if (j.contains(old_key))
      a.warnings.push_back(detail::key_path(origin, old_key) +
                           ": deprecated and not read; its value goes in " + new_key +
                           (j.contains(new_key) ? "" : " (the default is priced)"));
  if (a.ignored.size() == j.size())
    a.warnings.push_back(origin + (j.empty() ? " is empty" : " has no key headroom reads") +
                         ": every value is the trainer's default (check the file is a TrainingArguments / "
                         "SFTConfig JSON)");
  return a;
}

/// Reads a training-args JSON file for `model`.
[[nodiscard]] inline training_args load_training_args(const std::filesystem::path& file,
                                                      const loaded_model& model) {
  return training_args_from_json(detail::parse_json_file(file), model, file.string());
}

}  // namespace headroom
