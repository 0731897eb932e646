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

/// Static training state. `basis` nominal uses `spec.nominal_params` when the spec has one.
/// Course check 3.1: full = (2 + 2 + 4 + 8)·N; LoRA/QLoRA = base bytes + 16·adapters.
/// One pass over the model's tensors (visit_parameters) prices the base, adapters and state.
[[nodiscard]] constexpr static_estimate estimate_static(const model_spec& spec, const training_setup& s,
                                                        params_basis basis = params_basis::nominal) {
  using detail::checked_add;
  using detail::checked_mul;
  const params_basis priced_on = (basis == params_basis::nominal && spec.nominal_params != 0)
                                     ? params_basis::nominal
                                     : params_basis::exact;
  const bool full = s.method == training_method::full;
  // Per-tensor state only where it differs from a lumped count; nominal 8-bit full runs are lumped.
  const bool state_per_tensor = !same_bytes_per_value(s.optimizer) &&
                                (!full || priced_on == params_basis::exact || shape_dependent(s.optimizer));
  const bool realistic_qlora = s.method == training_method::qlora && priced_on == params_basis::exact;
  if (!full) detail::validate_lora(s.lora);
  detail::validate_optimizer_impl(s.optimizer, s.optim.impl, s.runtime);
  // Sums over the tensors, kept in locals (registers) while visiting.
  std::uint64_t model = 0, adapters = 0, stored = 0, saved = 0, tensors = 0, largest = 0;
  bytes state{0}, realistic_weights{0};
  auto note_tensor = [&](std::uint64_t copies, std::uint64_t numel) HEADROOM_INLINE {
    tensors = checked_add(tensors, copies, "trainable tensors");
    largest = numel > largest ? numel : largest;
  };
  // The counts in one pass; the per-tensor prices (8-bit blocks, shape-dependent state, realistic
  // QLoRA) in a second, so the common pass stays a few multiply-adds per tensor.
  if (full) {
    visit_parameters(spec.shape, [&](param_tensor t) HEADROOM_INLINE {
      model = checked_add(model, t.total().count(), "parameter count");
      const stored_tensors as = stored_as(spec.shape, t);  // gpt-oss: one 3-D tensor per layer
      note_tensor(as.count, as.numel);
    });
  } else {
    visit_parameters(spec.shape, [&](param_tensor t) HEADROOM_INLINE {
      const std::uint64_t n = t.total().count();
      model = checked_add(model, n, "parameter count");
      if (const adapter_counts a = adapter_counts_per_copy(t, s.lora); a.stored != 0) {
        stored = checked_add(stored, checked_mul(a.stored, t.copies), "adapters");
        adapters = checked_add(adapters, checked_mul(a.trainable, t.copies), "adapters");
        note_tensor(a.tensors * t.copies, a.largest);
      }
      if (s.lora.modules_to_save.contains(t.module)) {  // a trainable copy; the original stays frozen
        saved = checked_add(saved, n, "modules_to_save");
        const stored_tensors as = stored_as(spec.shape, t);
        note_tensor(as.count, as.numel);
      }
    });
    // VeRA's shared projections (stored, frozen) and the prompt-learning encoders (trainable).
    visit_model_adapters(spec.shape, s.lora, [&](const param_tensor& a) {
      stored = checked_add(stored, a.total().count(), "adapters");
    });
    visit_model_adapters(
        spec.shape, s.lora,
        [&](const param_tensor& a) {
          adapters = checked_add(adapters, a.total().count(), "adapters");
          note_tensor(1, a.numel());
        },
        true);
    if (stored == 0) detail::fail_no_target_matched();
  }
  if (state_per_tensor) state = detail::trainable_state_per_tensor(spec.shape, s);
  const std::uint64_t for_loop =
      resolved_impl(s.optimizer, s.optim.impl, s.runtime) == optimizer_impl::for_loop
          ? detail::for_loop_step_values(spec.shape, s)
          : 0;
  if (realistic_qlora) realistic_weights = detail::qlora_realistic_weights(spec.shape, s);
  // A vision tower: resident in the load dtype (also under QLoRA), frozen unless full fine-tuning trains it.
  const std::uint64_t tower = spec.vision.params;
  if (tower > std::uint64_t{1} << 40) detail::fail("vision params", "is absurdly large");
  if (s.train_vision_tower) {
    if (!full)
      detail::fail("train_vision_tower",
                   "prices full fine-tuning of the tower; under LoRA/QLoRA it stays frozen (adapters on its "
                   "linears are not priced)");
    if (tower == 0) detail::fail("train_vision_tower", "the model has no vision tower");
    note_tensor(spec.vision.tensors, 0);
  }
  const std::uint64_t frozen_tower = s.train_vision_tower ? 0 : tower;
  model = checked_add(model, tower, "parameter count");
  realistic_weights += detail::per_param(params(tower), detail::weight_bytes(s.precision));

  const params priced = priced_on == params_basis::nominal ? params(spec.nominal_params) : params(model);
  const params trainable =
      full ? params(priced.count() - (priced_on == params_basis::exact ? frozen_tower : 0))
           : params(checked_add(adapters, saved, "trainable parameters"));
  // Shape-dependent state over the tower: priced as one lumped tensor (its tensors are ViT-sized matrices).
  if (state_per_tensor && s.train_vision_tower)
    state +=
        detail::tensor_state(param_tensor{module_name::q_proj, tensor_role::linear_weight, tower, 0, 1}, s);
  const std::uint64_t wb = detail::weight_bytes(s.precision);
  qlora_layout layout = qlora_layout::not_applicable;
  bytes weights{0};
  if (full || s.method == training_method::lora) {
    weights = detail::per_param(priced, wb);
  } else if (priced_on == params_basis::nominal) {
    layout = qlora_layout::uniform_nominal;
    weights = nf4_nominal_bytes(priced, s.nf4);
  } else {
    layout = qlora_layout::realistic;
    weights = realistic_weights;
  }
  // One lumped tensor per kind of trainable value where that is exact (or, for nominal 8-bit full
  // fine-tuning, the course's W06 pricing with blocks amortised over N).
  auto lumped = [](std::uint64_t n) {
    return param_tensor{module_name::q_proj, tensor_role::linear_weight, n, 0, 1};
  };
  if (!state_per_tensor)
    state = full ? detail::tensor_state(lumped(trainable.count()), s)
                 : detail::tensor_state(lumped(adapters), s, true) +
                       (saved != 0 ? detail::tensor_state(lumped(saved), s) : bytes(0));
  // torch's per-tensor `step` counters are real allocations; the course's nominal pricing leaves them out.
  if (priced_on == params_basis::exact) state += optimizer_step_counter_bytes(s.optimizer, tensors);
  // Trainable bytes: full fine-tuning in the weight dtype; adapters in theirs, saved modules in the base's.
  const bytes adapter_part = detail::per_param(params(adapters), detail::adapter_bytes(s));
  const bytes stored_part =
      detail::per_param(params(stored), detail::adapter_bytes(s));  // + LoRA-FA's frozen A
  const bytes trainable_bytes =
      full ? detail::per_param(trainable, wb) : adapter_part + detail::per_param(params(saved), wb);
  bytes grads = trainable_bytes;
  if (s.grad_accum_buffer) grads += detail::per_param(trainable, detail::bf16_bytes);
  const bytes master = full ? detail::per_param(trainable, detail::master_bytes(s.precision))
                            : detail::per_param(params(adapters), detail::adapter_master_bytes(s)) +
                                  detail::per_param(params(saved), detail::master_bytes(s.precision));
  // Built in one aggregate (no zero-fill first: GCC turns that into a slow `rep stos`).
  return static_estimate{
      params(model),
      priced,
      params(stored),
      params(saved),
      trainable,
      tensors,
      params(largest),
      params(for_loop),
      priced_on,
      layout,
      full && priced_on == params_basis::nominal && shape_dependent(s.optimizer),
      memory_buckets{weights, full ? bytes(0) : stored_part + detail::per_param(params(saved), wb), grads,
                     master, state}};
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
