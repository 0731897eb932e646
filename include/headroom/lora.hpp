// SPDX-License-Identifier: MIT
// LoRA adapters counted from shapes: each targeted nn.Linear(in, out) gains A (r × in) and
// B (out × r), i.e. r·(in + out) parameters (peft/tuners/lora/layer.py).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "choices.hpp"
#include "error.hpp"
#include "model.hpp"
#include "units.hpp"

namespace headroom {

/// A set of module names, as PEFT's `target_modules`.
struct lora_targets {
  std::uint32_t mask = 0;

  [[nodiscard]] constexpr bool contains(module_name m) const {
    return (mask >> static_cast<unsigned>(m)) & 1u;
  }
  constexpr lora_targets& add(module_name m) {
    mask |= 1u << static_cast<unsigned>(m);
    return *this;
  }
  /// PEFT "all-linear": every nn.Linear except the output embedding (tuners_utils.py
  /// _maybe_include_all_linear_layers), so MoE routers and Phi-3's fused projections are included
  /// and lm_head is not.
  [[nodiscard]] static constexpr lora_targets all_linear() {
    lora_targets t;
    for (module_name m : {module_name::q_proj,
                          module_name::k_proj,
                          module_name::v_proj,
                          module_name::o_proj,
                          module_name::gate_proj,
                          module_name::up_proj,
                          module_name::down_proj,
                          module_name::router,
                          module_name::shared_expert_gate,
                          module_name::qkv_proj,
                          module_name::gate_up_proj,
                          module_name::c_fc,
                          module_name::c_proj,
                          module_name::query_key_value,
                          module_name::dense,
                          module_name::dense_h_to_4h,
                          module_name::dense_4h_to_h,
                          module_name::q_a_proj,
                          module_name::q_b_proj,
                          module_name::kv_a_proj_with_mqa,
                          module_name::kv_b_proj})
      t.add(m);
    return t;
  }
  friend constexpr bool operator==(lora_targets a, lora_targets b) { return a.mask == b.mask; }
};

/// A target name as it appears in `target_modules`, and the module it selects.
struct target_name {
  std::string_view name;
  module_name module;
  bool alias = false;  ///< another family's name for the same module (GPT-NeoX's embed_in, embed_out)
};
/// `gate` is the MoE router's attribute name (mlp.gate); PEFT matches by name suffix.
inline constexpr std::array<target_name, 25> lora_target_names{{
    {"q_proj", module_name::q_proj},
    {"k_proj", module_name::k_proj},
    {"v_proj", module_name::v_proj},
    {"o_proj", module_name::o_proj},
    {"gate_proj", module_name::gate_proj},
    {"up_proj", module_name::up_proj},
    {"down_proj", module_name::down_proj},
    {"gate", module_name::router},
    {"shared_expert_gate", module_name::shared_expert_gate},
    {"lm_head", module_name::lm_head},
    {"embed_tokens", module_name::embed_tokens},
    {"qkv_proj", module_name::qkv_proj},
    {"gate_up_proj", module_name::gate_up_proj},
    {"c_fc", module_name::c_fc},
    {"c_proj", module_name::c_proj},
    {"query_key_value", module_name::query_key_value},
    {"dense", module_name::dense},
    {"dense_h_to_4h", module_name::dense_h_to_4h},
    {"dense_4h_to_h", module_name::dense_4h_to_h},
    {"q_a_proj", module_name::q_a_proj},
    {"q_b_proj", module_name::q_b_proj},
    {"kv_a_proj_with_mqa", module_name::kv_a_proj_with_mqa},
    {"kv_b_proj", module_name::kv_b_proj},
    {"embed_in", module_name::embed_tokens, true},
    {"embed_out", module_name::lm_head, true},
}};

[[nodiscard]] inline std::string lora_target_choices() {
  std::string out = "all-linear";
  for (const target_name& t : lora_target_names) detail::append_listed(out, t.name);
  return out;
}

/// Parses "all-linear" (case-insensitive, as PEFT) or a comma list such as "q_proj,v_proj".
[[nodiscard]] inline lora_targets parse_lora_targets(std::string_view text) {
  auto lower = std::string(text);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (lower == "all-linear") return lora_targets::all_linear();
  lora_targets out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    bool found = false;
    for (const target_name& t : lora_target_names)
      if (t.name == item) {
        out.add(t.module);
        found = true;
      }
    if (!found)
      throw input_error("target_modules",
                        "unknown module '" + std::string(item) + "'; valid: " + lora_target_choices());
    start = comma + 1;
  }
  return out;
}

