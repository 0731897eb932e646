// SPDX-License-Identifier: MIT
// DeepSpeed's JSON config (ds_config.json) as the Hugging Face Trainer passes it to DeepSpeed: the ZeRO
// stage, offloading, buckets and precision, with "auto" values filled from the training arguments and
// explicit values checked against them (docs/frameworks.md, "DeepSpeed"). nlohmann_json.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../parallel.hpp"
#include "../peak.hpp"
#include "../precision.hpp"
#include "../request.hpp"
#include "config.hpp"

namespace headroom {

/// What "auto" resolves from: the TrainingArguments values transformers' HfTrainerDeepSpeedConfig reads
/// (integrations/deepspeed.py trainer_config_process / trainer_config_finalize).
struct deepspeed_inputs {
  std::uint64_t micro_batch = 8;  ///< per_device_train_batch_size
  std::uint64_t grad_accum = 1;   ///< gradient_accumulation_steps
  std::uint64_t world_size = 0;   ///< data-parallel GPUs, when known (0: not given)
  bool bf16 = false;              ///< bf16 (or bf16_full_eval)
  bool fp16 = false;              ///< fp16 (or fp16_full_eval)
  std::uint64_t hidden_size = 0;  ///< the model's, for the bucket sizes
  std::string precision_flag;  ///< "--precision bf16-mixed" when the command line, not a training-args file,
                               ///< set bf16 and fp16 (a mismatch then names the flag, issue 31 MI-10)
};

/// The precision DeepSpeed trains in: its engine casts the module to bf16 / fp16 and its optimizer keeps
/// fp32 master partitions (runtime/engine.py _configure_distributed_model); neither enabled is fp32.
enum class deepspeed_precision : std::uint8_t { fp32, bf16, fp16 };

/// A ds_config resolved against the training arguments.
struct deepspeed_config {
  std::uint64_t stage = 0;  ///< zero_optimization.stage (DeepSpeedZeroConfig default 0)
  bool offload_optimizer = false;
  bool offload_params = false;
  std::uint64_t micro_batch = 0;  ///< train_micro_batch_size_per_gpu, resolved
  std::uint64_t grad_accum = 0;   ///< gradient_accumulation_steps, resolved
  std::uint64_t world_size = 0;   ///< GPUs an explicit train_batch_size implies (0: not said)
  deepspeed_precision precision = deepspeed_precision::fp32;
  std::uint64_t reduce_bucket_elements = 500'000'000;  ///< reduce_bucket_size (zero/config.py: 5e8)
  comm_switch overlap_comm = comm_switch::framework_default;
  std::vector<std::string> notes;     ///< "auto" values filled and consequences worth knowing
  std::vector<std::string> warnings;  ///< keys that change memory but are not modelled
  std::vector<std::string> ignored;   ///< keys read but not used by the estimate
};

namespace detail {
using json = nlohmann::json;

/// A DeepSpeed integer: a JSON number with no fractional part (ds_config files write 5e8 or 2e8).
inline std::uint64_t ds_count(const json& v, const std::string& where, std::uint64_t limit) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      std::floor(v.get<double>()) != v.get<double>() || v.get<double>() > static_cast<double>(limit))
    throw input_error(where, "must be a whole number from 0 to " + std::to_string(limit) + ", got " +
                                 detail::json_excerpt(v));
  return static_cast<std::uint64_t>(v.get<double>());
}
inline bool is_auto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

