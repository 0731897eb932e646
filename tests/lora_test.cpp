// SPDX-License-Identifier: MIT
// LoRA adapter counts from shapes (W09, W13) and target-module parsing.
#include <headroom/lora.hpp>
#include <headroom/memory.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

// W09: r·Σ(in + out) over q, k, v, o, gate, up, down, × 32 layers.
static_assert(adapter_count(llama_3_1_8b, lora_config{}) == params(41'943'040));

TEST_CASE("W09: Llama-3.1-8B r16 on all seven linears has 41,943,040 adapter parameters", "[lora][worked]") {
  // The course's derivation, term by term: d 4096, d_kv 1024, d_ff 14336, L 32, r 16.
  const std::uint64_t d = 4096, kv = 1024, ff = 14336, L = 32, r = 16;
  const std::uint64_t by_hand =
      L * r * ((d + d) + (d + kv) + (d + kv) + (d + d) + (d + ff) + (d + ff) + (ff + d));
  CHECK(by_hand == 41'943'040);
  CHECK(adapter_count(llama_3_1_8b, lora_config{}).count() == by_hand);
}

TEST_CASE("W13: Table 1 adapter counts, r16 all-linear, from real shapes", "[lora][worked]") {
  CHECK(adapter_count(llama_3_2_1b, lora_config{}).count() == 11'272'192);
  CHECK(adapter_count(llama_3_1_8b, lora_config{}).count() == 41'943'040);
  CHECK(adapter_count(qwen3_32b, lora_config{}).count() == 134'217'728);  // uses q width 8192
  CHECK(adapter_count(llama_3_1_70b, lora_config{}).count() == 207'093'760);
}

TEST_CASE("q_proj,v_proj only: 6,815,744 adapters on Llama-3.1-8B r16", "[lora]") {
  // 32 · 16 · ((4096 + 4096) + (4096 + 1024)); the same count ftune's tests assert.
  const lora_config qv{16, parse_lora_targets("q_proj,v_proj")};
  CHECK(adapter_count(llama_3_1_8b, qv).count() == 6'815'744);
  CHECK(lora_targets_text(qv.targets) == "q_proj,v_proj");
}

TEST_CASE("all-linear excludes lm_head and includes MoE experts and routers", "[lora]") {
  CHECK(parse_lora_targets("ALL-LINEAR") == lora_targets::all_linear());
  CHECK_FALSE(lora_targets::all_linear().contains(module_name::lm_head));
  // Qwen3-30B-A3B per layer: attention r·(2048+4096 + 2·(2048+512) + 4096+2048),
  // experts 128 · r·3·(2048+768), router r·(2048+128).
  const std::uint64_t r = 16, L = 48;
  const std::uint64_t per_layer =
      r * ((2048 + 4096) + 2 * (2048 + 512) + (4096 + 2048)) + 128 * r * 3 * (2048 + 768) + r * (2048 + 128);
  CHECK(adapter_count(qwen3_30b_a3b, lora_config{}).count() == L * per_layer);
  // An untied head targeted explicitly: r·(d + V).
  const lora_config head{16, parse_lora_targets("lm_head")};
  CHECK(adapter_count(llama_3_1_8b, head).count() == 16ull * (4096 + 128256));
}

TEST_CASE("Adapter count grows linearly with rank", "[lora][property]") {
  const std::uint64_t r1 = adapter_count(qwen3_4b, lora_config{1, lora_targets::all_linear()}).count();
  for (std::uint64_t r : {2u, 8u, 16u, 64u, 256u})
    CHECK(adapter_count(qwen3_4b, lora_config{r, lora_targets::all_linear()}).count() == r * r1);
}

TEST_CASE("Bad LoRA settings name the field", "[lora][errors]") {
  require_input_error([] { (void)parse_lora_targets("q_proj,qkv"); }, "target_modules",
                      "unknown module 'qkv'", "all-linear", "down_proj");
  require_input_error([] { (void)parse_lora_targets(""); }, "target_modules");
  require_input_error(
      [] {
        (void)adapter_count(llama_3_1_8b, lora_config{0, lora_targets::all_linear()});
      },
      "rank", "positive");
  require_input_error(
      [] {
        (void)adapter_count(llama_3_1_8b, lora_config{1u << 20, lora_targets::all_linear()});
      },
      "rank", "absurd");
  require_input_error(
      [] {
        (void)adapter_count(llama_3_2_1b, lora_config{16, parse_lora_targets("lm_head")});
      },
      "target_modules", "matches no module");
}

TEST_CASE("LoRA-FA: lora_A is stored but frozen, so only lora_B gets gradients and optimizer state",
          "[lora]") {
  constexpr model_spec llama8{llama_3_1_8b, 8'000'000'000};
  training_setup s = with_method(training_method::lora);
  const static_estimate lora = estimate_static(llama8, s);
  s.lora.freeze_a = true;
  const static_estimate fa = estimate_static(llama8, s);
  CHECK(fa.adapter_params == lora.adapter_params);  // W09's 41,943,040 are all stored
  // lora_A: r x in per module — q, k, v, o, gate, up read 4,096 wide inputs, down 14,336 — over 32 layers.
  const std::uint64_t a = 16ull * (6 * 4096 + 14336) * 32;
  CHECK(lora.trainable_params.count() - fa.trainable_params.count() == a);
  CHECK(fa.buckets.adapter_weights == lora.buckets.adapter_weights);
  CHECK(lora.buckets.grads - fa.buckets.grads == bytes(2 * a));
  CHECK(lora.buckets.optimizer - fa.buckets.optimizer == bytes(8 * a));
  CHECK(fa.trainable_tensors == 7 * 32);  // lora_B only
}
