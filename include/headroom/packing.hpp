// SPDX-License-Identifier: MIT
// Padding waste from a sequence-length histogram: batches padded to their longest member, the same
// grouped by length, and packing into fixed-length rows by best-fit decreasing (TRL's default "bfd").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "choices.hpp"
#include "error.hpp"
#include "units.hpp"

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

/// Best-fit-decreasing rows. A sequence at least max_length long fills rows on its own (TRL's "bfd"
/// truncates it to one, "bfd_split" cuts it into whole rows and a remainder); those rows are counted, never
/// listed, so one huge length costs no memory. Every other row is listed by its token count.
struct packed_rows {
  std::uint64_t full = 0;              ///< rows of exactly max_length tokens cut from one sequence
  std::vector<std::uint64_t> partial;  ///< every other row's tokens, in the order the rows were opened
  [[nodiscard]] std::uint64_t count() const {
    return detail::checked_add(full, partial.size(), "packed rows");
  }
};

/// Best-fit decreasing: longest first, each into the fullest row that still has room, else a new row
/// (trl/data_utils.py, pack_dataset). The open rows sit in a set ordered by room, so each
/// placement is one O(log n) search: the same rows as a scan, in O(n log n).
[[nodiscard]] inline packed_rows pack_rows(const std::vector<std::uint64_t>& lengths,
                                           std::uint64_t max_length, bool split_overflow = false) {
  if (max_length == 0) throw input_error("max_length", "must be a positive integer");
  packed_rows out;
  std::vector<std::uint64_t> rest;
  rest.reserve(lengths.size());
  for (const std::uint64_t len : lengths) {
    if (len < max_length) {
      if (len != 0) rest.push_back(len);
      continue;
    }
    out.full = detail::checked_add(out.full, split_overflow ? len / max_length : 1, "packed rows");
    if (split_overflow && len % max_length != 0) rest.push_back(len % max_length);
  }
  std::sort(rest.begin(), rest.end(), [](std::uint64_t a, std::uint64_t b) { return a > b; });
  std::set<std::pair<std::uint64_t, std::size_t>> by_room;  // (room left, row): the smallest room first
  for (const std::uint64_t len : rest) {
    const auto it = by_room.lower_bound({len, 0});
    std::size_t row = out.partial.size();
    if (it == by_room.end()) {
      out.partial.push_back(len);
    } else {
      row = it->second;
      by_room.erase(it);
      out.partial[row] += len;
    }
    if (out.partial[row] < max_length) by_room.emplace(max_length - out.partial[row], row);
  }
  return out;
}

/// The most rows pack_best_fit_decreasing lists; pack_rows counts any number.
inline constexpr std::uint64_t max_listed_rows = std::uint64_t{1} << 26;

/// Each best-fit-decreasing row's token count: the full rows first, as the longest sequences open them.
[[nodiscard]] inline std::vector<std::uint64_t> pack_best_fit_decreasing(
    const std::vector<std::uint64_t>& lengths, std::uint64_t max_length, bool split_overflow = false) {
  packed_rows p = pack_rows(lengths, max_length, split_overflow);
  if (p.count() > max_listed_rows)
    throw input_error("lengths", std::string("pack into ") + std::to_string(p.count()) + " rows, more than " +
                                     std::to_string(max_listed_rows) + " listed: count them with pack_rows");
  std::vector<std::uint64_t> rows(static_cast<std::size_t>(p.full), max_length);
  rows.insert(rows.end(), p.partial.begin(), p.partial.end());
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
  s.packed_rows = pack_rows(clipped, max_length).count();
  return s;
}

/// How a data collator shapes a micro-batch out of sequences of different lengths.
enum class batch_layout : std::uint8_t {
  padded,        ///< pad to the batch's longest (DataCollatorWithPadding, TRL's collator without packing)
  max_length,    ///< every row padded to max_length (tokenizer padding="max_length")
  packed,        ///< rows of exactly max_length cut from the token stream (TRL packing_strategy="wrapped")
  padding_free,  ///< the batch flattened into one row with position_ids (TRL padding_free, bfd packing)
};
inline constexpr std::array<named<batch_layout>, 4> batch_layout_names{
    {{"padded", batch_layout::padded},
     {"max-length", batch_layout::max_length},
     {"packed", batch_layout::packed},
     {"padding-free", batch_layout::padding_free}}};

/// What the collator does with the lengths: its layout, and for padding-free batches whether the
/// sequences were first packed into max_length rows by best-fit decreasing (and how overflow is cut).
struct batching_config {
  batch_layout layout = batch_layout::padded;
  bool bfd_packed = false;            ///< padding_free rows are bfd-packed rows (TRL packing=True)
  bool split_overflow = false;        ///< TRL packing_strategy="bfd_split"
  std::uint64_t pad_to_multiple = 1;  ///< pad_to_multiple_of (padded layout), tokens
};

/// The largest pad_to_multiple_of taken: 2^26 tokens, the longest sequence an estimate prices
/// (max_workload_seq_len, activations/config.hpp; batching_test checks they agree).
inline constexpr std::uint64_t max_pad_to_multiple = std::uint64_t{1} << 26;

