// SPDX-License-Identifier: MIT
// What decides a block's saved tensors: the micro-batch, attention kernel, checkpointing mode and compile
// switch (activation_config), the containers the inventories fill, and the per-block context shared by the
// inventory headers (linear.hpp, attention.hpp, estimate.hpp in this folder).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../lora.hpp"
#include "../memory.hpp"
#include "../model.hpp"
#include "../units.hpp"

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
  /// Images per sequence (Llama-4: tiles) for a multimodal model: each adds its tokens to seq_len, and a
  /// trained vision tower keeps its encoder's activations for them.
  std::uint64_t images = 0;
};

/// Why torch.compile is not modelled for this block, or nullptr when it is (docs/activations.md,
/// "torch.compile").
[[nodiscard]] constexpr const char* compile_not_modelled(const model_shape& m, const training_setup& s,
                                                         const activation_config& c) {
  if (!c.compiled) return nullptr;
  if (m.norm == norm_kind::layer_norm || plain_mlp(m) || m.norm == norm_kind::cohere)
    return "StarCoder2's, GPT-NeoX's and Cohere's blocks under Inductor are not modelled (measured eager "
           "only)";
  if (is_mla(m)) return "DeepSeek's MLA blocks under Inductor are not modelled (measured eager only)";
  if (m.complex_rope) return "Llama-4's blocks under Inductor are not modelled (measured eager only)";
  if (m.num_experts != 0)
    return "MoE blocks: the data-dependent expert loop breaks the graph; the routed part is not modelled";
  if (c.attention == attention_impl::eager || c.attention == attention_impl::sdpa_math)
    return "eager / sdpa-math attention: Inductor decomposes the score chain, which is not modelled; use "
           "flash or "
           "sdpa";
  if (s.method != training_method::full && s.lora.use_dora)
    return "DoRA: its weight-norm graph under Inductor is not modelled";
  if (trains_prefix(s))
    return "prefix tuning: the cache's key/value concatenation under Inductor is not modelled";
  return nullptr;
}

