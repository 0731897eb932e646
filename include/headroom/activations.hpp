// SPDX-License-Identifier: MIT
// Activation memory: what autograd keeps between forward and backward. Two models: the course's
// Korthikanti formula, and a per-tensor inventory of a Llama/Qwen/Mistral/Gemma block
// (docs/activations.md lists every term with its reason).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lora.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "units.hpp"

namespace headroom {

enum class attention_impl : std::uint8_t {
  eager,  ///< HF eager attention: materialises the s × s scores and probabilities
  sdpa,   ///< torch SDPA (memory-efficient / flash backends): output + log-sum-exp
  flash,  ///< FlashAttention-2/3: output + log-sum-exp, GQA without expanding K/V
};
enum class checkpointing : std::uint8_t {
  none,                  ///< keep every layer's saved tensors
  full,                  ///< keep each block's input, recompute its internals in backward (TRL default)
  selective,             ///< TRL selective: keep block input and attention output, recompute the rest
  offload,               ///< TRL activation_offloading: saved tensors go to pinned host RAM, no recompute
  offload_checkpointed,  ///< Unsloth's "unsloth" mode: checkpoint, then offload the block inputs
};
enum class activation_formula : std::uint8_t { korthikanti, detailed };

inline constexpr std::array<named<attention_impl>, 3> attention_names{
    {{"eager", attention_impl::eager}, {"sdpa", attention_impl::sdpa}, {"flash", attention_impl::flash}}};
inline constexpr std::array<named<checkpointing>, 5> checkpointing_names{
    {{"none", checkpointing::none},
     {"full", checkpointing::full},
     {"selective", checkpointing::selective},
     {"offload", checkpointing::offload},
     {"unsloth", checkpointing::offload_checkpointed}}};
inline constexpr std::array<named<activation_formula>, 2> activation_formula_names{
    {{"korthikanti", activation_formula::korthikanti}, {"detailed", activation_formula::detailed}}};

/// The shape of one micro-batch and the switches that decide what autograd keeps.
struct activation_config {
  std::uint64_t batch = 1;       ///< micro-batch b (per_device_train_batch_size)
  std::uint64_t seq_len = 2048;  ///< tokens per sequence s (max_length)
  attention_impl attention = attention_impl::flash;
  checkpointing ckpt = checkpointing::full;
  activation_formula formula = activation_formula::detailed;
  bool attention_dropout = false;  ///< attention_dropout > 0: eager keeps a 1-byte mask per score
};

/// The largest micro-batch and sequence length an estimate accepts (anything larger is a typo); the
/// --fit solvers search up to the same bounds.
inline constexpr std::uint64_t max_workload_batch = std::uint64_t{1} << 24;
inline constexpr std::uint64_t max_workload_seq_len = std::uint64_t{1} << 26;

/// One saved tensor (or group) with its size and why autograd keeps it.
struct activation_term {
  std::string_view name;
  bytes amount{0};
  std::string_view reason;
};

/// A fixed-capacity list of terms, so the inventory stays constexpr.
struct activation_terms {
  static constexpr std::size_t capacity = 40;
  std::array<activation_term, capacity> items{};
  std::size_t size = 0;

