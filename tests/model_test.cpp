// SPDX-License-Identifier: MIT
// Exact parameter counts from shapes (model-configs.md), the inventory, and shape validation.
#include <vector>

#include <headroom/flops.hpp>
#include <headroom/model.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

// Checked at compile time too: the counts are constexpr arithmetic.
static_assert(parameter_count(llama_3_1_8b) == params(8'030'261'248));
static_assert(parameter_count(qwen3_4b) == params(4'022'468'096));
static_assert(query_width(qwen3_4b) == 4096 && qwen3_4b.hidden_size == 2560);

TEST_CASE("Every reference model's parameter count matches its published total", "[model]") {
  struct row {
    const char* name;
    model_shape shape;
    std::uint64_t published;
  };
  // Totals from ../shared/reference/model-configs.md, computed there from config.json shapes and
  // consistent with the model cards (Llama-3.2-3B also matches the PEFT benchmark's count).
  const row rows[] = {
      {"Llama-3.2-1B", llama_3_2_1b, 1'235'814'400},
      {"Llama-3.2-3B", llama_3_2_3b, 3'212'749'824},
      {"Llama-3.1-8B", llama_3_1_8b, 8'030'261'248},
      {"Llama-3.1-70B", llama_3_1_70b, 70'553'706'496},
      {"Llama-2-7B", llama_2_7b, 6'738'415'616},
      {"Mistral-7B-v0.3", mistral_7b_v03, 7'248'023'552},
      {"Gemma-2-2B", gemma_2_2b, 2'614'341'888},
      {"Qwen3-1.7B", qwen3_1_7b, 1'720'574'976},
      {"Qwen3-4B", qwen3_4b, 4'022'468'096},
      {"Qwen3-8B", qwen3_8b, 8'190'735'360},
      {"Qwen3-14B", qwen3_14b, 14'768'307'200},
      {"Qwen3-32B", qwen3_32b, 32'762'123'264},
      {"Qwen3-30B-A3B", qwen3_30b_a3b, 30'532'122'624},
  };
  for (const row& r : rows) {
    INFO(r.name);
    CHECK(parameter_count(r.shape).count() == r.published);
  }
}

TEST_CASE("Llama-3.2-1B has 973.1M non-embedding parameters: the tied head is counted once", "[model]") {
  // embed_tokens 128256 x 2048 = 262,668,288; model card: 1.24B total, 973.1M non-embedding.
  const std::uint64_t embedding = 128'256ull * 2048;
  CHECK(parameter_count(llama_3_2_1b).count() - embedding == 973'146'112);
  model_shape untied = llama_3_2_1b;
  untied.tie_word_embeddings = false;
  CHECK(parameter_count(untied).count() == parameter_count(llama_3_2_1b).count() + embedding);
}

TEST_CASE("The inventory uses the real query width and GQA K/V widths", "[model]") {
  const param_inventory inv = parameter_inventory(qwen3_32b);
  std::uint64_t q_rows = 0, k_rows = 0, o_cols = 0, qk_norms = 0;
  for (const param_tensor& t : inv) {
    if (t.module == module_name::q_proj && t.role == tensor_role::linear_weight) q_rows = t.rows;
    if (t.module == module_name::k_proj && t.role == tensor_role::linear_weight) k_rows = t.rows;
    if (t.module == module_name::o_proj) o_cols = t.cols;
    if (t.module == module_name::norm && t.rows == 128) qk_norms = t.copies;
  }
  CHECK(q_rows == 64 * 128);  // 8192, not hidden 5120
  CHECK(k_rows == 8 * 128);
  CHECK(o_cols == 8192);
  CHECK(qk_norms == 2 * 64);  // q_norm and k_norm in each of 64 layers
}

TEST_CASE("MoE: every expert is counted, plus the router", "[model]") {
  // Qwen3-30B-A3B per layer: attention 18,874,368; q/k norms 256; 2 norms 4,096; router
  // 2048 x 128 = 262,144; experts 128 x 3 x 2048 x 768 = 603,979,776.
  std::uint64_t experts = 0, router = 0;
  for (const param_tensor& t : parameter_inventory(qwen3_30b_a3b)) {
    if (t.module == module_name::gate_proj) experts = t.copies;
    if (t.module == module_name::router) router = t.total().count();
  }
  CHECK(experts == 48 * 128);
  CHECK(router == 48ull * 2048 * 128);
}

TEST_CASE("Biases: Qwen2-style qkv bias and Llama attention_bias/mlp_bias add exactly their vectors",
          "[model]") {
  model_shape m = llama_3_1_8b;
  const std::uint64_t base = parameter_count(m).count();
  m.attention_bias = true;  // q (4096) + k (1024) + v (1024) per layer
  CHECK(parameter_count(m).count() == base + 32ull * (4096 + 1024 + 1024));
  m.o_proj_bias = true;
  m.mlp_bias = true;  // o (4096), gate and up (14336 each), down (4096)
  CHECK(parameter_count(m).count() == base + 32ull * (4096 + 1024 + 1024 + 4096 + 14336 * 2 + 4096));
}

TEST_CASE("Shared experts add a SwiGLU of their width and a 1-output gate per layer", "[model]") {
  model_shape m = qwen3_30b_a3b;
  const std::uint64_t base = parameter_count(m).count();
  m.shared_expert_intermediate_size = 5632;
  CHECK(parameter_count(m).count() == base + 48ull * (3 * 2048 * 5632 + 2048));
}

TEST_CASE("The inventory's parts sum to the parameter count for every shape", "[model][property]") {
  for (const model_shape& m : {llama_3_2_1b, llama_3_1_70b, gemma_2_2b, qwen3_4b, qwen3_30b_a3b}) {
    std::uint64_t sum = 0;
    for (const param_tensor& t : parameter_inventory(m)) {
      CHECK(t.copies > 0);
      sum += t.numel() * t.copies;
    }
    CHECK(sum == parameter_count(m).count());
  }
}

TEST_CASE("Invalid shapes are rejected with the field named", "[model][errors]") {
  auto with = [](auto change) {
    model_shape m = llama_3_1_8b;
    change(m);
    return m;
  };
  require_input_error([&] { (void)parameter_count(with([](model_shape& m) { m.hidden_size = 0; })); },
                      "hidden_size", "positive");
  require_input_error([&] { (void)parameter_count(with([](model_shape& m) { m.num_key_value_heads = 5; })); },
                      "num_key_value_heads", "divide");
  require_input_error([&] { (void)parameter_count(with([](model_shape& m) { m.vocab_size = 1ull << 40; })); },
                      "vocab_size", "absurd");
  require_input_error(
      [&] { (void)parameter_count(with([](model_shape& m) { m.num_hidden_layers = 1ull << 30; })); },
      "num_hidden_layers", "absurd");
  require_input_error(
      [&] {
        (void)parameter_count(with([](model_shape& m) {
          m.num_experts = 8;
          m.num_experts_per_tok = 9;
          m.moe_intermediate_size = 1024;
        }));
      },
      "num_experts_per_tok");
  require_input_error([&] { (void)parameter_count(with([](model_shape& m) { m.num_experts_per_tok = 2; })); },
                      "num_experts_per_tok", "without num_experts");
}

// Published counts (tests/data/configs/README.md, ../shared/reference/real-configs/SOURCES.md): OLMo-2's q/k
// norms span a·head_dim and g·head_dim (2·4,096 per layer, not 2·128); Granite is Llama-shaped with a tied
// head.
static_assert(parameter_count(olmo2_7b).count() == 7'298'617'344);
static_assert(parameter_count(granite_8b).count() == 8'170'864'640);

TEST_CASE("OLMo-2: q_norm and k_norm over the projections' full width, two output norms per layer",
          "[model]") {
  std::uint64_t norm_values = 0;
  for (const param_tensor& t : parameter_inventory(olmo2_7b))
    if (t.module == module_name::norm) norm_values += t.total().count();
  // per layer: post_attention and post_feedforward (d each), q_norm (32·128), k_norm (32·128); the final norm
  CHECK(norm_values == 32ull * (2 * 4096 + 32 * 128 + 32 * 128) + 4096);
  model_shape per_head = olmo2_7b;
  per_head.qk_norm =
      qk_norm_kind::per_head;  // Qwen3-style per-head norms would count 2·(4,096 − 128)·32 fewer
  CHECK(parameter_count(olmo2_7b).count() - parameter_count(per_head).count() == 2ull * (4096 - 128) * 32);
  model_shape bad = olmo2_7b;
  bad.norms_per_layer = 4;
  test::require_input_error([&] { (void)parameter_count(bad); }, "norms_per_layer", "post_norms");
}

// gpt-oss-20b, hand-derived in ../shared/reference/real-configs/SOURCES.md: 2·201,088·2,880 (embedding, head)
// + 24·(attention 26,542,080 + biases 8,000 + sinks 64 + 32 experts·(2·2,880·2,880 + 5,760 + 2,880·2,880 +
// 2,880) + router 32·2,880 + 32 + norms 2·2,880) + 2,880.
static_assert(parameter_count(gpt_oss_20b).count() == 20'914'757'184);

TEST_CASE("gpt-oss: sinks, biased router and experts, and 3-D expert tensors that are not nn.Linear",
          "[model]") {
  std::uint64_t sinks = 0, experts = 0, not_linear = 0;
  for (const param_tensor& t : parameter_inventory(gpt_oss_20b)) {
    if (t.module == module_name::sinks) sinks += t.total().count();
    if (t.module == module_name::experts) experts += t.total().count();
    if (!t.nn_linear) not_linear += t.total().count();
  }
  CHECK(sinks == 24ull * 64);
  CHECK(experts == 24ull * 32 * (2 * 2880 * 2880 + 2 * 2880 + 2880 * 2880 + 2880));
  CHECK(not_linear == experts + 24ull * (32 * 2880 + 32));  // and the router's weight and bias
  // model.parameters() order holds each expert tensor whole: one (E·2f) × d gate_up_proj per layer
  std::uint64_t gate_up = 0, tensors = 0;
  visit_parameters_in_order(gpt_oss_20b, [&](const param_tensor& t) {
    if (t.module == module_name::experts && t.numel() == 32ull * 2 * 2880 * 2880) ++gate_up;
    ++tensors;
  });
  CHECK(gate_up == 24);
  CHECK(tensors == 1 + 24 * (8 + 1 + 6 + 2) + 1 + 1);  // embedding; q/k/v/o + biases, sinks, mlp, 2 norms
  // The active count (k of E experts) is 4.19B; the card's 3.6B leaves out the 0.58B embedding table.
  CHECK(active_parameter_count(gpt_oss_20b).count() == 4'187'440'704);
  model_shape bad = gpt_oss_20b;
  bad.shared_expert_intermediate_size = 128;
  test::require_input_error([&] { (void)parameter_count(bad); }, "experts", "no shared expert");
}

// StarCoder2-3B (tests/data/configs/README.md): 30·(q 3,072² + k, v 2·3,072·256 + o 3,072² with their biases,
// c_fc 3,072·12,288 + 12,288, c_proj 12,288·3,072 + 3,072, two LayerNorms 2·2·3,072) + the tied 49,152·3,072
// table + the final LayerNorm 2·3,072; the model card's 3.03B.
static_assert(parameter_count(starcoder2_3b).count() == 3'030'371'328);

TEST_CASE("StarCoder2: LayerNorms with bias, biased linears and a two-matrix GELU MLP", "[model]") {
  std::uint64_t norm_values = 0, mlp = 0, biases = 0, tensors = 0;
  for (const param_tensor& t : parameter_inventory(starcoder2_3b)) {
    if (t.module == module_name::norm) norm_values += t.total().count();
    if (t.module == module_name::c_fc || t.module == module_name::c_proj) mlp += t.total().count();
    if (t.role == tensor_role::bias) biases += t.total().count();
  }
  CHECK(norm_values == 30ull * 2 * 2 * 3072 + 2 * 3072);  // weight and bias per LayerNorm
  CHECK(mlp == 30ull * (2 * 3072 * 12288 + 12288 + 3072));
  CHECK(biases == 30ull * (3072 + 2 * 256 + 3072 + 12288 + 3072));
  // model.parameters(): per layer q, k, v, o, c_fc, c_proj (weight then bias), then two norms (weight, bias)
  visit_parameters_in_order(starcoder2_3b, [&](const param_tensor&) { ++tensors; });
  CHECK(tensors == 1 + 30 * (12 + 4) + 2);
  // Nothing is routed or adapted by default; all-linear includes c_fc and c_proj.
  CHECK(active_parameter_count(starcoder2_3b) == parameter_count(starcoder2_3b));
  CHECK(lora_targets::all_linear().contains(module_name::c_fc));
  CHECK(parse_lora_targets("c_fc,c_proj") == lora_targets{}.add(module_name::c_fc).add(module_name::c_proj));
  model_shape bad = starcoder2_3b;
  bad.qk_norm = qk_norm_kind::per_head;
  test::require_input_error([&] { (void)parameter_count(bad); }, "norm", "q/k norms");
  bad = starcoder2_3b;
  bad.num_experts = 8;
  bad.num_experts_per_tok = 2;
  bad.moe_intermediate_size = 64;
  test::require_input_error([&] { (void)parameter_count(bad); }, "mlp", "no experts");
}

// Pythia (Biderman et al. 2023, arXiv 2304.01373, Table 1): 12·d² + 13·d per layer (query_key_value 3d² + 3d,
// dense d² + d, dense_h_to_4h 4d² + 4d, dense_4h_to_h 4d² + d, two LayerNorms 4d), 2·V·d for embed_in and
// embed_out, 2·d for the final LayerNorm.
static_assert(parameter_count(pythia_160m).count() == 162'322'944);
static_assert(parameter_count(pythia(2048, 16, 8, 50304)).count() == 1'011'781'632);  // Pythia-1B
static_assert(parameter_count(pythia_6_9b).count() == 6'857'302'016);
static_assert(parameter_count(pythia(5120, 36, 40, 50688)).count() == 11'846'072'320);  // Pythia-12B

TEST_CASE("GPT-NeoX: query_key_value, dense, dense_h_to_4h and dense_4h_to_h, norms first in each layer",
          "[model]") {
  std::uint64_t qkv = 0, mlp = 0;
  for (const param_tensor& t : parameter_inventory(pythia_160m)) {
    if (t.module == module_name::query_key_value) qkv += t.total().count();
    if (t.module == module_name::dense_h_to_4h || t.module == module_name::dense_4h_to_h)
      mlp += t.total().count();
  }
  CHECK(qkv == 12ull * (3 * 768 * 768 + 3 * 768));
  CHECK(mlp == 12ull * (2 * 768 * 3072 + 3072 + 768));
  // model.parameters(): embed_in; per layer the two LayerNorms' weight and bias, then query_key_value, dense,
  // dense_h_to_4h and dense_4h_to_h (weight then bias); final_layer_norm; embed_out.
  std::vector<module_name> order;
  visit_parameters_in_order(pythia_160m, [&](const param_tensor& t) { order.push_back(t.module); });
  REQUIRE(order.size() == 1 + 12 * (4 + 8) + 2 + 1);
  CHECK(order[1] == module_name::norm);
  CHECK(order[5] == module_name::query_key_value);
  CHECK(order[12] == module_name::dense_4h_to_h);
  CHECK(order.back() == module_name::lm_head);
  CHECK(parse_lora_targets("query_key_value") == lora_targets{}.add(module_name::query_key_value));
  CHECK(parse_lora_targets("embed_out") == lora_targets{}.add(module_name::lm_head));  // GPT-NeoX's head
  CHECK(lora_targets_text(parse_lora_targets("embed_out,dense")) == "lm_head,dense");
  model_shape bad = pythia_160m;
  bad.rotary_dim = 15;
  test::require_input_error([&] { (void)parameter_count(bad); }, "rotary_dim", "even");
  bad = pythia_160m;
  bad.norm = norm_kind::rms;
  test::require_input_error([&] { (void)parameter_count(bad); }, "residual", "parallel");
}

// Cohere, hand-derived from the shapes (tests/data/configs/README.md): Command-R v01 40·(4·8,192² +
// 3·8,192·22,528 + 8,192) + 256,000·8,192 (tied) + 8,192, the card's 35B; Command-R+ 64·(2·12,288² +
// 2·12,288·1,024 + 3·12,288·33,792 + 12,288 + (96 + 8)·128) + 256,000·12,288 + 12,288, the card's 104B.
static_assert(parameter_count(command_r).count() == 34'980'831'232);
static_assert(parameter_count(command_r_plus).count() == 103'810'674'688);

TEST_CASE("Cohere: one norm per block without a bias, per-head q/k norm weights", "[model]") {
  std::uint64_t norm_values = 0, tensors = 0;
  for (const param_tensor& t : parameter_inventory(command_r_plus))
    if (t.module == module_name::norm) norm_values += t.total().count();
  CHECK(norm_values == 64ull * (12288 + 96 * 128 + 8 * 128) + 12288);
  // model.parameters(): per layer q, k, v, o, q_norm, k_norm, gate, up, down, input_layernorm
  visit_parameters_in_order(command_r_plus, [&](const param_tensor&) { ++tensors; });
  CHECK(tensors == 1 + 64 * 10 + 1);
  model_shape bad = command_r;
  bad.residual = residual_layout::sequential;
  test::require_input_error([&] { (void)parameter_count(bad); }, "norm", "parallel");
}

// DeepSeek-V3 (arXiv 2412.19437: 671B parameters, 37B activated per token; its multi-token-prediction module
// is not part of the model transformers builds) and Kimi-K2 (1T, 32B activated), from the shapes in
// shapes.hpp.
static_assert(parameter_count(deepseek_v3).count() == 671'026'404'352);
static_assert(active_parameter_count(deepseek_v3).count() == 37'552'282'624);
static_assert(parameter_count(kimi_k2).count() == 1'026'408'209'408);

TEST_CASE("DeepSeek-V3: MLA projections, dense first layers, routed and ungated shared experts", "[model]") {
  const model_shape& m = deepseek_v3;
  std::uint64_t q_a = 0, q_b = 0, kv_a = 0, kv_b = 0, o = 0, norms = 0, router = 0, routed = 0, dense_mlp = 0;
  for (const param_tensor& t : parameter_inventory(m)) {
    const std::uint64_t n = t.total().count();
    if (t.module == module_name::q_a_proj) q_a += n;
    if (t.module == module_name::q_b_proj) q_b += n;
    if (t.module == module_name::kv_a_proj_with_mqa) kv_a += n;
    if (t.module == module_name::kv_b_proj) kv_b += n;
    if (t.module == module_name::o_proj) o += n;
    if (t.module == module_name::norm) norms += n;
    if (t.module == module_name::router) {
      router += n;
      CHECK_FALSE(t.nn_linear);  // DeepseekV3TopkRouter.weight is an nn.Parameter
    }
    if (t.routed_expert) routed += n;
    if (t.module == module_name::gate_proj && !t.routed_expert && t.copies == 3) dense_mlp += n;
    CHECK(t.module != module_name::shared_expert_gate);  // DeepSeek adds its shared experts ungated
  }
  CHECK(q_a == 61ull * 7168 * 1536);
  CHECK(q_b == 61ull * 1536 * 128 * 192);                  // q_lora_rank → heads·(qk_nope + qk_rope)
  CHECK(kv_a == 61ull * 7168 * (512 + 64));                // the compressed K/V and the shared RoPE key
  CHECK(kv_b == 61ull * 512 * 128 * (128 + 128));          // kv_lora_rank → heads·(qk_nope + v_head_dim)
  CHECK(o == 61ull * 128 * 128 * 7168);                    // heads·v_head_dim → hidden
  CHECK(norms == 61ull * (2 * 7168 + 1536 + 512) + 7168);  // two per layer, q_a and kv_a norms, the final one
  CHECK(router == 58ull * 256 * 7168);                     // the 58 MoE layers only
  CHECK(routed == 58ull * 256 * 3 * 7168 * 2048);
  CHECK(dense_mlp == 3ull * 18432 * 7168);  // first_k_dense_replace = 3
  // Two runs of uniform layers: 3 dense and 58 MoE ones.
  const layer_group_list runs = layer_groups(m);
  REQUIRE(runs.size == 2);
  CHECK((runs.items[0].layers == 3 && runs.items[1].layers == 58));
  CHECK((!is_moe(runs.items[0].shape) && is_moe(runs.items[1].shape)));
  CHECK(layer_parameter_count(runs.items[0].shape).count() == 187'107'328 + 2 * 7168 + 3ull * 7168 * 18432);
  CHECK(layer_parameter_count(runs.items[1].shape).count() ==
        187'107'328 + 2 * 7168 + 257ull * 3 * 7168 * 2048 + 256 * 7168);
  // model.parameters(): embed; per layer q_a, q_a_layernorm, q_b, kv_a, kv_a_layernorm, kv_b, o, then the MLP
  // (3 tensors, or 256 experts · 3, the router, the shared experts' 3) and two norms; final norm, lm_head.
  std::uint64_t tensors = 0, values = 0;
  visit_parameters_in_order(m, [&](const param_tensor& t) {
    ++tensors;
    values += t.numel();
  });
  CHECK(tensors == 1 + 3 * (7 + 3 + 2) + 58 * (7 + 256 * 3 + 1 + 3 + 2) + 2);
  CHECK(values == parameter_count(m).count());
  // Per token: the linears of every layer, k = 8 of the 256 experts and the shared one in the MoE layers.
  const double attention_linears = 187'105'280;
  CHECK(detail::macs_per_token(m, full_ft).forward ==
        3 * (attention_linears + 3 * 7168.0 * 18432) +
            58 * (attention_linears + 9 * 3 * 7168.0 * 2048 + 256 * 7168.0));
  CHECK(lora_targets::all_linear().contains(module_name::kv_b_proj));
  CHECK(parse_lora_targets("q_a_proj,kv_a_proj_with_mqa") ==
        lora_targets{}.add(module_name::q_a_proj).add(module_name::kv_a_proj_with_mqa));
}

TEST_CASE("DeepSeek shapes that cannot exist are rejected with the field named", "[model][errors]") {
  model_shape bad = deepseek_v3;
  bad.qk_rope_head_dim = 192;  // the whole q/k head rotated: no qk_nope part
  test::require_input_error([&] { (void)parameter_count(bad); }, "qk_rope_head_dim", "smaller");
  bad = deepseek_v3;
  bad.num_key_value_heads = 8;
  test::require_input_error([&] { (void)parameter_count(bad); }, "num_key_value_heads", "MLA");
  bad = deepseek_v3;
  bad.dense_layers = 61;
  test::require_input_error([&] { (void)parameter_count(bad); }, "first_k_dense_replace", "smaller");
  bad = deepseek_v3;
  bad.attention = attention_layout::q_k_v;  // q_lora_rank without MLA
  test::require_input_error([&] { (void)parameter_count(bad); }, "q_lora_rank", "kv_lora_rank");
  bad = deepseek_v3;
  bad.qk_norm = qk_norm_kind::per_head;
  test::require_input_error([&] { (void)parameter_count(bad); }, "kv_lora_rank", "DeepSeek's block");
  model_shape llama = llama_3_1_8b;
  llama.dense_layers = 2;
  test::require_input_error([&] { (void)parameter_count(llama); }, "first_k_dense_replace", "DeepSeek");
  test::require_input_error([&] { (void)layer_gemms(deepseek_v3, full_ft); }, "layer_gemms", "layer_groups");
}

// Meta's model card: 109B total, 17B active (Scout); 400B, 17B (Maverick) — the vision tower adds 0.87B.
static_assert(parameter_count(llama4_scout).count() == 107'769'861'120);
static_assert(active_parameter_count(llama4_scout).count() == 17'172'894'720);
static_assert(parameter_count(llama4_maverick).count() == 400'711'848'960);

TEST_CASE("Llama-4: 3-D experts on interleaved layers, a shared expert, RoPE and NoPE layer groups",
          "[model]") {
  const model_shape& m = llama4_maverick;
  std::uint64_t experts = 0, router = 0, dense_mlp = 0, shared = 0;
  for (const param_tensor& t : parameter_inventory(m)) {
    const std::uint64_t n = t.total().count();
    if (t.module == module_name::experts) {
      experts += n;
      CHECK((t.routed_expert && !t.nn_linear));  // Llama4TextExperts: nn.Parameter (E, d, 2f), (E, f, d)
    }
    if (t.module == module_name::router) {
      router += n;
      CHECK_FALSE(t.nn_linear);  // priced neither adapted nor quantised: its forward returns a pair
    }
    if (t.module == module_name::gate_proj)
      (t.copies == 24 && t.cols == 5120 && t.rows == 16384 ? dense_mlp : shared) += n;
  }
  CHECK(experts == 24ull * 128 * 3 * 5120 * 8192);
  CHECK(router == 24ull * 128 * 5120);
  CHECK(dense_mlp == 24ull * 16384 * 5120);
  CHECK(shared == 24ull * 8192 * 5120);
  // One 3-D tensor per expert weight and layer: the optimizer's step counters and for-loop steps go per
  // tensor.
  for (const param_tensor& t : parameter_inventory(m))
    if (t.module == module_name::experts) CHECK(stored_as(m, t).count == 24);
  // Groups: layer 0 is dense with RoPE; MoE on layers 1, 3, …; NoPE on layers 3, 7, … (all of them MoE).
  const layer_group_list groups = layer_groups(m);
  REQUIRE(groups.size == 3);
  CHECK(
      (groups.items[0].layers == 24 && !is_moe(groups.items[0].shape) && !skips_rope(groups.items[0].shape)));
  CHECK(
      (groups.items[1].layers == 12 && is_moe(groups.items[1].shape) && !skips_rope(groups.items[1].shape)));
  CHECK((groups.items[2].layers == 12 && is_moe(groups.items[2].shape) && skips_rope(groups.items[2].shape)));
  std::uint64_t total = model_level_parameters(m);
  for (const layer_group& g : groups) total += g.layers * layer_parameter_count(g.shape).count();
  CHECK(total == parameter_count(m).count());
  const layer_group_list scout = layer_groups(llama4_scout);
  REQUIRE(scout.size == 2);
  CHECK((scout.items[0].layers == 36 && scout.items[1].layers == 12 && skips_rope(scout.items[1].shape)));
  // model.parameters(): per MoE layer q, k, v, o, experts (gate_up_proj, down_proj), router, the shared
  // expert's 3, two norms; per dense layer q, k, v, o, gate, up, down, two norms.
  std::uint64_t tensors = 0, values = 0;
  visit_parameters_in_order(m, [&](const param_tensor& t) {
    ++tensors;
    values += t.numel();
  });
  CHECK(tensors == 1 + 24 * (4 + 3 + 2) + 24 * (4 + 2 + 1 + 3 + 2) + 2);
  CHECK(values == parameter_count(m).count());
  // transformers runs every expert on every token: the MoE layers' matmuls count E expert passes.
  const double attention = 2 * 5120.0 * 5120 + 2 * 5120.0 * 1024;
  CHECK(detail::macs_per_token(m, full_ft).forward ==
        24 * (attention + 3 * 5120.0 * 16384) +
            24 * (attention + (128 + 1) * 3 * 5120.0 * 8192 + 128 * 5120.0));
}

TEST_CASE("Llama-4 shapes that cannot exist are rejected with the field named", "[model][errors]") {
  // Each: a shape with one field changed, and the field and words its error names.
  const auto refused = [](model_shape m, auto change, const char* field, const char* words) {
    change(m);
    test::require_input_error([&] { (void)parameter_count(m); }, field, words);
  };
  refused(
      llama4_maverick, [](model_shape& m) { m.moe_layer_step = 49; }, "interleave_moe_layer_step", "exceeds");
  refused(
      llama4_maverick, [](model_shape& m) { m.shared_expert_intermediate_size = 0; }, "experts",
      "shared expert");
  refused(
      llama4_scout, [](model_shape& m) { m.qk_norm = qk_norm_kind::per_head; }, "use_qk_norm", "excludes");
  refused(
      llama_3_1_8b, [](model_shape& m) { m.nope_layer_interval = 4; }, "no_rope_layer_interval", "Llama-4");
  refused(
      llama_3_1_8b, [](model_shape& m) { m.moe_layer_step = 2; }, "interleave_moe_layer_step", "Llama-4");
  test::require_input_error([&] { (void)layer_gemms(llama4_maverick, full_ft); }, "layer_gemms",
                            "layer_groups");
}
