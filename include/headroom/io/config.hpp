// SPDX-License-Identifier: MIT
// Reads model shapes from Hugging Face config.json files and headroom presets (one code path),
// and finds presets by name (GPU and sequence-length files: gpu.hpp beside it).
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../choices.hpp"
#include "../error.hpp"
#include "../loaded_model.hpp"
#include "../memory.hpp"
#include "../model.hpp"
#include "detail/family_fields.hpp"
#include "detail/json_fields.hpp"
#include "hub_cache.hpp"

namespace headroom {

/// One row per config.json model_type: the block's parts (model_shape's enums; docs/adding-a-family.md) and
/// the defaults of its transformers config class (LlamaConfig, Qwen3Config, Gemma2Config, …) for keys a file
/// may omit, and the reader of the keys it has beyond them (io/detail/family_fields.hpp).
struct architecture {
  std::string_view model_type;
  attention_layout attention;     ///< q/k/v projections (and their names)
  qk_norm_kind qk_norm;           ///< the q/k norms (Cohere's and Llama-4's use_qk_norm can turn them off)
  mlp_layout mlp;                 ///< the dense MLP
  norm_kind norm;                 ///< every norm's kind
  residual_layout residual;       ///< where the norms and residual adds sit (GPT-NeoX: use_parallel_residual)
  moe_layout experts;             ///< the MoE family, where experts_key is set
  std::uint64_t norms_per_layer;  ///< 2, 4 for Gemma-2/3 (pre/post attention and FFN), 1 for Cohere
  bool qkv_bias;                  ///< Qwen2 hard-codes bias=True on q/k/v
  bool tie_default;               ///< tie_word_embeddings default of the config class
  bool bias_default;              ///< attention_bias default (GptOssConfig, GPTNeoXConfig: true)
  bool softcap_default;           ///< the logit soft-caps' default (Gemma2Config: on, 50.0 and 30.0)
  std::uint64_t head_dim_default;  ///< 0 = hidden_size / num_attention_heads
  std::string_view experts_key;    ///< "" for dense; key holding the routed expert count
  std::string_view expert_width_key;
  /// The shape keys (detail::shape_keys) the family's reader takes, space-separated.
  std::string_view extra_shape_keys;
  detail::family_reader read_keys;  ///< the keys it has beyond the common shape (nullptr: none)
};

// clang-format off
inline constexpr std::array<architecture, 23> architectures = [] {
  using al = attention_layout;
  using qk = qk_norm_kind;
  using ml = mlp_layout;
  using nk = norm_kind;
  using rl = residual_layout;
  using mo = moe_layout;
  return std::array<architecture, 23>{{
    // model_type, attention, q/k norm, MLP, norm, residual, experts; norms per layer, q/k/v bias, the
    // defaults of tie_word_embeddings, attention_bias and the soft-caps, head_dim default (0: hidden / heads),
    // the experts' count key and width key ("": dense), the extra shape keys its reader takes, and that reader
    // (family_fields.hpp)
    {"llama",       al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", nullptr},
    {"mistral",     al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", nullptr},
    {"qwen2",       al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, true,  false, false, false, 0,   "",                  "", "", nullptr},
    {"qwen3",       al::q_k_v,           qk::per_head,   ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 128, "",                  "", "", nullptr},
    {"qwen3_moe",   al::q_k_v,           qk::per_head,   ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 128, "num_experts",       "moe_intermediate_size", "", nullptr},
    {"mixtral",     al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 0,   "num_local_experts", "intermediate_size", "", detail::read_mixtral_keys},
    // GemmaRMSNorm: x·(1 + w) in fp32; Gemma-2/3 add post-attention and post-feedforward norms.
    {"gemma",       al::q_k_v,           qk::none,       ml::gated,         nk::gemma_rms,      rl::sequential, mo::linear_experts, 2, false, true,  false, false, 256, "",                  "", "", detail::read_gemma_keys},
    {"gemma2",      al::q_k_v,           qk::none,       ml::gated,         nk::gemma_rms,      rl::sequential, mo::linear_experts, 4, false, true,  false, true,  256, "",                  "", "", detail::read_gemma_keys},
    {"gemma3_text", al::q_k_v,           qk::per_head,   ml::gated,         nk::gemma_rms,      rl::sequential, mo::linear_experts, 4, false, true,  false, false, 256, "",                  "", "", detail::read_gemma_keys},
    {"phi3",        al::qkv_proj,        qk::none,       ml::gate_up_proj,  nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", detail::read_phi3_keys},
    // Olmo2Config: post-norms, full-width q/k norms, Olmo2RMSNorm (w · x in fp32). GraniteConfig: Llama
    // shapes, four scalar multipliers (its reader). GptOssConfig: biased attention by default, sinks, biased router, 3-D experts.
    {"olmo2",       al::q_k_v,           qk::full_width, ml::gated,         nk::rms_fp32_scale, rl::post_norms, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", nullptr},
    // Olmo3Config: OLMo-2's tensors, sliding-window attention on the layers layer_types names (OLMo-core's
    // olmo3_7B is olmo2_7B plus a 4096-token window on three of every four layers).
    {"olmo3",       al::q_k_v,           qk::full_width, ml::gated,         nk::rms_fp32_scale, rl::post_norms, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", nullptr},
    {"granite",     al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, false, false, false, false, 0,   "",                  "", "", detail::read_granite_keys},
    {"gpt_oss",     al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::gpt_oss,        2, false, false, true,  false, 64,  "num_local_experts", "intermediate_size", "", detail::read_gpt_oss_keys},
    // Starcoder2Config: LayerNorms, use_bias on every linear, a GELU MLP, tied by default (its reader).
    {"starcoder2",  al::q_k_v,           qk::none,       ml::c_fc,          nk::layer_norm,     rl::sequential, mo::linear_experts, 2, false, true,  false, false, 0,   "",                  "", "", detail::read_starcoder2_keys},
    // GPTNeoXConfig: LayerNorms, fused query_key_value, parallel blocks, partial rotary, untied (its reader).
    {"gpt_neox",    al::query_key_value, qk::none,       ml::dense_h_to_4h, nk::layer_norm,     rl::parallel,   mo::linear_experts, 2, false, false, true,  false, 0,   "",                  "", "", detail::read_gpt_neox_keys},
    // CohereConfig: one CohereLayerNorm per parallel block, tied, logits · logit_scale, use_qk_norm (its
    // reader). Cohere2Config (Command-R7B, Command-A): Cohere's block; sliding-window layers with RoPE, every
    // sliding_window_pattern-th layer global without it.
    {"cohere",      al::q_k_v,           qk::none,       ml::gated,         nk::cohere,         rl::parallel,   mo::linear_experts, 1, false, true,  false, false, 0,   "",                  "", "", detail::read_cohere_keys},
    {"cohere2",     al::q_k_v,           qk::none,       ml::gated,         nk::cohere,         rl::parallel,   mo::linear_experts, 1, false, true,  false, false, 0,   "",                  "", "", detail::read_cohere_keys},
    // DeepseekV3Config (Kimi-K2 ships the same modeling code), DeepseekV2Config: MLA, dense first layers,
    // routed and shared experts (its reader).
    {"deepseek_v3", al::mla,             qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::deepseek,       2, false, false, false, false, 0,   "n_routed_experts",  "moe_intermediate_size", detail::deepseek_shape_keys, detail::read_deepseek_v3_keys},
    {"kimi_k2",     al::mla,             qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::deepseek,       2, false, false, false, false, 0,   "n_routed_experts",  "moe_intermediate_size", detail::deepseek_shape_keys, detail::read_deepseek_v3_keys},
    {"deepseek_v2", al::mla,             qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::deepseek,       2, false, false, false, false, 0,   "n_routed_experts",  "moe_intermediate_size", detail::deepseek_shape_keys, detail::read_deepseek_v2_keys},
    // Qwen2MoeConfig: Qwen2's q/k/v biases, routed experts, a shared expert behind a sigmoid gate.
    {"qwen2_moe",   al::q_k_v,           qk::none,       ml::gated,         nk::rms,            rl::sequential, mo::linear_experts, 2, true,  false, false, false, 0,   "num_experts",       "moe_intermediate_size", "", nullptr},
    // Llama4TextConfig: MoE every interleave_moe_layer_step-th layer (3-D experts, a shared expert), the
    // others a dense MLP of intermediate_size_mlp; NoPE every no_rope_layer_interval-th layer; the L2 q/k norm
    // (use_qk_norm; its reader).
    {"llama4_text", al::q_k_v,           qk::l2,         ml::gated,         nk::rms,            rl::sequential, mo::llama4,         2, false, false, false, false, 128, "num_local_experts", "intermediate_size", detail::llama4_shape_keys, detail::read_llama4},
  }};
}();
// clang-format on

[[nodiscard]] inline std::string supported_model_types() {
  std::string out;
  for (const architecture& a : architectures) detail::append_listed(out, a.model_type);
  return out;
}

namespace detail {
/// config.json keys that add or reshape parameters (MLA ranks and head dims, expert counts and widths, dense
/// first layers, multimodal sub-configs, multi-token prediction).
inline constexpr std::array<std::string_view, 18> shape_keys{"n_routed_experts",
                                                             "n_shared_experts",
                                                             "q_lora_rank",
                                                             "kv_lora_rank",
                                                             "qk_rope_head_dim",
                                                             "qk_nope_head_dim",
                                                             "v_head_dim",
                                                             "first_k_dense_replace",
                                                             "moe_layer_freq",
                                                             "num_local_experts",
                                                             "num_experts",
                                                             "moe_intermediate_size",
                                                             "shared_expert_intermediate_size",
                                                             "text_config",
                                                             "vision_config",
                                                             "interleave_moe_layer_step",
                                                             "intermediate_size_mlp",
                                                             "num_nextn_predict_layers"};
/// model_types whose parameters no supported family has: the _headroom.architecture escape hatch refuses
/// them.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 13> unpriced_architectures{{
    {"llava", "vision tower, projector and image tokens"},
    {"qwen2_5_vl", "vision tower, projector and image tokens"},
    {"qwen3_vl", "vision tower, projector and image tokens"},
    {"mllama", "vision tower and cross-attention layers"},
    {"qwen3_next", "hybrid linear-attention layers (gated DeltaNet state)"},
    {"gpt_bigcode", "a multi-query fused c_attn and learned position embeddings"},
    // transformers models/glm4_moe (GLM-4.5, GLM-4.6), falcon, phi3_v (remote code); Qwen3.5's configs.
    {"glm4_moe",
     "DeepSeek-V3-style routed and shared experts under grouped-query attention with biased q/k/v and "
     "partial RoPE, and a multi-token-prediction layer"},
    {"falcon",
     "a parallel block with one shared LayerNorm (two under new_decoder_architecture) and a multi-query "
     "fused query_key_value"},
    {"phi3_v", "CLIP vision tower, HD image projection and image tokens"},
    {"qwen3_5", "hybrid linear-attention layers (gated DeltaNet state, as Qwen3-Next) and a vision tower"},
    {"qwen3_5_moe",
     "hybrid linear-attention layers (gated DeltaNet state, as Qwen3-Next) and a vision tower"},
    // Mistral3ForConditionalGeneration (Ministral 3, Mistral Small 3.1; mlc-llm's model_preset.py carries
    // Ministral-3-3B's config): Mistral's tensors beside a Pixtral tower; Ministral 3 scales its queries.
    {"mistral3", "a Pixtral vision tower, patch-merger projector and image tokens"},
    {"ministral3",
     "a Pixtral vision tower, patch-merger projector and image tokens, and llama_4_scaling_beta's "
     "per-position query scaling"},
}};
/// model_types that are a supported family plus one feature headroom does not price: the escape hatch
/// prices the family's parameters (exact), and the message says what it leaves out. A data table.
struct near_architecture {
  std::string_view model_type, family, feature;
};
inline constexpr std::array<near_architecture, 3> near_architectures{{
    // SmolLM3 (transformers models/smollm3): Llama's tensors; no_rope_layers marks the layers without RoPE.
    {"smollm3", "llama",
     "layers without RoPE (no_rope_layers): their activations would be priced with RoPE's"},
    // InternLM2 (remote code, modeling_internlm2.py): wqkv holds (heads + 2·kv_heads)·head_dim rows, q, k and
    // v together; MiniCPM (remote code, modeling_minicpm.py): Llama's tensors under three scalings.
    {"internlm2", "llama",
     "one fused wqkv (q, k and v interleaved per KV group) under InternLM2's names (wqkv, wo, w1, w2, w3): "
     "the count is Llama's when `bias` is false; the split's copies and PEFT's target names are not priced"},
    {"minicpm", "llama",
     "MiniCPM's scale_emb, scale_depth and dim_model_base scalings: the products they keep are not priced"},
}};

/// A config file opened for reading; a directory, a device, a missing or a huge file is an error naming the
/// file.
inline std::ifstream open_config_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw input_error(file.string(), "is a directory, not a file");
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw input_error(file.string(), "is not a regular file");
  // Config files are kilobytes; anything this large is the wrong file.
  if (std::filesystem::is_regular_file(file, ec) &&
      std::filesystem::file_size(file, ec) > (std::uintmax_t{64} << 20))
    throw input_error(file.string(), "is larger than 64 MiB: not a config file");
  std::ifstream in(file);
  if (!in) throw input_error(file.string(), "cannot open file");
  return in;
}
/// A config file's text (open_config_file's checks).
inline std::string read_config_text(const std::filesystem::path& file) {
  std::ifstream in = open_config_file(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
/// How deep a JSON value may nest: configs nest 4 levels; copying or dumping a value recurses per level, so
/// 80,000 '[' overflowed the stack (issue 31). docs/errors.md "Limits".
inline constexpr std::size_t max_json_depth = 256;

/// The JSON pointer of a nesting path as an error names it: its keys, with the trailing run of array
/// indices left out and at most 8 parts shown.
inline std::string nesting_pointer(const std::vector<std::pair<bool, std::string>>& path) {
  std::size_t end = path.size();
  while (end > 0 && !path[end - 1].first) --end;  // "/hidden_size", not "/hidden_size/0/0/0/..."
  std::string out;
  for (std::size_t i = 0; i < end && i < 8; ++i) {
    out += '/';  // appended piece by piece: GCC 12's -Wrestrict misreads "/" + std::string
    out.append(path[i].second, 0, 40);
  }
  return (out.empty() ? "/" : out) + (end > 8 ? "/..." : "");
}

/// One pass over JSON text that tracks strings, keys and array positions: refuses nesting deeper than
/// max_json_depth, naming the key where it happens, before any parser or reader recurses; returns the
/// pointer of the value at byte `stop` (where the parser stopped).
inline std::string scan_json(std::string_view text, const std::string& file,
                             std::size_t stop = std::string_view::npos) {
  std::vector<std::pair<bool, std::string>> path;  // (an object's key?, the key or the array index)
  std::vector<std::size_t> index;                  // per open array, the element's position
  std::string last;                                // the last string read: a key when ':' follows
  bool in_string = false, escaped = false;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (at == stop) return nesting_pointer(path);
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      } else if (last.size() < 64) {
        last += c;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      last.clear();
    } else if (c == ':' && !path.empty() && path.back().first) {
      path.back().second = last;
    } else if (c == ',' && !path.empty() && !path.back().first) {
      path.back().second = std::to_string(++index.back());
    } else if (c == '[' || c == '{') {
      if (path.size() == max_json_depth)
        throw input_error(file + ": " + nesting_pointer(path),
                          "nested deeper than the limit of " + std::to_string(max_json_depth) + " levels");
      path.emplace_back(c == '{', c == '{' ? "" : "0");
      index.push_back(0);
    } else if ((c == ']' || c == '}') && !path.empty()) {
      path.pop_back();
      index.pop_back();
    }
  }
  return nesting_pointer(path);
}
inline void check_json_depth(std::string_view text, const std::string& file) { (void)scan_json(text, file); }

/// Reads and parses a JSON file; errors name the file and the line.
inline nlohmann::json parse_json_file(const std::filesystem::path& file) {
  const std::string body = read_config_text(file);
  check_json_depth(body, file.string());
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    const std::size_t end = e.byte < body.size() ? e.byte : body.size();
    const auto line = 1 + std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(end), '\n');
    // nlohmann's text without its id and its "last read: '...'" (the file's own bytes, echoed: MI-26)
    std::string what = e.what(), where = "at line " + std::to_string(line);
    if (const auto at = what.find("parse error at "); at != std::string::npos) what = what.substr(at + 15);
    if (const auto colon = what.find(": "); what.rfind("line ", 0) == 0 && colon != std::string::npos) {
      where = "at " + what.substr(0, colon);  // "at line 1, column 1"
      what = what.substr(colon + 2);
    }
    if (const auto echo = what.find("; last read:"); echo != std::string::npos) what.resize(echo);
    throw input_error(file.string(),
                      "malformed JSON " + where + " (byte " + std::to_string(e.byte) + "): " + what);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double (1e400, 401 digits): nlohmann names neither file nor key, and quotes it all.
    const std::string what = e.what();
    const auto open = what.find('\''), close = what.rfind('\'');
    const std::string number = open < close ? what.substr(open + 1, close - open - 1) : "";
    const std::size_t at = number.empty() ? std::string::npos : body.find(number);
    const std::string shown = number.size() > 20 ? number.substr(0, 17) + "..." : number;
    throw input_error(file.string() + ": " + scan_json(body, file.string(), at),
                      "number out of range ('" + shown + "', " + std::to_string(number.size()) +
                          " characters): beyond what a double holds");
  }
}
}  // namespace detail

namespace detail {
/// The name (the file's stem unless "_headroom" names it), source and nominal size of a loaded model.
inline void read_meta(loaded_model& out, const nlohmann::json& j, const std::string& origin) {
  out.name = std::filesystem::path(origin).stem().string();
  if (const auto meta = j.find("_headroom"); meta != j.end()) {
    if (!meta->is_object()) throw input_error(key_path(origin, "_headroom"), "must be an object");
    const std::string meta_origin = origin + ": /_headroom";
    out.name = read_string_or(*meta, "name", meta_origin, out.name);
    out.source = read_string_or(*meta, "source", meta_origin, "");
    out.spec.nominal_params = read_count_or(*meta, "nominal_params", meta_origin, 0, std::uint64_t{1} << 50);
    // The course rounds N (8e9 for 8.03e9); a factor of 2 away is a typo, not a rounding (issue 31, SI-35).
    const std::uint64_t exact = parameter_count(out.spec.shape).count(), nominal = out.spec.nominal_params;
    if (nominal != 0 && (nominal / 2 > exact || exact / 2 > nominal))
      throw input_error(
          meta_origin + ": /nominal_params",
          std::to_string(nominal) + " is far from the " + std::to_string(exact) +
              " parameters the shapes give (more than a factor of 2): a rounding of them, or none");
  }
}

}  // namespace detail

[[nodiscard]] inline loaded_model model_from_config(const nlohmann::json& j, const std::string& origin);

namespace detail {
/// A *ForConditionalGeneration config's language model, read from its text_config (whose model_type must be
/// `text_type`; tie_word_embeddings may sit at the top level), and its vision_config.
struct multimodal_parts {
  loaded_model model;
  const nlohmann::json* vision = nullptr;
};
inline multimodal_parts read_multimodal(const nlohmann::json& j, const std::string& origin,
                                        const std::string& family, const std::string& text_type) {
  const auto text = j.find("text_config");
  if (text == j.end() || !text->is_object())
    throw input_error(key_path(origin, "text_config"),
                      "missing: a '" + family + "' config holds its language model there");
  const auto vision = j.find("vision_config");
  if (vision == j.end() || !vision->is_object())
    throw input_error(key_path(origin, "vision_config"),
                      "missing: a '" + family + "' config holds its vision tower there");
  nlohmann::json lm = *text;
  const std::string type = read_string_or(lm, "model_type", origin + ": /text_config", text_type);
  if (type != text_type)
    throw input_error(origin + ": /text_config/model_type", "must be " + text_type + ", got '" + type + "'");
  lm["model_type"] = text_type;
  if (j.contains("tie_word_embeddings") && !lm.contains("tie_word_embeddings"))
    lm["tie_word_embeddings"] = j.at("tie_word_embeddings");
  multimodal_parts out{model_from_config(lm, origin + ": /text_config"), &*vision};
  out.model.origin = origin;
  out.model.model_type = family;
  return out;
}
/// The note every multimodal model carries: what is priced of its tower, and what is not.
inline std::string tower_note(const std::string& name, const loaded_model& out, const std::string& tower_name,
                              std::uint64_t tower, std::uint64_t projector, const std::string& tokens,
                              std::uint64_t tower_linears) {
  return name + " multimodal: the language model from text_config (" +
         with_commas(parameter_count(out.spec.shape).count()) + " parameters); the " + tower_name + " (" +
         with_commas(tower) + ") and projector (" + with_commas(projector) +
         ") resident in the load dtype, also under QLoRA, and frozen unless full fine-tuning trains it "
         "(--train-vision-tower: its gradients, master copy and optimizer state, and its encoder's "
         "activations "
         "on the images: SigLIP-style encoder blocks, measured on the CPU); " +
         tokens +
         ", added by --images; not priced: a frozen tower's forward transients, the projector's activations, "
         "and the adapters PEFT's all-linear also puts on its " +
         std::to_string(tower_linears) + " linears";
}
/// Gemma3ForConditionalGeneration: the language model from text_config (gemma3_text), the SigLIP tower from
/// vision_config and Gemma3MultiModalProjector (mm_input_projection_weight: vision hidden × text hidden, and
/// mm_soft_emb_norm), frozen.
inline loaded_model gemma3_multimodal(const nlohmann::json& j, const std::string& origin) {
  multimodal_parts parts = read_multimodal(j, origin, "gemma3", "gemma3_text");
  loaded_model& out = parts.model;
  const siglip_shape siglip = siglip_params(*parts.vision, origin + ": /vision_config");
  const std::uint64_t h = siglip.dims.hidden;
  const std::uint64_t projector = h * out.spec.shape.hidden_size + h;
  vision_tower& v = out.spec.vision;
  v.params = siglip.params + projector;
  v.tokens_per_image = read_count_or(j, "mm_tokens_per_image", origin, 256, 1u << 20);
  // the patch Conv2d (weight, bias), the position embedding, 16 per layer, post_layernorm (2); the
  // projector's 2
  v.tensors = 2 + 1 + 16 * siglip.dims.layers + 2 + 2;
  v.patches_per_image = siglip.dims.patches;
  v.patch_values = siglip.dims.patch_values;
  v.encoder = vit_encoder(siglip.dims);
  out.notes.push_back(tower_note("Gemma-3", out, "SigLIP tower", siglip.params, projector,
                                 "each image is " + std::to_string(out.spec.vision.tokens_per_image) +
                                     " tokens of the sequence",
                                 6 * siglip.dims.layers) +
                      " (q/k/v/out_proj, fc1, fc2)");
  read_meta(out, j, origin);
  return out;
}
/// Llama4ForConditionalGeneration: the language model from text_config (llama4_text), Llama4VisionModel
/// from vision_config and Llama4MultiModalProjector, frozen.
inline loaded_model llama4_multimodal(const nlohmann::json& j, const std::string& origin) {
  multimodal_parts parts = read_multimodal(j, origin, "llama4", "llama4_text");
  loaded_model& out = parts.model;
  const llama4_vision_shape v =
      llama4_vision_params(*parts.vision, out.spec.shape.hidden_size, origin + ": /vision_config");
  vision_tower& tower = out.spec.vision;
  tower.params = v.tower + v.projector;
  tower.tokens_per_image = v.tokens_per_tile;
  // the patch linear, class and position embeddings, layernorm_pre/post (4), 16 per layer, the adapter's 2,
  // the projector
  tower.tensors = 1 + 2 + 4 + 16 * v.dims.layers + 2 + 1;
  tower.patches_per_image = v.dims.patches;
  tower.patch_values = v.dims.patch_values;
  tower.encoder = vit_encoder(v.dims);
  out.notes.push_back(tower_note("Llama-4", out, "vision tower", v.tower, v.projector,
                                 "each image tile is " + std::to_string(v.tokens_per_tile) +
                                     " tokens of the sequence (the processor cuts an image into tiles and "
                                     "adds a global one: --images counts tiles)",
                                 6 * v.dims.layers + 2) +
                      " (q/k/v/o_proj, fc1, fc2, the adapter's fc1 and fc2)");
  read_meta(out, j, origin);
  return out;
}
/// The multimodal config classes: a text_config of a supported family beside a vision tower, one reader each.
struct multimodal_architecture {
  std::string_view model_type;
  loaded_model (*read)(const nlohmann::json& j, const std::string& origin);
};
inline constexpr std::array<multimodal_architecture, 2> multimodal_architectures{{
    {"gemma3", gemma3_multimodal},  // Gemma3ForConditionalGeneration: gemma3_text + SigLIP
    {"llama4", llama4_multimodal},  // Llama4ForConditionalGeneration: llama4_text + its vision model
}};
}  // namespace detail

/// Builds a model from a parsed config.json object. `origin` names the file in errors.
namespace detail {
/// The family whose shapes a config follows: its model_type, or the `_headroom.architecture` escape hatch.
struct family_choice {
  std::string family;
  bool forced = false;
};
inline family_choice family_of(const nlohmann::json& j, const std::string& origin,
                               const std::string& model_type) {
  // A model_type headroom does not know can still load when the file says which supported family its
  // shapes follow: "_headroom": {"architecture": "llama"}.
  family_choice out{model_type, false};
  if (const auto meta = j.find("_headroom");
      meta != j.end() && meta->is_object() && meta->contains("architecture")) {
    out.family = read_string_or(*meta, "architecture", origin + ": /_headroom", out.family);
    out.forced = true;
  }
  return out;
}

/// The architectures row of the family, or an error naming what is missing or not priced.
inline const architecture& architecture_of(const std::string& origin, const std::string& model_type,
                                           const family_choice& choice) {
  const std::string& family = choice.family;
  const bool forced = choice.forced;
  const auto* arch = std::find_if(architectures.begin(), architectures.end(),
                                  [&](const architecture& a) { return a.model_type == family; });
  // A model_type whose parameters no supported family has: named with the missing feature, loaded as it is
  // or forced through the escape hatch (which would give a wrong count).
  const auto unpriced = std::find_if(unpriced_architectures.begin(), unpriced_architectures.end(),
                                     [&](const auto& entry) { return entry.first == model_type; });
  if (forced && unpriced != unpriced_architectures.end())
    throw input_error(origin + ": /_headroom/architecture",
                      "'" + model_type + "' has " + std::string(unpriced->second) +
                          ", which no supported family prices: forcing '" + family +
                          "' would give a wrong count");
  if (arch == architectures.end() && forced)
    throw input_error(origin + ": /_headroom/architecture",
                      "unknown family '" + family + "'; valid: " + supported_model_types());
  if (arch == architectures.end() && model_type.empty())
    throw input_error(key_path(origin, "model_type"),
                      "missing: a config.json names its architecture in model_type (supported: " +
                          supported_model_types() + ")");
  if (unpriced != unpriced_architectures.end())  // not forced here: family is the model_type
    throw input_error(key_path(origin, "model_type"),
                      "unsupported '" + family + "' (not priced yet: " + std::string(unpriced->second) +
                          "); supported: " + supported_model_types());
  const auto near = std::find_if(near_architectures.begin(), near_architectures.end(),
                                 [&](const near_architecture& n) { return n.model_type == family; });
  if (arch == architectures.end() && near != near_architectures.end())
    throw input_error(key_path(origin, "model_type"),
                      "unsupported '" + family + "': it is " + std::string(near->family) + " plus " +
                          std::string(near->feature) + "; \"_headroom\": {\"architecture\": \"" +
                          std::string(near->family) + "\"} prices it as " + std::string(near->family) +
                          " (its parameters exactly)");
  if (arch == architectures.end())
    throw input_error(key_path(origin, "model_type"),
                      "unsupported '" + family + "'; supported: " + supported_model_types() +
                          " (or give the shapes' family in \"_headroom\": {\"architecture\": ...})");
  return *arch;
}

/// A key that changes the shapes and that this family does not read would make the count silently wrong.
inline void check_shape_keys(const nlohmann::json& j, const std::string& origin, const architecture& arch,
                             const std::string& family) {
  for (const std::string_view key : shape_keys) {
    const auto v = j.find(key);
    if (v == j.end() || v->is_null() || *v == 0 || *v == false || v->empty()) continue;
    const bool read = key == arch.experts_key || key == arch.expert_width_key ||
                      (key == "shared_expert_intermediate_size" && !arch.experts_key.empty()) ||
                      in_word_list(arch.extra_shape_keys, key);
    if (!read)
      throw input_error(key_path(origin, key), "changes the model's shapes, and the '" + family +
                                                   "' family does not read it: the count would be wrong");
  }
}

/// The shapes every family has, with the config class's defaults from the architectures row.
inline void read_common_shape(const nlohmann::json& j, const std::string& origin, const architecture& arch,
                              model_shape& m) {
  m.hidden_size = read_count(j, "hidden_size", origin);
  m.num_attention_heads = read_count(j, "num_attention_heads", origin);
  m.num_key_value_heads = read_count_or(j, "num_key_value_heads", origin, m.num_attention_heads);
  const std::uint64_t head_default =
      arch.head_dim_default != 0 ? arch.head_dim_default : m.hidden_size / m.num_attention_heads;
  m.head_dim = read_count_or(j, "head_dim", origin, head_default);
  if (m.head_dim % 2 != 0)  // every family read rotates pairs: rotate_half splits a head in two halves
    throw input_error(
        key_path(origin, "head_dim"),
        std::to_string(m.head_dim) + " must be even (RoPE's rotate_half splits each head in two)");
  m.num_hidden_layers = read_count(j, "num_hidden_layers", origin, max_layers);
  m.vocab_size = read_count(j, "vocab_size", origin);
  m.tie_word_embeddings = read_bool_or(j, "tie_word_embeddings", origin, arch.tie_default);
  const bool attention_bias = read_bool_or(j, "attention_bias", origin, arch.bias_default);
  m.attention_bias = arch.qkv_bias || attention_bias;
  m.o_proj_bias = attention_bias;  // LlamaAttention: attention_bias applies to q, k, v and o
  m.mlp_bias = read_bool_or(j, "mlp_bias", origin, false);
  m.norms_per_layer = arch.norms_per_layer;
  m.attention = arch.attention;
  m.qk_norm = arch.qk_norm;
  m.mlp = arch.mlp;
  m.norm = arch.norm;
  m.residual = arch.residual;
  m.experts = arch.experts;  // a dense row's linear_experts is model_shape's default
}

/// Dropout in every family, and what a sliding window leaves unpriced.
inline void read_dropout_and_window(const nlohmann::json& j, const std::string& origin, model_shape& m,
                                    std::vector<std::string>& notes) {
  m.attention_dropout = read_dropout(j, "attention_dropout", origin);  // every family's attention
  // sliding_window (Mistral v0.1, Gemma-2/3, Cohere2, gpt-oss; Qwen2 only with use_sliding_window): a window
  // saves no tensor of its own under FlashAttention, and up to W tokens its mask is the causal one.
  if (const std::uint64_t window = read_count_or(j, "sliding_window", origin, 0);
      window != 0 && read_bool_or(j, "use_sliding_window", origin, true))
    notes.push_back("sliding_window " + std::to_string(window) +
                    ": attention priced as full causal attention — exact for FlashAttention (the window "
                    "saves no tensor of its own) and for sequences up to " +
                    std::to_string(window) +
                    " tokens; beyond that, SDPA and eager receive a sliding mask (b × s × s) not priced, and "
                    "the attention FLOPs are counted over the whole causal triangle (an overestimate)");
  if (m.attention_dropout || m.residual_dropout || m.embedding_dropout)
    notes.emplace_back(
        "config.json trains with dropout (attention_dropout, residual_dropout or embedding_dropout above 0): "
        "its masks are priced in the activations (bool on CUDA)");
}

/// Logit soft-caps: on by default in Gemma2Config (50.0, 30.0), null in Gemma3TextConfig, absent elsewhere.
inline void read_softcaps(const nlohmann::json& j, const std::string& origin, const architecture& arch,
                          model_shape& m) {
  m.attn_logit_softcapping = read_optional_number(j, "attn_logit_softcapping", origin, arch.softcap_default);
  m.final_logit_softcapping =
      read_optional_number(j, "final_logit_softcapping", origin, arch.softcap_default);
}

/// A dense MLP's width, or the routed experts (count, top-k, width, a shared expert).
inline void read_mlp_or_experts(const nlohmann::json& j, const std::string& origin, const architecture& arch,
                                model_shape& m) {
  if (arch.experts_key.empty()) {
    m.intermediate_size = read_count(j, "intermediate_size", origin);
  } else {
    m.num_experts = read_count(j, arch.experts_key, origin, max_experts);
    m.num_experts_per_tok = read_count(j, "num_experts_per_tok", origin, max_experts);
    m.moe_intermediate_size = read_count(j, arch.expert_width_key, origin);
    // 0 means no shared expert (Qwen3-Coder's configs write it so).
    m.shared_expert_intermediate_size =
        read_count_or_zero(j, "shared_expert_intermediate_size", origin, 0, max_dimension);
    // The Qwen MoE blocks read norm_topk_prob (Mixtral's reader sets it: its block always renormalises).
    m.norm_topk_prob = read_bool_or(j, "norm_topk_prob", origin, false);
    if (read_count_or(j, "decoder_sparse_step", origin, 1) != 1)
      throw input_error(key_path(origin, "decoder_sparse_step"),
                        "layouts mixing dense and MoE layers are not supported yet (need 1)");
    if (j.contains("mlp_only_layers") && !j.at("mlp_only_layers").empty())
      throw input_error(key_path(origin, "mlp_only_layers"),
                        "layouts mixing dense and MoE layers are not supported yet (need [])");
  }
}
}  // namespace detail

[[nodiscard]] inline loaded_model model_from_config(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw input_error(origin, "expected a JSON object (a config.json)");
  loaded_model out;
  out.origin = origin;
  out.model_type = detail::read_string_or(j, "model_type", origin, "");
  const detail::family_choice choice = detail::family_of(j, origin, out.model_type);
  const bool forced = choice.forced;
  for (const detail::multimodal_architecture& mm : detail::multimodal_architectures)
    if (mm.model_type == out.model_type && !forced) return mm.read(j, origin);
  const architecture& arch = detail::architecture_of(origin, out.model_type, choice);
  detail::check_shape_keys(j, origin, arch, choice.family);
  // The escape hatch is for a model_type headroom does not read; forced on one it reads, past the keys
  // check_shape_keys names, it drops that family's own tensors silently (olmo2 as llama: its q/k norms).
  const bool readable = std::any_of(architectures.begin(), architectures.end(),
                                    [&](const architecture& a) { return a.model_type == out.model_type; });
  if (forced && readable && choice.family != out.model_type)
    throw input_error(
        origin + ": /_headroom/architecture",
        "'" + choice.family + "' forced on '" + out.model_type +
            "', which headroom reads as itself: remove it (the count would miss its own tensors)");
  model_shape& m = out.spec.shape;
  detail::read_common_shape(j, origin, arch, m);
  detail::read_softcaps(j, origin, arch, m);
  detail::read_mlp_or_experts(j, origin, arch, m);
  if (arch.read_keys != nullptr) arch.read_keys(j, origin, m, out.notes);  // the family's own keys
  detail::read_dropout_and_window(j, origin, m, out.notes);
  named_by(origin, [&] { validate(m); });

  detail::read_meta(out, j, origin);
  return out;
}

namespace detail {
/// Values per stored parameter for a config's dtype (torch_dtype / dtype); 0 when unknown or quantised.
inline std::uint64_t checkpoint_value_bytes(const nlohmann::json& config) {
  if (config.contains("quantization_config")) return 0;  // packed 4-bit / MXFP4 tensors: sizes say little
  const auto it =
      config.find("torch_dtype") != config.end() ? config.find("torch_dtype") : config.find("dtype");
  if (it == config.end() || !it->is_string()) return 0;
  const std::string d = it->get<std::string>();
  if (d == "bfloat16" || d == "float16") return 2;
  if (d == "float32") return 4;
  return 0;
}
/// The number of values a safetensors header lists: the header is a JSON object of tensors with their
/// shapes (the safetensors format's specification); nullopt when it is not one.
inline std::optional<std::uint64_t> safetensors_header_values(std::string_view header) {
  try {
    check_json_depth(header, "");
  } catch (const input_error&) {
    return std::nullopt;  // no tensor list nests this deep
  }
  const nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  std::uint64_t total = 0;
  for (const auto& [name, tensor] : j.items()) {
    if (name == "__metadata__") continue;
    if (!tensor.is_object()) return std::nullopt;
    const auto shape = tensor.find("shape");
    if (shape == tensor.end() || !shape->is_array()) return std::nullopt;
    std::uint64_t n = 1;
    for (const auto& dim : *shape) {
      if (!dim.is_number_unsigned() || dim.get<std::uint64_t>() > (std::uint64_t{1} << 40))
        return std::nullopt;
      const std::uint64_t d = dim.get<std::uint64_t>();
      if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d)  // named, not a bare overflow (MI-28)
        throw input_error(name, "shape " + json_excerpt(*shape) + " overflows 64-bit arithmetic");
      n *= d;
    }
    total = checked_add(total, n, "safetensors values");
  }
  return total;
}
/// The number of values in a .safetensors file: an 8-byte little-endian header length, then the header.
inline std::optional<std::uint64_t> safetensors_values(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<char, 8> size_bytes{};
  if (!in.read(size_bytes.data(), 8)) return std::nullopt;
  std::uint64_t size = 0;
  for (auto i = size_bytes.rbegin(); i != size_bytes.rend(); ++i)
    size = (size << 8) | static_cast<unsigned char>(*i);
  if (size == 0 || size > (std::uint64_t{100} << 20)) return std::nullopt;  // headers are kilobytes
  std::string header(static_cast<std::size_t>(size), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(size))) return std::nullopt;
  return named_by(file.string(),
                  [&] { return safetensors_header_values(header); });  // the file, then the tensor
}
/// Compares the count from the shapes with the checkpoint stored beside the config, when there is one:
/// model.safetensors.index.json (metadata.total_parameters, or metadata.total_size over the dtype's bytes)
/// or a single model.safetensors (its header's shapes). A difference is a warning with both numbers.
inline void cross_check_checkpoint(loaded_model& m, const nlohmann::json& config,
                                   const std::filesystem::path& config_file) {
  const std::filesystem::path dir = config_file.parent_path();
  const std::uint64_t count = parameter_count(m.spec.shape).count() + m.spec.vision.params;
  auto compare = [&](const std::string& what, std::uint64_t stored) {
    if (stored == count) {
      m.checks.push_back(what + ": " + with_commas(stored) + " parameters, as the shapes give");
      return;
    }
    const std::uint64_t diff = stored > count ? stored - count : count - stored;
    m.warnings.push_back(what + " holds " + with_commas(stored) + " parameters, the shapes give " +
                         with_commas(count) + " (" + (stored > count ? "+" : "-") + with_commas(diff) +
                         "): tensors headroom does not price, or a config that is not this checkpoint's");
  };
  std::error_code ec;
  const std::filesystem::path index = dir / "model.safetensors.index.json";
  if (std::filesystem::is_regular_file(index, ec)) {
    const nlohmann::json j = parse_json_file(index);
    const auto meta = j.find("metadata");
    if (meta == j.end() || !meta->is_object())
      throw input_error(index.string() + ": /metadata",
                        "missing: a safetensors index holds metadata.total_size");
    const std::string where = index.filename().string();
    if (meta->contains("total_parameters"))
      return compare(
          where + " metadata.total_parameters",
          read_count(*meta, "total_parameters", index.string() + ": /metadata", std::uint64_t{1} << 50));
    const std::uint64_t size =
        read_count(*meta, "total_size", index.string() + ": /metadata", std::uint64_t{1} << 53);
    const std::uint64_t per = checkpoint_value_bytes(config);
    if (per == 0) {
      m.checks.push_back(where + ": total_size " + with_commas(size) +
                         " bytes not compared (the config names no 16/32-bit dtype, or is quantised)");
      return;
    }
    if (size % per != 0) {
      m.warnings.push_back(where + ": total_size " + with_commas(size) + " bytes is not a whole number of " +
                           std::to_string(per) + "-byte values: mixed dtypes; not compared");
      return;
    }
    return compare(where + " total_size / " + std::to_string(per) + " bytes", size / per);
  }
  const std::filesystem::path single = dir / "model.safetensors";
  if (std::filesystem::is_regular_file(single, ec)) {
    if (const auto values = safetensors_values(single)) return compare("model.safetensors header", *values);
    m.warnings.push_back("model.safetensors: unreadable header; the count is not cross-checked");
  }
}
}  // namespace detail

