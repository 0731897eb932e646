// SPDX-License-Identifier: MIT
// Reading one field of a parsed JSON object (config.json, presets, checkpoints' metadata) with an error
// that names the file and the key: counts, flags, probabilities, strings.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../../error.hpp"
#include "../../model.hpp"

namespace headroom::detail {
using json = nlohmann::json;

/// A value as an error quotes it: its JSON text, cut to 60 characters (a 10 KB value made a 10 KB message).
inline std::string json_excerpt(const json& v) {
  constexpr std::size_t most = 60;
  std::string text = v.dump();
  if (text.size() > most) text = text.substr(0, most - 3) + "...";
  return text;
}

inline std::string key_path(const std::string& origin, std::string_view key) {
  return origin + ": /" + std::string(key);
}
/// Whether `key` is in `j` with a value (null is absent: the library's default applies).
inline bool given(const json& j, std::string_view key) {
  const auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

/// A positive integer field; rejects negatives, fractions, strings, booleans and absurd values.
inline std::uint64_t read_count(const json& j, std::string_view key, const std::string& origin,
                                std::uint64_t limit = max_dimension) {
  const auto it = j.find(key);
  if (it == j.end()) throw input_error(key_path(origin, key), "missing required key");
  const std::string field = key_path(origin, key);
  if (!it->is_number_integer())
    throw input_error(field, "must be a positive integer, got " + json_excerpt(*it));
  // Parsed JSON gives non-negative integers as unsigned; json built in code may hold them signed.
  if (it->is_number_unsigned() || it->get<std::int64_t>() >= 0) {
    const auto v = it->is_number_unsigned() ? it->get<std::uint64_t>()
                                            : static_cast<std::uint64_t>(it->get<std::int64_t>());
    if (v == 0) throw input_error(field, "must be a positive integer, got 0");
    if (v > limit) throw input_error(field, "is absurdly large (" + json_excerpt(*it) + ")");
    return v;
  }
  throw input_error(field, "must be a positive integer, got " + json_excerpt(*it));
}
inline std::uint64_t read_count_or(const json& j, std::string_view key, const std::string& origin,
                                   std::uint64_t fallback, std::uint64_t limit = max_dimension) {
  if (!given(j, key)) return fallback;
  return read_count(j, key, origin, limit);
}
/// The message for a version number past the newest (fsdp_version 3: "unknown '3'; valid: 1, 2"), not
/// "absurdly large" (issue 31, MI-41).
inline std::string unknown_version(std::uint64_t v, std::uint64_t newest) {
  std::string valid = "1";
  for (std::uint64_t k = 2; k <= newest; ++k) valid += ", " + std::to_string(k);
  return "unknown '" + std::to_string(v) + "'; valid: " + valid;
}
/// A version key (fsdp_version): a positive integer up to `newest`.
inline std::uint64_t read_version_or(const json& j, std::string_view key, const std::string& origin,
                                     std::uint64_t fallback, std::uint64_t newest) {
  if (!given(j, key)) return fallback;
  const std::uint64_t v = read_count(j, key, origin, std::numeric_limits<std::uint64_t>::max());
  if (v > newest) throw input_error(key_path(origin, key), unknown_version(v, newest));
  return v;
}
inline bool read_bool_or(const json& j, std::string_view key, const std::string& origin, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw input_error(key_path(origin, key), "must be true or false, got " + json_excerpt(*it));
  return it->get<bool>();
}
/// A key that is either null or a positive number (a cap, a scale): whether it is set.
inline bool read_optional_number(const json& j, std::string_view key, const std::string& origin,
                                 bool fallback) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_null()) return false;
  if (!it->is_number() || !(it->get<double>() > 0))
    throw input_error(key_path(origin, key), "must be a positive number or null, got " + json_excerpt(*it));
  return true;
}
/// A dropout probability in [0, 1) (0 when absent or null): whether dropout runs in training.
inline bool read_dropout(const json& j, std::string_view key, const std::string& origin) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() < 1))
    throw input_error(key_path(origin, key), "must be a probability in [0, 1), got " + json_excerpt(*it));
  return it->get<double>() > 0;
}
/// The RoPE width int(head_dim · fraction) from a fraction key (GPT-NeoX rotary_pct, partial_rotary_factor);
/// 0 when it is the whole head. An even, positive width is required.
inline std::uint64_t read_rotary_dim(const json& j, const char* key, double fallback, std::uint64_t head_dim,
                                     const std::string& origin) {
  const auto it = j.find(key);
  const double fraction = it == j.end() || it->is_null() ? fallback
                          : it->is_number()              ? it->get<double>()
                                                         : -1.0;
  if (!(fraction > 0 && fraction <= 1))
    throw input_error(key_path(origin, key), "must be a fraction in (0, 1]");
  const auto width = static_cast<std::uint64_t>(static_cast<double>(head_dim) * fraction);
  if (width % 2 != 0 || width == 0)
    throw input_error(key_path(origin, key),
                      "gives " + std::to_string(width) +
                          " rotary dimensions per head; RoPE needs an even, positive number");
  return width == head_dim ? 0 : width;
}
inline std::string read_string_or(const json& j, std::string_view key, const std::string& origin,
                                  std::string fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string())
    throw input_error(key_path(origin, key), "must be a string, got " + json_excerpt(*it));
  return it->get<std::string>();
}
/// A count that may be 0 (absent or null: `fallback`).
inline std::uint64_t read_count_or_zero(const json& j, std::string_view key, const std::string& origin,
                                        std::uint64_t fallback, std::uint64_t limit) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_number_integer() && *it == 0) return 0;
  return read_count(j, key, origin, limit);
}
}  // namespace headroom::detail
