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

/// Which norm a family uses (every norm of the model: the blocks', q/k norms, the final one). A `switch` over
/// it has no `default:`, so the compiler lists every place a new kind must be priced.
enum class norm_kind : std::uint8_t {
  rms,             ///< LlamaRMSNorm: x · rsqrt(mean(x²) + eps) in fp32, cast back, then · weight in bf16
  rms_fp32_scale,  ///< Olmo2RMSNorm: the weight product in fp32 too, then cast back
  gemma_rms,       ///< GemmaRMSNorm: x · (1 + weight), all in fp32
  layer_norm,      ///< nn.LayerNorm with weight and bias (StarCoder2, GPT-NeoX, SigLIP)
  cohere,          ///< CohereLayerNorm: x − mean, · rsqrt, · weight, all in fp32 in Python; no bias
};

/// How an MoE model builds its experts and router (the MoE families). A `switch` over it has no `default:`,
/// so the compiler lists every place a new family must be priced (docs/adding-a-family.md).
enum class moe_layout : std::uint8_t {
  linear_experts,  ///< Qwen2/3-MoE, Mixtral: an nn.Linear router and E SwiGLU experts of nn.Linear
                   ///< (Qwen2-MoE: a shared expert behind a sigmoid gate)
  deepseek,        ///< DeepseekV3MoE: an nn.Parameter router run in fp32, shared experts added ungated
  llama4,          ///< Llama4TextMoe: 3-D experts (E × d × 2f, E × f × d) run on every token, weighted by
                   ///< sigmoid(top-k logits); a router returning (scores, logits); an ungated shared expert
  gpt_oss,         ///< GptOssExperts: experts and router are nn.Parameter tensors (E × d × 2f, with biases)
  torchtune,       ///< torchtune's MoE (modules/moe, its Llama-4 builders): an nn.Linear router,
                   ///< top-k sigmoid scores, each token's k routed rows gathered and scaled, 3-D
                   ///< gate_proj, up_proj and down_proj run on those rows only (LoRAGroupedExperts
                   ///< adapts each expert's three); an ungated shared expert
};

/// How a block projects q, k and v, and what its projections are called (the attention families). A `switch`
/// over it has no `default:`, so the compiler lists every place a new layout must be priced.
enum class attention_layout : std::uint8_t {
  q_k_v,            ///< q_proj, k_proj, v_proj, then o_proj (Llama and most families)
  qkv_proj,         ///< Phi-3: one fused qkv_proj d → (a + 2g)·head_dim, then o_proj
  query_key_value,  ///< GPT-NeoX: one fused query_key_value (interleaved per head), then `dense`
  mla,  ///< DeepSeek-V2/V3 multi-head latent attention: q_a_proj/q_b_proj (or q_proj), kv_a_proj_with_mqa,
        ///< kv_b_proj, then o_proj (the ranks are q_lora_rank, kv_lora_rank, qk_rope_head_dim, v_head_dim)
};

/// A dense MLP's layout (and each nn.Linear expert's). A `switch` over it has no `default:`.
enum class mlp_layout : std::uint8_t {
  gated,          ///< gate_proj, up_proj, down_proj: act(gate) · up (SwiGLU, GeGLU)
  gate_up_proj,   ///< Phi-3: gate and up fused in one gate_up_proj d → 2·d_ff, then down_proj
  c_fc,           ///< StarCoder2: c_fc → GELU → c_proj, no gate
  dense_h_to_4h,  ///< GPT-NeoX: dense_h_to_4h → GELU → dense_4h_to_h, no gate
};

/// The norms on q and k. A `switch` over it has no `default:`.
enum class qk_norm_kind : std::uint8_t {
  none,
  per_head,    ///< Qwen3, Gemma-3: one norm over head_dim with a head_dim weight, for q and for k
  full_width,  ///< OLMo-2: over a·head_dim and g·head_dim; Cohere (use_qk_norm): per head, (heads, head_dim)
               ///< weights — the same parameter count
  l2,  ///< Llama-4 (use_qk_norm): a weightless L2 norm of q and k after RoPE, on RoPE layers only
};

