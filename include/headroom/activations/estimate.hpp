// SPDX-License-Identifier: MIT
// Activation memory: what autograd keeps between forward and backward. Two models: the course's
// Korthikanti formula, and a per-tensor inventory of a Llama/Qwen/Mistral/Gemma block
// (docs/activations.md lists every term with its reason).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attention.hpp"
#include "config.hpp"
#include "linear.hpp"

namespace headroom {
namespace detail {
/// The SwiGLU (or GELU) of a dense MLP or an expert on `rows` rows: act(gate), act·up, down.
template <class Out>
HEADROOM_INLINE constexpr void add_gated_mlp(Out& out, const block_context& k, std::uint64_t rows,
                                             std::uint64_t ff, std::uint64_t in_bytes, std::uint64_t copies,
                                             bool expert_params = false, bool input_group_done = false) {
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute, d = m.hidden_size;
  using mn = module_name;
  if (input_group_done) {
    // Cohere: gate/up read the norm output q/k/v read; layer_terms listed them with q/k/v
  } else if (expert_params) {  // gpt-oss: x @ gate_up_proj[e] on 3-D parameters (never adapted)
    add_linear_group(out, k, "experts gate_up input", rows, d, in_bytes,
                     std::array<linear_site, 1>{{{mn::experts, 2 * ff, copies}}});
  } else if (m.mlp == mlp_layout::gate_up_proj) {
    add_linear_group(out, k, "gate_up_proj input", rows, d, in_bytes,
                     std::array<linear_site, 1>{{{mn::gate_up_proj, 2 * ff, copies}}});
  } else {
    add_linear_group(out, k, "gate/up_proj input", rows, d, in_bytes,
                     std::array<linear_site, 2>{{{mn::gate_proj, ff, copies}, {mn::up_proj, ff, copies}}});
  }
  // A projection's output is in the compute dtype, except VeRA's under autocast, which returns in its input's
  // dtype (vera/layer.py Linear.forward ends with result.to(previous_dtype)).
  auto out_bytes = [&](module_name mod) {
    return k.dt.autocast && k.s.lora.method == peft_method::vera && k.adapted(mod) ? in_bytes : ab;
  };
  const bool fused = m.mlp == mlp_layout::gate_up_proj;
  const std::uint64_t gate = out_bytes(fused ? mn::gate_up_proj : mn::gate_proj);
  const std::uint64_t up = out_bytes(fused ? mn::gate_up_proj : mn::up_proj);
  // Which outputs require grad: all of them, except in Cohere's parallel MLP over frozen embeddings.
  const bool gate_grad = k.output_grad(fused ? mn::gate_up_proj : mn::gate_proj);
  const bool up_grad = k.output_grad(fused ? mn::gate_up_proj : mn::up_proj);
  if (k.c.compiled) {  // act(gate)·up is recomputed in backward from the two matmul outputs
    out.add("gate_proj output", act(rows, ff, gate), "compiled: a matmul output kept for the fused SwiGLU");
    out.add("up_proj output", act(rows, ff, up), "compiled: a matmul output kept for the fused SwiGLU");
  } else {
    if (gate_grad)
      out.add("gate_proj output", act(rows, ff, gate), "saved by the activation function (SiLU / GELU)");
    if (up_grad) out.add("act(gate)", act(rows, ff, gate), "saved by the product with up_proj's output");
    if (gate_grad) out.add("up_proj output", act(rows, ff, up), "saved by the product with act(gate)");
  }
  block_context down = k;
  down.input_grad = gate_grad || up_grad;
  add_linear_group(out, down, "down_proj input", rows, ff, gate > up ? gate : up,
                   std::array<linear_site, 1>{{{expert_params ? mn::experts : mn::down_proj, d, copies}}});
}

/// Starcoder2MLP on `rows` rows: c_fc, GELU(tanh) (which saves c_fc's output), c_proj reading GELU's output,
/// and in training the residual dropout on c_proj's output.
template <class Out>
HEADROOM_INLINE constexpr void add_plain_mlp(Out& out, const block_context& k, std::uint64_t rows,
                                             std::uint64_t in_bytes) {
  const std::uint64_t d = k.m.hidden_size, ff = k.m.intermediate_size;
  const block_module_names names = block_modules(k.m);
  const bool neox = k.m.mlp == mlp_layout::dense_h_to_4h;
  add_linear_group(out, k, neox ? "dense_h_to_4h input" : "c_fc input", rows, d, in_bytes,
                   std::array<linear_site, 1>{{{names.mlp_in, ff}}});
  // VeRA under autocast returns in its input's dtype (vera/layer.py Linear.forward:
  // result.to(previous_dtype)).
  const bool vera_out = k.dt.autocast && k.s.lora.method == peft_method::vera && k.adapted(names.mlp_in);
  const std::uint64_t fc = vera_out ? in_bytes : k.dt.compute;
  // GPT-NeoX's parallel MLP over frozen embeddings: nothing requires grad unless a linear trains.
  block_context after = k;
  after.input_grad = k.output_grad(names.mlp_in);
  if (after.input_grad)
    out.add(neox ? "dense_h_to_4h output" : "c_fc output", act(rows, ff, fc), "saved by GELU");
  add_linear_group(out, after, neox ? "dense_4h_to_h input" : "c_proj input", rows, ff, fc,
                   std::array<linear_site, 1>{{{names.mlp_out, d}}});
  if (k.m.residual_dropout && after.output_grad(names.mlp_out))
    add_dropout(out, neox ? "MLP output dropout" : "c_proj output dropout", rows, d, k.dt.compute, k);
}

/// GptOssExperts in training (a loop over the experts hit) on `rows` routed rows: x @ gate_up_proj[e] + bias
/// (the 3-D parameter's slice), gate and up as strided views of that output, clamped (each clamp keeps its
/// input, so the whole output stays), glu = gate·sigmoid(alpha·gate), (up + 1)·glu, then @ down_proj[e] +
/// bias. `out_bytes` is the dtype of the biased outputs (autocast: fp32, promoted by the fp32 bias).
template <class Out>
HEADROOM_INLINE constexpr void add_gpt_oss_experts(Out& out, const block_context& k, std::uint64_t rows,
                                                   std::uint64_t in_bytes, std::uint64_t out_bytes) {
  const model_shape& m = k.m;
  const std::uint64_t f = m.moe_intermediate_size, d = m.hidden_size, E = m.num_experts;
  const std::uint64_t hit = E < rows ? E : rows;  // at most one loop body per expert, one per routed row
  if (k.dt.autocast) {  // each expert's fp32 slices are cast to bf16 (not leaves: not cached), and its rows
    out.add("experts weight casts", act(E, checked_mul(d, 3 * f), bf16_bytes),
            "gate_up_proj[e] and down_proj[e] cast to bf16, saved for the inputs' gradients");
    if (k.full) {
      out.add("experts gate_up input", act(rows, d, bf16_bytes), "each expert's rows cast to bf16, saved");
      out.add("experts down input", act(rows, f, bf16_bytes), "(up + 1)·glu cast to bf16, saved");
    }
  } else if (k.full) {  // the matmuls keep their inputs for the 3-D parameters' gradients
    out.add("experts gate_up input", act(rows, d, in_bytes), "each expert's rows (an index copy), saved");
    out.add("experts down input", act(rows, f, out_bytes), "(up + 1)·glu, saved by the second matmul");
  }
  out.add("experts gate_up output", act(rows, 2 * f, out_bytes),
          "kept whole by the two clamps, which save their inputs: strided views of it");
  out.add("experts clamped gate", act(rows, f, out_bytes), "saved by gate · sigmoid(alpha · gate)");
  out.add("experts sigmoid", act(rows, f, out_bytes), "sigmoid's output, saved by it and by that product");
  out.add("experts glu", act(rows, f, out_bytes), "saved by the product with up + 1");
  out.add("experts up + 1", act(rows, f, out_bytes), "saved by the product with glu");
  if (k.scalar != 0)
    out.add("experts alpha", bytes(k.scalar * hit), "the Python float alpha, once per expert");
}

/// DeepseekV3Attention's projections up to the attention kernel: q_a_proj and kv_a_proj_with_mqa read the
/// input norm's output; q_a_layernorm and kv_a_layernorm (RMSNorms over q_lora_rank and kv_lora_rank, the
/// latter on a split view) feed q_b_proj and kv_b_proj. The RoPE regrouping, the splits and the two
/// torch.cat calls save nothing; the kernel saves the concatenated q and k (add_attention_core).
template <class Out>
HEADROOM_INLINE constexpr void add_mla_projections(Out& out, const block_context& k, std::uint64_t t,
                                                   std::uint64_t in_bytes) {
  using mn = module_name;
  const model_shape& m = k.m;
  const std::uint64_t d = m.hidden_size, ab = k.dt.compute, sb = k.dt.stream;
  const std::uint64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, kv_a = kvl + m.qk_rope_head_dim;
  const mla_second_projections second = mla_contexts(k);
  if (ql != 0)
    add_linear_group(out, k, "q_a_proj/kv_a_proj_with_mqa input", t, d, in_bytes,
                     std::array<linear_site, 2>{{{mn::q_a_proj, ql}, {mn::kv_a_proj_with_mqa, kv_a}}});
  else
    add_linear_group(
        out, k, "q_proj/kv_a_proj_with_mqa input", t, d, in_bytes,
        std::array<linear_site, 2>{{{mn::q_proj, query_width(m)}, {mn::kv_a_proj_with_mqa, kv_a}}});
  // A norm's output has its weight's dtype (the stream's): w · x.to(input dtype) promotes under autocast.
  if (ql != 0) {
    add_rms_norm(out, "q_a_layernorm", t, ql, ab, k, k.output_grad(mn::q_a_proj));
    add_linear_group(out, second.q_b, "q_b_proj input", t, ql, sb,
                     std::array<linear_site, 1>{{{mn::q_b_proj, query_width(m)}}});
  }
  add_rms_norm(out, "kv_a_layernorm", t, kvl, ab, k, k.output_grad(mn::kv_a_proj_with_mqa), kv_a);
  add_linear_group(out, second.kv_b, "kv_b_proj input", t, kvl, sb,
                   std::array<linear_site, 1>{{{mn::kv_b_proj, kv_b_width(m)}}});
}

/// DeepseekV3MoE on t tokens: DeepseekV3TopkRouter (an nn.Parameter applied in fp32, sigmoid or softmax
/// scores, top-k chosen without grad, gathered, renormalised, scaled), the experts looped with torch.where
/// and index_add_ into an fp32 buffer (the routing weights' dtype), and the shared experts on every token.
template <class Out>
HEADROOM_INLINE constexpr void add_deepseek_moe(Out& out, const block_context& k, std::uint64_t t) {
  const model_shape& m = k.m;
  const std::uint64_t d = m.hidden_size, E = m.num_experts, ab = k.dt.compute, sb = k.dt.stream;
  const std::uint64_t routed = checked_mul(t, m.num_experts_per_tok, "routed rows");
  if (k.dt.autocast) {  // F.linear is an autocast op: x and the weight are cast to bf16 like any linear
    add_linear_group(out, k, "router input", t, d, sb,
                     std::array<linear_site, 1>{{{module_name::router, E}}});
  } else if (sb != fp32_bytes) {  // x.type(float32) and weight.type(float32) are new tensors
    if (k.full) out.add("router input in fp32", act(t, d, fp32_bytes), "x.type(float32), saved by F.linear");
    if (k.input_grad)
      out.add("router weight in fp32", act(E, d, fp32_bytes), "weight.type(float32), saved by F.linear");
  } else if (k.full && m.shared_expert_intermediate_size == 0) {
    out.add("router input", act(t, d, sb), "the fp32 norm output itself, saved by F.linear");
  }  // fp32 with shared experts: the norm output, which their gate/up also keep (counted there)
  // The routing weights' dtype: fp32, or bf16 when autocast ran the router's F.linear in bf16.
  const std::uint64_t rb = k.dt.autocast ? bf16_bytes : fp32_bytes;
  out.add("router scores", act(t, E, rb),
          m.router_sigmoid ? "sigmoid's output, saved by it" : "softmax's output, saved by it");
  out.add("top-k indices", act(routed, 1, 8), "int64 indices, saved by gather");
  if (m.norm_topk_prob) {
    out.add("top-k renormalisation", act(routed, 1, rb), "the weights before the in-place division");
    out.add("top-k renormalisation", act(t, 1, rb), "their sum + 1e-20, saved by the division");
  }
  if (k.scalar != 0)
    out.add("routed scaling", bytes(k.scalar),
            "the Python float routed_scaling_factor, saved by the product");
  out.add("expert token indices", act(routed, 2, 8),
          "torch.where's (token, k-slot) int64 pairs, saved by indexing");
  add_gated_mlp(out, k, routed, m.moe_intermediate_size, sb, E);
  out.add("expert outputs", act(routed, d, ab), "saved by the product with the routing weight");
  out.add("routing weights", act(routed, 1, rb), "each row's routing weight, saved by that product");
  out.add("weighted expert outputs", act(routed, d, rb > ab ? rb : ab),
          "in the routing weights' dtype (promoted), the source of index_add_");
  if (m.shared_expert_intermediate_size != 0)
    add_gated_mlp(out, k, t, m.shared_expert_intermediate_size, sb, 1);
}

/// Llama4TextL2Norm on `rows` rows of `width`: x.float() (a new fp32 tensor from a 16-bit input, the input
/// itself in fp32) is saved by pow(2) and the rsqrt product, rsqrt by both; no weight.
template <class Out>
HEADROOM_INLINE constexpr void add_l2_norm(Out& out, std::string_view name, std::uint64_t rows,
                                           std::uint64_t width, const block_context& k, bool input_grad) {
  if (!input_grad) return;
  out.add(name, act(rows, width, fp32_bytes), "the fp32 input, saved by pow(2) and the rsqrt product");
  if (k.s.runtime.torch == torch_generation::v1_13)
    out.add(name, act(rows, width, fp32_bytes), "x², saved by mean() (torch 1.13; 2.x keeps only its size)");
  out.add(name, act(rows, 1, fp32_bytes), "rsqrt(mean(x²) + eps), one fp32 value per row");
}

/// Llama4TextMoe on t tokens (transformers 4.5x): Llama4Router (an nn.Linear, top-k of its logits scattered
/// into -inf, sigmoid in fp32, cast back), every token repeated for each of the E experts and scaled by its
/// weight (0 where not routed), Llama4TextExperts' two bmm over the 3-D parameters with the SwiGLU between,
/// the experts' outputs summed into the shared expert's output (add_, which saves nothing).
template <class Out>
HEADROOM_INLINE constexpr void add_llama4_moe(Out& out, const block_context& k, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = k.m;
  const std::uint64_t d = m.hidden_size, E = m.num_experts, f = m.moe_intermediate_size, sf = f;
  const std::uint64_t ab = k.dt.compute, sb = k.dt.stream, rows = checked_mul(E, t, "expert rows");
  // The router, the shared expert's gate/up (and the repeat, which saves nothing) read the norm's output.
  add_linear_group(out, k, "router and shared expert input", t, d, sb,
                   std::array<linear_site, 3>{{{mn::router, E}, {mn::gate_proj, sf}, {mn::up_proj, sf}}});
  out.add("top-k indices", act(t, m.num_experts_per_tok, 8), "int64 indices, saved by topk and scatter_");
  out.add("router sigmoid", act(rows, 1, fp32_bytes), "sigmoid of the scattered logits in fp32, saved by it");
  const std::uint64_t rb = ab;  // the logits' dtype (bf16 under autocast), which the weights are cast back to
  out.add("routing weights", act(rows, 1, rb),
          "cast back and reshaped: a copy (the scores are transposed), saved by the product");
  const std::uint64_t scaled = sb > rb ? sb : rb;  // repeat(x) · weight promotes to the wider dtype
  out.add("repeated tokens", act(rows, d, sb), "x repeated E times, saved by the product for the weights");
  if (k.dt.autocast) {  // torch.bmm is an autocast op: its operands are cast to bf16
    if (k.full) out.add("experts input", act(rows, d, bf16_bytes), "the scaled tokens cast to bf16, saved");
    out.add("experts weight casts", act(E, checked_mul(d, 3 * f), bf16_bytes),
            "gate_up_proj and down_proj cast to bf16, saved for the inputs' gradients");
  } else if (k.full) {
    out.add("experts input", act(rows, d, scaled),
            "the scaled tokens, saved by bmm for gate_up_proj's gradient");
  }
  out.add("experts gate_up output", act(rows, 2 * f, ab),
          "its chunks (gate, up) are saved by SiLU and the product");
  out.add("experts act(gate)", act(rows, f, ab), "saved by the product with up");
  if (k.full)
    out.add("experts down input", act(rows, f, ab), "up · act(gate), saved by bmm for down_proj's gradient");
  add_gated_mlp(out, k, t, sf, sb, 1, false, true);  // the shared expert (its input listed above)
}

/// torchtune's MoE on t tokens (modules/moe/moe.py MoE.forward, pytorch/torchtune bd2a0fc7):
/// TokenChoiceTopKRouter (the gate's logits to fp32, sigmoid, back to x's dtype, top-k, the k·t slots sorted
/// by expert), the routed rows gathered and scaled by their score, the experts on those k·t rows only
/// (GroupedExperts' torch._grouped_mm, or LoRAGroupedExperts' per-expert loop: the same saved tensors plus
/// each adapter's x·A), their outputs scatter_add-ed into the shared expert's. The grouped-GEMM path's
/// padding of each expert's rows to a multiple of 16 (at most 15·E rows) is not priced.
template <class Out>
HEADROOM_INLINE constexpr void add_torchtune_moe(Out& out, const block_context& k, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = k.m;
  const std::uint64_t d = m.hidden_size, E = m.num_experts, sf = m.shared_expert_intermediate_size;
  const std::uint64_t ab = k.dt.compute, sb = k.dt.stream;
  const std::uint64_t routed = checked_mul(t, m.num_experts_per_tok, "routed rows");
  // The router's gate and the shared expert's gate/up read the norm's output.
  add_linear_group(out, k, "router and shared expert input", t, d, sb,
                   std::array<linear_site, 3>{{{mn::router, E}, {mn::gate_proj, sf}, {mn::up_proj, sf}}});
  out.add("router sigmoid", act(t, E, fp32_bytes), "sigmoid of the fp32 logits, saved by it");
  out.add("top-k indices", act(t, m.num_experts_per_tok, 8), "int64 indices, saved by topk");
  out.add("expert order", act(routed, 1, 8), "argsort's int64 indices, saved by indexing the top scores");
  out.add("token indices", act(routed, 1, 8), "each slot's token (int64), saved by gather and scatter_add");
  out.add("routed tokens", act(routed, d, sb), "the gathered rows, saved by the product with their scores");
  out.add("routing scores", act(routed, 1, ab), "the sorted top scores, saved by that product");
  add_gated_mlp(out, k, routed, m.moe_intermediate_size, sb, E);  // the experts' input: the scaled rows
  add_gated_mlp(out, k, t, sf, sb, 1, false, true);               // the shared expert (input listed above)
}

/// What layer_terms cannot price, refused with the reason.
constexpr void check_block_priced(const model_shape& m, const training_setup& s, const activation_config& c) {
  if (const char* why = compile_not_modelled(m, s, c)) fail("compile", why);
  if (m.attention_sinks && c.attention != attention_impl::eager && c.attention != attention_impl::flash)
    fail("attention",
         "gpt-oss's sinks run in eager attention or a FlashAttention kernel with sinks "
         "(kernels-community/vllm-flash-attn3); transformers has no SDPA path for them");
  validate_prefix(s, c);
  if (is_mla(m) && s.method != training_method::full && prefix_positions(s.lora) != 0)
    fail("prefix tuning", "MLA's compressed keys and values (DeepSeek) have no prefix cache priced");
  // torchtune's lora_llama4_decoder: quantize_base and use_dora are "NOT supported on the MoE experts layer".
  if (m.experts == moe_layout::torchtune && s.method == training_method::qlora)
    fail("method", "torchtune has no QLoRA for Llama-4: quantize_base never reaches its MoE experts");
  if (m.experts == moe_layout::torchtune && s.lora.use_dora &&
      s.lora.targets.contains(module_name::gate_proj))
    fail("use_dora",
         "torchtune's LoRAGroupedExperts has no DoRA: use_dora is not supported on the MoE experts");
  if (m.complex_rope && s.method != training_method::full && prefix_positions(s.lora) != 0)
    fail("prefix tuning",
         "Llama-4's cache (complex RoPE, NoPE and chunked layers) has no prefix cache priced");
}

/// The q/k norms after the projections: per head (Qwen3, Gemma-3), over the whole projection (OLMo-2),
/// Cohere's per-head LayerNorms with (heads, head_dim) weights, or Llama-4's weightless L2 norm after RoPE.
template <class Out>
constexpr void add_qk_norms(Out& out, const block_context& k, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute, a = m.num_attention_heads, g = m.num_key_value_heads;
  switch (m.qk_norm) {
    case qk_norm_kind::none:
      return;
    case qk_norm_kind::full_width:
      if (m.norm == norm_kind::cohere) {  // CohereAttention use_qk_norm: per head, (heads, head_dim) weights
        add_cohere_norm(out, "q_norm", checked_mul(t, a), m.head_dim, query_width(m), k,
                        k.output_grad(mn::q_proj));
        add_cohere_norm(out, "k_norm", checked_mul(t, g), m.head_dim, kv_width(m), k,
                        k.output_grad(mn::k_proj));
      } else {  // Olmo2Attention: one RMSNorm over each projection's whole output
        add_rms_norm(out, "q_norm", t, query_width(m), ab, k, k.output_grad(mn::q_proj));
        add_rms_norm(out, "k_norm", t, kv_width(m), ab, k, k.output_grad(mn::k_proj));
      }
      return;
    case qk_norm_kind::per_head:
      add_rms_norm(out, "q_norm", checked_mul(t, a), m.head_dim, ab, k, k.output_grad(mn::q_proj));
      add_rms_norm(out, "k_norm", checked_mul(t, g), m.head_dim, ab, k, k.output_grad(mn::k_proj));
      return;
    case qk_norm_kind::l2:
      if (skips_rope(m)) return;  // Llama4TextAttention: qk_norm after RoPE, on RoPE layers only
      add_l2_norm(out, "q L2 norm", checked_mul(t, a), m.head_dim, k, k.output_grad(mn::q_proj));
      add_l2_norm(out, "k L2 norm", checked_mul(t, g), m.head_dim, k, k.output_grad(mn::k_proj));
      return;
  }
}

/// The q/k/v projections' saved inputs, by the family's attention layout.
template <class Out>
constexpr void add_qkv_projections(Out& out, const block_context& k, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = k.m;
  const std::uint64_t sb = k.dt.stream, d = m.hidden_size, q = query_width(m), kv = kv_width(m);
  switch (m.attention) {
    case attention_layout::mla:
      return add_mla_projections(out, k, t, sb);
    case attention_layout::qkv_proj:
      return add_linear_group(out, k, "qkv_proj input", t, d, sb,
                              std::array<linear_site, 1>{{{mn::qkv_proj, q + 2 * kv}}});
    case attention_layout::query_key_value:
      return add_linear_group(out, k, "query_key_value input", t, d, sb,
                              std::array<linear_site, 1>{{{mn::query_key_value, q + 2 * kv}}});
    case attention_layout::q_k_v:
      if (m.norm ==
          norm_kind::cohere)  // CohereDecoderLayer: q/k/v and gate/up all read the one norm's output
        return add_linear_group(out, k, "q/k/v and gate/up_proj input", t, d, sb,
                                std::array<linear_site, 5>{{{mn::q_proj, q},
                                                            {mn::k_proj, kv},
                                                            {mn::v_proj, kv},
                                                            {mn::gate_proj, m.intermediate_size},
                                                            {mn::up_proj, m.intermediate_size}}});
      return add_linear_group(
          out, k, "q/k/v_proj input", t, d, sb,
          std::array<linear_site, 3>{{{mn::q_proj, q}, {mn::k_proj, kv}, {mn::v_proj, kv}}});
  }
}

/// The attention half of a block after its input norm: the q/k/v projections, the q/k norms, RoPE's
/// temperature, the attention kernel, o_proj and its dropout. `k` is the context of the projections' input.
template <class Out>
constexpr void add_attention_terms(Out& out, const block_context& k, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = k.m;
  const activation_config& c = k.c;
  const std::uint64_t ab = k.dt.compute, d = m.hidden_size;
  const block_module_names names = block_modules(m);
  add_qkv_projections(out, k, t);
  add_qk_norms(out, k, t);
  if (skips_rope(m) && m.attn_temperature_tuning && k.output_grad(mn::q_proj))
    out.add("attn_scales", act(c.seq_len, 1, fp32_bytes),
            "the per-position fp32 temperature (expanded over the batch), saved by q · attn_scales");
  add_attention_core(out, k, t);
  // o_proj's input requires grad when q, k or v does (in a first layer over frozen embeddings: an adapted
  // projection, or prefix tuning's keys and values); its output also when o_proj itself trains.
  block_context attn = k;
  const qkv_grads grads = attention_input_grads(k);
  attn.input_grad = grads.q || grads.k || grads.v;
  add_linear_group(out, attn, neox_layout(m) ? "dense input" : "o_proj input", t, attention_output_width(m),
                   ab, std::array<linear_site, 1>{{{names.out, d}}}, attention_output_shared(k));
  // Starcoder2Attention: dropout(o_proj(…), residual_dropout); GPTNeoXLayer: post_attention_dropout
  if (m.residual_dropout && attn.output_grad(names.out))
    add_dropout(out, neox_layout(m) ? "dense output dropout" : "o_proj output dropout", t, d, ab, attn);
}

/// The norms between attention and the MLP: OLMo-2's and Gemma's post-norms, a parallel block's second
/// LayerNorm over the block input (`k0`), or the usual post_attention_layernorm over the residual (`rest`).
template <class Out>
constexpr void add_post_attention_norms(Out& out, const block_context& k0, const block_context& rest,
                                        std::uint64_t t, bool input_grad) {
  const model_shape& m = rest.m;
  const std::uint64_t ab = rest.dt.compute, sb = rest.dt.stream, d = m.hidden_size;
  const bool gemma_post_norms = m.norms_per_layer >= 4;
  switch (m.residual) {
    case residual_layout::post_norms:
      add_rms_norm(out, "post_attention_layernorm", t, d, ab, rest);  // OLMo-2: on the attention output
      break;
    case residual_layout::parallel:
      // GPTNeoXLayer: post_attention_layernorm reads the block input too; Cohere's MLP reads the input norm's
      // output
      if (m.norm != norm_kind::cohere)
        add_layer_norm(out, "post_attention_layernorm", t, d, sb, k0, input_grad, true);
      break;
    case residual_layout::sequential:
      if (gemma_post_norms) {
        add_rms_norm(out, "post_attention_layernorm", t, d, ab, rest);  // Gemma: on the attention output
        add_rms_norm(out, "pre_feedforward_layernorm", t, d, sb, rest);
      } else {
        add_norm(out, "post_attention_layernorm", t, d, sb, rest);
      }
      break;
  }
  for (std::uint64_t extra = gemma_post_norms ? 4 : 2; extra < m.norms_per_layer; ++extra)
    add_rms_norm(out, "extra norm", t, d, sb, rest);
}

/// MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock (and gpt-oss's, Qwen2-MoE's routed part): router, fp32
/// softmax, top-k, then each expert on the tokens routed to it (t·k rows in all), weighted and index_add_-ed
/// back.
template <class Out>
constexpr void add_routed_experts(Out& out, const block_context& rest, std::uint64_t t) {
  using mn = module_name;
  const model_shape& m = rest.m;
  const std::uint64_t ab = rest.dt.compute, sb = rest.dt.stream, d = m.hidden_size;
  const std::uint64_t kk = m.num_experts_per_tok, routed = checked_mul(t, kk);
  const std::uint64_t sf = m.shared_expert_intermediate_size;
  if (sf == 0)
    add_linear_group(out, rest, "router input", t, d, sb,
                     std::array<linear_site, 1>{{{mn::router, m.num_experts}}});
  else  // Qwen2MoeSparseMoeBlock: the router, the shared expert and its gate read one tensor
    add_linear_group(out, rest, "router and shared expert input", t, d, sb,
                     std::array<linear_site, 4>{{{mn::router, m.num_experts},
                                                 {mn::gate_proj, sf},
                                                 {mn::up_proj, sf},
                                                 {mn::shared_expert_gate, 1}}});
  if ((m.experts ==
       moe_layout::gpt_oss))  // GptOssTopKRouter: topk over the logits, then softmax over the k values only
    out.add("router softmax", act(routed, 1, ab), "softmax of the top-k logits, in their dtype");
  else
    out.add("router softmax", act(t, m.num_experts, fp32_bytes), "routing probabilities in fp32");
  out.add("top-k indices", act(routed, 1, 8), "int64 indices, saved by topk");
  if (m.norm_topk_prob) {
    out.add("top-k renormalisation", act(routed, 1, fp32_bytes), "the weights before the in-place division");
    out.add("top-k renormalisation", act(t, 1, fp32_bytes), "their sum, saved by the division");
  }
  out.add("expert token indices", act(routed, 2, 8),
          "torch.where's (k-slot, token) int64 pairs, saved by indexing");
  // gpt-oss: the router's scores are in the logits' dtype, the biased expert outputs in the bias's
  const std::uint64_t expert_out = (m.experts == moe_layout::gpt_oss) && rest.dt.autocast ? fp32_bytes : ab;
  const std::uint64_t weight_bytes = (m.experts == moe_layout::gpt_oss) ? ab : sb;
  if ((m.experts == moe_layout::gpt_oss))
    add_gpt_oss_experts(out, rest, routed, sb, expert_out);
  else
    add_gated_mlp(out, rest, routed, m.moe_intermediate_size, sb, m.num_experts);
  out.add("expert outputs", act(routed, d, expert_out), "saved by the product with the routing weight");
  out.add("routing weights", act(routed, 1, weight_bytes),
          "each token's weight for its expert, saved by that product");
  out.add("weighted expert outputs", act(routed, d, expert_out > sb ? expert_out : sb),
          "the source of index_add_, saved by it");
}

/// An MoE layer's experts by family; Qwen2-MoE's shared expert, a SwiGLU on every token (its input listed
/// with the router's), times sigmoid(shared_expert_gate(x)): the product keeps both operands.
template <class Out>
HEADROOM_INLINE constexpr void add_moe_terms(Out& out, const block_context& rest, std::uint64_t t) {
  const model_shape& m = rest.m;
  switch (m.experts) {
    case moe_layout::deepseek:
      return add_deepseek_moe(out, rest, t);
    case moe_layout::llama4:
      return add_llama4_moe(out, rest, t);
    case moe_layout::torchtune:
      return add_torchtune_moe(out, rest, t);
    case moe_layout::gpt_oss:
      return add_routed_experts(out, rest, t);
    case moe_layout::linear_experts:
      add_routed_experts(out, rest, t);
      if (m.shared_expert_intermediate_size == 0) return;
      add_gated_mlp(out, rest, t, m.shared_expert_intermediate_size, rest.dt.stream, 1, false, true);
      out.add("shared expert gate", act(t, 1, rest.dt.compute),
              "sigmoid's output, saved by it and by the product");
      out.add("shared expert output", act(t, m.hidden_size, rest.dt.compute),
              "saved by the product with the gate");
      return;
  }
}

/// The MLP half of a block: a plain or gated MLP, or the routed experts of one of the MoE blocks, a shared
/// expert, and the post-feedforward norm. A parallel block's MLP reads the block input (context `k`).
template <class Out>
constexpr void add_mlp_terms(Out& out, const block_context& k, const block_context& rest, std::uint64_t t) {
  const model_shape& m = rest.m;
  const std::uint64_t ab = rest.dt.compute, sb = rest.dt.stream, d = m.hidden_size;
  // A parallel block's MLP reads (a norm of) the block input, which needs a gradient only as the block's
  // does.
  const block_context& mlp = m.residual == residual_layout::parallel ? k : rest;
  if (is_moe(m)) {
    add_moe_terms(out, rest, t);
  } else {
    switch (m.mlp) {
      case mlp_layout::c_fc:
      case mlp_layout::dense_h_to_4h:
        add_plain_mlp(out, mlp, t, sb);
        break;
      case mlp_layout::gated:
      case mlp_layout::gate_up_proj:  // Cohere's gate/up input was listed with q/k/v
        add_gated_mlp(out, mlp, t, m.intermediate_size, sb, 1, false, m.norm == norm_kind::cohere);
        break;
    }
  }
  if (m.norms_per_layer >= 4 || m.residual == residual_layout::post_norms)
    add_rms_norm(out, "post_feedforward_layernorm", t, d, ab, rest);  // on the MLP output
}

/// The projections read the input norm's output, which requires grad when the block input does or when the
/// norm trains (LN tuning: even over frozen embeddings); OLMo-2's read the block input itself. Calls
/// `f(context)` with that context (a copy only when it differs from the block's).
template <class F>
constexpr void with_projections_context(const block_context& k0, F&& f) {
  if (k0.input_grad || !k0.norm_weights_train() || k0.m.residual == residual_layout::post_norms) return f(k0);
  block_context k = k0;
  k.input_grad = true;
  f(k);
}
/// The first half of a block: the input norm and the attention half, which read the block input (whether it
/// requires grad: `k0.input_grad`).
template <class Out>
constexpr void block_front_terms(Out& out, const block_context& k0) {
  const model_shape& m = k0.m;
  const std::uint64_t t = checked_mul(k0.c.batch, k0.c.seq_len, "tokens");
  // OLMo-2 has no norm before the projections: they read the block input itself.
  if (m.residual != residual_layout::post_norms)
    add_norm(out, "input_layernorm", t, m.hidden_size, k0.dt.stream, k0, k0.input_grad);
  with_projections_context(k0, [&](const block_context& k) { add_attention_terms(out, k, t); });
}
/// Whether the second half of a block reads the block input (a parallel block's MLP and its norm); a
/// sequential block's second half is the same whether or not the input requires grad.
constexpr bool back_reads_block_input(const model_shape& m) {
  return m.residual == residual_layout::parallel;
}
/// The second half: the residual, the post-attention norms, the MLP half. From here on a sequential block is
/// priced as if the residual stream required grad (exact for PEFT's default targets, which adapt q/k/v).
template <class Out>
constexpr void block_back_terms(Out& out, const block_context& k0) {
  const model_shape& m = k0.m;
  const std::uint64_t t = checked_mul(k0.c.batch, k0.c.seq_len, "tokens");
  block_context rest = k0;
  rest.input_grad = true;
  out.add("residual add", bytes(0), "x + f(x) saves nothing");
  if (m.scalar_multipliers && k0.scalar != 0)  // GraniteDecoderLayer: residual + f(x)·residual_multiplier
    out.add("residual multiplier", bytes(2 * k0.scalar),
            "the Python float, saved by the two branch products");
  add_post_attention_norms(out, k0, rest, t, k0.input_grad);
  with_projections_context(k0, [&](const block_context& k) { add_mlp_terms(out, k, rest, t); });
}
/// Per-tensor inventory of one decoder block without recomputation, into `out`: the input norm, the
/// attention half, the residual, the post-attention norms, the MLP half.
template <class Out>
constexpr void layer_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                           Out& out, bool input_grad = true) {
  check_block_priced(m, s, c);
  const block_context k0 = context_of(m, s, c, input_grad);
  block_front_terms(out, k0);
  block_back_terms(out, k0);
}

/// What P-tuning's MLP head (p_tuning/model.py PromptEncoder) or prefix tuning's projection
/// (prefix_tuning/model.py PrefixEncoder, prefix_projection) saves: fp32 modules whose linears run in bf16
/// under autocast. P-tuning encodes one copy of the prompts and repeats it (peft_model.py get_prompt:
/// prompt_tokens[:1]); prefix tuning encodes every sequence's. The embedding saves only its indices.
template <class Out>
constexpr void add_prompt_encoder(Out& out, const block_context& k) {
  const lora_config& l = k.s.lora;
  const bool p_tuning = l.method == peft_method::p_tuning;
  if (k.full || !(p_tuning || (l.method == peft_method::prefix_tuning && l.prefix_projection))) return;
  const model_shape& m = k.m;
  const std::uint64_t P = l.virtual_tokens, token = prompt_token_dim(m, l), E = prompt_encoder_width(m, l);
  const std::uint64_t rows = p_tuning ? P : checked_mul(k.c.batch, P, "prompt rows");
  const bool ac = k.dt.autocast;
  const std::uint64_t hb = ac ? bf16_bytes : fp32_bytes;
  auto weight_cast = [&](std::uint64_t in, std::uint64_t out_features, std::string_view which) {
    if (ac) out.add("prompt encoder", act(in, out_features, bf16_bytes), which);
  };
  out.add("prompt encoder", act(rows, token, hb),
          ac ? "the embedding output cast to bf16, saved by the first linear"
             : "the embedding output, saved by the first linear");
  weight_cast(token, E, "the first linear's weight cast to bf16, saved for its input's gradient");
  if (p_tuning) {
    out.add("prompt encoder", act(rows, E, hb), "the first ReLU's output, saved by it and the second linear");
    weight_cast(E, E, "the second linear's weight cast to bf16");
    out.add("prompt encoder", act(rows, E, hb), "the second ReLU's output, saved by it and the last linear");
    weight_cast(E, token, "the last linear's weight cast to bf16");
  } else {
    out.add("prompt encoder", act(rows, E, hb), "tanh's output, saved by it and the second linear");
    weight_cast(E, checked_mul(2 * m.num_hidden_layers, token, "prefix width"),
                "the second linear's weight cast to bf16");
  }
}
/// Under autocast, the bf16 casts of a prompt encoder's biases: cached (trainable leaves) until autocast
/// exits after the loss, never saved.
constexpr bytes prompt_encoder_bias_casts(const model_shape& m, const training_setup& s) {
  if (s.method == training_method::full || !autocasts(s.precision)) return bytes(0);
  std::uint64_t values = 0;
  visit_model_adapters(m, s.lora, [&](const param_tensor& t) {
    if (t.role == tensor_role::bias) values += t.numel();
  });
  return bytes(checked_mul(values, bf16_bytes, "bias casts"));
}

/// Tensors saved once per forward, outside the blocks, into `out`.
template <class Out>
constexpr void model_level_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                                 Out& out) {
  const block_context k = context_of(m, s, c);
  const std::uint64_t t = checked_mul(c.batch, c.seq_len, "tokens");
  const std::uint64_t sb = k.dt.stream;
  if (m.scaled_embeddings)
    out.add("embedding normalizer", bytes(sb), "sqrt(hidden_size) as a 0-dim tensor, saved by the product");
  // LlamaRotaryEmbedding: position_ids of shape (1, s), so the tables are (1, s, head_dim), broadcast.
  out.add(m.complex_rope ? "RoPE freqs_cis" : "RoPE cos/sin", rope_table_bytes(m, c.seq_len, sb),
          "position tables shared by every layer's RoPE");
  // enable_input_require_grads (with checkpointing over a frozen table) makes the embedding output a leaf
  // that requires grad; its AccumulateGrad node keeps it until backward whenever it is not itself the first
  // block's checkpointed input: Gemma and Granite scale it, prompt tuning concatenates the prompts before it.
  const std::uint64_t prompts = prompt_positions(s.lora);
  const bool leaf = !k.full && !k.adapted(module_name::embed_tokens) && c.ckpt != checkpointing::none;
  if (leaf && (m.scaled_embeddings || m.scalar_multipliers || m.embedding_dropout || prompts != 0))
    out.add("embedding output", act(c.batch, checked_mul(c.seq_len - prompts, m.hidden_size), sb),
            "a leaf requiring grad (enable_input_require_grads), kept by its AccumulateGrad node");
  // Starcoder2Model: dropout(inputs_embeds, embedding_dropout), recorded when the embeddings need a gradient.
  if (m.embedding_dropout && first_layer_input_grad(s, c))
    add_dropout(out, "embedding dropout", t, m.hidden_size, sb, k);
  add_prompt_encoder(out, k);
  // Prefix tuning's keys need a (b, 1, s, s + P) mask: the additive one in the stream dtype, which the CPU
  // flash kernel of every layer saves (the same tensor) until backward (measured on 2.6)
  const std::uint64_t prefix = k.prefix_keys();
  if (prefix != 0 && s.runtime.device == device_kind::cpu && attention_kernel(k) == attention_impl::sdpa)
    out.add("attention mask", act(t, c.seq_len + prefix, sb),
            "the model's additive mask, saved by every layer's CPU flash kernel");
  add_norm(out, "final norm", t, m.hidden_size, sb, k);
  // The head matmul and whether it keeps the final hidden states belong to the loss head (logits.hpp).
}

