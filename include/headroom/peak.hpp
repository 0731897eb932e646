// SPDX-License-Identifier: MIT
// The peak of a training step: static state, activations, logits, temporaries and overhead
// composed per phase (end of forward, start of backward, end of backward, optimizer step), and
// the solvers built on it: fits(), max_seq_len(), max_batch().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "activations/estimate.hpp"
#include "choices.hpp"
#include "load.hpp"
#include "logits.hpp"
#include "memory.hpp"
#include "overhead.hpp"
#include "parallel.hpp"
#include "vision.hpp"

namespace headroom {

/// Everything about one run: how it trains, the micro-batch, the loss head and the machine.
struct run_config {
  training_setup setup{};
  activation_config activations{};
  loss_config loss{};
  std::uint64_t grad_accum_steps = 1;  ///< gradient_accumulation_steps (>1 keeps grads during forward)
  overhead_config overhead{};
  params_basis basis = params_basis::nominal;
  parallel_config parallel{};  ///< data/tensor/pipeline parallel layout and sharding (one GPU by default)
  load_path load = load_path::none;  ///< how the checkpoint reaches the GPU (a phase of the peak when set)
};

/// The step's four phases, and the load phase before the first step (only when a load path is set).
enum class step_phase : std::uint8_t { forward_end, backward_start, backward_end, optimizer_step, load };
inline constexpr std::array<named<step_phase>, 5> phase_names{{{"forward_end", step_phase::forward_end},
                                                               {"backward_start", step_phase::backward_start},
                                                               {"backward_end", step_phase::backward_end},
                                                               {"optimizer_step", step_phase::optimizer_step},
                                                               {"load", step_phase::load}}};

/// The full estimate: each bucket's size, what is alive in each phase, and the peak.
struct training_estimate {
  static_estimate statics{};       ///< the whole model's static state (before sharding)
  sharded_state per_gpu_static{};  ///< one GPU's share under the parallel layout, and what is offloaded
  activation_estimate activations{};
  logits_estimate logits{};
  overhead_estimate overhead{};
  memory_buckets sizes{};                  ///< each bucket's largest size over the step
  std::array<memory_buckets, 5> phases{};  ///< indexed by step_phase (load: zero unless modelled)
  load_estimate load{};                    ///< the load phase (path none: not modelled)
  step_phase peak_phase = step_phase::forward_end;
  bool paged_state = false;  ///< the optimizer state is in CUDA unified memory (paged_*)

