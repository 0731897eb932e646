// SPDX-License-Identifier: MIT
// A small catalogue of training GPUs: memory capacity and the generation facts the memory model
// needs (cuBLAS workspace size, bf16 support). Capacities are the datasheet figures in GB (1e9).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "error.hpp"
#include "units.hpp"

namespace headroom {

struct gpu_info {
  std::string_view name;
  std::uint64_t memory_gb = 0;  ///< datasheet capacity in GB (1e9 bytes); usable memory is a little less
  std::uint8_t cc_major = 0;    ///< CUDA compute capability major (9 = Hopper); 0 for ROCm
  bool rocm = false;            ///< AMD Instinct (hipBLAS workspace sizes)
  bool bf16 = true;             ///< bf16 tensor cores (T4 and V100 have none)
  [[nodiscard]] constexpr bytes memory() const { return bytes(memory_gb * bytes_per_gb); }
};

// Capacities: ../shared/reference/gpu-specs.md (vendor datasheets as tabulated there). Compute
// capabilities: NVIDIA's CUDA GPU table (A100 8.0, A10G/3090 8.6, L4/L40S/4090 8.9, H100/H200 9.0,
// B200 10.0, T4 7.5, V100 7.0).
inline constexpr std::array<gpu_info, 14> gpu_catalog{{
    {"a100-40gb", 40, 8, false, true},
    {"a100-80gb", 80, 8, false, true},
    {"h100-sxm", 80, 9, false, true},
    {"h100-pcie", 80, 9, false, true},
    {"h200", 141, 9, false, true},
    {"b200", 180, 10, false, true},
    {"l4", 24, 8, false, true},
    {"l40s", 48, 8, false, true},
    {"a10g", 24, 8, false, true},
    {"rtx-3090", 24, 8, false, true},
    {"rtx-4090", 24, 8, false, true},
    {"t4", 16, 7, false, false},
    {"v100", 32, 7, false, false},  // the 32 GB SXM2 part; pass --budget-gb 16 for the 16 GB one
    {"mi300x", 192, 0, true, true},
}};

[[nodiscard]] constexpr std::optional<gpu_info> find_gpu(std::string_view name) {
  for (const gpu_info& g : gpu_catalog)
    if (g.name == name) return g;
  return std::nullopt;
}

/// Looks a GPU up by name; throws input_error listing the catalogue if unknown.
[[nodiscard]] inline gpu_info gpu_by_name(std::string_view name) {
  if (auto g = find_gpu(name)) return *g;
  std::string names;
  for (const gpu_info& g : gpu_catalog) detail::append_listed(names, g.name);
  throw input_error("gpu", "unknown '" + std::string(name) + "'; valid: " + names);
}

}  // namespace headroom
