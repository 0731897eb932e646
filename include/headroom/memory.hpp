// SPDX-License-Identifier: MIT
// The static training state: weights, adapter weights, gradients, fp32 master copy and
// optimizer state, for full fine-tuning, LoRA and QLoRA (course section "The four buckets").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lora.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "quantization.hpp"
#include "runtime.hpp"
#include "units.hpp"

namespace headroom {

enum class training_method : std::uint8_t { full, lora, qlora };

/// How weights, gradients and the master copy are stored (course: routes A and B, third route).
enum class precision_route : std::uint8_t {
  bf16_mixed,     ///< route A: bf16 weights + grads, fp32 master, fp32 optimizer state (default)
  fp32_autocast,  ///< route B: fp32 weights + grads, bf16 autocast matmuls, no separate master
  bf16_pure,      ///< third route: bf16 weights, no master; torch optimizers keep bf16 state
  fp32,           ///< no mixed precision at all: fp32 weights, grads, state and activations
  fp16_autocast,  ///< fp16=True on an fp32 model: route B with fp16 matmuls and a GradScaler (T4, V100)
};

/// Whether the frozen/full base is priced on the preset's nominal size or the exact count.
enum class params_basis : std::uint8_t { nominal, exact };

/// How the QLoRA base was priced.
enum class qlora_layout : std::uint8_t {
  not_applicable,
  uniform_nominal,  ///< every one of N params at the course's 4.127 bits (Table 1)
  realistic,        ///< 4-bit linears only; embeddings, lm_head and norms stay 16-bit
};

inline constexpr std::array<named<training_method>, 3> method_names{
    {{"full", training_method::full}, {"lora", training_method::lora}, {"qlora", training_method::qlora}}};
inline constexpr std::array<named<precision_route>, 5> precision_names{
    {{"bf16-mixed", precision_route::bf16_mixed},
     {"fp32-autocast", precision_route::fp32_autocast},
     {"bf16-pure", precision_route::bf16_pure},
     {"fp32", precision_route::fp32},
     {"fp16-autocast", precision_route::fp16_autocast}}};

/// Everything about the run that decides the static buckets.
struct training_setup {
  training_method method = training_method::full;
  precision_route precision = precision_route::bf16_mixed;
  optimizer_info optimizer = optimizer_catalog[0];  ///< adamw_torch
  optimizer_options optim{};
  bool grad_accum_buffer = false;  ///< a separate bf16 gradient-accumulation buffer (W03)
  lora_config lora{};              ///< used by lora and qlora
  nf4_layout nf4{};                ///< used by qlora
  runtime_config runtime{};        ///< device and torch generation (CPU rows: cpu, 1.13)
  /// Full fine-tuning also trains a multimodal model's vision tower and projector (LLaMA-Factory's
  /// freeze_vision_tower: false); the tower gets gradients only from images (activation_config::images).
  bool train_vision_tower = false;
};

/// Prefix tuning on a frozen base: P key/value positions before every layer's own.
[[nodiscard]] constexpr bool trains_prefix(const training_setup& s) {
  return s.method != training_method::full && prefix_positions(s.lora) != 0;
}
/// A prompt-learning method (prompt, P- or prefix tuning) on a frozen base.
[[nodiscard]] constexpr bool trains_prompt(const training_setup& s) {
  return s.method != training_method::full && prompt_learning(s.lora);
}

/// A vision tower and projector beside the language model (Gemma-3's and Llama-4's
/// *ForConditionalGeneration): frozen unless training_setup::train_vision_tower; a text-only batch never runs
/// it, and each image adds its tokens to the language model's sequence.
struct vision_tower {
  std::uint64_t params = 0;  ///< tower + projector parameters
  std::uint64_t tokens_per_image =
      0;                      ///< tokens an image (Llama-4: a tile) adds to the language model's sequence
  std::uint64_t tensors = 0;  ///< parameter tensors of tower and projector (optimizer step counters)
  std::uint64_t patches_per_image = 0;  ///< tokens an image (a tile) puts through the encoder
  std::uint64_t patch_values = 0;       ///< values per patch, channels·patch²: the patch embedding's input
  model_shape encoder{};  ///< the encoder as LayerNorm blocks with biased q/k/v/o and a GELU MLP (its depth)
};

/// A model: its shapes plus, for presets, the nominal size the course's Table 1 uses.
struct model_spec {
  model_shape shape{};
  std::uint64_t nominal_params = 0;  ///< e.g. 8e9 for llama-3.1-8b-like; 0 = none
  vision_tower vision{};             ///< a multimodal model's frozen tower (0 parameters for a text model)
};

/// Memory per bucket. Activations, logits and overhead are filled by the dynamic model.
struct memory_buckets {
  bytes weights{0};          ///< base (or full) model weights
  bytes adapter_weights{0};  ///< LoRA A and B
  bytes grads{0};            ///< gradients of trainable params (+ accumulation buffer)
  bytes master{0};           ///< fp32 master copy of trainable params (route A)
  bytes optimizer{0};        ///< optimizer state
  bytes activations{0};
  bytes logits{0};
  bytes temporaries{0};  ///< optimizer-step foreach buffers, autocast's bf16 weight cache
  bytes overhead{0};

