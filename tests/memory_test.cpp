// SPDX-License-Identifier: MIT
// The static buckets: the course's worked numbers W01–W07 and W10–W14, plus properties.
#include <cmath>

#include <headroom/memory.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
constexpr model_spec spec_8b{llama_3_1_8b, 8'000'000'000};

/// Rounds GB the way the course prints it (round(x, k) in Python).
double gb_rounded(bytes b, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(in_gb(b) * scale) / scale;
}
}  // namespace

// W04 and W10/W11 at compile time: exact integers.
static_assert(estimate_static(spec_8b, full_ft).buckets.static_bytes() == bytes(128'000'000'000));
static_assert(estimate_static(spec_8b, lora16).buckets.static_bytes() == bytes(16'671'088'640));
static_assert(estimate_static(spec_8b, qlora16).buckets.static_bytes() == bytes(4'798'088'640));

TEST_CASE("W01: route A is 2 + 2 + 4 + 8 = 16 bytes per parameter", "[memory][worked]") {
  const memory_buckets b = estimate_static(spec_8b, full_ft).buckets;
  CHECK(b.weights == bytes(2 * 8'000'000'000ull));
  CHECK(b.grads == bytes(2 * 8'000'000'000ull));
  CHECK(b.master == bytes(4 * 8'000'000'000ull));
  CHECK(b.optimizer == bytes(8 * 8'000'000'000ull));
  CHECK(b.static_bytes() == bytes(16 * 8'000'000'000ull));
}

TEST_CASE("W02: route B (fp32 weights and grads, autocast) is 4 + 4 + 8 = 16 bytes per parameter",
          "[memory][worked]") {
  const memory_buckets b =
      estimate_static(spec_8b, with_method(training_method::full, precision_route::fp32_autocast)).buckets;
  CHECK(b.weights == bytes(4 * 8'000'000'000ull));
  CHECK(b.grads == bytes(4 * 8'000'000'000ull));
  CHECK(b.master == bytes(0));
  CHECK(b.optimizer == bytes(8 * 8'000'000'000ull));
  CHECK(b.static_bytes() == bytes(16 * 8'000'000'000ull));
}

TEST_CASE("W03: a bf16 gradient-accumulation buffer makes 18 bytes/param, 144.0 GB for 8B",
          "[memory][worked]") {
  training_setup s = full_ft;
  s.grad_accum_buffer = true;
  CHECK(estimate_static(spec_8b, s).buckets.static_bytes() == bytes(144'000'000'000));
}

TEST_CASE("W04: 8B full fine-tuning is 128.0 GB nominal, 128.5 GB exact, 7B is 112.0 GB",
          "[memory][worked]") {
  CHECK(gb_rounded(estimate_static(spec_8b, full_ft).buckets.static_bytes(), 1) == 128.0);
  const static_estimate exact = estimate_static(spec_8b, full_ft, params_basis::exact);
  // 16 bytes per parameter, and torch's 0-dim fp32 `step` per tensor (291 tensors: embed, head, final
  // norm, 9 per layer) that the course's nominal pricing leaves out.
  CHECK(exact.trainable_tensors == 291);
  CHECK(exact.buckets.static_bytes() == bytes(16 * 8'030'261'248ull + 4 * 291));  // 128.48e9
  CHECK(gb_rounded(exact.buckets.static_bytes(), 2) == 128.48);
  CHECK(gb_rounded(exact.buckets.static_bytes(), 1) == 128.5);
  CHECK(estimate_static(model_spec{llama_3_1_8b, 7'000'000'000}, full_ft).buckets.static_bytes() ==
        bytes(112'000'000'000));
}

TEST_CASE("W05: the third route (bf16 weights, plain AdamW, no master) is 8 bytes/param",
          "[memory][worked]") {
  const memory_buckets b =
      estimate_static(spec_8b, with_method(training_method::full, precision_route::bf16_pure)).buckets;
  CHECK(b.master == bytes(0));
  CHECK(b.optimizer == bytes(4 * 8'000'000'000ull));  // m and v in bf16
  CHECK(b.static_bytes() == bytes(8 * 8'000'000'000ull));
}

TEST_CASE("W05: bitsandbytes 32-bit state stays fp32 even on the third route", "[memory][worked]") {
  training_setup s = with_method(training_method::full, precision_route::bf16_pure);
  s.optimizer = *find_optimizer("paged_adamw_32bit");
  CHECK(estimate_static(spec_8b, s).buckets.optimizer == bytes(8 * 8'000'000'000ull));
}

TEST_CASE("W06: 8-bit AdamW brings 8B full fine-tuning from 128 GB to about 80 GB (80.03)",
          "[memory][worked]") {
  training_setup s = full_ft;
  s.optimizer = *find_optimizer("adamw_8bit");
  s.optim.block_size = 2048;
  const memory_buckets b = estimate_static(spec_8b, s).buckets;
  CHECK(gb_rounded(b.optimizer, 2) == 16.03);
  CHECK(gb_rounded(b.static_bytes(), 2) == 80.03);
}

TEST_CASE("W07 and W10: LoRA 8B is 16.0 GB of frozen bf16 base plus 0.671 GB of adapter state",
          "[memory][worked]") {
  const static_estimate e = estimate_static(spec_8b, lora16);
  CHECK(e.buckets.weights == bytes(2 * 8'000'000'000ull));  // W07: 2 bytes/param
  CHECK(e.adapter_params == params(41'943'040));
  const bytes adapter_state = e.buckets.static_bytes() - e.buckets.weights;
  CHECK(adapter_state == bytes(16 * 41'943'040ull));
  CHECK(gb_rounded(adapter_state, 3) == 0.671);
  CHECK(gb_rounded(e.buckets.static_bytes(), 2) == 16.67);
}

TEST_CASE("W11: QLoRA 8B is 4.127 GB of NF4 base and 4.798 GB in total", "[memory][worked]") {
  const static_estimate e = estimate_static(spec_8b, qlora16);
  CHECK(e.layout == qlora_layout::uniform_nominal);
  CHECK(gb_rounded(e.buckets.weights, 3) == 4.127);
  CHECK(std::fabs(in_gb(e.buckets.static_bytes()) - 4.798) < 1e-3);
}

TEST_CASE("W12: LoRA 8B optimizer state is 0.34 GB, and 8-bit saves about 0.25 GB (0.2515)",
          "[memory][worked]") {
  const bytes fp32_state = estimate_static(spec_8b, lora16).buckets.optimizer;
  CHECK(fp32_state == bytes(8 * 41'943'040ull));
  CHECK(gb_rounded(fp32_state, 2) == 0.34);
  training_setup s = lora16;
  s.optimizer = *find_optimizer("adamw_8bit");
  s.optim.block_size = 2048;
  CHECK(gb_rounded(fp32_state - estimate_static(spec_8b, s).buckets.optimizer, 4) == 0.2515);
}

TEST_CASE("W14: Table 1 static totals for 1B, 8B, 32B and 70B (full / LoRA / QLoRA)", "[memory][worked]") {
  struct row {
    model_spec spec;
    double full, lora, qlora;
  };
  const row rows[] = {
      {{llama_3_2_1b, 1'000'000'000}, 16.00, 2.18, 0.696},
      {{llama_3_1_8b, 8'000'000'000}, 128.00, 16.67, 4.798},
      {{qwen3_32b, 32'000'000'000}, 512.00, 66.15, 18.655},
      {{llama_3_1_70b, 70'000'000'000}, 1120.00, 143.31, 39.425},
  };
  for (const row& r : rows) {
    INFO("nominal N = " << r.spec.nominal_params);
    CHECK(gb_rounded(estimate_static(r.spec, full_ft).buckets.static_bytes(), 2) == r.full);
    CHECK(gb_rounded(estimate_static(r.spec, lora16).buckets.static_bytes(), 2) == r.lora);
    CHECK(gb_rounded(estimate_static(r.spec, qlora16).buckets.static_bytes(), 3) == r.qlora);
  }
}

TEST_CASE("W14: the 70B QLoRA row needs the course's rounded 4.127 bits, not the exact 4.12695",
          "[memory][worked]") {
  // Exact block arithmetic on one 70e9-value tensor gives 36.1108 GB of base and 39.424 GB in
  // total; the course multiplies by the rounded 4.127 and prints 39.425. Both are reported.
  const static_estimate e = estimate_static(model_spec{llama_3_1_70b, 70'000'000'000}, qlora16);
  CHECK(e.buckets.weights == bytes(36'111'250'000));
  const bytes exact_blocks = nf4_tensor_bytes(70'000'000'000, nf4_layout{});
  CHECK(gb_rounded(exact_blocks + (e.buckets.static_bytes() - e.buckets.weights), 3) == 39.424);
}

TEST_CASE("QLoRA with exact counts keeps embeddings, lm_head and norms in bf16", "[memory]") {
  const static_estimate e = estimate_static(spec_8b, qlora16, params_basis::exact);
  CHECK(e.layout == qlora_layout::realistic);
  // Per layer: q, o 4096x4096; k, v 1024x4096; gate, up, down 14336x4096 — each NF4 exactly.
  const nf4_layout q{};
  const std::uint64_t per_layer = 2 * nf4_tensor_bytes(4096ull * 4096, q).count() +
                                  2 * nf4_tensor_bytes(1024ull * 4096, q).count() +
                                  3 * nf4_tensor_bytes(14336ull * 4096, q).count();
  const std::uint64_t bf16_rest = 2 * (2 * 128256ull * 4096 + 65 * 4096ull);  // embed + head + norms
  CHECK(e.buckets.weights == bytes(32 * per_layer + bf16_rest));
  // The 16-bit embeddings and head make it about 0.6 GB heavier than 4.127 bits for all params.
  CHECK(e.buckets.weights > nf4_nominal_bytes(params(8'030'261'248), q));
}

TEST_CASE("Shape-dependent optimizers are priced on real shapes even with a nominal N", "[memory]") {
  training_setup s = full_ft;
  s.optimizer = *find_optimizer("adafactor");
  const static_estimate e = estimate_static(spec_8b, s);
  CHECK(e.optimizer_from_shapes);
  CHECK(e.buckets.weights == bytes(16'000'000'000));  // the base stays nominal
  std::uint64_t expected = 0;
  for (const param_tensor& t : parameter_inventory(llama_3_1_8b))
    expected += 4 * (t.is_matrix() ? t.rows + t.cols : t.rows) * t.copies;
  CHECK(e.buckets.optimizer == bytes(expected));
}

TEST_CASE("A preset without a nominal size is priced on its exact count", "[memory]") {
  const static_estimate e = estimate_static(model_spec{qwen3_4b, 0}, full_ft);
  CHECK(e.basis == params_basis::exact);
  CHECK(e.priced_params == params(4'022'468'096));
}

TEST_CASE("Buckets sum to the static total, and LoRA state grows with rank", "[memory][property]") {
  for (training_method m : {training_method::full, training_method::lora, training_method::qlora}) {
    for (precision_route p :
         {precision_route::bf16_mixed, precision_route::fp32_autocast, precision_route::bf16_pure}) {
      for (params_basis basis : {params_basis::nominal, params_basis::exact}) {
        for (const optimizer_info& o : optimizer_catalog) {
          training_setup s = with_method(m, p);
          s.optimizer = o;
          const memory_buckets b = estimate_static(model_spec{qwen3_4b, 4'000'000'000}, s, basis).buckets;
          std::uint64_t sum = 0;
          for (const bucket_field& f : bucket_fields) sum += (b.*f.member).count();
          CHECK(sum == b.total_bytes().count());
          CHECK(b.static_bytes().count() == b.weights.count() + b.adapter_weights.count() + b.grads.count() +
                                                b.master.count() + b.optimizer.count());
          CHECK(b.weights.count() > 0);
        }
      }
    }
  }
  for (training_method m : {training_method::lora, training_method::qlora}) {
    bytes previous{0};
    for (std::uint64_t r : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u}) {
      training_setup s = with_method(m);
      s.lora.rank = r;
      const bytes now = estimate_static(spec_8b, s).buckets.static_bytes();
      CHECK(now > previous);
      previous = now;
    }
  }
}

TEST_CASE("Ordering holds: QLoRA < LoRA < full for every reference model", "[memory][property]") {
  for (const model_shape& m : {llama_3_2_1b, llama_3_1_8b, gemma_2_2b, qwen3_1_7b, qwen3_30b_a3b}) {
    for (params_basis basis : {params_basis::nominal, params_basis::exact}) {
      const model_spec spec{m, 0};
      const bytes full = estimate_static(spec, full_ft, basis).buckets.static_bytes();
      const bytes lora = estimate_static(spec, lora16, basis).buckets.static_bytes();
      const bytes qlora = estimate_static(spec, qlora16, basis).buckets.static_bytes();
      CHECK(qlora < lora);
      CHECK(lora < full);
    }
  }
}
