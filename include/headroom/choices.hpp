// SPDX-License-Identifier: MIT
// Name tables for enumerated options: one list per option gives the parser, the printer and the
// "valid: …" part of every error message.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "error.hpp"

namespace headroom {

template <class E>
struct named {
  std::string_view name;
  E value;
};

/// The names of a table, comma-separated (the "valid: …" part of a message).
template <class E, std::size_t N>
[[nodiscard]] std::string choice_list(const std::array<named<E>, N>& table) {
  std::string choices;
  for (const auto& entry : table) detail::append_listed(choices, entry.name);
  return choices;
}
namespace detail {
[[nodiscard]] constexpr char fold_case(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] constexpr bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (fold_case(a[i]) != fold_case(b[i])) return false;
  return true;
}
/// Whether `name` holds `part` (three characters or more) in any case: "H100" in "h100-sxm".
[[nodiscard]] constexpr bool contains_ignoring_case(std::string_view name, std::string_view part) {
  if (part.size() < 3 || part.size() >= name.size()) return false;
  for (std::size_t at = 0; at + part.size() <= name.size(); ++at)
    if (equal_ignoring_case(name.substr(at, part.size()), part)) return true;
  return false;
}
/// Levenshtein's edit distance between two names, case folded (names are short: at most 64 characters
/// are compared, longer ones are never near).
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  constexpr std::size_t cap = 64;
  if (a.size() > cap || b.size() > cap) return cap;
  std::array<std::size_t, cap + 1> row{};
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (fold_case(a[i - 1]) == fold_case(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}
/// " (did you mean 'x'?)" for the names closest to `text` (a case-only difference, a name that holds it, or
/// at most one edit in four characters; three at most, then "..."), or "" when none is near.
template <class Names>
[[nodiscard]] std::string did_you_mean(const Names& names, std::string_view text) {
  constexpr std::size_t shown = 3;  // the first three of the nearest names, then "..."
  std::string near;
  std::size_t best = text.size() / 4 + 1, count = 0;
  for (std::string_view name : names) {
    const std::size_t d = contains_ignoring_case(name, text) ? 0 : edit_distance(name, text);
    if (d > best) continue;
    if (d < best) {
      near.clear();
      count = 0;
    }
    best = d;
    if (++count > shown) {
      if (count == shown + 1) near += ", ...";
      continue;
    }
    near += near.empty() ? "'" : ", '";  // appended piece by piece: GCC 12's -Wrestrict misfires on "'" + s
    near += name;
    near += '\'';
  }
  if (near.empty()) return near;
  std::string out = " (did you mean ";
  out += near;
  out += "?)";
  return out;
}
/// Whether a field is a command-line flag, where names are taken in any case (a file's keys are read as
/// its framework reads them: case-sensitive).
[[nodiscard]] constexpr bool is_flag(std::string_view field) {
  return field.size() > 2 && field.substr(0, 2) == "--";
}
}  // namespace detail

/// Looks `text` up in a name table; throws input_error naming `field`, a near name and the choices. A flag
/// (`--method QLoRA`) takes a name in any case.
template <class E, std::size_t N>
[[nodiscard]] E parse_choice(const std::array<named<E>, N>& table, std::string_view text, const char* field) {
  for (const auto& entry : table)
    if (entry.name == text) return entry.value;
  if (detail::is_flag(field))
    for (const auto& entry : table)
      if (detail::equal_ignoring_case(entry.name, text)) return entry.value;
  std::array<std::string_view, N> names{};
  for (std::size_t i = 0; i < N; ++i) names[i] = table[i].name;
  throw input_error(field, "unknown '" + std::string(text) + "'" + detail::did_you_mean(names, text) +
                               "; valid: " + choice_list(table));
}
template <class E, std::size_t N>
[[nodiscard]] constexpr std::string_view choice_name(const std::array<named<E>, N>& table, E value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

}  // namespace headroom
