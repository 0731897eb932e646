// SPDX-License-Identifier: MIT
// Overhead (W38) and the GPU catalogue used for budgets and workspace sizes.
#include <headroom/io/config.hpp>
#include <headroom/io/gpu.hpp>
#include <headroom/overhead.hpp>

#include "catch.hpp"

using namespace headroom;

namespace {
gpu_info gpu_by_name(std::string_view name) { return load_gpu(name, {HEADROOM_PRESET_SOURCE_DIR}); }
}  // namespace

static_assert(cublas_workspace_bytes(overhead_config{}) == bytes(8'519'680));

TEST_CASE("cuBLAS workspaces follow the GPU generation (PyTorch CublasHandlePool defaults)", "[overhead]") {
  CHECK(cublas_workspace_bytes(overhead_for(gpu_by_name("a100-80gb"))) == bytes(8'519'680));  // :4096:2:16:8
  CHECK(cublas_workspace_bytes(overhead_for(gpu_by_name("h100-sxm"))) == bytes(32 * mib));
  CHECK(cublas_workspace_bytes(overhead_for(gpu_by_name("b200"))) == bytes(32 * mib));
  CHECK(cublas_workspace_bytes(overhead_for(gpu_by_name("mi300x"))) == bytes(128 * mib));
  CHECK(cublaslt_workspace_bytes(overhead_for(gpu_by_name("a100-80gb"))) == bytes(4 * mib));
  CHECK(cublaslt_workspace_bytes(overhead_for(gpu_by_name("t4"))) == bytes(1 * mib));
  CHECK(cublaslt_workspace_bytes(overhead_for(gpu_by_name("h200"))) == bytes(32 * mib));
}

TEST_CASE("W38: the default overhead sits inside the course's 1-2 GB", "[overhead][worked]") {
  for (const std::string& name : gpu_names({HEADROOM_PRESET_SOURCE_DIR})) {
    const gpu_info g = gpu_by_name(name);
    const overhead_estimate e = estimate_overhead(overhead_for(g));
    INFO(g.name);
    CHECK(e.total() >= bytes(1'000'000'000));
    CHECK(e.total() <= bytes(2'000'000'000));
    CHECK(e.allocated() == e.cublas_workspace + e.cublaslt_workspace);
  }
  overhead_config measured;
  measured.override_total = true;
  measured.total_override = bytes(2'300'000'000);
  CHECK(estimate_overhead(measured).total() == bytes(2'300'000'000));
  CHECK(estimate_overhead(measured).overridden);
}

TEST_CASE("The GPU catalogue: capacities in GB, bf16 support, clear errors", "[gpu]") {
  CHECK(gpu_by_name("h100-sxm").memory() == bytes(80'000'000'000));
  CHECK(gpu_by_name("h200").memory() == bytes(141'000'000'000));
  CHECK(gpu_by_name("rtx-4090").memory() == bytes(24'000'000'000));
  CHECK_FALSE(gpu_by_name("t4").bf16);
  CHECK_FALSE(gpu_by_name("v100").bf16);
  CHECK(gpu_by_name("a10g").bf16);
  test::require_input_error([] { (void)gpu_by_name("h300"); }, "gpu", "unknown 'h300'", "h100-sxm", "mi300x");
  CHECK(gpu_names({HEADROOM_PRESET_SOURCE_DIR}).size() == 14);
  // Dense peaks and bandwidth from the datasheets (gpu-specs.md): H100 SXM 989.4 TFLOP/s bf16, 3.35 TB/s.
  CHECK(gpu_by_name("h100-sxm").peak(compute_dtype::bf16).count() == 989.4e12);
  CHECK(gpu_by_name("h100-sxm").bandwidth_gb_s == 3350);
  CHECK(gpu_by_name("t4").peak(compute_dtype::fp16).count() == 65e12);
  test::require_input_error([] { (void)gpu_by_name("t4").peak(compute_dtype::bf16); }, "t4",
                            "no bf16 support", "fp16 with loss scaling");
}
