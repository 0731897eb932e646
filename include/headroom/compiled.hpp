// SPDX-License-Identifier: MIT
// The compiled library (CMake target headroom::compiled, built from src/compiled.cpp): the header-only
// library's main entry points, compiled once. A program that includes only this header compiles in about the
// time of its own code (about a second, against some twenty-five for <headroom/headroom.hpp>: see
// docs/performance.md) and links fmt and nlohmann_json through the target. Each function is the header-only
// one of the same name; this header declares them over the core's value types (standard library only).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "loaded_model.hpp"
#include "peak.hpp"
#include "request.hpp"
#include "throughput.hpp"

namespace headroom::compiled {

/// load_preset(name, preset_search_path()): a preset by name ($HEADROOM_PRESET_DIR, the installed presets).
[[nodiscard]] loaded_model load_preset(std::string_view name);
/// load_model_config(file): a Hugging Face config.json.
[[nodiscard]] loaded_model load_model_config(const std::filesystem::path& file);
/// load_gpu(name, preset_search_path()): a GPU datasheet from presets/gpus.
[[nodiscard]] gpu_info load_gpu(std::string_view name);

/// estimate_training: every bucket, every phase and the peak of one step.
[[nodiscard]] training_estimate estimate_training(const model_spec& spec, const run_config& r);
/// fit_largest: the longest sequence or largest micro-batch that fits `budget`, and the total one past it.
[[nodiscard]] fit_answer fit_largest(const model_spec& spec, const run_config& r, bytes budget,
                                     fit_dimension d);
/// plan_gpus: every data-parallel layout's fewest GPUs for `budget` per GPU.
[[nodiscard]] gpu_plan plan_gpus(const model_spec& spec, const run_config& r, bytes budget,
                                 std::uint64_t max_gpus = 1024);
/// predict_throughput: the roofline step time, tokens/s and MFU of one GPU.
[[nodiscard]] throughput_estimate predict_throughput(const model_spec& spec, const run_config& r,
                                                     const gpu_info& gpu, const roofline_config& rc = {});

/// format_training_table: memory_calculator's table (GB = 1e9 bytes; with_gib adds 2^30-byte columns).
[[nodiscard]] std::string format_training_table(const loaded_model& model, const run_config& r,
                                                const training_estimate& e, bool with_gib = false,
                                                std::optional<bytes> budget = std::nullopt);
/// training_estimate_json(...).dump(indent): memory_calculator's --json document (docs/json-schema.md).
[[nodiscard]] std::string training_estimate_json(const loaded_model& model, const run_config& r,
                                                 const training_estimate& e,
                                                 std::optional<bytes> budget = std::nullopt, int indent = 2);

}  // namespace headroom::compiled
