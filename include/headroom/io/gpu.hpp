// SPDX-License-Identifier: MIT
// Reads the data files beside the model: GPU datasheets (presets/gpus/*.json, schema in docs/gpus.md) and a
// dataset's sequence lengths (JSON array or CSV). Uses nlohmann_json, through config.hpp's readers.
#pragma once

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../activations/config.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "config.hpp"

namespace headroom {

namespace detail {
inline std::optional<double> read_tflops(const nlohmann::json& j, std::string_view key,
                                         const std::string& origin) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() >= min_tflops && it->get<double>() <= max_tflops))
    throw input_error(key_path(origin, key),
                      "must be a TFLOP/s figure in [0.01, 1e6] or null, got " + it->dump());
  return it->get<double>();
}
}  // namespace detail

/// Reads one GPU file of presets/gpus/ (schema in docs/gpus.md).
[[nodiscard]] inline gpu_info gpu_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw input_error(origin, "expected a JSON object");
  gpu_info g;
  g.name = detail::read_string_or(j, "name", origin, "");
  if (g.name.empty()) throw input_error(detail::key_path(origin, "name"), "missing required key");
  g.memory_gb = detail::read_count(j, "memory_gb", origin, 100'000);
  const auto bw = j.find("memory_bandwidth_gb_s");
  if (bw == j.end() || !bw->is_number() ||
      !(bw->get<double>() >= min_bandwidth_gb_s && bw->get<double>() <= max_bandwidth_gb_s))
    throw input_error(
        detail::key_path(origin, "memory_bandwidth_gb_s"),
        std::string("must be a number of GB/s in [1, 1e5]") +
            (bw == j.end() ? std::string() : std::string(", got ") + detail::json_excerpt(*bw)));
  g.bandwidth_gb_s = bw->get<double>();
  const auto peaks = j.find("dense_tflops");
  if (peaks == j.end() || !peaks->is_object())
    throw input_error(detail::key_path(origin, "dense_tflops"), "must be an object of TFLOP/s per dtype");
  const std::string peak_origin = origin + ": /dense_tflops";
  g.bf16_tflops = detail::read_tflops(*peaks, "bf16", peak_origin);
  g.fp16_tflops = detail::read_tflops(*peaks, "fp16", peak_origin);
  g.tf32_tflops = detail::read_tflops(*peaks, "tf32", peak_origin);
  g.fp8_tflops = detail::read_tflops(*peaks, "fp8", peak_origin);
  g.bf16 = detail::read_bool_or(j, "bf16_supported", origin, g.bf16_tflops.has_value());
  if (g.bf16 && !g.bf16_tflops)  // the file's own contradiction, not the run's precision (issue 31, MI-17)
    throw input_error(peak_origin + "/bf16", "missing, but bf16_supported is true: give its dense TFLOP/s");
  g.rocm = detail::read_string_or(j, "vendor", origin, "nvidia") == "amd";
  if (const auto link = j.find("interconnect"); link != j.end() && !link->is_null()) {
    const std::string where = origin + ": /interconnect";
    if (!link->is_object()) throw input_error(where, "must be an object: {\"name\", \"gb_s_per_direction\"}");
    g.interconnect = detail::read_string_or(*link, "name", where, "");
    const auto bw_link = link->find("gb_s_per_direction");
    if (g.interconnect.empty() || bw_link == link->end() || !bw_link->is_number() ||
        !(bw_link->get<double>() >= min_bandwidth_gb_s && bw_link->get<double>() <= max_bandwidth_gb_s))
      throw input_error(where, "needs a name and gb_s_per_direction in [1, 1e5]");
    g.interconnect_gb_s = bw_link->get<double>();
  }
  const auto cc = j.find("compute_capability");
  if (cc != j.end() && !cc->is_null()) {
    if (!cc->is_number() || cc->get<double>() < 1 || cc->get<double>() >= 100)
      throw input_error(detail::key_path(origin, "compute_capability"), "must be a number such as 9.0");
    g.cc_major = static_cast<std::uint8_t>(cc->get<double>());
  }
  return g;
}

/// Names of the GPUs in the `gpus/` subdirectory of each preset directory.
[[nodiscard]] inline std::vector<std::string> gpu_names(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::filesystem::path> gpu_dirs;
  for (const auto& d : dirs) gpu_dirs.push_back(d / "gpus");
  return preset_names(gpu_dirs);
}

/// Loads GPU `name` from `<dir>/gpus/<name>.json` in the first directory that has it.
[[nodiscard]] inline gpu_info load_gpu(std::string_view name,
                                       const std::vector<std::filesystem::path>& dirs) {
  if (const auto file = detail::find_named_json(name, dirs, "gpus"))
    return gpu_from_json(detail::parse_json_file(*file), file->string());
  const std::vector<std::string> names = gpu_names(dirs);
  if (const auto other = detail::name_in_other_case(name, names)) return load_gpu(*other, dirs);
  std::string known;
  for (const auto& n : names) detail::append_listed(known, n);
  throw input_error("gpu", "unknown '" + std::string(name) + "'" + detail::did_you_mean(names, name) +
                               "; valid: " + (known.empty() ? "(none found)" : known));
}

/// Sequence lengths from a file: a JSON array of positive integers, or CSV with one length per line (an
/// optional header line such as "length" is skipped, a UTF-8 byte-order mark and tabs are ignored), read line
/// by line. A regular file of at most 64 MiB, each length at most max_workload_seq_len (docs/errors.md
/// "Limits").
[[nodiscard]] inline std::vector<std::uint64_t> load_lengths(const std::filesystem::path& file) {
  std::vector<std::uint64_t> out;
  const auto take = [&](const std::string& where, std::uint64_t n) {
    if (n > max_workload_seq_len)
      throw input_error(where, "length " + std::to_string(n) + " is absurdly large (limit " +
                                   std::to_string(max_workload_seq_len) + " tokens)");
    out.push_back(n);
  };
  if (file.extension() == ".json") {
    const nlohmann::json j = detail::parse_json_file(file);
    if (!j.is_array()) throw input_error(file.string(), "expected a JSON array of sequence lengths");
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string where = file.string() + ": /" + std::to_string(i);
      if (!j[i].is_number_unsigned() || j[i].get<std::uint64_t>() == 0)
        throw input_error(where, "must be a positive integer, got " + detail::json_excerpt(j[i]));
      take(where, j[i].get<std::uint64_t>());
    }
  } else {
    // Streamed line by line (issue 31, step 4): the file's checks, never a copy of its text.
    std::ifstream in = detail::open_config_file(file);  // a FIFO, device or directory is refused
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
      if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
      line.erase(0, line.find_first_not_of(" \t"));
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.pop_back();
      const bool digits = line.find_first_not_of("0123456789") == std::string::npos;
      // A header names the column ("length"); a first line that starts like a number is a value (1e3: MI-19)
      const bool header = n == 1 && !digits && std::isdigit(static_cast<unsigned char>(line[0])) == 0;
      if (line.empty() || header) continue;
      const std::string where = file.string() + ":" + std::to_string(n);
      if (!digits || std::stoull("0" + line.substr(0, 19)) == 0)
        throw input_error(where, "expected a positive integer length, got '" + line.substr(0, 60) + "'");
      if (line.size() > 19)  // beyond 64 bits, and far beyond the limit
        throw input_error(where, "length " + line.substr(0, 30) + " is absurdly large (limit " +
                                     std::to_string(max_workload_seq_len) + " tokens)");
      take(where, std::stoull(line));
    }
  }
  if (out.empty()) throw input_error(file.string(), "holds no sequence lengths");
  return out;
}

}  // namespace headroom
