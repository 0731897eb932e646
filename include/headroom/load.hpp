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
  [[nodiscard]] constexpr bytes total() const { return weights + transient; }
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
  if (path == load_path::none) return e;
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