/// Reads and parses a config.json or preset file; errors name the file (and byte offset). A safetensors
/// checkpoint beside it (index or single file) cross-checks the parameter count (loaded_model::checks).
/// A model directory (a snapshot, a save_pretrained folder) stands for the config.json in it, named by the
/// folder.
[[nodiscard]] inline loaded_model load_model_config(const std::filesystem::path& path) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  const std::filesystem::path file = dir ? path / "config.json" : path;
  if (dir && !std::filesystem::is_regular_file(file, ec))
    throw input_error(path.string(), "a model directory must hold a config.json; this one has none");
  const nlohmann::json config = detail::parse_json_file(file);
  loaded_model m = model_from_config(config, file.string());
  detail::cross_check_checkpoint(m, config, file);
  if (dir && !config.contains("_headroom")) {
    std::filesystem::path full = std::filesystem::absolute(path, ec).lexically_normal();
    if (!full.has_filename()) full = full.parent_path();
    m.name = full.filename().string();
    // A cache snapshot (models--ORG--NAME/snapshots/<commit>) is named by its Hub id.
    const std::string repo = full.parent_path().parent_path().filename().string();
    const auto sep = repo.find("--", 8);
    if (full.parent_path().filename() == "snapshots" && repo.rfind("models--", 0) == 0 &&
        sep != std::string::npos) {
      m.source = "the Hugging Face cache, snapshot " + m.name;
      m.name = repo.substr(8, sep - 8) + "/" + repo.substr(sep + 2);
    }
  }
  return m;
}

