// SPDX-License-Identifier: MIT
// bitsandbytes 4-bit (NF4/FP4) storage from its block sizes: packed codes, first-level absmax,
// and the double-quantised second level. Derives the course's 4.127 bits/param (W08).
#pragma once

#include <cstdint>

#include "units.hpp"

namespace headroom {

/// bitsandbytes Params4bit layout (bitsandbytes/functional.py quantize_4bit, @95f9af30).
struct nf4_layout {
  std::uint64_t block_size = 64;      ///< values per first-level absmax (Params4bit blocksize=64)
  bool double_quant = true;           ///< bnb_4bit_use_double_quant: absmax stored as uint8 codes
  std::uint64_t dq_block_size = 256;  ///< first-level absmax values per fp32 second-level scale
};

inline constexpr std::uint64_t bits_per_byte = 8;
inline constexpr std::uint64_t nf4_code_bits = 4;  // one 4-bit code per value
inline constexpr std::uint64_t fp32_bits = 32;     // first-level absmax without double quant
inline constexpr std::uint64_t dq_code_bits = 8;   // double-quantised absmax: one uint8 code

namespace detail {
inline constexpr std::uint64_t max_quant_block = std::uint64_t{1} << 20;  // bnb uses 64…4096
constexpr void validate_nf4(const nf4_layout& q) {
  if (q.block_size == 0 || q.dq_block_size == 0) fail("bnb_4bit block size", "must be a positive integer");
  if (q.block_size > max_quant_block || q.dq_block_size > max_quant_block)
    fail("bnb_4bit block size", "is absurdly large");
}
}  // namespace detail

/// Storage bits per parameter as an exact fraction num/den (amortised over whole blocks).
struct bits_fraction {
  std::uint64_t num = 0;
  std::uint64_t den = 1;
  [[nodiscard]] constexpr double value() const { return static_cast<double>(num) / static_cast<double>(den); }
  /// Rounded to thousandths of a bit, half up: the precision the course quotes (4.127).
  [[nodiscard]] constexpr std::uint64_t millibits() const { return (num * 2000 + den) / (2 * den); }
};

/// Bits/param: 4 + 8/64 + 32/(64·256) = 4.126953125 with double quant, 4 + 32/64 = 4.5 without.
[[nodiscard]] constexpr bits_fraction nf4_bits_per_param(const nf4_layout& q) {
  detail::validate_nf4(q);
  if (!q.double_quant) return {nf4_code_bits * q.block_size + fp32_bits, q.block_size};
  const std::uint64_t den = q.block_size * q.dq_block_size;
  return {nf4_code_bits * den + dq_code_bits * q.dq_block_size + fp32_bits, den};
}

/// Exact bytes of one quantised tensor of n values: ⌈n/2⌉ packed codes + absmax level(s).
/// Per-tensor constants (the 256-entry fp32 nested code table, the offset) are not counted.
[[nodiscard]] constexpr bytes nf4_tensor_bytes(std::uint64_t n, const nf4_layout& q) {
  detail::validate_nf4(q);
  const std::uint64_t packed = detail::ceil_div(n, 2);
  const std::uint64_t blocks = detail::ceil_div(n, q.block_size);
  if (!q.double_quant) return bytes(packed + blocks * (fp32_bits / bits_per_byte));
  const std::uint64_t scales = detail::ceil_div(blocks, q.dq_block_size);
  return bytes(packed + blocks * (dq_code_bits / bits_per_byte) + scales * (fp32_bits / bits_per_byte));
}

/// The course's nominal pricing: N parameters at the rounded bits/param (4.127), as Table 1 does.
[[nodiscard]] constexpr bytes nf4_nominal_bytes(params n, const nf4_layout& q) {
  const std::uint64_t mb = nf4_bits_per_param(q).millibits();
  const std::uint64_t total_millibits = detail::checked_mul(n.count(), mb, "QLoRA weight bits");
  return bytes(detail::ceil_div(total_millibits, 1000 * bits_per_byte));
}

}  // namespace headroom
