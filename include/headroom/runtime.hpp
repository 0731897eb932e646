// SPDX-License-Identifier: MIT
// Where the step runs and which PyTorch runs it: the few places where the same model saves different
// tensors on a CPU and on a CUDA GPU, or under torch 1.13 and torch 2.x (docs/accuracy.md, "Device and
// version differences"). Estimates default to CUDA and torch 2.x; the CPU ground truth selects cpu + 1.13.
#pragma once

#include <array>
#include <cstdint>

#include "choices.hpp"

namespace headroom {

enum class device_kind : std::uint8_t {
  cuda,  ///< a CUDA (or ROCm) GPU: fused dropout saves 1-byte masks; Python scalars stay in host memory
  cpu,   ///< PyTorch's CPU kernels: dropout saves its scaled mask in the input dtype; scalars are CPU tensors
};
enum class torch_generation : std::uint8_t {
  v2,     ///< torch 2.x: mean() saves only sizes; foreach Adam keeps one temporary per parameter
  v1_13,  ///< torch 1.13 (Debian 12's python3-torch): mean() saves its input; foreach Adam keeps two
};
inline constexpr std::array<named<device_kind>, 2> device_names{
    {{"cuda", device_kind::cuda}, {"cpu", device_kind::cpu}}};
inline constexpr std::array<named<torch_generation>, 2> torch_names{
    {{"2", torch_generation::v2}, {"1.13", torch_generation::v1_13}}};

struct runtime_config {
  device_kind device = device_kind::cuda;
  torch_generation torch = torch_generation::v2;
};

namespace detail {
/// A Python float in `tensor * 0.5` becomes a 0-dim float64 tensor that autograd saves (8 bytes). On a
/// GPU it is a host tensor and costs no device memory; on a CPU it is one more allocation.
inline constexpr std::uint64_t wrapped_scalar_bytes = 8;
constexpr std::uint64_t saved_scalar_bytes(const runtime_config& r) {
  return r.device == device_kind::cpu ? wrapped_scalar_bytes : 0;
}
}  // namespace detail

}  // namespace headroom
