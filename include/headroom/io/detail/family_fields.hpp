// SPDX-License-Identifier: MIT
// The config.json fields of the families whose shapes need more than the common keys (DeepSeek's MLA and
// experts, Llama-4's interleaved MoE, GELU MLPs) and the parameter counts of the vision towers beside a
// multimodal language model (SigLIP, Llama-4's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../error.hpp"
#include "../../model.hpp"
#include "../../units.hpp"
#include "json_fields.hpp"

namespace headroom::detail {
/// A family's reader of the keys it has beyond the common shape (an architectures row names it; it runs after
/// the common keys and the MLP or experts are read).
using family_reader = void (*)(const json& j, const std::string& origin, model_shape& m,
                               std::vector<std::string>& notes);

/// DeepseekV3Config / DeepseekV2Config: MLA widths, the dense first layers, the shared experts, the router.
inline void read_deepseek(const json& j, const std::string& origin, bool v2, model_shape& m,
                          std::vector<std::string>& notes) {
  const std::string act = read_string_or(j, "hidden_act", origin, "silu");
  if (act != "silu")
    throw input_error(key_path(origin, "hidden_act"), "'" + act + "' is not priced; valid: silu");
  if (read_bool_or(j, "attention_bias", origin, false))
    throw input_error(key_path(origin, "attention_bias"),
                      "biased MLA projections are not priced (need false)");
  m.kv_lora_rank = read_count(j, "kv_lora_rank", origin);
  m.q_lora_rank = read_count_or(j, "q_lora_rank", origin, 0);  // null: one q_proj (DeepSeek-V2-Lite)
  m.qk_rope_head_dim = read_count(j, "qk_rope_head_dim", origin);
  m.v_head_dim = read_count(j, "v_head_dim", origin);
  // DeepseekV3Attention.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim (the config's head_dim is the RoPE
  // width)
  m.head_dim = checked_add(read_count(j, "qk_nope_head_dim", origin), m.qk_rope_head_dim, "qk head_dim");
  m.intermediate_size = read_count(j, "intermediate_size", origin);  // the dense first layers' MLP
  m.dense_layers = read_count_or_zero(j, "first_k_dense_replace", origin, 0, max_layers);
  if (read_count_or(j, "moe_layer_freq", origin, 1) != 1)
    throw input_error(key_path(origin, "moe_layer_freq"),
                      "MoE every n-th layer is not priced (need 1: every layer after the dense ones)");
  const std::uint64_t shared = read_count_or_zero(j, "n_shared_experts", origin, 0, max_experts);
  m.shared_expert_intermediate_size = checked_mul(shared, m.moe_intermediate_size, "shared experts");
  const std::string scoring = read_string_or(j, "scoring_func", origin, v2 ? "softmax" : "sigmoid");
  if (scoring != "sigmoid" && scoring != "softmax")
    throw input_error(key_path(origin, "scoring_func"), "'" + scoring + "'; valid: sigmoid, softmax");
  m.router_sigmoid = scoring == "sigmoid";
  if (m.router_sigmoid) {  // group-limited top-k: n_group groups, topk_group kept
    const std::uint64_t groups = read_count_or(j, "n_group", origin, 1, max_experts);
    if (m.num_experts % groups != 0)
      throw input_error(key_path(origin, "n_group"), "must divide n_routed_experts");
    if (read_count_or(j, "topk_group", origin, 1, max_experts) > groups)
      throw input_error(key_path(origin, "topk_group"), "must not exceed n_group");
  }
  m.norm_topk_prob = read_bool_or(j, "norm_topk_prob", origin, !v2);
  if (read_count_or_zero(j, "num_nextn_predict_layers", origin, 0, 64) != 0)
    notes.emplace_back(
        "num_nextn_predict_layers: the checkpoint's multi-token-prediction layers are not part of the model "
        "transformers builds (DeepseekV3ForCausalLM ignores them on load), so they are not counted or "
        "trained");
  if (v2 || !m.router_sigmoid)
    notes.emplace_back(
        "DeepSeek-V2: parameters exact; activations priced with DeepSeek-V3's block (measured), whose router "
        "and RoPE save slightly different tensors from V2's softmax router and complex-number RoPE (not "
        "measured)");
}

/// hidden_act of a GELU MLP (StarCoder2, GPT-NeoX): ACT2FN's gelu and gelu_pytorch_tanh keep only their
/// input; gelu_new, gelu_fast and the others are Python modules that keep more, so they are refused.
inline void require_gelu(const json& j, const char* fallback, const std::string& origin) {
  const std::string act = read_string_or(j, "hidden_act", origin, fallback);
  if (act != "gelu" && act != "gelu_pytorch_tanh")
    throw input_error(
        key_path(origin, "hidden_act"),
        "'" + act + "' is not priced (its Python GELU keeps more tensors); valid: gelu, gelu_pytorch_tanh");
}
/// A config list that must hold the layers a regular pattern gives (Llama-4's moe_layers: indices;
/// no_rope_layers: one 0/1 per layer); absent, null or empty means the pattern itself.
inline void require_layer_pattern(const json& j, std::string_view key, const std::string& origin,
                                  const std::vector<std::uint64_t>& expected, const std::string& pattern) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null() || (it->is_array() && it->empty())) return;
  bool same = it->is_array() && it->size() == expected.size();
  for (std::size_t i = 0; same && i < expected.size(); ++i)
    same = (*it)[i].is_number_integer() && (*it)[i].get<std::int64_t>() >= 0 &&
           (*it)[i].get<std::uint64_t>() == expected[i];
  if (!same) throw input_error(key_path(origin, key), "a layout other than " + pattern + " is not priced");
}

