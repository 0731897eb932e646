// SPDX-License-Identifier: MIT
// Numbers as people write them (issue 32): "32,768" and "4k" context lengths (k = 1024, as "a 4k context"
// means), "1e9", "2B" and "500M" token counts (decimal), "24GB" and "24GiB" memory sizes (the unit decides).
// One parser for every program; each form is exact integer arithmetic, and an error lists the accepted forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "error.hpp"

namespace headroom {

/// What a number counts, which decides its suffixes (docs/cli.md "Numbers").
enum class number_kind : std::uint8_t {
  count,   ///< a plain positive integer: 8, 1,024
  length,  ///< tokens in a sequence: 4096, 32,768, 4k, 128K, 1M (binary: k = 2^10, M = 2^20)
  tokens,  ///< a token budget: 1000000000, 1e9, 2.5e9, 500M, 2B, 1T (decimal: k, M, B, T = 10^3, 10^6, 10^9,
           ///< 10^12)
};

/// The accepted forms, for messages and --help.
[[nodiscard]] constexpr std::string_view number_forms(number_kind k) {
  switch (k) {
    case number_kind::length:
      return "a positive integer such as 4096 or 32,768, or with k = 1024 / M = 2^20: 4k, 32K, 1.5k, 1M";
    case number_kind::tokens:
      return "a positive integer such as 1000000000 or 1,000,000, 1e9, 2.5e9, or with k / M / B / T = 10^3 / "
             "10^6 / 10^9 / 10^12: 500M, 2B, 1.5T";
    case number_kind::count:
      break;
  }
  return "a positive integer";  // thousands separators too: 1,024
}

namespace detail {
/// A decimal written with optional thousands separators ("32,768": groups of three after the first one to
/// three digits) and an optional fraction: its digits as one integer and the number of fraction digits.
struct decimal_digits {
  std::uint64_t digits = 0;
  unsigned fraction = 0;
};
inline std::optional<decimal_digits> read_decimal(std::string_view s) {
  decimal_digits d;
  const auto dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && frac.empty())) return std::nullopt;
  const bool grouped = whole.find(',') != std::string_view::npos;
  std::size_t since_comma = 0, digits = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const char c = whole[i];
    if (c == ',') {
      // the first group has 1..3 digits, every later one exactly 3
      if (since_comma == 0 || since_comma > 3 || (digits > since_comma && since_comma != 3))
        return std::nullopt;
      since_comma = 0;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    if (++digits > 18) return std::nullopt;  // past 10^18: absurd for any count headroom takes
    ++since_comma;
    d.digits = d.digits * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (grouped && since_comma != 3) return std::nullopt;
  for (char c : frac) {
    if (c < '0' || c > '9' || ++digits > 18) return std::nullopt;
    d.digits = d.digits * 10 + static_cast<std::uint64_t>(c - '0');
    ++d.fraction;
  }
  return d;
}
/// digits / 10^fraction · scale, if that is a whole number below 2^63; else nullopt.
inline std::optional<std::uint64_t> scaled_whole(decimal_digits d, std::uint64_t scale,
                                                 unsigned ten_power = 0) {
  constexpr std::uint64_t limit = std::uint64_t{1} << 63;
  std::uint64_t v = d.digits;
  for (unsigned i = 0; i < ten_power; ++i) {
    if (v > limit / 10) return std::nullopt;
    v *= 10;
  }
  if (scale != 0 && v > limit / scale) return std::nullopt;
  v *= scale;
  for (unsigned i = 0; i < d.fraction; ++i) {
    if (v % 10 != 0) return std::nullopt;  // 1.5 tokens, 0.3k of a length: no whole number
    v /= 10;
  }
  return v;
}
/// A number of `kind` as written, or nullopt when it is not one of that kind's forms.
inline std::optional<std::uint64_t> read_number(std::string_view s, number_kind kind) {
  if (s.empty()) return std::nullopt;
  const char last = s.back();
  std::uint64_t scale = 1;
  if (kind == number_kind::length && (last == 'k' || last == 'K')) scale = 1024;
  if (kind == number_kind::length && (last == 'm' || last == 'M')) scale = 1024 * 1024;
  if (kind == number_kind::tokens) {
    if (last == 'k' || last == 'K') scale = 1'000;
    if (last == 'M') scale = 1'000'000;
    if (last == 'B' || last == 'G') scale = 1'000'000'000;
    if (last == 'T') scale = 1'000'000'000'000;
  }
  if (scale != 1) s.remove_suffix(1);
  unsigned exponent = 0;
  if (const auto e = s.find_first_of("eE");
      kind == number_kind::tokens && scale == 1 && e != std::string_view::npos) {
    const std::string_view power = s.substr(e + 1);
    if (power.empty() || power.size() > 2 || power.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    exponent = static_cast<unsigned>(std::stoul(std::string(power)));
    s = s.substr(0, e);
  }
  if (kind == number_kind::count && s.find('.') != std::string_view::npos) return std::nullopt;
  const auto d = read_decimal(s);
  if (!d) return std::nullopt;
  return scaled_whole(*d, scale, exponent);
}
}  // namespace detail

/// A positive number of `kind` as people write it, at most `limit`; errors name `field` and the forms.
[[nodiscard]] inline std::uint64_t parse_number(std::string_view field, std::string_view text,
                                                number_kind kind, std::uint64_t limit) {
  const auto v = detail::read_number(text, kind);
  const std::string quoted = "'" + std::string(text) + "'";
  if (!v) {
    const bool digits = !text.empty() && text.find_first_not_of("0123456789,") == std::string_view::npos;
    if (digits && text.size() > 18)
      throw input_error(std::string(field), "is absurdly large (" + quoted + ")");
    throw input_error(std::string(field), "expected " + std::string(number_forms(kind)) + ", got " + quoted);
  }
  if (*v == 0) throw input_error(std::string(field), "expected a positive integer, got " + quoted);
  if (*v > limit) throw input_error(std::string(field), "is absurdly large (" + quoted + ")");
  return *v;
}

/// A memory size in bytes: a decimal number (an exponent allowed: 1e1, 2.5e-1) with a unit, GB / MB / TB
/// (10^9, 10^6, 10^12 bytes) or GiB / MiB / TiB (2^30, 2^20, 2^40), the unit in any case; a bare number is in
/// `bare_unit` bytes (a --budget-gb flag's GB). Fractions of a byte round down; nullopt: not such a size, or
/// past 2^62 bytes.
[[nodiscard]] inline std::optional<std::uint64_t> read_memory_size(std::string_view s,
                                                                   std::uint64_t bare_unit) {
  struct unit {
    std::string_view name;
    std::uint64_t bytes;
  };
  constexpr unit units[] = {{"gib", std::uint64_t{1} << 30},
                            {"mib", std::uint64_t{1} << 20},
                            {"tib", std::uint64_t{1} << 40},
                            {"gb", 1'000'000'000},
                            {"mb", 1'000'000},
                            {"tb", 1'000'000'000'000}};
  std::uint64_t scale = bare_unit;
  for (const unit& u : units) {
    if (s.size() <= u.name.size()) continue;
    std::string tail(s.substr(s.size() - u.name.size()));
    for (char& c : tail) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (tail != u.name) continue;
    s.remove_suffix(u.name.size());
    if (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    scale = u.bytes;
    break;
  }
  int exponent = 0;  // a power of ten: 1e1, 2e-4 (parse_decimal's forms)
  if (const auto e = s.find_first_of("eE"); e != std::string_view::npos) {
    std::string_view power = s.substr(e + 1);
    const bool negative = !power.empty() && power.front() == '-';
    if (!power.empty() && (power.front() == '-' || power.front() == '+')) power.remove_prefix(1);
    if (power.empty() || power.size() > 2 || power.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    exponent = (negative ? -1 : 1) * std::stoi(std::string(power));
    s = s.substr(0, e);
  }
  const auto d = detail::read_decimal(s);
  if (!d) return std::nullopt;
  // long double holds every integer below 2^64 exactly: the product is exact until the last division.
  long double v = static_cast<long double>(d->digits) * static_cast<long double>(scale);
  for (int i = exponent - static_cast<int>(d->fraction); i > 0; --i) v *= 10;
  for (int i = exponent - static_cast<int>(d->fraction); i < 0; ++i) v /= 10;
  if (!(v < static_cast<long double>(std::uint64_t{1} << 62))) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

}  // namespace headroom