  /// weights + adapter_weights + grads + master + optimizer.
  [[nodiscard]] constexpr bytes static_bytes() const {
    return weights + adapter_weights + grads + master + optimizer;
  }
  [[nodiscard]] constexpr bytes total_bytes() const {
    return static_bytes() + activations + logits + temporaries + overhead;
  }
};

/// The static estimate with the counts it was priced on.
struct static_estimate {
  params model_params{0};         ///< exact count from shapes
  params priced_params{0};        ///< N the base buckets used (nominal or exact)
  params adapter_params{0};       ///< LoRA A + B (+ DoRA magnitudes)
  params saved_module_params{0};  ///< modules_to_save copies (trained in full, counted with the adapters)
  params trainable_params{0};     ///< what gets gradients and optimizer state
  std::uint64_t trainable_tensors = 0;  ///< trainable tensors (each with its own optimizer `step`)
  params largest_trainable{0};          ///< the largest trainable tensor (optimizer in backward)
  params for_loop_step{
      0};  ///< values a for-loop optimizer step holds at its worst tensor (for_loop_step_values)
  params_basis basis = params_basis::exact;
  qlora_layout layout = qlora_layout::not_applicable;
  bool optimizer_from_shapes = false;  ///< nominal run whose optimizer needed the real shapes
  memory_buckets buckets{};
};

namespace detail {
inline constexpr std::uint64_t bf16_bytes = 2;

/// Routes whose weights stay fp32 (autocast casts per matmul; nothing is kept in 16-bit).
constexpr bool fp32_weights(precision_route p) {
  return p == precision_route::fp32_autocast || p == precision_route::fp16_autocast ||
         p == precision_route::fp32;
}
constexpr bool autocasts(precision_route p) {
  return p == precision_route::fp32_autocast || p == precision_route::fp16_autocast;
}
constexpr std::uint64_t weight_bytes(precision_route p) { return fp32_weights(p) ? fp32_bytes : bf16_bytes; }
/// Saved activations are bf16 under bf16 weights or autocast, fp32 only without mixed precision.
constexpr std::uint64_t activation_bytes(precision_route p) {
  return p == precision_route::fp32 ? fp32_bytes : bf16_bytes;
}
constexpr std::uint64_t master_bytes(precision_route p) {
  return p == precision_route::bf16_mixed ? fp32_bytes : 0;
}
/// The dtype the optimizer sees: the fp32 master in route A, the weights otherwise.
constexpr std::uint64_t optimizer_param_bytes(precision_route p) {
  return p == precision_route::bf16_pure ? bf16_bytes : fp32_bytes;
}
/// Adapter weights: the base dtype, or fp32 under PEFT's autocast_adapter_dtype.
constexpr std::uint64_t adapter_bytes(const training_setup& s) {
  return fp32_adapters(s.lora) ? fp32_bytes : weight_bytes(s.precision);
}
/// fp32 adapters are their own master: route A keeps no second fp32 copy of them.
constexpr std::uint64_t adapter_master_bytes(const training_setup& s) {
  return fp32_adapters(s.lora) ? 0 : master_bytes(s.precision);
}
constexpr std::uint64_t adapter_optimizer_param_bytes(const training_setup& s) {
  return fp32_adapters(s.lora) ? fp32_bytes : optimizer_param_bytes(s.precision);
}
constexpr bytes per_param(params n, std::uint64_t b) { return bytes(checked_mul(n.count(), b, "bytes")); }

/// Optimizer state of one trainable tensor in this setup (an adapter's in the adapter dtype).
constexpr bytes tensor_state(const param_tensor& t, const training_setup& s, bool adapter = false) {
  return optimizer_state_bytes(
      s.optimizer, t, adapter ? adapter_optimizer_param_bytes(s) : optimizer_param_bytes(s.precision),
      s.optim);
}

/// QLoRA base, realistic: bitsandbytes quantises nn.Linear weights only (lm_head excluded by
/// get_modules_to_not_convert); everything else keeps the load dtype.
constexpr bool quantised_by_bnb(const param_tensor& t) {
  return t.role == tensor_role::linear_weight && t.nn_linear && t.module != module_name::lm_head;
}
constexpr bytes qlora_base_tensor(const param_tensor& t, const training_setup& s) {
  return quantised_by_bnb(t) ? nf4_tensor_bytes(t.numel(), s.nf4) * t.copies
                             : per_param(t.total(), weight_bytes(s.precision));
}

/// Optimizer state priced tensor by tensor (8-bit blocks, Adafactor/Muon shapes): every weight in
/// full fine-tuning, else the adapters and the modules_to_save copies.
HEADROOM_NOINLINE constexpr bytes trainable_state_per_tensor(const model_shape& m, const training_setup& s) {
  bytes state{0};
  for (const param_tensor& t : parameter_inventory(m)) {
    if (s.method == training_method::full) {
      state += tensor_state(t, s);
      continue;
    }
    visit_adapters(
        t, s.lora, [&](const param_tensor& a) { state += tensor_state(a, s, true); }, true);
    if (s.lora.modules_to_save.contains(t.module)) state += tensor_state(t, s);
  }
  if (s.method != training_method::full)
    visit_model_adapters(
        m, s.lora, [&](const param_tensor& a) { state += tensor_state(a, s, true); }, true);
  return state;
}
/// A for-loop step (torch/optim/*.py _single_tensor_*) computes a tensor's `buffers` temporaries while the
/// previous tensor's denominator is still bound to its Python variable: the worst tensor i holds
/// buffers·n_i + n_(i−1) values, in model.parameters() order (visit_parameters_in_order).
HEADROOM_NOINLINE constexpr std::uint64_t for_loop_step_values(const model_shape& m,
                                                               const training_setup& s) {
  const std::uint64_t buffers = s.optimizer.buffers.per_tensor;
  if (buffers == 0) return 0;
  std::uint64_t previous = 0, worst = 0;
  auto step = [&](std::uint64_t n) {
    const std::uint64_t held = checked_add(checked_mul(buffers, n), previous, "optimizer temporaries");
    worst = held > worst ? held : worst;
    previous = n;
  };
  const bool full = s.method == training_method::full;
  visit_parameters_in_order(m, [&](const param_tensor& t) {
    if (full || s.lora.modules_to_save.contains(t.module)) {
      step(t.numel());
      return;
    }
    visit_adapters(
        t, s.lora, [&](const param_tensor& a) { step(a.numel()); }, true);  // A, B, magnitude
  });
  // PEFT registers the prompt encoder after the base model's parameters (_setup_prompt_encoder).
  if (!full)
    visit_model_adapters(
        m, s.lora, [&](const param_tensor& a) { step(a.numel()); }, true);
  return worst;
}

/// The realistic QLoRA base: each tensor 4-bit or in the load dtype (qlora_base_tensor).
HEADROOM_NOINLINE constexpr bytes qlora_realistic_weights(const model_shape& m, const training_setup& s) {
  bytes weights{0};
  for (const param_tensor& t : parameter_inventory(m)) weights += qlora_base_tensor(t, s);
  return weights;
}
}  // namespace detail

namespace detail {
/// What one pass over the model's tensors counts (estimate_static's first phase), in values.
struct tensor_counts {
  std::uint64_t model = 0;     ///< parameters of the model
  std::uint64_t adapters = 0;  ///< trainable adapter parameters
  std::uint64_t stored = 0;    ///< adapter parameters stored (LoRA-FA's frozen A, VeRA's projections too)
  std::uint64_t saved = 0;     ///< modules_to_save copies
  std::uint64_t tensors = 0;   ///< trainable tensors
  std::uint64_t largest = 0;   ///< values of the largest trainable tensor
  HEADROOM_INLINE constexpr void note_tensor(std::uint64_t copies, std::uint64_t numel) {
    tensors = checked_add(tensors, copies, "trainable tensors");
    largest = numel > largest ? numel : largest;
  }
};

/// Full fine-tuning: every tensor trains (gpt-oss stores one 3-D tensor per layer: stored_as).
HEADROOM_INLINE constexpr tensor_counts count_full(const model_shape& shape) {
  tensor_counts c;
  visit_parameters(shape, [&](param_tensor t) HEADROOM_INLINE {
    c.model = checked_add(c.model, t.total().count(), "parameter count");
    const stored_tensors as = stored_as(shape, t);
    c.note_tensor(as.count, as.numel);
  });
  return c;
}

/// Adapters: the adapter tensors on each target, the trainable copies of modules_to_save, and the
/// model-level adapters (VeRA's shared projections, stored and frozen; prompt-learning encoders, trainable).
HEADROOM_INLINE constexpr tensor_counts count_adapted(const model_shape& shape, const lora_config& lora) {
  tensor_counts c;
  visit_parameters(shape, [&](param_tensor t) HEADROOM_INLINE {
    const std::uint64_t n = t.total().count();
    c.model = checked_add(c.model, n, "parameter count");
    if (const adapter_counts a = adapter_counts_per_copy(t, lora); a.stored != 0) {
      c.stored = checked_add(c.stored, checked_mul(a.stored, t.copies), "adapters");
      c.adapters = checked_add(c.adapters, checked_mul(a.trainable, t.copies), "adapters");
      const std::uint64_t per = matrices_per_tensor(shape, t);  // a 3-D expert's adapters are 3-D too
      c.note_tensor(a.tensors * (t.copies / per), a.largest * per);
    }
    if (lora.modules_to_save.contains(t.module)) {  // a trainable copy; the original stays frozen
      c.saved = checked_add(c.saved, n, "modules_to_save");
      const stored_tensors as = stored_as(shape, t);
      c.note_tensor(as.count, as.numel);
    }
  });
  visit_model_adapters(shape, lora, [&](const param_tensor& a) {
    c.stored = checked_add(c.stored, a.total().count(), "adapters");
  });
  visit_model_adapters(
      shape, lora,
      [&](const param_tensor& a) {
        c.adapters = checked_add(c.adapters, a.total().count(), "adapters");
        c.note_tensor(1, a.numel());
      },
      true);
  if (c.stored == 0) fail_no_target_matched();
  return c;
}

/// A vision tower: resident in the load dtype (also under QLoRA), frozen unless full fine-tuning trains it.
/// Adds it to the counts; returns its parameters.
constexpr std::uint64_t count_vision_tower(const model_spec& spec, const training_setup& s,
                                           tensor_counts& c) {
  const std::uint64_t tower = spec.vision.params;
  if (tower > std::uint64_t{1} << 40) fail("vision params", "is absurdly large");
  if (s.train_vision_tower) {
    if (s.method != training_method::full)
      fail("train_vision_tower",
           "prices full fine-tuning of the tower; under LoRA/QLoRA it stays frozen (adapters on its "
           "linears are not priced)");
    if (tower == 0) fail("train_vision_tower", "the model has no vision tower");
    c.note_tensor(spec.vision.tensors, 0);
  }
  c.model = checked_add(c.model, tower, "parameter count");
  return tower;
}

/// One lumped tensor of `n` values, where pricing a kind of trainable value as one tensor is exact.
constexpr param_tensor lumped_tensor(std::uint64_t n) {
  return param_tensor{module_name::q_proj, tensor_role::linear_weight, n, 0, 1};
}

/// The base weights' bytes and layout: 16/32-bit per parameter, or NF4 (nominal blocks or real tensors).
struct base_weights {
  bytes weights{0};
  qlora_layout layout = qlora_layout::not_applicable;
};
constexpr base_weights price_base_weights(const training_setup& s, params priced, params_basis priced_on,
                                          bytes realistic) {
  if (s.method != training_method::qlora)
    return {per_param(priced, weight_bytes(s.precision)), qlora_layout::not_applicable};
  if (priced_on == params_basis::nominal)
    return {nf4_nominal_bytes(priced, s.nf4), qlora_layout::uniform_nominal};
  return {realistic, qlora_layout::realistic};
}

/// Optimizer state priced lumped: one tensor per kind of trainable value where that is exact (or, for nominal
/// 8-bit full fine-tuning, the course's W06 pricing with blocks amortised over N).
constexpr bytes lumped_state(const training_setup& s, const tensor_counts& c, params trainable) {
  if (s.method == training_method::full) return tensor_state(lumped_tensor(trainable.count()), s);
  return tensor_state(lumped_tensor(c.adapters), s, true) +
         (c.saved != 0 ? tensor_state(lumped_tensor(c.saved), s) : bytes(0));
}

/// Gradients and master copies. Trainable bytes: full fine-tuning in the weight dtype; adapters in theirs,
/// saved modules in the base's.
struct grads_and_master {
  bytes grads{0};
  bytes master{0};
};
constexpr grads_and_master price_grads_and_master(const training_setup& s, const tensor_counts& c,
                                                  params trainable) {
  const bool full = s.method == training_method::full;
  const std::uint64_t wb = weight_bytes(s.precision);
  bytes grads = full ? per_param(trainable, wb)
                     : per_param(params(c.adapters), adapter_bytes(s)) + per_param(params(c.saved), wb);
  if (s.grad_accum_buffer) grads += per_param(trainable, bf16_bytes);
  const bytes master = full ? per_param(trainable, master_bytes(s.precision))
                            : per_param(params(c.adapters), adapter_master_bytes(s)) +
                                  per_param(params(c.saved), master_bytes(s.precision));
  return {grads, master};
}
}  // namespace detail

/// Static training state. `basis` nominal uses `spec.nominal_params` when the spec has one.
/// Course check 3.1: full = (2 + 2 + 4 + 8)·N; LoRA/QLoRA = base bytes + 16·adapters.
/// One pass over the model's tensors counts (detail::tensor_counts); the per-tensor prices (8-bit blocks,
/// shape-dependent state, realistic QLoRA) come in a second, so the common pass stays a few multiply-adds.
[[nodiscard]] constexpr static_estimate estimate_static(const model_spec& spec, const training_setup& s,
                                                        params_basis basis = params_basis::nominal) {
  const params_basis priced_on = (basis == params_basis::nominal && spec.nominal_params != 0)
                                     ? params_basis::nominal
                                     : params_basis::exact;
  const bool full = s.method == training_method::full;
  const bool exact = priced_on == params_basis::exact;
  // Per-tensor state only where it differs from a lumped count; nominal 8-bit full runs are lumped.
  const bool state_per_tensor =
      !same_bytes_per_value(s.optimizer) && (!full || exact || shape_dependent(s.optimizer));
  if (!full) detail::validate_lora(s.lora);
  detail::validate_optimizer_impl(s.optimizer, s.optim.impl, s.runtime);
  detail::tensor_counts c = full ? detail::count_full(spec.shape) : detail::count_adapted(spec.shape, s.lora);
  bytes state = state_per_tensor ? detail::trainable_state_per_tensor(spec.shape, s) : bytes{0};
  const std::uint64_t for_loop =
      resolved_impl(s.optimizer, s.optim.impl, s.runtime) == optimizer_impl::for_loop
          ? detail::for_loop_step_values(spec.shape, s)
          : 0;
  bytes realistic_weights =
      s.method == training_method::qlora && exact ? detail::qlora_realistic_weights(spec.shape, s) : bytes{0};
  const std::uint64_t tower = detail::count_vision_tower(spec, s, c);
  realistic_weights += detail::per_param(params(tower), detail::weight_bytes(s.precision));
  const std::uint64_t frozen_tower = s.train_vision_tower ? 0 : tower;
  const params priced = exact ? params(c.model) : params(spec.nominal_params);
  const params trainable = full ? params(priced.count() - (exact ? frozen_tower : 0))
                                : params(detail::checked_add(c.adapters, c.saved, "trainable parameters"));
  // Shape-dependent state over the tower: priced as one lumped tensor (its tensors are ViT-sized matrices).
  if (state_per_tensor && s.train_vision_tower)
    state += detail::tensor_state(detail::lumped_tensor(tower), s);
  if (!state_per_tensor) state = detail::lumped_state(s, c, trainable);
  // torch's per-tensor `step` counters are real allocations; the course's nominal pricing leaves them out.
  if (exact) state += optimizer_step_counter_bytes(s.optimizer, c.tensors, s.runtime);
  const detail::base_weights base = detail::price_base_weights(s, priced, priced_on, realistic_weights);
  const detail::grads_and_master gm = detail::price_grads_and_master(s, c, trainable);
  const std::uint64_t wb = detail::weight_bytes(s.precision);
  const bytes adapters_resident =  // adapters in their dtype (with LoRA-FA's frozen A) and saved copies
      full ? bytes(0)
           : detail::per_param(params(c.stored), detail::adapter_bytes(s)) +
                 detail::per_param(params(c.saved), wb);
  // Built in one aggregate (no zero-fill first: GCC turns that into a slow `rep stos`).
  return static_estimate{params(c.model),
                         priced,
                         params(c.stored),
                         params(c.saved),
                         trainable,
                         c.tensors,
                         params(c.largest),
                         params(for_loop),
                         priced_on,
                         base.layout,
                         full && !exact && shape_dependent(s.optimizer),
                         memory_buckets{base.weights, adapters_resident, gm.grads, gm.master, state}};
}

/// Bucket names in output order, and a getter for each (one list for every printer).
struct bucket_field {
  std::string_view name;
  bytes memory_buckets::*member;
};
inline constexpr std::array<bucket_field, 9> bucket_fields{{
    {"weights", &memory_buckets::weights},
    {"adapter_weights", &memory_buckets::adapter_weights},
    {"grads", &memory_buckets::grads},
    {"master", &memory_buckets::master},
    {"optimizer", &memory_buckets::optimizer},
    {"activations", &memory_buckets::activations},
    {"logits", &memory_buckets::logits},
    {"temporaries", &memory_buckets::temporaries},
    {"overhead", &memory_buckets::overhead},
}};

[[nodiscard]] constexpr std::string_view layout_name(qlora_layout l) {
  switch (l) {
    case qlora_layout::uniform_nominal:
      return "uniform-nominal";
    case qlora_layout::realistic:
      return "realistic";
    case qlora_layout::not_applicable:
      break;
  }
  return "";
}

/// Plain-language caveats that belong next to the numbers (printed by every front end).
[[nodiscard]] inline std::vector<std::string> estimate_notes(const static_estimate& e,
                                                             const training_setup& s) {
  std::vector<std::string> notes;
  if (e.basis == params_basis::nominal)
    notes.emplace_back("base priced on the nominal N = " + with_commas(e.priced_params.count()) +
                       " parameters (course Table 1); --exact-params uses the exact " +
                       with_commas(e.model_params.count()));
  if (e.layout == qlora_layout::uniform_nominal)
    notes.emplace_back("QLoRA base: every parameter at the course's nominal " +
                       std::to_string(nf4_bits_per_param(s.nf4).millibits()) +
                       " millibits; the realistic layout (--exact-params) keeps embeddings, "
                       "lm_head and norms in 16-bit as bitsandbytes does");
  if (e.layout == qlora_layout::realistic)
    notes.emplace_back(
        "QLoRA base: 4-bit nn.Linear weights (exact block arithmetic); embeddings, "
        "lm_head and norms stay in the load dtype, as bitsandbytes does");
  if (e.optimizer_from_shapes)
    notes.emplace_back(std::string(s.optimizer.name) +
                       " state depends on tensor shapes, so it is priced on the exact per-tensor "
                       "inventory, not the nominal N");
  if (s.optimizer.storage == state_storage::torchao_8bit ||
      s.optimizer.storage == state_storage::torchao_4bit)
    notes.emplace_back(std::string("torchao ") +
                       (s.optimizer.storage == state_storage::torchao_8bit ? "8" : "4") +
                       "-bit state: one fp32 scale per " + std::to_string(s.optim.block_size) +
                       "-value block and a code book per state tensor; tensors under " +
                       std::to_string(detail::torchao_min_quantized) +
                       " values, or not a whole number of blocks, keep state in the parameter dtype");
  if (s.optimizer.steps_in_backward)
    notes.emplace_back(std::string(s.optimizer.name) +
                       " fuses its update into backward: no gradient is kept past its own step");
  if (s.optimizer.storage == state_storage::blockwise_8bit)
    notes.emplace_back("8-bit state: one fp32 absmax per " + std::to_string(s.optim.block_size) +
                       "-value block; tensors under " + std::to_string(s.optim.min_8bit_size) +
                       " values keep fp32 state (bitsandbytes min_8bit_size)");
  if (s.optimizer.paged)
    notes.emplace_back(
        "paged optimizer: state sits in CUDA unified memory, outside "
        "torch.cuda.memory_allocated, and can spill to host RAM under pressure");
  if (s.precision == precision_route::bf16_pure && s.method == training_method::full)
    notes.emplace_back(
        "pure bf16 without a master copy: updates below half the bf16 spacing "
        "(about 0.002 near 1.0) round to nothing");
  return notes;
}

}  // namespace headroom