/// Where a block's norms and residual adds sit. A `switch` over it has no `default:`.
enum class residual_layout : std::uint8_t {
  sequential,  ///< x + attn(norm(x)), then + mlp(norm(·)) (Llama; Gemma-2/3 add post-norms: norms_per_layer
               ///< 4)
  parallel,    ///< x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX), or one norm read by both (Cohere)
  post_norms,  ///< OLMo-2: the two norms on the attention and MLP outputs, none on the input
};

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
  // The block's parts (the family's row in io/config.hpp's architectures sets them).
  attention_layout attention = attention_layout::q_k_v;    ///< the q/k/v projections and their names
  mlp_layout mlp = mlp_layout::gated;                      ///< the dense MLP (and nn.Linear experts)
  qk_norm_kind qk_norm = qk_norm_kind::none;               ///< norms on q and k
  residual_layout residual = residual_layout::sequential;  ///< where the norms and residual adds sit
  norm_kind norm = norm_kind::rms;  ///< every norm's kind (Llama's RMSNorm unless the family says otherwise)
  bool scalar_multipliers = false;  ///< Granite: embeddings, residual branches and logits times scalars
  bool scaled_embeddings = false;   ///< embeddings times sqrt(hidden_size) (Gemma's normalizer)
  bool attn_logit_softcapping = false;   ///< tanh soft-capping of the attention scores (Gemma-2)
  bool final_logit_softcapping = false;  ///< tanh soft-capping of the logits (Gemma-2)
  // Mixture of experts (0 experts = dense MLP).
  std::uint64_t num_experts = 0;                      ///< routed experts per layer, e.g. 128 (Qwen3-30B-A3B)
  std::uint64_t num_experts_per_tok = 0;              ///< experts each token is routed to, e.g. 8
  std::uint64_t moe_intermediate_size = 0;            ///< width of one routed expert, e.g. 768
  std::uint64_t shared_expert_intermediate_size = 0;  ///< always-on shared expert (Qwen2-MoE), 0 = none
  bool norm_topk_prob =
      false;  ///< top-k routing weights renormalised to sum 1 (Mixtral always; Qwen3-MoE key)
  moe_layout experts = moe_layout::linear_experts;  ///< how the experts and router are built (the MoE family)
  // gpt-oss (GptOssAttention, GptOssTopKRouter, GptOssExperts).
  bool attention_sinks = false;  ///< one learned logit per head and layer joins each softmax (`sinks`)
  bool router_bias = false;      ///< the router has a bias
  // StarCoder2 (Starcoder2DecoderLayer, Starcoder2MLP), also GPT-NeoX's.
  bool residual_dropout = false;  ///< dropout on the attention and MLP outputs in training (residual_dropout)
  bool embedding_dropout = false;  ///< dropout on the embedding output in training (embedding_dropout)
  bool attention_dropout = false;  ///< config.json attention_dropout > 0: dropout on the attention weights
  // GPT-NeoX (GPTNeoXLayer, GPTNeoXAttention): partial rotary.
  std::uint64_t rotary_dim = 0;  ///< RoPE on the first rotary_dim of each head (GPT-NeoX rotary_pct); 0 = all
  // Cohere (CohereDecoderLayer): one norm per parallel block, logits scaled.
  bool logit_scale =
      false;  ///< logits · logit_scale (Cohere): a new logits-sized tensor, as Granite's division
  // DeepSeek-V2/V3, Kimi-K2 (DeepseekV3Attention, DeepseekV3MoE): multi-head latent attention (MLA), where
  // head_dim is the q/k head width qk_nope_head_dim + qk_rope_head_dim, and dense first layers.
  std::uint64_t q_lora_rank = 0;       ///< q_a_proj's width (V3: 1536); 0 = one q_proj (V2-Lite)
  std::uint64_t kv_lora_rank = 0;      ///< the compressed K/V width (V3: 512; attention mla)
  std::uint64_t qk_rope_head_dim = 0;  ///< the rotated part of each q/k head, one key for all heads (64)
  std::uint64_t v_head_dim = 0;        ///< per-head value width (V3: 128)
  std::uint64_t dense_layers = 0;      ///< first_k_dense_replace: leading layers with a dense MLP (V3: 3)
  bool router_sigmoid = false;  ///< sigmoid scores with group-limited top-k (V3 noaux_tc), not softmax (V2)
  // Llama-4 text (Llama4TextDecoderLayer, Llama4TextMoe, Llama4TextAttention): MoE every n-th layer, the
  // others a dense SwiGLU of intermediate_size (config.json intermediate_size_mlp); every n-th layer NoPE.
  std::uint64_t moe_layer_step =
      0;  ///< interleave_moe_layer_step: layer i is MoE when (i + 1) % n == 0; 0 = all
  std::uint64_t nope_layer_interval =
      0;                      ///< no_rope_layer_interval: layer i skips RoPE when (i + 1) % n == 0
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
  block_module_names names{module_name::qkv_proj, module_name::o_proj, module_name::c_fc,
                           module_name::c_proj};
  if (m.attention == attention_layout::query_key_value) {  // GPTNeoXAttention
    names.qkv = module_name::query_key_value;
    names.out = module_name::dense;
  }
  if (m.mlp == mlp_layout::dense_h_to_4h) {  // GPTNeoXMLP
    names.mlp_in = module_name::dense_h_to_4h;
    names.mlp_out = module_name::dense_4h_to_h;
  }
  return names;
}
/// One projection makes q, k and v (Phi-3's qkv_proj, GPT-NeoX's query_key_value).
[[nodiscard]] constexpr bool fused_qkv(const model_shape& m) {
  return m.attention == attention_layout::qkv_proj || m.attention == attention_layout::query_key_value;
}
/// The dense MLP is a GELU MLP without a gate (StarCoder2's c_fc, GPT-NeoX's dense_h_to_4h).
[[nodiscard]] constexpr bool plain_mlp(const model_shape& m) {
  return m.mlp == mlp_layout::c_fc || m.mlp == mlp_layout::dense_h_to_4h;
}
/// A module of GPT-NeoX's naming (its block registers its LayerNorms first and names its dropouts after
/// `dense`).
[[nodiscard]] constexpr bool neox_layout(const model_shape& m) {
  return m.attention == attention_layout::query_key_value;
}
/// q and k each pass a norm with weights (Qwen3's, OLMo-2's, Cohere's), not none or Llama-4's weightless L2.
[[nodiscard]] constexpr bool weighted_qk_norms(const model_shape& m) {
  return m.qk_norm == qk_norm_kind::per_head || m.qk_norm == qk_norm_kind::full_width;
}
/// Multi-head latent attention (DeepSeek-V2/V3): compressed K/V through kv_a_proj_with_mqa and kv_b_proj.
[[nodiscard]] constexpr bool is_mla(const model_shape& m) { return m.attention == attention_layout::mla; }
/// The width RoPE rotates in each head, and so the width of its cos/sin tables.
[[nodiscard]] constexpr std::uint64_t rope_width(const model_shape& m) {
  if (is_mla(m)) return m.qk_rope_head_dim;  // MLA rotates qk_rope_head_dim of each head
  if (m.experts == moe_layout::gpt_oss)
    return m.head_dim / 2;  // GptOssRotaryEmbedding: one angle per pair of the two halves
  return m.rotary_dim != 0 ? m.rotary_dim : m.head_dim;
}