/// What the final norm saves (model_level_terms' last term), freed once the backward has passed it.
constexpr bytes final_norm_bytes(const model_shape& m, const training_setup& s, const activation_config& c) {
  const block_context k = context_of(m, s, c);
  bytes_sum out;
  add_norm(out, "final norm", checked_mul(c.batch, c.seq_len, "tokens"), m.hidden_size, k.dt.stream, k);
  return out.total();
}

/// The course's per-layer formula (Korthikanti et al. 2022): s·b·h·(34 + 5·a·s/h) bytes for 16-bit
/// activations; FlashAttention / memory-efficient SDPA removes the 5·a·s/h term.
template <class Out>
constexpr void korthikanti_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                                 Out& out) {
  validate_prefix(s, c);
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
  if (c.images != 0)
    fail("images",
         "a multimodal batch adds its image tokens first: with_image_tokens(spec, c), as "
         "estimate_training does");
  if (c.batch == 0) fail("batch", "must be a positive integer");
  if (c.seq_len == 0) fail("seq_len", "must be a positive integer");
  if (c.batch > max_workload_batch) fail("batch", "is absurdly large");
  // (prompt tuning's virtual tokens come on top of the longest dataset sequence)
  if (c.seq_len > max_workload_seq_len + max_virtual_tokens) fail("seq_len", "is absurdly large");
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
                                                         const activation_config& dataset) {
  const activation_config c = positions_seen(dataset, s);
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::layer_terms(m, s, c, out); });
}
/// Tensors saved once per forward, outside the blocks (detailed formula only).
[[nodiscard]] constexpr activation_terms model_level_inventory(const model_shape& m, const training_setup& s,
                                                               const activation_config& dataset) {
  const activation_config c = positions_seen(dataset, s);
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::model_level_terms(m, s, c, out); });
}
/// The course's formula as terms: 34·sbh, plus 5·a·s²·b without a fused attention kernel.
[[nodiscard]] constexpr activation_terms korthikanti_layer(const model_shape& m, const training_setup& s,
                                                           const activation_config& dataset) {
  const activation_config c = positions_seen(dataset, s);
  return detail::checked_terms(m, c, [&](activation_terms& out) { detail::korthikanti_terms(m, s, c, out); });
}

