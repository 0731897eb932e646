// SPDX-License-Identifier: MIT
// Sharding across GPUs, checked against DeepSpeed's published estimator formulas, tensor/sequence
// parallel activations (Korthikanti et al. 2022), and the GPU-count solver.
#include <headroom/parallel.hpp>
#include <headroom/peak.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
constexpr model_spec llama70{llama_3_1_70b, 70'000'000'000};
sharded_state shard(const model_spec& spec, sharding s, std::uint64_t n, bool off_opt = false,
                    bool off_par = false) {
  parallel_config p;
  p.shard = s;
  p.data_parallel = n;
  p.offload_optimizer = off_opt;
  p.offload_params = off_par;
  return shard_static(spec.shape, estimate_static(spec, full_ft), full_ft, p);
}
}  // namespace

TEST_CASE("ZeRO-2 matches DeepSpeed's estimator: 2P + 18P/N on the GPU", "[parallel]") {
  // deepspeed/runtime/zero/stage_1_and_2.py (after PR #5099): 2 fp16 params + (2 fp16 grads +
  // 4 fp32 grads + 4 fp32 params + 8 Adam)/N. With optimizer offload: 2P.
  const std::uint64_t P = 70'000'000'000, N = 8;
  CHECK(shard(llama70, sharding::zero2, N).per_gpu.static_bytes() == bytes(2 * P + 18 * P / N));
  CHECK(shard(llama70, sharding::zero2, N, true).per_gpu.static_bytes() == bytes(2 * P + 2 * P / N));
}

TEST_CASE("ZeRO-3 matches DeepSpeed's estimator: 4·LL + 18P/N, 4·LL + 2P/N offloading the optimizer",
          "[parallel]") {
  // deepspeed/runtime/zero/stage3.py: GPU 4·largest_layer + 18P/N (no offload), + 2P/N with the
  // optimizer offloaded, 4·LL with parameters offloaded too. LL = the largest unit gathered at once.
  const std::uint64_t P = 70'000'000'000, N = 16;
  // The largest unit is the 128,256 x 8,192 embedding (1.05B), larger than one decoder layer
  // (8192·(8192 + 2·1024 + 8192) + 3·8192·28672 + 2·8192 = 855,654,400).
  const std::uint64_t LL = 128'256ull * 8192;  // one decoder layer
  const sharded_state z3 = shard(llama70, sharding::zero3, N);
  CHECK(z3.per_gpu.static_bytes() == bytes(18 * P / N));
  CHECK(z3.per_gpu.temporaries == bytes(4 * LL));
  const sharded_state off = shard(llama70, sharding::zero3, N, true);
  CHECK(off.per_gpu.static_bytes() == bytes(2 * P / N));
  CHECK(off.host == bytes(16 * P / N));  // fp32 master, Adam m and v, fp32 gradient partition
  const sharded_state both = shard(llama70, sharding::zero3, N, true, true);
  CHECK(both.per_gpu.static_bytes() == bytes(0));
  CHECK(both.per_gpu.temporaries == bytes(4 * LL));
}

TEST_CASE("ZeRO-1, FSDP shard_grad_op and hybrid_shard shard what they promise", "[parallel]") {
  const std::uint64_t P = 70'000'000'000, N = 8;
  const memory_buckets z1 = shard(llama70, sharding::zero1, N).per_gpu;
  CHECK(z1.weights == bytes(2 * P));
  CHECK(z1.grads == bytes(2 * P + 4 * P / N));
  CHECK(z1.optimizer == bytes(8 * P / N));
  const memory_buckets grad_op = shard(llama70, sharding::fsdp_grad_op, N).per_gpu;
  CHECK(grad_op.weights == bytes(2 * P));
  CHECK(grad_op.grads == bytes(2 * P / N));
  const memory_buckets full = shard(llama70, sharding::fsdp_full, N).per_gpu;
  CHECK(full.static_bytes() == bytes(16 * P / N));
  parallel_config hybrid;
  hybrid.shard = sharding::fsdp_hybrid;
  hybrid.data_parallel = 32;  // four nodes of eight: shard within a node
  CHECK(shard_static(llama70.shape, estimate_static(llama70, full_ft), full_ft, hybrid)
            .per_gpu.static_bytes() == bytes(16 * P / 8));
}