  constexpr void add(std::string_view name, bytes amount, std::string_view reason) {
    if (size == capacity) detail::fail("activation_terms", "capacity exceeded");
    items[size++] = {name, amount, reason};
  }
  [[nodiscard]] constexpr const activation_term* begin() const { return items.data(); }
  [[nodiscard]] constexpr const activation_term* end() const { return items.data() + size; }
  [[nodiscard]] constexpr bytes total() const {
    bytes sum{0};
    for (const activation_term& t : *this) sum += t.amount;
    return sum;
  }
};

/// The same interface keeping only the sum: what the estimates and solvers use (no names stored).
struct bytes_sum {
  bytes sum{0};
  constexpr void add(std::string_view /*name*/, bytes amount, std::string_view /*reason*/) { sum += amount; }
  [[nodiscard]] constexpr bytes total() const { return sum; }
};

/// Activation memory of one micro-batch under a checkpointing mode (the terms: activation_inventory).
struct activation_estimate {
  bytes layer{0};           ///< what one block saves without recomputation
  bytes model_level{0};     ///< saved once per model (final norm, lm_head input, RoPE tables, mask)
  bytes per_layer_kept{0};  ///< what each block keeps on the GPU under the checkpointing mode
  bytes recompute{0};       ///< one block's internals alive while it is recomputed or in flight
  bytes gpu{0};             ///< L·per_layer_kept + model_level + recompute: the start-of-backward total
  bytes host{0};            ///< offloaded to pinned host RAM (offload modes)
};

namespace detail {
constexpr std::uint64_t mul3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return checked_mul(checked_mul(a, b, "activation size"), c, "activation size");
}
constexpr bytes act(std::uint64_t a, std::uint64_t b, std::uint64_t c) { return bytes(mul3(a, b, c)); }

/// Whether a linear layer keeps its input for backward: autograd saves the input of a matmul only
/// when the weight needs a gradient (full fine-tuning) or a LoRA adapter reads it (lora_A).
constexpr bool keeps_input(const training_setup& s, module_name m) {
  return s.method == training_method::full || s.lora.targets.contains(m);
}
constexpr bool adapted(const training_setup& s, module_name m) {
  return s.method != training_method::full && s.lora.targets.contains(m);
}

/// One HF RMSNorm over `width` values per row and `rows` rows (LlamaRMSNorm.forward).
template <class Out>
constexpr void add_rms_norm(Out& out, std::string_view name, std::uint64_t rows, std::uint64_t width,
                            const model_shape& m, const training_setup& s, std::uint64_t ab) {
  out.add(name, act(rows, width, fp32_bytes),
          "fp32 copy of the input, saved by pow(2) and the rsqrt product");
  out.add(name, act(rows, 1, fp32_bytes), "rsqrt(variance + eps), one fp32 value per row");
  if (s.method == training_method::full)  // weight · x saves x only for the weight's gradient
    out.add(name, act(rows, width, m.norm_scale_fp32 ? fp32_bytes : ab),
            "normalised input, saved by the weight multiply for the norm weight's gradient");
}

/// Per-tensor inventory of one decoder block without recomputation, into `out`. t = b·s tokens.
template <class Out>
constexpr void layer_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                           Out& out) {
  using mn = module_name;
  const std::uint64_t ab = activation_bytes(s.precision);
  const std::uint64_t t = checked_mul(c.batch, c.seq_len, "tokens");
  const std::uint64_t d = m.hidden_size, q = query_width(m), kv = kv_width(m);
  const std::uint64_t a = m.num_attention_heads, g = m.num_key_value_heads;

  add_rms_norm(out, "input_layernorm", t, d, m, s, ab);
  if (keeps_input(s, mn::q_proj) || keeps_input(s, mn::k_proj) || keeps_input(s, mn::v_proj) ||
      keeps_input(s, mn::qkv_proj))
    out.add("q/k/v_proj input", act(t, d, ab), "the norm output, saved once for q_proj, k_proj and v_proj");
  if (m.qk_norm) {
    add_rms_norm(out, "q_norm", checked_mul(t, a), m.head_dim, m, s, ab);
    add_rms_norm(out, "k_norm", checked_mul(t, g), m.head_dim, m, s, ab);
  }
  out.add("RoPE", bytes(0), "q·cos + rotate_half(q)·sin saves only the shared cos/sin tables");
  const bytes lse = act(t, a, fp32_bytes);
  switch (c.attention) {
    case attention_impl::flash:
      out.add("flash-attn q, k, v", act(t, q + 2 * kv, ab),
              "kernel inputs at their GQA widths, for backward");
      out.add("flash-attn output", act(t, q, ab), "saved by the kernel; o_proj reads the same storage");
      out.add("flash-attn log-sum-exp", lse, "fp32 softmax statistics per head and token");
      break;
    case attention_impl::sdpa:
      out.add("sdpa q, k, v", act(t, 3 * q, ab), "repeat_kv expands K and V to all heads before SDPA");
      out.add("sdpa output", act(t, q, ab), "saved by the kernel for its backward");
      out.add("sdpa log-sum-exp", lse, "fp32 softmax statistics per head and token");
      if (keeps_input(s, mn::o_proj))
        out.add("o_proj input", act(t, q, ab), "the transposed, contiguous attention output");
      break;
    case attention_impl::eager: {
      const bytes scores = act(c.batch, checked_mul(a, c.seq_len), c.seq_len);  // b·a·s² values
      out.add("eager q, k", act(t, 2 * q, ab), "saved by q·kᵀ; repeat_kv expands K to all heads");
      out.add("eager softmax output", scores * fp32_bytes, "softmax in fp32 saves its output");
      out.add("eager probabilities", scores * ab, "cast back to the compute dtype, saved by probs·v");
      if (c.attention_dropout)
        out.add("eager dropout mask", scores, "one byte per score when attention_dropout > 0");
      out.add("eager v", act(t, q, ab), "saved by probs·v; repeat_kv expands V to all heads");
      if (keeps_input(s, mn::o_proj))
        out.add("o_proj input", act(t, q, ab), "the transposed, contiguous attention output");
      break;
    }
  }
  out.add("residual add", bytes(0), "x + f(x) saves nothing");
  for (std::uint64_t k = 1; k < m.norms_per_layer; ++k)
    add_rms_norm(out, k == 1 ? "post_attention_layernorm" : "extra norm (Gemma pre/post-FFN)", t, d, m, s,
                 ab);

  // MLP: a dense SwiGLU on t tokens, or routed experts on t·k token copies plus the router.
  const bool moe = is_moe(m);
  const std::uint64_t routed = moe ? checked_mul(t, m.num_experts_per_tok) : t;
  const std::uint64_t ff = moe ? m.moe_intermediate_size : m.intermediate_size;
  if (moe) {
    if (keeps_input(s, mn::router))
      out.add("router input", act(t, d, ab), "the norm output, saved by mlp.gate");
    out.add("router softmax", act(t, m.num_experts, fp32_bytes), "routing probabilities in fp32");
    out.add("expert inputs", act(routed, d, ab), "each token copied to its k experts (index_select)");
    out.add("expert outputs", act(routed, d, ab), "saved by the product with the routing weight");
  } else if (keeps_input(s, mn::gate_proj) || keeps_input(s, mn::up_proj) ||
             keeps_input(s, mn::gate_up_proj)) {
    out.add("gate/up_proj input", act(t, d, ab), "the norm output, saved once for gate_proj and up_proj");
  }
  out.add("gate_proj output", act(routed, ff, ab), "saved by the activation function (SiLU / GELU)");
  out.add("act(gate)", act(routed, ff, ab), "saved by the product with up_proj's output");
  out.add("up_proj output", act(routed, ff, ab), "saved by the product with act(gate)");
  if (keeps_input(s, mn::down_proj)) out.add("down_proj input", act(routed, ff, ab), "the gate·up product");
  if (m.shared_expert_intermediate_size != 0) {
    const std::uint64_t sf = m.shared_expert_intermediate_size;
    out.add("shared expert SwiGLU", act(t, 4 * sf, ab),
            "gate, act(gate), up and the product of the shared expert");
  }

  // LoRA: lora_B saves lora_A's output (t × r) for every adapted module.
  std::uint64_t adapter_rows = 0;
  auto has = [&](mn mod) {  // which projections this architecture has (Phi-3 fuses some)
    if (mod == mn::q_proj || mod == mn::k_proj || mod == mn::v_proj) return !m.fused_qkv;
    if (mod == mn::qkv_proj) return m.fused_qkv;
    if (mod == mn::gate_proj || mod == mn::up_proj) return !m.fused_gate_up;
    if (mod == mn::gate_up_proj) return m.fused_gate_up;
    return true;
  };
  for (mn mod : {mn::q_proj, mn::k_proj, mn::v_proj, mn::o_proj, mn::qkv_proj})
    if (adapted(s, mod) && has(mod)) adapter_rows = checked_add(adapter_rows, t, "adapter rows");
  for (mn mod : {mn::gate_proj, mn::up_proj, mn::down_proj, mn::gate_up_proj})
    if (adapted(s, mod) && has(mod)) adapter_rows = checked_add(adapter_rows, routed, "adapter rows");
  if (moe && adapted(s, mn::router)) adapter_rows = checked_add(adapter_rows, t, "adapter rows");
  if (adapter_rows != 0)
    out.add("LoRA A outputs", act(adapter_rows, s.lora.rank, ab),
            "r values per token per adapter, saved by lora_B");
}

