// SPDX-License-Identifier: MIT
// Strong types for the units headroom computes in: bytes and parameters are exact 64-bit
// integers, FLOPs and seconds are doubles. No implicit conversion in or out.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "error.hpp"

namespace headroom {

namespace detail {
inline constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

/// a·b, or an input_error naming `what` if the product does not fit in 64 bits.
[[noreturn]] HEADROOM_COLD inline void fail_overflow(const char* what) {
  throw overflow_error(what, "overflows 64-bit arithmetic");
}
constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const char* what = "product") {
#if defined(__GNUC__) || defined(__clang__)
  std::uint64_t product = 0;  // the overflow flag of one multiply, not a 64-bit division per product
  if (__builtin_mul_overflow(a, b, &product)) fail_overflow(what);
  return product;
#else
  if (a != 0 && b > u64_max / a) fail_overflow(what);
  return a * b;
#endif
}
constexpr std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* what = "sum") {
#if defined(__GNUC__) || defined(__clang__)
  std::uint64_t sum = 0;  // add and branch on the carry
  if (__builtin_add_overflow(a, b, &sum)) fail_overflow(what);
  return sum;
#else
  if (b > u64_max - a) fail_overflow(what);
  return a + b;
#endif
}
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  if (b == 1) return a;  // the common case (one GPU, no split) skips a 64-bit division
  return a / b + (a % b != 0 ? 1 : 0);
}
}  // namespace detail

/// A value tagged with its unit. Construct explicitly, read back with `.count()`.
template <class Tag, class Rep>
class quantity {
 public:
  using rep = Rep;
  constexpr quantity() = default;
  constexpr explicit quantity(Rep value) : value_(value) {}
  [[nodiscard]] constexpr Rep count() const { return value_; }

  friend constexpr quantity operator+(quantity a, quantity b) {
    if constexpr (std::numeric_limits<Rep>::is_integer) {
      return quantity(detail::checked_add(a.value_, b.value_, "quantity sum"));
    } else {
      return quantity(a.value_ + b.value_);
    }
  }
  constexpr quantity& operator+=(quantity b) { return *this = *this + b; }
  friend constexpr quantity operator-(quantity a, quantity b) {
    if constexpr (std::numeric_limits<Rep>::is_integer) {
      if (b.value_ > a.value_) detail::fail("quantity difference", "would be negative");
    }
    return quantity(a.value_ - b.value_);
  }
  /// Scaling by a plain count keeps the unit (checked for integers).
  friend constexpr quantity operator*(quantity a, Rep k) {
    if constexpr (std::numeric_limits<Rep>::is_integer) {
      return quantity(detail::checked_mul(a.value_, k, "quantity product"));
    } else {
      return quantity(a.value_ * k);
    }
  }
  friend constexpr quantity operator*(Rep k, quantity a) { return a * k; }
  friend constexpr bool operator==(quantity a, quantity b) { return a.value_ == b.value_; }
  friend constexpr bool operator!=(quantity a, quantity b) { return a.value_ != b.value_; }
  friend constexpr bool operator<(quantity a, quantity b) { return a.value_ < b.value_; }
  friend constexpr bool operator<=(quantity a, quantity b) { return a.value_ <= b.value_; }
  friend constexpr bool operator>(quantity a, quantity b) { return a.value_ > b.value_; }
  friend constexpr bool operator>=(quantity a, quantity b) { return a.value_ >= b.value_; }

 private:
  Rep value_{};
};

struct bytes_tag {};
struct params_tag {};
struct flops_tag {};
struct seconds_tag {};

using bytes = quantity<bytes_tag, std::uint64_t>;    ///< memory, exact
using params = quantity<params_tag, std::uint64_t>;  ///< parameter (element) counts, exact
using flops = quantity<flops_tag, double>;           ///< floating-point operations
using seconds = quantity<seconds_tag, double>;       ///< wall-clock time

inline constexpr std::uint64_t bytes_per_gb = 1'000'000'000;            // GB = 1e9 bytes (course convention)
inline constexpr std::uint64_t bytes_per_gib = std::uint64_t{1} << 30;  // GiB = 2^30 bytes

/// Decimal gigabytes (1e9 bytes), for display.
[[nodiscard]] constexpr double in_gb(bytes b) {
  return static_cast<double>(b.count()) / static_cast<double>(bytes_per_gb);
}
/// Binary gibibytes (2^30 bytes), for display.
[[nodiscard]] constexpr double in_gib(bytes b) {
  return static_cast<double>(b.count()) / static_cast<double>(bytes_per_gib);
}

/// 8030261248 → "8,030,261,248" (independent of the global locale).
[[nodiscard]] inline std::string with_commas(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// "38.012": decimal gigabytes rounded half up to three places with integer arithmetic, so that a byte count
/// prints the same digits everywhere (a double's binary rounding would print 2,063,500,000 B as 2.063).
[[nodiscard]] inline std::string gb_digits(bytes b) {
  const std::uint64_t millis = b.count() / 1'000'000 + (b.count() % 1'000'000 >= 500'000 ? 1 : 0);
  std::string frac = std::to_string(millis % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return std::to_string(millis / 1000) + "." + frac;
}
/// "38.012 GB": gb_digits with its unit.
[[nodiscard]] inline std::string gb_text(bytes b) { return gb_digits(b) + " GB"; }

}  // namespace headroom
