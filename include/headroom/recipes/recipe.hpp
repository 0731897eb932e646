// SPDX-License-Identifier: MIT
// The YAML files people already have: a torchtune recipe, an axolotl config, a LLaMA-Factory config, the
// keyword arguments of Unsloth's calls, and an accelerate config. Each is read with its framework's key names
// and defaults (docs/frameworks.md) into the training-args vocabulary, then resolved like a training-args
// file; errors name the file, the line and the key. yaml-cpp + nlohmann_json (target headroom::recipes).
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../framework.hpp"
#include "../io/config.hpp"
#include "../io/training_args.hpp"
#include "yaml.hpp"

namespace headroom {

/// A run read from a framework's own config file: whose file it is, the model it names, the run.
struct recipe {
  framework source = framework::trl;
  std::string model_id;  ///< what the file named: a torchtune builder, a Hub id, a local directory
  loaded_model model;
  training_args args;
  bool length_from_file = true;  ///< false when the file sets no sequence length (the fallback was used)
};

/// What a recipe cannot say itself.
struct recipe_options {
  std::vector<std::filesystem::path> preset_dirs = preset_search_path();
  std::filesystem::path hub_cache =
      hub_cache_dir(hub_environment_of_process());  ///< where Hub ids are looked up
  hub_fetcher fetch;  ///< fills the cache on a miss (the programs' download); empty: the cache is only read
  std::optional<loaded_model> model;      ///< replaces the file's model (the CLI's --preset / --config)
  std::uint64_t fallback_seq_len = 2048;  ///< when the file sets no length (torchtune max_seq_len: null)
  std::vector<std::string> overrides;     ///< key.path=value, applied before reading (--set)
  std::uint64_t gpus = 1;  ///< processes the launcher starts (tune run --nproc_per_node): above 1, torchtune
                           ///< runs its distributed recipe
  run_request later;       ///< the caller's knobs over the file's, knob by knob (the command line's flags)
  std::optional<framework> kind;  ///< the file's framework when its keys do not say (the CLI's --framework)
};

namespace detail {

/// The model a file names (load_model_named), unless the caller gave one (--preset, --config, --model).
inline loaded_model model_named(const std::string& id, const std::string& where, const recipe_options& opt) {
  if (opt.model) return *opt.model;
  return load_model_named(id, where, opt.preset_dirs, opt.hub_cache, opt.fetch);
}

/// Resolves the translation like a training-args file, the framework's own choices (t.request) and then the
/// caller's (`later`) over its keys; its errors are re-pointed at the YAML key.
inline training_args resolve_translation(const yaml_doc& d, translation& t, const loaded_model& model,
                                         const run_request& later) {
  training_args a;
  try {
    a = training_args_from_json(t.args, model, d.file, merge(t.request, later), t.trainer);
  } catch (const input_error& e) {
    const std::string prefix = d.file + ": /";
    const std::string& f = e.field();
    // A translated key ("file: /peft_config/r"), or a bare name some parsers use ("optimizer").
    std::string key = f.rfind(prefix, 0) == 0 ? f.substr(prefix.size()) : f == "optimizer" ? "optim" : f;
    std::string where = f;
    for (const std::string& candidate : {key, "peft_config/" + key}) {
      std::string k = candidate;
      for (;;) {
        if (const auto it = t.from.find(k); it != t.from.end()) {
          where = it->second;
          break;
        }
        const auto slash = k.rfind('/');
        if (slash == std::string::npos) break;
        k.resize(slash);
      }
      if (where != f) break;
    }
    throw input_error(where, std::string(e.what()).substr(f.size() + 2));
  }
  a.notes.insert(a.notes.begin(), t.notes.begin(), t.notes.end());
  a.warnings.insert(a.warnings.end(), t.warnings.begin(), t.warnings.end());
  a.ignored.insert(a.ignored.end(), t.ignored.begin(), t.ignored.end());
  return a;
}

/// A reader's start: whose file it is and the model it names at `key` (a Hub id or a local directory).
inline recipe recipe_for(framework f, const yaml_doc& d, const nlohmann::json& section,
                         const std::string& key, std::string_view name, const recipe_options& opt) {
  recipe out;
  out.source = f;
  out.model_id = yaml_string(d, section, key, name, "");
  if (out.model_id.empty()) throw input_error(d.at(key), "is required: the model to fine-tune");
  out.model = model_named(out.model_id, d.at(key), opt);
  return out;
}

/// The BitsAndBytesConfig the frameworks build for a 4-bit base: NF4 with double quantisation.
inline nlohmann::json bnb_nf4_double_quant() {
  return {{"load_in_4bit", true}, {"bnb_4bit_quant_type", "nf4"}, {"bnb_4bit_use_double_quant", true}};
}

/// An optimizer class path of a torchtune config in transformers' optim names.
inline std::string torchtune_optimizer(const std::string& component, const std::string& where) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> table{{
      {"torchao.optim.AdamW8bit", "adamw_torch_8bit"},  // torchao/optim/adam.py (pytorch/ao 36027d82)
      {"torchao.optim.AdamW4bit", "adamw_torch_4bit"},  // its block_size default 128: set by the caller
      {"torch.optim.AdamW", "adamw_torch"},
      {"torch.optim.Adam", "adamw_torch"},
      {"torch.optim.SGD", "sgd"},
      {"bitsandbytes.optim.PagedAdamW8bit", "paged_adamw_8bit"},
      {"bitsandbytes.optim.PagedAdamW", "paged_adamw_32bit"},
      {"bitsandbytes.optim.AdamW8bit", "adamw_bnb_8bit"},
      {"bitsandbytes.optim.PagedAdamW32bit", "paged_adamw_32bit"},
  }};
  for (const auto& [path, name] : table)
    if (path == component) return std::string(name);
  std::string valid;
  for (const auto& e : table) append_listed(valid, e.first);
  throw input_error(where, "optimizer '" + component + "' is not modelled; valid: " + valid);
}

/// A torchtune builder (torchtune.models.<family>.<[q]lora_>name) → the preset's Hub-style id.
inline std::string torchtune_model_id(std::string builder, std::string& method) {
  builder = builder.substr(builder.rfind('.') + 1);
  method = "full";
  if (builder.rfind("qlora_", 0) == 0) {
    method = "qlora";
    builder = builder.substr(6);
  } else if (builder.rfind("lora_", 0) == 0) {
    method = "lora";
    builder = builder.substr(5);
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> names{{
      {"llama3_1_8b", "llama-3.1-8b"},
      {"llama3_1_70b", "llama-3.1-70b"},
      {"llama3_8b", "llama-3-8b"},
      {"llama3_2_1b", "llama-3.2-1b"},
      {"llama3_2_3b", "llama-3.2-3b"},
      {"llama2_7b", "llama-2-7b"},
      {"qwen3_1_7b", "qwen3-1.7b"},
      {"qwen3_4b", "qwen3-4b"},
      {"qwen3_8b", "qwen3-8b"},
      {"qwen3_14b", "qwen3-14b"},
      {"qwen3_32b", "qwen3-32b"},
      {"gemma2_2b", "gemma-2-2b"},
  }};
  for (std::string_view suffix : {"_instruct", "_base"})
    if (builder.size() > suffix.size() &&
        builder.compare(builder.size() - suffix.size(), suffix.size(), suffix) == 0)
      builder.resize(builder.size() - suffix.size());
  for (const auto& [tt, id] : names)
    if (tt == builder) return std::string(id);
  return builder;
}

/// axolotl's and LLaMA-Factory's `deepspeed`: a DeepSpeed JSON file, relative to the recipe.
inline void set_deepspeed_path(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  const auto* ds = yaml_find(j, "deepspeed");
  if (ds == nullptr) return;
  if (!ds->is_string()) throw input_error(d.at("deepspeed"), "must be a path to a DeepSpeed JSON file");
  t.set("deepspeed", path_beside(d.file, ds->get<std::string>()), d.at("deepspeed"));
}

/// torchtune's precision, batch and length keys. The recipes build the model under
/// set_default_dtype(cfg.dtype) and never autocast (_setup_model); tokenizer.max_seq_len null means no
/// truncation (the caller's length).
inline void torchtune_workload(const yaml_doc& d, const nlohmann::json& j, const recipe_options& opt,
                               recipe& out, translation& t) {
  t.set("config_class", "TrainingArguments", d.file);
  const std::string dtype = yaml_string(d, j, "dtype", "dtype", "bf16");
  if (dtype != "bf16" && dtype != "fp32")
    throw input_error(d.at("dtype"), "unknown '" + dtype + "'; valid: bf16, fp32");
  t.set("model_init_kwargs/dtype", dtype == "bf16" ? "bfloat16" : "float32", d.at("dtype"));
  t.set("model_init_kwargs/attn_implementation", "sdpa", d.file);  // torchtune attention: F.sdpa
  t.set("bf16", false, d.at("dtype"));
  t.set("autocast_adapter_dtype", false, d.at("model"));  // adapters in cfg.dtype
  t.set("per_device_train_batch_size", yaml_count(d, j, "batch_size", "batch_size", 0, max_solver_batch),
        d.at("batch_size"));
  if (yaml_find(j, "batch_size") == nullptr) throw input_error(d.at("batch_size"), "missing required key");
  t.set("gradient_accumulation_steps",
        yaml_count(d, j, "gradient_accumulation_steps", "gradient_accumulation_steps", 1, 1u << 20),
        d.at("gradient_accumulation_steps"));
  std::uint64_t seq = 0;
  if (const auto* tok = yaml_find(j, "tokenizer"))
    seq = yaml_count(d, *tok, "tokenizer.max_seq_len", "max_seq_len", 0, max_solver_seq_len);
  if (seq == 0) {
    seq = opt.fallback_seq_len;
    out.length_from_file = false;
    t.notes.push_back("tokenizer.max_seq_len is null: torchtune does not truncate; priced at " +
                      std::to_string(seq) + " tokens (--seq-len)");
  }
  t.set("max_length", seq, d.at("tokenizer.max_seq_len"));
}

/// torchtune's checkpointing, offloading, optimizer-in-backward, compile, loss and optimizer keys; true when
/// the optimizer asks for its fused kernel.
inline bool torchtune_training(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  t.set("enable_activation_checkpointing",
        yaml_bool(d, j, "enable_activation_checkpointing", "enable_activation_checkpointing", false),
        d.at("enable_activation_checkpointing"));
  t.set("enable_activation_offloading",
        yaml_bool(d, j, "enable_activation_offloading", "enable_activation_offloading", false),
        d.at("enable_activation_offloading"));
  t.set("optimizer_in_bwd", yaml_bool(d, j, "optimizer_in_bwd", "optimizer_in_bwd", false),
        d.at("optimizer_in_bwd"));
  if (const auto* c = yaml_find(j, "compile"))  // a bool, or a mapping of per-part switches
    t.set("compile", c->is_object() ? true : yaml_bool(d, j, "compile", "compile", false), d.at("compile"));
  if (const auto* loss = yaml_find(j, "loss")) t.set("loss", *loss, d.at("loss._component_"));
  const auto* o = yaml_find(j, "optimizer");
  if (o == nullptr) return false;
  const std::string comp = yaml_string(d, *o, "optimizer._component_", "_component_", "");
  t.set("optim", torchtune_optimizer(comp, d.at("optimizer._component_")), d.at("optimizer"));
  // torchao's AdamW4bit blocks 128 values unless told otherwise, its AdamW8bit 256 (torchao/optim/adam.py).
  if (comp == "torchao.optim.AdamW4bit" || comp == "torchao.optim.AdamW8bit")
    t.request.optim_block_size = yaml_count(d, *o, "optimizer.block_size", "block_size",
                                            comp == "torchao.optim.AdamW4bit" ? 128 : 256, 1u << 20);
  return yaml_bool(d, *o, "optimizer.fused", "fused", false);
}

/// torchtune's LoRA builder arguments (lora_attn_modules, apply_lora_to_mlp / _output, lora_rank, ...).
inline void torchtune_lora(const yaml_doc& d, const nlohmann::json& m, const std::string& method,
                           translation& t) {
  t.set("peft_config/peft_type", "LORA", d.at("model._component_"));
  t.set("peft_config/r", yaml_count(d, m, "model.lora_rank", "lora_rank", 8, max_lora_rank),
        d.at("model.lora_rank"));
  std::vector<std::string> targets;
  if (const auto* attn = yaml_find(m, "lora_attn_modules"))
    for (const std::string& n : yaml_names(d, *attn, "model.lora_attn_modules"))
      targets.push_back(n == "output_proj" ? "o_proj" : n);  // torchtune's name for o_proj
  if (yaml_bool(d, m, "model.apply_lora_to_mlp", "apply_lora_to_mlp", false))
    targets.insert(targets.end(), {"gate_proj", "up_proj", "down_proj"});
  if (yaml_bool(d, m, "model.apply_lora_to_output", "apply_lora_to_output", false))
    targets.emplace_back("lm_head");
  if (targets.empty())
    throw input_error(d.at("model.lora_attn_modules"), "names no module, and apply_lora_to_mlp is off");
  t.set("peft_config/target_modules", targets, d.at("model.lora_attn_modules"));
  if (const auto* v = yaml_find(m, "lora_dropout"))
    t.set("peft_config/lora_dropout", *v, d.at("model.lora_dropout"));
  t.set("peft_config/use_dora", yaml_bool(d, m, "model.use_dora", "use_dora", false), d.at("model.use_dora"));
  if (method == "qlora")  // torchao NF4 (NF4Tensor), its scalers quantised again like double quantisation
    t.set("quantization_config", bnb_nf4_double_quant(), d.at("model._component_"));
}

/// The distributed recipes shard with FSDP2 fully_shard (training/_distributed.py shard_model).
inline void torchtune_distributed(const yaml_doc& d, const nlohmann::json& j, const recipe_options& opt,
                                  translation& t) {
  const bool distributed = opt.gpus > 1 || j.contains("fsdp_cpu_offload") ||
                           j.contains("fsdp_reshard_after_forward") ||
                           j.contains("data_parallel_shard_dim") || j.contains("data_parallel_replicate_dim");
  if (!distributed) return;
  const bool offload = yaml_bool(d, j, "fsdp_cpu_offload", "fsdp_cpu_offload", false);
  // fully_shard(reshard_after_forward=False) keeps the gathered parameters to backward (ZeRO-2-like);
  // data_parallel_replicate_dim > 1 replicates shard groups (HSDP).
  const bool reshard = yaml_bool(d, j, "fsdp_reshard_after_forward", "fsdp_reshard_after_forward", true);
  const bool replicate = yaml_count(d, j, "data_parallel_replicate_dim", "data_parallel_replicate_dim", 1,
                                    max_parallel_gpus) > 1;
  const std::string how = replicate ? "hybrid_shard" : reshard ? "full_shard" : "shard_grad_op";
  t.set("fsdp", how + (offload ? " offload" : ""),
        d.at(replicate ? "data_parallel_replicate_dim"
             : reshard ? "fsdp_cpu_offload"
                       : "fsdp_reshard_after_forward"));
  t.set("fsdp_config/fsdp_version", 2, d.at("fsdp_cpu_offload"));
  t.notes.push_back("a distributed recipe: FSDP2 " + how + " over the GPUs the launcher starts (--gpus)");
}

/// A data table: the torchtune keys read, and those that change memory but are not modelled.
inline void sort_torchtune_keys(const yaml_doc& d, const nlohmann::json& j, const nlohmann::json& m,
                                translation& t) {
  sort_keys(d, j, "",
            {"model", "tokenizer", "dataset", "batch_size", "gradient_accumulation_steps", "dtype",
             "enable_activation_checkpointing", "enable_activation_offloading", "optimizer_in_bwd", "compile",
             "loss", "optimizer", "fsdp_cpu_offload", "fsdp_reshard_after_forward", "data_parallel_shard_dim",
             "data_parallel_replicate_dim"},
            {"tensor_parallel_dim", "tensor_parallel_plan", "custom_sharded_layers",
             "activation_offloading_use_streams", "context_parallel_dim"},
            t);
  sort_keys(d, m, "model",
            {"_component_", "lora_attn_modules", "apply_lora_to_mlp", "apply_lora_to_output", "lora_rank",
             "lora_alpha", "lora_dropout", "use_dora"},
            {"quantize_base"}, t);
}
}  // namespace detail

/// A torchtune recipe config (recipes/configs/*.yaml): the model builder and its LoRA arguments, batch,
/// accumulation, dtype, checkpointing and offloading, optimizer, loss, compile, packing, FSDP keys.
[[nodiscard]] inline recipe torchtune_recipe(const detail::yaml_doc& d, const recipe_options& opt) {
  using namespace detail;  // the YAML readers' helpers
  const nlohmann::json& j = d.root;
  translation t;
  recipe out;
  out.source = framework::torchtune;
  const nlohmann::json& m = j.at("model");
  std::string method;
  out.model_id = torchtune_model_id(m.at("_component_").get<std::string>(), method);
  out.model = model_named(out.model_id, d.at("model._component_"), opt);
  if (out.model.spec.shape.experts == moe_layout::llama4) {  // torchtune's llama4 builders: modules/moe
    out.model.spec.shape.experts = moe_layout::torchtune;
    // The config reader's note on transformers' Llama4TextMoe no longer applies.
    auto& notes = out.model.notes;
    notes.erase(
        std::remove_if(notes.begin(), notes.end(),
                       [](const std::string& n) { return n.rfind(llama4_transformers_moe_note, 0) == 0; }),
        notes.end());
    notes.push_back(
        "torchtune builds Llama-4's MoE from its own modules (modules/moe): each expert runs on its routed "
        "tokens only, and apply_lora_to_mlp adapts every expert (LoRAGroupedExperts); priced as its path "
        "without grouped GEMMs (before SM90): on SM90 and later MoE.forward also keeps an int64 "
        "(k·t × hidden) scatter index per MoE layer and pads each expert's rows to a multiple of 16, "
        "not priced");
  }
  torchtune_workload(d, j, opt, out, t);
  const bool fused = torchtune_training(d, j, t);
  if (method != "full") torchtune_lora(d, m, method, t);
  bool packed = false;
  if (const auto* ds = yaml_find(j, "dataset"); ds != nullptr && ds->is_object())
    packed = yaml_bool(d, *ds, "dataset.packed", "packed", false);
  torchtune_distributed(d, j, opt, t);
  sort_torchtune_keys(d, j, m, t);
  if (fused) t.request.optim_impl = optimizer_impl::fused;
  // torchtune's QLoRA builders quantise with torchao's NF4 as the weights load
  if (method == "qlora") t.trainer.qlora_load = load_path::torchao_nf4;
  out.args = resolve_translation(d, t, out.model, opt.later);
  if (packed) {
    out.args.packing = true;
    out.args.batching.layout = batch_layout::packed;
  }
  return out;
}

namespace detail {
/// axolotl's precision, batch and length. bf16 "auto" is true on a bf16 GPU (utils/config/__init__.py
/// normalize_config): torch_dtype bf16.
inline void axolotl_workload(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  t.set("config_class", "TrainingArguments", d.file);
  const auto* bf = yaml_find(j, "bf16");
  const bool bf16 = bf == nullptr || (bf->is_string() && bf->get<std::string>() == "auto") ||
                    yaml_bool(d, j, "bf16", "bf16", true);
  const bool fp16 = !bf16 && yaml_bool(d, j, "fp16", "fp16", false);
  if (bf != nullptr && bf->is_boolean() && bf16 && yaml_bool(d, j, "fp16", "fp16", false))
    throw input_error(d.at("fp16"), "and bf16 are both true; give one");
  if (bf == nullptr || bf->is_string())
    t.notes.emplace_back("bf16: auto is priced as true (a GPU with bf16: Ampere or newer)");
  t.set("model_init_kwargs/dtype", bf16 ? "bfloat16" : fp16 ? "float16" : "float32", d.at("bf16"));
  t.set("bf16", bf16, d.at("bf16"));
  t.set("fp16", fp16, d.at("fp16"));
  t.set("per_device_train_batch_size",
        yaml_count(d, j, "micro_batch_size", "micro_batch_size", 1, max_solver_batch),
        d.at("micro_batch_size"));
  t.set("gradient_accumulation_steps",
        yaml_count(d, j, "gradient_accumulation_steps", "gradient_accumulation_steps", 1, 1u << 20),
        d.at("gradient_accumulation_steps"));
  t.set("max_length", yaml_count(d, j, "sequence_len", "sequence_len", 512, max_solver_seq_len),
        d.at("sequence_len"));
}

/// axolotl's gradient_checkpointing: true | false | "offload"; its kwargs default to use_reentrant False
/// (core/builders/base.py _configure_gradient_checkpointing); activation_offloading.
inline void axolotl_checkpointing(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  if (const auto* gc = yaml_find(j, "gradient_checkpointing")) {
    if (gc->is_string() && gc->get<std::string>() == "offload") {
      t.set("use_gradient_checkpointing", "unsloth", d.at("gradient_checkpointing"));
      t.notes.emplace_back("gradient_checkpointing: offload is priced as Unsloth's offloaded checkpointing");
    } else {
      t.set("gradient_checkpointing",
            yaml_bool(d, j, "gradient_checkpointing", "gradient_checkpointing", false),
            d.at("gradient_checkpointing"));
    }
  } else {
    t.set("gradient_checkpointing", false, d.file);
  }
  nlohmann::json kwargs{{"use_reentrant", false}};
  if (const auto* k = yaml_find(j, "gradient_checkpointing_kwargs")) kwargs = *k;
  t.set("gradient_checkpointing_kwargs", kwargs, d.at("gradient_checkpointing_kwargs"));
  if (const auto* off = yaml_find(j, "activation_offloading")) {
    if (off->is_boolean() || (off->is_string() && off->get<std::string>() == "legacy")) {
      const bool on = !off->is_boolean() || off->get<bool>();
      t.set("activation_offloading", on, d.at("activation_offloading"));
      // TRL's offloader replaces recompute under adapters; a full fine-tune keeps recompute (checkpoint
      // wrappers, non-reentrant) and offloads the checkpoints' inputs (loaders/model.py
      // _apply_activation_checkpointing, axolotl 067b021c).
      const bool full = yaml_string(d, j, "adapter", "adapter", "").empty();
      if (on) t.set("gradient_checkpointing", full, d.at("activation_offloading"));
      if (on && full) {
        t.set("gradient_checkpointing_kwargs", nlohmann::json{{"use_reentrant", false}},
              d.at("activation_offloading"));
        t.notes.emplace_back(
            "activation_offloading on a full fine-tune: axolotl keeps recompute and offloads the "
            "checkpointed "
            "blocks' inputs");
      }
    } else {
      t.warnings.push_back(d.at("activation_offloading") + " " + off->dump() + " is not modelled");
    }
  }
}

/// axolotl's optimizer, attention, sample packing, compile, Liger loss and DeepSpeed file.
inline void axolotl_kernels(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  t.set("optim", yaml_string(d, j, "optimizer", "optimizer", "adamw_torch_fused"), d.at("optimizer"));
  std::string attn = yaml_string(d, j, "attn_implementation", "attn_implementation", "");
  if (attn.empty())
    attn = yaml_bool(d, j, "flash_attention", "flash_attention", false) ? "flash_attention_2"
           : yaml_bool(d, j, "sdp_attention", "sdp_attention", false)   ? "sdpa"
                                                                        : "sdpa";
  t.set("model_init_kwargs/attn_implementation", attn, d.at("attn_implementation"));
  if (yaml_bool(d, j, "sample_packing", "sample_packing", false)) {  // multipack: rows of sequence_len
    t.set("packing", true, d.at("sample_packing"));
    t.set("padding_free", true, d.at("sample_packing"));
  }
  if (const auto* c = yaml_find(j, "torch_compile"))
    t.set("torch_compile", c->is_string() ? true : yaml_bool(d, j, "torch_compile", "torch_compile", false),
          d.at("torch_compile"));
  if (yaml_bool(d, j, "liger_fused_linear_cross_entropy", "liger_fused_linear_cross_entropy", false))
    t.set("use_liger_kernel", true, d.at("liger_fused_linear_cross_entropy"));
  set_deepspeed_path(d, j, t);
}

/// axolotl's FSDP (utils/trainer.py setup_fsdp_envs, schemas/validation.py): `fsdp` words or an
/// `fsdp_config` turn it on; its keys with or without the deprecated `fsdp_` prefix; the version top-level or
/// in the config (1 by default); the sharding from the words, `sharding_strategy`, or FSDP2's
/// `reshard_after_forward` (accelerate's default: full sharding); `offload_params`,
/// `activation_checkpointing`, FSDP1's `use_orig_params`.
inline void axolotl_fsdp(const yaml_doc& d, const nlohmann::json& j, std::uint64_t gpus, translation& t) {
  const auto* words = yaml_find(j, "fsdp");
  const auto* given_config = yaml_find(j, "fsdp_config");
  if (words == nullptr && given_config == nullptr) return;
  nlohmann::json cfg = nlohmann::json::object();
  if (given_config != nullptr && given_config->is_object())
    for (const auto& item : given_config->items()) {
      const std::string& key = item.key();
      cfg[key.rfind("fsdp_", 0) == 0 && key != "fsdp_version" ? key.substr(5) : key] = item.value();
    }
  const std::string where = d.at(given_config != nullptr ? "fsdp_config" : "fsdp");
  std::uint64_t version = yaml_version(d, j, "fsdp_version", "fsdp_version", 0, 2);
  if (version == 0) version = yaml_version(d, cfg, "fsdp_config.fsdp_version", "fsdp_version", 0, 2);
  if (version == 0) version = yaml_version(d, cfg, "fsdp_config.version", "version", 1, 2);
  std::string shard = "full_shard";
  bool offload = false;
  if (yaml_find(j, "deepspeed") != nullptr)  // axolotl's validation refuses the pair
    throw input_error(d.at("deepspeed"),
                      std::string("and ") + (given_config ? "fsdp_config" : "fsdp") + ": give one of them");
  if (words != nullptr) {
    std::string sharded;
    for (const std::string& w : yaml_names(d, *words, "fsdp")) {
      if (w == "shard_grad_op" || w == "hybrid_shard" || w == "full_shard") {
        if (!sharded.empty() && sharded != w)
          throw input_error(d.at("fsdp"), sharded + " and " + w + " exclude each other; give one");
        sharded = shard = w;
      }
      if (w == "offload") offload = true;
    }
  }
  const std::string strategy = yaml_string(d, cfg, "fsdp_config.sharding_strategy", "sharding_strategy", "");
  if (!strategy.empty() && strategy != "FULL_SHARD" && strategy != "SHARD_GRAD_OP" &&
      strategy != "HYBRID_SHARD")
    throw input_error(d.at("fsdp_config.sharding_strategy"),
                      "'" + strategy + "' is not modelled; valid: FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD");
  if (!strategy.empty()) shard = lower_case(strategy);
  if (version == 2 && !yaml_bool(d, cfg, "fsdp_config.reshard_after_forward", "reshard_after_forward", true))
    shard = "shard_grad_op";
  offload = offload || yaml_bool(d, cfg, "fsdp_config.offload_params", "offload_params", false);
  t.set("fsdp", shard + " auto_wrap" + (offload ? " offload" : ""), where);
  t.set("fsdp_config/fsdp_version", version, where);
  const std::string prefetch =
      lower_case(yaml_string(d, cfg, "fsdp_config.backward_prefetch", "backward_prefetch", ""));
  if (!prefetch.empty()) t.set("fsdp_config/backward_prefetch", prefetch, d.at("fsdp_config"));
  if (version == 2 && cfg.contains("use_orig_params"))  // as --fsdp-version 2 --fsdp-use-orig-params says
    throw input_error(d.at("fsdp_config"),
                      "fsdp_config.use_orig_params: is FSDP1's setting; fsdp_version is 2");
  if (version == 1 && cfg.contains("use_orig_params"))  // the Trainer's default (true) otherwise
    t.set("fsdp_config/use_orig_params",
          yaml_bool(d, cfg, "fsdp_config.use_orig_params", "use_orig_params", true), d.at("fsdp_config"));
  if (yaml_bool(d, cfg, "fsdp_config.activation_checkpointing", "activation_checkpointing", false)) {
    t.set("gradient_checkpointing", true, where);  // accelerate's checkpoint_wrapper: non-reentrant
    t.set("gradient_checkpointing_kwargs", nlohmann::json{{"use_reentrant", false}}, where);
  }
  if (gpus <= 1)
    t.notes.push_back(where + ": FSDP shards over the data-parallel GPUs; priced on one (give --gpus N)");
}

/// axolotl's plugins: Liger's (its liger_* keys: the fused linear cross-entropy is priced, the other
/// kernels are not modelled) and Cut Cross-Entropy's (cut_cross_entropy, default true: CCE's loss); any
/// other plugin changes what runs and is not modelled.
inline void axolotl_plugins(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  static constexpr std::string_view liger = "axolotl.integrations.liger.LigerPlugin";
  static constexpr std::string_view cce = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin";
  bool has_cce = false;
  if (const auto* p = yaml_find(j, "plugins"))
    for (const std::string& name : yaml_names(d, *p, "plugins")) {
      if (name == cce) has_cce = true;
      if (name != liger && name != cce)
        t.warnings.push_back(d.at("plugins") + ": " + name + " is not modelled");
    }
  for (const char* kernel : {"liger_rope", "liger_rms_norm", "liger_layer_norm", "liger_glu_activation"})
    if (yaml_bool(d, j, kernel, kernel, false))
      t.warnings.push_back(d.at(kernel) + ": Liger's kernel changes saved activations and is not modelled");
  const bool cut = yaml_bool(d, j, "cut_cross_entropy", "cut_cross_entropy", has_cce);
  if (cut && has_cce) {
    t.request.loss = loss_impl::fused_cce;
  } else if (cut) {
    t.warnings.push_back(d.at("cut_cross_entropy") +
                         ": needs axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin in plugins; "
                         "priced without it");
  }
}

/// axolotl's adapter: lora or qlora (load_in_4bit), and its LoRA keys.
inline void axolotl_adapter(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  const std::string adapter = yaml_string(d, j, "adapter", "adapter", "");
  const bool four_bit = yaml_bool(d, j, "load_in_4bit", "load_in_4bit", false);
  if (yaml_bool(d, j, "load_in_8bit", "load_in_8bit", false))
    throw input_error(d.at("load_in_8bit"), "8-bit base weights are not modelled yet; use load_in_4bit");
  if (adapter.empty()) {
    if (four_bit) throw input_error(d.at("load_in_4bit"), "a 4-bit base needs adapter: qlora");
    return;
  }
  if (adapter != "lora" && adapter != "qlora")
    throw input_error(d.at("adapter"), "unknown '" + adapter + "'; valid: lora, qlora");
  if (adapter == "qlora" && !four_bit)
    throw input_error(d.at("adapter"), "qlora needs load_in_4bit: true (axolotl raises the same)");
  t.set("peft_config/peft_type", "LORA", d.at("adapter"));
  t.set("peft_config/r", yaml_count(d, j, "lora_r", "lora_r", 8, max_lora_rank), d.at("lora_r"));
  if (yaml_bool(d, j, "lora_target_linear", "lora_target_linear", false))
    t.set("peft_config/target_modules", "all-linear", d.at("lora_target_linear"));
  else if (const auto* tm = yaml_find(j, "lora_target_modules"))
    t.set("peft_config/target_modules", yaml_names(d, *tm, "lora_target_modules"),
          d.at("lora_target_modules"));
  if (const auto* v = yaml_find(j, "lora_dropout"))
    t.set("peft_config/lora_dropout", *v, d.at("lora_dropout"));
  t.set("peft_config/use_dora", yaml_bool(d, j, "peft_use_dora", "peft_use_dora", false),
        d.at("peft_use_dora"));
  if (const auto* mts = yaml_find(j, "lora_modules_to_save"))
    t.set("peft_config/modules_to_save", yaml_names(d, *mts, "lora_modules_to_save"),
          d.at("lora_modules_to_save"));
  if (const auto* ad = yaml_find(j, "peft_autocast_adapter_dtype"))
    t.set("autocast_adapter_dtype", *ad, d.at("peft_autocast_adapter_dtype"));
  if (four_bit)  // the BitsAndBytesConfig axolotl builds (loaders/model.py): nf4, double quantisation
    t.set("quantization_config", bnb_nf4_double_quant(), d.at("load_in_4bit"));
}

/// A data table: the axolotl keys read, and those that change memory but are not modelled.
inline void sort_axolotl_keys(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  sort_keys(d, j, "",
            {"base_model",
             "bf16",
             "fp16",
             "micro_batch_size",
             "gradient_accumulation_steps",
             "sequence_len",
             "gradient_checkpointing",
             "gradient_checkpointing_kwargs",
             "activation_offloading",
             "optimizer",
             "attn_implementation",
             "flash_attention",
             "sdp_attention",
             "sample_packing",
             "torch_compile",
             "liger_fused_linear_cross_entropy",
             "deepspeed",
             "adapter",
             "load_in_4bit",
             "load_in_8bit",
             "lora_r",
             "lora_target_linear",
             "lora_target_modules",
             "lora_dropout",
             "peft_use_dora",
             "lora_modules_to_save",
             "peft_autocast_adapter_dtype",
             "fsdp",
             "fsdp_config",
             "fsdp_version",
             "plugins",
             "cut_cross_entropy",
             "liger_rope",
             "liger_rms_norm",
             "liger_layer_norm",
             "liger_glu_activation"},
            // axolotl 067b021c utils/schemas: quantised or non-AMP bases, LoRA's fused kernels, chunked or
            // tiled losses and MLPs, sequence parallelism, ReLoRA, QAT, GPTQ
            {"lora_target_parameters",
             "layer_offloading",
             "fp8",
             "tensor_parallel_size",
             "context_parallel_size",
             "unfrozen_parameters",
             "model_quantization_config",
             "quantize_moe_experts",
             "gptq",
             "bfloat16",
             "float16",
             "float32",
             "lora_mlp_kernel",
             "lora_qkv_kernel",
             "lora_o_kernel",
             "chunked_cross_entropy",
             "tiled_mlp",
             "sequence_parallel_degree",
             "relora",
             "qat",
             "dynamic_checkpoint"},
            t);
}
}  // namespace detail

/// An axolotl config (examples/*/*.yml): base_model, adapter, LoRA keys, sequence_len, micro_batch_size,
/// precision, checkpointing, optimizer, attention, sample packing, deepspeed.
[[nodiscard]] inline recipe axolotl_recipe(const detail::yaml_doc& d, const recipe_options& opt) {
  using namespace detail;  // the YAML readers' helpers
  const nlohmann::json& j = d.root;
  translation t;
  recipe out = recipe_for(framework::axolotl, d, j, "base_model", "base_model", opt);
  axolotl_workload(d, j, t);
  axolotl_checkpointing(d, j, t);
  axolotl_kernels(d, j, t);
  axolotl_fsdp(d, j, opt.gpus, t);
  axolotl_plugins(d, j, t);
  axolotl_adapter(d, j, t);
  sort_axolotl_keys(d, j, t);
  // PEFT's get_peft_model upcasts the adapters (peft_autocast_adapter_dtype, default true) and nothing casts
  // a QLoRA run's back: only TRL's SFTTrainer does (sft_trainer.py)
  t.trainer.keeps_fp32_qlora_adapters =
      "axolotl's load_lora calls get_peft_model (autocast_adapter_dtype=True)";
  out.args = resolve_translation(d, t, out.model, opt.later);
  return out;
}

namespace detail {
/// LLaMA-Factory's quantization_bit (0: none).
inline std::uint64_t llama_factory_bits(const yaml_doc& d, const nlohmann::json& j) {
  return yaml_count(d, j, "quantization_bit", "quantization_bit", 0, 64);
}

/// LLaMA-Factory's precision: whether init_adapter (model/adapter.py) upcasts trainable parameters to fp32
/// (unless pure_bf16, or ZeRO-3 without quantisation); the model loads in the compute dtype (bf16 with bf16:
/// true).
inline bool llama_factory_precision(const yaml_doc& d, const nlohmann::json& j, const std::string& type,
                                    translation& t) {
  t.set("config_class", "TrainingArguments", d.file);
  const bool bf16 = yaml_bool(d, j, "bf16", "bf16", false);
  const bool fp16 = yaml_bool(d, j, "fp16", "fp16", false);
  const bool pure_bf16 = yaml_bool(d, j, "pure_bf16", "pure_bf16", false);
  const std::uint64_t bits = llama_factory_bits(d, j);
  bool zero3 = false;  // a ZeRO-3 DeepSpeed file keeps the trainable parameters in the load dtype
  if (const auto* ds = yaml_find(j, "deepspeed"); ds != nullptr && ds->is_string() && bits == 0) {
    const nlohmann::json dsj =  // the recipe's key first, then the file's fault (MI-45)
        named_by(d.at("deepspeed"),
                 [&] { return parse_json_file(path_beside(d.file, ds->get<std::string>())); });
    const auto zo = dsj.find("zero_optimization");
    zero3 = zo != dsj.end() && zo->is_object() && zo->value("stage", nlohmann::json(0)) == 3;
  }
  const bool upcast = !pure_bf16 && !zero3;
  const bool half = bf16 || fp16 || pure_bf16;
  t.set("model_init_kwargs/dtype",
        !half                        ? "float32"
        : (type == "full" && upcast) ? "float32"
                                     : (fp16 ? "float16" : "bfloat16"),
        d.at("bf16"));
  t.set("bf16", bf16 || pure_bf16, d.at("bf16"));
  t.set("fp16", fp16, d.at("fp16"));
  t.set("autocast_adapter_dtype", upcast, d.at("pure_bf16"));
  return upcast;
}

/// LLaMA-Factory's batch, length and checkpointing (model_args.py: disable_gradient_checkpointing False,
/// use_reentrant_gc True, use_unsloth_gc False).
inline void llama_factory_workload(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  t.set("per_device_train_batch_size",
        yaml_count(d, j, "per_device_train_batch_size", "per_device_train_batch_size", 8, max_solver_batch),
        d.at("per_device_train_batch_size"));
  t.set("gradient_accumulation_steps",
        yaml_count(d, j, "gradient_accumulation_steps", "gradient_accumulation_steps", 1, 1u << 20),
        d.at("gradient_accumulation_steps"));
  t.set("max_length", yaml_count(d, j, "cutoff_len", "cutoff_len", 2048, max_solver_seq_len),
        d.at("cutoff_len"));
  const bool ckpt =
      !yaml_bool(d, j, "disable_gradient_checkpointing", "disable_gradient_checkpointing", false);
  if (yaml_bool(d, j, "use_unsloth_gc", "use_unsloth_gc", false))
    t.set("use_gradient_checkpointing", "unsloth", d.at("use_unsloth_gc"));
  else
    t.set("gradient_checkpointing", ckpt, d.at("disable_gradient_checkpointing"));
  t.set("gradient_checkpointing_kwargs/use_reentrant",
        yaml_bool(d, j, "use_reentrant_gc", "use_reentrant_gc", true), d.at("use_reentrant_gc"));
}

/// LLaMA-Factory's flash_attn (auto: transformers' choice, sdpa; disabled: eager; sdpa, fa2, fa3), optimizer,
/// Liger, packing (on by default for pre-training) and DeepSpeed file.
inline void llama_factory_kernels(const yaml_doc& d, const nlohmann::json& j, const std::string& stage,
                                  translation& t) {
  const std::string fa = yaml_string(d, j, "flash_attn", "flash_attn", "auto");
  static const std::map<std::string, std::string> attn{{"auto", "sdpa"},
                                                       {"sdpa", "sdpa"},
                                                       {"disabled", "eager"},
                                                       {"fa2", "flash_attention_2"},
                                                       {"fa3", "flash_attention_3"}};
  const auto a = attn.find(fa);
  if (a == attn.end())
    throw input_error(d.at("flash_attn"), "unknown '" + fa + "'; valid: auto, disabled, sdpa, fa2, fa3");
  t.set("model_init_kwargs/attn_implementation", a->second, d.at("flash_attn"));
  t.set("optim", yaml_string(d, j, "optim", "optim", "adamw_torch_fused"), d.at("optim"));
  if (yaml_bool(d, j, "enable_liger_kernel", "enable_liger_kernel", false))
    t.set("use_liger_kernel", true, d.at("enable_liger_kernel"));
  if (yaml_bool(d, j, "packing", "packing", stage == "pt") ||
      yaml_bool(d, j, "neat_packing", "neat_packing", false))
    t.set("packing", true, d.at("packing"));
  set_deepspeed_path(d, j, t);
  if (yaml_bool(d, j, "use_unsloth", "use_unsloth", false))
    t.warnings.push_back(d.at("use_unsloth") + ": Unsloth's kernels and loss are not modelled");
}

/// LLaMA-Factory's LoRA keys (lora_target "all" is every linear layer) and its 4-bit bitsandbytes base.
inline void llama_factory_adapter(const yaml_doc& d, const nlohmann::json& j, const std::string& type,
                                  std::uint64_t bits, translation& t) {
  if (type == "lora") {
    t.set("peft_config/peft_type", "LORA", d.at("finetuning_type"));
    t.set("peft_config/r", yaml_count(d, j, "lora_rank", "lora_rank", 8, max_lora_rank), d.at("lora_rank"));
    const std::string target = yaml_string(d, j, "lora_target", "lora_target", "all");
    t.set("peft_config/target_modules", target == "all" ? std::string("all-linear") : target,
          d.at("lora_target"));
    if (const auto* v = yaml_find(j, "lora_dropout"))
      t.set("peft_config/lora_dropout", *v, d.at("lora_dropout"));
    t.set("peft_config/use_dora", yaml_bool(d, j, "use_dora", "use_dora", false), d.at("use_dora"));
    if (const auto* at = yaml_find(j, "additional_target"))
      t.set("peft_config/modules_to_save", yaml_names(d, *at, "additional_target"),
            d.at("additional_target"));
  }
  if (bits == 0) return;
  const std::string how = yaml_string(d, j, "quantization_method", "quantization_method", "bnb");
  if (bits != 4 || how != "bnb")
    throw input_error(d.at("quantization_bit"),
                      "only 4-bit bitsandbytes (quantization_bit: 4, quantization_method: bnb) is modelled");
  t.set("quantization_config",
        {{"load_in_4bit", true},
         {"bnb_4bit_quant_type", yaml_string(d, j, "quantization_type", "quantization_type", "nf4")},
         {"bnb_4bit_use_double_quant", yaml_bool(d, j, "double_quantization", "double_quantization", true)}},
        d.at("quantization_bit"));
}

/// A data table: the LLaMA-Factory keys read, and those that change memory but are not modelled.
inline void sort_llama_factory_keys(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  sort_keys(d, j, "",
            {"model_name_or_path",
             "stage",
             "finetuning_type",
             "bf16",
             "fp16",
             "pure_bf16",
             "quantization_bit",
             "quantization_method",
             "quantization_type",
             "double_quantization",
             "per_device_train_batch_size",
             "gradient_accumulation_steps",
             "cutoff_len",
             "disable_gradient_checkpointing",
             "use_reentrant_gc",
             "use_unsloth_gc",
             "flash_attn",
             "optim",
             "enable_liger_kernel",
             "packing",
             "neat_packing",
             "deepspeed",
             "use_unsloth",
             "lora_rank",
             "lora_target",
             "lora_dropout",
             "use_dora",
             "additional_target",
             "freeze_vision_tower"},
            {"upcast_layernorm", "upcast_lmhead_output", "use_badam", "use_galore", "use_apollo",
             "pissa_init", "fsdp", "fsdp_config", "shift_attn", "mixture_of_depths"},
            t);
}

/// finetuning_args.py: freeze_vision_tower True; false lets full fine-tuning train the tower and projector
/// (the training-args reader decides once the method is known).
inline void llama_factory_vision_tower(const yaml_doc& d, const nlohmann::json& j, translation& t) {
  if (!yaml_bool(d, j, "freeze_vision_tower", "freeze_vision_tower", true))
    t.trainer.unfrozen_vision_tower = d.at("freeze_vision_tower");
}
}  // namespace detail

/// A LLaMA-Factory config (examples/train_*/*.yaml): model_name_or_path, stage and finetuning_type, LoRA,
/// quantization_bit, cutoff_len, the TrainingArguments fields, flash_attn, checkpointing, deepspeed.
[[nodiscard]] inline recipe llama_factory_recipe(const detail::yaml_doc& d, const recipe_options& opt) {
  using namespace detail;  // the YAML readers' helpers
  const nlohmann::json& j = d.root;
  translation t;
  recipe out = recipe_for(framework::llama_factory, d, j, "model_name_or_path", "model_name_or_path", opt);
  const std::string stage = yaml_string(d, j, "stage", "stage", "sft");
  if (stage != "sft" && stage != "pt")
    throw input_error(d.at("stage"), "'" + stage + "' is not modelled; valid: sft, pt");
  const std::string type = yaml_string(d, j, "finetuning_type", "finetuning_type", "lora");
  if (type != "lora" && type != "full")
    throw input_error(d.at("finetuning_type"), "'" + type + "' is not modelled; valid: lora, full");
  const bool upcast = llama_factory_precision(d, j, type, t);
  const std::uint64_t bits = llama_factory_bits(d, j);
  llama_factory_workload(d, j, t);
  llama_factory_kernels(d, j, stage, t);
  llama_factory_adapter(d, j, type, bits, t);
  sort_llama_factory_keys(d, j, t);
  llama_factory_vision_tower(d, j, t);
  if (upcast)
    t.trainer.keeps_fp32_qlora_adapters = "LLaMA-Factory's init_adapter casts trainable parameters to fp32";
  out.args = resolve_translation(d, t, out.model, opt.later);
  return out;
}

/// Unsloth has no config file: headroom reads the keyword arguments of its three calls, as written in its
/// notebooks — `from_pretrained:` (FastLanguageModel.from_pretrained), `get_peft_model:` and `training_args:`
/// (the SFTConfig fields).
[[nodiscard]] inline recipe unsloth_recipe(const detail::yaml_doc& d, const recipe_options& opt) {
  using namespace detail;  // the YAML readers' helpers
  const nlohmann::json& j = d.root;
  const nlohmann::json& fp = j.at("from_pretrained");
  if (!fp.is_object()) throw input_error(d.at("from_pretrained"), "must be a mapping of keyword arguments");
  translation t;
  recipe out = recipe_for(framework::unsloth, d, fp, "from_pretrained.model_name", "model_name", opt);
  if (const auto* ta = yaml_find(j, "training_args")) {
    if (!ta->is_object()) throw input_error(d.at("training_args"), "must be a mapping of SFTConfig fields");
    for (const auto& item : ta->items()) t.set(item.key(), item.value(), d.at("training_args." + item.key()));
  }
  // loader.py FastLanguageModel.from_pretrained: max_seq_length 2048, dtype None (bf16 where supported),
  // load_in_4bit True.
  if (!t.args.contains("max_length"))  // the SFTConfig's own max_length, when given, truncates
    t.set("max_length",
          yaml_count(d, fp, "from_pretrained.max_seq_length", "max_seq_length", 2048, max_solver_seq_len),
          d.at("from_pretrained.max_seq_length"));
  t.set("model_init_kwargs/dtype", "bfloat16", d.at("from_pretrained.dtype"));
  t.set("model_init_kwargs/attn_implementation", "flash_attention_2", d.at("from_pretrained"));
  const bool four_bit = yaml_bool(d, fp, "from_pretrained.load_in_4bit", "load_in_4bit", true);
  if (yaml_bool(d, fp, "from_pretrained.load_in_8bit", "load_in_8bit", false))
    throw input_error(d.at("from_pretrained.load_in_8bit"), "8-bit base weights are not modelled yet");
  const bool full = yaml_bool(d, fp, "from_pretrained.full_finetuning", "full_finetuning", false);
  const auto* peft = yaml_find(j, "get_peft_model");
  // from_pretrained's own use_gradient_checkpointing defaults to "unsloth" too (loader.py).
  t.set("use_gradient_checkpointing",
        yaml_find(fp, "use_gradient_checkpointing") ? fp.at("use_gradient_checkpointing")
                                                    : nlohmann::json("unsloth"),
        d.at("from_pretrained.use_gradient_checkpointing"));
  if (!full) {
    if (peft == nullptr || !peft->is_object())
      throw input_error(d.at("get_peft_model"),
                        "is required (a mapping of its keyword arguments) unless "
                        "from_pretrained.full_finetuning is true");
    const nlohmann::json& p = *peft;
    t.set("peft_config/peft_type", "LORA", d.at("get_peft_model"));
    t.set("peft_config/r", yaml_count(d, p, "get_peft_model.r", "r", 16, max_lora_rank),
          d.at("get_peft_model.r"));
    std::vector<std::string> targets{"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                     "gate_proj", "up_proj", "down_proj"};
    if (const auto* tm = yaml_find(p, "target_modules"))
      targets = yaml_names(d, *tm, "get_peft_model.target_modules");
    t.set("peft_config/target_modules", targets, d.at("get_peft_model.target_modules"));
    if (const auto* v = yaml_find(p, "lora_dropout"))
      t.set("peft_config/lora_dropout", *v, d.at("get_peft_model.lora_dropout"));
    if (const auto* mts = yaml_find(p, "modules_to_save"))
      t.set("peft_config/modules_to_save", yaml_names(d, *mts, "get_peft_model.modules_to_save"),
            d.at("get_peft_model.modules_to_save"));
    // use_gradient_checkpointing "unsloth" by default (llama.py get_peft_model).
    if (const auto* g = yaml_find(p, "use_gradient_checkpointing"))
      t.set("use_gradient_checkpointing", *g, d.at("get_peft_model.use_gradient_checkpointing"));
    if (four_bit) t.set("quantization_config", bnb_nf4_double_quant(), d.at("from_pretrained.load_in_4bit"));
    sort_keys(d, p, "get_peft_model",
              {"r", "target_modules", "lora_dropout", "modules_to_save", "use_gradient_checkpointing",
               "lora_alpha", "bias", "random_state", "use_rslora", "loftq_config", "max_seq_length"},
              {"target_parameters", "finetune_last_n_layers", "layers_to_transform", "qat_scheme"}, t);
  } else if (four_bit && yaml_find(fp, "load_in_4bit") != nullptr) {
    throw input_error(d.at("from_pretrained.load_in_4bit"), "a 4-bit base cannot be fully fine-tuned");
  }
  t.notes.emplace_back(
      "Unsloth's fused cross-entropy chunks the logits (unsloth_fused_ce_loss): priced as a chunked loss");
  sort_keys(d, fp, "from_pretrained",
            {"model_name", "max_seq_length", "dtype", "load_in_4bit", "load_in_8bit", "load_in_16bit",
             "full_finetuning", "use_gradient_checkpointing", "token", "device_map"},
            {"fast_inference", "gpu_memory_utilization", "offload_embedding"}, t);
  sort_keys(d, j, "", {"from_pretrained", "get_peft_model", "training_args"}, {}, t);
  if (!(yaml_find(j, "training_args") && j.at("training_args").contains("loss_type"))) {
    t.request.loss = loss_impl::chunked;  // unsloth_fused_ce_loss, priced as TRL's chunks
    t.request.chunk_tokens = loss_config{}.chunk_tokens;
    t.request.output_chunks = loss_config{}.output_chunks;
  }
  if (full) t.request.method = training_method::full;
  out.args = resolve_translation(d, t, out.model, opt.later);
  return out;
}

/// A TRL script config in YAML (TrlParser's --config for trl/scripts/sft.py; alignment-handbook's recipes):
/// SFTConfig's and ModelConfig's fields in one mapping, read as the training-args reader reads the same keys
/// in JSON (its script form: io/training_args.hpp), with the model named by model_name_or_path.
[[nodiscard]] inline recipe trl_recipe(const detail::yaml_doc& d, const recipe_options& opt) {
  const nlohmann::json& j = d.root;
  recipe out = detail::recipe_for(framework::trl, d, j, "model_name_or_path", "model_name_or_path", opt);
  detail::translation t;
  t.args = j;
  for (const auto& item : j.items()) t.from[item.key()] = d.at(item.key());
  out.args = detail::resolve_translation(d, t, out.model, opt.later);
  return out;
}

namespace detail {
/// Keys only LLaMA-Factory's configs use beside model_name_or_path (hparams/*.py), and keys only TRL's
/// script configs use (ModelConfig, ScriptArguments): the rule that tells the two apart. A data table.
inline constexpr std::array<std::string_view, 10> llama_factory_only_keys{
    {"stage", "finetuning_type", "template", "lora_rank", "lora_target", "quantization_bit", "cutoff_len",
     "flash_attn", "dataset_dir", "dataset"}};
inline constexpr std::array<std::string_view, 12> trl_only_keys{
    {"use_peft", "lora_r", "lora_target_modules", "lora_modules_to_save", "load_in_4bit", "load_in_8bit",
     "bnb_4bit_quant_type", "use_bnb_nested_quant", "dtype", "torch_dtype", "attn_implementation",
     "dataset_name"}};
template <std::size_t N>
bool has_any(const nlohmann::json& root, const std::array<std::string_view, N>& keys) {
  return std::any_of(keys.begin(), keys.end(), [&](std::string_view k) { return root.contains(k); });
}
}  // namespace detail

namespace detail {
/// "read as": the kind a recipe was read as, and the rule that decided it (its keys, or --framework).
inline std::string recipe_read_as(framework fw, bool by_keys) {
  switch (fw) {
    case framework::torchtune:
      return "torchtune recipe (model._component_ names a builder)";
    case framework::axolotl:
      return "axolotl config (base_model)";
    case framework::unsloth:
      return "Unsloth calls (from_pretrained, get_peft_model, training_args)";
    case framework::llama_factory:
      return std::string("LLaMA-Factory config (model_name_or_path") +
             (by_keys ? " with its own keys: stage, finetuning_type, lora_rank, ...)"
                      : "; --framework says so)");
    case framework::trl:
      return trl_script_read_as(by_keys);
    case framework::hf_trainer:
    case framework::peft:
      break;
  }
  return std::string(choice_name(framework_names, fw));
}
}  // namespace detail

/// Which framework wrote a YAML file, from the keys only it uses; a file with model_name_or_path is
/// LLaMA-Factory's or TRL's by their own keys (detail::llama_factory_only_keys, trl_only_keys). None when no
/// rule matches, or when both do.
[[nodiscard]] inline std::optional<framework> recipe_framework(const nlohmann::json& root) {
  if (const auto m = root.find("model"); m != root.end() && m->is_object() && m->contains("_component_"))
    return framework::torchtune;
  if (root.contains("from_pretrained")) return framework::unsloth;
  if (root.contains("base_model")) return framework::axolotl;
  if (!root.contains("model_name_or_path")) return std::nullopt;
  const bool factory = detail::has_any(root, detail::llama_factory_only_keys);
  const bool trl = detail::has_any(root, detail::trl_only_keys);
  if (factory == trl) return std::nullopt;
  return factory ? framework::llama_factory : framework::trl;
}

/// Reads a torchtune, axolotl, LLaMA-Factory, TRL or Unsloth YAML file into the run it describes; a file
/// whose keys do not say which (or say two) is read as `opt.kind`, or refused asking for it.
[[nodiscard]] inline recipe recipe_from_yaml(const detail::yaml_doc& d, const recipe_options& opt = {}) {
  std::optional<framework> fw = recipe_framework(d.root);
  const bool by_keys = fw.has_value();  // the keys decided, not --framework
  if (!fw && d.root.contains("model_name_or_path")) {
    if (!opt.kind)
      throw input_error(
          d.file,
          "names model_name_or_path, and its keys do not say whether it is a LLaMA-Factory config "
          "(stage, finetuning_type, lora_rank, ...) or a TRL script config (use_peft, lora_r, "
          "dtype, ...): give --framework llama-factory or --framework trl");
    if (*opt.kind != framework::llama_factory && *opt.kind != framework::trl)
      throw input_error("--framework", "a file with model_name_or_path is read as llama-factory or trl");
    fw = opt.kind;
  }
  if (!fw) {
    if (d.root.contains("distributed_type") || d.root.contains("compute_environment"))
      throw input_error(d.file, "is an accelerate config: give it with --accelerate-config");
    throw input_error(
        d.file,
        "is not a recipe headroom reads: expected a torchtune recipe (model._component_), an "
        "axolotl config (base_model), a LLaMA-Factory or TRL script config (model_name_or_path) "
        "or Unsloth's calls (from_pretrained)");
  }
  if (*fw == framework::torchtune && !d.root.at("model").at("_component_").is_string())
    throw input_error(d.at("model._component_"), "must be a torchtune model builder path");
  recipe out = *fw == framework::torchtune       ? torchtune_recipe(d, opt)
               : *fw == framework::axolotl       ? axolotl_recipe(d, opt)
               : *fw == framework::llama_factory ? llama_factory_recipe(d, opt)
               : *fw == framework::trl           ? trl_recipe(d, opt)
                                                 : unsloth_recipe(d, opt);
  out.args.read_as = detail::recipe_read_as(*fw, by_keys);
  return out;
}

/// Reads a recipe file: a framework's YAML config (torchtune, axolotl, LLaMA-Factory, Unsloth's calls).
[[nodiscard]] inline recipe load_recipe(const std::filesystem::path& file, const recipe_options& opt = {}) {
  detail::yaml_doc d = detail::parse_yaml_file(file);
  detail::apply_overrides(d, opt.overrides);
  return recipe_from_yaml(d, opt);
}

}  // namespace headroom
