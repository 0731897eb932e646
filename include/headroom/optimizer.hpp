// SPDX-License-Identifier: MIT
// Optimizer state per parameter tensor, for the transformers `optim` strings. Each entry's layout
// is the implementation's own (torch.optim, bitsandbytes, HF Adafactor), cited per row.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "choices.hpp"
#include "model.hpp"
#include "runtime.hpp"
#include "units.hpp"

namespace headroom {

/// Where an optimizer keeps its state tensors.
enum class state_storage : std::uint8_t {
  param_dtype,     ///< torch optimizers: zeros_like(p), so fp32 master → 4 B, bf16 params → 2 B
  fp32,            ///< always fp32 (bitsandbytes 32-bit, Adafactor, AnyPrecision defaults)
  blockwise_8bit,  ///< bitsandbytes 8-bit: uint8 codes + one fp32 absmax per block
  torchao_8bit,    ///< torchao OptimState8bit: uint8 codes, one fp32 scale per block, a 256-value fp32 qmap
  torchao_4bit,    ///< torchao OptimState4bit: packed 4-bit codes, one fp32 scale per block, a 16-value qmap
};

/// The step's own temporaries, in copies of the trainable values (dtype of the state), per
/// implementation. Read from torch/optim/{adamw,adam,adagrad,rmsprop,sgd}.py, _single_tensor_* and
/// _multi_tensor_* (1.13.1 as shipped by Debian 12; 2.x as of 2.5).
struct step_buffers {
  std::uint8_t per_tensor = 0;     ///< for-loop: copies of the largest tensor alive at once
  std::uint8_t foreach_v2 = 0;     ///< foreach, torch 2.x: copies of all trainable values
  std::uint8_t foreach_v1_13 = 0;  ///< foreach, torch 1.13
};
/// Adam(W): sqrt(v) and its quotient (for-loop); 2.x foreach divides in place, 1.13 allocates denom too.
inline constexpr step_buffers adam_buffers{2, 1, 2};
/// Adagrad: std (for-loop); foreach 1.13 keeps std, grad·clr and their quotient, 2.x std and numerator.
inline constexpr step_buffers adagrad_buffers{1, 2, 3};
/// RMSprop: sqrt(square_avg) per tensor, or for all tensors at once.
inline constexpr step_buffers rmsprop_buffers{1, 1, 1};

/// How one optimizer lays out its state; `name` is the transformers `optim` string.
struct optimizer_info {
  std::string_view name;
  std::uint8_t states = 0;  ///< full-size state tensors per parameter (AdamW: m and v = 2)
  state_storage storage = state_storage::param_dtype;
  bool factored = false;        ///< Adafactor: a rows+cols second moment per matrix, no m
  bool muon = false;            ///< Muon: 1 momentum on hidden matrices, AdamW's 2 on the rest
  bool kahan_16bit = false;     ///< StableAdamW: + a Kahan buffer when params are 16-bit
  bool paged = false;           ///< state in CUDA unified memory (bitsandbytes paged_*)
  std::string_view source;      ///< where the layout was read
  step_buffers buffers{};       ///< the step's temporaries (torch.optim implementations)
  std::uint8_t step_bytes = 0;  ///< `step` kept as a 0-dim fp32 tensor per parameter (torch Adam(W), Adagrad)
  bool torch_optim = false;     ///< a torch.optim class: for-loop, foreach or fused by `optimizer_impl`
  bool fused_default = false;   ///< the `optim` string asks for the fused kernel (adamw_torch_fused)
  bool steps_in_backward = false;  ///< LOMO / AdaLomo: the update is fused into backward (no gradients kept)
  bool step_tensor_from_v2 = false;  ///< `step`: a Python int in 1.13, a 0-dim fp32 tensor in 2.x
};

inline constexpr std::string_view src_torch_adam = "torch/optim/adam.py _init_group";
inline constexpr std::string_view src_bnb = "bitsandbytes/optim/optimizer.py init_state";
inline constexpr std::string_view src_torchao =
    "torchao/optim/adam.py _new_buffer, subclass_{8,4}bit.py zeros (pytorch/ao 36027d82; HF block_size 256)";

/// The catalogue. The first ten are the course's; aliases map to the same layout.
inline constexpr std::array<optimizer_info, 32> optimizer_catalog{{
    {"adamw_torch", 2, state_storage::param_dtype, false, false, false, false, src_torch_adam, adam_buffers,
     4, true},
    {"adamw_torch_fused", 2, state_storage::param_dtype, false, false, false, false, src_torch_adam,
     adam_buffers, 4, true, true},
    {"adamw_8bit", 2, state_storage::blockwise_8bit, false, false, false, false, src_bnb},
    {"adamw_bnb_8bit", 2, state_storage::blockwise_8bit, false, false, false, false, src_bnb},
    {"paged_adamw_8bit", 2, state_storage::blockwise_8bit, false, false, false, true, src_bnb},
    {"paged_adamw_32bit", 2, state_storage::fp32, false, false, false, true, src_bnb},
    {"adafactor", 0, state_storage::fp32, true, false, false, false,
     "transformers optimization.py Adafactor (beta1=None: no first moment)"},
    {"lion_32bit", 1, state_storage::fp32, false, false, false, false, src_bnb},
    {"lion_8bit", 1, state_storage::blockwise_8bit, false, false, false, false, src_bnb},
    {"sgd",
     0,
     state_storage::param_dtype,
     false,
     false,
     false,
     false,
     "torch/optim/sgd.py: momentum_buffer only with momentum > 0 (transformers passes none)",
     {},
     0,
     true},
    {"muon", 1, state_storage::param_dtype, false, true, false, false,
     "torch.optim.Muon; embeddings, head, norms and biases on AdamW"},
    {"adamw_hf", 2, state_storage::param_dtype, false, false, false, false,
     "transformers 4.x legacy alias, treated as adamw_torch", adam_buffers, 4, true},
    {"paged_lion_32bit", 1, state_storage::fp32, false, false, false, true, src_bnb},
    {"paged_lion_8bit", 1, state_storage::blockwise_8bit, false, false, false, true, src_bnb},
    {"adagrad", 1, state_storage::param_dtype, false, false, false, false,
     "torch/optim/adagrad.py sum + step", adagrad_buffers, 4, true},
    {"rmsprop", 1, state_storage::param_dtype, false, false, false, false,
     "torch/optim/rmsprop.py square_avg (step: a Python int in 1.13, torch.tensor(0.) in 2.x)",
     rmsprop_buffers, 0, true, false, false, true},
    {"rmsprop_bnb", 1, state_storage::fp32, false, false, false, false, src_bnb},
    {"rmsprop_bnb_32bit", 1, state_storage::fp32, false, false, false, false, src_bnb},
    {"rmsprop_bnb_8bit", 1, state_storage::blockwise_8bit, false, false, false, false, src_bnb},
    {"ademamix", 3, state_storage::fp32, false, false, false, false,
     "bitsandbytes/optim/ademamix.py (two EMAs + nu)"},
    {"paged_ademamix_32bit", 3, state_storage::fp32, false, false, false, true, src_bnb},
    {"ademamix_8bit", 3, state_storage::blockwise_8bit, false, false, false, false, src_bnb},
    {"paged_ademamix_8bit", 3, state_storage::blockwise_8bit, false, false, false, true, src_bnb},
    {"schedule_free_adamw", 2, state_storage::param_dtype, false, false, false, false,
     "schedulefree adamw_schedulefree.py (z + exp_avg_sq)"},
    {"schedule_free_radam", 2, state_storage::param_dtype, false, false, false, false,
     "schedulefree radam_schedulefree.py (z + exp_avg_sq)"},
    {"schedule_free_sgd", 1, state_storage::param_dtype, false, false, false, false,
     "schedulefree sgd_schedulefree.py (z)"},
    {"adamw_anyprecision", 2, state_storage::fp32, false, false, false, false,
     "transformers handler: momentum and variance dtypes fp32"},
    {"stable_adamw", 2, state_storage::param_dtype, false, false, true, false,
     "optimi stableadamw.py (+ Kahan buffer for 16-bit params)"},
    {"adamw_torch_8bit", 2, state_storage::torchao_8bit, false, false, false, false, src_torchao},
    {"adamw_torch_4bit", 2, state_storage::torchao_4bit, false, false, false, false, src_torchao},
    {"lomo",
     0,
     state_storage::param_dtype,
     false,
     false,
     false,
     false,
     "lomo_optim lomo.py (OpenLMLab/LOMO 45d4bac): no state, the update fused into backward hooks",
     {},
     0,
     false,
     false,
     true},
    {"adalomo",
     0,
     state_storage::fp32,
     true,
     false,
     false,
     false,
     "lomo_optim adalomo.py: fp32 rows + cols second moment, the update fused into backward hooks",
     {},
     0,
     false,
     false,
     true},
}};

/// The transformers `optim` strings headroom refuses, each with the reason (transformers OptimizerNames,
/// training_args.py @ 00349ae8). A data table.
struct refused_optimizer {
  std::string_view name;
  std::string_view reason;
};
inline constexpr std::string_view galore_reason =
    "GaLore keeps its moments on rank-128 projections of the optim_target_modules' gradients plus the "
    "projectors (galore_torch): not modelled yet";
inline constexpr std::string_view apollo_reason =
    "APOLLO keeps its moments on random rank-128 projections (apollo_torch): not modelled yet";
inline constexpr std::array<refused_optimizer, 12> refused_optimizers{{
    {"galore_adamw", galore_reason},
    {"galore_adamw_8bit", galore_reason},
    {"galore_adafactor", galore_reason},
    {"galore_adamw_layerwise", galore_reason},
    {"galore_adamw_8bit_layerwise", galore_reason},
    {"galore_adafactor_layerwise", galore_reason},
    {"apollo_adamw", apollo_reason},
    {"apollo_adamw_layerwise", apollo_reason},
    {"grokadamw",
     "GrokAdamW keeps its three states in host RAM and copies each to the GPU for its step (grokadamw.py): "
     "not modelled yet"},
    {"adamw_torch_xla", "runs on an XLA device (TPU), not a CUDA GPU"},
    {"adamw_torch_npu_fused", "runs on an Ascend NPU, not a CUDA GPU"},
    {"adamw_apex_fused", "apex FusedAdam's state layout has not been read here: use adamw_torch_fused"},
}};

/// How a torch.optim optimizer runs its step (the `foreach` / `fused` constructor arguments).
enum class optimizer_impl : std::uint8_t {
  automatic,  ///< torch's own choice: foreach on CUDA under torch 2.x, for-loop on a CPU or under 1.13;
              ///< fused for adamw_torch_fused
  for_loop,   ///< _single_tensor_*: one parameter at a time
  foreach,    ///< _multi_tensor_*: every parameter at once
  fused,      ///< _fused_adamw: one kernel, no temporaries (CUDA)
};
inline constexpr std::array<named<optimizer_impl>, 4> optimizer_impl_names{
    {{"auto", optimizer_impl::automatic},
     {"for-loop", optimizer_impl::for_loop},
     {"foreach", optimizer_impl::foreach},
     {"fused", optimizer_impl::fused}}};

/// Knobs of the 8-bit optimizers (bitsandbytes Optimizer2State defaults).
struct optimizer_options {
  std::uint64_t block_size = 256;      ///< bnb ≥ 0.44 uses 256; the course's W06 (bnb ≤ 0.43) 2048
  std::uint64_t min_8bit_size = 4096;  ///< smaller tensors keep 32-bit state (min_8bit_size)
  bool momentum = false;  ///< torch.optim.SGD with momentum > 0 keeps a momentum_buffer (torchtune configs)
  optimizer_impl impl = optimizer_impl::automatic;
  /// One optimizer per parameter, stepped as its gradient is accumulated (torchtune optimizer_in_bwd,
  /// PyTorch's register_post_accumulate_grad_hook recipe): the gradients never all exist at once.
  bool in_backward = false;
};

/// Looks an `optim` string up; nullopt if unknown.
[[nodiscard]] constexpr std::optional<optimizer_info> find_optimizer(std::string_view name) {
  for (const optimizer_info& o : optimizer_catalog)
    if (o.name == name) return o;
  return std::nullopt;
}

/// Comma-separated list of every accepted name, for error messages.
[[nodiscard]] inline std::string optimizer_names() {
  std::string out;
  for (const optimizer_info& o : optimizer_catalog) detail::append_listed(out, o.name);
  return out;
}

/// Looks an `optim` string up; throws input_error listing the valid names if unknown.
[[nodiscard]] inline optimizer_info optimizer_by_name(std::string_view name) {
  if (auto o = find_optimizer(name)) return *o;
  for (const refused_optimizer& r : refused_optimizers)
    if (r.name == name)
      throw input_error("optimizer", "'" + std::string(name) + "' " + std::string(r.reason));
  std::array<std::string_view, optimizer_catalog.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = optimizer_catalog[i].name;
  throw input_error("optimizer", "unknown '" + std::string(name) + "'" + detail::did_you_mean(names, name) +
                                     "; valid: " + optimizer_names());
}

namespace detail {
inline constexpr std::uint64_t fp32_bytes = 4;
inline constexpr std::uint64_t absmax_bytes = 4;              // bnb 8-bit: one fp32 absmax per block
inline constexpr std::uint64_t torchao_min_quantized = 4096;  // torchao adam.py: "follow bitsandbytes"

/// Bytes of `states` full-size states over n values in the given storage.
constexpr std::uint64_t dense_state_bytes(std::uint64_t states, std::uint64_t n, state_storage s,
                                          std::uint64_t param_bytes, const optimizer_options& o) {
  if (states == 0) return 0;
  switch (s) {
    case state_storage::param_dtype:
      return checked_mul(checked_mul(states, n, "optimizer state"), param_bytes, "optimizer state");
    case state_storage::fp32:
      return checked_mul(checked_mul(states, n, "optimizer state"), fp32_bytes, "optimizer state");
    case state_storage::blockwise_8bit:
      if (n < o.min_8bit_size)  // bnb falls back to fp32 states below min_8bit_size
        return checked_mul(checked_mul(states, n, "optimizer state"), fp32_bytes, "optimizer state");
      return checked_mul(states, n + absmax_bytes * ceil_div(n, o.block_size), "optimizer state");
    case state_storage::torchao_8bit:
    case state_storage::torchao_4bit: {
      // Quantised only when numel >= 4096 and a whole number of blocks; otherwise zeros_like(p).
      if (n < torchao_min_quantized || n % o.block_size != 0)
        return checked_mul(checked_mul(states, n, "optimizer state"), param_bytes, "optimizer state");
      const bool eight = s == state_storage::torchao_8bit;
      const std::uint64_t codes = eight ? n : n / 2;
      const std::uint64_t qmap = fp32_bytes * (eight ? 256 : 16);  // the code book, one per state tensor
      return checked_mul(states, codes + absmax_bytes * (n / o.block_size) + qmap, "optimizer state");
    }
  }
  return 0;
}
}  // namespace detail

/// Optimizer state of one trainable tensor (all its copies), with params of `param_bytes` each
/// (the dtype the optimizer sees: 4 for an fp32 master or fp32 weights, 2 for pure bf16).
[[nodiscard]] constexpr bytes optimizer_state_bytes(const optimizer_info& opt, const param_tensor& t,
                                                    std::uint64_t param_bytes,
                                                    const optimizer_options& o = {}) {
  if (o.block_size == 0) detail::fail("optimizer block size", "must be a positive integer");
  const std::uint64_t n = t.numel();
  std::uint64_t per_copy = 0;
  if (opt.factored) {
    // Adafactor: exp_avg_sq_row (rows) + exp_avg_sq_col (cols) for matrices; full for vectors.
    per_copy = detail::fp32_bytes * (t.is_matrix() ? t.rows + t.cols : n);
  } else if (opt.muon) {
    // Muon orthogonalises 2-D hidden matrices (one momentum); the rest run AdamW (m, v).
    const bool hidden_matrix =
        t.role == tensor_role::linear_weight && t.nn_linear && t.module != module_name::lm_head;
    per_copy = detail::dense_state_bytes(hidden_matrix ? 1 : 2, n, opt.storage, param_bytes, o);
  } else {
    const std::uint64_t states = opt.states + (opt.kahan_16bit && param_bytes < 4 ? 1 : 0) +
                                 (o.momentum && opt.name == "sgd" ? 1 : 0);  // SGD's momentum_buffer
    per_copy = detail::dense_state_bytes(states, n, opt.storage, param_bytes, o);
  }
  return bytes(detail::checked_mul(per_copy, t.copies, "optimizer state"));
}

/// The per-parameter `step` counters torch keeps as 0-dim fp32 tensors (Adam(W), Adagrad; RMSprop from 2.x):
/// 4 bytes times the number of trainable tensors (torch/optim/adamw.py _init_group: state['step'] =
/// torch.tensor(0.); measured for RMSprop on 2.6, validation/torch/measurements-torch2.6.csv).
[[nodiscard]] constexpr bytes optimizer_step_counter_bytes(const optimizer_info& opt, std::uint64_t tensors,
                                                           const runtime_config& r = {}) {
  const bool tensor_step = opt.step_tensor_from_v2 && r.torch != torch_generation::v1_13;
  const std::uint64_t each = tensor_step ? detail::fp32_bytes : opt.step_bytes;
  return bytes(detail::checked_mul(each, tensors, "optimizer step counters"));
}

/// The optimizer implementation torch runs: `automatic` resolved as torch does (torch/optim/optimizer.py
/// _default_to_fused_or_foreach: foreach only when every parameter is a CUDA tensor, from 2.0 on).
[[nodiscard]] constexpr optimizer_impl resolved_impl(const optimizer_info& opt, optimizer_impl impl,
                                                     const runtime_config& r) {
  if (!opt.torch_optim)
    return optimizer_impl::fused;  // bitsandbytes and friends: per-tensor kernels in place
  if (impl != optimizer_impl::automatic) return impl;
  if (opt.fused_default) return optimizer_impl::fused;
  const bool foreach_default = r.device == device_kind::cuda && r.torch == torch_generation::v2;
  return foreach_default ? optimizer_impl::foreach : optimizer_impl::for_loop;
}

/// Whether torch has a fused kernel for this optimizer: AdamW (torch/optim/adamw.py `fused`, 2.0+) and SGD
/// (sgd.py `fused`, 2.3+) on CUDA and CPU, Adagrad (adagrad.py `fused`, 2.5+) on the CPU only; RMSprop none.
[[nodiscard]] constexpr bool fused_available(const optimizer_info& opt, const runtime_config& r) {
  if (r.torch == torch_generation::v1_13) return false;  // 1.13: only Adam had `fused`, not AdamW or SGD
  if (opt.name == "adagrad") return r.device == device_kind::cpu;
  return opt.name == "adamw_torch" || opt.name == "adamw_torch_fused" || opt.name == "adamw_hf" ||
         opt.name == "sgd";
}

/// Whether this optimizer can run the implementation `impl` ("auto" always can): for-loop, foreach and fused
/// are torch.optim's arguments; adamw_torch_fused fixes fused; fused needs a kernel (fused_available).
[[nodiscard]] constexpr bool optimizer_impl_available(const optimizer_info& opt, optimizer_impl impl,
                                                      const runtime_config& r) {
  if (impl == optimizer_impl::automatic) return true;
  if (!opt.torch_optim) return false;
  if (opt.fused_default) return impl == optimizer_impl::fused;
  return impl != optimizer_impl::fused || fused_available(opt, r);
}

namespace detail {
[[noreturn]] HEADROOM_COLD inline void fail_optimizer_impl(const char* why) { fail("optimizer_impl", why); }
/// A step implementation the optimizer cannot run is an error, not a silent price of another one.
constexpr void validate_optimizer_impl(const optimizer_info& opt, optimizer_impl impl,
                                       const runtime_config& r) {
  if (optimizer_impl_available(opt, impl, r)) return;
  if (!opt.torch_optim)
    fail_optimizer_impl(
        "for-loop, foreach and fused are torch.optim's; this optimizer has one implementation (auto)");
  if (opt.fused_default)
    fail_optimizer_impl(
        "adamw_torch_fused asks for the fused kernel; use adamw_torch to choose for-loop or foreach");
  fail_optimizer_impl(
      "torch has no fused kernel for this optimizer on this device and torch version; valid: auto, "
      "for-loop, foreach");
}
}  // namespace detail

/// The step's temporaries in values of the state dtype: the for-loop's worst tensor (`for_loop_values`,
/// from memory.hpp for_loop_step_values), foreach a few copies of every trainable value, fused none.
[[nodiscard]] constexpr std::uint64_t step_temporary_values(const optimizer_info& opt, optimizer_impl impl,
                                                            const runtime_config& r, std::uint64_t trainable,
                                                            std::uint64_t for_loop_values) {
  switch (resolved_impl(opt, impl, r)) {
    case optimizer_impl::for_loop:
      return for_loop_values;
    case optimizer_impl::foreach:
      return detail::checked_mul(
          r.torch == torch_generation::v1_13 ? opt.buffers.foreach_v1_13 : opt.buffers.foreach_v2, trainable,
          "optimizer temporaries");
    case optimizer_impl::fused:
    case optimizer_impl::automatic:
      break;
  }
  return 0;
}

/// The temporaries of one parameter's own optimizer (optimizer in backward): a one-tensor list, so the
/// for-loop holds no previous denominator and foreach its copies of this tensor alone.
[[nodiscard]] constexpr std::uint64_t single_tensor_step_values(const optimizer_info& opt,
                                                                optimizer_impl impl, const runtime_config& r,
                                                                std::uint64_t n) {
  switch (resolved_impl(opt, impl, r)) {
    case optimizer_impl::for_loop:
      return detail::checked_mul(opt.buffers.per_tensor, n, "optimizer temporaries");
    case optimizer_impl::foreach:
    case optimizer_impl::fused:
    case optimizer_impl::automatic:
      break;
  }
  return step_temporary_values(opt, impl, r, n, 0);
}

namespace detail {
/// What Optimizer.step allocates besides its temporaries, measured on the CPU (torch 1.13.1): 0-dim
/// tensors alongside the update (8 bytes, and one scalar in the state dtype), and at entry the profiler
/// hook's record_function handle (a 288-byte tensor and a 4-byte one; 2.x returns a script object
/// instead). On a GPU these are host memory.
inline constexpr std::uint64_t step_scalars_bytes = 8;
inline constexpr std::uint64_t record_function_handle_bytes = 292;
}  // namespace detail

/// The step's temporaries plus its bookkeeping, in bytes, given the temporaries in bytes.
[[nodiscard]] constexpr std::uint64_t step_bytes_with_bookkeeping(std::uint64_t temporaries,
                                                                  std::uint64_t state_bytes,
                                                                  const runtime_config& r) {
  if (r.device != device_kind::cpu) return temporaries;
  const std::uint64_t during =
      detail::checked_add(temporaries, detail::step_scalars_bytes + state_bytes, "optimizer temporaries");
  const std::uint64_t entry = r.torch == torch_generation::v1_13 ? detail::record_function_handle_bytes : 0;
  return during > entry ? during : entry;
}

/// True where the state depends on tensor shapes, so a lumped nominal count cannot price it.
[[nodiscard]] constexpr bool shape_dependent(const optimizer_info& opt) { return opt.factored || opt.muon; }
/// True where every value costs the same state bytes, so the state of a tensor list equals the
/// state of one tensor of their total size (8-bit blocks and small-tensor fallbacks do not).
[[nodiscard]] constexpr bool same_bytes_per_value(const optimizer_info& opt) {
  return !shape_dependent(opt) &&
         (opt.storage == state_storage::param_dtype || opt.storage == state_storage::fp32);
}

}  // namespace headroom