/// IA3's feedforward_modules when none are given: PEFT's mapping
/// (TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_ MAPPING: down_proj, GPT-NeoX's dense_4h_to_h) among the
/// targets — PEFT matches it module by module, so a name that is not targeted has no effect.
[[nodiscard]] inline lora_targets ia3_default_feedforward(lora_targets targets) {
  return lora_targets{targets.mask & parse_lora_targets("down_proj,dense_4h_to_h").mask};
}

/// The inverse of parse_lora_targets: "all-linear" or the comma list of names.
[[nodiscard]] inline std::string lora_targets_text(lora_targets t) {
  if (t == lora_targets::all_linear()) return "all-linear";
  std::string out;
  for (const target_name& n : lora_target_names)
    if (t.contains(n.module) && !n.alias) detail::append_listed(out, n.name, ",");
  return out;
}

/// The dtype of the adapter weights (A, B, DoRA magnitudes).
enum class adapter_precision : std::uint8_t {
  base,  ///< the base weights' dtype (autocast_adapter_dtype=False, or an fp32 base)
  fp32,  ///< fp32 under a 16-bit base: PEFT's get_peft_model(autocast_adapter_dtype=True) default
};
inline constexpr std::array<named<adapter_precision>, 2> adapter_precision_names{
    {{"base", adapter_precision::base}, {"fp32", adapter_precision::fp32}}};

/// The PEFT method a frozen-base run trains with (PeftConfig.peft_type), each modelled tensor by tensor.
enum class peft_method : std::uint8_t {
  lora,           ///< LoRA and its DoRA / LoRA-FA variants (tuners/lora)
  ia3,            ///< (IA)³: one learned vector scales each targeted linear's output or input (tuners/ia3)
  vera,           ///< VeRA: frozen shared projections, two trainable vectors per linear (tuners/vera)
  ln_tuning,      ///< LayerNorm tuning: a trainable copy of every norm (tuners/ln_tuning)
  prompt_tuning,  ///< prompt tuning: num_virtual_tokens trainable embeddings prepended (tuners/prompt_tuning)
  p_tuning,       ///< P-tuning: virtual tokens from an embedding through an MLP, prepended (tuners/p_tuning)
  prefix_tuning,  ///< prefix tuning: keys and values before each layer's own (tuners/prefix_tuning)
};
/// The PEFT methods a run can name (--peft-type): LoRA's variants and the other methods.
enum class peft_type : std::uint8_t {
  lora,
  dora,
  lora_fa,
  ia3,
  vera,
  ln_tuning,
  prompt_tuning,
  p_tuning,
  prefix_tuning
};
inline constexpr std::array<named<peft_type>, 9> peft_type_names{
    {{"lora", peft_type::lora},
     {"dora", peft_type::dora},
     {"lora-fa", peft_type::lora_fa},
     {"ia3", peft_type::ia3},
     {"vera", peft_type::vera},
     {"ln-tuning", peft_type::ln_tuning},
     {"prompt-tuning", peft_type::prompt_tuning},
     {"p-tuning", peft_type::p_tuning},
     {"prefix-tuning", peft_type::prefix_tuning}}};
/// PEFT methods not modelled yet (refused by name rather than priced as LoRA).
inline constexpr std::string_view unmodelled_peft_types = "boft, oft, loha, lokr, adalora";
/// Whether `name` is one of those (a whole entry of the list).
[[nodiscard]] constexpr bool is_unmodelled_peft_type(std::string_view name) {
  std::string_view rest = unmodelled_peft_types;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(", ");
    if (rest.substr(0, comma) == name) return true;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
  }
  return false;
}

