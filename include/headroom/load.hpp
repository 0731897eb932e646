// SPDX-License-Identifier: MIT
// The load phase: what the GPU holds while a checkpoint is loaded and quantised or cast, before the
// first step. Each load path lands tensors one at a time; its peak is the finished weights plus the
// transient of the largest tensor in flight (docs/peak.md, "The load phase").
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "choices.hpp"
#include "memory.hpp"
#include "model.hpp"

namespace headroom {

enum class load_path : std::uint8_t {
  none,            ///< not modelled (the step's phases only)
  direct,          ///< each tensor lands in its training dtype (from_pretrained with dtype; torchtune
                   ///< load_state_dict)
  bnb_4bit,        ///< transformers + bitsandbytes load_in_4bit: each Linear weight copied to the GPU, then
                   ///< quantised
  torchao_nf4,     ///< torchtune QLoRA: torchao NF4Tensor.from_tensor per weight (to_nf4, copy_)
  fp32_then_cast,  ///< the whole model loaded in fp32 on the GPU, then cast to 16-bit (model.to(bfloat16))
};
inline constexpr std::array<named<load_path>, 5> load_path_names{{{"none", load_path::none},
                                                                  {"direct", load_path::direct},
                                                                  {"bnb-4bit", load_path::bnb_4bit},
                                                                  {"torchao-nf4", load_path::torchao_nf4},
                                                                  {"fp32-cast", load_path::fp32_then_cast}}};

/// torchao nf4_tensor.py: quantize_tensor_nearest runs over CHUNK_SIZE = 1024**2 values at a time, and
/// compares each with the 16 NF4 levels.
inline constexpr std::uint64_t torchao_nf4_chunk = std::uint64_t{1} << 20;
inline constexpr std::uint64_t nf4_levels = 16;
inline constexpr std::uint64_t int64_bytes = 8;

/// The load phase: the weights on the GPU at the worst moment and the transient of the tensor in flight.
struct load_estimate {
  load_path path = load_path::none;
  bytes weights{0};    ///< weights resident at the worst moment (all of them: the last tensor lands)
  bytes transient{0};  ///< the largest tensor's copies and quantisation temporaries
  params largest{
      0};  ///< values in the tensor that sets the transient (the one in flight at the worst moment)
  bytes init_transient{0};  ///< PiSSA / OLoRA initialisation of the worst adapted module (0: none)
  bytes wrap_weights{0};    ///< FSDP1: the whole model on the rank when the wrap begins (0: no wrap)
  bytes wrap_transient{0};  ///< FSDP1: the wrap's worst moment above it (fsdp_wrap_transient)
  params init_largest{0};   ///< values of the base weight that sets it
  [[nodiscard]] constexpr bytes total() const { return weights + transient; }
  /// Whether the estimate has a load phase at all (a load path, or an adapter initialisation).
  [[nodiscard]] constexpr bool modelled() const {
    return path != load_path::none || init_transient.count() != 0;
  }
};

namespace detail {
/// The largest tensor a path converts: quantised Linear weights for the 4-bit paths, any tensor for a cast.
constexpr std::uint64_t largest_converted(const model_shape& m, bool quantised_only) {
  std::uint64_t largest = 0;
  visit_parameters(m, [&](const param_tensor& t) {
    if (!quantised_only || quantised_by_bnb(t)) largest = t.numel() > largest ? t.numel() : largest;
  });
  return largest;
}

/// torchao NF4Tensor.from_tensor on n values of b bytes: the input, the scaled blocks (b·n each), one
/// uint8 index per value (n), absmax scalers (b·n/64); then either a chunk's (value − nf4).abs() pair
/// (2·16·C·b) or the packing `q[::2] << 4 | q[1::2]` (n/2 + n/2).
constexpr std::uint64_t torchao_nf4_transient(std::uint64_t n, std::uint64_t b, std::uint64_t block) {
  const std::uint64_t chunk = n < torchao_nf4_chunk ? n : torchao_nf4_chunk;
  const std::uint64_t base =
      checked_mul(2 * b, n, "load transient") + n + checked_mul(b, n, "scalers") / block;
  const std::uint64_t nearest = 2 * nf4_levels * chunk * b;  // the subtraction and its abs()
  const std::uint64_t min_out =
      nf4_levels * chunk * b + chunk * b + chunk * int64_bytes;  // diff, min values, indices
  const std::uint64_t packing = n;                               // shifted half + packed half
  const std::uint64_t chunked = nearest > min_out ? nearest : min_out;
  return base + (chunked > packing ? chunked : packing);
}
}  // namespace detail

namespace detail {
/// PEFT's init of one adapted weight of `out` × `in` values in `b`-byte base storage at rank r, as the new
/// bytes alive at its worst moment (peft/tuners/lora/layer.py; byte-exact on the CPU rows init-253…init-263):
///   cast  = out·in·4 when the base is not fp32 (weight.to(float32))
///   pissa       cast + 4·(out·k + k + k·in) + 2·out·in·4 + 4·r·(in + out)   (U, S, Vh of the SVD; B@A and
///   the
///               residual at the subtraction; the new fp32 lora_A, lora_B)
///   pissa_niter cast + 2·out·in·4 + 8·r·(in + out) + 4·r                  (svd_lowrank's r-wide factors)
///   olora       cast + 4·(out·k + k·in) + out·in·4 + 4·r·(in + out) + 4·out·r + scalar  (Q, R; scale·B, its
///               product with A)
/// with k = min(out, in). LAPACK's and cuSOLVER's own workspaces are not counted (on the CPU they never
/// exceed the later moment; on a GPU cuSOLVER's gesvdj workspace is extra).
constexpr std::uint64_t lora_init_transient(lora_init init, std::uint64_t out, std::uint64_t in,
                                            std::uint64_t r, std::uint64_t b, std::uint64_t scalar) {
  const std::uint64_t f = fp32_bytes, k = out < in ? out : in;
  const std::uint64_t matrix = checked_mul(checked_mul(out, in, "init transient"), f, "init transient");
  const std::uint64_t cast = b == f ? 0 : matrix;
  const std::uint64_t adapters = f * r * (in + out);
  switch (init) {
    case lora_init::standard:
      return 0;
    case lora_init::pissa:
      return cast + f * (out * k + k + k * in) + 2 * matrix + adapters;
    case lora_init::pissa_niter:
      return cast + 2 * matrix + 2 * adapters + f * r;
    case lora_init::olora:
      return cast + f * (out * k + k * in) + matrix + adapters + f * out * r + scalar;
  }
  return 0;
}
}  // namespace detail

/// The worst adapted module's initialisation transient (see detail::lora_init_transient), and its size.
struct init_transient {
  bytes amount{0};
  params weight_values{0};
};
[[nodiscard]] constexpr init_transient lora_init_transient(const model_shape& m, const training_setup& s) {
  init_transient worst;
  if (s.method == training_method::full || s.lora.init == lora_init::standard) return worst;
  if (s.method == training_method::qlora && s.lora.init != lora_init::olora)
    detail::fail("init_lora_weights",
                 "PiSSA needs a 16- or 32-bit base (PEFT raises the same); initialise it, then quantise the "
                 "residual");
  // OLoRA over a 4-bit base dequantises first (dequantize_module_weight): the weight arrives in the compute
  // dtype before its fp32 copy.
  const std::uint64_t b = s.method == training_method::qlora ? 0 : detail::weight_bytes(s.precision);
  visit_parameters(m, [&](const param_tensor& t) {
    if (!adapts(s.lora, t) || t.role != tensor_role::linear_weight) return;
    // torch.svd_lowrank(W, q=r) asks for q <= min(out, in): PEFT's pissa_niter raises on a narrower target.
    if (s.lora.init == lora_init::pissa_niter && (t.rows < s.lora.rank || t.cols < s.lora.rank))
      detail::fail("init_lora_weights",
                   "pissa_niter_[n]: torch.svd_lowrank needs r <= min(out, in), and a targeted linear is "
                   "narrower than r (an MoE router, say; PEFT raises the same): leave it out of "
                   "target_modules or lower r");
    std::uint64_t v = detail::lora_init_transient(s.lora.init, t.rows, t.cols, s.lora.rank, b,
                                                  detail::saved_scalar_bytes(s.runtime));
    if (b == 0) v += t.numel() * detail::bf16_bytes;  // the dequantised 16-bit weight
    if (v > worst.amount.count()) worst = {bytes(v), params(t.numel())};
  });
  return worst;
}

/// What an initialisation keeps alive at its worst moment (for --explain).
[[nodiscard]] constexpr std::string_view init_mechanism(lora_init i) {
  switch (i) {
    case lora_init::pissa:
      return "the fp32 weight, its full SVD (U, S, Vh) and, at the residual W - s*B@A, the product and the "
             "result";
    case lora_init::pissa_niter:
      return "the fp32 weight, svd_lowrank's r-wide factors and, at the residual, the product and the result";
    case lora_init::olora:
      return "the fp32 weight, its QR (Q, R) and s*B@A";
    case lora_init::standard:
      break;
  }
  return "";
}

/// Where each path's transient comes from (for --explain and docs/peak.md).
[[nodiscard]] constexpr std::string_view load_mechanism(load_path p) {
  switch (p) {
    case load_path::none:
      return "";
    case load_path::direct:
      return "each tensor is cast on the CPU and placed in its training dtype: nothing else on the GPU "
             "(transformers from_pretrained with dtype; torchtune load_state_dict)";
    case load_path::bnb_4bit:
      return "Params4bit._quantize copies each Linear weight to the GPU in the load dtype, then "
             "functional.quantize_4bit packs it; with double quantisation the fp32 absmax and absmax - "
             "offset "
             "live while they are compressed (bitsandbytes nn/modules.py, functional.py)";
    case load_path::torchao_nf4:
      return "NF4Tensor.from_tensor: the weight, its scaled blocks, one uint8 index per value, then a "
             "1 Mi-value chunk's distances to the 16 levels or the nibble packing (torchao nf4_tensor.py)";
    case load_path::fp32_then_cast:
      return "every weight in fp32 on the GPU, then module.to(bfloat16) casts tensor by tensor: a tensor's "
             "16-bit copy exists before its fp32 storage is freed, worst at the embedding, cast first "
             "(transformers v4 without dtype, then model.to; torch nn/modules/module.py _apply)";
  }
  return "";
}

/// The load phase of `s` on one GPU, given the finished static weights (estimate_static's buckets).
[[nodiscard]] constexpr load_estimate estimate_load(const model_shape& m, const training_setup& s,
                                                    const static_estimate& st, load_path path) {
  load_estimate e;
  e.path = path;
  const init_transient init = lora_init_transient(m, s);
  e.init_transient = init.amount;
  e.init_largest = init.weight_values;
  if (path == load_path::none) {
    if (init.amount.count() != 0) e.weights = st.buckets.weights;  // the initialisation moment alone
    return e;
  }
  const bool quantised = s.method == training_method::qlora;
  const std::uint64_t b = detail::weight_bytes(s.precision);  // the dtype the checkpoint is loaded in
  e.weights = st.buckets.weights;
  switch (path) {
    case load_path::none:
    case load_path::direct:  // cast on the CPU, then placed tensor by tensor: nothing extra on the GPU
      if (quantised)
        detail::fail("load_path",
                     "direct loads 16-bit weights; a QLoRA base loads through bnb-4bit or torchao-nf4");
      break;
    case load_path::bnb_4bit: {  // Params4bit._quantize: w = data.to(device), then functional.quantize_4bit
      if (!quantised) detail::fail("load_path", "bnb-4bit loads a 4-bit base: it needs --method qlora");
      e.largest = params(detail::largest_converted(m, true));
      const std::uint64_t n = e.largest.count();
      // With compress_statistics the fp32 absmax and `absmax - offset` are alive while they are compressed.
      const std::uint64_t absmax = detail::ceil_div(n, s.nf4.block_size) * detail::fp32_bytes;
      e.transient =
          bytes(detail::checked_mul(n, b, "load transient") + (s.nf4.double_quant ? 2 * absmax : 0));
      break;
    }
    case load_path::torchao_nf4:
      if (!quantised) detail::fail("load_path", "torchao-nf4 loads a 4-bit base: it needs --method qlora");
      e.largest = params(detail::largest_converted(m, true));
      e.transient = bytes(detail::torchao_nf4_transient(e.largest.count(), b, s.nf4.block_size));
      break;
    case load_path::fp32_then_cast:  // every weight in fp32 first; module.to() casts tensor by tensor
      if (quantised || b != detail::bf16_bytes)
        detail::fail("load_path",
                     "fp32-cast ends in 16-bit weights: it needs --method full or lora with a "
                     "16-bit precision route");
      {
        e.weights = st.buckets.weights * 2;  // fp32 is twice the 16-bit bytes, on the same basis
        // Module._apply: tensor i's b-byte copy exists while the earlier ones have already shrunk from 4 to b
        // bytes each, so the worst moment is max_i b·n_i − (4 − b)·Σ_{j<i} n_j (usually the embedding,
        // first).
        std::uint64_t before = 0, worst = 0, at = 0;
        visit_parameters_in_order(m, [&](const param_tensor& t) {
          const std::uint64_t copy = detail::checked_mul(t.numel(), b, "load transient");
          const std::uint64_t saved = detail::checked_mul(before, detail::fp32_bytes - b, "load transient");
          if (copy > saved && copy - saved > worst) {
            worst = copy - saved;
            at = t.numel();
          }
          before += t.numel();
        });
        e.largest = params(at);
        e.transient = bytes(worst);
        break;
      }
  }
  return e;
}

}  // namespace headroom
