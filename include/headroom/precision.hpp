// SPDX-License-Identifier: MIT
// Software bf16 and fp16: round-to-nearest-even with subnormals and overflow to infinity, the
// spacing of a value, the smallest update that survives, where a running sum stalls, loss-scaling
// headroom, and global-norm clipping (course check 3.5, W28–W32).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "detail/math.hpp"
#include "error.hpp"

namespace headroom {

/// A binary floating-point format: stored mantissa bits and the normal exponent range.
struct float_format {
  int mantissa_bits;  ///< stored (without the implicit 1): bf16 7, fp16 10, fp32 23
  int min_exponent;   ///< smallest normal exponent: bf16 −126, fp16 −14
  int max_exponent;   ///< largest exponent: bf16 127, fp16 15
};
inline constexpr float_format bf16_format{7, -126, 127};   // 8 exponent bits, like fp32
inline constexpr float_format fp16_format{10, -14, 15};    // IEEE binary16
inline constexpr float_format fp32_format{23, -126, 127};  // IEEE binary32

/// Largest finite value: (2 − 2^−m)·2^max (fp16: 65,504).
[[nodiscard]] inline double max_finite(const float_format& f) {
  return (2.0 - detail::math::ldexp(1.0, -f.mantissa_bits)) * detail::math::ldexp(1.0, f.max_exponent);
}
/// Smallest positive subnormal: 2^(min − m) (fp16: 2^−24 ≈ 5.96e-8).
[[nodiscard]] inline double min_subnormal(const float_format& f) {
  return detail::math::ldexp(1.0, f.min_exponent - f.mantissa_bits);
}

/// The value `x` becomes in format `f`: round to nearest, ties to even; below the normal range the
/// quantum stays 2^(min − m) (subnormals); past the largest finite value, ±infinity.
[[nodiscard]] inline double round_to(double x, const float_format& f) {
  if (!detail::math::isfinite(x) || x == 0.0) return x;
  int e = 0;
  (void)detail::math::frexp(x, &e);  // |x| = m·2^e with m in [0.5, 1): the leading bit is 2^(e−1)
  const int exponent = std::max(e - 1, f.min_exponent);
  const double quantum = detail::math::ldexp(1.0, exponent - f.mantissa_bits);
  const double r = detail::math::nearbyint(x / quantum) * quantum;  // default rounding mode: ties to even
  if (detail::math::fabs(r) > max_finite(f)) return detail::math::copysign(detail::math::infinity(), x);
  return r;
}
[[nodiscard]] inline double to_bf16(double x) { return round_to(x, bf16_format); }
[[nodiscard]] inline double to_fp16(double x) { return round_to(x, fp16_format); }

/// Distance from `x` (≥ 0, representable) down to the next smaller value: bf16 below 1.0 is 2^−8 (W28).
[[nodiscard]] inline double spacing_below(double x, const float_format& f) {
  int e = 0;
  const double m = detail::math::frexp(x, &e);
  const int exponent = std::max((m == 0.5 ? e - 2 : e - 1), f.min_exponent);  // a power of two steps down
  return detail::math::ldexp(1.0, exponent - f.mantissa_bits);
}

/// The smallest subtraction from `w` that changes it: updates under half the spacing below `w`
/// round back to `w` (bf16 near 1.0: about 0.002).
[[nodiscard]] inline double smallest_surviving_update(double w, const float_format& f) {
  return spacing_below(w, f) / 2;
}

/// Where a running sum of `addend` stalls in format `f`: the first total whose half-spacing above
/// exceeds the addend (bf16, 0.01 → 4.0; W30). Simulated, so it matches the rounding exactly.
[[nodiscard]] inline double stall_point(double addend, const float_format& f,
                                        std::uint64_t max_terms = 1'000'000) {
  const double a = round_to(addend, f);
  double sum = 0;
  for (std::uint64_t i = 0; i < max_terms; ++i) {
    const double next = round_to(sum + a, f);
    if (next == sum) return sum;
    sum = next;
  }
  return sum;
}

/// Global-norm clipping as torch.nn.utils.clip_grad_norm_: returns the pre-clip L2 norm and scales
/// the gradients by max_norm / (norm + 1e-6) when that is below 1 (W32).
inline double clip_grad_norm(std::vector<double>& grads, double max_norm) {
  if (!(max_norm > 0) || !detail::math::isfinite(max_norm))
    throw input_error("max_grad_norm", "must be a positive number");
  double sq = 0;
  for (double g : grads) sq += g * g;
  const double norm = detail::math::sqrt(sq);
  const double coef = max_norm / (norm + 1e-6);  // torch's clip_coef
  if (coef < 1.0)
    for (double& g : grads) g *= coef;
  return norm;
}

/// How many doublings of the loss scale fit before a gradient of magnitude `g` overflows fp16:
/// floor(log2(65,504 / g)); negative when `g` already overflows.
[[nodiscard]] inline int loss_scale_headroom_bits(double g) {
  if (!(g > 0)) throw input_error("gradient magnitude", "must be a positive number");
  return static_cast<int>(detail::math::floor(detail::math::log2(max_finite(fp16_format) / g)));
}

}  // namespace headroom