/// The config.json of Hub model `id` from the local Hugging Face cache (hub_cache.hpp), named by its id and
/// its snapshot; a miss is an input_error naming `where` and the folder looked in.
[[nodiscard]] inline loaded_model load_cached_hub_model(const hub_model_id& id, const std::string& where,
                                                        const std::filesystem::path& cache) {
  const hub_cache_lookup l = find_in_hub_cache(cache, id, "config.json");
  if (l.state != hub_cache_lookup::status::found)
    throw input_error(where, id.repo + ": " + hub_cache_miss(id, l, cache));
  loaded_model m = load_model_config(l.file);
  m.name = id.revision == "main" ? id.repo : id.repo + "@" + id.revision;
  m.source = "the Hugging Face cache, snapshot " + l.commit;
  return m;
}

/// Directories searched for presets, in order: `explicit_dir` (--preset-dir), then
/// $HEADROOM_PRESET_DIR, then the installed data dir, then the source tree's presets/.
[[nodiscard]] inline std::vector<std::filesystem::path> preset_search_path(
    const std::optional<std::filesystem::path>& explicit_dir = std::nullopt) {
  std::vector<std::filesystem::path> dirs;
  if (explicit_dir) dirs.push_back(*explicit_dir);
  if (const char* env = std::getenv("HEADROOM_PRESET_DIR"); env != nullptr && *env != '\0')
    dirs.emplace_back(env);
#ifdef HEADROOM_PRESET_INSTALL_DIR
  dirs.emplace_back(HEADROOM_PRESET_INSTALL_DIR);
#endif
#ifdef HEADROOM_PRESET_INSTALL_PATH  // headroom.pc's define, a bare path: made a string here, where GNU
                                     // mode's predefined `linux` and `unix` cannot rewrite its parts
#pragma push_macro("linux")
#pragma push_macro("unix")
#undef linux
#undef unix
#define HEADROOM_DETAIL_STRING(path) #path
#define HEADROOM_DETAIL_EXPANDED_STRING(path) HEADROOM_DETAIL_STRING(path)
  dirs.emplace_back(HEADROOM_DETAIL_EXPANDED_STRING(HEADROOM_PRESET_INSTALL_PATH));
#undef HEADROOM_DETAIL_EXPANDED_STRING
#undef HEADROOM_DETAIL_STRING
#pragma pop_macro("unix")
#pragma pop_macro("linux")
#endif
#ifdef HEADROOM_PRESET_SOURCE_DIR
  dirs.emplace_back(HEADROOM_PRESET_SOURCE_DIR);
#endif
  return dirs;
}

