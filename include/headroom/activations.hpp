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
  eager,      ///< HF eager attention: materialises the s × s scores and probabilities
  sdpa,       ///< torch SDPA (memory-efficient / flash backends): output + log-sum-exp
  flash,      ///< FlashAttention-2/3: output + log-sum-exp, GQA without expanding K/V
  sdpa_math,  ///< SDPA's math fallback (the CPU path of torch 1.13): scaled q, k and the probabilities
};
enum class checkpointing : std::uint8_t {
  none,                  ///< keep every layer's saved tensors
  full,                  ///< keep each block's input, recompute its internals in backward (TRL default)
  selective,             ///< TRL selective: keep block input and attention output, recompute the rest
  offload,               ///< saved-tensor offloading without checkpointing: every saved tensor to host RAM
  offload_checkpointed,  ///< Unsloth's "unsloth" mode: its own checkpoint function offloads the block inputs
  checkpoint_offload,    ///< torchtune / TRL OffloadActivations over checkpointed blocks: their inputs
                         ///< offloaded
};
/// What the offloading context wraps: torchtune's recipes the model forward, TRL's SFTTrainer the whole
/// training_step (so the loss's saved tensors are copied to host RAM too).
enum class offload_scope : std::uint8_t { model, step };
inline constexpr std::array<named<offload_scope>, 2> offload_scope_names{
    {{"model", offload_scope::model}, {"step", offload_scope::step}}};

/// Modes that recompute every block in backward from its checkpointed input.
[[nodiscard]] constexpr bool recomputes_blocks(checkpointing c) {
  return c == checkpointing::full || c == checkpointing::offload_checkpointed ||
         c == checkpointing::checkpoint_offload;
}
/// Modes that copy saved tensors to host RAM.
[[nodiscard]] constexpr bool offloads_activations(checkpointing c) {
  return c == checkpointing::offload || c == checkpointing::offload_checkpointed ||
         c == checkpointing::checkpoint_offload;
}
/// Modes that offload through OffloadActivations' saved-tensor hooks (so the context's scope matters), not
/// Unsloth's own checkpoint function.
[[nodiscard]] constexpr bool offloads_through_hooks(checkpointing c) {
  return c == checkpointing::offload || c == checkpointing::checkpoint_offload;
}
/// What each offloading mode moves, what stays on the GPU, and where it comes from (for --explain).
[[nodiscard]] constexpr std::string_view offload_mechanism(checkpointing c) {
  switch (c) {
    case checkpointing::offload:
      return "saved-tensor hooks (OffloadActivations) copy every saved tensor of 1 KiB or more to pinned "
             "host RAM; the GPU keeps one block's tensors in flight (torchtune / TRL "
             "activation_offloading without checkpointing)";
    case checkpointing::checkpoint_offload:
      return "OffloadActivations over checkpointed blocks: each block input goes to pinned host RAM; in "
             "backward the input being recomputed and the previous node's are on the GPU (torchtune "
             "enable_activation_offloading, TRL activation_offloading with gradient_checkpointing)";
    case checkpointing::offload_checkpointed:
      return "Unsloth's offloaded checkpoint function copies each block input to host RAM (non_blocking); "
             "one input is back on the GPU while its block is recomputed (unsloth_zoo "
             "gradient_checkpointing.py)";
    default:
      return "";
  }
}

/// OffloadActivations' defaults (torchtune training/_activation_offloading.py, TRL
/// models/activation_offloading.py): tensors under 1 KiB stay, and with streams a backward node's
/// unpacked tensors are freed only once the next node has unpacked its own.
inline constexpr std::uint64_t offload_min_bytes = 1024;
inline constexpr std::uint64_t offload_backward_inputs = 2;
enum class activation_formula : std::uint8_t { korthikanti, detailed };

inline constexpr std::array<named<attention_impl>, 4> attention_names{
    {{"eager", attention_impl::eager},
     {"sdpa", attention_impl::sdpa},
     {"flash", attention_impl::flash},
     {"sdpa-math", attention_impl::sdpa_math}}};