/// transformers' fill_match: "auto" takes the training argument's value; an explicit value must equal it.
inline std::uint64_t ds_match(const json& section, std::string_view key, const std::string& where,
                              std::uint64_t from_args, const char* argument, std::uint64_t limit,
                              deepspeed_config& out) {
  const auto it = section.find(key);
  if (it == section.end() || it->is_null()) return from_args;
  if (is_auto(*it)) {
    out.notes.push_back(std::string(key) + " \"auto\": " + argument + " = " + std::to_string(from_args));
    return from_args;
  }
  const std::uint64_t given = ds_count(*it, where + "/" + std::string(key), limit);
  if (given != from_args)
    throw input_error(where + "/" + std::string(key),
                      std::to_string(given) + " mismatches the training arguments' " + argument + " = " +
                          std::to_string(from_args) + " (transformers raises the same; set it to \"auto\")");
  return given;
}
/// A {"enabled": ...} precision section: "auto" takes the training argument's flag; an explicit flag must
/// equal it when the training arguments set one.
inline bool ds_enabled(const json& root, std::string_view section, std::string_view alias,
                       const std::string& origin, bool from_args, const char* argument,
                       const std::string& precision_flag, deepspeed_config& out) {
  auto it = root.find(section);
  if (it == root.end()) it = root.find(alias);
  if (it == root.end() || it->is_null()) {
    // No section: the Trainer's accelerator adds {"enabled": true} for its own mixed precision
    // (accelerate utils/dataclasses.py DeepSpeedPlugin.set_mixed_precision); DeepSpeed alone leaves it off.
    if (from_args)
      out.notes.push_back("no " + std::string(section) + " section: the Trainer's " + argument +
                          " adds {\"enabled\": true} (accelerate DeepSpeedPlugin.set_mixed_precision)");
    return from_args;
  }
  const std::string where = origin + ": /" + std::string(it.key());
  if (!it->is_object()) throw input_error(where, "must be an object such as {\"enabled\": true}");
  const auto e = it->find("enabled");
  if (e == it->end() || e->is_null()) return false;
  if (is_auto(*e)) {
    out.notes.push_back(std::string(it.key()) + ".enabled \"auto\": " + argument + " = " +
                        (from_args ? "true" : "false"));
    return from_args;
  }
  if (!e->is_boolean()) throw input_error(where + "/enabled", "must be true, false or \"auto\"");
  const bool on = e->get<bool>();
  if (on != from_args && !precision_flag.empty()) {  // no training arguments: the flag decided
    const bool fp16 = section == "fp16";
    const char* instead =
        fp16 ? (on ? "fp16-autocast" : "bf16-mixed") : (on ? "bf16-mixed" : "fp32 or fp16-autocast");
    throw input_error(where + "/enabled", std::string(on ? "true" : "false") + " disagrees with " +
                                              precision_flag + ": give --precision " + instead +
                                              " (or set it to \"auto\")");
  }
  if (on != from_args)
    throw input_error(where + "/enabled", std::string(on ? "true" : "false") +
                                              " mismatches the training arguments' " + argument +
                                              " (transformers raises the same; set it to \"auto\")");
  return e->get<bool>();
}
/// An offload section's device: "cpu" or "nvme" offloads, "none" does not (zero/offload_config.py).
inline bool ds_offload(const json& zero, std::string_view key, const std::string& zo, deepspeed_config& out) {
  const auto it = zero.find(key);
  if (it == zero.end() || it->is_null()) return false;
  const std::string where = zo + "/" + std::string(key);
  if (!it->is_object()) throw input_error(where, "must be an object such as {\"device\": \"cpu\"}");
  const std::string device = read_string_or(*it, "device", where, "none");
  if (device == "none") return false;
  if (device == "nvme")
    out.warnings.push_back(std::string(key) +
                           " to NVMe: priced as CPU offload (the GPU side is the same; the NVMe swap "
                           "buffers in host RAM are not modelled)");
  else if (device != "cpu")
    throw input_error(where + "/device", "unknown '" + device + "'; valid: none, cpu, nvme");
  return true;
}
}  // namespace detail