/// LoraConfig.init_lora_weights, where it changes memory: PiSSA and OLoRA initialise each adapter from an
/// fp32 SVD or QR of its base weight at get_peft_model (peft/tuners/lora/layer.py pissa_init, olora_init).
enum class lora_init : std::uint8_t {
  standard,     ///< True / "gaussian": random A, zero B, nothing transient
  pissa,        ///< "pissa": torch.linalg.svd of the whole weight
  pissa_niter,  ///< "pissa_niter_[n]": torch.svd_lowrank with n subspace iterations
  olora,        ///< "olora": torch.linalg.qr of the weight
};
inline constexpr std::array<named<lora_init>, 4> lora_init_names{{{"default", lora_init::standard},
                                                                  {"pissa", lora_init::pissa},
                                                                  {"pissa-niter", lora_init::pissa_niter},
                                                                  {"olora", lora_init::olora}}};

/// Reads init_lora_weights as PEFT spells it: "gaussian" (or "default", "true"), "pissa", "pissa_niter_[n]",
/// "olora".
[[nodiscard]] inline lora_init parse_lora_init(std::string_view text,
                                               const std::string& field = "init_lora_weights") {
  if (text == "default" || text == "true" || text == "gaussian") return lora_init::standard;
  if (text == "pissa") return lora_init::pissa;
  if (text == "olora") return lora_init::olora;
  constexpr std::string_view niter = "pissa_niter_";
  if (text.substr(0, niter.size()) == niter && text.size() > niter.size() &&
      text.find_first_not_of("0123456789", niter.size()) == std::string_view::npos) {
    // PEFT's docs use 4 to 16 subspace iterations; past 10^6 (7 digits) it is a typo (issue 31, SI-37)
    if (text.size() - niter.size() > 6)
      throw input_error(
          field, "pissa_niter_N: N is absurdly large (" + std::string(text.substr(niter.size())) + ")");
    return lora_init::pissa_niter;
  }
  throw input_error(field, "unknown '" + std::string(text) +
                               "'; valid: gaussian (the default), pissa, pissa_niter_[n], olora");
}

/// PEFT LoraConfig essentials for memory (alpha does not change memory).
struct lora_config {
  std::uint64_t rank = 16;  ///< r
  lora_targets targets = lora_targets::all_linear();
  bool use_dora = false;  ///< DoRA: + a magnitude vector of out_features per adapted module
  bool freeze_a = false;  ///< LoRA-FA: lora_A frozen (peft/optimizers/lorafa.py create_lorafa_optimizer)
  lora_targets modules_to_save{};  ///< full trainable copies (ModulesToSaveWrapper), e.g. lm_head
  double dropout = 0.0;            ///< lora_dropout: above 0 each adapter keeps a mask and a dropped input
  adapter_precision dtype = adapter_precision::base;
  peft_method method = peft_method::lora;  ///< the PEFT method; rank and targets serve LoRA, IA3 and VeRA
  /// IA3's feedforward_modules: scaled on their input (1 × in) rather than their output (out × 1).
  lora_targets feedforward = lora_targets{}.add(module_name::down_proj);
  std::uint64_t virtual_tokens = 0;  ///< prompt, P- and prefix tuning's num_virtual_tokens (no default)
  /// P-tuning's and prefix tuning's encoder_hidden_size; 0 is PEFT's default, the encoder's token_dim.
  std::uint64_t encoder_hidden_size = 0;
  /// Prefix tuning's prefix_projection: the prefix comes from an embedding through a 2-layer MLP.
  bool prefix_projection = false;
  lora_init init = lora_init::standard;  ///< init_lora_weights: PiSSA / OLoRA add a transient at load
};

/// Each --peft-type name's method (DoRA and LoRA-FA are LoRA with a flag).
struct peft_type_method {
  peft_type type;
  peft_method method;
};
inline constexpr std::array<peft_type_method, 9> peft_type_methods{
    {{peft_type::lora, peft_method::lora},
     {peft_type::dora, peft_method::lora},
     {peft_type::lora_fa, peft_method::lora},
     {peft_type::ia3, peft_method::ia3},
     {peft_type::vera, peft_method::vera},
     {peft_type::ln_tuning, peft_method::ln_tuning},
     {peft_type::prompt_tuning, peft_method::prompt_tuning},
     {peft_type::p_tuning, peft_method::p_tuning},
     {peft_type::prefix_tuning, peft_method::prefix_tuning}}};
