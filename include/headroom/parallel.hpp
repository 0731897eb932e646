// SPDX-License-Identifier: MIT
// Across GPUs: ZeRO-1/2/3 and FSDP sharding of each bucket, CPU offload of optimizer state and
// parameters, tensor / sequence parallelism for activations (Korthikanti et al. 2022), pipeline
// stages, and a solver for the fewest GPUs and the simplest layout that fit (docs/parallel.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "memory.hpp"
#include "model.hpp"

namespace headroom {

enum class sharding : std::uint8_t {
  none,          ///< DDP: every rank holds everything
  zero1,         ///< DeepSpeed ZeRO-1: optimizer state (and master) partitioned
  zero2,         ///< + gradients partitioned
  zero3,         ///< + parameters partitioned, gathered layer by layer
  fsdp_full,     ///< FSDP full_shard (like ZeRO-3)
  fsdp_grad_op,  ///< FSDP shard_grad_op (like ZeRO-2)
  fsdp_hybrid,   ///< FSDP hybrid_shard: full_shard inside a node, replicated across nodes
};
inline constexpr std::array<named<sharding>, 7> sharding_names{{{"none", sharding::none},
                                                                {"zero1", sharding::zero1},
                                                                {"zero2", sharding::zero2},
                                                                {"zero3", sharding::zero3},
                                                                {"full_shard", sharding::fsdp_full},
                                                                {"shard_grad_op", sharding::fsdp_grad_op},
                                                                {"hybrid_shard", sharding::fsdp_hybrid}}};

/// A switch whose default depends on the framework's own rule.
enum class comm_switch : std::uint8_t { framework_default, off, on };

/// The most GPUs a layout may use, and the most of any one kind (a million; larger is a typo).
inline constexpr std::uint64_t max_parallel_gpus = std::uint64_t{1} << 20;

struct parallel_config {
  std::uint64_t data_parallel = 1;  ///< ranks that shard (or replicate) the state
  sharding shard = sharding::none;
  std::uint64_t node_gpus = 8;  ///< hybrid_shard's shard group
  bool offload_optimizer =
      false;  ///< ZeRO-Offload / FSDP cpu_offload: master, state (and fp32 grads) in host RAM
  bool offload_params = false;          ///< ZeRO-3 offload_param / FSDP offload_params: weights in host RAM
  std::uint64_t tensor_parallel = 1;    ///< t
  bool sequence_parallel = false;       ///< shard the TP-replicated activations too
  std::uint64_t pipeline_parallel = 1;  ///< p stages; the first keeps p micro-batches in flight
  std::uint64_t fsdp_version = 1;    ///< FSDP1 (FlatParameter per unit) or FSDP2 (fully_shard, per-parameter)
  std::uint64_t prefetch_units = 1;  ///< FSDP units all-gathered ahead of the one computing (BACKWARD_PRE: 1)
  std::uint64_t reduce_bucket_elements = 500'000'000;  ///< DeepSpeed reduce_bucket_size (zero/config.py: 5e8)
  comm_switch overlap_comm =
      comm_switch::framework_default;    ///< DeepSpeed overlap_comm (default: stage 3 only)
  bool gradient_as_bucket_view = false;  ///< DDP: gradients are views into the all-reduce buckets (no copy)
  std::uint64_t nccl_channels = 32;      ///< NCCL channels per communicator (NVLink GPUs use 16-32)
  bool sync_each_batch =
      false;  ///< accelerate's sync_each_batch: reduce gradients every micro-batch (default:
              ///< no_sync until the last, every rank keeping its unsharded gradients)
  bool use_orig_params = false;  ///< FSDP1's use_orig_params: the optimizer steps views of the original
                                 ///< parameters (accelerate's plugin default false; the Trainer's true)
  [[nodiscard]] constexpr std::uint64_t gpus() const {
    return detail::checked_mul(detail::checked_mul(data_parallel, tensor_parallel, "GPUs"), pipeline_parallel,
                               "GPUs");
  }
};

/// The communication buffers of a layout on one GPU, each a named term (docs/parallel.md).
struct comm_buffers {
  bytes gathered{0};  ///< parameters all-gathered at once: the unit computing and those prefetched
  bytes staging{0};   ///< FSDP2: the flat all-gather output while it is copied out into the parameters
  bytes reduce{
      0};  ///< gradient reduction in backward: DDP buckets, DeepSpeed IPG buckets, FSDP's unit gradients
  bytes nccl{0};  ///< NCCL communicator buffers (cudaMalloc'd by NCCL: outside the caching allocator)
  std::uint64_t communicators = 0;  ///< NCCL communicators (one per parallel dimension above 1)
};

/// FSDP1's FlatParameters (torch/distributed/fsdp/_flat_param.py): a unit per decoder layer
/// (transformer_auto_wrap_policy) and the root (embedding, final norm, untied head), each flattened, padded
/// to a multiple of the ranks and split into equal slices (FlatParamHandle._get_shard); the optimizer steps
/// the slices.
struct fsdp_flat_units {
  std::uint64_t count = 0;      ///< FlatParameters (0: not priced unit by unit)
  params root{0};               ///< the root unit, unsharded
  params all{0};                ///< every unit, unsharded
  params shards{0};             ///< one rank's slices of every unit
  params root_shard{0};         ///< its slice of the root
  params largest_layer{0};      ///< the largest layer unit, unsharded
  params first_layer{0};        ///< the first layer's unit (the first wrapped), unsharded
  params first_layer_shard{0};  ///< its slice
  params step_values{0};  ///< a for-loop optimizer step's worst moment over the slices (for_loop_step_values)
  std::uint64_t optimizer_tensors = 0;  ///< tensors the optimizer steps: FlatParameters, or rank 0's views
  std::uint64_t weight_bytes = 0;       ///< bytes per FlatParameter value (fp32 under MixedPrecision)
  std::uint64_t grad_bytes = 0;     ///< bytes per sharded gradient value (cast to the FlatParameter's dtype)
  std::uint64_t compute_bytes = 0;  ///< bytes per gathered parameter and unsharded gradient value
};

/// One GPU's static state under a layout, and what leaves for host RAM.
struct sharded_state {
  memory_buckets per_gpu{};  ///< static buckets on one GPU (temporaries: gathered parameters + staging)
  bytes host{0};             ///< offloaded to CPU RAM per GPU
  comm_buffers comm{};       ///< communication buffers (reduce: backward only; nccl: the overhead bucket)
};

namespace detail {
constexpr bool is_deepspeed(sharding s) {
  return s == sharding::zero1 || s == sharding::zero2 || s == sharding::zero3;
}
constexpr bool is_fsdp(sharding s) {
  return s == sharding::fsdp_full || s == sharding::fsdp_grad_op || s == sharding::fsdp_hybrid;
}
/// The ranks one shard is split over: all of them, or hybrid_shard's node.
constexpr std::uint64_t shard_group(const parallel_config& p) {
  return p.shard == sharding::fsdp_hybrid ? (p.data_parallel < p.node_gpus ? p.data_parallel : p.node_gpus)
                                          : p.data_parallel;
}
constexpr bool shards_params(sharding s) {
  return s == sharding::zero3 || s == sharding::fsdp_full || s == sharding::fsdp_hybrid;
}
/// Parameters of the largest unit gathered at once: a decoder layer (FSDP's wrap unit) or the
/// embedding / head, whichever is larger (DeepSpeed's "largest layer").
constexpr std::uint64_t largest_unit_params(const model_shape& m) {
  validate(m);
  std::uint64_t largest = checked_mul(m.vocab_size, m.hidden_size, "embedding");  // embed_tokens, lm_head
  for_each_layer_group(m, [&](const model_shape& kind, std::uint64_t) {  // DeepSeek: dense first, then MoE
    const std::uint64_t layer = layer_parameter_count(kind).count();
    largest = layer > largest ? layer : largest;
  });
  return largest;
}
constexpr bytes div_up(bytes b, std::uint64_t n) { return bytes(ceil_div(b.count(), n)); }

/// FSDP1 is priced unit by unit when its FlatParameters are the whole model's full fine-tuning on one
/// data-parallel group, on exact parameter counts (a nominal N has no units), without offload or model
/// parallelism (those keep the bucket-wise shares below). bf16_mixed is FSDP1's MixedPrecision.
constexpr bool flat_units_layout(const training_setup& s, const parallel_config& p, params_basis basis) {
  return is_fsdp(p.shard) && p.fsdp_version == 1 && s.method == training_method::full &&
         !s.train_vision_tower && p.tensor_parallel == 1 && p.pipeline_parallel == 1 &&
         !p.offload_optimizer && !p.offload_params && basis == params_basis::exact;
}
constexpr bool prices_flat_units(const static_estimate& st, const training_setup& s,
                                 const parallel_config& p) {
  return flat_units_layout(s, p, params_basis::exact) && st.priced_params == st.model_params;
}
/// bf16_mixed under FSDP1 is accelerate's MixedPrecision(param_dtype, reduce_dtype = bf16)
/// (FullyShardedDataParallelPlugin.set_mixed_precision): the FlatParameters, their gradient slices and the
/// optimizer stay fp32 (the master copy is the FlatParameter), and each unit is gathered in bf16.
constexpr bool fsdp_mixed_precision(const training_setup& s) {
  return s.precision == precision_route::bf16_mixed;
}

/// The units of fsdp_flat_units for `ranks` ranks, in model.parameters() order (the root's FlatParameter
/// first); `buffers`: a for-loop step's temporaries per value (optimizer_info::buffers).
constexpr fsdp_flat_units fsdp_flat_units_of(const model_shape& m, std::uint64_t ranks,
                                             std::uint64_t buffers) {
  fsdp_flat_units u;
  u.count = 1 + m.num_hidden_layers;
  u.root = params(model_level_parameters(m));
  u.root_shard = params(ceil_div(u.root.count(), ranks));
  std::uint64_t all = u.root.count(), shards = u.root_shard.count(), previous = shards;
  std::uint64_t worst = checked_mul(buffers, previous, "optimizer temporaries");
  for_each_layer_group(m, [&](const model_shape& kind, std::uint64_t layers) {
    const std::uint64_t unit = layer_parameter_count(kind).count(), slice = ceil_div(unit, ranks);
    if (unit > u.largest_layer.count()) u.largest_layer = params(unit);
    if (u.first_layer.count() == 0) {
      u.first_layer = params(unit);
      u.first_layer_shard = params(slice);
    }
    all = checked_add(all, checked_mul(unit, layers), "parameter count");
    shards = checked_add(shards, checked_mul(slice, layers), "parameter count");
    // The group's first slice follows the previous unit's; the others follow one of their own.
    const std::uint64_t held = checked_add(checked_mul(buffers, slice, "optimizer temporaries"),
                                           layers > 1 && slice > previous ? slice : previous);
    worst = held > worst ? held : worst;
    previous = slice;
  });
  u.all = params(all);
  u.shards = params(shards);
  u.step_values = params(worst);
  u.optimizer_tensors = u.count;
  return u;
}

/// use_orig_params: the optimizer steps a view of each original parameter that has values in the rank's
/// slice of its unit (_flat_param.py FlatParamHandle._use_sharded_views; one with none has no gradient and no
/// state). For rank 0 (the first ⌈U/N⌉ values of each unit, its tensors in registration order): the views,
/// and a for-loop step's worst moment in model.parameters() order (embedding, layers, final norm, head),
/// where a view's temporaries meet the previous view's last one (fsdp_flat_units_of's rule, view by view).
struct first_rank_views {
  std::uint64_t count = 0;        ///< original parameters with values on rank 0
  std::uint64_t step_values = 0;  ///< the for-loop step's worst moment, in values
};
constexpr first_rank_views first_rank_views_of(const model_shape& m, std::uint64_t ranks,
                                               std::uint64_t buffers) {
  first_rank_views v;
  std::uint64_t previous = 0;
  auto view = [&](std::uint64_t numel, std::uint64_t& offset, std::uint64_t slice) {
    const std::uint64_t held = offset < slice ? (numel < slice - offset ? numel : slice - offset) : 0;
    offset = checked_add(offset, numel, "parameter count");
    if (held == 0) return;
    ++v.count;
    const std::uint64_t moment = checked_add(checked_mul(buffers, held, "optimizer temporaries"), previous);
    v.step_values = moment > v.step_values ? moment : v.step_values;
    previous = held;
  };
  const std::uint64_t d = m.hidden_size, table = checked_mul(m.vocab_size, d, "embedding");
  const std::uint64_t root_slice = ceil_div(model_level_parameters(m), ranks);
  std::uint64_t root_offset = 0;
  view(table, root_offset, root_slice);  // embed_tokens, the root's first tensor
  for (std::uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    const std::uint64_t moe = moe_layer(m, layer) ? 1 : 0;
    const layer_run run{1, 1 - moe, moe, true};
    std::uint64_t unit = 0, offset = 0;
    auto sum = [&](const param_tensor& t) { unit += t.copies != 0 && t.rows != 0 ? t.numel() : 0; };
    visit_layer(m, run, sum);
    const std::uint64_t slice = ceil_div(unit, ranks);
    auto emit = [&](const param_tensor& t) {
      if (t.copies != 0 && t.rows != 0) view(t.numel(), offset, slice);
    };
    visit_layer(m, run, emit);
  }
  for (std::uint64_t i = 0; i < norm_tensors(m); ++i) view(d, root_offset, root_slice);  // the final norm
  if (!m.tie_word_embeddings) view(table, root_offset, root_slice);                      // lm_head
  return v;
}
}  // namespace detail

/// NCCL's per-connection buffers for its three protocols (nccl src/init.cc computeBuffSizes, device.h):
/// LL = 8 lines/thread · 512 threads · 8 steps · 16 B; LL128 = 120 elements/thread · 640 threads · 8 steps
/// · 8 B; Simple = 4 MiB (NCCL_BUFFSIZE). A ring channel holds one such set per GPU.
inline constexpr std::uint64_t nccl_ll_bytes = 8ull * 512 * 8 * 16;
inline constexpr std::uint64_t nccl_ll128_bytes = 120ull * 640 * 8 * 8;
inline constexpr std::uint64_t nccl_simple_bytes = std::uint64_t{1} << 22;
inline constexpr std::uint64_t nccl_channel_bytes = nccl_ll_bytes + nccl_ll128_bytes + nccl_simple_bytes;

/// Throws input_error naming the first GPU count that is zero or absurd, or an impossible combination.
constexpr void validate(const parallel_config& p) {
  detail::require_size(p.data_parallel, "data_parallel", max_parallel_gpus);
  detail::require_size(p.tensor_parallel, "tensor_parallel", max_parallel_gpus);
  detail::require_size(p.pipeline_parallel, "pipeline_parallel", max_parallel_gpus);
  detail::require_size(p.node_gpus, "node_gpus", max_parallel_gpus);
  if (p.fsdp_version != 1 && p.fsdp_version != 2) detail::fail("fsdp_version", "must be 1 or 2");
  if (p.prefetch_units > 64) detail::fail("prefetch_units", "is absurdly large (FSDP prefetches 1 unit)");
  detail::require_size(p.reduce_bucket_elements, "reduce_bucket_size", std::uint64_t{1} << 40);
  detail::require_size(p.nccl_channels, "nccl_channels", 64);  // MAXCHANNELS (nccl device.h)
  if (p.gpus() > max_parallel_gpus)
    detail::fail("parallel layout", "data x tensor x pipeline is absurdly large");
  if (p.offload_params && !detail::shards_params(p.shard))
    detail::fail("offload_params", "needs parameter sharding (zero3 or FSDP full/hybrid shard)");
  if (p.sequence_parallel && p.tensor_parallel == 1)
    detail::fail("sequence_parallel", "needs tensor_parallel > 1");
  if (p.use_orig_params && (!detail::is_fsdp(p.shard) || p.fsdp_version != 1))
    detail::fail("use_orig_params",
                 "is FSDP1's flag: it needs FSDP with fsdp_version 1 (FSDP2 always steps the "
                 "original parameters)");
}

namespace detail {
// Messages with numbers, built off the constexpr path (fail's trick: reaching it at compile time is an
// error).
[[noreturn]] HEADROOM_COLD inline void fail_tensor_parallel(std::uint64_t heads, std::uint64_t kv,
                                                            std::uint64_t tp) {
  throw input_error("tensor_parallel", "must divide the attention heads and the KV heads (the model has " +
                                           std::to_string(heads) + " and " + std::to_string(kv) +
                                           "; tensor_parallel is " + std::to_string(tp) + ")");
}
[[noreturn]] HEADROOM_COLD inline void fail_pipeline_parallel(std::uint64_t layers, std::uint64_t pp) {
  throw input_error("pipeline_parallel", "is above the layer count (" + std::to_string(layers) +
                                             " layers; pipeline_parallel is " + std::to_string(pp) +
                                             "): a stage holds at least one layer");
}

/// validate_layout for a parallel_config already validated (the step's, checked by shard_static).
constexpr void check_layout_fits(const model_shape& m, const parallel_config& p) {
  if (m.num_attention_heads % p.tensor_parallel != 0 || m.num_key_value_heads % p.tensor_parallel != 0)
    fail_tensor_parallel(m.num_attention_heads, m.num_key_value_heads, p.tensor_parallel);
  if (p.pipeline_parallel > m.num_hidden_layers)
    fail_pipeline_parallel(m.num_hidden_layers, p.pipeline_parallel);
}
}  // namespace detail
/// A layout the model can have: tensor parallelism splits the attention heads and the KV heads (Megatron's
/// column-parallel q/k/v need both divisible), and a pipeline stage holds at least one layer.
constexpr void validate_layout(const model_shape& m, const parallel_config& p) {
  validate(p);
  detail::check_layout_fits(m, p);
}

namespace detail {
/// communication_buffers for a parallel_config already validated (shard_static's).
constexpr comm_buffers communication_buffers_of_valid(const model_shape& m, const static_estimate& st,
                                                      const training_setup& s, const parallel_config& p) {
  comm_buffers c;
  if (p.gpus() == 1 && p.shard == sharding::none) return c;  // one GPU: nothing to communicate
  const std::uint64_t b = detail::weight_bytes(s.precision);
  const std::uint64_t n = detail::shard_group(p);
  const std::uint64_t unit = detail::ceil_div(detail::largest_unit_params(m), p.tensor_parallel);
  const bool full = s.method == training_method::full;
  // The gradients one unit produces: all of it in full fine-tuning; its share of the adapters otherwise.
  const std::uint64_t unit_grads =
      full ? unit : detail::ceil_div(st.trainable_params.count(), m.num_hidden_layers * p.tensor_parallel);
  const auto of = [b](std::uint64_t values) {
    return bytes(detail::checked_mul(values, b, "communication buffer"));
  };
  if (p.shard == sharding::zero3) {
    c.gathered = of(2 * unit);  // DeepSpeed's estimator: 4·LL bytes, the unit computing and one prefetched
  } else if (detail::is_fsdp(p.shard) && detail::shards_params(p.shard)) {
    c.gathered = of((1 + p.prefetch_units) * unit);
    if (p.fsdp_version == 2) c.staging = of(unit);  // foreach_all_gather's output, copied out per parameter
  }
  if (p.data_parallel > 1 || p.shard != sharding::none) {
    switch (p.shard) {
      case sharding::none:  // DDP's Reducer copies every gradient into its buckets unless they are views
        c.reduce = p.gradient_as_bucket_view ? bytes(0) : detail::div_up(st.buckets.grads, p.tensor_parallel);
        break;
      case sharding::zero1:
      case sharding::zero2: {  // stage_1_and_2.py setup_buckets: one IPG buffer, two with overlap_comm
        const bool overlap = p.overlap_comm == comm_switch::on;
        c.reduce = of(p.reduce_bucket_elements * (overlap ? 2 : 1));
        break;
      }
      case sharding::zero3:  // stage3.py: the IPG buffer, and the unit's gradients before they are copied in
        c.reduce = of(p.reduce_bucket_elements) + of(unit_grads);
        break;
      case sharding::fsdp_full:
      case sharding::fsdp_grad_op:
      case sharding::fsdp_hybrid:
        // FSDP1 (_runtime_utils.py _reduce_grad): the unit's padded flat gradient — all of the FlatParameter,
        // frozen parts included — and the new sharded gradient. FSDP2 (_fsdp_collectives.py foreach_reduce):
        // the unit's trainable gradients, their flat reduce-scatter input, and its output.
        c.reduce = p.fsdp_version == 1 ? of(unit + detail::ceil_div(unit, n))
                                       : of(2 * unit_grads + detail::ceil_div(unit_grads, n));
        break;
    }
  }
  c.communicators = (p.data_parallel > 1 ? 1u : 0u) + (p.tensor_parallel > 1 ? 1u : 0u) +
                    (p.pipeline_parallel > 1 ? 1u : 0u) +
                    (p.shard == sharding::fsdp_hybrid && p.data_parallel > p.node_gpus ? 1u : 0u);
  c.nccl = bytes(detail::checked_mul(c.communicators * p.nccl_channels, nccl_channel_bytes, "NCCL buffers"));
  return c;
}
}  // namespace detail
/// The communication buffers one GPU holds under a layout (docs/parallel.md, "Communication buffers"). A
/// unit is the largest block gathered at once (largest_unit_params), split by tensor parallelism.
[[nodiscard]] constexpr comm_buffers communication_buffers(const model_shape& m, const static_estimate& st,
                                                           const training_setup& s,
                                                           const parallel_config& p) {
  validate(p);
  return detail::communication_buffers_of_valid(m, st, s, p);
}

/// What the reduce term holds under a layout, with its source (for --explain).
[[nodiscard]] constexpr std::string_view reduce_mechanism(const parallel_config& p) {
  switch (p.shard) {
    case sharding::none:
      return p.gradient_as_bucket_view ? "DDP buckets are the gradients (gradient_as_bucket_view)"
                                       : "DDP Reducer buckets, a copy of every gradient";
    case sharding::zero1:
    case sharding::zero2:
      return "DeepSpeed IPG buffer(s) of reduce_bucket_size, two with overlap_comm (stage_1_and_2.py)";
    case sharding::zero3:
      return "DeepSpeed IPG buffer and one unit's gradients (stage3.py)";
    case sharding::fsdp_full:
    case sharding::fsdp_grad_op:
    case sharding::fsdp_hybrid:
      return p.fsdp_version == 1
                 ? "FSDP1 padded flat gradient of a unit and its shard (_runtime_utils.py)"
                 : "FSDP2 unit gradients, reduce-scatter input and output (_fsdp_collectives.py)";
  }
  return "";
}

/// The FlatParameters of this run when FSDP1 is priced unit by unit (detail::prices_flat_units), with the
/// bytes of a weight and a gradient value; count 0 otherwise.
[[nodiscard]] constexpr fsdp_flat_units fsdp_flat_units_for(const model_shape& m, const static_estimate& st,
                                                            const training_setup& s,
                                                            const parallel_config& p) {
  if (!detail::prices_flat_units(st, s, p)) return {};
  fsdp_flat_units u = detail::fsdp_flat_units_of(m, detail::shard_group(p), s.optimizer.buffers.per_tensor);
  u.compute_bytes = detail::weight_bytes(s.precision);
  // MixedPrecision: _cast_grad_to_param_dtype casts each reduced slice to the FlatParameter's fp32.
  const bool mixed = detail::fsdp_mixed_precision(s);
  u.weight_bytes = mixed ? detail::fp32_bytes : u.compute_bytes;
  u.grad_bytes = mixed ? detail::fp32_bytes : st.buckets.grads.count() / st.trainable_params.count();
  if (p.use_orig_params) {
    const detail::first_rank_views v =
        detail::first_rank_views_of(m, detail::shard_group(p), s.optimizer.buffers.per_tensor);
    u.optimizer_tensors = v.count;
    u.step_values = params(v.step_values);
  }
  return u;
}

namespace detail {
/// shard_static for FSDP1's FlatParameters: each unit's slice of the weights, gradients and optimizer state
/// (one state tensor and one `step` per FlatParameter). The root unit (full_shard) or every unit
/// (shard_grad_op) stays gathered from the forward to its post-backward, where the root's gradients exist
/// twice: its parameters' own and the flat gradient they are concatenated into (the FlatParameter's
/// AccumulateGrad) before the reduce-scatter.
constexpr sharded_state shard_flat_units(const model_shape& m, const static_estimate& st,
                                         const training_setup& s, const parallel_config& p,
                                         const fsdp_flat_units& u, sharded_state out) {
  const std::uint64_t n = shard_group(p), wb = u.weight_bytes;
  memory_buckets b = st.buckets;
  b.weights = per_param(u.shards, wb);
  b.master = bytes(0);  // MixedPrecision's fp32 copy is the FlatParameter itself
  b.grads = per_param(u.shards, u.grad_bytes);
  b.optimizer = tensor_state(lumped_tensor(u.root_shard.count()), s) +
                optimizer_step_counter_bytes(s.optimizer, u.optimizer_tensors, s.runtime);
  for_each_layer_group(m, [&](const model_shape& kind, std::uint64_t layers) {
    b.optimizer += tensor_state(lumped_tensor(ceil_div(layer_parameter_count(kind).count(), n)), s) * layers;
  });
  out.comm.gathered = per_param(p.shard == sharding::fsdp_grad_op ? u.all : u.root, u.compute_bytes);
  out.comm.staging = bytes(0);
  out.comm.reduce = per_param(u.root, 2 * u.compute_bytes);
  b.temporaries = out.comm.gathered;
  out.per_gpu = b;
  return out;
}
}  // namespace detail

/// FSDP1 wrapping a whole model already on the rank (_flat_param.py FlatParamHandle: flatten_tensors, then
/// shard): unit by unit, the layers first and the root last, a unit's parameters are concatenated into its
/// FlatParameter and this rank's slice copied out before the unsharded ones are freed. The bytes above the
/// whole model at the worst moment: the first layer's (nothing sharded yet) or the root's (every layer
/// already down to its slice).
[[nodiscard]] constexpr bytes fsdp_wrap_transient(const fsdp_flat_units& u) {
  const std::uint64_t first = u.first_layer.count() + u.first_layer_shard.count();
  const std::uint64_t root = u.root.count() + u.root_shard.count();
  const std::uint64_t layers_freed =
      (u.all.count() - u.root.count()) - (u.shards.count() - u.root_shard.count());
  const std::uint64_t root_moment = root > layers_freed ? root - layers_freed : 0;
  return detail::per_param(params(first > root_moment ? first : root_moment), u.weight_bytes);
}

/// Shards one GPU's share of the static state. DeepSpeed keeps an fp32 gradient partition for the
/// optimizer (its estimators' 2P + 18P/N for ZeRO-2 and 4·LL + 18P/N for ZeRO-3 with AdamW);
/// ZeRO-3 and FSDP gather two units at once (the one computing and the one prefetched).
[[nodiscard]] constexpr sharded_state shard_static(const model_shape& m, const static_estimate& st,
                                                   const training_setup& s, const parallel_config& p) {
  validate(p);
  sharded_state out;
  out.comm = detail::communication_buffers_of_valid(m, st, s, p);
  if (p.shard == sharding::none && p.tensor_parallel == 1 && p.pipeline_parallel == 1 &&
      !p.offload_optimizer && !p.offload_params) {
    out.per_gpu = st.buckets;  // one GPU's copy of everything: nothing to split
    return out;
  }
  if (detail::prices_flat_units(st, s, p))
    return detail::shard_flat_units(m, st, s, p, fsdp_flat_units_for(m, st, s, p), out);
  memory_buckets b = st.buckets;
  // Tensor and pipeline parallelism split every layer's weights (norms are small and ignored).
  const std::uint64_t split = p.tensor_parallel * p.pipeline_parallel;
  for (bytes memory_buckets::*f :
       {&memory_buckets::weights, &memory_buckets::adapter_weights, &memory_buckets::grads,
        &memory_buckets::master, &memory_buckets::optimizer})
    b.*f = detail::div_up(b.*f, split);
  const std::uint64_t n = detail::shard_group(p);
  const bytes fp32_grad_partition =
      detail::is_deepspeed(p.shard)
          ? detail::div_up(detail::per_param(st.trainable_params, detail::fp32_bytes), split * n)
          : bytes(0);
  if (p.shard != sharding::none) {
    b.master = detail::div_up(b.master, n);
    b.optimizer = detail::div_up(b.optimizer, n);
  }
  if (p.shard == sharding::zero2 || p.shard == sharding::fsdp_grad_op) b.grads = detail::div_up(b.grads, n);
  if (detail::shards_params(p.shard)) {
    b.weights = detail::div_up(b.weights, n);
    b.adapter_weights = detail::div_up(b.adapter_weights, n);
    // ZeRO-3 reduce-scatters straight into the fp32 partition; FSDP keeps sharded grads.
    b.grads = p.shard == sharding::zero3 ? bytes(0) : detail::div_up(b.grads, n);
    b.temporaries = out.comm.gathered + out.comm.staging;
  }
  b.grads += fp32_grad_partition;
  if (p.offload_optimizer) {
    out.host += b.master + b.optimizer + fp32_grad_partition;
    b.master = bytes(0);
    b.optimizer = bytes(0);
    b.grads = b.grads - fp32_grad_partition;
  }
  if (p.offload_params) {
    out.host += b.weights + b.adapter_weights;
    b.weights = bytes(0);
    b.adapter_weights = bytes(0);
  }
  out.per_gpu = b;
  return out;
}

/// Activations on one GPU relative to one GPU without model parallelism: Korthikanti et al. 2022 —
/// tensor parallel keeps sbh·(10 + 24/t + 5as/(ht)) per layer (the 10 is replicated), sequence
/// parallel sbh·(34/t + 5as/(ht)); the first pipeline stage holds p micro-batches of L/p layers,
/// i.e. L layers' worth, so pipelining does not shrink it. Returned as numerator/denominator.
struct activation_scale {
  std::uint64_t num = 1;
  std::uint64_t den = 1;
};
[[nodiscard]] constexpr activation_scale tensor_parallel_activation_scale(const parallel_config& p) {
  const std::uint64_t t = p.tensor_parallel;
  if (t == 1) return {1, 1};
  if (p.sequence_parallel) return {1, t};
  return {10 * t + 24, 34 * t};  // (10 + 24/t) / 34 of the 34·sbh part
}

}  // namespace headroom