/// Prefix tuning trains without checkpointing only: PEFT raises "PREFIX_TUNING does not work with
/// gradient checkpointing" (peft_model.py _setup_prompt_encoder), and offloading it is not modelled.
constexpr void validate_prefix(const training_setup& s, const activation_config& c) {
  if (!trains_prefix(s) || c.ckpt == checkpointing::none) return;
  detail::fail(
      "gradient_checkpointing",
      "cannot be combined with prefix tuning: PEFT raises 'PREFIX_TUNING does not work with gradient "
      "checkpointing' (peft_model.py _setup_prompt_encoder); use checkpointing none");
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
  static constexpr std::size_t capacity = 192;  // the longest list (activations_test.cpp) has 152
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
  constexpr std::array<std::string_view, 26> labels{{"embed_tokens",
                                                     "q_proj",
                                                     "k_proj",
                                                     "v_proj",
                                                     "o_proj",
                                                     "gate_proj",
                                                     "up_proj",
                                                     "down_proj",
                                                     "gate",
                                                     "shared_expert_gate",
                                                     "norm",
                                                     "lm_head",
                                                     "qkv_proj",
                                                     "gate_up_proj",
                                                     "sinks",
                                                     "experts",
                                                     "c_fc",
                                                     "c_proj",
                                                     "query_key_value",
                                                     "dense",
                                                     "dense_h_to_4h",
                                                     "dense_4h_to_h",
                                                     "q_a_proj",
                                                     "q_b_proj",
                                                     "kv_a_proj_with_mqa",
                                                     "kv_b_proj"}};
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
  lora_targets adapted_modules;  ///< the modules an adapter wraps in this block (adapted_in), computed once
  bool input_grad =
      true;  ///< the block's input requires grad (false: the first layer over frozen embeddings)

  [[nodiscard]] constexpr bool adapted(module_name mod) const { return adapted_modules.contains(mod); }
  /// Whether the norm weights train (full fine-tuning, or LN tuning's copies).
  [[nodiscard]] constexpr bool norm_weights_train() const { return full || norms_train(s.lora); }
  /// Prefix tuning's P keys before each layer's s (none under full fine-tuning).
  [[nodiscard]] constexpr std::uint64_t prefix_keys() const { return full ? 0 : prefix_positions(s.lora); }
  /// Whether a linear's output requires grad: its input does, it trains, or it is adapted; q, k and v also
  /// when a fused q/k/v projection (Phi-3's qkv_proj, GPT-NeoX's query_key_value) is adapted.
  [[nodiscard]] constexpr bool output_grad(module_name mod) const {
    const bool qkv_part =
        mod == module_name::q_proj || mod == module_name::k_proj || mod == module_name::v_proj;
    return input_grad || full || adapted(mod) || (qkv_part && fused_qkv(m) && adapted(block_modules(m).qkv));
  }
};
/// The modules an adapter wraps in a block of `m`: the targets, under a method that adapts linears (not
/// full fine-tuning); never a router that is an nn.Parameter (or Llama-4's, which returns a pair).
constexpr lora_targets adapted_in(const model_shape& m, const training_setup& s) {
  if (s.method == training_method::full || !adapts_linears(s.lora)) return {};
  lora_targets t = s.lora.targets;
  if (!router_is_linear(m)) t.mask &= ~(1u << static_cast<unsigned>(module_name::router));
  return t;
}
constexpr block_context context_of(const model_shape& m, const training_setup& s, const activation_config& c,
                                   bool input_grad = true) {
  return {m,
          s,
          c,
          dtypes_of(s),
          s.method == training_method::full,
          saved_scalar_bytes(s.runtime),
          s.runtime.device == device_kind::cpu ? 0u : 1u,
          adapted_in(m, s),
          input_grad};
}
/// The first layer's input requires grad only when the embeddings train or the caller asks for it:
/// PEFT models call enable_input_require_grads() with gradient checkpointing (and in
/// prepare_model_for_kbit_training); plain LoRA without checkpointing does not.
constexpr bool first_layer_input_grad(const training_setup& s, const activation_config& c) {
  return s.method == training_method::full || c.ckpt != checkpointing::none ||
         prompt_positions(s.lora) != 0 ||  // the trainable prompts are part of the input
         (s.lora.method == peft_method::lora && s.lora.targets.contains(module_name::embed_tokens)) ||
         s.lora.modules_to_save.contains(module_name::embed_tokens);
}
/// The RoPE tables every layer shares: cos and sin of (1, s, width) in the stream dtype
/// (LlamaRotaryEmbedding), or Llama-4's complex64 freqs_cis of (1, s, head_dim / 2).
constexpr bytes rope_table_bytes(const model_shape& m, std::uint64_t seq_len, std::uint64_t stream_bytes) {
  return m.complex_rope ? act(seq_len, rope_width(m) / 2, 2 * fp32_bytes)
                        : act(seq_len, 2 * rope_width(m), stream_bytes);
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
                                            const block_context& k, bool input_grad = true,
                                            std::uint64_t view_of_width = 0) {
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
    // An fp32 input that is a view (MLA's kv_a_layernorm reads a split of kv_a_proj_with_mqa's output):
    // .to(float32) returns the view, and saving it keeps the whole `view_of_width`-wide storage.
    if (in_bytes == fp32_bytes && view_of_width != 0)
      out.add(name, act(rows, view_of_width, fp32_bytes),
              "the fp32 input, a view whose whole storage pow(2) and the rsqrt product keep");
    else
      out.add(name, fp32_copy, "the fp32 input (x.to(float32)), saved by pow(2) and the rsqrt product");
    if (k.s.runtime.torch == torch_generation::v1_13)
      out.add(name, fp32_copy, "x², saved by mean() (torch 1.13; 2.x keeps only its size)");
    out.add(name, act(rows, 1, fp32_bytes), "rsqrt(variance + eps), one fp32 value per row");
  }
  if (k.m.norm == norm_kind::rms_fp32_scale || k.m.norm == norm_kind::gemma_rms) {
    // Gemma's x·(1 + w.float()) saves a new fp32 vector; OLMo-2's w·x saves the weight itself.
    if (input_grad && k.m.norm == norm_kind::gemma_rms)
      out.add(name, act(width, 1, fp32_bytes), "1 + weight.float(), saved by the scale product");
    if (weight_grad) out.add(name, fp32_copy, "the fp32 normalised input, for the weight's gradient");
  } else if (weight_grad) {
    out.add(name, bytes(checked_mul(values, in_bytes, "activation size")),
            "the normalised input in the input dtype, for the weight's gradient");
  }
}

