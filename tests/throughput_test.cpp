// SPDX-License-Identifier: MIT
// FLOPs conventions and MFU (W33–W35), and the roofline prediction's properties.
#include <cmath>

#include <headroom/flops.hpp>
#include <headroom/io/config.hpp>
#include <headroom/io/gpu.hpp>
#include <headroom/throughput.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
gpu_info gpu(std::string_view name) { return load_gpu(name, {HEADROOM_PRESET_SOURCE_DIR}); }
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

TEST_CASE("Throughput sanity: one GPU's roofline, layouts it cannot time refused, clipping and MoE operands",
          "[throughput][errors]") {
  run_config r;
  r.setup = lora16;
  const gpu_info h100 = gpu("h100-sxm");
  // Gradient clipping reads the gradients for the norm, then reads and writes them to scale: 3 × grad bytes.
  const throughput_estimate e = predict_throughput(qwen17, r, h100);
  const double grads = static_cast<double>(estimate_static(qwen17, r.setup, r.basis).buckets.grads.count());
  CHECK(e.parts.grad_clipping == Approx(3 * grads / (h100.bandwidth_gb_s * 1e9 * 0.8)));
  roofline_config no_clip;
  no_clip.clip_grad_norm = false;
  CHECK(predict_throughput(qwen17, r, h100, no_clip).parts.grad_clipping == 0);
  CHECK(e.step_time.count() == Approx(e.parts.total()));
  // A layout the model cannot have is refused, naming the key.
  run_config tp3 = r;
  tp3.parallel.tensor_parallel = 3;
  test::require_input_error([&] { (void)predict_throughput(qwen17, tp3, h100); }, "tensor_parallel",
                            "must divide the attention heads");
  // Data parallelism is timed (communication.hpp): DDP over NVLink 4 adds its exposed all-reduce, FSDP its
  // gathers; a GPU whose file lists no interconnect needs one given.
  run_config dp = r;
  dp.parallel.data_parallel = 8;
  const throughput_estimate ddp = predict_throughput(qwen17, dp, h100);
  CHECK(ddp.comm.all_reduce > 0);
  CHECK(ddp.parts.communication == ddp.comm.exposed);
  CHECK(ddp.tokens_per_step == e.tokens_per_step);
  CHECK(ddp.step_time.count() >= e.step_time.count());
  CHECK(ddp.step_time.count() == Approx(ddp.parts.total()));
  dp.parallel.shard = sharding::fsdp_full;
  const throughput_estimate fsdp = predict_throughput(qwen17, dp, h100);
  CHECK(fsdp.comm.all_gather > 0);
  CHECK(fsdp.parts.optimizer == Approx(e.parts.optimizer / 8));  // each rank steps its shard
  test::require_input_error([&] { (void)predict_throughput(qwen17, dp, gpu("mi300x")); }, "mi300x",
                            "no interconnect", "--interconnect-gb-s");
  roofline_config given;
  given.interconnect_gb_s = 448;
  CHECK(predict_throughput(qwen17, dp, gpu("mi300x"), given).comm.all_gather > 0);
  given.interconnect_efficiency = 0;
  test::require_input_error([&] { (void)predict_throughput(qwen17, dp, h100, given); },
                            "interconnect_efficiency");
  // The library checks what it divides by (API-03..06, API-10).
  run_config empty = r;
  empty.activations.batch = 0;
  test::require_input_error([&] { (void)predict_throughput(qwen17, empty, h100); }, "batch", "positive");
  gpu_info bad_gpu = h100;
  bad_gpu.bandwidth_gb_s = 0;
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, bad_gpu); }, "bandwidth_gb_s",
                            "[1, 1e5]");
  bad_gpu = h100;
  bad_gpu.bf16_tflops = 0.0;
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, bad_gpu); }, "bf16_tflops");
  bad_gpu.bf16_tflops = std::nan("");
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, bad_gpu); }, "bf16_tflops", "nan");
  test::require_input_error([] { (void)utilisation(HUGE_VAL, flops(1e9), flops(1e15)); }, "tokens_per_second",
                            "finite");
  test::require_input_error([] { (void)utilisation(1e3, flops(1e9), flops(std::nan(""))); }, "peak");
  // A GPU file's figures are read in the same ranges (API-13): 1e308 GB/s and a denormal peak are refused.
  const nlohmann::json file = {{"name", "x"},
                               {"memory_gb", 80},
                               {"memory_bandwidth_gb_s", 1e308},
                               {"dense_tflops", {{"bf16", 989.4}}}};
  test::require_input_error([&] { (void)gpu_from_json(file, "x.json"); }, "x.json", "memory_bandwidth_gb_s",
                            "[1, 1e5]", "1e+308");
  nlohmann::json denormal = file;
  denormal["memory_bandwidth_gb_s"] = 3350;
  denormal["dense_tflops"]["bf16"] = 1e-300;
  test::require_input_error([&] { (void)gpu_from_json(denormal, "x.json"); }, "bf16", "[0.01, 1e6]");
  roofline_config tiny;
  tiny.matmul_efficiency = 0.001;
  test::require_input_error([&] { (void)predict_throughput(qwen17, r, h100, tiny); }, "matmul_efficiency",
                            "[0.01, 1]");
  // MoE weight gradients: each expert writes its own gradient; the output gradient is read once. With the
  // expert count on the weight operand, full fine-tuning's matmul time grows far less than E-fold over
  // LoRA's.
  run_config moe;
  moe.setup = full_ft;
  const model_spec qwen30{qwen3_30b_a3b, 0};
  const throughput_estimate full = predict_throughput(qwen30, moe, h100);
  const double E = 128, k = 8, t = 2048, d = 2048, f = 768;
  // the three expert weight gradients alone: bytes 2·(t·k·K + t·k·N + E·K·N) per projection at 80% bandwidth
  const double wgrad_bytes = 3 * 2 * (t * k * d + t * k * f + E * d * f);
  CHECK(full.parts.matmuls > 48 * wgrad_bytes / (h100.bandwidth_gb_s * 1e9 * 0.8));
  CHECK(full.parts.matmuls < 48 * 4 * wgrad_bytes / (h100.bandwidth_gb_s * 1e9 * 0.8));
}