/// Tensors saved once per forward, outside the blocks, into `out`.
template <class Out>
constexpr void model_level_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                                 Out& out) {
  const std::uint64_t ab = activation_bytes(s.precision);
  const std::uint64_t t = checked_mul(c.batch, c.seq_len, "tokens");
  out.add("RoPE cos/sin", act(t, 2 * m.head_dim, ab), "position tables shared by every layer's RoPE");
  add_rms_norm(out, "final norm", t, m.hidden_size, m, s, ab);
  if (keeps_input(s, module_name::lm_head))
    out.add("lm_head input", act(t, m.hidden_size, ab), "saved for the head weight's gradient");
  if (c.attention == attention_impl::eager)
    out.add("causal mask", act(c.batch, c.seq_len, c.seq_len) * ab, "(b, 1, s, s) additive mask, built once");
}

/// The course's per-layer formula (Korthikanti et al. 2022): s·b·h·(34 + 5·a·s/h) bytes for 16-bit
/// activations; FlashAttention / memory-efficient SDPA removes the 5·a·s/h term.
template <class Out>
constexpr void korthikanti_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                                 Out& out) {
  const std::uint64_t sbh = mul3(c.seq_len, c.batch, m.hidden_size);
  const std::uint64_t scale = activation_bytes(s.precision);  // formula is for 2-byte values
  out.add("34·sbh", bytes(checked_mul(checked_mul(17, sbh, "activation size"), scale)),  // 34/2 per byte
          "QKV, attention output, MLP and norm inputs plus dropout masks (Korthikanti et al. 2022)");
  if (c.attention == attention_impl::eager)  // 5·a·s²·b = sbh · 5as/h
    out.add("5·a·s²·b",
            bytes(checked_mul(mul3(5, m.num_attention_heads, c.seq_len),
                              checked_mul(c.seq_len, c.batch) * scale / 2)),
            "attention scores, softmax and its dropout mask; removed by FlashAttention");
}

