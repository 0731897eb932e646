// SPDX-License-Identifier: MIT
// accelerate's config file (`accelerate config`, ~/.cache/huggingface/accelerate/default_config.yaml): the
// launcher's process count and the FSDP or DeepSpeed plugin settings, applied to a run. yaml-cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../io/deepspeed.hpp"
#include "yaml.hpp"

namespace headroom {

/// An accelerate config, read (accelerate commands/config/config_args.py ClusterConfig key names).
struct accelerate_config {
  std::string distributed_type = "NO";  ///< NO, MULTI_GPU, FSDP, DEEPSPEED
  std::uint64_t processes = 1;          ///< num_processes: GPUs over all machines
  std::string mixed_precision = "no";   ///< no, bf16, fp16
  sharding shard = sharding::none;
  std::uint64_t fsdp_version = 1;
  bool offload = false;  ///< fsdp_offload_params / DeepSpeed offload devices
  bool offload_params = false;
  bool activation_checkpointing = false;  ///< fsdp_activation_checkpointing
  std::uint64_t prefetch_units =
      1;  ///< fsdp_backward_prefetch: BACKWARD_PRE / BACKWARD_POST 1, NO_PREFETCH 0
  std::optional<bool> use_orig_params;  ///< fsdp_use_orig_params (FSDP1; the plugin's default false)
  std::string deepspeed_file;           ///< deepspeed_config.deepspeed_config_file, resolved
  std::vector<std::string> notes;
  std::vector<std::string> warnings;
  std::vector<std::string> ignored;
};

namespace detail {
/// FSDP1's ShardingStrategy by name or by accelerate's number (1 FULL_SHARD … 5 _HYBRID_SHARD_ZERO2).
inline sharding accelerate_sharding(const yaml_doc& d, const nlohmann::json& v, const std::string& key) {
  static const std::map<std::string, sharding> names{{"FULL_SHARD", sharding::fsdp_full},
                                                     {"1", sharding::fsdp_full},
                                                     {"SHARD_GRAD_OP", sharding::fsdp_grad_op},
                                                     {"2", sharding::fsdp_grad_op},
                                                     {"NO_SHARD", sharding::none},
                                                     {"3", sharding::none},
                                                     {"HYBRID_SHARD", sharding::fsdp_hybrid},
                                                     {"4", sharding::fsdp_hybrid}};
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  const auto it = names.find(text);
  if (it == names.end())
    throw input_error(d.at(key), "unknown '" + text +
                                     "'; valid: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD (or 1-4)");
  return it->second;
}
/// accelerate's fsdp_config (FullyShardedDataParallelPlugin: FULL_SHARD / reshard_after_forward True by
/// default).
inline void read_accelerate_fsdp(const yaml_doc& d, const nlohmann::json& j, accelerate_config& a,
                                 translation& sorted) {
  const auto* f = yaml_find(j, "fsdp_config");
  if (f != nullptr && !f->is_object())
    throw input_error(d.at("fsdp_config"), "must be a mapping, got " + json_excerpt(*f));
  const nlohmann::json fc = f != nullptr ? *f : nlohmann::json::object();
  a.fsdp_version = yaml_version(d, fc, "fsdp_config.fsdp_version", "fsdp_version", 1, 2);
  a.shard = sharding::fsdp_full;
  if (const auto* s = yaml_find(fc, "fsdp_sharding_strategy"))
    a.shard = accelerate_sharding(d, *s, "fsdp_config.fsdp_sharding_strategy");
  if (const auto* r = yaml_find(fc, "fsdp_reshard_after_forward")) {
    if (r->is_boolean())  // FSDP2: True shards after forward (FULL_SHARD), False keeps them (SHARD_GRAD_OP)
      a.shard = r->get<bool>() ? sharding::fsdp_full : sharding::fsdp_grad_op;
    else
      a.shard = accelerate_sharding(d, *r, "fsdp_config.fsdp_reshard_after_forward");
  }
  a.offload = a.offload_params =
      yaml_bool(d, fc, "fsdp_config.fsdp_offload_params", "fsdp_offload_params", false);
  a.activation_checkpointing =
      yaml_bool(d, fc, "fsdp_config.fsdp_activation_checkpointing", "fsdp_activation_checkpointing", false);
  const std::string prefetch =
      yaml_string(d, fc, "fsdp_config.fsdp_backward_prefetch", "fsdp_backward_prefetch", "BACKWARD_PRE");
  if (prefetch != "BACKWARD_PRE" && prefetch != "BACKWARD_POST" && prefetch != "NO_PREFETCH")
    throw input_error(d.at("fsdp_config.fsdp_backward_prefetch"),
                      "unknown '" + prefetch + "'; valid: BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH");
  a.prefetch_units = prefetch == "NO_PREFETCH" ? 0 : 1;
  if (a.fsdp_version == 2 && yaml_find(fc, "fsdp_use_orig_params") != nullptr)
    throw input_error(d.at("fsdp_config.fsdp_use_orig_params"), "is FSDP1's setting; fsdp_version is 2");
  if (a.fsdp_version == 1 && yaml_find(fc, "fsdp_use_orig_params") != nullptr)
    a.use_orig_params = yaml_bool(d, fc, "fsdp_config.fsdp_use_orig_params", "fsdp_use_orig_params", false);
  sort_keys(d, fc, "fsdp_config",
            {"fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward", "fsdp_offload_params",
             "fsdp_activation_checkpointing", "fsdp_backward_prefetch", "fsdp_use_orig_params"},
            {"fsdp_forward_prefetch", "fsdp_min_num_params"}, sorted);
}

/// accelerate's deepspeed_config: a DeepSpeed file beside it, or the plugin's zero_stage and offload devices.
inline void read_accelerate_deepspeed(const yaml_doc& d, const nlohmann::json& j, accelerate_config& a,
                                      translation& sorted) {
  const auto* ds = yaml_find(j, "deepspeed_config");
  const nlohmann::json dc = ds != nullptr && ds->is_object() ? *ds : nlohmann::json::object();
  const std::string file =
      yaml_string(d, dc, "deepspeed_config.deepspeed_config_file", "deepspeed_config_file", "");
  if (!file.empty()) {
    a.deepspeed_file = path_beside(d.file, file);
  } else {
    // accelerate takes stages 0 to 3; stage 0 partitions nothing (priced as --deepspeed's stage 0 is: DDP).
    const auto* zs = yaml_find(dc, "zero_stage");
    const bool none = zs != nullptr && zs->is_number_integer() && zs->get<std::int64_t>() == 0;
    const std::uint64_t stage =
        none ? 0 : yaml_count(d, dc, "deepspeed_config.zero_stage", "zero_stage", 2, 3);
    a.shard = stage == 0   ? sharding::none
              : stage == 1 ? sharding::zero1
              : stage == 2 ? sharding::zero2
                           : sharding::zero3;
    const std::string opt =
        yaml_string(d, dc, "deepspeed_config.offload_optimizer_device", "offload_optimizer_device", "none");
    const std::string par =
        yaml_string(d, dc, "deepspeed_config.offload_param_device", "offload_param_device", "none");
    for (const auto& [dev, key] :
         {std::pair{opt, "offload_optimizer_device"}, std::pair{par, "offload_param_device"}})
      if (dev != "none" && dev != "cpu" && dev != "nvme")
        throw input_error(d.at(std::string("deepspeed_config.") + key),
                          "unknown '" + dev + "'; valid: none, cpu, nvme");
    a.offload = opt != "none";
    a.offload_params = par != "none";
    if (a.offload_params && stage != 3)
      throw input_error(d.at("deepspeed_config.offload_param_device"),
                        "offloads parameters only under zero_stage 3");
  }
  sort_keys(d, dc, "deepspeed_config",
            {"deepspeed_config_file", "zero_stage", "offload_optimizer_device", "offload_param_device"},
            {"zero3_init_flag"}, sorted);
}
}  // namespace detail

/// Reads an accelerate config document.
[[nodiscard]] inline accelerate_config accelerate_from_yaml(const detail::yaml_doc& d) {
  using detail::yaml_count;
  using detail::yaml_string;
  const nlohmann::json& j = d.root;
  accelerate_config a;
  detail::translation sorted;  // only its lists: accelerate keys are not training arguments
  a.distributed_type = yaml_string(d, j, "distributed_type", "distributed_type", "NO");
  if (a.distributed_type != "NO" && a.distributed_type != "MULTI_GPU" && a.distributed_type != "FSDP" &&
      a.distributed_type != "DEEPSPEED")
    throw input_error(d.at("distributed_type"),
                      "'" + a.distributed_type + "' is not modelled; valid: NO, MULTI_GPU, FSDP, DEEPSPEED");
  a.processes = yaml_count(d, j, "num_processes", "num_processes", 1, max_parallel_gpus);
  if (a.distributed_type == "NO" && a.processes > 1)
    throw input_error(d.at("num_processes"), "is above 1 with distributed_type NO");
  a.mixed_precision = yaml_string(d, j, "mixed_precision", "mixed_precision", "no");
  if (a.mixed_precision != "no" && a.mixed_precision != "bf16" && a.mixed_precision != "fp16")
    throw input_error(d.at("mixed_precision"),
                      "'" + a.mixed_precision + "' is not modelled; valid: no, bf16, fp16");
  if (a.distributed_type == "FSDP") detail::read_accelerate_fsdp(d, j, a, sorted);
  if (a.distributed_type == "DEEPSPEED") detail::read_accelerate_deepspeed(d, j, a, sorted);
  detail::sort_keys(
      d, j, "", {"distributed_type", "num_processes", "mixed_precision", "fsdp_config", "deepspeed_config"},
      {"downcast_bf16", "fp8_config", "megatron_lm_config", "parallelism_config"}, sorted);
  a.warnings = sorted.warnings;
  a.ignored = sorted.ignored;
  return a;
}

/// Reads an accelerate config file.
[[nodiscard]] inline accelerate_config load_accelerate_config(const std::filesystem::path& file) {
  return accelerate_from_yaml(detail::parse_yaml_file(file));
}

/// The launcher's layout as a request: the GPU count, FSDP sharding and offloading, FSDP's activation
/// checkpointing (checkpoint_wrapper, non-reentrant). A DeepSpeed file it names is read by the caller
/// (deepspeed_request), with the run's own values for "auto". mixed_precision is the Trainer's to decide
/// (TrainingArguments bf16 / fp16 are passed to Accelerator): noted, not applied.
[[nodiscard]] inline run_request accelerate_request(const accelerate_config& a,
                                                    std::vector<std::string>& notes) {
  run_request q;
  q.gpus = a.processes;
  if (a.distributed_type == "FSDP" || (a.distributed_type == "DEEPSPEED" && a.deepspeed_file.empty())) {
    q.shard = a.shard;
    q.offload_optimizer = a.offload;
    q.offload_params = a.offload_params;
  }
  if (a.distributed_type == "FSDP") {
    q.fsdp_version = a.fsdp_version;
    q.prefetch_units = a.prefetch_units;
    if (a.use_orig_params) q.use_orig_params = *a.use_orig_params;
    if (a.activation_checkpointing) {
      q.ckpt = checkpointing::full;
      q.reentrant = false;
    }
  }
  if (a.mixed_precision != "no")
    notes.push_back(
        "accelerate: mixed_precision " + a.mixed_precision +
        " is set by the Trainer's own bf16/fp16 arguments when it runs; the run's precision is kept");
  return q;
}

}  // namespace headroom