namespace detail {
/// The micro-batch and accumulation ("auto": the training arguments'), and the GPUs an explicit
/// train_batch_size implies (micro-batch x accumulation x GPUs, as DeepSpeed asserts).
inline void ds_batch(const nlohmann::json& ds, const deepspeed_inputs& in, const std::string& root,
                     deepspeed_config& out) {
  out.micro_batch = ds_match(ds, "train_micro_batch_size_per_gpu", root, in.micro_batch,
                             "per_device_train_batch_size", max_solver_batch, out);
  out.grad_accum = ds_match(ds, "gradient_accumulation_steps", root, in.grad_accum,
                            "gradient_accumulation_steps", 1u << 20, out);
  // train_batch_size = micro-batch x accumulation x GPUs (DeepSpeed asserts it): an explicit one says how
  // many GPUs the file was written for.
  if (const auto tb = ds.find("train_batch_size"); tb != ds.end() && !tb->is_null() && !is_auto(*tb)) {
    const std::uint64_t global = ds_count(*tb, root + "/train_batch_size", std::uint64_t{1} << 40);
    const std::uint64_t per_step = checked_mul(out.micro_batch, out.grad_accum, "train_batch_size");
    if (global == 0 || global % per_step != 0)
      throw input_error(root + "/train_batch_size",
                        std::to_string(global) +
                            " is not a multiple of train_micro_batch_size_per_gpu x "
                            "gradient_accumulation_steps = " +
                            std::to_string(per_step));
    out.world_size = global / per_step;
    if (out.world_size > max_parallel_gpus)  // named here, not as the layout's "data_parallel" (MI-15)
      throw input_error(root + "/train_batch_size",
                        std::to_string(global) + " gives a data-parallel degree of " +
                            std::to_string(out.world_size) + " GPUs (more than " +
                            std::to_string(max_parallel_gpus) + "); check it against --gpus");
    if (in.world_size != 0 && out.world_size != in.world_size)
      throw input_error(root + "/train_batch_size", std::to_string(global) + " implies " +
                                                        std::to_string(out.world_size) + " GPUs, not the " +
                                                        std::to_string(in.world_size) + " given");
  }
}

/// bf16 or fp16 (or neither: fp32), "auto" from the training arguments.
inline void ds_precision(const nlohmann::json& ds, const deepspeed_inputs& in, const std::string& origin,
                         deepspeed_config& out) {
  const bool bf16 = ds_enabled(ds, "bf16", "bfloat16", origin, in.bf16, "bf16", in.precision_flag, out);
  const bool fp16 = ds_enabled(ds, "fp16", "fp16", origin, in.fp16, "fp16", in.precision_flag, out);
  if (bf16 && fp16) throw input_error(origin + ": /bf16", "cannot be enabled together with fp16");
  out.precision = bf16   ? deepspeed_precision::bf16
                  : fp16 ? deepspeed_precision::fp16
                         : deepspeed_precision::fp32;
}

/// The top-level keys read, warned about (they change memory and are not modelled) or ignored.
inline void ds_top_level_keys(const nlohmann::json& ds, deepspeed_config& out) {
  static constexpr std::array<std::string_view, 6> used{"train_micro_batch_size_per_gpu",
                                                        "gradient_accumulation_steps",
                                                        "train_batch_size",
                                                        "bf16",
                                                        "bfloat16",
                                                        "fp16"};
  // Top-level sections that change memory and are not modelled.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> unmodelled{
      {{"activation_checkpointing",
        "DeepSpeed's own activation checkpointing (the Trainer uses the model's)"},
       {"data_types", "grad_accum_dtype changes the gradient buffer's dtype"},
       {"compression_training", "quantised or pruned weights"},
       {"pipeline", "DeepSpeed's pipeline engine"}}};
  for (const auto& item : ds.items()) {
    const std::string& key = item.key();
    if (key == "zero_optimization") continue;
    bool known = false;
    for (std::string_view u : used) known = known || u == key;
    for (const auto& [name, why] : unmodelled)
      if (name == key) {
        out.warnings.push_back(key + ": not modelled (" + std::string(why) + ")");
        known = true;
      }
    if (!known) out.ignored.push_back(key);
  }
}

/// zero_optimization: the stage, offloading, the reduce bucket and overlap_comm.
inline void ds_zero(const nlohmann::json& z, const deepspeed_inputs& in, const std::string& zo,
                    deepspeed_config& out) {
  if (const auto st = z.find("stage"); st != z.end() && !st->is_null())
    out.stage = ds_count(*st, zo + "/stage", 3);
  out.offload_optimizer = ds_offload(z, "offload_optimizer", zo, out);
  out.offload_params = ds_offload(z, "offload_param", zo, out);
  if (out.offload_params && out.stage != 3)
    throw input_error(zo + "/offload_param",
                      "needs stage 3 (DeepSpeed offloads parameters only under ZeRO-3)");
  if (out.offload_optimizer && out.stage == 0)
    throw input_error(zo + "/offload_optimizer", "needs stage 1, 2 or 3 (ZeRO-Offload)");
  if (const auto rb = z.find("reduce_bucket_size"); rb != z.end() && !rb->is_null()) {
    if (is_auto(*rb)) {  // trainer_config_finalize: hidden_size²
      out.reduce_bucket_elements = checked_mul(in.hidden_size, in.hidden_size, "reduce_bucket_size");
      out.notes.push_back("zero_optimization.reduce_bucket_size \"auto\": hidden_size² = " +
                          std::to_string(out.reduce_bucket_elements));
    } else {
      out.reduce_bucket_elements = ds_count(*rb, zo + "/reduce_bucket_size", std::uint64_t{1} << 40);
    }
  }
  if (const auto oc = z.find("overlap_comm"); oc != z.end() && !oc->is_null()) {
    if (!oc->is_boolean()) throw input_error(zo + "/overlap_comm", "must be true or false");
    out.overlap_comm = oc->get<bool>() ? comm_switch::on : comm_switch::off;
  }
}