/// One block's saved tensors under the configured formula.
template <class Out>
constexpr void block_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                           Out& out) {
  if (c.formula == activation_formula::korthikanti)
    korthikanti_terms(m, s, c, out);
  else
    layer_terms(m, s, c, out);
}
constexpr void validate_workload(const activation_config& c) {
  if (c.batch == 0) fail("batch", "must be a positive integer");
  if (c.seq_len == 0) fail("seq_len", "must be a positive integer");
  if (c.batch > max_workload_batch) fail("batch", "is absurdly large");
  if (c.seq_len > max_workload_seq_len) fail("seq_len", "is absurdly large");
}
/// The checks every public activation and logits function makes before listing anything.
constexpr void validate_inputs(const model_shape& m, const activation_config& c) {
  validate(m);
  validate_workload(c);
}
/// An itemised list filled by one of the *_terms functions above, after the input checks.
template <class Fill>
constexpr activation_terms checked_terms(const model_shape& m, const activation_config& c, Fill&& fill) {
  validate_inputs(m, c);
  activation_terms out;
  fill(out);
  return out;
}
}  // namespace detail

/// Per-tensor inventory of one decoder block without recomputation (docs/activations.md).
[[nodiscard]] constexpr activation_terms layer_inventory(const model_shape& m, const training_setup& s,
                                                         const activation_config& c) {
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::layer_terms(m, s, c, out); });
}
/// Tensors saved once per forward, outside the blocks (detailed formula only).
[[nodiscard]] constexpr activation_terms model_level_inventory(const model_shape& m, const training_setup& s,
                                                               const activation_config& c) {
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::model_level_terms(m, s, c, out); });
}
/// The course's formula as terms: 34·sbh, plus 5·a·s²·b without a fused attention kernel.
[[nodiscard]] constexpr activation_terms korthikanti_layer(const model_shape& m, const training_setup& s,
                                                           const activation_config& c) {
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::korthikanti_terms(m, s, c, out); });
}