  /// Whether `p` is a phase of this estimate (the load phase only with a load path or a PiSSA / OLoRA init).
  [[nodiscard]] constexpr bool has_phase(step_phase p) const {
    return p != step_phase::load || load.modelled();
  }
  [[nodiscard]] constexpr const memory_buckets& at_peak() const {
    return phases[static_cast<std::size_t>(peak_phase)];
  }
  /// The peak including overhead: what the GPU must hold (allocated peak + context + cached blocks).
  [[nodiscard]] constexpr bytes total_bytes() const { return at_peak().total_bytes(); }
  /// Comparable to torch.cuda.max_memory_allocated: without the context, the fragmentation reserve
  /// and paged optimizer state (which lives in unified memory, outside the caching allocator).
  [[nodiscard]] constexpr bytes peak_allocated_bytes() const {
    bytes b = total_bytes() - (overhead.total() - overhead.allocated());
    if (paged_state) b = b - at_peak().optimizer;
    return b;
  }
};

/// A load path was asked for but the layout shards the model or splits it across GPUs: the load phase is
/// modelled for one GPU's whole model, and for FSDP1 priced unit by unit (every rank loads the whole model,
/// then wraps it); any other layout leaves it out (and a note says so).
[[nodiscard]] constexpr bool load_not_modelled(const run_config& r) {
  const bool sharded_or_split =
      r.parallel.shard != sharding::none || r.parallel.tensor_parallel * r.parallel.pipeline_parallel != 1;
  return r.load != load_path::none && sharded_or_split &&
         !detail::flat_units_layout(r.setup, r.parallel, r.basis);
}

namespace detail {
/// The optimizer step's own temporaries (optimizer.hpp step_temporary_values), in the state dtype.
constexpr bytes step_temporaries(const static_estimate& st, const training_setup& s) {
  const std::uint64_t state_bytes = s.method == training_method::full ? optimizer_param_bytes(s.precision)
                                                                      : adapter_optimizer_param_bytes(s);
  const bytes temps =
      per_param(params(step_temporary_values(s.optimizer, s.optim.impl, s.runtime,
                                             st.trainable_params.count(), st.for_loop_step.count())),
                state_bytes);
  return bytes(step_bytes_with_bookkeeping(temps.count(), state_bytes, s.runtime));
}
}  // namespace detail

namespace detail {
/// Gradients outside the decoder layers: the embedding, the final norm and an untied head (full
/// fine-tuning); none with adapters (they sit in the layers).
constexpr bytes non_layer_grads(const model_shape& m, const training_setup& s) {
  if (s.method != training_method::full) return bytes(0);
  const std::uint64_t head = m.tie_word_embeddings ? 0 : m.vocab_size * m.hidden_size;
  return act(m.vocab_size * m.hidden_size + head + m.hidden_size, 1, weight_bytes(s.precision));
}

/// The steps an optimizer in backward takes at its two worst moments, gradient and temporaries.
struct in_backward_steps {
  bytes head{0};       ///< the head's step temporaries (its gradient is in the loss head's bytes)
  bytes last_grad{0};  ///< the gradient alive at the last step (the embedding's, or the largest adapter's)
  bytes last{0};       ///< that step's temporaries (and, with tied embeddings, the summed gradients)
};
constexpr in_backward_steps in_backward_steps_of(const model_shape& m, const training_setup& s,
                                                 const static_estimate& st) {
  const bool full = s.method == training_method::full;
  const std::uint64_t grad_bytes = full ? weight_bytes(s.precision) : adapter_bytes(s);
  const std::uint64_t state = full ? optimizer_param_bytes(s.precision) : adapter_optimizer_param_bytes(s);
  auto temps = [&](std::uint64_t n) {
    const std::uint64_t values = single_tensor_step_values(s.optimizer, s.optim.impl, s.runtime, n);
    return bytes(
        step_bytes_with_bookkeeping(checked_mul(values, state, "optimizer temporaries"), state, s.runtime));
  };
  in_backward_steps out;
  if (!full) {  // the largest adapter, whenever it comes
    const std::uint64_t n = st.largest_trainable.count();
    out.last_grad = act(n, 1, grad_bytes);
    out.last = temps(n);
    return out;
  }
  const std::uint64_t table = checked_mul(m.vocab_size, m.hidden_size, "embedding");
  out.head = temps(table);
  out.last_grad = act(table, 1, grad_bytes);
  out.last = temps(table);
  // Tied embeddings: the head's and the embedding's gradients are summed before the one step.
  if (m.tie_word_embeddings) out.last = out.last > out.last_grad * 2 ? out.last : out.last_grad * 2;
  return out;
}

/// Activations of one step on one GPU: the blocks, a trained vision tower, tensor parallelism's share.
constexpr activation_estimate step_activations(const model_spec& spec, const run_config& r,
                                               const activation_config& seen) {
  activation_estimate acts = activations_of_valid_shape(spec.shape, r.setup, seen);
  if (r.setup.train_vision_tower) {  // the tower runs first in forward and is back-propagated last
    const activation_estimate tower = vision_activations(spec, r.setup, r.activations);
    acts.kept += tower.kept;
    acts.host += tower.host;
    acts.recompute = acts.recompute > tower.recompute ? acts.recompute : tower.recompute;
    acts.gpu = acts.kept + acts.recompute;
  }
  const activation_scale tp = tensor_parallel_activation_scale(r.parallel);
  if (tp.den != 1) {  // tensor (and sequence) parallelism: one GPU keeps a share of each layer
    auto scale = [&](bytes b) { return bytes(detail::checked_mul(b.count() / tp.den, tp.num)); };
    acts.per_layer_kept = scale(acts.per_layer_kept);
    acts.recompute = scale(acts.recompute);
    acts.gpu = scale(acts.gpu);
    acts.kept = scale(acts.kept);
    acts.host = scale(acts.host);
  }
  return acts;
}

/// What changes between the phases of a step; weights, adapters, master and optimizer state persist.
struct varying {
  bytes grads{0};
  bytes activations{0};
  bytes logits{0};
  bytes temporaries{0};
};
/// The part of a phase that differs from the others: what the peak compares.
constexpr bytes moving(const varying& v) { return v.grads + v.activations + v.logits + v.temporaries; }

/// What every phase of the step is built from, each named once.
struct step_parts {
  const memory_buckets& st;         ///< the per-GPU static buckets (grads; temporaries: gathered parameters)
  const activation_estimate& acts;  ///< the blocks' activations on this GPU
  bytes kept{0};                    ///< every block's saved tensors (+ the block in flight when offloading)
  bytes hidden{0};                  ///< the final hidden states, the loss's input
  bytes gathered{0};                ///< ZeRO-3 / FSDP: parameters gathered for compute
  bytes reducing{0};            ///< gathered + the gradient reduction buffers (DDP buckets, IPG, FSDP units)
  bytes grads_in_forward{0};    ///< gradients accumulated by earlier micro-batches (zero_grad(set_to_none))
  bytes head_forward{0};        ///< the loss head's forward peak with its input, per vocabulary shard
  bytes head_backward{0};       ///< its backward peak (and the hidden states it kept), per shard
  bytes head_after{0};          ///< what its backward leaves: the hidden-state (and head) gradient
  bytes step_temporaries{0};    ///< the optimizer step's temporaries on this GPU (none when offloaded)
  bytes before_first_layer{0};  ///< every gradient but the first layer's, when it is recomputed
  bytes embedding{0};           ///< full fine-tuning: the embedding's gradient being built (two with ties)
  bool recompute_last = false;  ///< the first layer's recompute is backward_end's worst moment
  const fsdp_flat_units* flat = nullptr;  ///< FSDP1 priced unit by unit (shard_flat_units), else null
  bytes final_norm{0};  ///< FSDP1: what the final norm saves (freed before the layers' backward)
  bool unsharded_accumulation = false;  ///< FSDP1 under no_sync: every rank keeps unsharded gradients
};

constexpr bytes step_temporaries_on_gpu(const run_config& r, const static_estimate& statics,
                                        const fsdp_flat_units& flat) {
  if (flat.count != 0) {  // FSDP1: the optimizer steps each FlatParameter's slice
    const std::uint64_t state_bytes = optimizer_param_bytes(r.setup.precision);
    const std::uint64_t values = step_temporary_values(r.setup.optimizer, r.setup.optim.impl, r.setup.runtime,
                                                       flat.shards.count(), flat.step_values.count());
    return bytes(step_bytes_with_bookkeeping(checked_mul(values, state_bytes, "optimizer temporaries"),
                                             state_bytes, r.setup.runtime));
  }
  // The step runs on each rank's partition; an offloaded optimizer steps on the CPU.
  const std::uint64_t state_shards = (r.parallel.shard == sharding::none ? 1 : r.parallel.data_parallel) *
                                     r.parallel.tensor_parallel * r.parallel.pipeline_parallel;
  return r.parallel.offload_optimizer
             ? bytes(0)
             : detail::div_up(detail::step_temporaries(statics, r.setup), state_shards);
}

/// With recomputation, the first layer is recomputed before its own gradients (and the embedding's) exist,
/// with the gradient of its output arriving: all other gradients + its internals.
constexpr bytes gradients_before_first_layer(const model_spec& spec, const run_config& r,
                                             const step_parts& p) {
  if (p.acts.recompute.count() == 0) return bytes(0);
  auto minus = [](bytes a, bytes b) { return a > b ? a - b : bytes(0); };  // sharded grads can be smaller
  const bytes layer_grads = minus(p.st.grads, detail::non_layer_grads(spec.shape, r.setup));
  const model_shape& m = spec.shape;
  // The first layer's share: 1/L of uniform layers; else (DeepSeek's dense first layer, Llama-4's) its
  // group's share by parameters.
  const bytes first_layer =
      uniform_layers(m)
          ? detail::div_up(layer_grads, m.num_hidden_layers)
          : bytes(static_cast<std::uint64_t>(
                static_cast<double>(layer_grads.count()) *
                static_cast<double>(layer_parameter_count(layer_groups(m).items[0].shape).count()) /
                static_cast<double>(parameter_count(m).count() - model_level_parameters(m))));
  return minus(layer_grads, first_layer);
}

/// FSDP1's units in the step's parts: they reduce at their post-backward (backward_end prices them), and the
/// root's pre-backward prefetches the last layer (BACKWARD_PRE) under full_shard; under accelerate's no_sync
/// (sync_each_batch false) every unit's gradient stays unsharded between micro-batches.
HEADROOM_NOINLINE constexpr void fsdp_flat_parts(step_parts& p, const model_spec& spec, const run_config& r,
                                                 const fsdp_flat_units& u, const activation_config& seen) {
  p.flat = &u;
  const std::uint64_t prefetched = r.parallel.shard == sharding::fsdp_grad_op ? 0 : r.parallel.prefetch_units;
  p.reducing = p.gathered + per_param(params(u.largest_layer.count() * prefetched), u.compute_bytes);
  p.unsharded_accumulation = r.grad_accum_steps > 1 && !r.parallel.sync_each_batch;
  if (p.unsharded_accumulation) p.grads_in_forward = per_param(u.all, u.compute_bytes);
  p.final_norm = final_norm_bytes(spec.shape, r.setup, seen);
}

HEADROOM_INLINE constexpr step_parts step_parts_of(const model_spec& spec, const run_config& r,
                                                   const static_estimate& statics,
                                                   const sharded_state& per_gpu_static,
                                                   const fsdp_flat_units& flat, const activation_config& seen,
                                                   const activation_estimate& acts,
                                                   const logits_estimate& head) {
  step_parts p{per_gpu_static.per_gpu, acts};
  const std::uint64_t head_shards = r.parallel.tensor_parallel;  // vocab-parallel head
  p.gathered = p.st.temporaries;
  p.reducing = p.gathered + per_gpu_static.comm.reduce;
  // Accumulation keeps the gradients through the next forward, unless each was stepped and freed in backward.
  p.grads_in_forward = r.grad_accum_steps > 1 && !r.setup.optim.in_backward ? p.st.grads : bytes(0);
  if (flat.count != 0) fsdp_flat_parts(p, spec, r, flat, seen);
  p.step_temporaries = step_temporaries_on_gpu(r, statics, flat);
  const bool offloading = r.activations.ckpt == checkpointing::offload;
  p.kept = acts.kept + (offloading ? acts.recompute : bytes(0));  // offloading: the block being moved
  const std::uint64_t tokens = detail::checked_mul(seen.batch, seen.seq_len, "tokens");
  p.hidden = detail::act(tokens, spec.shape.hidden_size, detail::weight_bytes(r.setup.precision));
  p.head_forward = detail::div_up(head.forward_peak() + p.hidden, head_shards);
  p.head_backward = detail::div_up(head.backward_peak() + head.hidden_kept, head_shards);
  p.head_after = detail::div_up(head.after, head_shards);
  // backward_end: the embedding's gradient is built from the gradient of its output — or, with tied
  // embeddings, summed out of place with the head's (two more V x d gradients).
  if (r.setup.method == training_method::full) {
    const model_shape& m = spec.shape;
    p.embedding = m.tie_word_embeddings
                      ? detail::act(2 * m.vocab_size, m.hidden_size, detail::weight_bytes(r.setup.precision))
                      : p.hidden;
  }
  p.before_first_layer = gradients_before_first_layer(spec, r, p);
  p.recompute_last = acts.recompute.count() != 0 &&
                     p.before_first_layer + acts.recompute + p.hidden > p.st.grads + p.embedding;
  return p;
}

/// forward_end: every block's saved tensors with the larger of the loss head's forward peak and a module's
/// own transient (DoRA's weight norm).
constexpr varying forward_end_of(const step_parts& p) {
  const varying head_moment{p.grads_in_forward, p.kept + p.acts.forward_cached, p.head_forward, p.gathered};
  const varying module_moment{p.grads_in_forward, p.kept + p.acts.module_transient, bytes(0), p.gathered};
  return moving(module_moment) > moving(head_moment) ? module_moment : head_moment;
}

/// backward_start: the loss backward runs before any block is recomputed; the last block's recompute follows,
/// with the hidden-state (and head) gradient alive. The larger of the two moments.
constexpr varying backward_start_of(const step_parts& p) {
  const varying loss_moment{p.grads_in_forward, p.kept, p.head_backward, p.reducing};
  const bytes recompute_transient = p.acts.recompute.count() != 0 ? p.acts.module_transient : bytes(0);
  const varying recompute_moment{p.grads_in_forward, p.kept + p.acts.recompute + recompute_transient,
                                 p.head_after, p.reducing};
  return moving(recompute_moment) > moving(loss_moment) ? recompute_moment : loss_moment;
}

/// The loss and its seed gradient (two 0-dim fp32 tensors) outlive the backward pass.
inline constexpr bytes loss_scalars = bytes(2 * detail::scalar_bytes);

/// FSDP1's root unit at its post-backward, the step's last: every layer reduced to its slice; the root's
/// parameters unsharded and its gradients twice (each parameter's own, and the flat gradient they are
/// concatenated into before the reduce-scatter), with what earlier micro-batches accumulated.
constexpr varying root_post_backward(const step_parts& p) {
  const fsdp_flat_units& u = *p.flat;
  const bytes root_slice = per_param(u.root_shard, u.grad_bytes), root = per_param(u.root, u.compute_bytes);
  const bytes earlier = p.unsharded_accumulation          ? root        // its unsharded accumulated gradient
                        : p.grads_in_forward.count() != 0 ? root_slice  // its slice, reduced before
                                                          : bytes(0);
  return varying{p.st.grads - root_slice + earlier, p.acts.retained, loss_scalars,
                 per_param(u.root, u.compute_bytes) + root + root};
}

/// FSDP1: the last layer's post-backward, the first in backward and the worst of the layers' (every layer
/// below still holds its saved tensors; the final norm's are gone): its parameters gathered beside the root
/// (or every unit under shard_grad_op) and the next layer prefetched, its gradients twice (each parameter's
/// own and the flat gradient they are concatenated into), the root's gradients so far (the head's and the
/// final norm's), the hidden-state gradient from above, and the loss and its seed.
constexpr varying last_layer_post_backward(const step_parts& p, const parallel_config& layout,
                                           const model_shape& m) {
  const fsdp_flat_units& u = *p.flat;
  const bytes layer_grads = per_param(u.largest_layer, u.compute_bytes);
  const std::uint64_t gathered_layers =
      layout.shard == sharding::fsdp_grad_op ? 0 : 1 + layout.prefetch_units;
  const bytes spent = p.acts.per_layer_kept + p.final_norm;
  const bytes below = p.kept > spent ? p.kept - spent : bytes(0);
  const bytes norm_grad = per_param(params(m.hidden_size * norm_tensors(m)), u.compute_bytes);
  return varying{p.grads_in_forward + layer_grads + layer_grads, below,
                 p.head_after + norm_grad + bytes(detail::scalar_bytes),
                 p.gathered + per_param(params(u.largest_layer.count() * gathered_layers), u.compute_bytes)};
}

/// The first layer recomputed at the end of backward, every other gradient made.
constexpr varying first_layer_recompute(const step_parts& p) {
  return varying{p.before_first_layer, p.acts.recompute + p.hidden + p.acts.retained, loss_scalars,
                 p.reducing};
}
/// backward_end: every gradient exists; the first block is recomputed, or the embedding's gradient is built
/// (FSDP1: a layer's or the root's post-backward).
constexpr varying backward_end_of(const step_parts& p, const parallel_config& layout, const model_shape& m) {
  if (p.flat) {
    const varying root = root_post_backward(p), layer = last_layer_post_backward(p, layout, m);
    const varying& reduced = moving(layer) > moving(root) ? layer : root;
    if (!p.recompute_last) return reduced;
    const varying recompute = first_layer_recompute(p);
    return moving(recompute) > moving(reduced) ? recompute : reduced;
  }
  if (p.recompute_last) return first_layer_recompute(p);
  return varying{p.st.grads, p.acts.retained, loss_scalars, p.reducing + p.embedding};
}

/// optimizer_step: the optimizer's temporaries (Trainer.training_step has returned loss.detach(): the graph
/// is gone, the loss value stays).
constexpr varying optimizer_step_of(const step_parts& p) {
  return varying{p.st.grads, bytes(0), bytes(detail::scalar_bytes), p.step_temporaries};
}

/// The four phases of a step, in step_phase order.
struct step_moments {
  varying forward_end, backward_start, backward_end, optimizer_step;
};

/// Optimizer in backward: each parameter is stepped, and its gradient freed, as soon as its gradient is
/// accumulated. The head is stepped first, with every activation still alive; the embedding last.
constexpr void step_in_backward(step_moments& ph, const model_spec& spec, const run_config& r,
                                const static_estimate& statics, const step_parts& p) {
  const in_backward_steps steps = detail::in_backward_steps_of(spec.shape, r.setup, statics);
  varying first{};
  if (r.setup.method == training_method::full && !spec.shape.tie_word_embeddings)
    first = varying{bytes(0), p.kept, p.head_after + bytes(detail::scalar_bytes), steps.head};
  if (moving(first) > moving(ph.backward_start)) ph.backward_start = first;
  // The first layer's recompute: as without stepping in backward, but every other gradient is already freed.
  if (p.recompute_last)
    ph.backward_end.grads = bytes(0);
  else
    ph.backward_end = varying{steps.last_grad, p.acts.retained, loss_scalars, p.reducing + steps.last};
  ph.optimizer_step = varying{bytes(0), bytes(0), bytes(detail::scalar_bytes), bytes(0)};
}

/// The load phase: the checkpoint arriving and being quantised or cast, before any adapter or state exists,
/// for one GPU's whole model, or every rank's under FSDP1 priced unit by unit followed by the wrap (any other
/// sharded or model-parallel layout leaves it out: load_not_modelled says so).
/// Its worst moment: the last tensor arriving, or PEFT's PiSSA / OLoRA initialisation of the worst adapted
/// module with every weight and adapter in place.
constexpr load_estimate step_load(const model_spec& spec, const run_config& r, const static_estimate& statics,
                                  const fsdp_flat_units& flat) {
  const bool one_whole_model = r.parallel.shard == sharding::none && r.parallel.gpus() == 1;
  // FSDP1 over flat parameters: every rank loads the whole model (from_pretrained), then wraps it.
  const bool wrapped = flat.count != 0;
  load_estimate load =
      estimate_load(spec.shape, r.setup, statics, one_whole_model || wrapped ? r.load : load_path::none);
  if (!one_whole_model) load.init_transient = bytes(0);  // PiSSA / OLoRA on a shard: not modelled either
  if (wrapped && load.path != load_path::none) {
    load.wrap_weights = per_param(flat.all, flat.weight_bytes);
    // MixedPrecision wraps an fp32 model (its FlatParameters stay fp32): loaded, and wrapped, in fp32.
    if (flat.weight_bytes != flat.compute_bytes) {
      if (load.path == load_path::fp32_then_cast)
        fail("load_path",
             "fp32-cast ends in 16-bit weights, but FSDP1's MixedPrecision (bf16-mixed) wraps fp32 "
             "FlatParameters: use direct");
      load.weights = load.wrap_weights;
    }
    load.wrap_transient = fsdp_wrap_transient(flat);
  }
  return load;
}
constexpr memory_buckets load_phase_of(const load_estimate& load, const memory_buckets& st, bytes overhead) {
  if (!load.modelled()) return memory_buckets{};
  const memory_buckets arrival{load.weights, bytes(0), bytes(0),       bytes(0), bytes(0),
                               bytes(0),     bytes(0), load.transient, overhead};
  const memory_buckets init{st.weights, st.adapter_weights,  bytes(0), bytes(0), bytes(0), bytes(0),
                            bytes(0),   load.init_transient, overhead};
  const memory_buckets wrap{load.wrap_weights,   bytes(0), bytes(0), bytes(0), bytes(0), bytes(0), bytes(0),
                            load.wrap_transient, overhead};
  const memory_buckets& first = init.total_bytes() > arrival.total_bytes() ? init : arrival;
  return wrap.total_bytes() > first.total_bytes() ? wrap : first;
}

/// Each changing bucket's largest value over the four phases (the sizes column).
constexpr varying largest_of(const step_moments& ph) {
  auto larger = [](bytes a, bytes b) { return a > b ? a : b; };
  auto most = [&](bytes varying::*b) {
    return larger(larger(ph.forward_end.*b, ph.backward_start.*b),
                  larger(ph.backward_end.*b, ph.optimizer_step.*b));
  };
  return varying{most(&varying::grads), most(&varying::activations), most(&varying::logits),
                 most(&varying::temporaries)};
}

/// The step estimate for a validated shape and parallel layout with its static part known (it does not depend
/// on the micro-batch or the length, so the solvers compute it once for all their probes).
constexpr training_estimate step_of_valid_shape(const model_spec& spec, const run_config& r,
                                                const static_estimate& statics,
                                                const sharded_state& per_gpu_static) {
  if (r.grad_accum_steps == 0) fail("gradient_accumulation_steps", "must be a positive integer");
  check_layout_fits(spec.shape, r.parallel);  // r.parallel itself was validated by shard_static
  // LOMO's hooks update each parameter as its gradient arrives, micro-batch by micro-batch: nothing to
  // refuse.
  if (r.setup.optim.in_backward && !r.setup.optimizer.steps_in_backward && r.grad_accum_steps > 1)
    fail("optimizer_in_backward",
         "cannot be combined with gradient_accumulation_steps > 1: each gradient is freed as it is made "
         "(torchtune's recipes raise the same)");
  // + image tokens (a multimodal batch), + prompt tuning's tokens
  const activation_config seen = positions_seen(with_image_tokens(spec, r.activations), r.setup);
  activation_estimate acts = step_activations(spec, r, seen);
  const logits_estimate head = logits_of_valid_shape(spec.shape, r.setup, seen, r.loss);
  // TRL's offloading context wraps training_step: the loss's saved tensors are copied to pinned host RAM
  // too (their GPU originals stay in the forward stash until backward reads them).
  if (offloads_through_hooks(r.activations.ckpt) && r.activations.offload_wraps == offload_scope::step)
    acts.host += detail::div_up(head.kept, r.parallel.tensor_parallel);
  overhead_estimate over = estimate_overhead(r.overhead);
  if (!over.overridden) over.nccl = per_gpu_static.comm.nccl;  // a measured overhead already holds NCCL's
  // FSDP1 priced unit by unit (count 0 otherwise): the step's moments and the load phase's wrap.
  const fsdp_flat_units flat = fsdp_flat_units_for(spec.shape, statics, r.setup, r.parallel);
  const step_parts p = step_parts_of(spec, r, statics, per_gpu_static, flat, seen, acts, head);
  step_moments ph{forward_end_of(p), backward_start_of(p), backward_end_of(p, r.parallel, spec.shape),
                  optimizer_step_of(p)};
  if (r.setup.optim.in_backward) step_in_backward(ph, spec, r, statics, p);
  const memory_buckets& st = p.st;
  const bytes overhead = over.total();
  auto phase = [&](const varying& v) {
    return memory_buckets{st.weights,    st.adapter_weights, v.grads,       st.master, st.optimizer,
                          v.activations, v.logits,           v.temporaries, overhead};
  };
  (void)phase(ph.forward_end).total_bytes();  // the whole phase must fit 64 bits
  // The peak is the largest phase (the first of equals), the load phase included when it is larger.
  const std::array<varying, 4> step{{ph.forward_end, ph.backward_start, ph.backward_end, ph.optimizer_step}};
  const std::array<bytes, 4> totals{
      {moving(step[0]), moving(step[1]), moving(step[2]), moving(step[3])}};  // each phase's changing part
  std::size_t peak = 0;
  for (std::size_t i = 1; i < totals.size(); ++i)
    if (totals[i] > totals[peak]) peak = i;
  const load_estimate load = step_load(spec, r, statics, flat);
  const memory_buckets load_phase = load_phase_of(load, st, overhead);
  if (load.modelled() && load_phase.total_bytes() > phase(step[peak]).total_bytes())
    peak = static_cast<std::size_t>(step_phase::load);
  const varying most = largest_of(ph);
  // Built in one aggregate, phases in place (a copied array becomes a slow `rep movs` under GCC).
  return training_estimate{statics,
                           per_gpu_static,
                           acts,
                           head,
                           over,
                           memory_buckets{st.weights, st.adapter_weights, most.grads, st.master, st.optimizer,
                                          most.activations, most.logits, most.temporaries, overhead},
                           {{phase(ph.forward_end), phase(ph.backward_start), phase(ph.backward_end),
                             phase(ph.optimizer_step), load_phase}},
                           load,
                           static_cast<step_phase>(peak),
                           r.setup.optimizer.paged};
}
}  // namespace detail

/// Estimates the whole step. The peak is the largest phase; sizes are each bucket's maximum.
[[nodiscard]] constexpr training_estimate estimate_training(const model_spec& spec, const run_config& r) {
  const static_estimate statics = estimate_static(spec, r.setup, r.basis);  // validates the shape
  return detail::step_of_valid_shape(spec, r, statics,
                                     shard_static(spec.shape, statics, r.setup, r.parallel));
}
/// The same with the static part already known (from estimate_static and shard_static).
[[nodiscard]] constexpr training_estimate estimate_training(const model_spec& spec, const run_config& r,
                                                            const static_estimate& statics,
                                                            const sharded_state& per_gpu_static) {
  validate(spec.shape);
  validate(r.parallel);
  return detail::step_of_valid_shape(spec, r, statics, per_gpu_static);
}

/// True when the peak, overhead included, is at most `budget`.
[[nodiscard]] constexpr bool fits(const training_estimate& e, bytes budget) {
  return e.total_bytes() <= budget;
}
/// The same from a configuration; one too large for 64-bit bytes does not fit any budget.
[[nodiscard]] inline bool fits(const model_spec& spec, const run_config& r, bytes budget) {
  try {
    return fits(estimate_training(spec, r), budget);
  } catch (const overflow_error&) {
    return false;
  }
}

// The solvers search every length and micro-batch an estimate accepts.
inline constexpr std::uint64_t max_solver_seq_len = max_workload_seq_len;
inline constexpr std::uint64_t max_solver_batch = max_workload_batch;

namespace detail {
/// Largest v in [1, hi] whose total (`total_at(v)`; nullopt: beyond 64-bit bytes) is within `budget`, totals
/// monotone in v; 0 when even 1 is over. Memory is close to affine in a workload dimension, so each probe
/// interpolates the totals at the bracket's ends; after a probe that did not halve the bracket the next one
/// bisects. The bracket (within at lo, over at hi) shrinks at every probe, so the answer is exact; an affine
/// total takes three probes where bisection takes twenty.
template <class Total>
std::uint64_t largest_within(std::uint64_t hi, std::uint64_t budget, Total&& total_at) {
  const auto within = [budget](const std::optional<std::uint64_t>& t) { return t && *t <= budget; };
  std::optional<std::uint64_t> t_lo = total_at(1);
  if (!within(t_lo)) return 0;
  std::uint64_t lo = 1;
  std::optional<std::uint64_t> t_hi = total_at(hi);
  if (within(t_hi)) return hi;
  bool bisect = false;
  while (hi - lo > 1) {  // invariant: within at lo, over at hi
    const std::uint64_t width = hi - lo;
    std::uint64_t probe = lo + width / 2;
    if (!bisect && t_hi && *t_hi > *t_lo) {  // where the line through the two ends meets the budget
      const double share = static_cast<double>(budget - *t_lo) / static_cast<double>(*t_hi - *t_lo);
      const auto guess = lo + static_cast<std::uint64_t>(share * static_cast<double>(width));
      probe = guess <= lo ? lo + 1 : guess >= hi ? hi - 1 : guess;
    }
    const std::optional<std::uint64_t> t = total_at(probe);
    if (within(t)) {
      lo = probe;
      t_lo = t;
    } else {
      hi = probe;
      t_hi = t;
    }
    bisect = !bisect && hi - lo > width / 2;
  }
  return lo;
}

/// The largest value of one workload dimension that fits, the static part computed once.
template <class Set>
std::uint64_t largest_fitting_run(const model_spec& spec, run_config r, bytes budget, std::uint64_t hi,
                                  Set set) {
  static_estimate statics;
  sharded_state sharded;
  try {
    statics = estimate_static(spec, r.setup, r.basis);
    sharded = shard_static(spec.shape, statics, r.setup, r.parallel);
  } catch (const overflow_error&) {
    return 0;  // the static state alone is beyond 64-bit bytes
  }
  return largest_within(hi, budget.count(), [&](std::uint64_t v) -> std::optional<std::uint64_t> {
    set(r, v);
    try {
      return step_of_valid_shape(spec, r, statics, sharded).total_bytes().count();
    } catch (const overflow_error&) {
      return std::nullopt;  // too large for 64-bit bytes: no budget holds it
    }
  });
}

/// A budget that holds the solver's cap has no boundary the estimate can find: refused, never answered with
/// the cap as if it were the boundary.
inline std::uint64_t below_cap(std::uint64_t v, std::uint64_t cap, const char* what) {
  if (v != cap) return v;
  std::string why = "holds even ";
  why += what;
  why += ' ';
  why += std::to_string(cap);
  why += ", the largest the estimate prices: it has no boundary below that";
  throw input_error("budget", why);
}
}  // namespace detail

/// The longest sequence length that fits: fits at the answer, not at answer + 1 (0 if none). Throws
/// input_error when even max_solver_seq_len fits.
[[nodiscard]] inline std::uint64_t max_seq_len(const model_spec& spec, const run_config& r, bytes budget) {
  return detail::below_cap(
      detail::largest_fitting_run(spec, r, budget, max_solver_seq_len,
                                  [](run_config& c, std::uint64_t v) { c.activations.seq_len = v; }),
      max_solver_seq_len, "seq_len");
}

/// The largest micro-batch that fits: fits at the answer, not at answer + 1 (0 if none). Throws input_error
/// when even max_solver_batch fits.
[[nodiscard]] inline std::uint64_t max_batch(const model_spec& spec, const run_config& r, bytes budget) {
  return detail::below_cap(
      detail::largest_fitting_run(spec, r, budget, max_solver_batch,
                                  [](run_config& c, std::uint64_t v) { c.activations.batch = v; }),
      max_solver_batch, "batch");
}

/// A data-parallel layout the GPU-count solver tries, simplest (least communication) first.
struct layout_choice {
  std::string_view name;
  sharding shard;
  bool offload_optimizer;
  bool offload_params;
};
inline constexpr std::array<layout_choice, 8> layout_choices{{
    {"ddp", sharding::none, false, false},
    {"zero1", sharding::zero1, false, false},
    {"zero2", sharding::zero2, false, false},
    {"fsdp full_shard", sharding::fsdp_full, false, false},
    {"zero3", sharding::zero3, false, false},
    {"zero3 + offload optimizer", sharding::zero3, true, false},
    {"fsdp full_shard + cpu offload", sharding::fsdp_full, true, true},
    {"zero3 + offload optimizer and params", sharding::zero3, true, true},
}};

/// The fewest data-parallel GPUs (1…max_gpus) with which `layout` fits `budget` per GPU; 0 if none.
/// Memory per GPU falls as ranks are added, so the first fit is the answer.
[[nodiscard]] inline std::uint64_t fewest_gpus(const model_spec& spec, run_config r,
                                               const layout_choice& layout, bytes budget,
                                               std::uint64_t max_gpus = 1024) {
  r.parallel.shard = layout.shard;
  r.parallel.offload_optimizer = layout.offload_optimizer;
  r.parallel.offload_params = layout.offload_params;
  for (std::uint64_t n = 1; n <= max_gpus; ++n) {
    r.parallel.data_parallel = n;
    if (fits(spec, r, budget)) return n;
    if (layout.shard == sharding::none) return 0;  // replication: more GPUs never help
  }
  return 0;
}

/// One row of the GPU-count solver: a layout and the fewest GPUs with which it fits (0: none up to the
/// limit).
struct layout_gpus {
  std::string_view layout;
  std::uint64_t gpus = 0;
};

/// Every layout's fewest GPUs (memory_calculator --solve-gpus), the cheapest and the simplest that fits.
struct gpu_plan {
  std::array<layout_gpus, layout_choices.size()> layouts{};
  layout_gpus cheapest{};  ///< the fewest GPUs; among equals the layout listed first (gpus 0: none fits)
  layout_gpus simplest{};  ///< the first layout (least communication) that fits at all
};

/// Solves fewest_gpus for every layout in layout_choices, up to `max_gpus` data-parallel ranks.
[[nodiscard]] inline gpu_plan plan_gpus(const model_spec& spec, const run_config& r, bytes budget,
                                        std::uint64_t max_gpus = 1024) {
  gpu_plan plan;
  for (std::size_t i = 0; i < layout_choices.size(); ++i) {
    const layout_gpus row{layout_choices[i].name, fewest_gpus(spec, r, layout_choices[i], budget, max_gpus)};
    plan.layouts[i] = row;
    if (row.gpus == 0) continue;
    if (plan.simplest.gpus == 0) plan.simplest = row;
    if (plan.cheapest.gpus == 0 || row.gpus < plan.cheapest.gpus) plan.cheapest = row;
  }
  return plan;
}

/// What the exact solver maximises (memory_calculator --fit).
enum class fit_dimension { seq_len, batch };
inline constexpr std::array<named<fit_dimension>, 2> fit_dimension_names{{
    {"seq-len", fit_dimension::seq_len},
    {"batch", fit_dimension::batch},
}};

/// The exact boundary: the largest value that fits, and the total that one more would need.
struct fit_answer {
  std::uint64_t largest = 0;  ///< 0: not even 1 fits
  bytes next_total{0};        ///< the estimate's total at largest + 1
};

/// max_seq_len or max_batch, with the total just past the boundary (the evidence that it is the boundary).
[[nodiscard]] inline fit_answer fit_largest(const model_spec& spec, const run_config& r, bytes budget,
                                            fit_dimension d) {
  const bool seq = d == fit_dimension::seq_len;
  fit_answer a;
  a.largest = seq ? max_seq_len(spec, r, budget) : max_batch(spec, r, budget);
  run_config next = r;
  (seq ? next.activations.seq_len : next.activations.batch) = a.largest + 1;
  a.next_total = estimate_training(spec, next).total_bytes();
  return a;
}

/// The peak under one step implementation torch could run.
struct impl_peak {
  optimizer_impl impl = optimizer_impl::automatic;
  bytes total{0};  ///< the estimate's total (peak phase plus overhead) under that implementation
};

/// The peak under every implementation torch has for this torch.optim optimizer, the one priced first (only
/// that one for optimizers with a single implementation). Front ends use it to say when the choice matters.
[[nodiscard]] inline std::vector<impl_peak> optimizer_impl_peaks(const model_spec& spec, const run_config& r,
                                                                 const training_estimate& e) {
  const optimizer_impl chosen = resolved_impl(r.setup.optimizer, r.setup.optim.impl, r.setup.runtime);
  std::vector<impl_peak> out{{chosen, e.total_bytes()}};
  if (!r.setup.optimizer.torch_optim || r.setup.optimizer.fused_default) return out;
  for (const optimizer_impl other :
       {optimizer_impl::for_loop, optimizer_impl::foreach, optimizer_impl::fused}) {
    if (other == chosen ||
        (other == optimizer_impl::fused && !fused_available(r.setup.optimizer, r.setup.runtime)))
      continue;
    run_config alt = r;
    alt.setup.optim.impl = other;
    out.push_back({other, estimate_training(spec, alt).total_bytes()});
  }
  return out;
}

namespace detail {
/// Why torch runs the implementation it runs (torch/optim/optimizer.py _default_to_fused_or_foreach).
inline std::string impl_reason(const training_setup& s) {
  if (s.optim.impl != optimizer_impl::automatic) return "--optimizer-impl";
  if (s.optimizer.fused_default) return "adamw_torch_fused passes fused=True";
  return s.runtime.device == device_kind::cuda && s.runtime.torch == torch_generation::v2
             ? "torch 2's default on CUDA: foreach=None picks foreach; fused is never the default"
             : "torch's default off CUDA or under 1.13: for-loop";
}
}  // namespace detail

/// A note when another step implementation would move the peak by more than 1% (one hundredth), from the
/// peaks optimizer_impl_peaks gave (the priced one first).
[[nodiscard]] inline std::optional<std::string> optimizer_impl_note(const std::vector<impl_peak>& peaks,
                                                                    const run_config& r) {
  const std::uint64_t base = peaks.front().total.count();
  std::string others;
  bool moves = false;
  for (std::size_t i = 1; i < peaks.size(); ++i) {
    const std::uint64_t t = peaks[i].total.count();
    moves = moves || (t > base ? t - base : base - t) > base / 100;
    detail::append_listed(others, std::string(choice_name(optimizer_impl_names, peaks[i].impl)) + " " +
                                      gb_text(peaks[i].total));
  }
  if (!moves) return std::nullopt;
  return "optimizer step: " + std::string(choice_name(optimizer_impl_names, peaks[0].impl)) + " assumed (" +
         detail::impl_reason(r.setup) + "); the peak would be " + others +
         " (--optimizer-impl; adamw_torch_fused is transformers' fused AdamW)";
}

/// The same, computing the peaks.
[[nodiscard]] inline std::optional<std::string> optimizer_impl_note(const model_spec& spec,
                                                                    const run_config& r,
                                                                    const training_estimate& e) {
  return optimizer_impl_note(optimizer_impl_peaks(spec, r, e), r);
}

/// Plain-language notes about an estimate (printed by the text and JSON front ends).
[[nodiscard]] inline std::vector<std::string> training_notes(const training_estimate& e,
                                                             const run_config& r) {
  std::vector<std::string> notes = estimate_notes(e.statics, r.setup);
  notes.push_back(
      "total = the peak phase plus CUDA context and allocator fragmentation (compare nvidia-smi, or "
      "memory_reserved plus the context); " +
      gb_text(e.peak_allocated_bytes()) +
      " of it is the allocated peak (compare "
      "torch.cuda.max_memory_allocated)");
  if (e.overhead.overridden)
    notes.emplace_back(
        "overhead: the measured --overhead-gb value replaces the context, workspace and "
        "fragmentation model");
  if (r.setup.method != training_method::full && r.setup.lora.init != lora_init::standard &&
      (r.parallel.shard != sharding::none || r.parallel.gpus() != 1))
    notes.emplace_back(
        "init_lora_weights: the PiSSA / OLoRA initialisation transient is priced for one GPU's whole model "
        "only; it is left out of this layout");
  if (load_not_modelled(r))
    notes.emplace_back(
        "load phase: not modelled under this sharding or model parallelism; --load-path prices one GPU's "
        "whole model, and FSDP1 full fine-tuning on exact counts (every rank loads the whole model, then "
        "wraps it)");
  if (e.activations.host.count() != 0)
    notes.push_back("offloading keeps " + gb_text(e.activations.host) +
                    " of saved tensors in pinned host RAM (size the host for it; --explain lists the mode)");
  if (e.per_gpu_static.host.count() != 0)
    notes.push_back(
        "CPU offload keeps " + gb_text(e.per_gpu_static.host) +
        " of optimizer state / parameters in host RAM per GPU (DeepSpeed's estimator adds a 1.5x buffer)");
  if (r.parallel.gpus() > 1)
    notes.push_back("per GPU, for " + std::to_string(r.parallel.gpus()) + " GPUs (data " +
                    std::to_string(r.parallel.data_parallel) + " x tensor " +
                    std::to_string(r.parallel.tensor_parallel) + " x pipeline " +
                    std::to_string(r.parallel.pipeline_parallel) + ", sharding " +
                    std::string(choice_name(sharding_names, r.parallel.shard)) + "); communication buffers " +
                    gb_text(e.per_gpu_static.comm.gathered + e.per_gpu_static.comm.staging +
                            e.per_gpu_static.comm.reduce) +
                    " (gathered + staging + reduce) and NCCL " + gb_text(e.per_gpu_static.comm.nccl) +
                    " included (--explain lists them; not measured: no multi-GPU ground truth yet)");
  if (r.activations.formula == activation_formula::korthikanti)
    notes.emplace_back(
        "activations by the course's Korthikanti formula (a GPT block with a 4h GELU MLP, +-30% "
        "for SwiGLU/GQA models); the default detailed inventory follows the real tensors");
  if (r.loss.impl == loss_impl::naive)
    notes.emplace_back("loss: naive (bf16 logits, fp32 upcast, fp32 log-softmax and its gradients)");
  return notes;
}
namespace detail {
/// A run's peak, or nothing when an estimate refuses it (its settings forbid a combination) or it overflows.
inline std::optional<bytes> total_or_refused(const model_spec& spec, const run_config& r) {
  try {
    return estimate_training(spec, r).total_bytes();
  } catch (const input_error&) {
    return std::nullopt;
  }
}
}  // namespace detail
/// TRL's chunked_nll (SFTTrainer's default loss) against a naive loss: a note only where it lowers the peak
/// (its fp32 copy of the head can make a large-vocabulary, large-hidden model's peak higher).
[[nodiscard]] inline std::optional<std::string> chunked_loss_note(const model_spec& spec, const run_config& r,
                                                                  const training_estimate& e) {
  if (r.loss.impl != loss_impl::naive) return std::nullopt;
  run_config chunked = r;
  chunked.loss.impl = loss_impl::chunked;
  // A run that cannot take TRL's chunked loss gets nothing suggested.
  const std::optional<bytes> total = detail::total_or_refused(spec, chunked);
  if (!total || *total >= e.total_bytes()) return std::nullopt;
  return "loss: TRL's SFTTrainer defaults to chunked_nll, which lowers this peak to " + gb_text(*total) +
         " (--ce-chunk " + std::to_string(r.loss.chunk_tokens) + ")";
}
/// The notes, and those that need the model: whether the optimizer implementation moves the peak.
[[nodiscard]] inline std::vector<std::string> training_notes(const model_spec& spec,
                                                             const training_estimate& e,
                                                             const run_config& r) {
  std::vector<std::string> notes = training_notes(e, r);
  if (auto n = chunked_loss_note(spec, r, e)) notes.push_back(std::move(*n));
  if (auto n = optimizer_impl_note(spec, r, e)) notes.push_back(std::move(*n));
  return notes;
}

}  // namespace headroom
