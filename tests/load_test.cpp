// SPDX-License-Identifier: MIT
// The load phase: the checkpoint arriving, quantised or cast, as a phase of the peak (docs/peak.md).
#include <algorithm>
#include <string>
#include <vector>

#include <headroom/load.hpp>
#include <headroom/peak.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
constexpr load_estimate load_of(const model_spec& spec, training_method m, load_path p) {
  const training_setup s = with_method(m);
  return estimate_load(spec.shape, s, estimate_static(spec, s), p);
}
// Llama-3.1-8B's largest quantised Linear: an MLP projection, 14,336 x 4,096 values.
constexpr std::uint64_t largest_linear = 14'336ull * 4'096;
}  // namespace

// bitsandbytes: the bf16 copy of the largest weight, plus the fp32 absmax and absmax - offset of double
// quantisation (one per 64 values).
static_assert(load_of(llama8, training_method::qlora, load_path::bnb_4bit).transient ==
              bytes(2 * largest_linear + 2 * 4 * (largest_linear / 64)));

TEST_CASE("Load phase: each path's transient from its source", "[load]") {
  const load_estimate bnb = load_of(llama8, training_method::qlora, load_path::bnb_4bit);
  CHECK(bnb.largest == params(largest_linear));
  CHECK(bnb.transient == bytes(124'780'544));
  CHECK(bnb.weights == estimate_static(llama8, with_method(training_method::qlora)).buckets.weights);
  // torchao NF4Tensor.from_tensor: weight + scaled blocks (2n each), a uint8 index per value (n), the
  // absmax scalers (2n/64), and a 2^20-value chunk's (value - nf4) and abs() (2 x 16 x 2^20 x 2 B).
  const load_estimate nf4 = load_of(llama8, training_method::qlora, load_path::torchao_nf4);
  CHECK(nf4.transient == bytes(5 * largest_linear + 2 * largest_linear / 64 + 2 * 16 * (1ull << 20) * 2));
  CHECK(nf4.transient == bytes(362'545'152));
  // A tensor under one chunk: the nibble packing (n/2 + n/2) is the larger moment.
  CHECK(headroom::detail::torchao_nf4_transient(1024, 2, 64) == 5 * 1024 + 2 * 1024 / 64 + 2 * 16 * 1024 * 2);
  CHECK(headroom::detail::torchao_nf4_transient(largest_linear * 64, 2, 64) ==
        5 * largest_linear * 64 + 2 * largest_linear + largest_linear * 64);
  // fp32 then cast: all weights in fp32, the embedding (cast first) copied to bf16 on top.
  const load_estimate cast = load_of(llama8, training_method::lora, load_path::fp32_then_cast);
  CHECK(cast.weights == bytes(32'000'000'000));
  CHECK(cast.largest == params(128'256ull * 4'096));
  CHECK(cast.transient == bytes(2 * 128'256ull * 4'096));
  const load_estimate direct = load_of(llama8, training_method::full, load_path::direct);
  CHECK(direct.transient == bytes(0));
  CHECK(direct.weights == bytes(16'000'000'000));
}

TEST_CASE("Load phase: fp32 then cast can be the peak of a LoRA run, the step phases unchanged", "[load]") {
  run_config r;
  r.setup.method = training_method::lora;
  const training_estimate plain = estimate_training(llama8, r);
  CHECK_FALSE(plain.has_phase(step_phase::load));
  CHECK(plain.phases[static_cast<std::size_t>(step_phase::load)].total_bytes() == bytes(0));
  r.load = load_path::fp32_then_cast;
  const training_estimate cast = estimate_training(llama8, r);
  CHECK(cast.has_phase(step_phase::load));
  CHECK(cast.peak_phase == step_phase::load);
  const memory_buckets& load = cast.phases[static_cast<std::size_t>(step_phase::load)];
  CHECK(load.weights == bytes(32'000'000'000));
  CHECK(load.temporaries == bytes(2 * 128'256ull * 4'096));
  CHECK(load.total_bytes() == cast.total_bytes());
  for (std::size_t p = 0; p < 4; ++p) CHECK(cast.phases[p].total_bytes() == plain.phases[p].total_bytes());
  // QLoRA through bitsandbytes: the load never outgrows the step.
  r.setup.method = training_method::qlora;
  r.load = load_path::bnb_4bit;
  const training_estimate q = estimate_training(llama8, r);
  CHECK(q.peak_phase != step_phase::load);
  CHECK(q.phases[static_cast<std::size_t>(step_phase::load)].total_bytes() < q.total_bytes());
}

TEST_CASE("Load phase: a path the run cannot take is an error naming load_path", "[load][errors]") {
  test::require_input_error([] { (void)load_of(llama8, training_method::full, load_path::bnb_4bit); },
                            "load_path", "--method qlora");
  test::require_input_error([] { (void)load_of(llama8, training_method::lora, load_path::torchao_nf4); },
                            "load_path", "--method qlora");
  test::require_input_error([] { (void)load_of(llama8, training_method::qlora, load_path::fp32_then_cast); },
                            "load_path", "16-bit");
  test::require_input_error([] { (void)load_of(llama8, training_method::qlora, load_path::direct); },
                            "load_path", "bnb-4bit");
  training_setup fp32 = with_method(training_method::full);
  fp32.precision = precision_route::fp32;
  test::require_input_error(
      [&] {
        (void)estimate_load(llama8.shape, fp32, estimate_static(llama8, fp32), load_path::fp32_then_cast);
      },
      "load_path", "16-bit");
}

TEST_CASE("Load phase: left out, with a note, when the model is sharded", "[load]") {
  run_config r;
  r.setup.method = training_method::qlora;
  r.load = load_path::bnb_4bit;  // a training-args file with load_in_4bit, run under ZeRO-3
  r.parallel.data_parallel = 2;
  r.parallel.shard = sharding::zero3;
  const training_estimate e = estimate_training(llama8, r);
  CHECK_FALSE(e.has_phase(step_phase::load));
  CHECK(load_not_modelled(r));
  const std::vector<std::string> notes = training_notes(e, r);
  CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.rfind("load phase: not modelled under this sharding", 0) == 0;
  }));
}

TEST_CASE("Load phase under FSDP1: every rank loads the whole model, then wraps it (docs/parallel.md)",
          "[load]") {
  run_config r;
  r.setup.method = training_method::full;
  r.setup.precision = precision_route::bf16_pure;
  r.basis = params_basis::exact;
  r.load = load_path::direct;
  r.parallel.data_parallel = 8;
  r.parallel.shard = sharding::fsdp_full;
  CHECK_FALSE(load_not_modelled(r));
  const training_estimate e = estimate_training(llama8, r);
  REQUIRE(e.has_phase(step_phase::load));
  const bytes whole = e.statics.buckets.weights;  // 8,030,261,248 bf16 values on every rank
  CHECK(whole == bytes(2 * 8'030'261'248ULL));
  CHECK(e.load.wrap_weights == whole);
  // Llama-3.1-8B's first layer (218,112,000 values) and its slice, before anything is sharded, outweigh the
  // root: the root's 1,050,677,248 values and slice are less than what 32 layers gave back.
  CHECK(e.load.wrap_transient == bytes(2 * (218'112'000ULL + 218'112'000ULL / 8)));
  const memory_buckets& load = e.phases[static_cast<std::size_t>(step_phase::load)];
  CHECK(load.total_bytes() == whole + e.load.wrap_transient + e.overhead.total());
  CHECK(e.peak_phase == step_phase::load);  // the whole model on each GPU outweighs the sharded step
  // bf16-mixed is FSDP1's MixedPrecision: the model is loaded and wrapped in fp32, gathered in bf16.
  r.setup.precision = precision_route::bf16_mixed;
  CHECK_FALSE(load_not_modelled(r));
  const training_estimate mixed = estimate_training(llama8, r);
  CHECK(mixed.load.weights == bytes(4 * 8'030'261'248ULL));
  CHECK(mixed.load.wrap_weights == mixed.load.weights);
  CHECK(mixed.load.wrap_transient == bytes(4 * (218'112'000ULL + 218'112'000ULL / 8)));
  r.load = load_path::fp32_then_cast;  // would end in bf16 FlatParameters: refused, naming the field
  CHECK_THROWS_WITH(estimate_training(llama8, r),
                    Catch::Matchers::Contains("load_path") && Catch::Matchers::Contains("use direct"));
}

TEST_CASE("PiSSA and OLoRA: the initialisation transient of the worst adapted module", "[load]") {
  training_setup s;
  s.method = training_method::lora;
  s.precision = precision_route::bf16_pure;
  // Llama-3.1-8B down_proj (4,096 x 14,336) is the worst: with k = 4,096 and r 16, a bf16 base,
  // PiSSA keeps the fp32 copy M, U (4,096 x k), S, Vh (k x 14,336), B@A and the residual (2M), new A and B.
  const std::uint64_t out = 4096, in = 14336, k = 4096, r = 16, M = out * in * 4;
  s.lora.init = lora_init::pissa;
  init_transient t = lora_init_transient(llama_3_1_8b, s);
  CHECK(t.weight_values.count() == out * in);
  CHECK(t.amount.count() == M + 4 * (out * k + k + k * in) + 2 * M + 4 * r * (in + out));
  s.lora.init = lora_init::pissa_niter;
  CHECK(lora_init_transient(llama_3_1_8b, s).amount.count() == M + 2 * M + 8 * r * (in + out) + 4 * r);
  // OLoRA: Q (out x k), R (k x in), s*B (out x r), s*B@A; a fp32 base needs no copy. gate_proj and up_proj
  // (14,336 x 4,096) are the worst: their s*B is the widest.
  s.lora.init = lora_init::olora;
  s.precision = precision_route::fp32;
  CHECK(lora_init_transient(llama_3_1_8b, s).amount.count() ==
        4 * (in * k + k * out) + M + 4 * r * (in + out) + 4 * in * r);
  // The load phase exists with an initialisation alone, and is the larger of its two moments.
  run_config run;
  run.setup = s;
  const training_estimate e = estimate_training({llama_3_1_8b, 0}, run);
  CHECK(e.has_phase(step_phase::load));
  const memory_buckets& load = e.phases[static_cast<std::size_t>(step_phase::load)];
  CHECK(load.temporaries == lora_init_transient(llama_3_1_8b, s).amount);
  CHECK(load.adapter_weights == e.statics.buckets.adapter_weights);
  run.setup.lora.init = lora_init::standard;
  CHECK_FALSE(estimate_training({llama_3_1_8b, 0}, run).has_phase(step_phase::load));
  // PiSSA needs a 16- or 32-bit base, as PEFT says; OLoRA dequantises a 4-bit one first.
  s.method = training_method::qlora;
  s.lora.init = lora_init::pissa;
  test::require_input_error([&] { (void)lora_init_transient(llama_3_1_8b, s); }, "init_lora_weights",
                            "16- or 32-bit base");
  s.lora.init = lora_init::olora;
  CHECK(lora_init_transient(llama_3_1_8b, s).amount.count() ==
        out * in * 2 + M + 4 * (in * k + k * out) + M + 4 * r * (in + out) + 4 * in * r);
  // torch.svd_lowrank refuses r above a target's narrower side: an 8-expert router at r 16.
  model_shape moe = qwen3_30b_a3b;
  moe.num_experts = 8;
  moe.num_experts_per_tok = 2;
  s.method = training_method::lora;
  s.precision = precision_route::bf16_pure;
  s.lora.init = lora_init::pissa_niter;
  s.lora.targets = lora_targets::all_linear();
  test::require_input_error([&] { (void)lora_init_transient(moe, s); }, "init_lora_weights",
                            "svd_lowrank needs r <= min(out, in)");
  s.lora.targets = parse_lora_targets("q_proj,v_proj");
  CHECK(lora_init_transient(moe, s).amount.count() > 0);
  CHECK(parse_lora_init("pissa_niter_16") == lora_init::pissa_niter);
  CHECK(parse_lora_init("gaussian") == lora_init::standard);
  test::require_input_error([] { (void)parse_lora_init("pissa_niter_"); }, "init_lora_weights",
                            "valid: gaussian");
}
