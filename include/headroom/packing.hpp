// SPDX-License-Identifier: MIT
// Padding waste from a sequence-length histogram: batches padded to their longest member, the same
// grouped by length, and packing into fixed-length rows by best-fit decreasing (TRL's default "bfd").
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "error.hpp"

namespace headroom {

struct padding_summary {
  std::uint64_t sequences = 0;
  std::uint64_t trained_tokens = 0;         ///< Σ min(length, max_length): the tokens that train
  std::uint64_t padded_tokens = 0;          ///< computed when batches in file order pad to their longest
  std::uint64_t grouped_padded_tokens = 0;  ///< the same with batches of similar lengths (group_by_length)
  std::uint64_t packed_rows = 0;            ///< rows of max_length after best-fit-decreasing packing
  std::uint64_t max_length = 0;

  /// Fraction of computed tokens that are padding.
  [[nodiscard]] double padding_waste() const {
    return padded_tokens == 0
               ? 0.0
               : 1.0 - static_cast<double>(trained_tokens) / static_cast<double>(padded_tokens);
  }
  [[nodiscard]] double grouped_waste() const {
    return grouped_padded_tokens == 0
               ? 0.0
               : 1.0 - static_cast<double>(trained_tokens) / static_cast<double>(grouped_padded_tokens);
  }
  /// Unused space in packed rows (with padding_free the rows are not padded: this is what a
  /// fixed-shape packed batch would still waste).
  [[nodiscard]] double packed_waste() const {
    const double capacity = static_cast<double>(packed_rows) * static_cast<double>(max_length);
    return capacity == 0 ? 0.0 : 1.0 - static_cast<double>(trained_tokens) / capacity;
  }
};

/// Best-fit decreasing: longest first, each into the fullest row that still has room, else a new row.
/// Returns each row's token count.
[[nodiscard]] inline std::vector<std::uint64_t> pack_best_fit_decreasing(std::vector<std::uint64_t> lengths,
                                                                         std::uint64_t max_length) {
  if (max_length == 0) throw input_error("max_length", "must be a positive integer");
  std::sort(lengths.begin(), lengths.end(), [](std::uint64_t a, std::uint64_t b) { return a > b; });
  std::vector<std::uint64_t> rows;
  std::vector<std::pair<std::uint64_t, std::size_t>> by_room;  // (remaining room, row), sorted by room
  for (std::uint64_t len : lengths) {
    len = std::min(len, max_length);  // TRL's bfd truncates overflow
    const auto it = std::lower_bound(by_room.begin(), by_room.end(), std::make_pair(len, std::size_t{0}));
    std::size_t row = rows.size();
    if (it == by_room.end()) {
      rows.push_back(len);
    } else {
      row = it->second;
      by_room.erase(it);
      rows[row] += len;
    }
    const auto entry = std::make_pair(max_length - rows[row], row);
    by_room.insert(std::lower_bound(by_room.begin(), by_room.end(), entry), entry);
  }
  return rows;
}

/// Waste of padded, grouped and packed batching for micro-batches of `batch` sequences.
[[nodiscard]] inline padding_summary summarize_lengths(const std::vector<std::uint64_t>& lengths,
                                                       std::uint64_t batch, std::uint64_t max_length) {
  if (lengths.empty()) throw input_error("lengths", "no sequence lengths given");
  if (batch == 0) throw input_error("batch", "must be a positive integer");
  if (max_length == 0) throw input_error("max_length", "must be a positive integer");
  padding_summary s;
  s.sequences = lengths.size();
  s.max_length = max_length;
  std::vector<std::uint64_t> clipped;
  clipped.reserve(lengths.size());
  for (std::uint64_t len : lengths) {
    if (len == 0) throw input_error("lengths", "a sequence of length 0");
    clipped.push_back(std::min(len, max_length));
    s.trained_tokens += clipped.back();
  }
  auto padded = [&](const std::vector<std::uint64_t>& order) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < order.size(); i += batch) {
      const std::size_t end = std::min<std::size_t>(order.size(), i + batch);
      const std::uint64_t longest = *std::max_element(order.begin() + static_cast<std::ptrdiff_t>(i),
                                                      order.begin() + static_cast<std::ptrdiff_t>(end));
      total += longest * (end - i);
    }
    return total;
  };
  s.padded_tokens = padded(clipped);
  std::vector<std::uint64_t> sorted = clipped;
  std::sort(sorted.begin(), sorted.end());
  s.grouped_padded_tokens = padded(sorted);
  s.packed_rows = pack_best_fit_decreasing(clipped, max_length).size();
  return s;
}

}  // namespace headroom
