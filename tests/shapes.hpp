// SPDX-License-Identifier: MIT
// constexpr shapes of the reference models, written from ../shared/reference/model-configs.md
// (their config.json values), so code and the JSON presets can be checked against each other;
// and the training setups the tests share.
#pragma once

#include <string_view>

#include <headroom/activations/config.hpp>
#include <headroom/memory.hpp>
#include <headroom/model.hpp>

namespace headroom::test {

constexpr model_shape dense(std::uint64_t d, std::uint64_t ff, std::uint64_t layers, std::uint64_t heads,
                            std::uint64_t kv, std::uint64_t head_dim, std::uint64_t vocab, bool tied) {
  model_shape m;
  m.hidden_size = d;
  m.intermediate_size = ff;
  m.num_hidden_layers = layers;
  m.num_attention_heads = heads;
  m.num_key_value_heads = kv;
  m.head_dim = head_dim;
  m.vocab_size = vocab;
  m.tie_word_embeddings = tied;
  return m;
}
constexpr model_shape with_qk_norm(model_shape m) {
  m.qk_norm = qk_norm_kind::per_head;
  return m;
}
/// Routed experts: E of width f, k per token.
constexpr model_shape with_experts(model_shape m, std::uint64_t experts, std::uint64_t per_token,
                                   std::uint64_t width) {
  m.num_experts = experts;
  m.num_experts_per_tok = per_token;
  m.moe_intermediate_size = width;
  return m;
}

constexpr model_shape llama_3_2_1b = dense(2048, 8192, 16, 32, 8, 64, 128256, true);
constexpr model_shape llama_3_2_3b = dense(3072, 8192, 28, 24, 8, 128, 128256, true);
constexpr model_shape llama_3_1_8b = dense(4096, 14336, 32, 32, 8, 128, 128256, false);
constexpr model_shape llama_3_1_70b = dense(8192, 28672, 80, 64, 8, 128, 128256, false);
constexpr model_shape llama_2_7b = dense(4096, 11008, 32, 32, 32, 128, 32000, false);
constexpr model_shape mistral_7b_v03 = dense(4096, 14336, 32, 32, 8, 128, 32768, false);
constexpr model_shape qwen3_1_7b = with_qk_norm(dense(2048, 6144, 28, 16, 8, 128, 151936, true));
constexpr model_shape qwen3_4b = with_qk_norm(dense(2560, 9728, 36, 32, 8, 128, 151936, true));
/// The course's two models with their nominal parameter counts (the 8B and 4B of their names).
constexpr model_spec llama8{llama_3_1_8b, 8'000'000'000};
constexpr model_spec qwen4{qwen3_4b, 4'000'000'000};
constexpr model_shape qwen3_8b = with_qk_norm(dense(4096, 12288, 36, 32, 8, 128, 151936, false));
constexpr model_shape qwen3_14b = with_qk_norm(dense(5120, 17408, 40, 40, 8, 128, 151936, false));
constexpr model_shape qwen3_32b = with_qk_norm(dense(5120, 25600, 64, 64, 8, 128, 151936, false));

constexpr model_shape gemma_2_2b_shape() {
  model_shape m = dense(2304, 9216, 26, 8, 4, 256, 256000, true);
  m.norms_per_layer = 4;
  m.norm = norm_kind::gemma_rms;
  m.scaled_embeddings = true;                                   // GemmaModel: embeddings · sqrt(hidden_size)
  m.attn_logit_softcapping = m.final_logit_softcapping = true;  // Gemma2Config: 50.0 and 30.0
  return m;
}
constexpr model_shape gemma_2_2b = gemma_2_2b_shape();

constexpr model_shape qwen3_30b_a3b_shape() {
  return with_experts(with_qk_norm(dense(2048, 0, 48, 32, 4, 128, 151936, false)), 128, 8, 768);
}
constexpr model_shape qwen3_30b_a3b = qwen3_30b_a3b_shape();

// OLMo-2-1124-7B and Granite-3.3-8B, from their config.json files (tests/data/configs, SOURCES in its
// README).
constexpr model_shape olmo2_7b_shape() {
  model_shape m = with_qk_norm(dense(4096, 11008, 32, 32, 32, 128, 100352, false));
  m.qk_norm = qk_norm_kind::full_width;
  m.residual = residual_layout::post_norms;
  m.norm = norm_kind::rms_fp32_scale;
  return m;
}
constexpr model_shape olmo2_7b = olmo2_7b_shape();
constexpr model_shape granite_8b_shape() {
  model_shape m = dense(4096, 12800, 40, 32, 8, 128, 49159, true);
  m.scalar_multipliers = true;
  return m;
}
constexpr model_shape granite_8b = granite_8b_shape();

// gpt-oss-20b (tests/data/configs/gpt-oss-20b.json): 24 layers, 64 query heads of 64, 8 KV heads, 32 experts
// (4 per token) of width 2,880, sinks, biased attention, router and experts.
constexpr model_shape gpt_oss_20b_shape() {
  model_shape m = with_experts(dense(2880, 0, 24, 64, 8, 64, 201088, false), 32, 4, 2880);
  m.attention_bias = true;
  m.o_proj_bias = true;
  m.attention_sinks = true;
  m.router_bias = true;
  m.experts = moe_layout::gpt_oss;
  return m;
}
constexpr model_shape gpt_oss_20b = gpt_oss_20b_shape();

// StarCoder2-3B (tests/data/configs/starcoder2-3b.json): LayerNorms, use_bias on every linear, a GELU MLP,
// tied head; trained with residual, embedding and attention dropout 0.1.
constexpr model_shape starcoder2_3b_shape() {
  model_shape m = dense(3072, 12288, 30, 24, 2, 128, 49152, true);
  m.attention_bias = m.o_proj_bias = m.mlp_bias = true;
  m.norm = norm_kind::layer_norm;
  m.mlp = mlp_layout::c_fc;
  m.residual_dropout = m.embedding_dropout = m.attention_dropout = true;
  return m;
}
constexpr model_shape starcoder2_3b = starcoder2_3b_shape();

// Pythia (tests/data/configs/pythia-*.json): GPT-NeoX with parallel blocks, a biased query_key_value and
// dense, a biased GELU MLP, LayerNorms, RoPE on a quarter of each head, an untied embed_out.
constexpr model_shape pythia(std::uint64_t d, std::uint64_t layers, std::uint64_t heads,
                             std::uint64_t vocab) {
  model_shape m = dense(d, 4 * d, layers, heads, heads, d / heads, vocab, false);
  m.attention_bias = m.o_proj_bias = m.mlp_bias = true;
  m.attention = attention_layout::query_key_value;
  m.mlp = mlp_layout::dense_h_to_4h;
  m.residual = residual_layout::parallel;
  m.norm = norm_kind::layer_norm;
  m.rotary_dim = d / heads / 4;
  return m;
}
constexpr model_shape pythia_160m = pythia(768, 12, 12, 50304);
constexpr model_shape pythia_6_9b = pythia(4096, 32, 32, 50432);

// Cohere Command-R v01 and Command-R+ (tests/data/configs/c4ai-command-r-*.json): one CohereLayerNorm per
// parallel block, a gated SiLU MLP, tied; Command-R+ adds per-head q/k norms (use_qk_norm).
constexpr model_shape cohere(std::uint64_t d, std::uint64_t ff, std::uint64_t layers, std::uint64_t heads,
                             std::uint64_t kv, bool qk_norm) {
  model_shape m = dense(d, ff, layers, heads, kv, 128, 256000, true);
  m.norms_per_layer = 1;
  m.logit_scale = true;
  m.residual = residual_layout::parallel;
  m.norm = norm_kind::cohere;
  m.qk_norm = qk_norm ? qk_norm_kind::full_width : qk_norm_kind::none;
  return m;
}
constexpr model_shape command_r = cohere(8192, 22528, 40, 64, 64, false);
constexpr model_shape command_r_plus = cohere(12288, 33792, 64, 96, 8, true);

/// Training setups the tests share: the default route A with one method changed.
constexpr training_setup with_method(training_method m, precision_route p = precision_route::bf16_mixed) {
  training_setup s;
  s.method = m;
  s.precision = p;
  return s;
}
constexpr training_setup full_ft = with_method(training_method::full);
constexpr training_setup lora16 = with_method(training_method::lora);
constexpr training_setup qlora16 = with_method(training_method::qlora);

// DeepSeek-V3 and Kimi-K2 (tests/data/configs/deepseek-v3.json, kimi-k2-instruct.json): MLA with q_lora_rank
// 1536, kv_lora_rank 512, q/k heads of 128 + 64 (RoPE), values of 128; dense first layers of 18,432, then
// routed experts of 2,048 with one shared expert of the same width, sigmoid-routed, untied.
constexpr model_shape deepseek_v3_like(std::uint64_t heads, std::uint64_t experts, std::uint64_t dense_layers,
                                       std::uint64_t vocab) {
  model_shape m = dense(7168, 18432, 61, heads, heads, 128 + 64, vocab, false);
  m.q_lora_rank = 1536;
  m.attention = attention_layout::mla;
  m.kv_lora_rank = 512;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  m.dense_layers = dense_layers;
  m.num_experts = experts;
  m.num_experts_per_tok = 8;
  m.moe_intermediate_size = 2048;
  m.shared_expert_intermediate_size = 2048;
  m.norm_topk_prob = m.router_sigmoid = true;
  m.experts = moe_layout::deepseek;
  return m;
}
constexpr model_shape deepseek_v3 = deepseek_v3_like(128, 256, 3, 129280);
constexpr model_shape kimi_k2 = deepseek_v3_like(64, 384, 1, 163840);

// Llama-4-Scout's text model (tests/data/configs/llama-4-scout-17b-16e-instruct.json): 48 layers of GQA
// attention (40 heads of 128 over 8 KV heads), each an MoE of 16 experts (8,192 wide, top 1) beside a shared
// expert of the same width; untied, vocabulary 202,048. Maverick: 128 experts on every 2nd layer, the others
// a dense MLP of 16,384.
constexpr model_shape llama4_like(std::uint64_t experts, std::uint64_t step) {
  model_shape m = dense(5120, 16384, 48, 40, 8, 128, 202048, false);
  m.num_experts = experts;
  m.num_experts_per_tok = 1;
  m.moe_intermediate_size = m.shared_expert_intermediate_size = 8192;
  m.complex_rope = m.attn_temperature_tuning = true;
  m.experts = moe_layout::llama4;
  m.qk_norm = step == 1 ? qk_norm_kind::l2 : qk_norm_kind::none;
  m.moe_layer_step = step;
  m.nope_layer_interval = 4;
  return m;
}
constexpr model_shape llama4_scout = llama4_like(16, 1);
constexpr model_shape llama4_maverick = llama4_like(128, 2);
/// The bytes of an inventory's terms of one name.
inline bytes term(const activation_terms& terms, std::string_view name) {
  bytes sum{0};
  for (const activation_term& t : terms)
    if (t.name == name) sum += t.amount;
  return sum;
}

}  // namespace headroom::test