inline constexpr std::array<named<checkpointing>, 6> checkpointing_names{
    {{"none", checkpointing::none},
     {"full", checkpointing::full},
     {"selective", checkpointing::selective},
     {"offload", checkpointing::offload},
     {"checkpoint-offload", checkpointing::checkpoint_offload},
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
  bool attention_dropout = false;  ///< attention_dropout > 0: the kernel keeps a mask and the dropped scores
  bool reentrant = true;  ///< torch.utils.checkpoint(use_reentrant=...): transformers' default is True
  offload_scope offload_wraps = offload_scope::model;  ///< what the offloading context wraps (offload modes)
  /// torch.compile (Inductor with AOTAutograd's min-cut partitioner): elementwise chains are fused and
  /// recomputed in backward, so only matmul outputs, kernel outputs, norm inputs and their rstd are saved.
  bool compiled = false;
};

/// Why torch.compile is not modelled for this block, or nullptr when it is (docs/activations.md,
/// "torch.compile").
[[nodiscard]] constexpr const char* compile_not_modelled(const model_shape& m, const training_setup& s,
                                                         const activation_config& c) {
  if (!c.compiled) return nullptr;
  if (m.num_experts != 0)
    return "MoE blocks: the data-dependent expert loop breaks the graph; the routed part is not modelled";
  if (c.attention == attention_impl::eager || c.attention == attention_impl::sdpa_math)
    return "eager / sdpa-math attention: Inductor decomposes the score chain, which is not modelled; use "
           "flash or "
           "sdpa";
  if (s.method != training_method::full && s.lora.use_dora)
    return "DoRA: its weight-norm graph under Inductor is not modelled";
  return nullptr;
}

/// The largest micro-batch and sequence length an estimate accepts (anything larger is a typo); the
/// --fit solvers search up to the same bounds.
inline constexpr std::uint64_t max_workload_batch = std::uint64_t{1} << 24;
inline constexpr std::uint64_t max_workload_seq_len = std::uint64_t{1} << 26;

/// The micro-batch as the blocks and the loss see it: prompt tuning's virtual tokens prepended to every
/// sequence (lora.hpp prompt_positions); otherwise `c` itself. Every public function below takes the
/// dataset's micro-batch and applies this itself.
[[nodiscard]] constexpr activation_config positions_seen(const activation_config& c,
                                                         const training_setup& s) {
  activation_config out = c;
  if (s.method != training_method::full)
    out.seq_len = detail::checked_add(c.seq_len, prompt_positions(s.lora), "seq_len");
  return out;
}

/// One saved tensor (or group) with its size and why autograd keeps it.
struct activation_term {
  std::string_view name;  ///< the tensor, or the module it belongs to (q_proj, …)
  bytes amount{0};
  std::string_view reason;
};

/// A fixed-capacity list of terms, so the inventory stays constexpr.
struct activation_terms {
  static constexpr std::size_t capacity = 192;  // the longest list (activations_test.cpp) has 142
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
  bytes layer{0};               ///< what one block saves without recomputation
  bytes model_level{0};         ///< saved once per model (final norm, lm_head input, RoPE tables, mask)
  bytes per_layer_kept{0};      ///< what each block keeps on the GPU under the checkpointing mode
  bytes recompute{0};           ///< one block's internals alive while it is recomputed or in flight
  bytes first_layer_saving{0};  ///< what the first layer does not save when its input needs no grad
  bytes checkpoint_state{0};    ///< kept per forward by the checkpoints themselves (CPU: the RNG states)
  bytes forward_cached{0};    ///< alive only in forward: autocast-cached casts the first layer does not save
  bytes module_transient{0};  ///< freed within one module's forward (and its recompute): DoRA's weight norm
  bytes retained{0};  ///< still alive when backward ends: reentrant checkpoints' stashes and bound arguments
  bytes kept{0};  ///< alive at the end of forward: L·per_layer_kept + model_level + checkpoint_state − saving
  bytes gpu{0};   ///< kept + recompute: the course's start-of-backward total
  bytes host{0};  ///< offloaded to pinned host RAM (offload modes)
};

namespace detail {
constexpr std::uint64_t mul3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return checked_mul(checked_mul(a, b, "activation size"), c, "activation size");
}
constexpr bytes act(std::uint64_t a, std::uint64_t b, std::uint64_t c) { return bytes(mul3(a, b, c)); }

/// The dtypes a block works in, in bytes per value.
struct block_dtypes {
  std::uint64_t compute;  ///< matmul outputs: 2 under bf16 weights or autocast, 4 in fp32
  std::uint64_t stream;   ///< residual stream, norm outputs, RoPE tables: the weights' dtype
  std::uint64_t adapter;  ///< LoRA weights (fp32 under PEFT's autocast_adapter_dtype)
  bool autocast;          ///< torch.autocast casts each matmul's fp32 operands to 16-bit
};
constexpr block_dtypes dtypes_of(const training_setup& s) {
  return {activation_bytes(s.precision), weight_bytes(s.precision), adapter_bytes(s), autocasts(s.precision)};
}

/// The name PEFT and transformers give a module (for the itemised terms).
constexpr std::string_view module_label(module_name m) {
  // Indexed by module_name (a table lookup: the estimates call this for every linear).
  constexpr std::array<std::string_view, 14> labels{
      {"embed_tokens", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "gate",
       "shared_expert_gate", "norm", "lm_head", "qkv_proj", "gate_up_proj"}};
  return labels[static_cast<std::size_t>(m)];
}

/// torch.get_rng_state(): the CPU generator's state, 5,056 bytes (checkpoints stash one per call).
inline constexpr std::uint64_t cpu_rng_state_bytes = 5056;

/// What one block's inventory needs, computed once.
struct block_context {
  const model_shape& m;
  const training_setup& s;
  const activation_config& c;
  block_dtypes dt;
  bool full;             ///< every weight trains (full fine-tuning)
  std::uint64_t scalar;  ///< bytes of a saved Python-scalar operand (CPU only)
  std::uint64_t mask;    ///< bytes per element of a dropout mask: the input's on a CPU, 1 on CUDA (0 = input)
  bool input_grad =
      true;  ///< the block's input requires grad (false: the first layer over frozen embeddings)

  [[nodiscard]] constexpr bool adapted(module_name mod) const {
    return !full && adapts_linears(s.lora) && s.lora.targets.contains(mod);
  }
  /// Whether the norm weights train (full fine-tuning, or LN tuning's copies).
  [[nodiscard]] constexpr bool norm_weights_train() const { return full || norms_train(s.lora); }
  /// Whether a projection of the block input has an output that requires grad.
  [[nodiscard]] constexpr bool output_grad(module_name mod) const {
    return input_grad || full || adapted(mod) ||
           (mod != module_name::qkv_proj && m.fused_qkv && adapted(module_name::qkv_proj));
  }
};
constexpr block_context context_of(const model_shape& m, const training_setup& s, const activation_config& c,
                                   bool input_grad = true) {
  return {m,
          s,
          c,
          dtypes_of(s),
          s.method == training_method::full,
          saved_scalar_bytes(s.runtime),
          s.runtime.device == device_kind::cpu ? 0u : 1u,
          input_grad};
}
/// The first layer's input requires grad only when the embeddings train or the caller asks for it:
/// PEFT models call enable_input_require_grads() with gradient checkpointing (and in
/// prepare_model_for_kbit_training); plain LoRA without checkpointing does not.
constexpr bool first_layer_input_grad(const training_setup& s, const activation_config& c) {
  return s.method == training_method::full || c.ckpt != checkpointing::none ||
         s.lora.method == peft_method::prompt_tuning ||  // the trainable prompts are part of the input
         (s.lora.method == peft_method::lora && s.lora.targets.contains(module_name::embed_tokens)) ||
         s.lora.modules_to_save.contains(module_name::embed_tokens);
}
constexpr std::uint64_t mask_bytes(const block_context& k, std::uint64_t input_bytes) {
  return k.mask == 0 ? input_bytes : k.mask;  // CPU: a scaled mask in the input dtype; CUDA: bool
}

/// One RMSNorm over `rows` rows of `width` values whose input has `in_bytes` per value. Llama's
/// (LlamaRMSNorm.forward): x.to(fp32) is saved by pow and by the rsqrt product; Gemma's
/// (Gemma2RMSNorm): the same on x.float(), then ·(1 + w.float()) in fp32. An fp32 input is its own copy.
template <class Out>
HEADROOM_INLINE constexpr void add_rms_norm(Out& out, std::string_view name, std::uint64_t rows,
                                            std::uint64_t width, std::uint64_t in_bytes,
                                            const block_context& k, bool input_grad = true) {
  const bool weight_grad = k.norm_weights_train();
  if (!input_grad && !weight_grad) return;  // nothing in it requires grad: autograd records nothing
  const std::uint64_t values = checked_mul(rows, width, "activation size");
  if (k.c.compiled) {  // Inductor keeps the input and the reduction, and recomputes the normalised output
    out.add(name, bytes(checked_mul(values, in_bytes, "activation size")),
            "compiled: the norm's input, from which backward recomputes its output");
    out.add(name, act(rows, 1, fp32_bytes),
            "compiled: rsqrt(variance + eps), a reduction it does not recompute");
    return;
  }
  const bytes fp32_copy = bytes(checked_mul(values, fp32_bytes, "activation size"));
  if (input_grad) {
    out.add(name, fp32_copy, "the fp32 input (x.to(float32)), saved by pow(2) and the rsqrt product");
    if (k.s.runtime.torch == torch_generation::v1_13)
      out.add(name, fp32_copy, "x², saved by mean() (torch 1.13; 2.x keeps only its size)");
    out.add(name, act(rows, 1, fp32_bytes), "rsqrt(variance + eps), one fp32 value per row");
  }
  if (k.m.norm_scale_fp32) {
    if (input_grad)
      out.add(name, act(width, 1, fp32_bytes), "1 + weight.float(), saved by the scale product");
    if (weight_grad) out.add(name, fp32_copy, "the fp32 normalised input, for the weight's gradient");
  } else if (weight_grad) {
    out.add(name, bytes(checked_mul(values, in_bytes, "activation size")),
            "the normalised input in the input dtype, for the weight's gradient");
  }
}

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

/// An adapted linear under torch.compile: the adapter's matmul outputs stay, its input casts and dropout
/// products are recomputed, and a dropout mask (a random op, never recomputed) is kept as bool.
template <class Out>
HEADROOM_INLINE constexpr void add_compiled_adapter(Out& out, const block_context& k, const linear_site& site,
                                                    std::uint64_t rows, std::uint64_t in) {
  const std::string_view mod = module_label(site.module);
  if (k.s.lora.method == peft_method::ia3) return add_ia3(out, k, site, rows, in);
  if (k.s.lora.method == peft_method::vera) return add_vera(out, k, site, rows, in);
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
  const bool adapted = k.adapted(site.module);
  if (k.c.compiled) {  // inputs and weight casts are recomputed from what the norms and matmuls saved
    if (adapted) add_compiled_adapter(out, k, site, rows, in);
    return;
  }
  if (k.dt.autocast) {
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
  } else if (k.full) {
    saves_shared = true;  // mm saves its input when the weight needs a gradient
  }
  if (!adapted) return;
  if (k.s.lora.method == peft_method::ia3) return add_ia3(out, k, site, rows, in);
  if (k.s.lora.method == peft_method::vera) return add_vera(out, k, site, rows, in);
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

/// The attention core between the projections and o_proj: RoPE, the kernel, its saved tensors.
template <class Out>
HEADROOM_INLINE constexpr void add_attention_core(Out& out, const block_context& k, std::uint64_t t) {
  const model_shape& m = k.m;
  const activation_config& c = k.c;
  const std::uint64_t ab = k.dt.compute, q = query_width(m), kv = kv_width(m);
  // b·a·s² scores, for the kernels that materialise them
  auto score_bytes = [&] { return act(c.batch, checked_mul(m.num_attention_heads, c.seq_len), c.seq_len); };
  auto lse = [&] { return act(t, m.num_attention_heads, fp32_bytes); };
  // The dtype RoPE leaves q in: q·cos promotes to the tables' (stream) dtype under autocast.
  const std::uint64_t query_bytes = ab > k.dt.stream ? ab : k.dt.stream;
  // Which of q, k, v require grad (all of them but in a first layer over frozen embeddings, where only
  // the adapted projections do); a product saves each operand only for the other's gradient.
  const bool qg = k.output_grad(module_name::q_proj), kg = k.output_grad(module_name::k_proj);
  const bool vg = k.output_grad(module_name::v_proj), scores_grad = qg || kg;
  out.add("RoPE", bytes(0), "q·cos + rotate_half(q)·sin saves only the shared cos/sin tables");
  switch (c.attention) {
    case attention_impl::flash:
      out.add("flash-attn q, k, v", act(t, q + 2 * kv, ab),
              "kernel inputs at their GQA widths, for backward");
      out.add("flash-attn output", act(t, q, ab), "saved by the kernel; o_proj reads the same storage");
      out.add("flash-attn log-sum-exp", lse(), "fp32 softmax statistics per head and token");
      return;
    case attention_impl::sdpa:
      out.add("sdpa q, k, v", act(t, 3 * q, ab), "repeat_kv expands K and V to all heads before SDPA");
      out.add("sdpa output", act(t, q, ab), "saved by the kernel for its backward");
      out.add("sdpa log-sum-exp", lse(), "fp32 softmax statistics per head and token");
      return;
    case attention_impl::sdpa_math: {
      const bytes scores = score_bytes();
      // aten _scaled_dot_product_attention_math: q·scale and kᵀ·scale are new tensors, softmax runs in
      // the input dtype and its output is both saved and multiplied by v.
      out.add("sdpa-math q, k", act(t, (kg ? q : 0) + (qg ? q : 0), ab),
              "q·scale and kᵀ·scale, saved by their matmul");
      if (scores_grad || vg)
        out.add("sdpa-math probabilities", scores * ab,
                "softmax output in the input dtype, saved by softmax and ·v");
      if (c.attention_dropout) {
        if (scores_grad) out.add("sdpa-math dropout mask", scores * mask_bytes(k, ab), "the dropout mask");
        if (vg) out.add("sdpa-math dropped probabilities", scores * ab, "dropout's output, saved by ·v");
      }
      if (scores_grad)
        out.add("sdpa-math v", act(t, q, ab), "saved by probs·v; repeat_kv expands V to all heads");
      return;
    }
    case attention_impl::eager:
      break;
  }
  // transformers eager_attention_forward.
  const bytes scores = score_bytes();
  out.add("eager q, k", act(t, (kg ? q : 0) + (qg ? q : 0), ab),
          "saved by q·kᵀ; repeat_kv expands K to all heads");
  if (scores_grad) {
    if (k.scalar != 0)
      out.add("eager scaling", bytes(k.scalar), "the Python float `scaling`, saved by the product");
    if (m.attn_logit_softcapping) {
      out.add("eager soft-capping", scores * ab, "tanh(scores / cap), saved by tanh");
      if (k.scalar != 0)
        out.add("eager soft-capping", bytes(2 * k.scalar), "the Python floats of / cap and · cap");
    }
    out.add("eager softmax output", scores * fp32_bytes, "softmax(dtype=float32) saves its output");
  }
  if (c.attention_dropout) {
    if (scores_grad) out.add("eager dropout mask", scores * mask_bytes(k, query_bytes), "the dropout mask");
    if (vg)
      out.add("eager dropped probabilities", scores * ab,
              "dropout's output (cast to bf16 under autocast), saved by ·v");
  } else if (ab != fp32_bytes && vg) {
    out.add("eager probabilities", scores * ab, "the cast to the compute dtype, saved by probs·v");
  }
  if (scores_grad)
    out.add("eager v", act(t, q, ab),
            "saved by probs·v; repeat_kv (or matmul's reshape) makes it contiguous");
}

/// The SwiGLU (or GELU) of a dense MLP or an expert on `rows` rows: act(gate), act·up, down.
template <class Out>
HEADROOM_INLINE constexpr void add_gated_mlp(Out& out, const block_context& k, std::uint64_t rows,
                                             std::uint64_t ff, std::uint64_t in_bytes, std::uint64_t copies) {
  const model_shape& m = k.m;
  const std::uint64_t ab = k.dt.compute, d = m.hidden_size;
  using mn = module_name;
  if (m.fused_gate_up)
    add_linear_group(out, k, "gate_up_proj input", rows, d, in_bytes,
                     std::array<linear_site, 1>{{{mn::gate_up_proj, 2 * ff, copies}}});
  else
    add_linear_group(out, k, "gate/up_proj input", rows, d, in_bytes,
                     std::array<linear_site, 2>{{{mn::gate_proj, ff, copies}, {mn::up_proj, ff, copies}}});
  // A projection's output is in the compute dtype, except VeRA's under autocast, which returns in its input's
  // dtype (vera/layer.py Linear.forward ends with result.to(previous_dtype)).
  auto out_bytes = [&](module_name mod) {
    return k.dt.autocast && k.s.lora.method == peft_method::vera && k.adapted(mod) ? in_bytes : ab;
  };
  const std::uint64_t gate = out_bytes(m.fused_gate_up ? mn::gate_up_proj : mn::gate_proj);
  const std::uint64_t up = out_bytes(m.fused_gate_up ? mn::gate_up_proj : mn::up_proj);
  if (k.c.compiled) {  // act(gate)·up is recomputed in backward from the two matmul outputs
    out.add("gate_proj output", act(rows, ff, gate), "compiled: a matmul output kept for the fused SwiGLU");
    out.add("up_proj output", act(rows, ff, up), "compiled: a matmul output kept for the fused SwiGLU");
    add_linear_group(out, k, "down_proj input", rows, ff, gate > up ? gate : up,
                     std::array<linear_site, 1>{{{mn::down_proj, d, copies}}});
    return;
  }
  out.add("gate_proj output", act(rows, ff, gate), "saved by the activation function (SiLU / GELU)");
  out.add("act(gate)", act(rows, ff, gate), "saved by the product with up_proj's output");
  out.add("up_proj output", act(rows, ff, up), "saved by the product with act(gate)");
  add_linear_group(out, k, "down_proj input", rows, ff, gate > up ? gate : up,
                   std::array<linear_site, 1>{{{mn::down_proj, d, copies}}});
}

/// Per-tensor inventory of one decoder block without recomputation, into `out`. t = b·s tokens.
template <class Out>
constexpr void layer_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                           Out& out, bool input_grad = true) {
  using mn = module_name;
  if (const char* why = compile_not_modelled(m, s, c)) fail("compile", why);
  const block_context k0 = context_of(m, s, c, input_grad);
  const std::uint64_t ab = k0.dt.compute, sb = k0.dt.stream;
  const std::uint64_t t = checked_mul(c.batch, c.seq_len, "tokens");
  const std::uint64_t d = m.hidden_size, q = query_width(m), kv = kv_width(m);
  const std::uint64_t a = m.num_attention_heads, g = m.num_key_value_heads;
  const bool gemma_post_norms = m.norms_per_layer >= 4;

  add_rms_norm(out, "input_layernorm", t, d, sb, k0, input_grad);
  // A trainable input_layernorm (LN tuning) makes its output require grad even over frozen embeddings.
  const block_context k = k0.norm_weights_train() ? context_of(m, s, c) : k0;
  if (m.fused_qkv)
    add_linear_group(out, k, "qkv_proj input", t, d, sb,
                     std::array<linear_site, 1>{{{mn::qkv_proj, q + 2 * kv}}});
  else
    add_linear_group(out, k, "q/k/v_proj input", t, d, sb,
                     std::array<linear_site, 3>{{{mn::q_proj, q}, {mn::k_proj, kv}, {mn::v_proj, kv}}});
  if (m.qk_norm) {
    add_rms_norm(out, "q_norm", checked_mul(t, a), m.head_dim, ab, k, k.output_grad(mn::q_proj));
    add_rms_norm(out, "k_norm", checked_mul(t, g), m.head_dim, ab, k, k.output_grad(mn::k_proj));
  }
  add_attention_core(out, k, t);
  const block_context rest = context_of(m, s, c);  // from o_proj on, everything requires grad
  add_linear_group(out, rest, "o_proj input", t, q, ab, std::array<linear_site, 1>{{{mn::o_proj, d}}},
                   c.attention == attention_impl::flash);
  out.add("residual add", bytes(0), "x + f(x) saves nothing");
  if (gemma_post_norms) {
    add_rms_norm(out, "post_attention_layernorm", t, d, ab, rest);  // Gemma: on the attention output
    add_rms_norm(out, "pre_feedforward_layernorm", t, d, sb, rest);
  } else {
    add_rms_norm(out, "post_attention_layernorm", t, d, sb, rest);
  }
  for (std::uint64_t extra = gemma_post_norms ? 4 : 2; extra < m.norms_per_layer; ++extra)
    add_rms_norm(out, "extra norm", t, d, sb, rest);

  if (!is_moe(m)) {
    add_gated_mlp(out, rest, t, m.intermediate_size, sb, 1);
  } else {
    // MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock: router, fp32 softmax, top-k, then each expert on
    // the tokens routed to it (t·k rows in all), weighted and index_add_-ed back.
    const std::uint64_t kk = m.num_experts_per_tok, routed = checked_mul(t, kk);
    add_linear_group(out, rest, "router input", t, d, sb,
                     std::array<linear_site, 1>{{{mn::router, m.num_experts}}});
    out.add("router softmax", act(t, m.num_experts, fp32_bytes), "routing probabilities in fp32");
    out.add("top-k indices", act(routed, 1, 8), "int64 indices, saved by topk");
    if (m.norm_topk_prob) {
      out.add("top-k renormalisation", act(routed, 1, fp32_bytes),
              "the weights before the in-place division");
      out.add("top-k renormalisation", act(t, 1, fp32_bytes), "their sum, saved by the division");
    }
    out.add("expert token indices", act(routed, 2, 8),
            "torch.where's (k-slot, token) int64 pairs, saved by indexing");
    add_gated_mlp(out, rest, routed, m.moe_intermediate_size, sb, m.num_experts);
    out.add("expert outputs", act(routed, d, ab), "saved by the product with the routing weight");
    out.add("routing weights", act(routed, 1, sb),
            "each token's weight for its expert, saved by that product");
    out.add("weighted expert outputs", act(routed, d, sb), "the source of index_add_, saved by it");
  }
  if (m.shared_expert_intermediate_size != 0) {
    // Qwen2-MoE's shared expert: a dense SwiGLU on every token (not measured: no grid row has one).
    add_gated_mlp(out, rest, t, m.shared_expert_intermediate_size, sb, 1);
    out.add("shared expert gate", act(t, 2, ab), "sigmoid gate logit and value");
  }
  if (gemma_post_norms) add_rms_norm(out, "post_feedforward_layernorm", t, d, ab, rest);  // on the MLP output
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
  out.add("RoPE cos/sin", act(c.seq_len, 2 * m.head_dim, sb), "position tables shared by every layer's RoPE");
  // enable_input_require_grads (with checkpointing over a frozen table) makes the embedding output a leaf
  // that requires grad; its AccumulateGrad node keeps it until backward whenever it is not itself the first
  // block's checkpointed input: Gemma scales it, prompt tuning concatenates the prompts before it.
  const std::uint64_t prompts = prompt_positions(s.lora);
  const bool leaf = !k.full && !k.adapted(module_name::embed_tokens) && c.ckpt != checkpointing::none;
  if (leaf && (m.scaled_embeddings || prompts != 0))
    out.add("embedding output", act(c.batch, checked_mul(c.seq_len - prompts, m.hidden_size), sb),
            "a leaf requiring grad (enable_input_require_grads), kept by its AccumulateGrad node");
  add_rms_norm(out, "final norm", t, m.hidden_size, sb, k);
  // The head matmul and whether it keeps the final hidden states belong to the loss head (logits.hpp).
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
    case checkpointing::checkpoint_offload:     // the block input being recomputed and the previous node's
      if (input.count() < offload_min_bytes) {  // too small to move: it stays, as under full checkpointing
        kept_per_layer = input;
        e.recompute = block;
        break;
      }
      e.recompute = block + input * (L < offload_backward_inputs ? L : offload_backward_inputs);
      host_per_layer = input;
      break;
  }
  e.per_layer_kept = kept_per_layer;
  e.module_transient = dora_module_transient(m, s);
  if (!korthikanti && c.ckpt == checkpointing::none && !first_layer_input_grad(s, c)) {
    bytes_sum first;  // the first layer over frozen embeddings: its input needs no gradient
    layer_terms(m, s, c, first, false);
    e.first_layer_saving = block - first.total();
    // autocast caches every trainable fp32 weight's bf16 cast until it exits (after the loss); the first
    // layer's lora_A casts are cached but not saved, so they count in forward only.
    if (autocasts(s.precision) && adapter_bytes(s) == fp32_bytes) {
      std::uint64_t sites = 0;
      for (module_name mod :
           {module_name::q_proj, module_name::k_proj, module_name::v_proj, module_name::qkv_proj})
        if (s.lora.targets.contains(mod) && (mod == module_name::qkv_proj) == m.fused_qkv) ++sites;
      e.forward_cached = act(sites * s.lora.rank, m.hidden_size, bf16_bytes);
    }
  }
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
    e.retained = e.checkpoint_state + act(c.seq_len, 2 * m.head_dim, weight_bytes(s.precision));
  e.kept = kept_per_layer * L + e.model_level + e.checkpoint_state - e.first_layer_saving;
  e.gpu = e.kept + e.recompute;
  e.host = host_per_layer * L;
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