TEST_CASE("Host-bound steps: small micro-batches wait for eager PyTorch to dispatch their kernels",
          "[throughput]") {
  const gpu_info h100 = gpu("h100-sxm");
  run_config small;
  small.setup = lora16;
  small.activations.batch = 1;
  small.activations.seq_len = 128;
  const throughput_estimate tiny = predict_throughput(qwen17, small, h100);
  // 28 layers of ~100 ops, three passes plus a recompute: tens of milliseconds of dispatch against a few of
  // GPU work, so the host sets the pace and the excess is its own part.
  CHECK(tiny.parts.launch_bound > 0);
  CHECK(tiny.step_time.count() == Approx(tiny.parts.total()));
  roofline_config free_launch;
  free_launch.kernel_launch_s = 0;
  const throughput_estimate no_host = predict_throughput(qwen17, small, h100, free_launch);
  CHECK(no_host.parts.launch_bound == 0);
  CHECK(tiny.tokens_per_second < no_host.tokens_per_second);
  // Large micro-batches keep the GPU busier than the host: no host-bound excess.
  run_config big;
  big.activations.batch = 4;
  big.activations.seq_len = 4096;
  CHECK(predict_throughput(llama8, big, h100).parts.launch_bound == 0);
  roofline_config bad;
  bad.kernel_launch_s = 1;
  test::require_input_error([&] { (void)predict_throughput(qwen17, small, h100, bad); }, "kernel_launch_s");
}

TEST_CASE("Tensor and pipeline parallelism: a replica's GPUs split the compute and add their transfers",
          "[throughput][communication]") {
  run_config r;  // Llama-3.1-8B full fine-tuning, micro-batch 4 × 4096, accumulation 8, on H100s
  r.activations.batch = 4;
  r.grad_accum_steps = 8;
  const gpu_info h100 = gpu("h100-sxm");
  const throughput_estimate one = predict_throughput(llama8, r, h100);
  run_config tp = r;
  tp.parallel.tensor_parallel = 2;
  const throughput_estimate two = predict_throughput(llama8, tp, h100);
  // Column- and row-parallel linears and the heads split in two (compute-bound GEMMs: half the time).
  CHECK(two.parts.matmuls == Approx(one.parts.matmuls / 2).epsilon(0.01));
  CHECK(two.parts.attention == Approx(one.parts.attention / 2));
  CHECK(two.comm.tensor_parallel > 0);
  CHECK(two.parts.communication == Approx(two.comm.tensor_parallel));
  CHECK(two.step_time.count() == Approx(two.parts.total()));
  CHECK(two.tokens_per_step == one.tokens_per_step);     // one replica's batch
  CHECK(two.tokens_per_second < one.tokens_per_second);  // per GPU: the all-reduces and replicated norms
  CHECK(two.mfu == Approx(one.mfu * two.tokens_per_second / one.tokens_per_second));
  // Sequence parallelism splits the norms and residuals too: less elementwise time, the same ring volume.
  run_config sp = tp;
  sp.parallel.sequence_parallel = true;
  const throughput_estimate seq = predict_throughput(llama8, sp, h100);
  CHECK(seq.parts.elementwise < two.parts.elementwise);
  CHECK(seq.comm.tensor_parallel == Approx(two.comm.tensor_parallel));
  // Four 1F1B stages over 8 micro-batches: the bubble is 3 of the 8 + 3 stage times.
  run_config pp = r;
  pp.parallel.pipeline_parallel = 4;
  const throughput_estimate four = predict_throughput(llama8, pp, h100);
  const step_time_parts& q = four.parts;
  const double stages_m = q.total() - q.optimizer - q.grad_clipping - q.pipeline_bubble;  // 8 stage times
  CHECK(q.pipeline_bubble == Approx(3.0 / 8 * stages_m));
  CHECK(q.matmuls == Approx(one.parts.matmuls / 4));  // 8 of 32 layers per stage
  CHECK(four.comm.pipeline_send > 0);
  CHECK(four.tokens_per_second < one.tokens_per_second);
  // A pipeline stage holds at least one layer.
  run_config deep = r;
  deep.parallel.pipeline_parallel = 33;
  test::require_input_error([&] { (void)predict_throughput(llama8, deep, h100); }, "pipeline_parallel",
                            "a stage holds at least one layer");
}
