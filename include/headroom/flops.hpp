// SPDX-License-Identifier: MIT
// FLOPs per trained token under a named convention, model vs hardware FLOPs, and MFU / HFU
// (course section "Tokens per second and MFU", W33–W35).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "activations/estimate.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "units.hpp"

namespace headroom {

enum class flops_convention : std::uint8_t {
  six_n,     ///< 6·N per token: the course's MFU formula (default)
  palm,      ///< 6·N + 12·L·(a·head_dim)·s: PaLM's attention correction for long context
  megatron,  ///< per-GEMM count, causal mask halving attention (Megatron-LM num_floating_point_operations)
};
inline constexpr std::array<named<flops_convention>, 3> flops_convention_names{
    {{"6n", flops_convention::six_n},
     {"palm", flops_convention::palm},
     {"megatron", flops_convention::megatron}}};

/// One matmul kind of a decoder layer, per token: in_features × out_features MACs, applied to
/// `rows_per_token` rows (MoE experts: k of E; dense: 1).
struct gemm_shape {
  module_name module = module_name::q_proj;
  std::uint64_t in = 0;
  std::uint64_t out = 0;
  std::uint64_t rows_num = 1;  ///< rows per token = rows_num / rows_den (MoE: k / 1 over all experts)
  std::uint64_t rows_den = 1;
  std::uint64_t weight_copies = 1;  ///< weight matrices read per layer (MoE: E)
  bool trainable = false;           ///< needs a weight gradient
  bool quantised = false;           ///< QLoRA: dequantised before every use
  bool adapter = false;             ///< a LoRA A or B matrix
};

/// A fixed-capacity list of a layer's matmuls (constexpr in C++17).
struct gemm_list {
  std::array<gemm_shape, 40> items{};
  std::size_t size = 0;
  constexpr void add(gemm_shape g) {
    if (size == items.size()) detail::fail("gemm_list", "capacity exceeded");
    items[size++] = g;
  }
  [[nodiscard]] constexpr const gemm_shape* begin() const { return items.data(); }
  [[nodiscard]] constexpr const gemm_shape* end() const { return items.data() + size; }
};

/// The matmuls of one decoder layer, from the parameter inventory (plus LoRA A/B where attached).
/// `m` is one group of uniform layers (layer_groups: DeepSeek's dense first layers are a group of their own).
[[nodiscard]] constexpr gemm_list layer_gemms(const model_shape& m, const training_setup& s) {
  if (!uniform_layers(m)) detail::fail("layer_gemms", "takes one group of uniform layers (see layer_groups)");
  gemm_list out;
  const bool full = s.method == training_method::full;
  for (const param_tensor& t : parameter_inventory(m)) {
    if (t.role != tensor_role::linear_weight || t.module == module_name::lm_head) continue;
    gemm_shape g;
    g.module = t.module;
    g.in = t.cols;
    g.out = t.rows;
    const bool expert = t.routed_expert;
    // Llama4TextMoe runs every expert on every token (a zero weight where not routed); others k of E
    g.rows_num = expert ? experts_run_per_token(m) : 1;
    g.weight_copies = expert ? m.num_experts : 1;
    g.trainable = full;
    g.quantised = s.method == training_method::qlora && t.nn_linear;  // bitsandbytes replaces nn.Linear only
    out.add(g);
    // lora_A: in → r, lora_B: r → out, on the rows the base weight multiplies (torchtune: per expert)
    if (!full && (t.nn_linear || t.lora_per_expert) && s.lora.targets.contains(t.module)) {
      out.add({t.module, t.cols, s.lora.rank, g.rows_num, 1, g.weight_copies, true, false, true});
      out.add({t.module, s.lora.rank, t.rows, g.rows_num, 1, g.weight_copies, true, false, true});
    }
  }
  return out;
}

/// FLOPs of one training token, split as the conventions need them.
struct token_flops {
  flops model{0};     ///< what MFU credits under the convention
  flops hardware{0};  ///< what the GPU executes, recomputation included (HFU)
  std::string_view convention;
};

namespace detail {
/// Forward MACs per token of a layer's matmuls, and the part that trains.
struct layer_macs {
  double forward = 0;
  double trainable = 0;
};
/// Summed over every layer of the model (each run of uniform layers counted layer by layer).
constexpr layer_macs macs_per_token(const model_shape& m, const training_setup& s) {
  layer_macs r;
  for (const layer_group& run : layer_groups(m))
    for (const gemm_shape& g : layer_gemms(run.shape, s)) {
      const double macs = static_cast<double>(g.in) * static_cast<double>(g.out) *
                          static_cast<double>(g.rows_num) / static_cast<double>(g.rows_den) *
                          static_cast<double>(run.layers);
      r.forward += macs;
      if (g.trainable) r.trainable += macs;
    }
  return r;
}
}  // namespace detail

/// Parameters a token actually multiplies: MoE experts count k of E (Qwen3-30B-A3B: about 3.3B).
[[nodiscard]] constexpr params active_parameter_count(const model_shape& m) {
  params total{0};
  for (const param_tensor& t : parameter_inventory(m))  // an expert tensor: k of its E copies per layer
    total +=
        t.routed_expert ? params(t.numel() * (t.copies / m.num_experts) * m.num_experts_per_tok) : t.total();
  return total;
}

/// FLOPs per trained token. `n` is the parameter count the convention credits (nominal or exact;
/// for MoE the active count). Full fine-tuning: 6N (forward 2N, backward 4N). LoRA/QLoRA: the frozen
/// base still back-propagates activation gradients but computes no weight gradients, ≈ 4N, plus 6
/// per adapter parameter (W34). Recomputation adds a forward to the hardware count only.
[[nodiscard]] constexpr token_flops flops_per_token(const model_shape& m, const training_setup& s, params n,
                                                    std::uint64_t seq_len, flops_convention c,
                                                    checkpointing ckpt) {
  token_flops r;
  r.convention = choice_name(flops_convention_names, c);
  const double L = static_cast<double>(m.num_hidden_layers);
  // q·kᵀ over the q/k head width and probabilities·v over the value width (MLA: 192 and 128 per head)
  const double qv = static_cast<double>(query_width(m) + attention_output_width(m));
  const double sl = static_cast<double>(seq_len);
  const bool full = s.method == training_method::full;
  double adapters = 0;
  if (!full)
    for (const param_tensor& t : adapter_inventory(m, s.lora))
      adapters += static_cast<double>(t.total().count());
  const double N = static_cast<double>(n.count());
  double forward = 0, attention_forward = 0;
  switch (c) {
    case flops_convention::six_n:
    case flops_convention::palm: {
      forward = 2 * (N + adapters);
      r.model = flops(full ? 6 * N : 4 * N + 6 * adapters);
      if (c == flops_convention::palm) {  // QKᵀ and attention·V, no causal discount: 4·q·s fwd per layer
        attention_forward = 2 * L * qv * sl;
        r.model = r.model + flops(3 * attention_forward);
      }
      break;
    }
    case flops_convention::megatron: {
      const detail::layer_macs macs = detail::macs_per_token(m, s);
      const double head = static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
      const double head_trainable = full ? head : 0;
      attention_forward = L * qv * sl;  // 4·q·s, halved by the causal mask
      forward = 2 * (macs.forward + head) + attention_forward;
      // forward 2·MACs; backward 2·MACs for activation gradients + 2·MACs for trainable weights
      r.model = flops(2 * (macs.forward + head) * 2 + 2 * (macs.trainable + head_trainable) +
                      3 * attention_forward);
      break;
    }
  }
  double recompute = 0;
  if (recomputes_blocks(ckpt)) recompute = forward;
  if (ckpt == checkpointing::selective) recompute = forward - attention_forward;  // attention output is kept
  r.hardware = r.model + flops(recompute);
  return r;
}

/// Model FLOPs utilisation from a measured rate: tokens/s · FLOPs/token / peak FLOP/s (W33).
[[nodiscard]] constexpr double utilisation(double tokens_per_second, flops per_token, flops peak) {
  constexpr double largest = std::numeric_limits<double>::max();  // the comparisons refuse NaN and inf too
  if (!(tokens_per_second > 0 && tokens_per_second <= largest))
    detail::fail("tokens_per_second", "must be a finite positive number");
  if (!(peak.count() > 0 && peak.count() <= largest))
    detail::fail("peak FLOP/s", "must be finite and positive");
  if (!(per_token.count() >= 0 && per_token.count() <= largest))
    detail::fail("FLOPs per token", "must be finite and not negative");
  return tokens_per_second * per_token.count() / peak.count();
}

}  // namespace headroom