TEST_CASE("From two GPUs on, sharding over more never raises per-GPU memory", "[parallel][property]") {
  for (const layout_choice& l : layout_choices) {
    bytes last(~std::uint64_t{0});
    for (std::uint64_t n : {2u, 4u, 8u, 16u, 64u}) {  // one to two GPUs adds the communication buffers
      run_config r;
      r.parallel.shard = l.shard;
      r.parallel.offload_optimizer = l.offload_optimizer;
      r.parallel.offload_params = l.offload_params;
      r.parallel.data_parallel = n;
      const bytes now = estimate_training(llama70, r).total_bytes();
      INFO(l.name << " at " << n);
      CHECK(now <= last);
      last = now;
    }
  }
}

TEST_CASE("Tensor parallelism keeps sbh·(10 + 24/t) per layer, with sequence parallelism 34·sbh/t",
          "[parallel]") {
  parallel_config p;
  p.tensor_parallel = 8;
  activation_scale s = tensor_parallel_activation_scale(p);
  CHECK(s.num * 34 * 8 == (10 * 8 + 24) * s.den);  // (10 + 24/8)/34
  p.sequence_parallel = true;
  s = tensor_parallel_activation_scale(p);
  CHECK(s.num == 1);
  CHECK(s.den == 8);
  run_config r;
  r.activations.formula = activation_formula::korthikanti;
  r.activations.ckpt = checkpointing::none;
  const bytes one = estimate_training(llama70, r).sizes.activations;
  r.parallel.tensor_parallel = 8;
  r.parallel.sequence_parallel = true;
  CHECK(estimate_training(llama70, r).sizes.activations == bytes(one.count() / 8));
}

TEST_CASE("Pipeline stages split the weights, not the first stage's activations", "[parallel]") {
  run_config r;
  const training_estimate one = estimate_training(llama70, r);
  r.parallel.pipeline_parallel = 4;
  const training_estimate four = estimate_training(llama70, r);
  CHECK(four.sizes.weights == bytes(one.sizes.weights.count() / 4));
  CHECK(four.sizes.activations == one.sizes.activations);  // p micro-batches of L/p layers in flight
  CHECK(r.parallel.gpus() == 4);
}