/// Tensors per norm: an nn.LayerNorm holds a bias beside its weight; the RMSNorms and Cohere's norm a weight.
[[nodiscard]] constexpr std::uint64_t norm_tensors(const model_shape& m) {
  switch (m.norm) {
    case norm_kind::layer_norm:
      return 2;
    case norm_kind::rms:
    case norm_kind::rms_fp32_scale:
    case norm_kind::gemma_rms:
    case norm_kind::cohere:
      return 1;
  }
  return 1;
}

/// Whether the router is an nn.Linear, which target_modules can adapt and bitsandbytes quantises: Qwen's and
/// Mixtral's gate. gpt-oss's and DeepSeek's are nn.Parameter tensors; Llama-4's returns (scores, logits),
/// which a LoRA wrapper cannot add to, so it is priced as neither adapted nor quantised.
[[nodiscard]] constexpr bool router_is_linear(const model_shape& m) {
  switch (m.experts) {
    case moe_layout::linear_experts:
      return true;
    case moe_layout::deepseek:
    case moe_layout::llama4:
    case moe_layout::gpt_oss:
    case moe_layout::torchtune:  // an nn.Linear that torchtune's LoRA builders never wrap nor quantise
      return false;
  }
  return false;
}
/// Llama-4's MoE block as transformers or torchtune builds it (interleaved MoE layers, a shared expert).
[[nodiscard]] constexpr bool llama4_moe(const model_shape& m) {
  return m.experts == moe_layout::llama4 || m.experts == moe_layout::torchtune;
}
/// Experts each token's hidden state goes through: k of E, except Llama-4's, which runs every expert on every
/// token (a zero weight where it was not routed).
[[nodiscard]] constexpr std::uint64_t experts_run_per_token(const model_shape& m) {
  switch (m.experts) {
    case moe_layout::llama4:
      return m.num_experts;
    case moe_layout::linear_experts:
    case moe_layout::deepseek:
    case moe_layout::gpt_oss:
    case moe_layout::torchtune:
      return m.num_experts_per_tok;
  }
  return m.num_experts_per_tok;
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
  std::uint64_t rows = 0;        ///< out_features (or embedding rows); the length for 1-D tensors
  std::uint64_t cols = 0;        ///< in_features; 0 for 1-D tensors
  std::uint64_t copies = 0;      ///< layers × experts holding this tensor
  bool nn_linear = true;         ///< false for a matrix held as an nn.Parameter (gpt-oss experts, router)
  bool routed_expert = false;    ///< one of the routed experts' tensors: a token multiplies k of E copies
  bool lora_per_expert = false;  ///< torchtune's LoRAGroupedExperts adapts this 3-D expert tensor per expert
  std::uint32_t stacked = 1;     ///< matrices stacked in this one tensor (a 3-D parameter one by one: E)

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
/// Matrices one stored tensor of the group holds: E for a 3-D expert parameter (and its per-expert adapters),
/// else 1.
[[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t matrices_per_tensor(const model_shape& m,
                                                                          const param_tensor& t) {
  return t.routed_expert && !t.nn_linear ? m.num_experts : 1;
}
[[nodiscard]] constexpr stored_tensors stored_as(const model_shape& m, const param_tensor& t) {
  const std::uint64_t per = matrices_per_tensor(m, t);
  return {t.copies / per, t.numel() * per};
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

namespace detail {
/// The sizes every model has, and the attention heads' consistency.
constexpr void validate_sizes(const model_shape& m) {
  require_size(m.hidden_size, "hidden_size", max_dimension);
  require_size(m.num_attention_heads, "num_attention_heads", max_dimension);
  require_size(m.num_key_value_heads, "num_key_value_heads", max_dimension);
  require_size(m.head_dim, "head_dim", max_dimension);
  require_size(m.num_hidden_layers, "num_hidden_layers", max_layers);
  require_size(m.vocab_size, "vocab_size", max_dimension);
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    fail("num_key_value_heads", "must divide num_attention_heads");
  if (query_width(m) > max_dimension) fail("head_dim", "num_attention_heads·head_dim is absurdly large");
  if (m.norms_per_layer > 8) fail("norms_per_layer", "is absurdly large");
  if (m.residual == residual_layout::post_norms && m.norms_per_layer != 2)
    fail("norms_per_layer", "must be 2 with residual post_norms (OLMo-2's two output norms)");
}

/// The MLP: experts or a dense intermediate size, and the expert layouts (gpt-oss's 3-D experts) and plain
/// MLPs.
constexpr void validate_mlp(const model_shape& m) {
  if (is_moe(m)) {
    require_size(m.num_experts, "num_experts", max_experts);
    require_size(m.num_experts_per_tok, "num_experts_per_tok", max_experts);
    require_size(m.moe_intermediate_size, "moe_intermediate_size", max_dimension);
    if (m.num_experts_per_tok > m.num_experts) fail("num_experts_per_tok", "must not exceed num_experts");
  } else {
    require_size(m.intermediate_size, "intermediate_size", max_dimension);
    if (m.num_experts_per_tok != 0) fail("num_experts_per_tok", "set without num_experts");
  }
  if (m.shared_expert_intermediate_size > max_dimension)
    fail("shared_expert_intermediate_size", "is absurdly large");
  if (m.experts == moe_layout::gpt_oss && (!is_moe(m) || m.shared_expert_intermediate_size != 0 ||
                                           m.qk_norm != qk_norm_kind::none || fused_qkv(m)))
    fail("experts",
         "gpt_oss is gpt-oss's layout: routed experts only, no shared expert, q/k norms or fused qkv");
  if (m.router_bias && m.experts != moe_layout::gpt_oss)
    fail("router_bias", "is modelled for gpt-oss's router only");
  if (plain_mlp(m) && is_moe(m))
    fail("mlp", "c_fc and dense_h_to_4h are StarCoder2's and GPT-NeoX's dense GELU MLPs: no experts");
}

/// Partial rotary, GPT-NeoX's and Cohere's parallel blocks, and the LayerNorm families.
constexpr void validate_block_layout(const model_shape& m) {
  if (m.rotary_dim > m.head_dim || m.rotary_dim % 2 != 0)
    fail("rotary_dim", "must be an even width no larger than head_dim");
  if ((m.attention == attention_layout::query_key_value) != (m.mlp == mlp_layout::dense_h_to_4h))
    fail("attention", "query_key_value is GPT-NeoX's layout, always with its dense_h_to_4h MLP");
  if (m.residual == residual_layout::parallel &&
      !(m.norm == norm_kind::layer_norm && m.norms_per_layer == 2) &&
      !(m.norm == norm_kind::cohere && m.norms_per_layer == 1))
    fail("residual", "parallel is modelled for GPT-NeoX's two LayerNorms and Cohere's one norm only");
  if (m.norm == norm_kind::cohere && (m.residual != residual_layout::parallel ||
                                      m.qk_norm == qk_norm_kind::per_head || m.qk_norm == qk_norm_kind::l2))
    fail("norm", "cohere is Cohere's layout: one norm per parallel block, q/k norms with per-head weights");
  if (m.norm == norm_kind::layer_norm && (m.residual == residual_layout::post_norms ||
                                          m.qk_norm != qk_norm_kind::none || m.norms_per_layer != 2))
    fail("norm", "layer_norm is StarCoder2's and GPT-NeoX's two LayerNorms: no q/k norms");
}

/// Multi-head latent attention (DeepSeek-V2/V3): its ranks, and DeepSeek's block around it.
constexpr void validate_mla(const model_shape& m) {
  if (!is_mla(m)) {
    if (m.kv_lora_rank != 0 || m.q_lora_rank != 0 || m.qk_rope_head_dim != 0 || m.v_head_dim != 0)
      fail("q_lora_rank", "kv_lora_rank, q_lora_rank, qk_rope_head_dim and v_head_dim need attention mla");
    return;
  }
  require_size(m.kv_lora_rank, "kv_lora_rank", max_dimension);
  require_size(m.qk_rope_head_dim, "qk_rope_head_dim", max_dimension);
  require_size(m.v_head_dim, "v_head_dim", max_dimension);
  if (m.q_lora_rank > max_dimension) fail("q_lora_rank", "is absurdly large");
  if (m.qk_rope_head_dim % 2 != 0 || m.qk_rope_head_dim >= m.head_dim)
    fail("qk_rope_head_dim", "must be even and smaller than qk_nope_head_dim + qk_rope_head_dim");
  if (m.num_key_value_heads != m.num_attention_heads)
    fail("num_key_value_heads", "must equal num_attention_heads under MLA (every head has its keys)");
  if (m.qk_norm != qk_norm_kind::none || m.attention_bias || m.o_proj_bias ||
      m.norm == norm_kind::layer_norm || m.residual != residual_layout::sequential ||
      m.norms_per_layer != 2 || m.rotary_dim != 0 || m.attention_sinks)
    fail("kv_lora_rank", "MLA is modelled with DeepSeek's block: two RMSNorms, unbiased projections");
}

/// DeepSeek's dense first layers and its MoE; Llama-4's interleaved MoE layers, NoPE layers and L2 q/k norm.
constexpr void validate_layer_kinds(const model_shape& m) {
  if (m.dense_layers != 0) {
    if (m.experts != moe_layout::deepseek)
      fail("first_k_dense_replace", "dense first layers are modelled for DeepSeek's MoE only");
    if (m.dense_layers >= m.num_hidden_layers)
      fail("first_k_dense_replace", "must be smaller than num_hidden_layers");
    require_size(m.intermediate_size, "intermediate_size", max_dimension);
  }
  if ((m.experts == moe_layout::deepseek || m.router_sigmoid) &&
      (!is_moe(m) || m.experts == moe_layout::gpt_oss || m.mlp != mlp_layout::gated || m.mlp_bias))
    fail("experts", "deepseek is DeepSeek's MoE: routed SwiGLU experts of nn.Linear without biases");
  if (m.router_sigmoid && m.experts != moe_layout::deepseek)
    fail("router_sigmoid", "set without DeepSeek's experts (experts = deepseek)");
  if (m.moe_layer_step > 1) {
    if (!llama4_moe(m)) fail("interleave_moe_layer_step", "MoE every n-th layer is modelled for Llama-4");
    if (m.moe_layer_step > m.num_hidden_layers)
      fail("interleave_moe_layer_step", "exceeds num_hidden_layers: no layer would have experts");
    require_size(m.intermediate_size, "intermediate_size_mlp", max_dimension);
  }
  if (m.nope_layer_interval > max_layers) fail("no_rope_layer_interval", "is absurdly large");
  if (llama4_moe(m) && (!is_moe(m) || m.mlp != mlp_layout::gated || m.mlp_bias || m.dense_layers != 0 ||
                        m.shared_expert_intermediate_size == 0))
    fail("experts", "llama4 is Llama-4's MoE: 3-D SwiGLU experts without biases beside a shared expert");
  if (m.complex_rope && weighted_qk_norms(m))
    fail("use_qk_norm", "Llama-4's q/k norm is the weightless L2 one, which excludes RMSNorm q/k norms");
  if ((m.qk_norm == qk_norm_kind::l2 || m.nope_layer_interval != 0 || m.attn_temperature_tuning) &&
      (!m.complex_rope || m.attention != attention_layout::q_k_v || m.norm == norm_kind::layer_norm ||
       m.residual != residual_layout::sequential || m.norms_per_layer != 2 || m.rotary_dim != 0 ||
       m.attention_sinks))
    fail("no_rope_layer_interval", "NoPE layers and the L2 q/k norm are modelled with Llama-4's block");
}
}  // namespace detail

/// Throws input_error naming the first field that is zero, absurd or inconsistent.
constexpr void validate(const model_shape& m) {
  detail::validate_sizes(m);
  detail::validate_mlp(m);
  detail::validate_block_layout(m);
  detail::validate_mla(m);
  detail::validate_layer_kinds(m);
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
    k.norm_topk_prob = k.router_sigmoid = false;
    k.experts = moe_layout::linear_experts;
  }
  return k;
}
}  // namespace detail
/// Calls `visit(shape, layers)` for each group of uniform layers, the first layer's group first. A uniform
/// model is visited as itself: no copy of its shape (the estimates call this on every run).
template <class Visit>
constexpr void for_each_layer_group(const model_shape& m, Visit&& visit) {
  if (uniform_layers(m)) {
    visit(m, m.num_hidden_layers);
    return;
  }
  // Counts of the four kinds (MoE or dense × NoPE or RoPE); the first layer's kind leads.
  std::array<std::uint64_t, 4> count{};
  for (std::uint64_t i = 0; i < m.num_hidden_layers; ++i)
    ++count[(moe_layer(m, i) ? 2u : 0u) + (nope_layer(m, i) ? 1u : 0u)];
  const std::size_t first = (moe_layer(m, 0) ? 2u : 0u) + (nope_layer(m, 0) ? 1u : 0u);
  for (std::size_t n = 0; n < 4; ++n) {
    const std::size_t kind = (first + n) % 4;
    if (count[kind] != 0) visit(detail::layer_kind(m, kind >= 2, kind % 2 == 1, count[kind]), count[kind]);
  }
}
/// The groups of for_each_layer_group as a list.
[[nodiscard]] constexpr layer_group_list layer_groups(const model_shape& m) {
  layer_group_list out;
  for_each_layer_group(m, [&](const model_shape& kind, std::uint64_t layers) {
    out.items[out.size++] = {kind, layers};
  });
  return out;
}

namespace detail {
/// Decoder layers as visit_layer lays them out: every layer grouped (each tensor once, copies = layers ×
/// experts) or one layer in model.parameters() order (copies 1; each expert and each norm on its own).
struct layer_run {
  std::uint64_t layers = 1;  ///< decoder layers this visit stands for
  std::uint64_t dense = 0;   ///< of them, layers with a dense MLP
  std::uint64_t moe = 0;     ///< of them, layers with the routed experts
  bool one_by_one = false;   ///< model.parameters() order, one tensor at a time
};

/// A linear layer's weight, then its bias when it has one (the order nn.Linear registers them).
template <class Emit>
HEADROOM_INLINE constexpr void emit_linear(Emit& emit, module_name module, std::uint64_t out,
                                           std::uint64_t in, std::uint64_t copies, bool bias,
                                           bool nn_linear = true, bool routed = false) {
  emit(param_tensor{module, tensor_role::linear_weight, out, in, copies, nn_linear, routed});
  if (bias) emit(param_tensor{module, tensor_role::bias, out, 0, copies, nn_linear, routed});
}

/// The attention block (LlamaAttention, Qwen3Attention, GPTNeoXAttention, GptOssAttention;
/// DeepseekV3Attention: q_a_proj → q_a_layernorm → q_b_proj, or one q_proj, and kv_a_proj_with_mqa →
/// kv_a_layernorm → kv_b_proj, whose output holds a head's nope keys and values).
template <class Emit>
HEADROOM_INLINE constexpr void visit_attention(const model_shape& m, std::uint64_t layers, Emit& emit) {
  using mn = module_name;
  const std::uint64_t d = m.hidden_size, q = query_width(m), kv = kv_width(m), L = layers;
  const bool bias = m.attention_bias;
  const block_module_names names = block_modules(m);
  switch (m.attention) {
    case attention_layout::mla: {
      const std::uint64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank;
      if (ql != 0) {
        emit_linear(emit, mn::q_a_proj, ql, d, L, false);
        emit(param_tensor{mn::norm, tensor_role::norm_weight, ql, 0, L});  // q_a_layernorm
        emit_linear(emit, mn::q_b_proj, q, ql, L, false);
      } else {
        emit_linear(emit, mn::q_proj, q, d, L, false);
      }
      emit_linear(emit, mn::kv_a_proj_with_mqa, kvl + m.qk_rope_head_dim, d, L, false);
      emit(param_tensor{mn::norm, tensor_role::norm_weight, kvl, 0, L});  // kv_a_layernorm
      emit_linear(emit, mn::kv_b_proj, kv_b_width(m), kvl, L, false);
      break;
    }
    case attention_layout::qkv_proj:
    case attention_layout::query_key_value:
      emit_linear(emit, names.qkv, q + 2 * kv, d, L, bias);  // qkv_proj: d → (a + 2g)·head_dim
      break;
    case attention_layout::q_k_v:
      emit_linear(emit, mn::q_proj, q, d, L, bias);   // q_proj: d → a·head_dim
      emit_linear(emit, mn::k_proj, kv, d, L, bias);  // k_proj: d → g·head_dim
      emit_linear(emit, mn::v_proj, kv, d, L, bias);  // v_proj: d → g·head_dim
      break;
  }
  emit_linear(emit, names.out, d, attention_output_width(m), L, m.o_proj_bias);  // o_proj: a·head_dim → d
  if (m.attention_sinks) emit(param_tensor{mn::sinks, tensor_role::bias, m.num_attention_heads, 0, L});
}

/// Qwen3's q_norm and k_norm (head_dim each); OLMo-2's over the full query and key widths.
template <class Emit>
HEADROOM_INLINE constexpr void visit_qk_norms(const model_shape& m, layer_run run, Emit& emit) {
  constexpr tensor_role nw = tensor_role::norm_weight;
  switch (m.qk_norm) {
    case qk_norm_kind::none:
    case qk_norm_kind::l2:  // weightless
      return;
    case qk_norm_kind::full_width:  // Olmo2Attention: RMSNorm(a·hd), RMSNorm(g·hd); Cohere: (a, hd), (g, hd)
      emit(param_tensor{module_name::norm, nw, query_width(m), 0, run.layers});
      emit(param_tensor{module_name::norm, nw, kv_width(m), 0, run.layers});
      return;
    case qk_norm_kind::per_head:
      if (run.one_by_one) {
        emit(param_tensor{module_name::norm, nw, m.head_dim, 0, 1});
        emit(param_tensor{module_name::norm, nw, m.head_dim, 0, 1});
      } else {
        emit(param_tensor{module_name::norm, nw, m.head_dim, 0, 2 * run.layers});
      }
      return;
  }
}

/// A SwiGLU MLP of width ff (gate_proj, up_proj or a fused gate_up_proj, then down_proj), `copies` times.
template <class Emit>
HEADROOM_INLINE constexpr void emit_swiglu(const model_shape& m, Emit& emit, std::uint64_t ff,
                                           std::uint64_t copies, bool routed) {
  const std::uint64_t d = m.hidden_size;
  if (m.mlp == mlp_layout::gate_up_proj) {
    emit_linear(emit, module_name::gate_up_proj, 2 * ff, d, copies, m.mlp_bias, true, routed);  // d → 2·d_ff
  } else {
    emit_linear(emit, module_name::gate_proj, ff, d, copies, m.mlp_bias, true, routed);  // d → d_ff
    emit_linear(emit, module_name::up_proj, ff, d, copies, m.mlp_bias, true, routed);    // d → d_ff
  }
  emit_linear(emit, module_name::down_proj, d, ff, copies, m.mlp_bias, true, routed);  // d_ff → d
}

/// The routed experts' SwiGLUs of a run: one group of layers × E copies, or each expert in turn.
template <class Emit>
HEADROOM_INLINE constexpr void emit_routed_swiglus(const model_shape& m, layer_run run, Emit& emit) {
  if (!run.one_by_one) {
    emit_swiglu(m, emit, m.moe_intermediate_size, checked_mul(run.moe, m.num_experts, "experts"), true);
    return;
  }
  for (std::uint64_t e = 0; e < m.num_experts; ++e) emit_swiglu(m, emit, m.moe_intermediate_size, 1, true);
}

/// An expert parameter held as one 3-D tensor per layer (gpt-oss, Llama-4: E × rows × cols): grouped as
/// layers × E matrices; one by one as the whole tensor, as model.parameters() holds it.
template <class Emit>
HEADROOM_INLINE constexpr void emit_3d_experts(const model_shape& m, layer_run run, Emit& emit,
                                               std::uint64_t rows, std::uint64_t cols, bool bias) {
  const std::uint64_t E = m.num_experts;
  if (run.one_by_one) {
    emit_linear(emit, module_name::experts, E * rows, cols, 1, bias, false);
    return;
  }
  emit_linear(emit, module_name::experts, rows, cols, checked_mul(run.moe, E, "experts"), bias, false, true);
}

/// torchtune's GroupedExperts (modules/moe/experts.py): gate_proj (E, d, f), down_proj (E, f, d), up_proj
/// (E, d, f), each adapted per expert by LoRAGroupedExperts; one by one, each the whole 3-D tensor.
template <class Emit>
HEADROOM_INLINE constexpr void emit_grouped_experts(const model_shape& m, layer_run run, Emit& emit) {
  const std::uint64_t d = m.hidden_size, f = m.moe_intermediate_size, E = m.num_experts;
  const std::array<param_tensor, 3> parts{{{module_name::gate_proj, tensor_role::linear_weight, f, d},
                                           {module_name::down_proj, tensor_role::linear_weight, d, f},
                                           {module_name::up_proj, tensor_role::linear_weight, f, d}}};
  for (param_tensor t : parts) {
    t.nn_linear = false;
    t.lora_per_expert = true;
    if (run.one_by_one) {
      t.rows = checked_mul(E, t.rows, "experts");
      t.copies = 1;
      t.stacked = static_cast<std::uint32_t>(E);  // validated: at most max_experts
    } else {
      t.copies = checked_mul(run.moe, E, "experts");
      t.routed_expert = true;
    }
    emit(t);
  }
}

/// An MoE layer's MLP in each family's registration order. GptOssMLP: router (weight, bias), then the
/// experts' gate_up_proj (E, d, 2f) and down_proj (E, f, d) with biases. Llama4TextMoe: experts, router (an
/// nn.Linear subclass returning (scores, logits): priced as neither adapted nor quantised), shared_expert.
/// DeepseekV3MoE: experts, gate (an nn.Parameter), shared_experts. Qwen-MoE: gate, experts, shared_expert,
/// shared_expert_gate. torchtune's MoE: experts, router.gate, shared_expert (w1, w2, w3).
template <class Emit>
HEADROOM_INLINE constexpr void visit_moe_mlp(const model_shape& m, layer_run run, Emit& emit) {
  const std::uint64_t d = m.hidden_size, f = m.moe_intermediate_size, E = m.num_experts, L = run.moe;
  const bool linear_router = router_is_linear(m);
  switch (m.experts) {
    case moe_layout::gpt_oss:
      emit_linear(emit, module_name::router, E, d, L, m.router_bias, linear_router);
      emit_3d_experts(m, run, emit, 2 * f, d, true);
      emit_3d_experts(m, run, emit, d, f, true);
      return;
    case moe_layout::llama4:
      emit_3d_experts(m, run, emit, 2 * f, d, false);
      emit_3d_experts(m, run, emit, d, f, false);
      emit_linear(emit, module_name::router, E, d, L, false, linear_router);
      emit_swiglu(m, emit, m.shared_expert_intermediate_size, L, false);
      return;
    case moe_layout::torchtune:
      emit_grouped_experts(m, run, emit);
      emit_linear(emit, module_name::router, E, d, L, false, linear_router);
      emit_swiglu(m, emit, m.shared_expert_intermediate_size, L, false);
      return;
    case moe_layout::deepseek:
      emit_routed_swiglus(m, run, emit);
      emit_linear(emit, module_name::router, E, d, L, false,
                  linear_router);  // e_score_correction_bias: a buffer
      if (m.shared_expert_intermediate_size != 0)
        emit_swiglu(m, emit, m.shared_expert_intermediate_size, L, false);
      return;
    case moe_layout::linear_experts:
      emit_linear(emit, module_name::router, E, d, L, false, linear_router);
      emit_routed_swiglus(m, run, emit);
      if (m.shared_expert_intermediate_size != 0) {
        emit_swiglu(m, emit, m.shared_expert_intermediate_size, L, false);
        emit_linear(emit, module_name::shared_expert_gate, 1, d, L, false);  // Qwen2-MoE's gate
      }
      return;
  }
}

/// A dense layer's MLP: Starcoder2MLP's (GPT-NeoX's) c_fc d → d_ff and c_proj d_ff → d, or a SwiGLU of
/// intermediate_size (DeepSeek's first layers, Llama-4's dense layers: intermediate_size_mlp).
template <class Emit>
HEADROOM_INLINE constexpr void visit_dense_mlp(const model_shape& m, std::uint64_t layers, Emit& emit) {
  switch (m.mlp) {
    case mlp_layout::gated:
    case mlp_layout::gate_up_proj:
      return emit_swiglu(m, emit, m.intermediate_size, layers, false);
    case mlp_layout::c_fc:
    case mlp_layout::dense_h_to_4h: {
      const block_module_names names = block_modules(m);
      emit_linear(emit, names.mlp_in, m.intermediate_size, m.hidden_size, layers, m.mlp_bias);
      emit_linear(emit, names.mlp_out, m.hidden_size, m.intermediate_size, layers, m.mlp_bias);
      return;
    }
  }
}

/// A layer's norms: input and post-attention norms (Gemma-2 and OLMo-2: more); nn.LayerNorm holds a bias
/// beside its weight, so its parameters are twice an RMSNorm's.
template <class Emit>
HEADROOM_INLINE constexpr void visit_layer_norms(const model_shape& m, layer_run run, Emit& emit) {
  const std::uint64_t tensors = m.norms_per_layer * norm_tensors(m);
  const param_tensor one{module_name::norm, tensor_role::norm_weight, m.hidden_size, 0, 1};
  if (!run.one_by_one) {
    emit(param_tensor{module_name::norm, tensor_role::norm_weight, m.hidden_size, 0,
                      checked_mul(run.layers, tensors, "norms")});
    return;
  }
  for (std::uint64_t k = 0; k < tensors; ++k) emit(one);
}

/// Decoder layers in registration order (GPTNeoXLayer registers its two LayerNorms first): one layer, or
/// every layer grouped (the dense MLPs over the dense layers, the experts over the MoE layers).
template <class Emit>
HEADROOM_INLINE constexpr void visit_layer(const model_shape& m, layer_run run, Emit& emit) {
  if (neox_layout(m)) visit_layer_norms(m, run, emit);
  visit_attention(m, run.layers, emit);
  visit_qk_norms(m, run, emit);
  if (run.dense != 0) visit_dense_mlp(m, run.dense, emit);
  if (run.moe != 0) visit_moe_mlp(m, run, emit);
  if (!neox_layout(m)) visit_layer_norms(m, run, emit);
}

/// The whole model: embed_tokens, the layers (grouped, or one by one), the final norm (and a LayerNorm's
/// bias), an untied lm_head. Absent tensors (no rows or no copies) are skipped.
template <class Visit>
HEADROOM_INLINE constexpr void visit_model(const model_shape& m, bool one_by_one, Visit& visit) {
  validate(m);
  auto emit = [&visit](param_tensor t) HEADROOM_INLINE {
    if (t.copies != 0 && t.rows != 0) visit(t);
  };
  const std::uint64_t d = m.hidden_size;
  emit(param_tensor{module_name::embed_tokens, tensor_role::embedding, m.vocab_size, d, 1});  // V × d
  if (one_by_one) {
    for (std::uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
      const std::uint64_t moe = moe_layer(m, layer) ? 1 : 0;
      visit_layer(m, layer_run{1, 1 - moe, moe, true}, emit);
    }
  } else {  // DeepSeek's first dense layers, Llama-4's dense ones, the layers with routed experts
    visit_layer(m, layer_run{m.num_hidden_layers, dense_mlp_layers(m), moe_layers(m), false}, emit);
  }
  emit(param_tensor{module_name::norm, tensor_role::norm_weight, d, 0, 1});  // final norm: not a layer's
  if (norm_tensors(m) == 2) emit(param_tensor{module_name::norm, tensor_role::norm_weight, d, 0, 1});  // bias
  if (!m.tie_word_embeddings)
    emit(param_tensor{module_name::lm_head, tensor_role::linear_weight, m.vocab_size, d, 1});
}
}  // namespace detail

/// Calls `visit(param_tensor)` for every weight tensor group of the model, without storing them (the
/// estimators sum as they go): each distinct tensor once, its copies the layers (× experts) holding it.
/// Source of each line: the transformers modeling files (LlamaDecoderLayer, Qwen3Attention,
/// Gemma2DecoderLayer, Qwen3MoeSparseMoeBlock; detail::visit_layer).
template <class Visit>
HEADROOM_INLINE constexpr void visit_parameters(const model_shape& m, Visit&& visit) {
  detail::visit_model(m, false, visit);
}

/// Every weight tensor one at a time (copies = 1), in the order the transformers modules register them,
/// which is the order of model.parameters() and so of a for-loop optimizer: embed_tokens; per layer
/// self_attn (q, k, v or qkv, o, then q_norm, k_norm), mlp (each family's order of router, experts and
/// shared expert; or the dense gate, up, down), the layer norms; then the final norm and lm_head. Biases
/// follow their weight. The same tensors as visit_parameters, from the same detail::visit_layer.
template <class Visit>
constexpr void visit_parameters_in_order(const model_shape& m, Visit&& visit) {
  detail::visit_model(m, true, visit);
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
  return table * (m.tie_word_embeddings ? 1 : 2) + m.hidden_size * norm_tensors(m);
}
/// Parameters of one decoder layer of `m`, whose layers are uniform (one of layer_groups).
[[nodiscard]] constexpr params layer_parameter_count(const model_shape& m) {
  return params((parameter_count(m).count() - model_level_parameters(m)) / m.num_hidden_layers);
}

}  // namespace headroom