/// zero_optimization's keys read, warned about or ignored.
inline void ds_zero_keys(const nlohmann::json& z, deepspeed_config& out) {
  static constexpr std::array<std::string_view, 5> zero_used{"stage", "offload_optimizer", "offload_param",
                                                             "reduce_bucket_size", "overlap_comm"};
  // Keys whose buffers or behaviour change memory in ways headroom does not price.
  static constexpr std::array<std::string_view, 9> zero_unmodelled{
      "allgather_bucket_size",
      "stage3_prefetch_bucket_size",
      "stage3_max_live_parameters",
      "stage3_max_reuse_distance",
      "stage3_param_persistence_threshold",
      "sub_group_size",
      "zero_hpz_partition_size",
      "zero_quantized_weights",
      "zero_quantized_gradients",
  };
  for (const auto& item : z.items()) {
    const std::string& key = item.key();
    bool known = false;
    for (std::string_view u : zero_used) known = known || u == key;
    for (std::string_view u : zero_unmodelled)
      if (u == key) {
        out.warnings.push_back("zero_optimization." + key + ": not modelled (its buffers are left out)");
        known = true;
      }
    if (!known) out.ignored.push_back("zero_optimization." + key);
  }
}
}  // namespace detail

/// Resolves a ds_config object the way the Hugging Face Trainer hands it to DeepSpeed.
[[nodiscard]] inline deepspeed_config deepspeed_from_json(const nlohmann::json& ds,
                                                          const deepspeed_inputs& in,
                                                          const std::string& origin) {
  if (!ds.is_object()) throw input_error(origin, "expected a JSON object (a DeepSpeed config)");
  deepspeed_config out;
  const std::string root = origin + ": ";
  detail::ds_batch(ds, in, root, out);
  detail::ds_precision(ds, in, origin, out);
  detail::ds_top_level_keys(ds, out);
  const auto z = ds.find("zero_optimization");
  if (z == ds.end() || z->is_null()) return out;
  const std::string zo = origin + ": /zero_optimization";
  if (!z->is_object()) throw input_error(zo, "must be an object");
  detail::ds_zero(*z, in, zo, out);
  detail::ds_zero_keys(*z, out);
  return out;
}

/// What a resolved DeepSpeed config decides, as a request to merge over the run it was resolved against: the
/// ZeRO stage and offloading, the buckets, the micro-batch and accumulation, the GPUs an explicit
/// train_batch_size implies, and the precision DeepSpeed trains in (its engine casts the whole module, a
/// `method`'s adapters included, to bf16 / fp16 and keeps fp32 master partitions: the bf16-mixed route's
/// bytes). The config's notes, warnings and ignored keys are added to the caller's lists.
[[nodiscard]] inline run_request deepspeed_request(const deepspeed_config& ds, training_method method,
                                                   std::vector<std::string>& notes,
                                                   std::vector<std::string>& warnings,
                                                   std::vector<std::string>& ignored) {
  run_request q;
  q.shard = ds.stage == 0   ? sharding::none
            : ds.stage == 1 ? sharding::zero1
            : ds.stage == 2 ? sharding::zero2
                            : sharding::zero3;
  q.offload_optimizer = ds.offload_optimizer;
  q.offload_params = ds.offload_params;
  q.reduce_bucket_elements = ds.reduce_bucket_elements;
  q.overlap_comm = ds.overlap_comm;
  q.batch = ds.micro_batch;
  q.grad_accum = ds.grad_accum;
  if (ds.world_size > 1) q.gpus = ds.world_size;
  if (ds.precision == deepspeed_precision::fp32) {
    q.precision = precision_route::fp32;
  } else {
    q.precision = precision_route::bf16_mixed;
    if (method != training_method::full) q.adapter_dtype = adapter_precision::base;
    notes.emplace_back(
        std::string("DeepSpeed ") + (ds.precision == deepspeed_precision::bf16 ? "bf16" : "fp16") +
        ": the engine casts the model to 16 bits — adapters too, whatever dtype PEFT gave them — and keeps "
        "fp32 master partitions (bf16-mixed bytes)");
  }
  for (const std::string& n : ds.notes) notes.push_back("deepspeed: " + n);
  for (const std::string& w : ds.warnings) warnings.push_back("deepspeed: " + w);
  for (const std::string& k : ds.ignored) ignored.push_back("deepspeed." + k);
  return q;
}

/// Reads a ds_config file (errors name the file, line and key).
[[nodiscard]] inline deepspeed_config load_deepspeed(const std::filesystem::path& file,
                                                     const deepspeed_inputs& in) {
  return deepspeed_from_json(detail::parse_json_file(file), in, file.string());
}

}  // namespace headroom