/// Names of the presets (*.json) in the first directories that hold them, sorted, unique.
[[nodiscard]] inline std::vector<std::string> preset_names(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::string> names;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

namespace detail {
/// `<dir>/<subdir>/<name>.json` in the first directory that has it; names with path parts never match.
inline std::optional<std::filesystem::path> find_named_json(std::string_view name,
                                                            const std::vector<std::filesystem::path>& dirs,
                                                            std::string_view subdir = "") {
  const bool plain =
      !name.empty() && name.find_first_of("/\\") == std::string_view::npos && name != "." && name != "..";
  if (!plain) return std::nullopt;
  for (const auto& dir : dirs) {
    const auto file = (subdir.empty() ? dir : dir / std::string(subdir)) / (std::string(name) + ".json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) return file;
  }
  return std::nullopt;
}
}  // namespace detail

namespace detail {
/// The one name of `names` that `name` spells in another case ("Qwen3-8B", "H100-SXM"), if any.
inline std::optional<std::string> name_in_other_case(std::string_view name,
                                                     const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (equal_ignoring_case(n, name)) return n;
  return std::nullopt;
}
}  // namespace detail

/// Loads preset `name` (in any case) from the first directory that has `<name>.json`.
[[nodiscard]] inline loaded_model load_preset(std::string_view name,
                                              const std::vector<std::filesystem::path>& dirs) {
  if (const auto file = detail::find_named_json(name, dirs)) return load_model_config(*file);
  const std::vector<std::string> names = preset_names(dirs);
  if (const auto other = detail::name_in_other_case(name, names)) return load_preset(*other, dirs);
  std::string known;
  for (const auto& n : names) detail::append_listed(known, n);
  std::string searched;
  for (const auto& d : dirs) detail::append_listed(searched, d.string());
  throw input_error("preset", "unknown '" + std::string(name) + "'" + detail::did_you_mean(names, name) +
                                  "; valid: " + (known.empty() ? std::string("(none found)") : known) +
                                  " (searched: " + searched + ")");
}

namespace detail {
/// The presets a Hub id or a torchtune builder names, after normalisation (lower case, no organisation,
/// no -Instruct / -it / -hf / -bnb-4bit / date suffix).
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 14> known_models{{
    {"llama-3.1-8b", "llama-3.1-8b-like"},
    {"llama-3-8b", "llama-3.1-8b-like"},  // Llama 3 and 3.1 8B: the same tensor shapes (rope scaling differs)
    {"llama-3.1-70b", "llama-3.1-70b-like"},
    {"llama-3.2-1b", "llama-3.2-1b-like"},
    {"llama-3.2-3b", "llama-3.2-3b"},
    {"llama-2-7b", "llama-2-7b"},
    {"qwen3-1.7b", "qwen3-1.7b"},
    {"qwen3-4b", "qwen3-4b"},
    {"qwen3-8b", "qwen3-8b"},
    {"qwen3-14b", "qwen3-14b"},
    {"qwen3-32b", "qwen3-32b-like"},
    {"qwen3-30b-a3b", "qwen3-30b-a3b"},
    {"mistral-7b-v0.3", "mistral-7b-v0.3"},
    {"gemma-2-2b", "gemma-2-2b"},
}};
/// `text` in lower case (ASCII: Hub ids, accelerate's upper-case enum names).
inline std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  return text;
}
inline std::string normalise_model_id(std::string id) {
  if (const auto slash = id.rfind('/'); slash != std::string::npos) id = id.substr(slash + 1);
  id = lower_case(std::move(id));
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view suffix : {"-bnb-4bit", "-unsloth", "-instruct", "-it", "-hf", "-base"})
      if (id.size() > suffix.size() && id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0) {
        id.resize(id.size() - suffix.size());
        changed = true;
      }
    // a release date such as Qwen3-4B-Instruct-2507
    if (id.size() > 5 && id[id.size() - 5] == '-' && std::all_of(id.end() - 4, id.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      id.resize(id.size() - 5);
      changed = true;
    }
  }
  if (id.rfind("meta-", 0) == 0) id = id.substr(5);
  return id;
}
/// The preset whose shapes a Hub id or builder names (known_models), or "" for none.
inline std::string_view known_model_preset(const std::string& id) {
  const std::string key = normalise_model_id(id.substr(0, id.find('@')));
  for (const auto& [name, preset] : known_models)
    if (name == key) return preset;
  return {};
}

}  // namespace detail