TEST_CASE("A 70B full fine-tune: the GPUs it needs under ZeRO-3 and under FSDP with CPU offload",
          "[parallel][solver]") {
  const bytes h100(80'000'000'000);
  const std::uint64_t zero3 = fewest_gpus(llama70, run_config{}, layout_choices[4], h100);
  const std::uint64_t fsdp_offload = fewest_gpus(llama70, run_config{}, layout_choices[6], h100);
  CHECK(layout_choices[4].name == "zero3");
  CHECK(layout_choices[6].name == "fsdp full_shard + cpu offload");
  REQUIRE(zero3 > 0);
  REQUIRE(fsdp_offload > 0);
  CHECK(fsdp_offload < zero3);
  run_config r;
  r.parallel.shard = sharding::zero3;
  r.parallel.data_parallel = zero3;
  CHECK(fits(llama70, r, h100));
  r.parallel.data_parallel = zero3 - 1;
  CHECK_FALSE(fits(llama70, r, h100));
  CHECK(fewest_gpus(llama70, run_config{}, layout_choices[0], h100) == 0);  // DDP never fits 70B
}

TEST_CASE("Impossible layouts are errors naming the setting", "[parallel][errors]") {
  parallel_config p;
  p.offload_params = true;
  require_input_error(
      [&] { (void)shard_static(llama70.shape, estimate_static(llama70, full_ft), full_ft, p); },
      "offload_params", "zero3");
  p = parallel_config{};
  p.sequence_parallel = true;
  require_input_error(
      [&] { (void)shard_static(llama70.shape, estimate_static(llama70, full_ft), full_ft, p); },
      "sequence_parallel");
  p = parallel_config{};
  p.data_parallel = 0;
  require_input_error(
      [&] { (void)shard_static(llama70.shape, estimate_static(llama70, full_ft), full_ft, p); }, "positive");
}

TEST_CASE("A parallel layout with zero or absurd GPU counts is an error naming the count",
          "[parallel][errors]") {
  const model_spec spec{llama_3_1_8b, 8'000'000'000};
  auto with = [&](auto change) {
    run_config r;
    change(r.parallel);
    return [&spec, r] { (void)estimate_training(spec, r); };
  };
  require_input_error(with([](parallel_config& p) { p.data_parallel = 0; }), "data_parallel", "positive");
  require_input_error(with([](parallel_config& p) { p.tensor_parallel = 1ull << 33; }), "tensor_parallel",
                      "absurd");
  require_input_error(with([](parallel_config& p) { p.node_gpus = 0; }), "node_gpus", "positive");
  // Each count is plausible, their product (2^60 GPUs) is not.
  require_input_error(with([](parallel_config& p) {
                        p.data_parallel = 1u << 20;
                        p.tensor_parallel = 1u << 20;
                        p.pipeline_parallel = 1u << 20;
                      }),
                      "parallel layout", "absurd");
}

TEST_CASE("The step estimate with a known static part checks the layout too", "[parallel][errors]") {
  const model_spec spec{llama_3_1_8b, 8'000'000'000};
  const run_config ok;
  const static_estimate st = estimate_static(spec, ok.setup);
  const sharded_state sh = shard_static(spec.shape, st, ok.setup, ok.parallel);
  run_config bad = ok;
  bad.parallel.tensor_parallel = 0;  // would divide the logits by zero
  require_input_error([&] { (void)estimate_training(spec, bad, st, sh); }, "tensor_parallel", "positive");
}

TEST_CASE("Communication buffers: each layout's named terms from its source", "[parallel]") {
  const static_estimate st = estimate_static(llama8, full_ft);
  // The unit: the 128,256 x 4,096 embedding, larger than a decoder layer (218M values).
  const std::uint64_t unit = 128'256ull * 4'096;
  parallel_config p;
  p.data_parallel = 8;
  // NCCL: one communicator, 32 channels x (LL 524,288 + LL128 4,915,200 + Simple 4,194,304) bytes.
  static_assert(nccl_channel_bytes == 9'633'792);
  comm_buffers c = communication_buffers(llama8.shape, st, full_ft, p);
  CHECK(c.communicators == 1);
  CHECK(c.nccl == bytes(32 * 9'633'792ull));
  // DDP: the Reducer's buckets hold a copy of every gradient, unless gradient_as_bucket_view.
  CHECK(c.reduce == st.buckets.grads);
  p.gradient_as_bucket_view = true;
  CHECK(communication_buffers(llama8.shape, st, full_ft, p).reduce == bytes(0));
  // ZeRO-2: one 5e8-element IPG buffer in bf16, two with overlap_comm.
  p.shard = sharding::zero2;
  CHECK(communication_buffers(llama8.shape, st, full_ft, p).reduce == bytes(1'000'000'000));
  p.overlap_comm = comm_switch::on;
  CHECK(communication_buffers(llama8.shape, st, full_ft, p).reduce == bytes(2'000'000'000));
  // ZeRO-3: the IPG buffer and one unit's gradients; two units gathered (DeepSpeed's 4·LL).
  p.shard = sharding::zero3;
  c = communication_buffers(llama8.shape, st, full_ft, p);
  CHECK(c.gathered == bytes(4 * unit));
  CHECK(c.reduce == bytes(1'000'000'000 + 2 * unit));
  // FSDP1: prefetch 1 (BACKWARD_PRE), the unit's padded flat gradient and its shard.
  p.shard = sharding::fsdp_full;
  c = communication_buffers(llama8.shape, st, full_ft, p);
  CHECK(c.gathered == bytes(2 * 2 * unit));
  CHECK(c.staging == bytes(0));
  CHECK(c.reduce == bytes(2 * (unit + unit / 8)));
  p.prefetch_units = 2;
  CHECK(communication_buffers(llama8.shape, st, full_ft, p).gathered == bytes(3 * 2 * unit));
  // FSDP2: the flat all-gather output while copied out; gradients, reduce-scatter input and output.
  p.prefetch_units = 1;
  p.fsdp_version = 2;
  c = communication_buffers(llama8.shape, st, full_ft, p);
  CHECK(c.staging == bytes(2 * unit));
  CHECK(c.reduce == bytes(2 * (2 * unit + unit / 8)));
  // With LoRA, FSDP2 reduces only the adapters; FSDP1's flat gradient spans the frozen weights too.
  const training_setup lora = with_method(training_method::lora);
  const static_estimate sl = estimate_static(llama8, lora);
  const std::uint64_t adapters = sl.trainable_params.count() / 32;
  CHECK(communication_buffers(llama8.shape, sl, lora, p).reduce == bytes(2 * (2 * adapters + adapters / 8)));
  p.fsdp_version = 1;
  CHECK(communication_buffers(llama8.shape, sl, lora, p).reduce == bytes(2 * (unit + unit / 8)));
  // One GPU: no communicator.
  CHECK(communication_buffers(llama8.shape, st, full_ft, parallel_config{}).nccl == bytes(0));
  p.fsdp_version = 3;
  test::require_input_error([&] { (void)communication_buffers(llama8.shape, st, full_ft, p); },
                            "fsdp_version");
}

TEST_CASE("Communication buffers in the phases: reduction in backward, NCCL in the overhead", "[parallel]") {
  run_config r;
  r.parallel.data_parallel = 2;
  const training_estimate ddp = estimate_training(llama8, r);
  const bytes buckets = ddp.per_gpu_static.comm.reduce;
  CHECK(buckets == ddp.statics.buckets.grads);
  const auto at = [](const training_estimate& e, step_phase p) {
    return e.phases[static_cast<std::size_t>(p)];
  };
  r.parallel.gradient_as_bucket_view = true;
  const training_estimate views = estimate_training(llama8, r);
  CHECK(at(ddp, step_phase::backward_end).temporaries - at(views, step_phase::backward_end).temporaries ==
        buckets);
  CHECK(at(ddp, step_phase::forward_end).total_bytes() == at(views, step_phase::forward_end).total_bytes());
  CHECK(ddp.overhead.nccl == bytes(32 * 9'633'792ull));
  // NCCL's buffers are outside the caching allocator: not in the allocated peak.
  CHECK(ddp.total_bytes() - ddp.peak_allocated_bytes() ==
        ddp.overhead.cuda_context + ddp.overhead.fragmentation + ddp.overhead.nccl);
}

namespace {
// The harness's 2-layer Llama (validation/torch/harness/grid.py SHAPES["llama"]), as fsdp-435 measures it.
constexpr model_shape harness_llama = dense(128, 344, 2, 8, 2, 16, 4096, false);
// torch _flat_param.py: the root unit (embedding, final norm, head) and one unit per layer, each padded to a
// multiple of the ranks and sliced; AdamW's for-loop step holds 2 values per value of the worst slice.
constexpr fsdp_flat_units harness_units = detail::fsdp_flat_units_of(harness_llama, 2, 2);
static_assert(harness_units.count == 3);
static_assert(harness_units.root.count() == 2 * 4096 * 128 + 128);  // 1,048,704
static_assert(harness_units.largest_layer.count() == 173'312);
static_assert(harness_units.shards.count() == 524'352 + 2 * 86'656);
static_assert(harness_units.step_values.count() == 2 * 524'352);
// Wrapping the whole fp32 model on a rank: the root, last, while its parameters, its FlatParameter and the
// slice coexist and the two layers are already slices: (1,048,704 + 524,352 - 2 · 86,656) values · 4
// (fsdp-435).
constexpr fsdp_flat_units harness_fp32 = [] {
  fsdp_flat_units u = harness_units;
  u.weight_bytes = 4;
  return u;
}();
static_assert(fsdp_wrap_transient(harness_fp32) == bytes(5'598'976));

/// The harness's fsdp rows as a run: full fine-tuning on a CPU, batch 2 × 32, SDPA, one rank of 2
/// (full_shard).
run_config harness_fsdp_run(precision_route precision) {
  run_config r;
  r.setup.method = training_method::full;
  r.setup.precision = precision;
  r.setup.runtime.device = device_kind::cpu;
  r.basis = params_basis::exact;
  r.activations.batch = 2;
  r.activations.seq_len = 32;
  r.activations.ckpt = checkpointing::none;
  r.activations.attention = attention_impl::sdpa;
  r.overhead.override_total = true;
  r.parallel.data_parallel = 2;
  r.parallel.shard = sharding::fsdp_full;
  return r;
}
}  // namespace

TEST_CASE("FSDP1 priced unit by unit: one rank of 2 (docs/parallel.md, measured row fsdp-435)",
          "[parallel]") {
  run_config r = harness_fsdp_run(precision_route::fp32);
  const training_estimate e = estimate_training(model_spec{harness_llama, 0}, r);
  const memory_buckets& st = e.per_gpu_static.per_gpu;
  CHECK(st.weights == bytes(2'790'656));                // 697,664 values x 4
  CHECK(st.optimizer == bytes(2 * 2'790'656 + 3 * 4));  // exp_avg, exp_avg_sq and one step per FlatParameter
  CHECK(st.temporaries == bytes(4'194'816));            // the root stays gathered after the forward
  const memory_buckets& end = e.phases[static_cast<std::size_t>(step_phase::backward_end)];
  // the layers' gradient slices + the root's parameters and its gradient twice + the loss and its seed
  CHECK(end.total_bytes() - st.weights - st.optimizer == bytes(693'248 + 3 * 4'194'816 + 8));
  SECTION("no_sync accumulation keeps every unit's unsharded gradient; sync_each_batch the slices") {
    r.grad_accum_steps = 2;
    CHECK(estimate_training(model_spec{harness_llama, 0}, r).phases[0].grads == bytes(5'581'312));
    r.parallel.sync_each_batch = true;
    CHECK(estimate_training(model_spec{harness_llama, 0}, r).phases[0].grads == bytes(2'790'656));
  }
}

TEST_CASE(
    "FSDP1 MixedPrecision: fp32 FlatParameters gathered in bf16 (docs/parallel.md, measured row fsdp-453)",
    "[parallel]") {
  // accelerate's bf16 policy over the harness's fp32 model: param_dtype and reduce_dtype bf16.
  run_config r = harness_fsdp_run(precision_route::bf16_mixed);
  const training_estimate e = estimate_training(model_spec{harness_llama, 0}, r);
  const memory_buckets& st = e.per_gpu_static.per_gpu;
  CHECK(st.weights == bytes(2'790'656));                // 697,664 fp32 values: the FlatParameters' slices
  CHECK(st.master == bytes(0));                         // the FlatParameter is the fp32 copy
  CHECK(st.grads == bytes(2'790'656));                  // each reduced slice cast back to fp32
  CHECK(st.optimizer == bytes(2 * 2'790'656 + 3 * 4));  // fp32 state, one step per FlatParameter
  CHECK(st.temporaries == bytes(2 * 1'048'704));        // the root gathered in bf16
  const memory_buckets& end = e.phases[static_cast<std::size_t>(step_phase::backward_end)];
  // the layers' fp32 slices + the root's bf16 parameters and its bf16 gradient twice + the loss and its seed
  CHECK(end.total_bytes() - st.weights - st.optimizer == bytes(693'248 + 3 * 2'097'408 + 8));
  SECTION("no_sync keeps every unit's unsharded gradient in bf16") {
    r.parallel.data_parallel = 4;
    r.grad_accum_steps = 2;
    CHECK(estimate_training(model_spec{harness_llama, 0}, r).phases[0].grads == bytes(2 * 1'395'328));
    r.parallel.sync_each_batch = true;  // the fp32 slices of 4 ranks
    CHECK(estimate_training(model_spec{harness_llama, 0}, r).phases[0].grads == bytes(4 * 348'832));
  }
}

// use_orig_params: rank 0 holds views of 14 of the 21 tensors (the embedding and half the final norm's root
// slice; per layer q, k, v, o, gate and the start of up), and its worst for-loop moment is the embedding's
// view alone (fsdp-465).
constexpr detail::first_rank_views harness_views = detail::first_rank_views_of(harness_llama, 2, 2);
static_assert(harness_views.count == 14);
static_assert(harness_views.step_values == 2 * 524'288);

TEST_CASE(
    "FSDP1 use_orig_params: the optimizer steps rank 0's views (docs/parallel.md, measured row fsdp-465)",
    "[parallel]") {
  run_config r = harness_fsdp_run(precision_route::fp32);
  const training_estimate flat = estimate_training(model_spec{harness_llama, 0}, r);
  r.parallel.use_orig_params = true;
  const training_estimate views = estimate_training(model_spec{harness_llama, 0}, r);
  // 14 step counters instead of 3; the same state values
  CHECK(views.per_gpu_static.per_gpu.optimizer ==
        flat.per_gpu_static.per_gpu.optimizer + bytes((14 - 3) * 4));
  // the worst view (the embedding's 524,288 values) is 64 values short of the root's slice: 2 · 64 · 4 B
  // fewer
  const auto step = static_cast<std::size_t>(step_phase::optimizer_step);
  CHECK(flat.phases[step].temporaries - views.phases[step].temporaries == bytes(2 * 64 * 4));
  r.parallel.shard = sharding::zero3;  // FSDP1's flag only
  require_input_error(
      [&] {
        (void)estimate_training(model_spec{harness_llama, 0}, r);
      },
      "use_orig_params", "FSDP1");
}
