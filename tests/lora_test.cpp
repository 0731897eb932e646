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

namespace {
constexpr lora_config with_peft(peft_type t, lora_config c = {}) {
  set_peft_type(c, t);
  return c;
}
constexpr lora_config ia3_default = [] {
  lora_config c = with_peft(peft_type::ia3);
  c.targets = lora_targets{}.add(module_name::k_proj).add(module_name::v_proj).add(module_name::down_proj);
  return c;
}();
}  // namespace

// IA3 on PEFT's Llama targets: k_proj and v_proj scale their 1,024 outputs, down_proj its 14,336 inputs.
static_assert(adapter_count(llama_3_1_8b, ia3_default) == params(32 * (1024 + 1024 + 14336)));

// Prefix tuning at P = 20: 20 x 2·32·1,024 keys and values (token_dim is head_dim x kv_heads under GQA);
// P-tuning at P = 20: the embedding and three 4,096-wide linears with biases.
static_assert(adapter_count(llama_3_1_8b, [] {
                lora_config c = with_peft(peft_type::prefix_tuning);
                c.virtual_tokens = 20;
                return c;
              }()) == params(1'310'720));
static_assert(adapter_count(llama_3_1_8b, [] {
                lora_config c = with_peft(peft_type::p_tuning);
                c.virtual_tokens = 20;
                return c;
              }()) == params(50'425'856));

TEST_CASE("IA3, VeRA, LN tuning and prompt tuning: stored and trainable values from shapes", "[lora]") {
  constexpr model_spec exact8{llama_3_1_8b, 0};
  const std::uint64_t L = 32, d = 4096, kv = 1024, ff = 14336;
  training_setup s = with_method(training_method::lora);
  SECTION("IA3: one vector per targeted linear, its input width on a feedforward module") {
    s.lora = ia3_default;
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(e.adapter_params.count() == 524'288);
    CHECK(e.trainable_params.count() == 524'288);
    CHECK(e.trainable_tensors == 3 * L);
    CHECK(e.largest_trainable.count() == ff);
    s.lora.feedforward = lora_targets{};  // down_proj scaled on its output instead: 4,096 values
    CHECK(adapter_count(llama_3_1_8b, s.lora).count() == L * (kv + kv + d));
  }
  SECTION("VeRA: lambda_d (r) and lambda_b (out) per linear, plus the shared frozen projections") {
    s.lora = with_peft(peft_type::vera);
    s.lora.rank = 256;  // VeraConfig's default r
    const std::uint64_t vectors = L * (7 * 256 + (d + kv + kv + d + ff + ff + d));
    const std::uint64_t projections = 256 * (ff + ff);  // vera_A: r x widest in; vera_B: widest out x r
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(e.trainable_params.count() == vectors);
    CHECK(e.adapter_params.count() == vectors + projections);
    CHECK(e.buckets.adapter_weights == bytes(2 * (vectors + projections)));
    CHECK(e.buckets.grads == bytes(2 * vectors));
    CHECK(e.trainable_tensors == 2 * 7 * L);
  }
  SECTION("LN tuning: a trainable copy of every norm, the final one included") {
    s.lora = with_peft(peft_type::ln_tuning);
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(e.trainable_params.count() == (2 * L + 1) * d);
    CHECK(e.trainable_tensors == 2 * L + 1);
  }
  SECTION("P-tuning: the embedding and the MLP head h -> E -> E -> h, all fp32 and trainable") {
    s.lora = with_peft(peft_type::p_tuning);
    s.lora.virtual_tokens = 20;
    s.precision = precision_route::bf16_pure;
    const std::uint64_t values = 20 * d + 3 * (d * d + d);  // E = token_dim = hidden_size by default
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(values == 50'425'856);
    CHECK(e.trainable_params.count() == values);
    CHECK(e.buckets.adapter_weights == bytes(4 * values));
    CHECK(e.trainable_tensors == 7);  // embedding, three weights, three biases
    CHECK(e.largest_trainable.count() == d * d);
    s.lora.encoder_hidden_size = 512;
    CHECK(adapter_count(llama_3_1_8b, s.lora).count() ==
          20 * d + (d * 512 + 512) + (512 * 512 + 512) + (512 * d + d));
  }
  SECTION("Prefix tuning: P x 2L·kv keys and values, or an embedding through kv -> E -> 2L·kv") {
    s.lora = with_peft(peft_type::prefix_tuning);
    s.lora.virtual_tokens = 20;
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(e.trainable_params.count() == 20 * 2 * L * kv);  // token_dim = head_dim x kv_heads (GQA)
    CHECK(e.trainable_params.count() == 1'310'720);
    CHECK(e.trainable_tensors == 1);
    s.lora.prefix_projection = true;  // E = token_dim = 1,024 by default
    CHECK(adapter_count(llama_3_1_8b, s.lora).count() ==
          20 * kv + (kv * kv + kv) + (kv * 2 * L * kv + 2 * L * kv));
    CHECK(adapter_count(llama_3_1_8b, s.lora).count() == 68'244'480);
  }
  SECTION("Prompt tuning: num_virtual_tokens x hidden_size, fp32 whatever the base dtype") {
    s.lora = with_peft(peft_type::prompt_tuning);
    s.lora.virtual_tokens = 20;
    s.precision = precision_route::bf16_pure;
    const static_estimate e = estimate_static(exact8, s, params_basis::exact);
    CHECK(e.trainable_params.count() == 20 * d);
    CHECK(e.buckets.adapter_weights == bytes(4 * 20 * d));
    CHECK(e.buckets.grads == bytes(4 * 20 * d));
    CHECK(e.buckets.optimizer == bytes(8 * 20 * d) + optimizer_step_counter_bytes(s.optimizer, 1));
    CHECK(e.trainable_tensors == 1);
  }
}

TEST_CASE("PEFT methods: bad combinations are errors naming the field", "[lora]") {
  lora_config c = with_peft(peft_type::prompt_tuning);
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "num_virtual_tokens", "no default");
  c = with_peft(peft_type::ia3);
  c.targets = parse_lora_targets("k_proj,v_proj");  // feedforward down_proj is not among them
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "feedforward_modules", "subset");
  c = with_peft(peft_type::ia3);
  c.dropout = 0.1;
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "lora_dropout", "LoRA and VeRA only");
  c = with_peft(peft_type::vera);
  c.use_dora = true;
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "use_dora", "LoRA variants");
  c = with_peft(peft_type::prefix_tuning);
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "num_virtual_tokens", "no default");
  c.virtual_tokens = 8;
  c.encoder_hidden_size = max_encoder_hidden_size + 1;
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "encoder_hidden_size", "absurdly");
  c = with_peft(peft_type::prompt_tuning);
  c.virtual_tokens = 8;
  c.encoder_hidden_size = 64;
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "encoder_hidden_size", "P-tuning");
  c.encoder_hidden_size = 0;
  c.prefix_projection = true;
  require_input_error([&] { (void)adapter_count(llama_3_1_8b, c); }, "prefix_projection", "prefix tuning");
  CHECK(is_unmodelled_peft_type("loha"));
  CHECK_FALSE(is_unmodelled_peft_type("prefix-tuning"));
  CHECK_FALSE(is_unmodelled_peft_type("lora"));  // "adalora" contains it; the list is matched entry by entry
  for (const auto& n : peft_type_names) CHECK(peft_type_of(with_peft(n.value)) == n.value);
}