/// The terms behind an activation_estimate (for --explain and the JSON report).
struct activation_breakdown {
  activation_terms layer;        ///< one block, under the configured formula
  activation_terms model_level;  ///< once per model (empty for the Korthikanti formula)
};
[[nodiscard]] constexpr activation_breakdown activation_inventory(const model_shape& m,
                                                                  const training_setup& s,
                                                                  const activation_config& dataset) {
  const activation_config c = positions_seen(dataset, s);
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
/// What one layer of `block` bytes (with a block input of `input` bytes) keeps on the GPU, moves to host RAM
/// and holds while it is recomputed, under each checkpointing mode.
struct layer_under_checkpointing {
  bytes kept{0};
  bytes host{0};
  bytes recompute{0};
};
constexpr layer_under_checkpointing checkpointed_layer(const model_shape& m, const training_setup& s,
                                                       const activation_config& c, bytes block, bytes input) {
  const bool korthikanti = c.formula == activation_formula::korthikanti;
  const std::uint64_t L = m.num_hidden_layers;
  layer_under_checkpointing out;
  switch (c.ckpt) {
    case checkpointing::none:
      out.kept = block;
      break;
    case checkpointing::full:  // 2·sbh per layer + one block's internals during recompute
      out.kept = input;
      out.recompute = block;
      break;
    case checkpointing::selective: {  // TRL: the block input and the attention output stay
      const std::uint64_t t = checked_mul(c.batch, c.seq_len);
      const bytes attn_out = korthikanti ? input
                                         : act(t, attention_output_width(m), activation_bytes(s.precision)) +
                                               act(t, m.num_attention_heads, fp32_bytes);
      out.kept = input + attn_out;
      out.recompute = block;
      break;
    }
    case checkpointing::offload:  // the block in flight stays; the rest waits in host RAM
      out.recompute = block;
      out.host = block;
      break;
    case checkpointing::offload_checkpointed:  // one block input on the GPU, the others in host RAM
      out.recompute = block + input;
      out.host = input;
      break;
    case checkpointing::checkpoint_offload:     // the block input being recomputed and the previous node's
      if (input.count() < offload_min_bytes) {  // too small to move: it stays, as under full checkpointing
        out.kept = input;
        out.recompute = block;
        break;
      }
      out.recompute = block + input * (L < offload_backward_inputs ? L : offload_backward_inputs);
      out.host = input;
      break;
  }
  return out;
}

/// autocast caches every trainable fp32 weight's bf16 cast until it exits (after the loss); the first layer's
/// lora_A casts over frozen embeddings are cached but not saved, so they count in forward only.
constexpr bytes first_layer_cached_casts(const model_shape& m, const training_setup& s) {
  std::uint64_t sites = 0;
  const module_name qkv = block_modules(m).qkv;
  if (is_mla(m)) {  // the projections reading the input: q_a_proj (or q_proj) and kv_a_proj_with_mqa
    for (module_name mod :
         {m.q_lora_rank != 0 ? module_name::q_a_proj : module_name::q_proj, module_name::kv_a_proj_with_mqa})
      if (s.lora.targets.contains(mod)) ++sites;
  } else {
    for (module_name mod : {module_name::q_proj, module_name::k_proj, module_name::v_proj, qkv})
      if (s.lora.targets.contains(mod) && (mod == qkv) == fused_qkv(m)) ++sites;
  }
  bytes cached = act(sites * s.lora.rank, m.hidden_size, bf16_bytes);
  // A parallel MLP (GPT-NeoX, Cohere) reads the frozen input too: its first adapted linears' casts are
  // not saved either — the input projections' (r × d each), or else the output projection's (r × d_ff).
  const block_module_names names = block_modules(m);
  const bool parallel = m.residual == residual_layout::parallel;
  std::uint64_t inputs = 0;
  for (module_name mod : {names.mlp_in, module_name::gate_proj, module_name::up_proj})
    if (parallel && s.lora.targets.contains(mod) && (mod == names.mlp_in) == plain_mlp(m)) ++inputs;
  const module_name out_proj = plain_mlp(m) ? names.mlp_out : module_name::down_proj;
  cached += act(inputs * s.lora.rank, m.hidden_size, bf16_bytes);
  if (parallel && inputs == 0 && s.lora.targets.contains(out_proj))
    cached += act(s.lora.rank, m.intermediate_size, bf16_bytes);
  return cached;
}

/// What the checkpoints themselves hold: torch.utils.checkpoint stashes the RNG state per call, the
/// checkpointed calls hold their bound arguments until backward, and reentrant ones keep them until the graph
/// is freed.
constexpr void add_checkpoint_state(activation_estimate& e, const model_shape& m, const training_setup& s,
                                    const activation_config& c) {
  const bool korthikanti = c.formula == activation_formula::korthikanti;
  const std::uint64_t L = m.num_hidden_layers;
  // torch.utils.checkpoint stashes torch.get_rng_state() per call (preserve_rng_state=True): host memory
  // on a GPU, device memory on a CPU.
  const bool checkpoints = recomputes_blocks(c.ckpt) || c.ckpt == checkpointing::selective;
  if (checkpoints && s.runtime.device == device_kind::cpu)
    e.checkpoint_state = bytes(cpu_rng_state_bytes) * L;
  // The checkpointed calls hold their bound arguments until backward: eager attention's (b, 1, s, s) mask
  // (sdpa and flash get none). Without checkpointing it dies with the forward.
  if (checkpoints && c.attention == attention_impl::eager && !korthikanti)
    e.checkpoint_state += act(c.batch, c.seq_len, c.seq_len) * weight_bytes(s.precision);
  // Reentrant checkpoints (CheckpointFunction) keep their ctx — the RNG state and the bound arguments: the
  // mask and the RoPE tables — until the graph is freed after backward; non-reentrant ones free them per
  // layer.
  if (checkpoints && c.reentrant && !korthikanti)
    e.retained = e.checkpoint_state + rope_table_bytes(m, c.seq_len, weight_bytes(s.precision));
}

/// One block under the course's formula.
constexpr bytes korthikanti_block(const model_shape& m, const training_setup& s, const activation_config& c) {
  bytes_sum layer;
  korthikanti_terms(m, s, c, layer);
  return layer.total();
}
/// One block's saved bytes and, for the first layer over frozen embeddings, what it does not save.
struct block_bytes {
  bytes saved{0};
  bytes first_layer_saving{0};
};
/// One block's inventory, in its two halves. Over frozen embeddings (`frozen_input`) the first half changes
/// (and a parallel block's second half, which reads the input too); a sequential second half is reused.
constexpr block_bytes detailed_block(const model_shape& m, const training_setup& s,
                                     const activation_config& c, bool frozen_input) {
  check_block_priced(m, s, c);
  block_context k = context_of(m, s, c);
  bytes_sum front, back;
  block_front_terms(front, k);
  block_back_terms(back, k);
  const bytes block = front.total() + back.total();
  if (!frozen_input) return {block, bytes(0)};
  k.input_grad = false;
  bytes_sum frozen_front, frozen_back = back;
  block_front_terms(frozen_front, k);
  if (back_reads_block_input(m)) {
    frozen_back = bytes_sum{};
    block_back_terms(frozen_back, k);
  }
  return {block, block - (frozen_front.total() + frozen_back.total())};
}

/// torch 2.x no longer hands the 0-dim tensors of Python-scalar operands (LoRA's `scaling`, a softmax scale)
/// to saved-tensor hooks, so a non-reentrant checkpoint (torch/utils/checkpoint.py, built on those hooks)
/// cannot drop them: each checkpointed block (`block`: its saved bytes, scalars included) keeps them, on a
/// CPU where they are tensors (measured on 2.6).
constexpr bytes unhooked_scalar_bytes(const model_shape& m, const training_setup& s,
                                      const activation_config& c, bytes block) {
  const bool non_reentrant =
      (recomputes_blocks(c.ckpt) || c.ckpt == checkpointing::selective) && !c.reentrant;
  if (!non_reentrant || s.runtime.torch == torch_generation::v1_13 || saved_scalar_bytes(s.runtime) == 0)
    return bytes(0);
  block_context k = context_of(m, s, c);
  k.scalar = 0;
  bytes_sum without;
  block_front_terms(without, k);
  block_back_terms(without, k);
  return block - without.total();
}

constexpr activation_estimate activations_of_valid_shape(const model_shape& m, const training_setup& s,
                                                         const activation_config& c) {
  validate_workload(c);
  activation_estimate e;
  const bool korthikanti = c.formula == activation_formula::korthikanti;
  bytes_sum model_level;
  if (!korthikanti) model_level_terms(m, s, c, model_level);
  e.model_level = model_level.total();
  const bytes input = block_input_bytes(m, s, c);
  bytes kept_layers{0}, host_layers{0};
  bool first = true;
  const bool frozen_input = !korthikanti && c.ckpt == checkpointing::none && !first_layer_input_grad(s, c);
  // Each run of uniform layers (DeepSeek: dense first layers, then MoE ones); the largest block is the one
  // recomputed and the one reported.
  for_each_layer_group(m, [&](const model_shape& kind, std::uint64_t layers) {
    const block_bytes b = korthikanti ? block_bytes{korthikanti_block(kind, s, c), bytes(0)}
                                      : detailed_block(kind, s, c, first && frozen_input);
    const bytes block = b.saved;
    if (first) e.first_layer_saving = b.first_layer_saving;
    first = false;
    layer_under_checkpointing under = checkpointed_layer(m, s, c, block, input);
    if (!korthikanti) under.kept += unhooked_scalar_bytes(kind, s, c, block);
    kept_layers += under.kept * layers;
    host_layers += under.host * layers;
    if (block > e.layer) e.layer = block;
    if (under.recompute > e.recompute) e.recompute = under.recompute;
    if (under.kept > e.per_layer_kept) e.per_layer_kept = under.kept;
  });
  e.module_transient = dora_module_transient(m, s);
  if (frozen_input && autocasts(s.precision) && s.lora.method == peft_method::lora &&
      adapter_bytes(s) == fp32_bytes)
    e.forward_cached = first_layer_cached_casts(m, s);  // cached by autocast, not saved
  // Prefix tuning's cache and a prompt encoder's cached bias casts live until the loss is computed.
  e.forward_cached += prefix_cache_bytes(m, s, c) + prompt_encoder_bias_casts(m, s);
  add_checkpoint_state(e, m, s, c);
  e.kept = kept_layers + e.model_level + e.checkpoint_state - e.first_layer_saving;
  e.gpu = e.kept + e.recompute;
  e.host = host_layers;
  return e;
}
}  // namespace detail

/// Activations under the chosen formula and checkpointing mode.
/// `c` is the dataset's micro-batch: prompt tuning's virtual tokens are added here (positions_seen); the
/// inventories above take the positions the blocks see.
[[nodiscard]] constexpr activation_estimate estimate_activations(const model_shape& m,
                                                                 const training_setup& s,
                                                                 const activation_config& c) {
  validate(m);
  return detail::activations_of_valid_shape(m, s, positions_seen(c, s));
}

/// W19: with backward ≈ 2× forward a step costs 3F; full recomputation adds one forward (4F).
[[nodiscard]] constexpr std::uint64_t forward_passes_per_step(checkpointing c) {
  return recomputes_blocks(c) || c == checkpointing::selective ? 4 : 3;
}

}  // namespace headroom