/// How read_llama4's note on transformers' MoE begins (a torchtune recipe, which builds its own, drops it).
inline constexpr std::string_view llama4_transformers_moe_note = "Llama-4: transformers' Llama4TextMoe";
/// Llama4TextConfig (transformers models/llama4/configuration_llama4.py) read for Llama4TextDecoderLayer,
/// Llama4TextMoe, Llama4TextExperts and Llama4TextAttention: intermediate_size is the experts' (and the
/// shared expert's) width, intermediate_size_mlp the dense layers'; layer i is MoE when (i + 1) % step == 0
/// and NoPE when (i + 1) % no_rope_layer_interval == 0 (the config's moe_layers and no_rope_layers defaults).
inline void read_llama4(const json& j, const std::string& origin, model_shape& m,
                        std::vector<std::string>& notes) {
  const std::string act = read_string_or(j, "hidden_act", origin, "silu");
  if (act != "silu")
    throw input_error(key_path(origin, "hidden_act"), "'" + act + "' is not priced; valid: silu");
  m.complex_rope = true;
  m.shared_expert_intermediate_size =
      m.moe_intermediate_size;  // Llama4TextMoe.shared_expert: intermediate_size
  m.intermediate_size = read_count_or(j, "intermediate_size_mlp", origin, 16384);  // the config class default
  const std::uint64_t L = m.num_hidden_layers;
  m.moe_layer_step = read_count_or(j, "interleave_moe_layer_step", origin, 1, max_layers);
  if (m.moe_layer_step > L)
    throw input_error(key_path(origin, "interleave_moe_layer_step"),
                      "exceeds num_hidden_layers: no layer would have experts");
  std::vector<std::uint64_t> moe, rope;
  for (std::uint64_t i = m.moe_layer_step - 1; i < L; i += m.moe_layer_step) moe.push_back(i);
  require_layer_pattern(j, "moe_layers", origin, moe, "every interleave_moe_layer_step-th layer");
  m.nope_layer_interval = read_count_or(j, "no_rope_layer_interval", origin, 4, max_layers);
  for (std::uint64_t i = 0; i < L; ++i) rope.push_back((i + 1) % m.nope_layer_interval != 0 ? 1 : 0);
  require_layer_pattern(j, "no_rope_layers", origin, rope, "NoPE every no_rope_layer_interval-th layer");
  if (!read_bool_or(j, "use_qk_norm", origin, true)) m.qk_norm = qk_norm_kind::none;  // the row's L2 norm
  // attn_temperature_tuning: true in the config class; some checkpoints write a number (nonzero = on)
  const auto tuning = j.find("attn_temperature_tuning");
  if (tuning == j.end() || tuning->is_null())
    m.attn_temperature_tuning = true;
  else if (tuning->is_boolean())
    m.attn_temperature_tuning = tuning->get<bool>();
  else if (tuning->is_number() && tuning->get<double>() >= 0)
    m.attn_temperature_tuning = tuning->get<double>() != 0;
  else
    throw input_error(key_path(origin, "attn_temperature_tuning"),
                      "must be true, false or a non-negative number, got " + tuning->dump());
  if (const std::uint64_t chunk = read_count_or(j, "attention_chunk_size", origin, 8192); chunk != 0)
    notes.push_back(
        "attention_chunk_size " + std::to_string(chunk) +
        ": the RoPE layers attend within chunks; priced as full causal attention — exact up to " +
        std::to_string(chunk) +
        " tokens; beyond that the chunked mask (SDPA, eager) is not priced and the attention FLOPs "
        "are counted over the whole causal triangle (an overestimate)");
  notes.emplace_back(
      std::string(llama4_transformers_moe_note) +
      " runs every expert on every token (the router's sigmoid weight is "
      "0 "
      "where a token is not routed), so the activations and the step time price E expert passes per token; "
      "MFU "
      "credits the active parameters (k of E). Its experts are 3-D nn.Parameter tensors: bitsandbytes keeps "
      "them in bf16 and all-linear adapts the attention and the shared expert only (the router, an nn.Linear "
      "that "
      "returns a pair, is priced neither adapted nor quantised: leave it out of target_modules and "
      "quantisation)");
}