/// The micro-batch that sets the memory peak for a dataset of lengths, and why.
struct peak_micro_batch {
  std::uint64_t batch = 0;      ///< rows in that micro-batch
  std::uint64_t seq_len = 0;    ///< tokens per row (padded length, max_length, or the flattened total)
  std::uint64_t longest = 0;    ///< the longest sequence after truncation to max_length, tokens
  std::uint64_t sequences = 0;  ///< sequences in the dataset
  std::uint64_t truncated = 0;  ///< sequences longer than max_length
  batch_layout layout = batch_layout::padded;
};

/// The micro-batch shape at the peak. Trainer's sampler shuffles, so any batch can hold the longest
/// sequence (or the fullest packed rows): activation memory grows with the tokens of one micro-batch,
/// so the peak is the batch × longest padded shape, max_length rows, or the `batch` fullest rows
/// flattened (padding-free). Source: transformers DataCollatorWithPadding, TRL
/// DataCollatorForLanguageModeling (padding_free) and pack_dataset.
[[nodiscard]] inline peak_micro_batch peak_batch_shape(const std::vector<std::uint64_t>& lengths,
                                                       std::uint64_t batch, std::uint64_t max_length,
                                                       const batching_config& c = {}) {
  if (lengths.empty()) throw input_error("lengths", "no sequence lengths given");
  if (batch == 0) throw input_error("batch", "must be a positive integer");
  if (max_length == 0) throw input_error("max_length", "must be a positive integer");
  if (c.pad_to_multiple == 0 || c.pad_to_multiple > max_pad_to_multiple)
    throw input_error("pad_to_multiple_of", std::string("must be an integer in [1, ") +
                                                std::to_string(max_pad_to_multiple) + "] tokens, got " +
                                                std::to_string(c.pad_to_multiple));
  peak_micro_batch p;
  p.layout = c.layout;
  p.sequences = lengths.size();
  for (std::uint64_t len : lengths) {
    if (len == 0) throw input_error("lengths", "a sequence of length 0");
    if (len > max_length) ++p.truncated;
    p.longest = std::max(p.longest, std::min(len, max_length));
  }
  const std::uint64_t rows = std::min<std::uint64_t>(batch, lengths.size());
  switch (c.layout) {
    case batch_layout::padded: {
      const std::uint64_t m = c.pad_to_multiple;  // round up without forming longest + m - 1
      p.batch = rows;
      p.seq_len = detail::checked_mul(p.longest / m + (p.longest % m != 0 ? 1 : 0), m, "padded length");
      break;
    }
    case batch_layout::max_length:  // padded to max_length, or full rows cut from the stream: the same shape
    case batch_layout::packed:
      p.batch = batch;
      p.seq_len = max_length;
      break;
    case batch_layout::padding_free: {  // the `batch` fullest rows, flattened into one
      p.batch = 1;
      std::vector<std::uint64_t> sizes;
      if (c.bfd_packed) {
        packed_rows packed = pack_rows(lengths, max_length, c.split_overflow);
        const std::uint64_t whole = std::min(batch, packed.full);
        p.seq_len = detail::checked_mul(whole, max_length, "flattened tokens");
        batch -= whole;
        sizes = std::move(packed.partial);
      } else {
        sizes = lengths;
        for (std::uint64_t& len : sizes) len = std::min(len, max_length);
      }
      const auto take = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(batch, sizes.size()));
      std::partial_sort(sizes.begin(), sizes.begin() + take, sizes.end(),
                        [](std::uint64_t a, std::uint64_t b) { return a > b; });
      for (std::ptrdiff_t i = 0; i < take; ++i)
        p.seq_len = detail::checked_add(p.seq_len, sizes[static_cast<std::size_t>(i)], "flattened tokens");
      break;
    }
  }
  return p;
}

/// The shape each layout gives the peak micro-batch (docs/throughput.md, variable-length batches).
[[nodiscard]] constexpr std::string_view peak_batch_formula(batch_layout l) {
  switch (l) {
    case batch_layout::padded:
      return "B x round_up(min(longest, max_length), pad_to_multiple_of)";
    case batch_layout::max_length:
    case batch_layout::packed:
      return "B x max_length";
    case batch_layout::padding_free:
      return "1 x (sum of the B fullest rows: bfd-packed rows, or the sequences themselves)";
  }
  return "";
}

/// One sentence naming what sets the peak (for the report and --explain).
[[nodiscard]] inline std::string peak_batch_reason(const peak_micro_batch& p, std::uint64_t max_length,
                                                   const batching_config& c = {}) {
  const std::string shape = std::to_string(p.batch) + " x " + std::to_string(p.seq_len) + " tokens";
  switch (p.layout) {
    case batch_layout::padded:
      return "the longest padded batch sets the peak: " + shape + " (the longest sequence, " +
             std::to_string(p.longest) + " tokens" +
             (p.truncated != 0 ? ", after truncating " + std::to_string(p.truncated) + " to max_length " +
                                     std::to_string(max_length)
                               : std::string()) +
             ", can land in any shuffled batch)";
    case batch_layout::max_length:
      return "every row is padded to max_length: " + shape + " whatever the lengths";
    case batch_layout::packed:
      return "the packed length sets the peak: " + shape + " (rows cut from the token stream)";
    case batch_layout::padding_free:
      return c.bfd_packed ? "the packed length sets the peak: " + shape +
                                " (the fullest best-fit-decreasing rows of a micro-batch, flattened)"
                          : "the longest sequences set the peak: " + shape +
                                " (a micro-batch of the longest sequences, flattened without padding)";
  }
  return shape;
}

}  // namespace headroom
