// SPDX-License-Identifier: MIT
// Decoder model shapes (Hugging Face config.json fields) and the exact parameter inventory
// derived from them: every weight tensor with its module name, shape and number of copies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "error.hpp"
#include "units.hpp"

namespace headroom {

/// Shapes of a Llama/Qwen/Mistral/Gemma-style decoder. Field names follow config.json.
struct model_shape {
  std::uint64_t hidden_size = 0;          ///< d, e.g. 4096 (Llama-3.1-8B)
  std::uint64_t num_attention_heads = 0;  ///< query heads a, e.g. 32
  std::uint64_t num_key_value_heads = 0;  ///< KV heads g (GQA), e.g. 8
  std::uint64_t head_dim = 0;  ///< per-head width; a·head_dim may differ from d (Qwen3-4B: 4096 vs 2560)
  std::uint64_t intermediate_size = 0;  ///< dense SwiGLU width d_ff, e.g. 14336
  std::uint64_t num_hidden_layers = 0;  ///< L, e.g. 32
  std::uint64_t vocab_size = 0;         ///< V, e.g. 128256
  bool tie_word_embeddings = false;     ///< lm_head shares embed_tokens (Llama-3.2-1B, Gemma-2)
  bool attention_bias = false;          ///< biases on q/k/v (Qwen2, attention_bias=true)
  bool o_proj_bias = false;             ///< bias on o_proj (Llama attention_bias=true sets both)
  bool mlp_bias = false;                ///< biases on gate/up/down (Llama mlp_bias)
  std::uint64_t norms_per_layer = 2;    ///< RMSNorms per block: 2 (Llama), 4 (Gemma-2/3)
  bool qk_norm = false;                 ///< per-head RMSNorm on q and k (Qwen3, Gemma-3)
  bool fused_qkv = false;               ///< one qkv_proj (Phi-3) instead of q_proj, k_proj, v_proj
  bool fused_gate_up = false;           ///< one gate_up_proj (Phi-3) instead of gate_proj and up_proj
  bool norm_scale_fp32 =
      false;  ///< RMSNorm multiplies by its weight in fp32 (Gemma, OLMo-2), not in bf16 (Llama)
  bool norm_unit_offset = false;  ///< RMSNorm scales by (1 + weight) (Gemma), not by weight
  bool post_norms = false;  ///< OLMo-2: the two norms sit on the attention and MLP outputs, none on the input
  bool qk_norm_full_width = false;      ///< q/k norms over a·head_dim and g·head_dim (OLMo-2), not per head
  bool scalar_multipliers = false;      ///< Granite: embeddings, residual branches and logits times scalars
  bool scaled_embeddings = false;       ///< embeddings times sqrt(hidden_size) (Gemma's normalizer)
  bool attn_logit_softcapping = false;  ///< tanh soft-capping of the attention scores (Gemma-2)
  bool final_logit_softcapping = false;  ///< tanh soft-capping of the logits (Gemma-2)
  // Mixture of experts (0 experts = dense MLP).
  std::uint64_t num_experts = 0;                      ///< routed experts per layer, e.g. 128 (Qwen3-30B-A3B)
  std::uint64_t num_experts_per_tok = 0;              ///< experts each token is routed to, e.g. 8
  std::uint64_t moe_intermediate_size = 0;            ///< width of one routed expert, e.g. 768
  std::uint64_t shared_expert_intermediate_size = 0;  ///< always-on shared expert (Qwen2-MoE), 0 = none
  bool norm_topk_prob =
      false;  ///< top-k routing weights renormalised to sum 1 (Mixtral always; Qwen3-MoE key)
  // gpt-oss (GptOssAttention, GptOssTopKRouter, GptOssExperts).
  bool attention_sinks = false;  ///< one learned logit per head and layer joins each softmax (`sinks`)
  bool router_bias = false;      ///< the router has a bias
  bool experts_3d =
      false;  ///< experts and router are nn.Parameter tensors (E × d × 2f, with biases), not nn.Linear
  // StarCoder2 (Starcoder2DecoderLayer, Starcoder2MLP), also GPT-NeoX's.
  bool layer_norm = false;  ///< every norm is an nn.LayerNorm with weight and bias, not an RMSNorm
  bool plain_mlp = false;   ///< c_fc → GELU → c_proj (GPT-NeoX: dense_h_to_4h, dense_4h_to_h), no gate
  bool residual_dropout = false;  ///< dropout on the attention and MLP outputs in training (residual_dropout)
  bool embedding_dropout = false;  ///< dropout on the embedding output in training (embedding_dropout)
  bool attention_dropout = false;  ///< config.json attention_dropout > 0: dropout on the attention weights
  // GPT-NeoX (GPTNeoXLayer, GPTNeoXAttention); the LayerNorms, GELU MLP and dropouts are StarCoder2's fields.
  bool neox_names = false;  ///< modules named query_key_value, dense, dense_h_to_4h, dense_4h_to_h (GPT-NeoX)
  bool parallel_residual = false;  ///< x + attn(ln1(x)) + mlp(ln2(x)): both norms read the block input
  std::uint64_t rotary_dim = 0;  ///< RoPE on the first rotary_dim of each head (GPT-NeoX rotary_pct); 0 = all
  // Cohere (CohereDecoderLayer): one norm per parallel block, logits scaled.
  bool cohere_norm = false;  ///< CohereLayerNorm: x − mean, · rsqrt, · weight, all in fp32 in Python; no bias
  bool logit_scale =
      false;  ///< logits · logit_scale (Cohere): a new logits-sized tensor, as Granite's division
  // DeepSeek-V2/V3, Kimi-K2 (DeepseekV3Attention, DeepseekV3MoE): multi-head latent attention (MLA), where
  // head_dim is the q/k head width qk_nope_head_dim + qk_rope_head_dim, and dense first layers.
  std::uint64_t q_lora_rank = 0;       ///< q_a_proj's width (V3: 1536); 0 = one q_proj (V2-Lite)
  std::uint64_t kv_lora_rank = 0;      ///< the compressed K/V width (V3: 512); nonzero = MLA
  std::uint64_t qk_rope_head_dim = 0;  ///< the rotated part of each q/k head, one key for all heads (64)
  std::uint64_t v_head_dim = 0;        ///< per-head value width (V3: 128)
  std::uint64_t dense_layers = 0;      ///< first_k_dense_replace: leading layers with a dense MLP (V3: 3)
  bool deepseek_moe =
      false;  ///< nn.Parameter router run in fp32, shared experts added ungated (DeepseekV3MoE)
  bool router_sigmoid = false;  ///< sigmoid scores with group-limited top-k (V3 noaux_tc), not softmax (V2)
  // Llama-4 text (Llama4TextDecoderLayer, Llama4TextMoe, Llama4TextAttention): MoE every n-th layer, the
  // others a dense SwiGLU of intermediate_size (config.json intermediate_size_mlp); every n-th layer NoPE.
  std::uint64_t moe_layer_step =
      0;  ///< interleave_moe_layer_step: layer i is MoE when (i + 1) % n == 0; 0 = all
  std::uint64_t nope_layer_interval =
      0;                      ///< no_rope_layer_interval: layer i skips RoPE when (i + 1) % n == 0
  bool llama4_moe = false;    ///< 3-D experts (E × d × 2f, E × f × d) run on every token, weighted by
                              ///< sigmoid(top-k logits); an nn.Linear router; an ungated shared expert
  bool l2_qk_norm = false;    ///< use_qk_norm: a weightless L2 norm of q and k after RoPE (RoPE layers only)
  bool complex_rope = false;  ///< RoPE as a complex product with fp32 freqs_cis (Llama4TextRotaryEmbedding)
  bool attn_temperature_tuning = false;  ///< NoPE layers scale q by an fp32 per-position factor
};

/// Module names as PEFT and transformers spell them (used for LoRA targets and quantisation).
enum class module_name : std::uint8_t {
  embed_tokens,
  q_proj,
  k_proj,
  v_proj,
  o_proj,
  gate_proj,
  up_proj,
  down_proj,
  router,              ///< MoE `mlp.gate` (an nn.Linear hidden → experts)
  shared_expert_gate,  ///< Qwen2-MoE's sigmoid gate of the shared expert (hidden → 1)
  norm,  ///< every norm's parameters (input/post-attention/pre/post-FFN, q/k, final; LayerNorm biases)
  lm_head,
  qkv_proj,         ///< Phi-3's fused q/k/v projection
  gate_up_proj,     ///< Phi-3's fused gate/up projection
  sinks,            ///< gpt-oss attention sinks (a per-head vector)
  experts,          ///< gpt-oss mlp.experts: 3-D gate_up_proj / down_proj parameters (PEFT target_parameters)
  c_fc,             ///< StarCoder2's MLP input projection d → d_ff (no gate)
  c_proj,           ///< StarCoder2's MLP output projection d_ff → d
  query_key_value,  ///< GPT-NeoX's fused q/k/v (interleaved per head)
  dense,            ///< GPT-NeoX's attention output projection
  dense_h_to_4h,    ///< GPT-NeoX's MLP input projection d → d_ff
  dense_4h_to_h,    ///< GPT-NeoX's MLP output projection d_ff → d
  q_a_proj,         ///< MLA: d → q_lora_rank (DeepSeek)
  q_b_proj,         ///< MLA: q_lora_rank → a·(qk_nope + qk_rope)
  kv_a_proj_with_mqa,  ///< MLA: d → kv_lora_rank + qk_rope (the compressed K/V and the shared RoPE key)
  kv_b_proj,           ///< MLA: kv_lora_rank → a·(qk_nope + v_head_dim)
};

/// The names a family gives the fused q/k/v, the attention output and a non-gated MLP's two linears.
struct block_module_names {
  module_name qkv, out, mlp_in, mlp_out;
};
[[nodiscard]] constexpr block_module_names block_modules(const model_shape& m) {
  if (m.neox_names)
    return {module_name::query_key_value, module_name::dense, module_name::dense_h_to_4h,
            module_name::dense_4h_to_h};
  return {module_name::qkv_proj, module_name::o_proj, module_name::c_fc, module_name::c_proj};
}
/// The width RoPE rotates in each head, and so the width of its cos/sin tables.
[[nodiscard]] constexpr std::uint64_t rope_width(const model_shape& m) {
  if (m.kv_lora_rank != 0) return m.qk_rope_head_dim;  // MLA rotates qk_rope_head_dim of each head
  if (m.experts_3d) return m.head_dim / 2;  // GptOssRotaryEmbedding: one angle per pair of the two halves
  return m.rotary_dim != 0 ? m.rotary_dim : m.head_dim;
}

/// What kind of tensor a parameter is; decides quantisation and optimizer treatment.
enum class tensor_role : std::uint8_t {
  linear_weight,  ///< 2-D weight of an nn.Linear (quantised by bitsandbytes, LoRA-targetable)
  bias,           ///< 1-D bias of an nn.Linear
  embedding,      ///< nn.Embedding table (2-D, never quantised)
  norm_weight,    ///< 1-D norm parameter: an RMSNorm scale, or a LayerNorm's weight or bias
};

/// One weight tensor shape and how many identical copies the model holds.
struct param_tensor {
  module_name module = module_name::embed_tokens;
  tensor_role role = tensor_role::linear_weight;
  std::uint64_t rows = 0;      ///< out_features (or embedding rows); the length for 1-D tensors
  std::uint64_t cols = 0;      ///< in_features; 0 for 1-D tensors
  std::uint64_t copies = 0;    ///< layers × experts holding this tensor
  bool nn_linear = true;       ///< false for a matrix held as an nn.Parameter (gpt-oss experts, router)
  bool routed_expert = false;  ///< one of the routed experts' tensors: a token multiplies k of E copies