/// Sets the method and LoRA's variant flags from a --peft-type name.
constexpr void set_peft_type(lora_config& c, peft_type t) {
  c.use_dora = t == peft_type::dora;
  c.freeze_a = t == peft_type::lora_fa;
  for (const peft_type_method& e : peft_type_methods)
    if (e.type == t) c.method = e.method;
}
/// The --peft-type name of a configuration (the inverse of set_peft_type).
[[nodiscard]] constexpr peft_type peft_type_of(const lora_config& c) {
  if (c.method == peft_method::lora)
    return c.use_dora ? peft_type::dora : c.freeze_a ? peft_type::lora_fa : peft_type::lora;
  for (const peft_type_method& e : peft_type_methods)
    if (e.method == c.method) return e.type;
  return peft_type::lora;
}
/// Methods that wrap targeted linears (LoRA, IA3, VeRA); LN tuning trains the norms, prompt tuning an
/// embedding of its own.
[[nodiscard]] constexpr bool adapts_linears(const lora_config& c) {
  return c.method == peft_method::lora || c.method == peft_method::ia3 || c.method == peft_method::vera;
}
/// Whether the norms' weights train (LN tuning's copies).
[[nodiscard]] constexpr bool norms_train(const lora_config& c) { return c.method == peft_method::ln_tuning; }
/// PEFT's prompt-learning methods (PeftConfig.is_prompt_learning): prompt, P- and prefix tuning.
[[nodiscard]] constexpr bool prompt_learning(peft_method m) {
  return m == peft_method::prompt_tuning || m == peft_method::p_tuning || m == peft_method::prefix_tuning;
}
[[nodiscard]] constexpr bool prompt_learning(const lora_config& c) { return prompt_learning(c.method); }
/// Adapters kept in fp32: PEFT's autocast_adapter_dtype, or a prompt-learning encoder, which PEFT builds
/// in the default dtype, fp32, whatever the base dtype (peft_model.py _setup_prompt_encoder moves it to
/// the device only).
[[nodiscard]] constexpr bool fp32_adapters(const lora_config& c) {
  return c.dtype == adapter_precision::fp32 || prompt_learning(c);
}
/// The positions every block and the loss see: prompt and P-tuning prepend num_virtual_tokens to each
/// sequence (PeftModelForCausalLM.forward: torch.cat((prompts, inputs_embeds), dim=1), labels padded with
/// -100).
[[nodiscard]] constexpr std::uint64_t prompt_positions(const lora_config& c) {
  return c.method == peft_method::prompt_tuning || c.method == peft_method::p_tuning ? c.virtual_tokens : 0;
}
/// The key/value positions prefix tuning puts before every layer's own (get_prompt's past_key_values):
/// attention reads s + P keys for s queries; the loss sees s positions.
[[nodiscard]] constexpr std::uint64_t prefix_positions(const lora_config& c) {
  return c.method == peft_method::prefix_tuning ? c.virtual_tokens : 0;
}

inline constexpr std::uint64_t max_lora_rank = 1u << 16;
inline constexpr std::uint64_t max_virtual_tokens = 1u << 16;
inline constexpr std::uint64_t max_encoder_hidden_size = 1u << 20;