/// The terms behind an activation_estimate (for --explain and the JSON report).
struct activation_breakdown {
  activation_terms layer;        ///< one block, under the configured formula
  activation_terms model_level;  ///< once per model (empty for the Korthikanti formula)
};
[[nodiscard]] constexpr activation_breakdown activation_inventory(const model_shape& m,
                                                                  const training_setup& s,
                                                                  const activation_config& c) {
  detail::validate_inputs(m, c);
  activation_breakdown out;
  detail::block_terms(m, s, c, out.layer);
  if (c.formula == activation_formula::detailed) detail::model_level_terms(m, s, c, out.model_level);
  return out;
}

/// sbh-sized checkpoint of one block's input (hidden states), in bytes.
[[nodiscard]] constexpr bytes block_input_bytes(const model_shape& m, const training_setup& s,
                                                const activation_config& c) {
  return detail::act(detail::checked_mul(c.batch, c.seq_len, "tokens"), m.hidden_size,
                     detail::activation_bytes(s.precision));
}

namespace detail {
/// estimate_activations for a shape already validated (the step estimate validates it once).
constexpr activation_estimate activations_of_valid_shape(const model_shape& m, const training_setup& s,
                                                         const activation_config& c) {
  validate_workload(c);
  activation_estimate e;
  const bool korthikanti = c.formula == activation_formula::korthikanti;
  bytes_sum layer, model_level;
  block_terms(m, s, c, layer);
  if (!korthikanti) model_level_terms(m, s, c, model_level);
  e.layer = layer.total();
  e.model_level = model_level.total();
  const bytes block = e.layer;
  const bytes input = block_input_bytes(m, s, c);
  const std::uint64_t L = m.num_hidden_layers;
  bytes kept_per_layer{0}, host_per_layer{0};
  switch (c.ckpt) {
    case checkpointing::none:
      kept_per_layer = block;
      break;
    case checkpointing::full:  // 2·sbh per layer + one block's internals during recompute
      kept_per_layer = input;
      e.recompute = block;
      break;
    case checkpointing::selective: {  // TRL: the block input and the attention output stay
      const std::uint64_t t = checked_mul(c.batch, c.seq_len);
      const bytes attn_out = korthikanti ? input
                                         : act(t, query_width(m), activation_bytes(s.precision)) +
                                               act(t, m.num_attention_heads, fp32_bytes);
      kept_per_layer = input + attn_out;
      e.recompute = block;
      break;
    }
    case checkpointing::offload:  // the block in flight stays; the rest waits in host RAM
      e.recompute = block;
      host_per_layer = block;
      break;
    case checkpointing::offload_checkpointed:  // one block input on the GPU, the others in host RAM
      e.recompute = block + input;
      host_per_layer = input;
      break;
  }
  e.per_layer_kept = kept_per_layer;
  e.gpu = kept_per_layer * L + e.model_level + e.recompute;
  e.host = host_per_layer * L;
  return e;
}
}  // namespace detail

/// Activations under the chosen formula and checkpointing mode.
[[nodiscard]] constexpr activation_estimate estimate_activations(const model_shape& m,
                                                                 const training_setup& s,
                                                                 const activation_config& c) {
  validate(m);
  return detail::activations_of_valid_shape(m, s, c);
}

/// W19: with backward ≈ 2× forward a step costs 3F; full recomputation adds one forward (4F).
[[nodiscard]] constexpr std::uint64_t forward_passes_per_step(checkpointing c) {
  const bool recomputes =
      c == checkpointing::full || c == checkpointing::selective || c == checkpointing::offload_checkpointed;
  return recomputes ? 4 : 3;
}

}  // namespace headroom
