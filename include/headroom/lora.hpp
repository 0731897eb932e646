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
    for (module_name m :
         {module_name::q_proj, module_name::k_proj, module_name::v_proj, module_name::o_proj,
          module_name::gate_proj, module_name::up_proj, module_name::down_proj, module_name::router,
          module_name::shared_expert_gate, module_name::qkv_proj, module_name::gate_up_proj})
      t.add(m);
    return t;
  }
  friend constexpr bool operator==(lora_targets a, lora_targets b) { return a.mask == b.mask; }
};

/// A target name as it appears in `target_modules`, and the module it selects.
struct target_name {
  std::string_view name;
  module_name module;
};
/// `gate` is the MoE router's attribute name (mlp.gate); PEFT matches by name suffix.
inline constexpr std::array<target_name, 13> lora_target_names{{
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

/// The inverse of parse_lora_targets: "all-linear" or the comma list of names.
[[nodiscard]] inline std::string lora_targets_text(lora_targets t) {
  if (t == lora_targets::all_linear()) return "all-linear";
  std::string out;
  for (const target_name& n : lora_target_names)
    if (t.contains(n.module)) detail::append_listed(out, n.name, ",");
  return out;
}

/// The dtype of the adapter weights (A, B, DoRA magnitudes).
enum class adapter_precision : std::uint8_t {
  base,  ///< the base weights' dtype (autocast_adapter_dtype=False, or an fp32 base)
  fp32,  ///< fp32 under a 16-bit base: PEFT's get_peft_model(autocast_adapter_dtype=True) default
};
inline constexpr std::array<named<adapter_precision>, 2> adapter_precision_names{
    {{"base", adapter_precision::base}, {"fp32", adapter_precision::fp32}}};

/// The PEFT methods a run can name (--peft-type): LoRA and its DoRA variant are modelled tensor by tensor.
enum class peft_type : std::uint8_t { lora, dora, lora_fa };
inline constexpr std::array<named<peft_type>, 3> peft_type_names{
    {{"lora", peft_type::lora}, {"dora", peft_type::dora}, {"lora-fa", peft_type::lora_fa}}};
/// PEFT methods not modelled yet (refused by name rather than priced as LoRA).
inline constexpr std::string_view unmodelled_peft_types =
    "ia3, vera, prefix-tuning, prompt-tuning, p-tuning, ln-tuning, boft, oft, loha, lokr, adalora";

/// PEFT LoraConfig essentials for memory (alpha does not change memory).
struct lora_config {
  std::uint64_t rank = 16;  ///< r
  lora_targets targets = lora_targets::all_linear();
  bool use_dora = false;  ///< DoRA: + a magnitude vector of out_features per adapted module
  bool freeze_a = false;  ///< LoRA-FA: lora_A frozen (peft/optimizers/lorafa.py create_lorafa_optimizer)
  lora_targets modules_to_save{};  ///< full trainable copies (ModulesToSaveWrapper), e.g. lm_head
  double dropout = 0.0;            ///< lora_dropout: above 0 each adapter keeps a mask and a dropped input
  adapter_precision dtype = adapter_precision::base;
};

inline constexpr std::uint64_t max_lora_rank = 1u << 16;

namespace detail {
constexpr void validate_lora(const lora_config& c) {
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) fail("lora_dropout", "must be in [0, 1)");
  if (c.rank == 0) fail("rank", "must be a positive integer");
  if (c.rank > max_lora_rank) fail("rank", "is absurdly large");
  if (c.targets.mask == 0) fail("target_modules", "selects no module");
}
[[noreturn]] HEADROOM_COLD inline void fail_no_target_matched() {
  fail("target_modules", "matches no module of this model");
}
}  // namespace detail

/// Whether LoRA adapts the base tensor `t`: a targeted linear weight (or embedding).
[[nodiscard]] HEADROOM_INLINE constexpr bool adapts(const lora_config& c, const param_tensor& t) {
  const bool linear = t.role == tensor_role::linear_weight || t.role == tensor_role::embedding;
  return linear && c.targets.contains(t.module);
}

/// Calls `visit(param_tensor)` for the adapter tensors of one adapted base tensor: A (r × in) and
/// B (out × r), plus DoRA's magnitude; nothing when `t` is not adapted. `trainable_only` leaves out
/// LoRA-FA's frozen lora_A.
template <class Visit>
HEADROOM_INLINE constexpr void visit_adapters(const param_tensor& t, const lora_config& c, Visit&& visit,
                                              bool trainable_only = false) {
  if (!adapts(c, t)) return;
  if (!(trainable_only && c.freeze_a))
    visit(param_tensor{t.module, tensor_role::linear_weight, c.rank, t.cols, t.copies});         // lora_A
  visit(param_tensor{t.module, tensor_role::linear_weight, t.rows, c.rank, t.copies});           // lora_B
  if (c.use_dora) visit(param_tensor{t.module, tensor_role::norm_weight, t.rows, 0, t.copies});  // magnitude
}

/// The same count without the tensors: r·(in + out) (+ out for DoRA) per copy, 0 when not adapted.
[[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t adapter_values_per_copy(const param_tensor& t,
                                                                              const lora_config& c) {
  if (!adapts(c, t)) return 0;
  return c.rank * (t.cols + t.rows) + (c.use_dora ? t.rows : 0);  // validated sizes: no overflow
}
/// The values of those that train: lora_A's r·in drop out under LoRA-FA.
[[nodiscard]] HEADROOM_INLINE constexpr std::uint64_t trainable_adapter_values_per_copy(
    const param_tensor& t, const lora_config& c) {
  const std::uint64_t all = adapter_values_per_copy(t, c);
  return all != 0 && c.freeze_a ? all - c.rank * t.cols : all;
}

/// The adapter tensors of every targeted linear weight of `base` (see visit_adapters).
[[nodiscard]] constexpr param_inventory adapter_inventory(const param_inventory& base, const lora_config& c) {
  detail::validate_lora(c);
  param_inventory out;
  for (const param_tensor& t : base) visit_adapters(t, c, [&out](const param_tensor& a) { out.add(a); });
  if (out.size == 0) detail::fail_no_target_matched();
  return out;
}
[[nodiscard]] constexpr param_inventory adapter_inventory(const model_shape& m, const lora_config& c) {
  return adapter_inventory(parameter_inventory(m), c);
}

/// The trainable copies PEFT's modules_to_save keeps (the frozen original stays in the base).
[[nodiscard]] constexpr param_inventory saved_module_inventory(const param_inventory& base,
                                                               const lora_config& c) {
  param_inventory out;
  for (const param_tensor& t : base)
    if (c.modules_to_save.contains(t.module)) out.add(t);
  return out;
}

/// Adapter parameter count: Σ r·(in + out) over targeted modules (W09: 41,943,040).
[[nodiscard]] constexpr params adapter_count(const model_shape& m, const lora_config& c) {
  params total{0};
  for (const param_tensor& t : adapter_inventory(m, c)) total += t.total();
  return total;
}

}  // namespace headroom