namespace detail {
constexpr void validate_lora(const lora_config& c) {
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) fail("lora_dropout", "must be in [0, 1)");
  if (c.rank == 0) fail("rank", "must be a positive integer");
  if (c.rank > max_lora_rank) fail("rank", "is absurdly large");
  if (c.targets.mask == 0) fail("target_modules", "selects no module");
  if (c.method != peft_method::lora && (c.use_dora || c.freeze_a))
    fail("use_dora", "DoRA and LoRA-FA are LoRA variants: they need peft_type LORA");
  if (c.method == peft_method::ia3 && (c.feedforward.mask & ~c.targets.mask) != 0)
    fail("feedforward_modules", "must be a subset of target_modules (PEFT's IA3Config checks the same)");
  if (prompt_learning(c) && c.virtual_tokens == 0)
    fail("num_virtual_tokens", "must be a positive integer (PEFT's prompt-learning configs have no default)");
  if (c.dropout > 0 && c.method != peft_method::lora && c.method != peft_method::vera)
    fail("lora_dropout",
         "applies to LoRA and VeRA only (IA3, LN tuning and prompt, P- and prefix tuning have no dropout)");
  if (c.virtual_tokens > max_virtual_tokens) fail("num_virtual_tokens", "is absurdly large");
  if (c.encoder_hidden_size != 0 && c.method != peft_method::p_tuning &&
      c.method != peft_method::prefix_tuning)
    fail("encoder_hidden_size", "belongs to P-tuning and prefix tuning (their encoders' width)");
  if (c.encoder_hidden_size > max_encoder_hidden_size) fail("encoder_hidden_size", "is absurdly large");
  if (c.prefix_projection && c.method != peft_method::prefix_tuning)
    fail("prefix_projection", "belongs to prefix tuning");
  if (c.init != lora_init::standard && c.method != peft_method::lora)
    fail("init_lora_weights", "PiSSA and OLoRA initialise LoRA adapters: they need peft_type LORA");
}
[[noreturn]] HEADROOM_COLD inline void fail_no_target_matched() {
  fail("target_modules", "matches no module of this model");
}
}  // namespace detail

/// Whether the method adapts the base tensor `t`: a targeted linear weight (or, for LoRA, embedding), or
/// under LN tuning every norm weight (PEFT's Llama default targets each RMSNorm of the blocks and the final
/// norm; headroom trains them all, q_norm and k_norm included).
[[nodiscard]] HEADROOM_INLINE constexpr bool adapts(const lora_config& c, const param_tensor& t) {
  if (c.method == peft_method::ln_tuning) return t.role == tensor_role::norm_weight;
  if (!adapts_linears(c)) return false;
  // A matrix held as an nn.Parameter (gpt-oss's experts and router) is no nn.Linear: target_modules skips it;
  // torchtune's LoRAGroupedExperts adapts its 3-D experts (lora_per_expert).
  const bool linear = (t.role == tensor_role::linear_weight && (t.nn_linear || t.lora_per_expert)) ||
                      (t.role == tensor_role::embedding && c.method == peft_method::lora);
  return linear && c.targets.contains(t.module);
}

/// Calls `visit(param_tensor)` for the adapter tensors of one adapted base tensor; nothing when `t` is
/// not adapted. LoRA: A (r × in), B (out × r), DoRA's magnitude (out); `trainable_only` leaves out LoRA-FA's
/// frozen lora_A. IA3: ia3_l, (1 × in) on a feedforward module, (out × 1) otherwise (ia3/layer.py
/// IA3Layer.update_layer). VeRA: lambda_d (r) and lambda_b (out) (vera/layer.py VeraLayer.update_layer).
/// LN tuning: a deep copy of the norm (ln_tuning/layer.py LNTuningLayer.update_layer).
template <class Visit>
HEADROOM_INLINE constexpr void visit_adapters(const param_tensor& t, const lora_config& c, Visit&& visit,
                                              bool trainable_only = false) {
  if (!adapts(c, t)) return;
  using tr = tensor_role;
  switch (c.method) {
    case peft_method::ia3:
      visit(param_tensor{t.module, tr::norm_weight, c.feedforward.contains(t.module) ? t.cols : t.rows, 0,
                         t.copies});
      return;
    case peft_method::vera:
      visit(param_tensor{t.module, tr::norm_weight, c.rank, 0, t.copies});  // lambda_d
      visit(param_tensor{t.module, tr::norm_weight, t.rows, 0, t.copies});  // lambda_b
      return;
    case peft_method::ln_tuning:
      visit(t);
      return;
    case peft_method::prompt_tuning:
    case peft_method::p_tuning:
    case peft_method::prefix_tuning:
      return;
    case peft_method::lora:
      break;
  }
  // Per-expert adapters of a 3-D expert are 3-D too (torchtune's lora_gate_a: E × d × r): stored like it.
  auto like = [&t](param_tensor a) {
    a.nn_linear = t.nn_linear;
    a.routed_expert = t.routed_expert;
    return a;
  };
  if (!(trainable_only && c.freeze_a))
    visit(like({t.module, tr::linear_weight, c.rank * t.stacked, t.cols, t.copies}));  // lora_A
  visit(like({t.module, tr::linear_weight, t.rows, c.rank, t.copies}));                // lora_B
  if (c.use_dora) visit(like({t.module, tr::norm_weight, t.rows, 0, t.copies}));       // magnitude
}

