// SPDX-License-Identifier: MIT
// What one nn.Linear keeps for backward, with the PEFT adapter wrapped around it (LoRA, DoRA, LoRA-FA,
// IA3, VeRA), eager or compiled; and DoRA's weight-norm transient (docs/activations.md).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "config.hpp"

namespace headroom {
namespace detail {
/// One nn.Linear (in → out) that reads `rows` rows. `saves_shared` becomes true when the input tensor
/// itself is saved (its size is added once per group of linears reading the same tensor).
struct linear_site {
  module_name module;
  std::uint64_t out;
  std::uint64_t copies = 1;  ///< modules of this shape reading the input (MoE: experts, priced as one)
};
/// PEFT DoRA (tuners/lora/dora.py DoraLinearLayer.forward, variants.py DoraLinearVariant.forward): the
/// result is (m/‖W + s·BA‖ − 1)·base + m/‖W + s·BA‖·lora_B(lora_A(x))·s with the norm detached, so the two
/// products keep the base output, lora_B's output and three out-sized vectors. With lora_dropout the base
/// output is recomputed as F.linear(dropped x, W cast to x's dtype), which keeps that cast weight.
template <class Out>
HEADROOM_INLINE constexpr void add_dora(Out& out, const block_context& k, const linear_site& site,
                                        std::uint64_t rows, std::uint64_t in) {
  const std::string_view mod = module_label(site.module);
  const std::uint64_t a = k.dt.adapter;  // x is cast to the adapter dtype before the variant runs
  const bool dropout = k.s.lora.dropout > 0;
  out.add(mod, act(rows, site.out, a), "DoRA: lora_B's output, saved by the magnitude product");
  out.add(mod, act(rows, site.out, dropout ? a : k.dt.stream),
          "DoRA: the base output, saved by (m/norm - 1)·");
  if (dropout && k.input_grad && a != k.dt.stream)
    out.add(mod, act(site.out, in, a * site.copies),
            "DoRA: the base weight cast to x's dtype, saved by F.linear");
  const std::uint64_t vectors = k.input_grad ? 3 : 2;  // ‖·‖ for m's gradient, m/‖·‖, and m/‖·‖ − 1
  out.add(mod, act(vectors * site.out, site.copies, a), "DoRA: the weight norm, m/norm and m/norm - 1");
}

/// PEFT IA3 (tuners/ia3/layer.py Linear.forward): ia3_scaling = 1 · ia3_l.flatten(); a feedforward module
/// computes base(x.to(adapter dtype) · scaling), any other base(x) · scaling. The product keeps the scaled
/// tensor for the vector's gradient and the vector for the other operand's.
template <class Out>
HEADROOM_INLINE constexpr void add_ia3(Out& out, const block_context& k, const linear_site& site,
                                       std::uint64_t rows, std::uint64_t in) {
  const std::string_view mod = module_label(site.module);
  const std::uint64_t a = k.dt.adapter;
  const bool feedforward = k.s.lora.feedforward.contains(site.module);
  const std::uint64_t width = feedforward ? in : site.out;
  if (feedforward) {
    if (!k.c.compiled)  // compiled: recomputed from the SwiGLU's saved gate and up outputs
      out.add(mod, act(rows, in, a), "IA3: the input in the adapter dtype, saved for the vector's gradient");
  } else {
    out.add(mod, act(rows, site.out, k.dt.compute), "IA3: the base output, saved for the vector's gradient");
  }
  if (k.input_grad)
    out.add(mod, act(width, site.copies, a),
            "IA3: ia3_scaling (1 · the vector), saved for the other operand");
  if (k.scalar != 0 && !k.c.compiled)
    out.add(mod, bytes(k.scalar * site.copies), "IA3: the Python int 1 that starts ia3_scaling, saved by it");
}

/// PEFT VeRA (tuners/vera/layer.py Linear.forward): lambda_b · F.linear(lambda_d · F.linear(dropout(x),
/// vera_A[:, :in]), vera_B[:out]) with x cast to the vectors' dtype. The projections are frozen, so the
/// linears keep no input; each vector product keeps the other operand (r and out values a row). Under
/// autocast the linears run in bf16 and keep the projections' bf16 casts for the gradient they pass on.
template <class Out>
HEADROOM_INLINE constexpr void add_vera(Out& out, const block_context& k, const linear_site& site,
                                        std::uint64_t rows, std::uint64_t in) {
  const std::string_view mod = module_label(site.module);
  const std::uint64_t r = k.s.lora.rank;
  const std::uint64_t product = k.dt.autocast ? bf16_bytes : k.dt.adapter;
  if (k.s.lora.dropout > 0 && k.input_grad)
    out.add(mod, act(rows, in, k.c.compiled ? 1 : mask_bytes(k, k.dt.adapter)), "VeRA: vera_dropout's mask");
  if (k.dt.autocast && !k.c.compiled) {  // compiled: casts of frozen tensors are recomputed
    if (k.input_grad) out.add(mod, act(r, in, bf16_bytes), "VeRA: vera_A's slice cast to bf16");
    out.add(mod, act(site.out, r, bf16_bytes), "VeRA: vera_B's slice cast to bf16");
  }
  out.add(mod, act(rows, r, product), "VeRA: x·vera_Aᵀ, saved for lambda_d's gradient");
  out.add(mod, act(rows, site.out, product), "VeRA: (lambda_d·…)·vera_Bᵀ, saved for lambda_b's gradient");
}

/// A LoRA-adapted linear under torch.compile: lora_A's output (a matmul output) stays, its input casts and
/// dropout products are recomputed, and a dropout mask (a random op, never recomputed) is kept as bool.
template <class Out>
HEADROOM_INLINE constexpr void add_compiled_lora(Out& out, const block_context& k, const linear_site& site,
                                                 std::uint64_t rows, std::uint64_t in) {
  const std::string_view mod = module_label(site.module);
  if (k.s.lora.dropout > 0 && k.input_grad)
    out.add(mod, act(rows, in, 1), "compiled: lora_dropout's bool mask (random ops are not recomputed)");
  out.add(mod, act(rows, k.s.lora.rank, k.dt.autocast ? bf16_bytes : k.dt.adapter),
          "compiled: lora_A's output, a matmul output kept for lora_B");
}

template <class Out>
HEADROOM_INLINE constexpr void add_linear(Out& out, const block_context& k, const linear_site& site,
                                          std::uint64_t rows, std::uint64_t in, std::uint64_t in_bytes,
                                          bool& saves_shared) {
  const std::string_view mod = module_label(site.module);
  // Compiled, the base layer keeps nothing: inputs and weight casts are recomputed from what the norms and
  // matmuls saved.
  if (!k.c.compiled && k.dt.autocast) {
    const std::uint64_t weight = checked_mul(checked_mul(in, site.out), site.copies, "weight copies");
    // autocast casts the fp32 weight for every call (cached when it is a trainable leaf) and an fp32
    // input too; the matmul keeps the 16-bit weight for the input's gradient, the input for the weight's.
    if (k.input_grad)
      out.add(mod, bytes(checked_mul(weight, bf16_bytes)),
              "the weight cast to bf16, saved for the input gradient");
    if (k.full) {
      if (in_bytes == bf16_bytes)
        saves_shared = true;
      else
        out.add(mod, act(rows, in, bf16_bytes), "the input cast to bf16, saved for the weight gradient");
    }
  } else if (!k.c.compiled && k.full) {
    saves_shared = true;  // mm saves its input when the weight needs a gradient
  }
  if (!k.adapted(site.module)) return;
  if (k.s.lora.method == peft_method::ia3) return add_ia3(out, k, site, rows, in);
  if (k.s.lora.method == peft_method::vera) return add_vera(out, k, site, rows, in);
  if (k.c.compiled) return add_compiled_lora(out, k, site, rows, in);
  // PEFT lora.Linear: x cast to the adapter dtype, dropout, lora_A, lora_B, · scaling, added.
  const std::uint64_t r = k.s.lora.rank;
  const std::uint64_t x_bytes = k.dt.adapter;  // after _cast_input_dtype
  const bool dropout = k.s.lora.dropout > 0;
  if (dropout) {
    if (k.input_grad) out.add(mod, act(rows, in, mask_bytes(k, x_bytes)), "lora_dropout's mask");
    if (!k.s.lora.freeze_a)
      out.add(mod, act(rows, in, k.dt.autocast ? bf16_bytes : x_bytes), "the dropped input, saved by lora_A");
  } else if (k.s.lora.freeze_a) {
    // LoRA-FA: lora_A is frozen, so nothing keeps its input for a weight gradient.
  } else if (x_bytes == in_bytes && !(k.dt.autocast && in_bytes != bf16_bytes)) {
    saves_shared = true;  // lora_A reads the very tensor the base layer read
  } else {
    out.add(mod, act(rows, in, k.dt.autocast ? bf16_bytes : x_bytes),
            k.dt.autocast ? "the input cast to bf16 for lora_A"
                          : "the input cast to the adapter dtype, saved by lora_A");
  }
  if (k.dt.autocast && k.dt.adapter == fp32_bytes)  // lora_A's cast is saved only for an input gradient
    out.add(mod,
            bytes(checked_mul(checked_mul(r, (k.input_grad ? in : 0) + site.out), bf16_bytes * site.copies)),
            "lora_A and lora_B weights cast to bf16");
  out.add(mod, act(rows, r, k.dt.autocast ? bf16_bytes : k.dt.adapter), "lora_A's output, saved by lora_B");
  if (k.scalar != 0)
    out.add(mod, bytes(k.scalar * site.copies), "the Python float `scaling`, saved by the product");
  if (k.s.lora.use_dora) add_dora(out, k, site, rows, in);
}
/// Linears reading one input tensor; the input is counted once if any of them keeps it.
/// `counted` marks an input another tensor already accounts for (FlashAttention's saved output is the
/// very storage o_proj reads).
template <class Out, std::size_t N>
HEADROOM_INLINE constexpr void add_linear_group(Out& out, const block_context& k, std::string_view input_name,
                                                std::uint64_t rows, std::uint64_t in, std::uint64_t in_bytes,
                                                const std::array<linear_site, N>& sites,
                                                bool counted = false) {
  bool shared = false;
  for (const linear_site& site : sites) add_linear(out, k, site, rows, in, in_bytes, shared);
  if (shared && !counted)
    out.add(input_name, act(rows, in, in_bytes), "the shared input, saved once for the linears above");
}

/// DoRA's weight-norm temporaries in one adapted module's forward (dora.py get_lora_weight and
/// get_weight_norm), freed when the module returns: eye(in) and lora_A of it (saved into a graph that dies),
/// lora_weight = lora_B(lora_A(eye)).T, the base weight cast to x's dtype (when it differs), s·lora_weight
/// and the sum whose row norms are taken — all in the adapter dtype a.
constexpr std::uint64_t dora_transient(std::uint64_t in, std::uint64_t out, std::uint64_t r, std::uint64_t a,
                                       bool cast) {
  const std::uint64_t matrix = checked_mul(checked_mul(in, out, "DoRA transient"), a, "DoRA transient");
  return checked_mul(checked_mul(in, in, "DoRA transient"), a, "DoRA transient") + in * r * a +
         matrix * (cast ? 4 : 3);
}
/// The largest DoRA transient over the adapted linear weights of a block.
constexpr bytes dora_module_transient(const model_shape& m, const training_setup& s) {
  if (!s.lora.use_dora || s.method == training_method::full) return bytes(0);
  const std::uint64_t a = adapter_bytes(s);
  const bool cast = weight_bytes(s.precision) != a;
  std::uint64_t worst = 0;
  visit_parameters(m, [&](const param_tensor& t) {
    if (!adapts(s.lora, t)) return;
    const std::uint64_t v = dora_transient(t.cols, t.rows, s.lora.rank, a, cast);
    worst = v > worst ? v : worst;
  });
  return bytes(worst);
}
}  // namespace detail
}  // namespace headroom