  [[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t numel() const {
    return cols == 0 ? rows : detail::checked_mul(rows, cols, "tensor numel");
  }
  [[nodiscard]] constexpr bool is_matrix() const { return cols != 0; }
  [[nodiscard]] HEADROOM_INLINE constexpr params total() const {
    return params(detail::checked_mul(numel(), copies, "parameter count"));
  }
};

/// How a tensor group is stored: gpt-oss's 3-D expert parameters hold a layer's E experts in one tensor
/// (E × rows × cols), every other group one tensor per copy. Optimizer state and for-loop steps go per
/// tensor.
struct stored_tensors {
  std::uint64_t count = 0;  ///< tensors
  std::uint64_t numel = 0;  ///< values in each
};
[[nodiscard]] constexpr stored_tensors stored_as(const model_shape& m, const param_tensor& t) {
  if (t.routed_expert && !t.nn_linear) return {t.copies / m.num_experts, t.numel() * m.num_experts};
  return {t.copies, t.numel()};
}

/// Fixed-capacity list of tensor groups, so inventories are constexpr in C++17.
struct param_inventory {
  static constexpr std::size_t capacity = 32;
  std::array<param_tensor, capacity> items{};
  std::size_t size = 0;

  constexpr void add(param_tensor t) {
    if (t.copies == 0 || t.rows == 0) return;
    if (size == capacity) detail::fail("param_inventory", "capacity exceeded");
    items[size++] = t;
  }
  [[nodiscard]] constexpr const param_tensor* begin() const { return items.data(); }
  [[nodiscard]] constexpr const param_tensor* end() const { return items.data() + size; }
};

namespace detail {
inline constexpr std::uint64_t max_dimension = std::uint64_t{1} << 24;  // 16.7M: no real layer is wider
inline constexpr std::uint64_t max_layers = 100'000;
inline constexpr std::uint64_t max_experts = 1u << 16;

constexpr void require_size(std::uint64_t v, const char* field, std::uint64_t limit) {
  if (v == 0) fail(field, "must be a positive integer");
  if (v > limit) fail(field, "is absurdly large");
}
}  // namespace detail

/// Query projection width a·head_dim (Qwen3-4B: 32·128 = 4096, not hidden 2560).
[[nodiscard]] constexpr std::uint64_t query_width(const model_shape& m) {
  return m.num_attention_heads * m.head_dim;
}
/// K/V projection width g·head_dim (GQA).
[[nodiscard]] constexpr std::uint64_t kv_width(const model_shape& m) {
  return m.num_key_value_heads * m.head_dim;
}
[[nodiscard]] constexpr bool is_moe(const model_shape& m) { return m.num_experts != 0; }
/// Multi-head latent attention (DeepSeek-V2/V3): compressed K/V through kv_a_proj_with_mqa and kv_b_proj.
[[nodiscard]] constexpr bool is_mla(const model_shape& m) { return m.kv_lora_rank != 0; }
/// The attention output width o_proj reads: a·v_head_dim under MLA, else a·head_dim.
[[nodiscard]] constexpr std::uint64_t attention_output_width(const model_shape& m) {
  return is_mla(m) ? m.num_attention_heads * m.v_head_dim : query_width(m);
}
/// kv_b_proj's output under MLA: every head's nope key and value, a·(qk_nope_head_dim + v_head_dim).
[[nodiscard]] constexpr std::uint64_t kv_b_width(const model_shape& m) {
  return m.num_attention_heads * (m.head_dim - m.qk_rope_head_dim + m.v_head_dim);
}
/// Layers whose MLP is the routed experts: all of an MoE model but DeepSeek's first_k_dense_replace dense
/// ones, or every n-th (Llama-4's interleave_moe_layer_step).
[[nodiscard]] constexpr std::uint64_t moe_layers(const model_shape& m) {
  if (!is_moe(m)) return 0;
  return m.moe_layer_step > 1 ? m.num_hidden_layers / m.moe_layer_step : m.num_hidden_layers - m.dense_layers;
}
/// Layers with a dense MLP of intermediate_size: every layer of a dense model, an MoE model's others.
[[nodiscard]] constexpr std::uint64_t dense_mlp_layers(const model_shape& m) {
  return m.num_hidden_layers - moe_layers(m);
}
/// Whether every layer has one shape (else layer_groups splits them).
[[nodiscard]] constexpr bool uniform_layers(const model_shape& m) {
  return (!is_moe(m) || dense_mlp_layers(m) == 0) &&
         (m.nope_layer_interval == 0 || m.nope_layer_interval == 1 ||
          m.nope_layer_interval > m.num_hidden_layers);
}
/// Whether layer i (from 0) skips RoPE: Llama4TextConfig no_rope_layers[i] == 0.
[[nodiscard]] constexpr bool nope_layer(const model_shape& m, std::uint64_t i) {
  return m.nope_layer_interval != 0 && (i + 1) % m.nope_layer_interval == 0;
}
/// Whether every layer of `m` skips RoPE (one of layer_groups' NoPE groups, or no_rope_layer_interval 1).
[[nodiscard]] constexpr bool skips_rope(const model_shape& m) { return m.nope_layer_interval == 1; }
/// Whether layer i (from 0) has the routed experts.
[[nodiscard]] constexpr bool moe_layer(const model_shape& m, std::uint64_t i) {
  if (!is_moe(m)) return false;
  return m.moe_layer_step > 1 ? (i + 1) % m.moe_layer_step == 0 : i >= m.dense_layers;
}

/// Throws input_error naming the first field that is zero, absurd or inconsistent.
constexpr void validate(const model_shape& m) {
  using detail::max_dimension;
  detail::require_size(m.hidden_size, "hidden_size", max_dimension);
  detail::require_size(m.num_attention_heads, "num_attention_heads", max_dimension);
  detail::require_size(m.num_key_value_heads, "num_key_value_heads", max_dimension);
  detail::require_size(m.head_dim, "head_dim", max_dimension);
  detail::require_size(m.num_hidden_layers, "num_hidden_layers", detail::max_layers);
  detail::require_size(m.vocab_size, "vocab_size", max_dimension);
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    detail::fail("num_key_value_heads", "must divide num_attention_heads");
  if (query_width(m) > max_dimension)
    detail::fail("head_dim", "num_attention_heads·head_dim is absurdly large");
  if (m.norms_per_layer > 8) detail::fail("norms_per_layer", "is absurdly large");
  if (m.post_norms && m.norms_per_layer != 2)
    detail::fail("norms_per_layer", "must be 2 with post_norms (OLMo-2's two output norms)");
  if (m.qk_norm_full_width && !m.qk_norm) detail::fail("qk_norm_full_width", "set without qk_norm");
  if (is_moe(m)) {
    detail::require_size(m.num_experts, "num_experts", detail::max_experts);
    detail::require_size(m.num_experts_per_tok, "num_experts_per_tok", detail::max_experts);
    detail::require_size(m.moe_intermediate_size, "moe_intermediate_size", max_dimension);
    if (m.num_experts_per_tok > m.num_experts)
      detail::fail("num_experts_per_tok", "must not exceed num_experts");
  } else {
    detail::require_size(m.intermediate_size, "intermediate_size", max_dimension);
    if (m.num_experts_per_tok != 0) detail::fail("num_experts_per_tok", "set without num_experts");
  }
  if (m.shared_expert_intermediate_size > max_dimension)
    detail::fail("shared_expert_intermediate_size", "is absurdly large");
  if (m.experts_3d && (!is_moe(m) || m.shared_expert_intermediate_size != 0 || m.qk_norm || m.fused_qkv))
    detail::fail("experts_3d",
                 "is gpt-oss's layout: routed experts only, no shared expert, q/k norms or fused qkv");
  if (m.router_bias && !m.experts_3d) detail::fail("router_bias", "is modelled for gpt-oss's router only");
  if (m.plain_mlp && (is_moe(m) || m.fused_gate_up))
    detail::fail("plain_mlp",
                 "is StarCoder2's and GPT-NeoX's dense GELU MLP: no experts or fused gate_up_proj");
  if (m.rotary_dim > m.head_dim || m.rotary_dim % 2 != 0)
    detail::fail("rotary_dim", "must be an even width no larger than head_dim");
  if (m.neox_names && !(m.fused_qkv && m.plain_mlp))
    detail::fail("neox_names", "is GPT-NeoX's layout: a fused query_key_value and a dense_h_to_4h MLP");
  if (m.parallel_residual && !(m.layer_norm && m.norms_per_layer == 2) &&
      !(m.cohere_norm && m.norms_per_layer == 1))
    detail::fail("parallel_residual", "is modelled for GPT-NeoX's two LayerNorms and Cohere's one norm only");
  if (m.cohere_norm && (m.layer_norm || m.norm_scale_fp32 || m.post_norms || !m.parallel_residual ||
                        (m.qk_norm && !m.qk_norm_full_width)))
    detail::fail("cohere_norm",
                 "is Cohere's layout: one norm per parallel block, q/k norms with per-head weights");
  if (m.layer_norm &&
      (m.norm_scale_fp32 || m.norm_unit_offset || m.post_norms || m.qk_norm || m.norms_per_layer != 2))
    detail::fail("layer_norm",
                 "is StarCoder2's and GPT-NeoX's two LayerNorms: no RMSNorm options or q/k norms");
  if (is_mla(m)) {
    detail::require_size(m.kv_lora_rank, "kv_lora_rank", max_dimension);
    detail::require_size(m.qk_rope_head_dim, "qk_rope_head_dim", max_dimension);
    detail::require_size(m.v_head_dim, "v_head_dim", max_dimension);
    if (m.q_lora_rank > max_dimension) detail::fail("q_lora_rank", "is absurdly large");
    if (m.qk_rope_head_dim % 2 != 0 || m.qk_rope_head_dim >= m.head_dim)
      detail::fail("qk_rope_head_dim", "must be even and smaller than qk_nope_head_dim + qk_rope_head_dim");
    if (m.num_key_value_heads != m.num_attention_heads)
      detail::fail("num_key_value_heads",
                   "must equal num_attention_heads under MLA (every head has its keys)");
    if (m.fused_qkv || m.qk_norm || m.attention_bias || m.o_proj_bias || m.layer_norm ||
        m.parallel_residual || m.post_norms || m.norms_per_layer != 2 || m.rotary_dim != 0 ||
        m.attention_sinks)
      detail::fail("kv_lora_rank",
                   "MLA is modelled with DeepSeek's block: two RMSNorms, unbiased projections");
  } else if (m.q_lora_rank != 0 || m.qk_rope_head_dim != 0 || m.v_head_dim != 0) {
    detail::fail("q_lora_rank", "q_lora_rank, qk_rope_head_dim and v_head_dim need kv_lora_rank (MLA)");
  }
  if (m.dense_layers != 0) {
    if (!m.deepseek_moe)
      detail::fail("first_k_dense_replace", "dense first layers are modelled for DeepSeek's MoE only");
    if (m.dense_layers >= m.num_hidden_layers)
      detail::fail("first_k_dense_replace", "must be smaller than num_hidden_layers");
    detail::require_size(m.intermediate_size, "intermediate_size", max_dimension);
  }
  if ((m.deepseek_moe || m.router_sigmoid) && (!is_moe(m) || m.experts_3d || m.fused_gate_up || m.mlp_bias))
    detail::fail("deepseek_moe", "is DeepSeek's MoE: routed SwiGLU experts of nn.Linear without biases");
  if (m.router_sigmoid && !m.deepseek_moe) detail::fail("router_sigmoid", "set without deepseek_moe");
  if (m.moe_layer_step > 1) {
    if (!m.llama4_moe)
      detail::fail("interleave_moe_layer_step", "MoE every n-th layer is modelled for Llama-4");
    if (m.moe_layer_step > m.num_hidden_layers)
      detail::fail("interleave_moe_layer_step", "exceeds num_hidden_layers: no layer would have experts");
    detail::require_size(m.intermediate_size, "intermediate_size_mlp", max_dimension);
  }
  if (m.nope_layer_interval > detail::max_layers) detail::fail("no_rope_layer_interval", "is absurdly large");
  if (m.llama4_moe && (!is_moe(m) || m.experts_3d || m.deepseek_moe || m.fused_gate_up || m.mlp_bias ||
                       m.dense_layers != 0 || m.shared_expert_intermediate_size == 0))
    detail::fail("llama4_moe", "is Llama-4's MoE: 3-D SwiGLU experts without biases beside a shared expert");
  if (m.l2_qk_norm && m.qk_norm)
    detail::fail("use_qk_norm", "Llama-4's L2 q/k norm excludes RMSNorm q/k norms");
  if ((m.l2_qk_norm || m.nope_layer_interval != 0 || m.attn_temperature_tuning) &&
      (!m.complex_rope || m.fused_qkv || is_mla(m) || m.layer_norm || m.parallel_residual || m.post_norms ||
       m.norms_per_layer != 2 || m.rotary_dim != 0 || m.attention_sinks))
    detail::fail("no_rope_layer_interval",
                 "NoPE layers and the L2 q/k norm are modelled with Llama-4's block");
}

/// Layers that share one shape, and how many of them there are.
struct layer_group {
  model_shape shape{};  ///< the model with every layer like these (num_hidden_layers = layers)
  std::uint64_t layers = 0;
};
/// The model's layers in uniform groups, the first layer's group first: one group; DeepSeek's dense first
/// layers and then the MoE ones; Llama-4's dense or MoE layers, each with RoPE or NoPE.
struct layer_group_list {
  std::array<layer_group, 4> items{};
  std::size_t size = 0;
  [[nodiscard]] constexpr const layer_group* begin() const { return items.data(); }
  [[nodiscard]] constexpr const layer_group* end() const { return items.data() + size; }
};
namespace detail {
/// `m` with every layer dense (num_experts 0) or every layer MoE, and every layer NoPE or none.
constexpr model_shape layer_kind(const model_shape& m, bool moe, bool nope, std::uint64_t layers) {
  model_shape k = m;
  k.num_hidden_layers = layers;
  k.dense_layers = 0;
  k.moe_layer_step = 0;
  k.nope_layer_interval = nope ? 1 : 0;
  if (!moe) {  // DeepseekV3DecoderLayer: layer_idx < first_k_dense_replace → DeepseekV3MLP; Llama4TextMLP
    k.num_experts = k.num_experts_per_tok = k.moe_intermediate_size = 0;
    k.shared_expert_intermediate_size = 0;
    k.norm_topk_prob = k.deepseek_moe = k.router_sigmoid = k.llama4_moe = false;
  }
  return k;
}
}  // namespace detail
[[nodiscard]] constexpr layer_group_list layer_groups(const model_shape& m) {
  layer_group_list out;
  if (uniform_layers(m)) {
    out.items[out.size++] = {m, m.num_hidden_layers};
    return out;
  }
  // Counts of the four kinds (MoE or dense × NoPE or RoPE); the first layer's kind leads.
  std::array<std::uint64_t, 4> count{};
  for (std::uint64_t i = 0; i < m.num_hidden_layers; ++i)
    ++count[(moe_layer(m, i) ? 2u : 0u) + (nope_layer(m, i) ? 1u : 0u)];
  const std::size_t first = (moe_layer(m, 0) ? 2u : 0u) + (nope_layer(m, 0) ? 1u : 0u);
  for (std::size_t n = 0; n < 4; ++n) {
    const std::size_t kind = (first + n) % 4;
    if (count[kind] != 0)
      out.items[out.size++] = {detail::layer_kind(m, kind >= 2, kind % 2 == 1, count[kind]), count[kind]};
  }
  return out;
}

/// Calls `visit(param_tensor)` for every weight tensor group of the model, without storing them
/// (the estimators sum as they go). Source of each line: the transformers modeling files
/// (LlamaDecoderLayer, Qwen3Attention, Gemma2DecoderLayer, Qwen3MoeSparseMoeBlock).
template <class Visit>
HEADROOM_INLINE constexpr void visit_parameters(const model_shape& m, Visit&& visit) {
  validate(m);
  const std::uint64_t d = m.hidden_size, q = query_width(m), kv = kv_width(m), L = m.num_hidden_layers;
  auto add = [&visit](param_tensor t) HEADROOM_INLINE {
    if (t.copies != 0 && t.rows != 0) visit(t);  // skip absent tensors
  };
  using mn = module_name;
  using tr = tensor_role;
  add({mn::embed_tokens, tr::embedding, m.vocab_size, d, 1});  // embed_tokens: V × d
  const block_module_names names = block_modules(m);
  if (is_mla(m)) {  // DeepseekV3Attention: q_a_proj → q_a_layernorm → q_b_proj (or one q_proj), and
                    // kv_a_proj_with_mqa → kv_a_layernorm → kv_b_proj, whose output holds a heads' nope keys
                    // and values
    const std::uint64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, rope = m.qk_rope_head_dim;
    if (ql != 0) {
      add({mn::q_a_proj, tr::linear_weight, ql, d, L});
      add({mn::norm, tr::norm_weight, ql, 0, L});  // q_a_layernorm
      add({mn::q_b_proj, tr::linear_weight, q, ql, L});
    } else {
      add({mn::q_proj, tr::linear_weight, q, d, L});
    }
    add({mn::kv_a_proj_with_mqa, tr::linear_weight, kvl + rope, d, L});
    add({mn::norm, tr::norm_weight, kvl, 0, L});  // kv_a_layernorm
    add({mn::kv_b_proj, tr::linear_weight, kv_b_width(m), kvl, L});
  } else if (m.fused_qkv) {
    add({names.qkv, tr::linear_weight, q + 2 * kv, d, L});               // qkv_proj: d → (a + 2g)·head_dim
    if (m.attention_bias) add({names.qkv, tr::bias, q + 2 * kv, 0, L});  // GPT-NeoX's query_key_value
  } else {
    add({mn::q_proj, tr::linear_weight, q, d, L});   // q_proj: d → a·head_dim
    add({mn::k_proj, tr::linear_weight, kv, d, L});  // k_proj: d → g·head_dim
    add({mn::v_proj, tr::linear_weight, kv, d, L});  // v_proj: d → g·head_dim
  }
  add({names.out, tr::linear_weight, d, attention_output_width(m), L});  // o_proj: a·head_dim (MLA: a·v) → d
  if (m.attention_bias && !m.fused_qkv) {
    add({mn::q_proj, tr::bias, q, 0, L});
    add({mn::k_proj, tr::bias, kv, 0, L});
    add({mn::v_proj, tr::bias, kv, 0, L});
  }
  if (m.o_proj_bias) add({names.out, tr::bias, d, 0, L});
  if (m.attention_sinks) add({mn::sinks, tr::bias, m.num_attention_heads, 0, L});  // GptOssAttention.sinks
  if (m.experts_3d) {  // GptOssExperts: gate_up_proj (E, d, 2f) + bias, down_proj (E, f, d) + bias; router
    const std::uint64_t f = m.moe_intermediate_size, E = detail::checked_mul(L, m.num_experts, "experts");
    add({mn::experts, tr::linear_weight, 2 * f, d, E, false, true});
    add({mn::experts, tr::bias, 2 * f, 0, E, false, true});
    add({mn::experts, tr::linear_weight, d, f, E, false, true});
    add({mn::experts, tr::bias, d, 0, E, false, true});
    add({mn::router, tr::linear_weight, m.num_experts, d, L, false});  // GptOssTopKRouter.weight
    if (m.router_bias) add({mn::router, tr::bias, m.num_experts, 0, L, false});
  } else if (m.plain_mlp) {  // Starcoder2MLP: c_fc d → d_ff, c_proj d_ff → d (biases: use_bias)
    add({names.mlp_in, tr::linear_weight, m.intermediate_size, d, L});  // GPT-NeoX: dense_h_to_4h
    add({names.mlp_out, tr::linear_weight, d, m.intermediate_size, L});
    if (m.mlp_bias) {
      add({names.mlp_in, tr::bias, m.intermediate_size, 0, L});
      add({names.mlp_out, tr::bias, d, 0, L});
    }
  } else {  // Dense SwiGLU MLP, or the routed experts (each a SwiGLU of moe_intermediate_size) + router
    auto swiglu = [&](std::uint64_t ff, std::uint64_t copies, bool routed) HEADROOM_INLINE {
      if (m.fused_gate_up) {
        add({mn::gate_up_proj, tr::linear_weight, 2 * ff, d, copies, true, routed});  // d → 2·d_ff
      } else {
        add({mn::gate_proj, tr::linear_weight, ff, d, copies, true, routed});  // gate_proj: d → d_ff
        add({mn::up_proj, tr::linear_weight, ff, d, copies, true, routed});    // up_proj: d → d_ff
      }
      add({mn::down_proj, tr::linear_weight, d, ff, copies, true, routed});  // down_proj: d_ff → d
      if (m.mlp_bias) {
        add({mn::gate_proj, tr::bias, ff, 0, copies, true, routed});
        add({mn::up_proj, tr::bias, ff, 0, copies, true, routed});
        add({mn::down_proj, tr::bias, d, 0, copies, true, routed});
      }
    };
    const std::uint64_t moe = moe_layers(m), dense = dense_mlp_layers(m);
    // every layer of a dense model; DeepSeek's first layers; Llama-4's non-MoE ones (intermediate_size_mlp)
    if (dense != 0) swiglu(m.intermediate_size, dense, false);
    if (m.llama4_moe) {  // Llama4TextExperts: gate_up_proj (E, d, 2f), down_proj (E, f, d); Llama4Router: d →
                         // E
      const std::uint64_t f = m.moe_intermediate_size, E = detail::checked_mul(moe, m.num_experts, "experts");
      add({mn::experts, tr::linear_weight, 2 * f, d, E, false, true});
      add({mn::experts, tr::linear_weight, d, f, E, false, true});
      // Llama4Router subclasses nn.Linear but returns (scores, logits): priced as neither adapted nor
      // quantised
      add({mn::router, tr::linear_weight, m.num_experts, d, moe, false});
    } else if (is_moe(m)) {
      swiglu(m.moe_intermediate_size, detail::checked_mul(moe, m.num_experts, "experts"), true);
      // gate: d → E; DeepseekV3TopkRouter holds it as an nn.Parameter (its e_score_correction_bias is a
      // buffer)
      add({mn::router, tr::linear_weight, m.num_experts, d, moe, !m.deepseek_moe});
    }
    if (m.shared_expert_intermediate_size != 0) {
      swiglu(m.shared_expert_intermediate_size, moe, false);
      if (!m.deepseek_moe && !m.llama4_moe)
        add({mn::shared_expert_gate, tr::linear_weight, 1, d, moe});  // Qwen2-MoE's gate
    }
  }
  // nn.LayerNorm holds a bias beside its weight, so its parameters are twice an RMSNorm's.
  const std::uint64_t norm_tensors = m.layer_norm ? 2 : 1;
  add({mn::norm, tr::norm_weight, d, 0, detail::checked_mul(L, m.norms_per_layer * norm_tensors, "norms")});
  if (m.qk_norm_full_width) {  // Olmo2Attention: RMSNorm(a·hd), RMSNorm(g·hd); Cohere: (a, hd), (g, hd)
                               // weights
    add({mn::norm, tr::norm_weight, q, 0, L});
    add({mn::norm, tr::norm_weight, kv, 0, L});
  } else if (m.qk_norm) {
    add({mn::norm, tr::norm_weight, m.head_dim, 0, 2 * L});  // q_norm, k_norm
  }
  add({mn::norm, tr::norm_weight, d, 0, 1});                    // final norm (one copy: it is not a layer's)
  if (m.layer_norm) add({mn::norm, tr::norm_weight, d, 0, 1});  // and its bias
  if (!m.tie_word_embeddings) add({mn::lm_head, tr::linear_weight, m.vocab_size, d, 1});
}

/// Every weight tensor one at a time (copies = 1), in the order the transformers modules register them,
/// which is the order of model.parameters() and so of a for-loop optimizer: embed_tokens; per layer
/// self_attn (q, k, v or qkv, o, then q_norm, k_norm), mlp (router, then each expert's gate, up, down;
/// or the dense gate, up, down), the layer norms; then the final norm and lm_head. Biases follow their
/// weight. Source: the __init__ of LlamaDecoderLayer, Qwen3Attention, Qwen3MoeSparseMoeBlock,
/// Gemma2DecoderLayer.
template <class Visit>
constexpr void visit_parameters_in_order(const model_shape& m, Visit&& visit) {
  validate(m);
  const std::uint64_t d = m.hidden_size, q = query_width(m), kv = kv_width(m);
  using mn = module_name;
  using tr = tensor_role;
  auto linear = [&](mn module, std::uint64_t out, std::uint64_t in, bool bias) {
    visit(param_tensor{module, tr::linear_weight, out, in, 1});
    if (bias) visit(param_tensor{module, tr::bias, out, 0, 1});
  };
  auto mlp = [&](std::uint64_t ff, bool bias) {
    if (m.fused_gate_up) {
      linear(mn::gate_up_proj, 2 * ff, d, bias);
    } else {
      linear(mn::gate_proj, ff, d, bias);
      linear(mn::up_proj, ff, d, bias);
    }
    linear(mn::down_proj, d, ff, bias);
  };
  const param_tensor norm_part{mn::norm, tr::norm_weight, d, 0, 1};
  auto norm = [&] {  // an RMSNorm's weight, or a LayerNorm's weight then bias
    visit(norm_part);
    if (m.layer_norm) visit(norm_part);
  };
  const block_module_names names = block_modules(m);
  visit(param_tensor{mn::embed_tokens, tr::embedding, m.vocab_size, d, 1});
  for (std::uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    if (m.neox_names)  // GPTNeoXLayer registers input_layernorm and post_attention_layernorm first
      for (std::uint64_t k = 0; k < m.norms_per_layer; ++k) norm();
    if (is_mla(m)) {  // DeepseekV3Attention.__init__
      if (m.q_lora_rank != 0) {
        linear(mn::q_a_proj, m.q_lora_rank, d, false);
        visit(param_tensor{mn::norm, tr::norm_weight, m.q_lora_rank, 0, 1});
        linear(mn::q_b_proj, q, m.q_lora_rank, false);
      } else {
        linear(mn::q_proj, q, d, false);
      }
      linear(mn::kv_a_proj_with_mqa, m.kv_lora_rank + m.qk_rope_head_dim, d, false);
      visit(param_tensor{mn::norm, tr::norm_weight, m.kv_lora_rank, 0, 1});
      linear(mn::kv_b_proj, kv_b_width(m), m.kv_lora_rank, false);
    } else if (m.fused_qkv) {
      linear(names.qkv, q + 2 * kv, d, m.attention_bias);
    } else {
      linear(mn::q_proj, q, d, m.attention_bias);
      linear(mn::k_proj, kv, d, m.attention_bias);
      linear(mn::v_proj, kv, d, m.attention_bias);
    }
    linear(names.out, d, attention_output_width(m), m.o_proj_bias);
    if (m.attention_sinks) visit(param_tensor{mn::sinks, tr::bias, m.num_attention_heads, 0, 1});
    if (m.qk_norm) {
      visit(param_tensor{mn::norm, tr::norm_weight, m.qk_norm_full_width ? q : m.head_dim, 0, 1});
      visit(param_tensor{mn::norm, tr::norm_weight, m.qk_norm_full_width ? kv : m.head_dim, 0, 1});
    }
    if (m.experts_3d) {  // GptOssMLP: router (weight, bias), then experts' four tensors, each one 3-D tensor
      const std::uint64_t f = m.moe_intermediate_size, E = m.num_experts;
      visit(param_tensor{mn::router, tr::linear_weight, E, d, 1, false});
      if (m.router_bias) visit(param_tensor{mn::router, tr::bias, E, 0, 1, false});
      visit(param_tensor{mn::experts, tr::linear_weight, E * 2 * f, d, 1, false});
      visit(param_tensor{mn::experts, tr::bias, E * 2 * f, 0, 1, false});
      visit(param_tensor{mn::experts, tr::linear_weight, E * d, f, 1, false});
      visit(param_tensor{mn::experts, tr::bias, E * d, 0, 1, false});
    } else if (m.llama4_moe) {  // Llama4TextMoe: experts (gate_up_proj, down_proj), router, shared_expert
      if (moe_layer(m, layer)) {
        const std::uint64_t f = m.moe_intermediate_size, E = m.num_experts;
        visit(param_tensor{mn::experts, tr::linear_weight, E * 2 * f, d, 1, false});
        visit(param_tensor{mn::experts, tr::linear_weight, E * d, f, 1, false});
        visit(param_tensor{mn::router, tr::linear_weight, E, d, 1, false});
        mlp(m.shared_expert_intermediate_size, false);
      } else {
        mlp(m.intermediate_size, false);  // Llama4TextMLP(intermediate_size_mlp)
      }
    } else if (is_moe(m) && m.deepseek_moe) {  // DeepseekV3MoE: experts, gate, shared_experts
      if (layer < m.dense_layers) {
        mlp(m.intermediate_size, false);
      } else {
        for (std::uint64_t e = 0; e < m.num_experts; ++e) mlp(m.moe_intermediate_size, false);
        visit(param_tensor{mn::router, tr::linear_weight, m.num_experts, d, 1, false});
        if (m.shared_expert_intermediate_size != 0) mlp(m.shared_expert_intermediate_size, false);
      }
    } else if (is_moe(m)) {
      linear(mn::router, m.num_experts, d, false);
      for (std::uint64_t e = 0; e < m.num_experts; ++e) mlp(m.moe_intermediate_size, m.mlp_bias);
      if (m.shared_expert_intermediate_size != 0) {
        mlp(m.shared_expert_intermediate_size, false);
        linear(mn::shared_expert_gate, 1, d, false);
      }
    } else if (m.plain_mlp) {
      linear(names.mlp_in, m.intermediate_size, d, m.mlp_bias);
      linear(names.mlp_out, d, m.intermediate_size, m.mlp_bias);
    } else {
      mlp(m.intermediate_size, m.mlp_bias);
    }
    if (!m.neox_names)
      for (std::uint64_t k = 0; k < m.norms_per_layer; ++k) norm();
  }
  norm();
  if (!m.tie_word_embeddings) visit(param_tensor{mn::lm_head, tr::linear_weight, m.vocab_size, d, 1});
}

/// Every weight tensor of the model, as a list (see visit_parameters).
[[nodiscard]] constexpr param_inventory parameter_inventory(const model_shape& m) {
  param_inventory inv;
  visit_parameters(m, [&inv](const param_tensor& t) { inv.add(t); });
  return inv;
}

/// Exact parameter count: the sum over the inventory (tied embeddings counted once).
[[nodiscard]] constexpr params parameter_count(const model_shape& m) {
  params total{0};
  visit_parameters(m, [&total](const param_tensor& t) { total += t.total(); });
  return total;
}

/// Parameters outside the decoder layers: embed_tokens, the final norm (a LayerNorm's bias too), an untied
/// lm_head.
[[nodiscard]] constexpr std::uint64_t model_level_parameters(const model_shape& m) {
  const std::uint64_t table = detail::checked_mul(m.vocab_size, m.hidden_size, "embedding");
  return table * (m.tie_word_embeddings ? 1 : 2) + m.hidden_size * (m.layer_norm ? 2 : 1);
}
/// Parameters of one decoder layer of `m`, whose layers are uniform (one of layer_groups).
[[nodiscard]] constexpr params layer_parameter_count(const model_shape& m) {
  return params((parameter_count(m).count() - model_level_parameters(m)) / m.num_hidden_layers);
}

}  // namespace headroom