/// A model as a user or a file names it (--model, a recipe's base_model, a torchtune builder): a config.json
/// or a model directory; a Hub id ORG/NAME[@REVISION] whose config.json is in the local Hugging Face cache
/// (`cache`, hub_cache_dir); else a Hub id or builder whose shapes a preset holds (known_models), with a note
/// saying so. Errors name `where`.
[[nodiscard]] inline loaded_model load_model_named(const std::string& id, const std::string& where,
                                                   const std::vector<std::filesystem::path>& preset_dirs,
                                                   const std::filesystem::path& cache,
                                                   const hub_fetcher& fetch = {}) {
  std::error_code ec;
  if (std::filesystem::exists(id, ec))  // the key that named the file, then what is wrong with it (MI-26)
    return named_by(where, [&] { return load_model_config(id); });
  std::string miss, failed;  // what the cache lacked; why the download failed
  if (looks_like_hub_id(id)) {
    const hub_model_id hub = parse_hub_model_id(id, where);
    hub_cache_lookup l = find_in_hub_cache(cache, hub, "config.json");
    const bool revision = id.find('@') != std::string::npos;  // that very file: no preset stands in for it
    if (l.state != hub_cache_lookup::status::found && l.state != hub_cache_lookup::status::known_missing &&
        fetch)
      try {
        if (fetch(hub, cache, where)) l = find_in_hub_cache(cache, hub, "config.json");
      } catch (const input_error& e) {
        if (revision || detail::known_model_preset(id).empty()) throw;
        failed = std::string(e.what()).substr(e.field().size() + 2);
      }
    if (l.state == hub_cache_lookup::status::found) return load_cached_hub_model(hub, where, cache);
    miss = hub_cache_miss(hub, l, cache);
    if (revision) throw input_error(where, hub.repo + ": " + miss);
  }
  if (const std::string_view preset = detail::known_model_preset(id); !preset.empty()) {
    loaded_model m = load_preset(preset, preset_dirs);
    if (!failed.empty())
      m.notes.push_back("'" + id + "' could not be downloaded (" + failed + "): priced with the preset " +
                        std::string(preset) + " (its shapes)");
    else if (!miss.empty())
      m.notes.push_back("'" + id + "' is not in the Hugging Face cache: priced with the preset " +
                        std::string(preset) + " (its shapes); cache its config.json to read the file itself");
    return m;
  }
  std::string known;
  for (const auto& m : detail::known_models) detail::append_listed(known, m.first);
  throw input_error(
      where,
      "unknown model '" + id + "'" + (miss.empty() ? "" : ": " + miss) + "; presets for: " + known +
          " (any organisation, -Instruct and -bnb-4bit variants too); otherwise give --model, --config "
          "or --preset");
}

}  // namespace headroom