/// One nn.LayerNorm (F.layer_norm → native_layer_norm, StarCoder2) over `rows` rows of `width` values: it
/// saves its input for both gradients and each row's mean and rstd — in the input's dtype on a CPU
/// (layer_norm_cpu), in fp32 on CUDA (the accumulate type). Its weight and bias are parameters, not
/// activations.
template <class Out>
HEADROOM_INLINE constexpr void add_layer_norm(Out& out, std::string_view name, std::uint64_t rows,
                                              std::uint64_t width, std::uint64_t in_bytes,
                                              const block_context& k, bool input_grad = true,
                                              bool input_saved = false) {
  if (!input_grad && !k.norm_weights_train()) return;  // nothing in it requires grad
  const std::uint64_t stats = k.s.runtime.device == device_kind::cpu ? in_bytes : fp32_bytes;
  if (input_saved)  // GPT-NeoX's parallel block: the other norm saved this very tensor
    out.add(name, bytes(0), "the input, the block input the other LayerNorm saved (counted there)");
  else
    out.add(name, act(rows, width, in_bytes), "the input, saved by native_layer_norm");
  out.add(name, act(rows, 2, stats), "each row's mean and rstd, saved by native_layer_norm");
}
/// CohereLayerNorm (transformers models/cohere/modeling_cohere.py) over `rows` rows of `width` with
/// `weight_values` weights: X = x.to(fp32); D1 = X − mean, saved by pow(2); rsqrt(var + eps) saved as its
/// result; D2 = X − mean again, saved by the rsqrt product; weight.to(fp32), saved by the scale product,
/// which also keeps the normalised input when the weight trains. torch 1.13's mean() also keeps X and D1².
template <class Out>
HEADROOM_INLINE constexpr void add_cohere_norm(Out& out, std::string_view name, std::uint64_t rows,
                                               std::uint64_t width, std::uint64_t weight_values,
                                               const block_context& k, bool input_grad = true) {
  const bool weight_grad = k.norm_weights_train();
  if (!input_grad && !weight_grad) return;
  const bytes fp32_values = act(rows, width, fp32_bytes);
  if (input_grad) {
    if (k.s.runtime.torch == torch_generation::v1_13)
      out.add(name, fp32_values * 2, "x.to(float32) and (x − mean)², saved by mean() (torch 1.13)");
    out.add(name, fp32_values, "x − mean, saved by pow(2)");
    out.add(name, act(rows, 1, fp32_bytes), "rsqrt(variance + eps), saved as its result");
    out.add(name, fp32_values, "x − mean computed again, saved by the rsqrt product");
    if (k.dt.stream != fp32_bytes)  // an fp32 weight's .to(float32) is the parameter itself
      out.add(name, act(weight_values, 1, fp32_bytes), "weight.to(float32), saved by the scale product");
  }
  if (weight_grad) out.add(name, fp32_values, "the fp32 normalised input, for the weight's gradient");
}
/// The model's norm: an nn.LayerNorm (StarCoder2) or an RMSNorm (every other family).
template <class Out>
HEADROOM_INLINE constexpr void add_norm(Out& out, std::string_view name, std::uint64_t rows,
                                        std::uint64_t width, std::uint64_t in_bytes, const block_context& k,
                                        bool input_grad = true) {
  switch (k.m.norm) {
    case norm_kind::layer_norm:
      return add_layer_norm(out, name, rows, width, in_bytes, k, input_grad);
    case norm_kind::cohere:
      return add_cohere_norm(out, name, rows, width, width, k, input_grad);
    case norm_kind::rms:
    case norm_kind::rms_fp32_scale:
    case norm_kind::gemma_rms:
      return add_rms_norm(out, name, rows, width, in_bytes, k, input_grad);
  }
}
/// F.dropout in training on `values` values of `in_bytes` each: a CPU multiplies by a scaled noise tensor in
/// the input's dtype and saves it; CUDA's native_dropout saves a bool mask (mask_bytes).
template <class Out>
HEADROOM_INLINE constexpr void add_dropout(Out& out, std::string_view name, std::uint64_t rows,
                                           std::uint64_t width, std::uint64_t in_bytes,
                                           const block_context& k) {
  out.add(name, act(rows, width, mask_bytes(k, in_bytes)),
          "the dropout mask, saved for the input's gradient");
}
}  // namespace detail
}  // namespace headroom
