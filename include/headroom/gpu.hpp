// SPDX-License-Identifier: MIT
// A GPU as the estimates need it: memory capacity, dense peak throughput per dtype, memory
// bandwidth, and the generation facts (cuBLAS workspace size, bf16 support). The catalogue is data:
// presets/gpus/*.json, read by load_gpu() in io/gpu.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "error.hpp"
#include "units.hpp"

namespace headroom {

/// The ranges a GPU's datasheet figures are taken in: far beyond every card catalogued (T4 320 GB/s to B200
/// 8,000 GB/s; 65 to 4,500 dense TFLOP/s), near enough that a typo or a denormal is refused, not priced.
inline constexpr double min_bandwidth_gb_s = 1, max_bandwidth_gb_s = 1e5;
inline constexpr double min_tflops = 0.01, max_tflops = 1e6;

/// The dtype a step's matmuls run in, for the peak FLOP/s.
enum class compute_dtype : std::uint8_t { bf16, fp16, tf32, fp8 };

struct gpu_info {
  std::string name;             ///< catalogue name, e.g. "h100-sxm"
  std::uint64_t memory_gb = 0;  ///< datasheet capacity in GB (1e9 bytes); usable memory is a little less
  double bandwidth_gb_s = 0;    ///< memory bandwidth, GB/s (1e9 bytes per second)
  std::optional<double> bf16_tflops;  ///< dense (no 2:4 sparsity) tensor-core peaks, TFLOP/s
  std::optional<double> fp16_tflops;
  std::optional<double> tf32_tflops;
  std::optional<double> fp8_tflops;
  std::uint8_t cc_major = 0;     ///< CUDA compute capability major (9 = Hopper); 0 for ROCm
  bool rocm = false;             ///< AMD Instinct (hipBLAS workspace sizes)
  bool bf16 = true;              ///< bf16 tensor cores (T4 and V100 have none)
  std::string interconnect;      ///< the GPU-to-GPU link inside a node, e.g. "NVLink 4" ("": not listed)
  double interconnect_gb_s = 0;  ///< its bandwidth per direction, GB/s (0: not listed)

  [[nodiscard]] bytes memory() const {
    return bytes(detail::checked_mul(memory_gb, bytes_per_gb, "GPU memory"));
  }
  /// Dense peak FLOP/s for a dtype; throws input_error when the GPU has none (bf16 on a T4).
  [[nodiscard]] flops peak(compute_dtype d) const {
    const std::optional<double>* tf = d == compute_dtype::bf16   ? &bf16_tflops
                                      : d == compute_dtype::fp16 ? &fp16_tflops
                                      : d == compute_dtype::tf32 ? &tf32_tflops
                                                                 : &fp8_tflops;
    if (!tf->has_value()) {
      if (d == compute_dtype::bf16)
        throw input_error(
            "gpu", name + " has no bf16 support: use fp16 with loss scaling (--precision fp16-autocast)");
      const char* dtype = d == compute_dtype::fp16 ? "fp16" : d == compute_dtype::tf32 ? "tf32" : "fp8";
      throw input_error("gpu", name + " lists no dense " + dtype +
                                   " tensor rate, so matmuls in that dtype cannot be timed there");
    }
    return flops(**tf * 1e12);
  }
};

/// Checks a GPU's figures before a prediction divides by them; throws input_error naming the field.
inline void validate(const gpu_info& g) {
  if (!(g.bandwidth_gb_s >= min_bandwidth_gb_s && g.bandwidth_gb_s <= max_bandwidth_gb_s))
    throw input_error(g.name + ": bandwidth_gb_s",
                      std::string("must be in [1, 1e5] GB/s, got ") + std::to_string(g.bandwidth_gb_s));
  if (g.interconnect_gb_s != 0 &&
      !(g.interconnect_gb_s >= min_bandwidth_gb_s && g.interconnect_gb_s <= max_bandwidth_gb_s))
    throw input_error(
        g.name + ": interconnect_gb_s",
        std::string("must be in [1, 1e5] GB/s per direction, got ") + std::to_string(g.interconnect_gb_s));
  const std::pair<const char*, const std::optional<double>*> peaks[] = {{"bf16_tflops", &g.bf16_tflops},
                                                                        {"fp16_tflops", &g.fp16_tflops},
                                                                        {"tf32_tflops", &g.tf32_tflops},
                                                                        {"fp8_tflops", &g.fp8_tflops}};
  for (const auto& [key, v] : peaks)
    if (v->has_value() && !(**v >= min_tflops && **v <= max_tflops))
      throw input_error(g.name + ": " + key,
                        std::string("must be in [0.01, 1e6] TFLOP/s, got ") + std::to_string(**v));
}

}  // namespace headroom