/// DeepseekV3Config (and Kimi-K2's, the same modeling code) and DeepseekV2Config.
inline void read_deepseek_v3_keys(const json& j, const std::string& origin, model_shape& m,
                                  std::vector<std::string>& notes) {
  read_deepseek(j, origin, false, m, notes);
}
inline void read_deepseek_v2_keys(const json& j, const std::string& origin, model_shape& m,
                                  std::vector<std::string>& notes) {
  read_deepseek(j, origin, true, m, notes);
}
/// Phi3RotaryEmbedding: dim = int(head_dim · partial_rotary_factor) (Phi-4-mini: 0.75).
inline void read_phi3_keys(const json& j, const std::string& origin, model_shape& m,
                           std::vector<std::string>& /*notes*/) {
  m.rotary_dim = read_rotary_dim(j, "partial_rotary_factor", 1.0, m.head_dim, origin);
}
/// MixtralSparseMoeBlock always renormalises the top-k weights (the Qwen MoE blocks read norm_topk_prob).
inline void read_mixtral_keys(const json& /*j*/, const std::string& /*origin*/, model_shape& m,
                              std::vector<std::string>& /*notes*/) {
  m.norm_topk_prob = true;
}
/// GptOssAttention.sinks, GptOssTopKRouter (biased), GptOssExperts.
inline void read_gpt_oss_keys(const json& /*j*/, const std::string& /*origin*/, model_shape& m,
                              std::vector<std::string>& notes) {
  m.attention_sinks = true;
  m.router_bias = true;
  notes.emplace_back(
      "gpt-oss: experts and router are nn.Parameter tensors, so bitsandbytes keeps them in bf16 and "
      "target_modules (all-linear) adapts q/k/v/o only; LoRA on experts (PEFT target_parameters) is not "
      "priced; the estimate assumes every expert is hit (each one hit casts and keeps its own tensors)");
}
/// Starcoder2Attention, Starcoder2MLP, Starcoder2DecoderLayer: use_bias on every linear, dropouts, GELU.
inline void read_starcoder2_keys(const json& j, const std::string& origin, model_shape& m,
                                 std::vector<std::string>& /*notes*/) {
  m.attention_bias = m.o_proj_bias = m.mlp_bias = read_bool_or(j, "use_bias", origin, true);
  m.residual_dropout = read_dropout(j, "residual_dropout", origin);
  m.embedding_dropout = read_dropout(j, "embedding_dropout", origin);
  require_gelu(j, "gelu_pytorch_tanh", origin);
}
/// GPTNeoXLayer, GPTNeoXAttention, GPTNeoXMLP (nn.Linear: biased).
inline void read_gpt_neox_keys(const json& j, const std::string& origin, model_shape& m,
                               std::vector<std::string>& /*notes*/) {
  m.mlp_bias = true;
  if (!read_bool_or(j, "use_parallel_residual", origin, true)) m.residual = residual_layout::sequential;
  // hidden_dropout: post_attention_dropout, post_mlp_dropout and emb_dropout
  m.residual_dropout = m.embedding_dropout = read_dropout(j, "hidden_dropout", origin);
  // rotary_ndims = int(head_size · rotary_pct) (partial_rotary_factor in newer configs), 0.25 by default
  m.rotary_dim =
      read_rotary_dim(j, j.contains("partial_rotary_factor") ? "partial_rotary_factor" : "rotary_pct", 0.25,
                      m.head_dim, origin);
  require_gelu(j, "gelu", origin);
  if (m.num_key_value_heads != m.num_attention_heads)
    throw input_error(key_path(origin, "num_key_value_heads"), "GPT-NeoX has no grouped-query attention");
}
/// CohereDecoderLayer, CohereLayerNorm, CohereAttention, CohereForCausalLM (Cohere2's are the same modules;
/// its global layers skip RoPE, which saves nothing but the shared tables either way).
inline void read_cohere_keys(const json& j, const std::string& origin, model_shape& m,
                             std::vector<std::string>& /*notes*/) {
  m.logit_scale = true;
  if (!read_optional_number(j, "logit_scale", origin, true))
    throw input_error(key_path(origin, "logit_scale"), "must be a positive number, got null");
  // use_qk_norm: CohereLayerNorm over head_dim with (heads, head_dim) and (kv_heads, head_dim) weights
  if (read_bool_or(j, "use_qk_norm", origin, false)) m.qk_norm = qk_norm_kind::full_width;
}
/// GraniteModel / GraniteDecoderLayer / GraniteForCausalLM: four scalar multipliers, applied even at their
/// 1.0 defaults.
inline void read_granite_keys(const json& j, const std::string& origin, model_shape& m,
                              std::vector<std::string>& /*notes*/) {
  m.scalar_multipliers = true;
  for (const std::string_view key :
       {"embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"})
    if (!read_optional_number(j, key, origin, true))
      throw input_error(key_path(origin, key), "must be a positive number, got null");
}
/// GemmaModel: embeddings · sqrt(hidden_size) (Gemma, Gemma-2, Gemma-3; the soft-caps' defaults are in their
/// rows).
inline void read_gemma_keys(const json& /*j*/, const std::string& /*origin*/, model_shape& m,
                            std::vector<std::string>& /*notes*/) {
  m.scaled_embeddings = true;
}
/// The shape keys DeepSeek's and Llama-4's readers take (check_shape_keys refuses them elsewhere).
inline constexpr std::string_view deepseek_shape_keys =
    "n_shared_experts q_lora_rank kv_lora_rank qk_rope_head_dim qk_nope_head_dim v_head_dim "
    "first_k_dense_replace moe_layer_freq num_nextn_predict_layers";
