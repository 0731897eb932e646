// SPDX-License-Identifier: MIT
// Name tables for enumerated options: one list per option gives the parser, the printer and the
// "valid: …" part of every error message.
#pragma once

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
/// Looks `text` up in a name table; throws input_error naming `field` and the choices.
template <class E, std::size_t N>
[[nodiscard]] E parse_choice(const std::array<named<E>, N>& table, std::string_view text, const char* field) {
  for (const auto& entry : table)
    if (entry.name == text) return entry.value;
  throw input_error(field, "unknown '" + std::string(text) + "'; valid: " + choice_list(table));
}
template <class E, std::size_t N>
[[nodiscard]] constexpr std::string_view choice_name(const std::array<named<E>, N>& table, E value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

}  // namespace headroom
