// SPDX-License-Identifier: MIT
// The peak over the phases of a step, fits(), and the exact solvers.
#include <optional>

#include <headroom/peak.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {

run_config qlora_run() {
  run_config r;
  r.setup.method = training_method::qlora;
  return r;
}
const bytes gb24{24'000'000'000};
}  // namespace

// The whole step is constexpr too: full fine-tuning's peak holds at least the course's 16 bytes/param.
static_assert(estimate_training(llama8, run_config{}).total_bytes() > bytes(16 * 8'000'000'000ull));
static_assert(estimate_training(llama8, run_config{}).statics.buckets.static_bytes() ==
              bytes(16 * 8'000'000'000ull));

TEST_CASE("Every phase's parts sum to its total, and the peak is the largest phase", "[peak][property]") {
  for (const model_spec& spec : {qwen4, llama8}) {
    for (training_method m : {training_method::full, training_method::lora, training_method::qlora}) {
      for (checkpointing k :
           {checkpointing::none, checkpointing::full, checkpointing::selective, checkpointing::offload,
            checkpointing::offload_checkpointed, checkpointing::checkpoint_offload}) {
        for (loss_impl l :
             {loss_impl::naive, loss_impl::chunked, loss_impl::fused_liger, loss_impl::fused_cce}) {
          run_config r;
          r.setup.method = m;
          r.activations.ckpt = k;
          r.loss.impl = l;
          const training_estimate e = estimate_training(spec, r);
          for (const memory_buckets& phase : e.phases) {
            std::uint64_t sum = 0;
            for (const bucket_field& f : bucket_fields) sum += (phase.*f.member).count();
            CHECK(sum == phase.total_bytes().count());
            CHECK(phase.total_bytes() <= e.total_bytes());
            for (const bucket_field& f : bucket_fields) CHECK(phase.*f.member <= e.sizes.*f.member);
          }
          CHECK(e.total_bytes() > e.statics.buckets.static_bytes());
          CHECK(e.peak_allocated_bytes() < e.total_bytes());
        }
      }
    }
  }
}

TEST_CASE("Gradients exist during forward only with gradient accumulation", "[peak]") {
  run_config r;
  const training_estimate one = estimate_training(llama8, r);
  CHECK(one.phases[0].grads == bytes(0));  // zero_grad(set_to_none=True) after each step
  r.grad_accum_steps = 4;
  const training_estimate four = estimate_training(llama8, r);
  CHECK(four.phases[0].grads == bytes(16'000'000'000));
  CHECK(four.phases[0].total_bytes() - one.phases[0].total_bytes() == bytes(16'000'000'000));
}

TEST_CASE("The optimizer step: foreach AdamW holds a copy of the params, fused AdamW does not", "[peak]") {
  run_config r;
  const training_estimate foreach_adam = estimate_training(llama8, r);
  CHECK(foreach_adam.peak_phase == step_phase::optimizer_step);
  CHECK(foreach_adam.at_peak().temporaries == bytes(4 * 8'000'000'000ull));  // fp32 master-sized
  r.setup.optimizer = optimizer_by_name("adamw_torch_fused");
  const training_estimate fused = estimate_training(llama8, r);
  CHECK(fused.phases[3].temporaries == bytes(0));
  CHECK(foreach_adam.phases[3].total_bytes() - fused.phases[3].total_bytes() == bytes(4 * 8'000'000'000ull));
}

TEST_CASE("Route B: autocast's bf16 casts of the trainable weights are saved for backward", "[peak]") {
  // Each matmul keeps the bf16 cast of its weight for the input's gradient: every layer's linear weights
  // in 16-bit, as activations (measured on the CPU rows; docs/activations.md).
  run_config r;
  r.setup.precision = precision_route::fp32_autocast;
  const activation_terms layer = layer_inventory(llama_3_1_8b, r.setup, r.activations);
  bytes casts{0};
  for (const activation_term& t : layer)
    if (t.reason == std::string_view("the weight cast to bf16, saved for the input gradient"))
      casts += t.amount;
  const std::uint64_t d = 4096, q = 4096, kv = 1024, f = 14336;
  CHECK(casts == bytes(2 * (d * q + 2 * d * kv + q * d + 3 * d * f)));
  r.setup.precision = precision_route::bf16_mixed;
  bytes none{0};
  for (const activation_term& t : layer_inventory(llama_3_1_8b, r.setup, r.activations))
    if (t.reason == std::string_view("the weight cast to bf16, saved for the input gradient"))
      none += t.amount;
  CHECK(none == bytes(0));
}

TEST_CASE("Paged optimizer state is left out of the allocator peak", "[peak]") {
  run_config r;
  r.setup.optimizer = optimizer_by_name("paged_adamw_32bit");
  const training_estimate e = estimate_training(llama8, r);
  CHECK(e.total_bytes() - e.peak_allocated_bytes() ==
        e.at_peak().optimizer + e.overhead.cuda_context + e.overhead.fragmentation);
}

TEST_CASE("The seq-len solver (--fit seq-len) is exact: the answer fits and one more token does not",
          "[peak][solver]") {
  for (loss_impl l : {loss_impl::naive, loss_impl::fused_liger}) {
    for (checkpointing k : {checkpointing::full, checkpointing::none}) {
      run_config r = qlora_run();
      r.loss.impl = l;
      r.activations.ckpt = k;
      const std::uint64_t best = max_seq_len(qwen4, r, gb24);
      INFO("loss " << static_cast<int>(l) << ", checkpointing " << static_cast<int>(k) << ": " << best);
      REQUIRE(best > 0);
      r.activations.seq_len = best;
      CHECK(fits(qwen4, r, gb24));
      r.activations.seq_len = best + 1;
      CHECK_FALSE(fits(qwen4, r, gb24));
    }
  }
  run_config plain = qlora_run(), fused = qlora_run(), nockpt = qlora_run();
  fused.loss.impl = loss_impl::fused_liger;
  nockpt.activations.ckpt = checkpointing::none;
  CHECK(max_seq_len(qwen4, fused, gb24) > max_seq_len(qwen4, plain, gb24));
  CHECK(max_seq_len(qwen4, nockpt, gb24) < max_seq_len(qwen4, plain, gb24));
}

TEST_CASE("The batch solver (--fit batch) is exact, and nothing fits a budget below the static state",
          "[peak][solver]") {
  run_config r = qlora_run();
  const std::uint64_t best = max_batch(qwen4, r, gb24);
  REQUIRE(best > 0);
  r.activations.batch = best;
  CHECK(fits(qwen4, r, gb24));
  r.activations.batch = best + 1;
  CHECK_FALSE(fits(qwen4, r, gb24));
  CHECK(max_batch(llama8, run_config{}, gb24) == 0);
  CHECK(max_seq_len(llama8, run_config{}, gb24) == 0);
  // A budget that holds the solver's cap has no boundary: refused, not answered with the cap (API-14).
  test::require_input_error([] { (void)max_seq_len(qwen4, qlora_run(), bytes(std::uint64_t{1} << 60)); },
                            "budget", "67108864", "no boundary");
  test::require_input_error([] { (void)max_batch(qwen4, qlora_run(), bytes(~std::uint64_t{0})); }, "budget",
                            "batch 16777216");
  test::require_input_error(
      [] { (void)fit_largest(qwen4, qlora_run(), bytes(~std::uint64_t{0}), fit_dimension::seq_len); },
      "budget");
}

TEST_CASE("The peak grows with sequence length, batch and rank", "[peak][property]") {
  for (training_method m : {training_method::full, training_method::lora, training_method::qlora}) {
    run_config r;
    r.setup.method = m;
    bytes last{0};
    for (std::uint64_t s : {256u, 512u, 2048u, 2049u, 8192u}) {
      r.activations.seq_len = s;
      const bytes now = estimate_training(qwen4, r).total_bytes();
      CHECK(now >= last);
      last = now;
    }
    last = bytes(0);
    for (std::uint64_t b : {1u, 2u, 4u}) {
      r.activations.batch = b;
      const bytes now = estimate_training(qwen4, r).total_bytes();
      CHECK(now >= last);
      last = now;
    }
  }
  run_config r = qlora_run();
  bytes last{0};
  for (std::uint64_t rank : {4u, 16u, 64u}) {
    r.setup.lora.rank = rank;
    const bytes now = estimate_training(qwen4, r).total_bytes();
    CHECK(now > last);
    last = now;
  }
}

TEST_CASE("The loss backward and the last block's recompute are different moments", "[peak][groundtruth]") {
  // Checkpointed LoRA: the loss backward runs before any block is recomputed, so the peak is the larger
  // of (kept + loss backward) and (kept + one block + the hidden-state gradient), not their sum.
  run_config r;
  r.setup.method = training_method::lora;
  r.activations.seq_len = 16384;
  const training_estimate e = estimate_training(model_spec{qwen3_4b, 4'000'000'000}, r);
  const memory_buckets& start = e.phases[static_cast<std::size_t>(step_phase::backward_start)];
  CHECK(start.activations == e.activations.kept);  // the loss moment wins at 16k tokens
  CHECK(start.logits == e.logits.backward_peak());
}

TEST_CASE("Tied embeddings: the head's and the embedding's gradients are summed at the end of backward",
          "[peak][groundtruth]") {
  run_config r;
  r.basis = params_basis::exact;
  r.activations.ckpt = checkpointing::none;
  const training_estimate e = estimate_training(model_spec{qwen3_4b, 0}, r);
  const memory_buckets& end = e.phases[static_cast<std::size_t>(step_phase::backward_end)];
  // The embedding's gradient and the sum, each V x d in the weight dtype (step-159's peak).
  CHECK(end.temporaries == bytes(2 * 151'936ull * 2560 * 2));
}

TEST_CASE("Optimizer in backward: no phase holds every gradient, and accumulation is refused",
          "[peak][groundtruth]") {
  run_config r;
  r.setup.optimizer = optimizer_by_name("adamw_torch_fused");
  r.setup.optim.in_backward = true;
  const training_estimate e = estimate_training(llama8, r);
  const memory_buckets& step = e.phases[static_cast<std::size_t>(step_phase::optimizer_step)];
  CHECK(step.grads == bytes(0));
  CHECK(step.temporaries == bytes(0));
  // At the end of backward only the embedding's gradient exists: V x d bf16 (fused AdamW: no temporaries).
  CHECK(e.phases[static_cast<std::size_t>(step_phase::backward_end)].grads == bytes(128'256ull * 4096 * 2));
  // Without it the peak is the end of backward, all 16 GB of gradients; with it, the loss backward's.
  r.setup.optim.in_backward = false;
  const training_estimate usual = estimate_training(llama8, r);
  CHECK(usual.peak_phase == step_phase::backward_end);
  CHECK(e.total_bytes() == usual.phases[static_cast<std::size_t>(step_phase::backward_start)].total_bytes());
  r.setup.optim.in_backward = true;
  r.grad_accum_steps = 2;
  CHECK_THROWS_WITH(estimate_training(llama8, r),
                    Catch::Matchers::Contains("optimizer_in_backward") &&
                        Catch::Matchers::Contains("gradient_accumulation_steps"));
}

TEST_CASE("Optimizer implementation: the note names the one assumed when another moves the peak over 1%",
          "[peak][optimizer]") {
  run_config r;  // adamw_torch, full fine-tuning, CUDA, torch 2: foreach, 32 GB of temporaries at the step
  const training_estimate e = estimate_training(llama8, r);
  const std::vector<impl_peak> peaks = optimizer_impl_peaks(llama8, r, e);
  REQUIRE(peaks.size() == 3);
  CHECK(peaks[0].impl == optimizer_impl::foreach);
  CHECK(peaks[0].total == e.total_bytes());
  CHECK(peaks[1].impl == optimizer_impl::for_loop);
  CHECK(peaks[2].impl == optimizer_impl::fused);
  run_config fused = r;
  fused.setup.optimizer = optimizer_by_name("adamw_torch_fused");
  CHECK(peaks[2].total == estimate_training(llama8, fused).total_bytes());  // the same kernel either way
  // foreach's one copy of the 8e9 fp32 master values (32 GB) is gone with fused.
  CHECK(peaks[0].total - peaks[2].total > bytes(30'000'000'000));
  const auto note = optimizer_impl_note(llama8, r, e);
  REQUIRE(note.has_value());
  CHECK_THAT(*note, Catch::Matchers::StartsWith("optimizer step: foreach assumed") &&
                        Catch::Matchers::Contains("fused 129.527 GB"));
  // LoRA's adapters are tiny: no implementation moves the peak, no note.
  run_config lora = r;
  lora.setup.method = training_method::lora;
  CHECK_FALSE(optimizer_impl_note(llama8, lora, estimate_training(llama8, lora)).has_value());
  // bitsandbytes has one implementation.
  run_config bnb = r;
  bnb.setup.optimizer = optimizer_by_name("adamw_8bit");
  CHECK(optimizer_impl_peaks(llama8, bnb, estimate_training(llama8, bnb)).size() == 1);
}

TEST_CASE("Optimizer implementation: one the optimizer cannot run is an error naming optimizer_impl",
          "[peak][optimizer][errors]") {
  run_config r;
  r.setup.optimizer = optimizer_by_name("rmsprop");
  r.setup.optim.impl = optimizer_impl::fused;
  CHECK_THROWS_WITH(estimate_training(llama8, r), Catch::Matchers::Contains("optimizer_impl") &&
                                                      Catch::Matchers::Contains("no fused kernel"));
  r.setup.optimizer = optimizer_by_name("adamw_8bit");
  r.setup.optim.impl = optimizer_impl::foreach;
  CHECK_THROWS_WITH(estimate_training(llama8, r), Catch::Matchers::Contains("one implementation"));
  r.setup.optimizer = optimizer_by_name("adamw_torch_fused");
  r.setup.optim.impl = optimizer_impl::for_loop;
  CHECK_THROWS_WITH(estimate_training(llama8, r), Catch::Matchers::Contains("adamw_torch_fused"));
  r.setup.optimizer = optimizer_by_name("adamw_torch");
  r.setup.optim.impl = optimizer_impl::fused;
  r.setup.runtime.torch = torch_generation::v1_13;  // 1.13's AdamW has no fused kernel
  CHECK_THROWS(estimate_training(llama8, r));
  r.setup.runtime.torch = torch_generation::v2;
  CHECK_NOTHROW(estimate_training(llama8, r));
}

TEST_CASE(
    "Activation offloading: TRL's scope (training_step) copies the loss's saved tensors to host RAM too",
    "[peak]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.activations.seq_len = 4096;
  r.activations.ckpt = checkpointing::checkpoint_offload;
  const training_estimate model_scope = estimate_training(qwen4, r);  // torchtune: the model forward
  r.activations.offload_wraps = offload_scope::step;
  const training_estimate step_scope = estimate_training(qwen4, r);
  CHECK(model_scope.activations.host ==
        bytes(36ull * 2 * 4096 * 2560));  // docs/activations.md: 754,974,720 B
  CHECK(step_scope.activations.host - model_scope.activations.host == step_scope.logits.kept);
  CHECK(step_scope.logits.kept >= bytes(4096ull * 151936 * 4));  // the fp32 log-probabilities, and labels
  CHECK(step_scope.total_bytes() == model_scope.total_bytes());  // the GPU originals stay until backward
  // Unsloth's own checkpoint function never sees the loss.
  r.activations.ckpt = checkpointing::offload_checkpointed;
  const training_estimate unsloth = estimate_training(qwen4, r);
  CHECK(unsloth.activations.host == model_scope.activations.host);
  // One more block input on the GPU than Unsloth's: the previous node's, freed when the next unpacks.
  r.activations.ckpt = checkpointing::full;
  const bytes input = block_input_bytes(qwen4.shape, r.setup, r.activations);
  CHECK(model_scope.activations.gpu == unsloth.activations.gpu + input);
  const training_estimate full = estimate_training(qwen4, r);
  CHECK(model_scope.total_bytes() < full.total_bytes());
}

TEST_CASE("DoRA's weight-norm transient joins forward_end and the recompute moment", "[peak]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.setup.lora.use_dora = true;
  r.activations.seq_len = 256;  // short: the transient outgrows the loss head
  const training_estimate e = estimate_training(llama8, r);
  const memory_buckets& fwd = e.phases[static_cast<std::size_t>(step_phase::forward_end)];
  CHECK(fwd.activations == e.activations.kept + e.activations.module_transient);
  const memory_buckets& bwd = e.phases[static_cast<std::size_t>(step_phase::backward_start)];
  CHECK(bwd.activations >= e.activations.kept + e.activations.recompute + e.activations.module_transient);
}

TEST_CASE("The solvers' search: exact on any monotone total, three probes on an affine one", "[peak][fit]") {
  int probes = 0;
  // An affine total (bytes = 1e9 + 250,000 per token): the budget line is met at 92,000 tokens exactly.
  const auto affine = [&](std::uint64_t v) -> std::optional<std::uint64_t> {
    ++probes;
    return 1'000'000'000 + 250'000 * v;
  };
  CHECK(detail::largest_within(1 << 20, 24'000'000'000, affine) == 92'000);
  CHECK(probes <= 5);  // both ends, then at most three inside (bisection: 22)
  // A quadratic total with steps, checked against a scan; totals past 2^40 read as overflow (nullopt).
  const auto bumpy = [](std::uint64_t v) -> std::optional<std::uint64_t> {
    if (v > (std::uint64_t{1} << 19)) return std::nullopt;
    return 5'000 * v + (v / 64) * 70'000 + v * v / 3;
  };
  for (const std::uint64_t budget : {std::uint64_t{4'999}, std::uint64_t{5'000}, std::uint64_t{123'456'789},
                                     std::uint64_t{9'000'000'000}, std::uint64_t{1} << 45}) {
    std::uint64_t scan = 0;
    for (std::uint64_t v = 1; v <= (std::uint64_t{1} << 20); v *= 2) {
      // the answer lies between two powers of two: scan that stretch one by one
      if (bumpy(v) && *bumpy(v) <= budget) continue;
      for (std::uint64_t w = v / 2 == 0 ? 1 : v / 2; w <= v; ++w)
        if (bumpy(w) && *bumpy(w) <= budget) scan = w;
      break;
    }
    INFO(budget);
    CHECK(detail::largest_within(1 << 20, budget, bumpy) == scan);
  }
  CHECK(detail::largest_within(1000, 2'000'000'000, affine) == 1000);  // the whole range fits
}