/// What one adapted base tensor adds, per copy, in one pass: values stored and trainable, trainable tensors
/// and the largest of them (zeros when `t` is not adapted). LoRA: r·(in + out) (+ out for DoRA), lora_A's
/// r·in frozen under LoRA-FA; IA3: in (feedforward) or out; VeRA: r + out; LN tuning: the norm's width.
struct adapter_counts {
  std::uint64_t stored = 0, trainable = 0, tensors = 0, largest = 0;
};
[[nodiscard]] HEADROOM_INLINE constexpr adapter_counts adapter_counts_per_copy(const param_tensor& t,
                                                                               const lora_config& c) {
  if (!adapts(c, t)) return {};
  switch (c.method) {  // validated sizes: no overflow
    case peft_method::ia3: {
      const std::uint64_t v = c.feedforward.contains(t.module) ? t.cols : t.rows;
      return {v, v, 1, v};
    }
    case peft_method::vera:
      return {c.rank + t.rows, c.rank + t.rows, 2, t.rows > c.rank ? t.rows : c.rank};
    case peft_method::ln_tuning:
      return {t.rows, t.rows, 1, t.rows};
    case peft_method::prompt_tuning:
    case peft_method::p_tuning:
    case peft_method::prefix_tuning:
      return {};
    case peft_method::lora:
      break;
  }
  const std::uint64_t a = c.rank * t.cols * t.stacked, b = t.rows * c.rank,
                      magnitude = c.use_dora ? t.rows : 0;
  return {a + b + magnitude, (c.freeze_a ? 0 : a) + b + magnitude,
          (c.use_dora ? 3u : 2u) - (c.freeze_a ? 1u : 0u),
          c.freeze_a || b > a ? b : a};  // B (out × r) or A (r × in)
}
/// The values stored per copy (adapter_counts_per_copy's `stored`): W09's r·(in + out) for LoRA.
[[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t adapter_values_per_copy(const param_tensor& t,
                                                                              const lora_config& c) {
  return adapter_counts_per_copy(t, c).stored;
}
/// The values of those that train: lora_A's r·in drop out under LoRA-FA.
[[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t trainable_adapter_values_per_copy(
    const param_tensor& t, const lora_config& c) {
  return adapter_counts_per_copy(t, c).trainable;
}

/// The width of a prompt-learning encoder's output per position (PEFT's token_dim): the hidden size, or for
/// prefix tuning one layer's keys (or values), head_dim · num_key_value_heads (utils/other.py
/// _prepare_prompt_learning_config, "For grouped-query attention").
[[nodiscard]] constexpr std::uint64_t prompt_token_dim(const model_shape& m, const lora_config& c) {
  return c.method == peft_method::prefix_tuning ? kv_width(m) : m.hidden_size;
}
/// The encoder's hidden width: encoder_hidden_size, by default token_dim (the same function).
[[nodiscard]] constexpr std::uint64_t prompt_encoder_width(const model_shape& m, const lora_config& c) {
  return c.encoder_hidden_size != 0 ? c.encoder_hidden_size : prompt_token_dim(m, c);
}

/// Adapter tensors of the model rather than of one base tensor, all trainable but VeRA's:
/// - VeRA's shared frozen projections vera_A (r × the widest targeted input) and vera_B (the widest output
///   × r), registered once (vera/model.py VeraModel._find_dim, _init_vera_A_vera_B; buffers, so PEFT's
///   parameter count leaves them out; `trainable_only` leaves them out too);
/// - prompt tuning's embedding, num_virtual_tokens × hidden_size (prompt_tuning/model.py PromptEmbedding);
/// - P-tuning's embedding P × h and MLP head h → E → E → h with biases (p_tuning/model.py PromptEncoder;
///   the LSTM head is not modelled);
/// - prefix tuning's embedding P × 2·L·kv, or with prefix_projection an embedding P × kv and the MLP
///   kv → E → 2·L·kv with biases (prefix_tuning/model.py PrefixEncoder).
template <class Visit>
constexpr void visit_model_adapters(const model_shape& m, const lora_config& c, Visit&& visit,
                                    bool trainable_only = false) {
  using tr = tensor_role;
  const module_name at = module_name::embed_tokens;  // the encoders stand where the embeddings are
  auto linear = [&](std::uint64_t in, std::uint64_t out) {
    visit(param_tensor{at, tr::linear_weight, out, in, 1});
    visit(param_tensor{at, tr::bias, out, 0, 1});
  };
  const std::uint64_t P = c.virtual_tokens, token = prompt_token_dim(m, c), E = prompt_encoder_width(m, c);
  switch (c.method) {
    case peft_method::prompt_tuning:
      visit(param_tensor{at, tr::embedding, P, token, 1});
      return;
    case peft_method::p_tuning:
      visit(param_tensor{at, tr::embedding, P, token, 1});
      linear(token, E);
      linear(E, E);
      linear(E, token);
      return;
    case peft_method::prefix_tuning: {
      const std::uint64_t prefix = detail::checked_mul(2 * m.num_hidden_layers, token, "prefix width");
      if (!c.prefix_projection) {
        visit(param_tensor{at, tr::embedding, P, prefix, 1});
        return;
      }
      visit(param_tensor{at, tr::embedding, P, token, 1});
      linear(token, E);
      linear(E, prefix);
      return;
    }
    case peft_method::vera:
      break;
    case peft_method::lora:
    case peft_method::ia3:
    case peft_method::ln_tuning:
      return;
  }
  if (trainable_only) return;
  std::uint64_t in = 0, out = 0;
  visit_parameters(m, [&](const param_tensor& t) {
    if (!adapts(c, t)) return;
    in = t.cols > in ? t.cols : in;
    out = t.rows > out ? t.rows : out;
  });
  if (in == 0) return;
  visit(param_tensor{module_name::q_proj, tr::linear_weight, c.rank, in, 1});   // vera_A
  visit(param_tensor{module_name::q_proj, tr::linear_weight, out, c.rank, 1});  // vera_B
}

/// The adapter tensors of every adapted base tensor of `base` (see visit_adapters).
[[nodiscard]] constexpr param_inventory adapter_inventory(const param_inventory& base, const lora_config& c) {
  detail::validate_lora(c);
  param_inventory out;
  for (const param_tensor& t : base) visit_adapters(t, c, [&out](const param_tensor& a) { out.add(a); });
  if (out.size == 0 && !prompt_learning(c)) detail::fail_no_target_matched();
  return out;
}
/// Every adapter tensor of the model: those of each adapted tensor, then the model-level ones.
[[nodiscard]] constexpr param_inventory adapter_inventory(const model_shape& m, const lora_config& c) {
  param_inventory out = adapter_inventory(parameter_inventory(m), c);
  visit_model_adapters(m, c, [&out](const param_tensor& a) { out.add(a); });
  return out;
}

/// The trainable copies PEFT's modules_to_save keeps (the frozen original stays in the base).
[[nodiscard]] constexpr param_inventory saved_module_inventory(const param_inventory& base,
                                                               const lora_config& c) {
  param_inventory out;
  for (const param_tensor& t : base)
    if (c.modules_to_save.contains(t.module)) out.add(t);
  return out;
}

/// Adapter values stored: LoRA's Σ r·(in + out) over targeted modules (W09: 41,943,040), VeRA's
/// projections included.
[[nodiscard]] constexpr params adapter_count(const model_shape& m, const lora_config& c) {
  params total{0};
  for (const param_tensor& t : adapter_inventory(m, c)) total += t.total();
  return total;
}

}  // namespace headroom