inline constexpr std::string_view llama4_shape_keys = "interleave_moe_layer_step intermediate_size_mlp";
/// Whether `word` is one of the space-separated words of `list`.
constexpr bool in_word_list(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const std::size_t end = list.find(' ');
    if (list.substr(0, end) == word) return true;
    if (end == std::string_view::npos) return false;
    list.remove_prefix(end + 1);
  }
  return false;
}
/// A ViT tower's dimensions (SigLIP's, Llama-4's vision encoder): width, MLP width, depth, patches per image
/// and values per patch; the keys every vision_config has.
struct vit_dims {
  std::uint64_t hidden = 0, mlp = 0, layers = 0, heads = 0, patches = 0, patch_values = 0;
};
inline vit_dims read_vit_dims(const json& v, const std::string& origin) {
  vit_dims r;
  r.hidden = read_count(v, "hidden_size", origin);
  r.mlp = read_count(v, "intermediate_size", origin);
  r.layers = read_count(v, "num_hidden_layers", origin, 1000);
  const std::uint64_t image = read_count(v, "image_size", origin, 100'000);
  const std::uint64_t patch = read_count(v, "patch_size", origin, 10'000);
  r.patch_values = read_count_or(v, "num_channels", origin, 3, 64) * patch * patch;
  r.heads = read_count(v, "num_attention_heads", origin);
  if (image % patch != 0) throw input_error(key_path(origin, "patch_size"), "must divide image_size");
  if (r.hidden % r.heads != 0)
    throw input_error(key_path(origin, "num_attention_heads"), "must divide hidden_size");
  r.patches = checked_mul(image / patch, image / patch, "patches");
  return r;
}
/// The encoder as a decoder-like shape for its activations: LayerNorm blocks with biased q/k/v/o (multi-head,
/// head_dim = width / heads) and a GELU MLP with biases (fc1, fc2), `layers` deep; no vocabulary of its own.
constexpr model_shape vit_encoder(const vit_dims& v) {
  model_shape m;
  m.hidden_size = v.hidden;
  m.num_attention_heads = m.num_key_value_heads = v.heads;
  m.head_dim = v.hidden / v.heads;
  m.intermediate_size = v.mlp;
  m.num_hidden_layers = v.layers;
  m.vocab_size = 1;
  m.mlp = mlp_layout::c_fc;  // fc1 → GELU → fc2, priced as StarCoder2's
  m.tie_word_embeddings = m.mlp_bias = m.attention_bias = m.o_proj_bias = true;
  m.norm = norm_kind::layer_norm;
  return m;
}
/// One ViT encoder layer (SiglipEncoderLayer, Llama4VisionEncoderLayer): two LayerNorms with bias, q/k/v/o
/// with biases, fc1 and fc2 with biases.
constexpr std::uint64_t vit_layer_params(const vit_dims& v) {
  const std::uint64_t h = v.hidden, f = v.mlp;
  return 2 * 2 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h);
}

/// A SigLIP tower's width, depth and parameter count.
struct siglip_shape {
  vit_dims dims{};
  std::uint64_t params = 0;
};
/// SiglipVisionModel's parameters (transformers models/siglip/modeling_siglip.py): the patch embedding (a
/// Conv2d with bias), one position embedding per patch, the encoder layers and the post-layernorm; no
/// pooling head (vision_use_head false).
inline siglip_shape siglip_params(const nlohmann::json& v, const std::string& origin) {
  const vit_dims dims = read_vit_dims(v, origin);
  const std::uint64_t h = dims.hidden;
  if (read_bool_or(v, "vision_use_head", origin, false))
    throw input_error(key_path(origin, "vision_use_head"), "a pooling head is not priced (Gemma-3 has none)");
  const std::uint64_t embeddings = checked_mul(dims.patch_values, h, "patch embedding") + h +
                                   checked_mul(dims.patches, h, "position embedding");
  return {dims, checked_add(
                    checked_add(embeddings, checked_mul(dims.layers, vit_layer_params(dims), "vision layers"),
                                "vision tower"),
                    2 * h, "vision tower")};
}

/// Llama4VisionModel and Llama4MultiModalProjector's parameters (transformers
/// models/llama4/modeling_llama4.py): the unfolded patch embedding (a Linear of channels·patch² → hidden, no
/// bias), the class embedding, one position embedding per patch and for the class token, layernorm_pre and
/// layernorm_post, the encoder layers; the pixel-shuffle adapter's fc1 (intermediate_size →
/// projector_input_dim) and fc2 (projector_output_dim², no biases); the projector vision_output_dim → text
/// hidden without bias.
struct llama4_vision_shape {
  vit_dims dims{};
  std::uint64_t tower = 0, projector = 0, tokens_per_tile = 0;
};
inline llama4_vision_shape llama4_vision_params(const json& v, std::uint64_t text_hidden,
                                                const std::string& origin) {
  const vit_dims dims = read_vit_dims(v, origin);
  const std::uint64_t h = dims.hidden, f = dims.mlp, layers = dims.layers, patches = dims.patches;
  const std::uint64_t in = read_count(v, "projector_input_dim", origin),
                      out = read_count(v, "projector_output_dim", origin),
                      vision_out = read_count(v, "vision_output_dim", origin);
  if (read_bool_or(v, "multi_modal_projector_bias", origin, false))
    throw input_error(key_path(origin, "multi_modal_projector_bias"),
                      "a biased projector is not priced (Llama-4's has none)");
  const auto ratio = v.find("pixel_shuffle_ratio");
  if (ratio == v.end() || !ratio->is_number() || !(ratio->get<double>() > 0 && ratio->get<double>() <= 1))
    throw input_error(key_path(origin, "pixel_shuffle_ratio"), "must be a number in (0, 1]");
  const std::uint64_t embeddings = checked_mul(dims.patch_values, h, "patch embedding") + h +
                                   checked_mul(patches + 1, h, "position embedding") + 4 * h;
  const std::uint64_t layer = vit_layer_params(dims);
  const std::uint64_t adapter =
      checked_add(checked_mul(f, in, "adapter"), checked_mul(out, out, "adapter"), "adapter");
  llama4_vision_shape r;
  r.dims = dims;
  r.dims.patches = patches + 1;  // the class token goes through the encoder too
  r.tower = checked_add(checked_add(embeddings, checked_mul(layers, layer, "vision layers"), "vision tower"),
                        adapter, "vision tower");
  r.projector = checked_mul(vision_out, text_hidden, "projector");
  // Llama4Processor: a tile's patches shrunk by the pixel shuffle, ratio² of them
  r.tokens_per_tile =
      static_cast<std::uint64_t>(static_cast<double>(patches) * ratio->get<double>() * ratio->get<double>());
  return r;
}
}  // namespace headroom::detail
