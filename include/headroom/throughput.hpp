// SPDX-License-Identifier: MIT
// Step time from a roofline: each matmul's FLOPs against the bytes it moves on the chosen GPU, the
// attention kernel, elementwise and norm traffic, the loss head, recomputation and the optimizer
// step; then tokens/s, MFU and HFU under a named FLOPs convention (docs/throughput.md).
#pragma once

#include <algorithm>
#include <cstdint>

#include "activations/estimate.hpp"
#include "communication.hpp"
#include "flops.hpp"
#include "gpu.hpp"
#include "logits.hpp"
#include "memory.hpp"
#include "peak.hpp"

namespace headroom {

/// What fraction of the datasheet peaks real kernels reach (an assumption; set your own).
struct roofline_config {
  double matmul_efficiency = 0.7;     ///< of dense peak FLOP/s, for large bf16 GEMMs
  double bandwidth_efficiency = 0.8;  ///< of datasheet memory bandwidth, for streaming kernels
  flops_convention convention = flops_convention::six_n;
  double padding_waste = 0.0;     ///< fraction of computed tokens that are padding, in [0, 1)
  bool clip_grad_norm = true;     ///< the Trainer's max_grad_norm (1.0 by default) clips every step
  double kernel_launch_s = 5e-6;  ///< host time to dispatch one eager op (an assumption; set your own)
  double interconnect_gb_s = 0;   ///< GPU-to-GPU GB/s per direction in a node (0: the GPU file's figure)
  double inter_node_gb_s = 50;    ///< per GPU between nodes: one 400 Gb/s NIC each (DGX H100: 8 ConnectX-7)
  double interconnect_efficiency = 0.7;  ///< of the link reached by NCCL's rings (an assumption; set yours)
};

/// The GPU-to-GPU GB/s per direction a prediction uses inside a node: the caller's, else the GPU file's (0:
/// neither gives one).
[[nodiscard]] inline double intra_node_gb_s(const gpu_info& gpu, const roofline_config& rc) {
  return rc.interconnect_gb_s != 0 ? rc.interconnect_gb_s : gpu.interconnect_gb_s;
}

/// The smallest efficiency headroom accepts: below 1% of a datasheet peak no kernel runs (a percentage typed
/// as a fraction, or the wrong peak).
inline constexpr double min_efficiency = 0.01;

/// Seconds per optimizer step, by part.
struct step_time_parts {
  double matmuls = 0;    ///< linear layers, forward and backward (incl. LoRA adapters, QLoRA dequantisation)
  double attention = 0;  ///< the attention kernel
  double elementwise = 0;      ///< norms, activations, residuals, RoPE (memory-bound)
  double loss_head = 0;        ///< lm_head matmuls and the loss
  double recompute = 0;        ///< checkpointing's extra forward
  double optimizer = 0;        ///< the update (memory-bound)
  double grad_clipping = 0;    ///< clip_grad_norm_: the gradients read for the norm, then scaled in place
  double launch_bound = 0;     ///< host-bound excess: dispatching the kernels takes longer than running them
  double communication = 0;    ///< collectives the compute does not hide (comm_times.exposed)
  double pipeline_bubble = 0;  ///< a pipeline's stages idle while it fills and drains (p − 1 stage times)
  [[nodiscard]] double total() const {
    return matmuls + attention + elementwise + loss_head + recompute + optimizer + grad_clipping +
           launch_bound + communication + pipeline_bubble;
  }
};

struct throughput_estimate {
  token_flops per_token{};
  step_time_parts parts{};
  seconds step_time{0};               ///< one optimizer step: grad_accum micro-batches + the update
  double tokens_per_second = 0;       ///< trained (non-padding) tokens per second per GPU
  double mfu = 0;                     ///< model FLOPs utilisation under the convention
  double hfu = 0;                     ///< hardware FLOPs utilisation (recomputation counted)
  std::uint64_t tokens_per_step = 0;  ///< trained tokens per optimizer step per model replica (t·p GPUs)
  comm_times comm{};                  ///< the collectives per step (all zero on one GPU)
};

namespace detail {
struct roofline {
  double peak;       // FLOP/s achievable
  double bandwidth;  // bytes/s achievable
  [[nodiscard]] double time(double flop_count, double byte_count) const {
    return std::max(flop_count / peak, byte_count / bandwidth);  // compute- or memory-bound
  }
};

inline constexpr double operand_bytes = 2;  // 16-bit matmul operands
/// One matmul of M rows (M×K by K×N), forward or the input gradient, in 2-byte operands; an MoE layer's
/// `weight_copies` experts each read their own K×N weight.
inline double gemm_time(const roofline& r, double M, double K, double N, double weight_copies) {
  return r.time(2 * M * K * N, operand_bytes * (M * K + K * N * weight_copies + M * N));
}
/// The weight gradient of a K→N linear over M rows: xᵀ·dy reads the input (M×K) and the output gradient
/// (M×N) once and writes one K×N gradient per expert.
inline double weight_grad_time(const roofline& r, double M, double K, double N, double weight_copies) {
  return r.time(2 * M * K * N, operand_bytes * (M * K + M * N + K * N * weight_copies));
}

/// Kernels one decoder layer launches in an eager forward (transformers' modules, not compiled), counted
/// from the operations each module runs; backward launches about two per forward op (docs/throughput.md).
inline double layer_forward_kernels(const model_shape& m, const training_setup& s,
                                    const activation_config& a) {
  constexpr double rms_norm = 8;    // to(fp32), pow, mean, + eps, rsqrt, ·, to(dtype), · weight
  constexpr double rope = 10;       // per q and k: · cos, rotate_half's neg and cat, · sin, +
  constexpr double expert_ops = 8;  // per expert: where, index, gate, up, act, ·, down, · weight, index_add_
  constexpr double layer_norm = 1;  // native_layer_norm is one kernel
  // (MLA adds q_a_layernorm and kv_a_layernorm)
  const double norms = static_cast<double>(m.norms_per_layer + (weighted_qk_norms(m) ? 2 : 0) +
                                           (is_mla(m) ? 1 + (m.q_lora_rank != 0) : 0));
  double k = (m.norm == norm_kind::layer_norm ? layer_norm : rms_norm) * norms + rope +
             2;                        // + the two residual adds
  if (m.residual_dropout) k += 2 * 2;  // StarCoder2: bernoulli and the product, after o_proj and c_proj
  switch (a.attention) {
    case attention_impl::flash:
      k += 1;
      break;
    case attention_impl::sdpa:
    case attention_impl::sdpa_math:
      k += 1 + (m.num_key_value_heads != m.num_attention_heads ? 2 : 0);  // repeat_kv copies K and V
      break;
    case attention_impl::eager:  // repeat_kv, q·kᵀ, · scaling, + mask, softmax, to(dtype), · v
      k += 6 + (m.num_key_value_heads != m.num_attention_heads ? 2 : 0);
      break;
  }
  // Each linear one matmul; an adapted one also lora_A, lora_B, · scaling and + (and its dropout): two
  // launches per adapter matmul listed. Experts are counted below.
  for (const gemm_shape& g : layer_gemms(m, s))
    if (g.weight_copies == 1) k += g.adapter ? 2 + (s.lora.dropout > 0 ? 0.5 : 0) : 1;
  if (m.experts == moe_layout::llama4) {  // topk, full_like, scatter_, sigmoid (and its casts), repeat, ·,
                                          // two bmm, act, ·, sum,
                                          // add_
    k += 13;
  } else if (m.experts == moe_layout::torchtune) {  // gate, to, sigmoid, to, topk, histc, argsort, index, //,
                                                    // gather, · scores, scatter_add; then three grouped
                                                    // GEMMs, act and · (full, SM90+), or LoRAGroupedExperts'
                                                    // loop: per expert three projections of matmul, lora_a,
                                                    // lora_b, · scaling and +, then act and ·
    k += 12 + (s.method == training_method::full ? 5 : 17 * static_cast<double>(m.num_experts));
  } else if (is_moe(m)) {  // router softmax, topk, one_hot, the hit test; then every expert's loop body
    k += 6 + expert_ops * static_cast<double>(m.num_experts);
  } else {
    k += plain_mlp(m) ? 1 : 2;  // GELU (StarCoder2), or act(gate) · up
  }
  return k;
}

/// The parameter count the convention credits: nominal or exact, the active count for MoE.
inline params credited_params(const model_spec& spec, params_basis basis) {
  if (is_moe(spec.shape)) return active_parameter_count(spec.shape);
  return basis == params_basis::nominal && spec.nominal_params != 0 ? params(spec.nominal_params)
                                                                    : parameter_count(spec.shape);
}
}  // namespace detail

/// The dtype a route's matmuls run in: fp16 under fp16 autocast, TF32 without mixed precision, else bf16.
[[nodiscard]] constexpr compute_dtype compute_dtype_for(precision_route p) {
  return p == precision_route::fp16_autocast ? compute_dtype::fp16
         : p == precision_route::fp32        ? compute_dtype::tf32
                                             : compute_dtype::bf16;
}

namespace detail {
/// The inputs a roofline can time: efficiencies in range, and one GPU without host-side work.
inline void check_roofline_inputs(const roofline_config& rc, const parallel_config& par) {
  if (!(rc.matmul_efficiency >= min_efficiency && rc.matmul_efficiency <= 1))
    throw input_error("matmul_efficiency", "must be in [0.01, 1] (a fraction of the datasheet peak)");
  if (!(rc.bandwidth_efficiency >= min_efficiency && rc.bandwidth_efficiency <= 1))
    throw input_error("bandwidth_efficiency", "must be in [0.01, 1] (a fraction of the datasheet bandwidth)");
  if (!(rc.padding_waste >= 0 && rc.padding_waste < 1))
    throw input_error("padding_waste", "must be in [0, 1)");
  if (!(rc.kernel_launch_s >= 0 && rc.kernel_launch_s <= 1e-3))
    throw input_error("kernel_launch_s", "must be in [0, 1 ms] per launch");
  if (!(rc.interconnect_efficiency >= min_efficiency && rc.interconnect_efficiency <= 1))
    throw input_error("interconnect_efficiency", "must be in [0.01, 1] (a fraction of the link's bandwidth)");
  if (rc.interconnect_gb_s != 0 &&
      !(rc.interconnect_gb_s >= min_bandwidth_gb_s && rc.interconnect_gb_s <= max_bandwidth_gb_s))
    throw input_error("interconnect_gb_s", "must be in [1, 1e5] GB/s per direction");
  if (!(rc.inter_node_gb_s >= min_bandwidth_gb_s && rc.inter_node_gb_s <= max_bandwidth_gb_s))
    throw input_error("inter_node_gb_s", "must be in [1, 1e5] GB/s per GPU and direction");
  // Host-side optimizer steps are not priced, so a layout that needs them is refused rather than timed as
  // if it ran on the GPU.
  if (par.offload_optimizer || par.offload_params)
    throw input_error("offload",
                      "the step-time prediction has no host side: a CPU optimizer step and PCIe "
                      "transfers are not modelled; measure tokens/s (--tokens-per-second)");
}

/// The layers' share of one micro-batch, summed over the runs of uniform layers.
struct layer_times {
  double matmuls = 0;              ///< linears, forward and backward
  double attention = 0;            ///< the attention kernel, forward and backward
  double elementwise = 0;          ///< norms, activations, residuals, RoPE, forward and backward
  double forward_only = 0;         ///< one forward of the linears and the elementwise ops (recomputation)
  double attention_recompute = 0;  ///< one forward of the attention kernel
  double forward_kernels = 0;      ///< the kernels one forward launches
};

/// The micro-batch's shape, as the roofline's doubles.
struct roofline_tokens {
  double t;      ///< tokens in the micro-batch
  double batch;  ///< sequences
  double seq;    ///< tokens per sequence
};

/// One tensor-parallel rank's share of a linear (Megatron, Shoeybi et al. 2019 §3): a layer reading the
/// hidden state is column-parallel (its outputs split), the others row-parallel (their inputs split); the
/// router, the shared-expert gate and LoRA's adapters are replicated.
struct tp_share {
  double in = 1, out = 1;
};
inline tp_share tensor_parallel_share(const gemm_shape& g, const model_shape& lm, double tp) {
  if (tp == 1 || g.adapter || g.module == module_name::router || g.module == module_name::shared_expert_gate)
    return {};
  return g.in == lm.hidden_size ? tp_share{1, tp} : tp_share{tp, 1};
}

/// Linear layers of one run of `L` layers: forward, activation gradient, and weight gradient when trainable,
/// on one of `tp` tensor-parallel ranks.
inline void add_linear_times(layer_times& out, const model_shape& lm, const training_setup& s,
                             const roofline& roof, double t, double L, double tp) {
  for (const gemm_shape& g : layer_gemms(lm, s)) {
    const double rows = t * static_cast<double>(g.rows_num) / static_cast<double>(g.rows_den);
    const tp_share share = tensor_parallel_share(g, lm, tp);
    const double K = static_cast<double>(g.in) / share.in, N = static_cast<double>(g.out) / share.out;
    const double copies = static_cast<double>(g.weight_copies);
    const double fwd = gemm_time(roof, rows, K, N, copies);
    double dequant = 0;  // bitsandbytes: unpack NF4 to a dense bf16 weight before each use
    if (g.quantised) dequant = roof.time(0, (0.516 + 2 + 2) * K * N * copies);
    const double bwd =
        gemm_time(roof, rows, N, K, copies) + (g.trainable ? weight_grad_time(roof, rows, K, N, copies) : 0);
    out.matmuls += L * (fwd + dequant + bwd + dequant);
    out.forward_only += L * (fwd + dequant);
  }
}

/// The attention kernel of one run of the model `m`. Flash/SDPA: causal, 2·b·s²·q forward FLOPs;
/// backward 2.5× (FlashAttention-2: five matmuls against two). Eager: the full s² products plus the score
/// traffic.
inline void add_attention_time(layer_times& out, const model_shape& m, attention_impl impl,
                               const roofline& roof, const roofline_tokens& k, double L) {
  const double q = static_cast<double>(query_width(m)), kv = static_cast<double>(kv_width(m));
  const double qv = q + static_cast<double>(attention_output_width(m));  // q·kᵀ width + probabilities·v width
  const double heads = static_cast<double>(m.num_attention_heads);
  double attn_fwd = 0;
  const double qk_bytes = 2 * k.t * (2 * q + 2 * kv);
  if (impl == attention_impl::eager) {
    const double scores = k.batch * heads * k.seq * k.seq;
    attn_fwd = roof.time(2 * k.batch * k.seq * k.seq * qv, qk_bytes + scores * (2 + 2 + 4 + 4 + 2 + 2));
  } else {
    attn_fwd = roof.time(k.batch * k.seq * k.seq * qv,
                         qk_bytes + (impl == attention_impl::sdpa ? 4 * k.t * (q - kv) : 0));
  }
  out.attention += L * attn_fwd * 3.5;
  out.attention_recompute += L * attn_fwd;
}

/// The model's parallel degrees as the roofline uses them.
struct model_split {
  double tp = 1;     ///< tensor-parallel ranks: heads, MLP width and vocabulary split
  bool sp = false;   ///< sequence parallelism: the norms, residuals and dropout split too
  double stage = 1;  ///< the slowest pipeline stage's share of the layers, ⌈L/p⌉/L
};

/// Elementwise traffic of one run, forward (backward ≈ 2×): norms read/write with an fp32 pass, SwiGLU reads
/// gate and up and writes the product, two residual adds, RoPE on q and k.
/// The widths are the model's (`m`), the MLP and norms the run's (`lm`). Under tensor parallelism the MLP's
/// and RoPE's tensors split; the norms' and residuals' are replicated unless sequence parallelism splits
/// them.
inline void add_elementwise_time(layer_times& out, const model_shape& m, const model_shape& lm,
                                 const roofline& roof, double t, double L, const model_split& split) {
  const double d = static_cast<double>(m.hidden_size), q = static_cast<double>(query_width(m));
  const double kv = static_cast<double>(kv_width(m));
  const double ff = static_cast<double>(is_moe(lm) ? lm.moe_intermediate_size * experts_run_per_token(lm)
                                                   : lm.intermediate_size);
  // A LayerNorm reads and writes once; StarCoder2's GELU reads c_fc's output and writes its own.
  const double norms = static_cast<double>(lm.norms_per_layer);
  const double norm_bytes = lm.norm == norm_kind::layer_norm ? 2 + 2 : 2 + 4 + 4 + 2;
  const double mlp_bytes = plain_mlp(lm) ? t * ff * (2 + 2) : t * ff * (2 + 2 + 2) * 2;
  const double replicated = split.sp ? split.tp : 1;
  const double elem_bytes = (norms * t * d * norm_bytes + 2 * t * d * 2 * 3) / replicated +
                            (mlp_bytes + t * (q + kv) * 2 * 2) / split.tp;
  out.elementwise += L * roof.time(0, elem_bytes) * 3;
  out.forward_only += L * (roof.time(0, elem_bytes));
}

/// Each run of uniform layers (DeepSeek: the dense first layers, then the MoE ones) times its layer count,
/// on one tensor-parallel rank of the slowest pipeline stage (its share of every run).
inline layer_times time_layers(const model_shape& m, const training_setup& s, const activation_config& a,
                               const roofline& roof, const roofline_tokens& k, const model_split& split) {
  layer_times out;
  for (const layer_group& run : layer_groups(m)) {
    const double L = static_cast<double>(run.layers) * split.stage;
    add_linear_times(out, run.shape, s, roof, k.t, L, split.tp);
    add_attention_time(out, m, a.attention, roof, k, L / split.tp);  // its heads: the same work per head
    add_elementwise_time(out, m, run.shape, roof, k.t, L, split);
    out.forward_kernels += L * layer_forward_kernels(run.shape, s, a);
  }
  return out;
}

/// Host side: eager PyTorch dispatches every op from Python; when that takes longer than the GPU runs the
/// kernels, the step waits for the host. Forward, about two launches per op in backward, a recomputed
/// forward, and the loss head's dozen ops.
inline double host_time(const layer_times& layers, checkpointing ckpt, const roofline_config& rc) {
  const double recomputed =
      recomputes_blocks(ckpt) || ckpt == checkpointing::selective ? layers.forward_kernels : 0;
  constexpr double loss_kernels =
      12;  // lm_head, float(), log_softmax, nll_loss, their backwards, the division
  return (3 * layers.forward_kernels + recomputed + loss_kernels) * rc.kernel_launch_s;
}

/// Loss head: lm_head forward + input gradient (+ weight gradient), and the loss's logits traffic; under
/// tensor parallelism one rank's share of the vocabulary (vocab-parallel head and cross-entropy).
inline double loss_head_time(const model_shape& m, const training_setup& s, loss_impl loss,
                             const roofline& roof, double t, double tp) {
  const double d = static_cast<double>(m.hidden_size), V = static_cast<double>(m.vocab_size) / tp;
  const bool head_trains = s.method == training_method::full;
  double head = gemm_time(roof, t, d, V, 1) * (head_trains ? 3 : 2);
  switch (loss) {
    case loss_impl::naive:
    case loss_impl::chunked_output:  // the same tensors, one chunk of them upcast at a time
    case loss_impl::linear_ce:       // (and per token chunk, on the trained rows)
      head += roof.time(0, t * V * (2 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 2));
      break;
    case loss_impl::chunked:
      head += roof.time(0, t * V * 4 * 8) + gemm_time(roof, t, d, V, 2);
      break;
    case loss_impl::fused_liger:
      head += roof.time(0, t * V * 2 * 3);
      break;
    case loss_impl::fused_cce:
      head += gemm_time(roof, t, d, V, 1);
      break;
  }
  return head;
}

/// The vision tower on the micro-batch's images (a multimodal batch): its linears, 2·P FLOPs per patch, and
/// its bidirectional attention, 4·patches²·width per layer, forward.
inline double vision_tower_forward_time(const vision_tower& v, double images, const roofline& roof) {
  const double patches = static_cast<double>(v.patches_per_image);
  const double tower_params = static_cast<double>(v.params);
  return roof.time(images * (2 * tower_params * patches +
                             4 * patches * patches * static_cast<double>(v.encoder.hidden_size) *
                                 static_cast<double>(v.encoder.num_hidden_layers)),
                   operand_bytes * tower_params);
}

/// The optimizer's update and gradient clipping, once per step.
struct update_times {
  double optimizer = 0;
  double grad_clipping = 0;
};

/// The update streams weights, grads, master and state: read and write each (bytes from the buckets); its
/// launches bound it from below. clip_grad_norm_ reads every gradient for the norm, then scales them.
inline update_times time_update(const static_estimate& st, const run_config& r, const roofline& roof,
                                const roofline_config& rc) {
  const training_setup& s = r.setup;
  const memory_buckets& b = st.buckets;
  double update_bytes =
      static_cast<double>(b.grads.count()) + 2.0 * static_cast<double>((b.master + b.optimizer).count()) +
      static_cast<double>((s.method == training_method::full ? b.weights : b.adapter_weights).count());
  // The step's temporaries are written and read once (fp32 state values).
  update_bytes +=
      2.0 * 4 *
      static_cast<double>(step_temporary_values(s.optimizer, s.optim.impl, s.runtime,
                                                st.trainable_params.count(), st.for_loop_step.count()));
  update_times out;
  out.optimizer = roof.time(0, update_bytes);
  // Its launches: a for-loop step runs each op per tensor; foreach and fused ones per list of at most 36
  // tensors at depth 4 (ATen MultiTensorApply.cuh depth_to_max_tensors). AdamW is about 8 ops.
  constexpr double update_ops = 8;
  constexpr std::uint64_t tensors_per_launch = 36;
  const double tensors = static_cast<double>(st.trainable_tensors);
  const double lists = static_cast<double>(ceil_div(st.trainable_tensors, tensors_per_launch));
  const optimizer_impl impl = resolved_impl(s.optimizer, s.optim.impl, s.runtime);
  const double update_kernels = impl == optimizer_impl::for_loop ? update_ops * tensors
                                : impl == optimizer_impl::fused  ? lists
                                                                 : update_ops * lists;
  out.optimizer = std::max(out.optimizer, update_kernels * rc.kernel_launch_s);
  // torch.nn.utils.clip_grad_norm_: _foreach_norm reads every gradient, then _foreach_mul_ scales them all by
  // the clamped coefficient (even when it is 1), a read and a write.
  const double grad_bytes = static_cast<double>(b.grads.count());
  if (rc.clip_grad_norm) out.grad_clipping = roof.time(0, 3 * grad_bytes);
  return out;
}

/// The GPU links the layout communicates over; refused when neither the GPU file nor the caller gives the
/// intra-node one.
inline comm_links links_of(const gpu_info& gpu, const roofline_config& rc, const parallel_config& par) {
  const double intra = intra_node_gb_s(gpu, rc);
  if (intra == 0)
    throw input_error("gpu", gpu.name +
                                 " lists no interconnect, so collectives between GPUs cannot be timed: give "
                                 "its GB/s per direction (--interconnect-gb-s)");
  return {intra * 1e9 * rc.interconnect_efficiency, rc.inter_node_gb_s * 1e9 * rc.interconnect_efficiency,
          par.node_gpus};
}

/// The step's data-parallel collectives (communication.hpp): the weights and gradients one rank of a replica
/// holds (a t·p-th of them), against a micro-batch's compute and its backward (the compute less the forward
/// and the recomputation).
inline comm_times time_comm(const model_spec& spec, const static_estimate& st, const run_config& r,
                            const comm_links& links, double micro, double forward, double recompute) {
  const memory_buckets& b = st.buckets;
  const bytes trained = r.setup.method == training_method::full ? b.weights : b.adapter_weights;
  const double split = static_cast<double>(r.parallel.tensor_parallel * r.parallel.pipeline_parallel);
  const double layers = static_cast<double>(std::max<std::uint64_t>(1, spec.shape.num_hidden_layers));
  const comm_volume v{static_cast<double>((b.weights + b.adapter_weights).count()) / split,
                      static_cast<double>(b.grads.count()) / split,
                      static_cast<double>(trained.count()) / split,
                      std::max(1.0, layers / static_cast<double>(r.parallel.pipeline_parallel))};
  const comm_compute c{micro, std::max(0.0, micro - forward - recompute), r.grad_accum_steps};
  return data_parallel_comm(r.parallel, v, c, links);
}

/// Ranks that split the optimizer step: tensor and pipeline parallelism's, and a sharded layout's data
/// parallel ones (each updates and clips its own shard).
inline double update_shards(const parallel_config& p) {
  const double model = static_cast<double>(p.tensor_parallel * p.pipeline_parallel);
  return p.shard == sharding::none ? model : model * static_cast<double>(shard_group(p));
}

/// The layout as the roofline splits the model: t ranks per layer, the slowest stage's ⌈L/p⌉ of L layers.
inline model_split split_of(const model_shape& m, const parallel_config& p) {
  const std::uint64_t L = std::max<std::uint64_t>(1, m.num_hidden_layers);
  return {static_cast<double>(p.tensor_parallel), p.sequence_parallel,
          static_cast<double>(ceil_div(L, p.pipeline_parallel)) / static_cast<double>(L)};
}

/// Tensor parallelism's all-reduces and a pipeline stage's sends for one micro-batch (communication.hpp).
inline comm_times time_model_parallel(const model_shape& m, const run_config& r, checkpointing ckpt,
                                      const roofline_tokens& k, const model_split& split,
                                      const comm_links& links) {
  const model_parallel_volume v{k.t * static_cast<double>(m.hidden_size) * operand_bytes, k.t,
                                split.stage * static_cast<double>(m.num_hidden_layers),
                                recomputes_blocks(ckpt)};
  comm_times t;
  t.tensor_parallel = tensor_parallel_comm_s(r.parallel, v, links);
  t.pipeline_send = pipeline_send_s(r.parallel, v, links);
  return t;
}
}  // namespace detail

/// Predicts one optimizer step of `r` on `gpu`: each time component from its own function, composed here.
[[nodiscard]] inline throughput_estimate predict_throughput(const model_spec& spec, const run_config& r,
                                                            const gpu_info& gpu,
                                                            const roofline_config& rc = {}) {
  detail::check_roofline_inputs(rc, r.parallel);
  validate(gpu);
  const model_shape& m = spec.shape;
  const training_setup& s = r.setup;
  const flops peak = gpu.peak(compute_dtype_for(s.precision));
  const detail::roofline roof{peak.count() * rc.matmul_efficiency,
                              gpu.bandwidth_gb_s * 1e9 * rc.bandwidth_efficiency};
  const activation_config a = with_image_tokens(spec, r.activations);  // + a multimodal batch's image tokens
  detail::validate_inputs(m, a);
  validate_layout(m, r.parallel);  // heads divisible by the tensor-parallel ranks, a layer per stage
  if (r.grad_accum_steps == 0) throw input_error("gradient_accumulation_steps", "must be a positive integer");
  const detail::roofline_tokens k{static_cast<double>(detail::checked_mul(a.batch, a.seq_len, "tokens")),
                                  static_cast<double>(a.batch), static_cast<double>(a.seq_len)};
  const detail::model_split split = detail::split_of(m, r.parallel);
  const detail::layer_times layers = detail::time_layers(m, s, a, roof, k, split);
  step_time_parts p;
  p.matmuls = layers.matmuls;
  p.attention = layers.attention;
  p.elementwise = layers.elementwise;
  p.loss_head = detail::loss_head_time(m, s, r.loss.impl, roof, k.t, split.tp);  // the last stage's
  if (recomputes_blocks(a.ckpt)) p.recompute = layers.forward_only + layers.attention_recompute;
  if (a.ckpt == checkpointing::selective) p.recompute = layers.forward_only;
  // A trained tower also back-propagates (2× more) and, under checkpointing, recomputes (1× more).
  if (r.activations.images != 0) {
    const double tower_forward = detail::vision_tower_forward_time(
        spec.vision, k.batch * static_cast<double>(r.activations.images), roof);
    p.matmuls += tower_forward * (s.train_vision_tower ? 3 : 1);
    if (s.train_vision_tower && recomputes_blocks(a.ckpt)) p.recompute += tower_forward;
  }
  const double host_micro = detail::host_time(layers, a.ckpt, rc);
  // Every micro-batch repeats the above; the optimizer runs once per step.
  double micro = p.matmuls + p.attention + p.elementwise + p.loss_head + p.recompute;
  if (host_micro > micro) {
    p.launch_bound = host_micro - micro;
    micro = host_micro;
  }
  const double accum = static_cast<double>(r.grad_accum_steps);
  for (double* part : {&p.matmuls, &p.attention, &p.elementwise, &p.loss_head, &p.recompute, &p.launch_bound})
    *part *= accum;
  const static_estimate statics =
      estimate_static(spec, s, r.basis);  // the update's and the collectives' bytes
  const detail::update_times update = detail::time_update(statics, r, roof, rc);
  const double shards = detail::update_shards(r.parallel);
  p.optimizer = update.optimizer / shards;
  p.grad_clipping = update.grad_clipping / shards;

  throughput_estimate e;
  double stage_micro = micro;   // one micro-batch on the slowest stage, its exposed transfers included
  if (r.parallel.gpus() > 1) {  // one GPU communicates nothing and computes none of this
    const comm_links links = detail::links_of(gpu, rc, r.parallel);
    e.comm = detail::time_model_parallel(m, r, a.ckpt, k, split, links);
    stage_micro += e.comm.tensor_parallel + e.comm.pipeline_send;  // per micro-batch, none of it hidden
    e.comm.tensor_parallel *= accum;
    e.comm.pipeline_send *= accum;
    if (r.parallel.data_parallel > 1) {
      const double forward = layers.forward_only + layers.attention_recompute + p.loss_head / (3 * accum);
      const comm_times dp = detail::time_comm(spec, statics, r, links, micro, forward, p.recompute / accum);
      e.comm.all_reduce = dp.all_reduce;
      e.comm.all_gather = dp.all_gather;
      e.comm.reduce_scatter = dp.reduce_scatter;
      e.comm.exposed = dp.exposed;
    }
    e.comm.exposed += e.comm.tensor_parallel + e.comm.pipeline_send;
    p.communication = e.comm.exposed;
    p.pipeline_bubble = pipeline_bubble_s(r.parallel.pipeline_parallel, stage_micro);
  }
  e.parts = p;
  e.step_time = seconds(micro * accum + p.optimizer + p.grad_clipping + p.communication + p.pipeline_bubble);
  const double computed_tokens = k.t * accum;
  const double trained = computed_tokens * (1.0 - rc.padding_waste);
  // A replica's t·p GPUs share its tokens: the rates are per GPU.
  const double replica_gpus = static_cast<double>(r.parallel.tensor_parallel * r.parallel.pipeline_parallel);
  e.tokens_per_step = static_cast<std::uint64_t>(trained);
  e.tokens_per_second = trained / e.step_time.count() / replica_gpus;
  e.per_token =
      flops_per_token(m, s, detail::credited_params(spec, r.basis), a.seq_len, rc.convention, a.ckpt);
  e.mfu = e.tokens_per_second * e.per_token.model.count() / peak.count();
  e.hfu =
      (computed_tokens / e.step_time.count() / replica_gpus) * e.per_token.hardware.count() / peak.count();
  return e;
}

}  // namespace headroom
