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
  CHECK(gpu_names({HEADROOM_PRESET_SOURCE_DIR}).size() == 23);
  // Dense peaks and bandwidth from the datasheets (gpu-specs.md): H100 SXM 989.4 TFLOP/s bf16, 3.35 TB/s.
  CHECK(gpu_by_name("h100-sxm").peak(compute_dtype::bf16).count() == 989.4e12);
  CHECK(gpu_by_name("h100-sxm").bandwidth_gb_s == 3350);
  CHECK(gpu_by_name("t4").peak(compute_dtype::fp16).count() == 65e12);
  test::require_input_error([] { (void)gpu_by_name("t4").peak(compute_dtype::bf16); }, "t4",
                            "no bf16 support", "fp16 with loss scaling");
}

TEST_CASE("The workstation, GeForce Blackwell, GB200 and MI325X/MI355X entries carry their sources' values",
          "[gpu]") {
  // RTX A6000: 309.7 TFLOP/s with sparsity, halved (datasheet via torchtitan get_peak_flops).
  CHECK(gpu_by_name("rtx-a6000").peak(compute_dtype::bf16).count() == 154.85e12);
  CHECK(gpu_by_name("rtx-a6000").memory() == bytes(48'000'000'000));
  // A40 and L40 datasheets (via Lightning's _CUDA_FLOPS); bandwidths as axolotl's benchmark table gives them.
  CHECK(gpu_by_name("a40").peak(compute_dtype::bf16).count() == 149.7e12);
  CHECK(gpu_by_name("a40").bandwidth_gb_s == 696);
  CHECK_FALSE(gpu_by_name("a40").fp8_tflops.has_value());  // Ampere: no FP8 tensor cores
  CHECK(gpu_by_name("l40").peak(compute_dtype::bf16).count() == 181.05e12);
  // RTX 6000 Ada: llm.c's scaling of the Ada whitepaper's 165.2 at 512 tensor cores, 2,520 MHz to 568 at
  // 2,505.
  CHECK(gpu_by_name("rtx-6000-ada").peak(compute_dtype::bf16).count() ==
        Approx(165.2e12 * 568 / 512 * 2505 / 2520).epsilon(1e-4));
  // RTX 5090 (RTX Blackwell whitepaper via torchao): 209.5 = 512 FLOP/clock/SM x 170 SMs x 2,407 MHz; the RTX
  // 5080 is that rate at 84 SMs and 2,617 MHz.
  CHECK(gpu_by_name("rtx-5090").peak(compute_dtype::bf16).count() == 209.5e12);
  CHECK(gpu_by_name("rtx-5090").bandwidth_gb_s == 1792);
  CHECK(gpu_by_name("rtx-5080").peak(compute_dtype::bf16).count() ==
        Approx(209.5e12 / (170 * 2407) * (84 * 2617)).epsilon(1e-4));
  CHECK(gpu_by_name("rtx-5080").memory() == bytes(16'000'000'000));
  CHECK(cublaslt_workspace_bytes(overhead_for(gpu_by_name("rtx-5090"))) == bytes(32 * mib));  // sm_120
  // GB200 per GPU and the MI3x5X parts (ml-engineering's tables): 2.5 PF, 186 GB; 256 GB at 6 TB/s; 288 GB.
  CHECK(gpu_by_name("gb200").peak(compute_dtype::bf16).count() == 2500e12);
  CHECK(gpu_by_name("gb200").memory() == bytes(186'000'000'000));
  CHECK(gpu_by_name("mi325x").memory() == bytes(256'000'000'000));
  CHECK(gpu_by_name("mi325x").bandwidth_gb_s == 6000);
  CHECK(cublas_workspace_bytes(overhead_for(gpu_by_name("mi355x"))) == bytes(128 * mib));  // hipBLAS
  CHECK(gpu_by_name("mi355x").memory() == bytes(288'000'000'000));
  // AMD publishes no TF32 rate for the MI355X: an fp32 run there is refused by name, not timed at a guess.
  test::require_input_error([] { (void)gpu_by_name("mi355x").peak(compute_dtype::tf32); }, "mi355x",
                            "no dense tf32 tensor rate");
}
