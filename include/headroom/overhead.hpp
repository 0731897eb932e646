// SPDX-License-Identifier: MIT
// Memory outside the tensors: CUDA context, cuBLAS/cuBLASLt workspaces (sized by GPU generation)
// and allocator fragmentation. Defaults sit inside the course's 1–2 GB assumption (W38).
#pragma once

#include <cstdint>

#include "gpu.hpp"
#include "units.hpp"

namespace headroom {

inline constexpr std::uint64_t kib = 1024;
inline constexpr std::uint64_t mib = 1024 * kib;

struct overhead_config {
  bytes cuda_context{1'000'000'000};  ///< context + loaded kernels; HF measured ≈1.3 GB on a V100
  bytes fragmentation{500'000'000};   ///< reserved-but-unallocated blocks of the caching allocator
  std::uint8_t cc_major = 8;          ///< compute capability major of the GPU (workspace sizes)
  bool rocm = false;
  std::uint64_t device_gb = 0;  ///< GPU capacity, for cuBLASLt's ≥ 24 GB rule on sm_8x
  bool override_total = false;  ///< --overhead-gb: one measured number replaces the model
  bytes total_override{0};
};

/// The overhead for a GPU from the catalogue, with the default context and fragmentation.
[[nodiscard]] inline overhead_config overhead_for(const gpu_info& g) {
  overhead_config c;
  c.cc_major = g.cc_major;
  c.rocm = g.rocm;
  c.device_gb = g.memory_gb;
  return c;
}

struct overhead_estimate {
  bytes cuda_context{0};
  bytes cublas_workspace{0};    ///< allocated through the caching allocator: in memory_allocated
  bytes cublaslt_workspace{0};  ///< likewise
  bytes fragmentation{0};
  bytes nccl{0};  ///< NCCL communicator buffers (multi-GPU; cudaMalloc'd by NCCL, outside the allocator)
  bool overridden = false;
  [[nodiscard]] constexpr bytes total() const {
    return cuda_context + cublas_workspace + cublaslt_workspace + fragmentation + nccl;
  }
  /// The part torch.cuda.memory_allocated sees (the workspaces).
  [[nodiscard]] constexpr bytes allocated() const { return cublas_workspace + cublaslt_workspace; }
};

/// cuBLAS workspace per (handle, stream), from PyTorch's CublasHandlePool.cpp defaults:
/// ":4096:2:16:8" = 2·4096 KiB + 8·16 KiB = 8,519,680 B before Hopper; 4096 KiB·8 = 32 MiB on
/// compute capability 9–12; ROCm 32 MiB, 128 MiB on MI300-class (gfx942).
[[nodiscard]] constexpr bytes cublas_workspace_bytes(const overhead_config& c) {
  if (c.rocm) return bytes((c.device_gb >= 192 ? 128 : 32) * mib);
  if (c.cc_major >= 9 && c.cc_major <= 12) return bytes(4096 * kib * 8);
  return bytes(2 * 4096 * kib + 8 * 16 * kib);
}

/// cuBLASLt workspace (PyTorch PR #120925): 1024 KiB, 4096 KiB on sm_8x with ≥ 24 GB, 32 MiB on sm_9x+.
[[nodiscard]] constexpr bytes cublaslt_workspace_bytes(const overhead_config& c) {
  if (c.rocm) return bytes(0);
  if (c.cc_major >= 9) return bytes(32768 * kib);
  if (c.cc_major == 8 && c.device_gb >= 24) return bytes(4096 * kib);
  return bytes(1024 * kib);
}

[[nodiscard]] constexpr overhead_estimate estimate_overhead(const overhead_config& c) {
  overhead_estimate e;
  if (c.override_total) {
    e.cuda_context = c.total_override;
    e.overridden = true;
    return e;
  }
  e.cuda_context = c.cuda_context;
  e.cublas_workspace = cublas_workspace_bytes(c);
  e.cublaslt_workspace = cublaslt_workspace_bytes(c);
  e.fragmentation = c.fragmentation;
  return e;
}

}  // namespace headroom
