// SPDX-License-Identifier: MIT
// FLOPs conventions and MFU (W33–W35), and the roofline prediction's properties.
#include <cmath>

#include <headroom/config_io.hpp>
#include <headroom/flops.hpp>
#include <headroom/throughput.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
gpu_info gpu(std::string_view name) { return load_gpu(name, {HEADROOM_PRESET_SOURCE_DIR}); }
constexpr model_spec llama8{llama_3_1_8b, 8'000'000'000};
constexpr model_spec qwen17{qwen3_1_7b, 1'700'000'000};
}  // namespace

static_assert(flops_per_token(llama_3_1_8b, full_ft, params(8'000'000'000), 2048, flops_convention::six_n,
                              checkpointing::none)
                  .model.count() == 48e9);

TEST_CASE("W33: 8B full fine-tuning at 3,000 tokens/s on an H100 SXM is 14.6% MFU", "[throughput][worked]") {
  const token_flops f = flops_per_token(llama_3_1_8b, full_ft, params(8'000'000'000), 2048,
                                        flops_convention::six_n, checkpointing::full);
  // The course divides by 989 TFLOP/s; the catalogue's H100 SXM figure is 989.4.
  CHECK(std::round(1000 * utilisation(3000, f.model, flops(989e12))) / 10 == 14.6);
  CHECK(std::round(1000 * utilisation(3000, f.model, gpu("h100-sxm").peak(compute_dtype::bf16))) / 10 ==
        14.6);
}

TEST_CASE("W34: 6N per token, 8N of hardware FLOPs with full checkpointing, about 4N for LoRA",
          "[throughput][worked]") {
  const params n(8'000'000'000);
  const token_flops full =
      flops_per_token(llama_3_1_8b, full_ft, n, 2048, flops_convention::six_n, checkpointing::full);
  CHECK(full.model.count() == 6 * 8e9);
  CHECK(full.hardware.count() == 8 * 8e9);
  const token_flops none =
      flops_per_token(llama_3_1_8b, full_ft, n, 2048, flops_convention::six_n, checkpointing::none);
  CHECK(none.hardware.count() == none.model.count());
  const token_flops lora =
      flops_per_token(llama_3_1_8b, lora16, n, 2048, flops_convention::six_n, checkpointing::none);
  CHECK(lora.model.count() == 4 * 8e9 + 6 * 41'943'040.0);
  CHECK(lora.model.count() / (4 * 8e9) < 1.01);
}

TEST_CASE("W35: a well-tuned fine-tuning run sits at 30-50% MFU, and the prediction lands there",
          "[throughput][worked]") {
  run_config r;  // 8B full fine-tuning on an H100 SXM, micro-batch 4, accumulation 4
  r.activations.batch = 4;
  r.grad_accum_steps = 4;
  r.setup.optimizer = optimizer_by_name("adamw_torch_fused");
  const throughput_estimate e = predict_throughput(llama8, r, gpu("h100-sxm"));
  CHECK(e.mfu >= 0.30);
  CHECK(e.mfu <= 0.50);
}

TEST_CASE("PaLM adds 12·L·q·s per token, Megatron counts each GEMM with the causal half", "[throughput]") {
  const params n = parameter_count(llama_3_1_8b);
  const double six = 6.0 * static_cast<double>(n.count());
  const token_flops palm =
      flops_per_token(llama_3_1_8b, full_ft, n, 4096, flops_convention::palm, checkpointing::none);
  CHECK(palm.model.count() == six + 12.0 * 32 * 4096 * 4096);
  const token_flops mega =
      flops_per_token(llama_3_1_8b, full_ft, n, 4096, flops_convention::megatron, checkpointing::none);
  // Per layer 6·(d(q + 2kv) + q·d + 3·d·f) + 6·q·s, plus the head 6·d·V (no embedding FLOPs).
  const double per_layer =
      6.0 * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3.0 * 4096 * 14336) + 6.0 * 4096 * 4096;
  REQUIRE_THAT(mega.model.count(), Catch::Matchers::WithinRel(32 * per_layer + 6.0 * 4096 * 128256, 1e-12));
  CHECK(mega.model.count() < palm.model.count());  // causal halving and no embedding term
}

TEST_CASE("MoE FLOPs count the active experts", "[throughput]") {
  const params active = active_parameter_count(qwen3_30b_a3b);
  CHECK(active.count() > 3'000'000'000);  // card: 3.3B activated
  CHECK(active.count() < 3'500'000'000);
  CHECK(active < parameter_count(qwen3_30b_a3b));
}

TEST_CASE("Predictions: 0 < MFU < 1, tokens/s falls when checkpointing is turned on",
          "[throughput][property]") {
  for (const char* name : {"a100-80gb", "h100-sxm", "rtx-4090", "l4"}) {
    for (training_method m : {training_method::full, training_method::lora, training_method::qlora}) {
      for (flops_convention c :
           {flops_convention::six_n, flops_convention::palm, flops_convention::megatron}) {
        run_config r;
        r.setup.method = m;
        r.activations.batch = 2;
        roofline_config rc;
        rc.convention = c;
        r.activations.ckpt = checkpointing::none;
        const throughput_estimate none = predict_throughput(qwen17, r, gpu(name), rc);
        r.activations.ckpt = checkpointing::full;
        const throughput_estimate full = predict_throughput(qwen17, r, gpu(name), rc);
        INFO(name << " method " << static_cast<int>(m));
        CHECK(none.mfu > 0);
        CHECK(none.mfu < 1);
        CHECK(full.mfu > 0);
        CHECK(full.tokens_per_second < none.tokens_per_second);
        CHECK(full.hfu > full.mfu);
        CHECK(none.step_time.count() > 0);
      }
    }
  }
}

TEST_CASE("Padding waste lowers trained tokens/s in proportion", "[throughput]") {
  run_config r;
  r.setup.method = training_method::lora;
  roofline_config rc;
  const throughput_estimate clean = predict_throughput(qwen17, r, gpu("a100-80gb"), rc);
  rc.padding_waste = 0.5;
  const throughput_estimate padded = predict_throughput(qwen17, r, gpu("a100-80gb"), rc);
  REQUIRE_THAT(padded.tokens_per_second, Catch::Matchers::WithinRel(clean.tokens_per_second / 2, 1e-12));
  rc.padding_waste = 1.0;
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, gpu("a100-80gb"), rc); },
                            "padding_waste");
}

TEST_CASE("A GPU without bf16 refuses a bf16 prediction and takes fp16", "[throughput][errors]") {
  run_config r;
  r.setup.method = training_method::lora;
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, gpu("t4")); }, "t4", "no bf16", "fp16");
  r.setup.precision = precision_route::fp16_autocast;
  CHECK(predict_throughput(qwen17, r, gpu("t4")).mfu > 0);
}
