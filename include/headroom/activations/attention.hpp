// SPDX-License-Identifier: MIT
// What the attention core keeps between the projections and o_proj, per kernel (FlashAttention, SDPA,
// SDPA's math path, eager), with prefix tuning's extra keys (docs/activations.md).
#pragma once

#include <cstdint>

#include "config.hpp"

namespace headroom {
namespace detail {
/// The memory-efficient SDPA kernel reads its bias in rows padded to 16 keys (PyTorch
/// aten/src/ATen/native/transformers/attention.cpp, preprocess_mask / pad_bias).
inline constexpr std::uint64_t sdpa_bias_alignment = 16;
/// MLA's second projections: q_b_proj reads q_a_layernorm's output and kv_b_proj kv_a_layernorm's; each
/// input requires grad when the first projection's output does or the norm's weight trains.
struct mla_second_projections {
  block_context q_b, kv_b;
};
constexpr mla_second_projections mla_contexts(const block_context& k) {
  mla_second_projections out{k, k};
  out.q_b.input_grad = k.output_grad(module_name::q_a_proj) || k.norm_weights_train();
  out.kv_b.input_grad = k.output_grad(module_name::kv_a_proj_with_mqa) || k.norm_weights_train();
  return out;
}
/// Which of q, k and v require grad: all of them in a middle layer; in a first layer over frozen embeddings
/// only what an adapted projection (or prefix tuning's keys and values) makes so. MLA's q comes out of
/// q_b_proj (or q_proj), its keys out of kv_b_proj and, for the RoPE part, kv_a_proj_with_mqa, its values out
/// of kv_b_proj; a trainable norm between two projections makes the second's output require grad.
struct qkv_grads {
  bool q, k, v;
};
constexpr qkv_grads attention_input_grads(const block_context& k) {
  using mn = module_name;
  if (!is_mla(k.m)) {
    const bool prefix = k.prefix_keys() != 0;
    return {k.output_grad(mn::q_proj), prefix || k.output_grad(mn::k_proj),
            prefix || k.output_grad(mn::v_proj)};
  }
  const mla_second_projections second = mla_contexts(k);
  const bool v = second.kv_b.output_grad(mn::kv_b_proj);
  return {k.m.q_lora_rank != 0 ? second.q_b.output_grad(mn::q_b_proj) : k.output_grad(mn::q_proj),
          v || k.output_grad(mn::kv_a_proj_with_mqa), v};
}

/// What every attention kernel's inventory is built from: the widths, the keys (prefix tuning's P before the
/// s of each layer), which of q, k, v require grad.
struct attention_core_shape {
  std::uint64_t t;               ///< query rows, b·s
  std::uint64_t q, kv;           ///< q and k/v widths (GQA)
  std::uint64_t prefix;          ///< prefix tuning's P keys per layer
  std::uint64_t keys;            ///< s + P
  std::uint64_t key_rows;        ///< b·(s + P)
  std::uint64_t vw;              ///< the values' width (MLA: a·v_head_dim)
  std::uint64_t v_storage;       ///< the storage a value view keeps (MLA: kv_b_proj's whole output)
  std::uint64_t query_bytes;     ///< the dtype RoPE leaves q in (promoted to the tables' under autocast)
  bool dropout;                  ///< the run's flag or the config's attention_dropout
  bool qg, kg, vg, scores_grad;  ///< q, k, v require grad; the scores do (q or k)
};
HEADROOM_INLINE constexpr attention_core_shape attention_core_shape_of(const block_context& k,
                                                                       std::uint64_t t) {
  const model_shape& m = k.m;
  const activation_config& c = k.c;
  const std::uint64_t prefix = k.prefix_keys();
  const std::uint64_t keys = c.seq_len + prefix;  // validated sizes: no overflow
  // Which of q, k, v require grad (all of them but in a first layer over frozen embeddings, where only
  // the adapted projections do, and the prefix's keys and values); a product saves each operand only for
  // the other's gradient.
  const qkv_grads grads = attention_input_grads(k);
  return {t,
          query_width(m),
          kv_width(m),
          prefix,
          keys,
          checked_mul(c.batch, keys, "tokens"),
          attention_output_width(m),
          is_mla(m) ? kv_b_width(m) : query_width(m),
          k.dt.compute > k.dt.stream ? k.dt.compute : k.dt.stream,
          c.attention_dropout || m.attention_dropout,
          grads.q,
          grads.k,
          grads.v,
          grads.q || grads.k};
}
/// b·a·s·(s + P) scores, for the kernels that materialise them.
constexpr bytes score_bytes(const block_context& k, const attention_core_shape& x) {
  return act(k.c.batch, checked_mul(k.m.num_attention_heads, k.c.seq_len), x.keys);
}

/// FlashAttention: q, k, v at their GQA widths, the output and the log-sum-exp.
template <class Out>
HEADROOM_INLINE constexpr void add_flash_core(Out& out, const block_context& k,
                                              const attention_core_shape& x) {
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute;
  auto lse = [&] { return act(x.t, m.num_attention_heads, fp32_bytes); };
  if (!x.qg && !x.kg && !x.vg) return;  // no input requires grad: autograd records no node, keeps nothing
  if (x.prefix == 0) {
    out.add("flash-attn q, k, v", act(x.t, x.q + 2 * x.kv, ab),
            "kernel inputs at their GQA widths (MLA: v padded to the q/k head width), for backward");
  } else {
    out.add("flash-attn q", act(x.t, x.q, ab), "the kernel's query input, for backward");
    out.add("flash-attn k, v", act(x.key_rows, 2 * x.kv, ab),
            "s + P keys and values at GQA width, for backward");
  }
  out.add("flash-attn output", act(x.t, x.q, ab),
          is_mla(m) ? "saved by the kernel, at the padded width; o_proj reads a sliced copy"
                    : "saved by the kernel; o_proj reads the same storage");
  out.add("flash-attn log-sum-exp", lse(), "fp32 softmax statistics per head and token");
}

/// SDPA's memory-efficient kernel: K and V expanded by repeat_kv, the output and the log-sum-exp.
template <class Out>
HEADROOM_INLINE constexpr void add_sdpa_core(Out& out, const block_context& k,
                                             const attention_core_shape& x) {
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute;
  auto lse = [&] { return act(x.t, m.num_attention_heads, fp32_bytes); };
  if (!x.qg && !x.kg && !x.vg) return;  // no input requires grad: autograd records no node, keeps nothing
  if (is_mla(m)) {
    out.add("sdpa q, k, v", act(x.t, 2 * x.q + x.v_storage, ab),
            "q and k (concatenated), and v: a view of kv_b_proj's output, whose whole storage it keeps");
  } else if (x.prefix == 0 && fused_qkv(m) && x.kv == x.q) {
    // repeat_kv returns V itself when no head is grouped, and a saved view keeps its whole storage
    out.add("sdpa q, k", act(x.t, 2 * x.q, ab), "the kernel's query and key inputs, for backward");
    out.add("sdpa v", act(x.t, x.q + 2 * x.kv, ab),
            "a view of the fused q/k/v projection's output, whose whole storage the kernel keeps");
  } else if (x.prefix == 0) {
    out.add("sdpa q, k, v", act(x.t, 3 * x.q, ab), "repeat_kv expands K and V to all heads before SDPA");
  } else {
    out.add("sdpa q", act(x.t, x.q, ab), "the kernel's query input, for backward");
    out.add("sdpa k, v", act(x.key_rows, 2 * x.q, ab),
            "s + P keys and values, expanded to all heads by repeat_kv");
    // transformers' sdpa_mask cannot skip the mask when the key length is not s; the CPU flash kernel keeps
    // the model's own mask instead, one tensor for every layer (model_level_terms; measured on 2.6)
    if (k.s.runtime.device != device_kind::cpu)
      out.add("sdpa attention bias",
              act(x.t, ceil_div(x.keys, sdpa_bias_alignment) * sdpa_bias_alignment, ab),
              "the (b, 1, s, s + P) mask as the memory-efficient kernel's float bias, padded to 16 keys "
              "(flash takes no mask)");
  }
  out.add("sdpa output", act(x.t, x.vw, ab), "saved by the kernel for its backward");
  out.add("sdpa log-sum-exp", lse(), "fp32 softmax statistics per head and token");
}

/// aten _scaled_dot_product_attention_math: q·scale and kᵀ·scale are new tensors, softmax runs in the input
/// dtype and its output is both saved and multiplied by v. torch 2.x first upcasts 16-bit q, k and v to fp32
/// and casts only the output back (measured on 2.6, validation/torch/measurements-torch2.6.csv).
template <class Out>
HEADROOM_INLINE constexpr void add_sdpa_math_core(Out& out, const block_context& k,
                                                  const attention_core_shape& x) {
  const bool upcast = k.s.runtime.torch != torch_generation::v1_13 && k.dt.compute < fp32_bytes;
  const std::uint64_t ab = upcast ? fp32_bytes : k.dt.compute;
  const bytes scores = score_bytes(k, x);
  out.add("sdpa-math q, k", act(x.t, x.kg ? x.q : 0, ab) + act(x.key_rows, x.qg ? x.q : 0, ab),
          upcast ? "q·scale and kᵀ·scale in fp32 (torch 2 upcasts), saved by their matmul"
                 : "q·scale and kᵀ·scale, saved by their matmul");
  if (x.scores_grad || x.vg)
    out.add("sdpa-math probabilities", scores * ab,
            upcast ? "softmax output in fp32 (torch 2 upcasts), saved by softmax and ·v"
                   : "softmax output in the input dtype, saved by softmax and ·v");
  if (x.dropout) {
    if (x.scores_grad) out.add("sdpa-math dropout mask", scores * mask_bytes(k, ab), "the dropout mask");
    if (x.vg) out.add("sdpa-math dropped probabilities", scores * ab, "dropout's output, saved by ·v");
  }
  if (x.scores_grad)
    out.add("sdpa-math v", act(x.key_rows, x.vw, ab),
            upcast ? "saved by probs·v, in fp32, expanded to all heads (repeat_kv or enable_gqa)"
                   : "saved by probs·v; repeat_kv expands V to all heads");
}

/// The kernel `sdpa` runs. On a CUDA GPU the fused kernels (add_sdpa_core). On a CPU torch 1.13 has only the
/// math path; torch 2.x's CPU flash kernel saves what the fused kernels do (q, k, v, the output, the fp32
/// log-sum-exp) but falls back to the math path for transformers' enable_gqa (grouped heads and no mask,
/// torch >= 2.5), for unequal q/k and v head widths (MLA) and for dropout (measured on 2.6,
/// validation/torch/measurements-torch2.6.csv).
constexpr attention_impl sdpa_kernel(const block_context& k) {
  if (k.s.runtime.device != device_kind::cpu) return attention_impl::sdpa;
  if (k.s.runtime.torch == torch_generation::v1_13) return attention_impl::sdpa_math;
  const bool masked = k.prefix_keys() != 0;  // transformers' use_gqa_in_sdpa
  const bool enable_gqa = !masked && k.m.num_attention_heads != k.m.num_key_value_heads;
  const bool unequal_heads = attention_output_width(k.m) != query_width(k.m);
  const bool dropout = k.c.attention_dropout || k.m.attention_dropout;
  return enable_gqa || unequal_heads || dropout ? attention_impl::sdpa_math : attention_impl::sdpa;
}
/// The kernel the attention core runs: the configured one, `sdpa` resolved by device and torch.
constexpr attention_impl attention_kernel(const block_context& k) {
  return k.c.attention == attention_impl::sdpa ? sdpa_kernel(k) : k.c.attention;
}
/// Whether o_proj's input is the kernel's own saved output: FlashAttention's (b, s, heads, head_dim) output
/// is already contiguous after transformers' transpose, except MLA's padded one; the CPU flash kernel's
/// follows the query's layout, a transposed view unless partial RoPE's torch.cat made q contiguous (measured
/// on 2.6).
constexpr bool attention_output_shared(const block_context& k) {
  const bool partial_rope = k.m.rotary_dim != 0 && k.m.rotary_dim != k.m.head_dim;
  const bool cpu_flash =
      k.s.runtime.device == device_kind::cpu && attention_kernel(k) == attention_impl::sdpa;
  return (k.c.attention == attention_impl::flash && !is_mla(k.m)) || (cpu_flash && !partial_rope);
}

/// gpt-oss eager_attention_forward: each row's softmax also covers the head's sink.
template <class Out>
HEADROOM_INLINE constexpr void add_eager_sinks_core(Out& out, const block_context& k,
                                                    const attention_core_shape& x) {
  const model_shape& m = k.m;
  const activation_config& c = k.c;
  const std::uint64_t ab = k.dt.compute;
  const bytes with_sink = act(c.batch, checked_mul(m.num_attention_heads, c.seq_len), x.keys + 1);
  out.add("eager q, k", act(x.t, x.kg ? x.q : 0, ab) + act(x.key_rows, x.qg ? x.q : 0, ab),
          "saved by q·kᵀ; repeat_kv expands K to all heads");
  if (x.scores_grad && k.scalar != 0)
    out.add("eager scaling", bytes(k.scalar), "the Python float `scaling`, saved by the product");
  if (x.scores_grad)  // combined_logits - combined_logits.max(dim=-1).values
    out.add("eager sink max", act(c.batch, checked_mul(m.num_attention_heads, c.seq_len), 8),
            "int64 indices of each row's maximum, saved by max");
  // The logits' dtype: q·kᵀ plus the mask, which is in the stream dtype (fp32 under autocast, promoting)
  out.add("eager softmax output", with_sink * x.query_bytes,
          "softmax over s + 1 columns in the logits' dtype, saved by softmax and (sliced) by ·v");
  if (x.query_bytes != ab && x.vg && !x.dropout)
    out.add("eager probabilities", score_bytes(k, x) * ab,
            "the sliced probabilities cast to the compute dtype by autocast, saved by ·v");
  if (x.dropout && x.scores_grad) {
    out.add("eager dropout mask", score_bytes(k, x) * mask_bytes(k, ab), "the dropout mask");
    if (x.vg) out.add("eager dropped probabilities", score_bytes(k, x) * ab, "dropout's output, saved by ·v");
  }
  if (x.scores_grad)
    out.add("eager v", act(x.key_rows, x.vw, ab), "saved by probs·v; repeat_kv makes it contiguous");
}

/// transformers eager_attention_forward: the scores, their soft-capping, the fp32 softmax and its casts.
template <class Out>
HEADROOM_INLINE constexpr void add_eager_core(Out& out, const block_context& k,
                                              const attention_core_shape& x) {
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute;
  const bytes scores = score_bytes(k, x);
  out.add("eager q, k", act(x.t, x.kg ? x.q : 0, ab) + act(x.key_rows, x.qg ? x.q : 0, ab),
          "saved by q·kᵀ; repeat_kv expands K to all heads");
  if (x.scores_grad) {
    if (k.scalar != 0)
      out.add("eager scaling", bytes(k.scalar), "the Python float `scaling`, saved by the product");
    if (m.attn_logit_softcapping) {
      out.add("eager soft-capping", scores * ab, "tanh(scores / cap), saved by tanh");
      if (k.scalar != 0)
        out.add("eager soft-capping", bytes(2 * k.scalar), "the Python floats of / cap and · cap");
    }
    out.add("eager softmax output", scores * fp32_bytes, "softmax(dtype=float32) saves its output");
  }
  if (x.dropout) {
    if (x.scores_grad)
      out.add("eager dropout mask", scores * mask_bytes(k, x.query_bytes), "the dropout mask");
    if (x.vg)
      out.add("eager dropped probabilities", scores * ab,
              "dropout's output (cast to bf16 under autocast), saved by ·v");
  } else if (ab != fp32_bytes && x.vg) {
    out.add("eager probabilities", scores * ab, "the cast to the compute dtype, saved by probs·v");
  }
  if (x.scores_grad)
    out.add("eager v", act(x.key_rows, x.vw, ab),
            "saved by probs·v; repeat_kv (or matmul's reshape) makes it contiguous");
}

/// The attention core between the projections and o_proj: RoPE, the kernel, its saved tensors. Prefix
/// tuning puts P trainable keys and values before the s of each layer (DynamicCache.update's torch.cat),
/// so the kernel reads s + P keys for s queries, and keys and values require grad even over a frozen input.
template <class Out>
HEADROOM_INLINE constexpr void add_attention_core(Out& out, const block_context& k, std::uint64_t t) {
  const attention_core_shape x = attention_core_shape_of(k, t);
  out.add("RoPE", bytes(0), "q·cos + rotate_half(q)·sin saves only the shared cos/sin tables");
  switch (attention_kernel(k)) {
    case attention_impl::flash:
      return add_flash_core(out, k, x);
    case attention_impl::sdpa:
      return add_sdpa_core(out, k, x);
    case attention_impl::sdpa_math:
      return add_sdpa_math_core(out, k, x);
    case attention_impl::eager:
      if (k.m.attention_sinks) return add_eager_sinks_core(out, k, x);
      return add_eager_core(out, k, x);
  }
}

/// Prefix tuning's cache (peft_model.py get_prompt builds a DynamicCache; each layer's update keeps the
/// concatenated keys and values): alive until the model's forward returns, after the loss, and extra
/// wherever the kernel saved a copy instead (repeat_kv's expansion, a cast, sdpa-math's kᵀ·scale). Keys
/// and values are in the dtype RoPE and v_proj leave them, promoted with the prefix's (the base model's).
constexpr bytes prefix_cache_bytes(const model_shape& m, const training_setup& s,
                                   const activation_config& c) {
  if (!trains_prefix(s)) return bytes(0);
  const block_dtypes dt = dtypes_of(s);
  const std::uint64_t ab = dt.compute, sb = dt.stream;
  const std::uint64_t cached = ab > sb ? ab : sb;  // RoPE's and v_proj's output promoted with the prefix
  const bool expanded =
      c.attention != attention_impl::flash && m.num_attention_heads != m.num_key_value_heads;
  const bool key_copied = expanded || cached != ab || c.attention == attention_impl::sdpa_math;
  const bool value_copied = expanded || cached != ab;
  const std::uint64_t values = mul3(c.batch, c.seq_len + prefix_positions(s.lora), kv_width(m));
  const std::uint64_t tensor = checked_mul(values, cached, "prefix cache");
  const std::uint64_t per_layer = tensor * ((key_copied ? 1u : 0u) + (value_copied ? 1u : 0u));
  // Over a frozen input the first layer's q needs no gradient, so eager q·kᵀ does not keep its keys.
  const bool first_keys =
      !key_copied && c.attention == attention_impl::eager && !first_layer_input_grad(s, c);
  return bytes(checked_add(checked_mul(per_layer, m.num_hidden_layers, "prefix cache"),
                           first_keys ? tensor : 0, "prefix cache"));
}
}  // namespace detail
}  // namespace headroom
