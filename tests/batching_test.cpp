// SPDX-License-Identifier: MIT
// Effective batch (W23), gradient-accumulation normalisation (W22), padding and packing.
#include <limits>

#include <headroom/activations/config.hpp>
#include <headroom/batching.hpp>
#include <headroom/packing.hpp>

#include "catch.hpp"

using namespace headroom;

static_assert(effective_batch(2, 8) == 16);
static_assert(max_pad_to_multiple == max_workload_seq_len);  // packing.hpp cannot include the config header

TEST_CASE("W23: effective batch = micro-batch x accumulation x ranks", "[batching][worked]") {
  CHECK(effective_batch(2, 8) == 16);  // Unsloth's starting point
  CHECK(effective_batch(4, 8) == 32);  // the levers example
  CHECK(effective_batch(4, 8, 8) == 256);
  CHECK(tokens_per_step(2, 8, 1, 2048) == 32'768);
  test::require_input_error([] { (void)effective_batch(0, 8); }, "per_device_train_batch_size");
  test::require_input_error([] { (void)effective_batch(2, 0); }, "gradient_accumulation_steps");
}

TEST_CASE("W22: n = (2, 6) tokens with losses 1.0 and 0.5: correct 0.625, buggy 0.75, 3x weight",
          "[batching][worked]") {
  const std::vector<micro_batch_loss> micro{{2, 2 * 1.0}, {6, 6 * 0.5}};
  CHECK(global_token_mean(micro) == 0.625);
  CHECK(per_micro_batch_mean(micro) == 0.75);
  const token_weights shortw = token_weight(micro, 0), longw = token_weight(micro, 1);
  CHECK(shortw.correct == longw.correct);  // every token weighs 1/8
  CHECK(shortw.per_micro_batch == 3 * longw.per_micro_batch);
}

TEST_CASE("W22 across ranks: dividing by each rank's own count reintroduces the bias", "[batching][worked]") {
  const std::vector<std::vector<micro_batch_loss>> ranks{{{2, 2.0}}, {{6, 3.0}}};
  std::vector<micro_batch_loss> all;
  for (const auto& r : ranks) all.insert(all.end(), r.begin(), r.end());
  CHECK(global_token_mean(all) == 0.625);  // average_tokens_across_devices=True
  CHECK(per_rank_mean(ranks) == 0.75);
  test::require_input_error([] { (void)global_token_mean({{0, 0.0}}); }, "no trained tokens");
}

TEST_CASE("Padding: batches pad to their longest member, grouping and packing waste less", "[packing]") {
  const std::vector<std::uint64_t> lengths{100, 900, 120, 880, 40, 1000};
  const padding_summary s = summarize_lengths(lengths, 2, 1024);
  CHECK(s.trained_tokens == 3040);
  CHECK(s.padded_tokens == 2 * 900 + 2 * 880 + 2 * 1000);          // file order
  CHECK(s.grouped_padded_tokens == 2 * 100 + 2 * 880 + 2 * 1000);  // sorted: (40,100) (120,880) (900,1000)
  // Best fit, longest first: 1000 | 900 | 880, then 120 → the 900 row (room 124), 100 → the 880
  // row (room 144), 40 → the 880 row (room 44): three rows.
  CHECK(s.packed_rows == 3);
  CHECK(s.padding_waste() > s.grouped_waste());
  REQUIRE_THAT(s.packed_waste(), Catch::Matchers::WithinAbs(1 - 3040.0 / 3072.0, 1e-12));
  const padding_summary clipped = summarize_lengths({5000, 10}, 2, 1024);  // truncation to max_length
  CHECK(clipped.trained_tokens == 1034);
}

TEST_CASE("Best-fit decreasing fills rows without overflowing them", "[packing][property]") {
  std::vector<std::uint64_t> lengths;
  for (std::uint64_t i = 1; i <= 500; ++i) lengths.push_back((i * 7919) % 2000 + 1);
  const std::vector<std::uint64_t> rows = pack_best_fit_decreasing(lengths, 2048);
  std::uint64_t total = 0;
  for (std::uint64_t r : rows) {
    CHECK(r <= 2048);
    total += r;
  }
  std::uint64_t expected = 0;
  for (std::uint64_t l : lengths) expected += l;
  CHECK(total == expected);
  CHECK(rows.size() <= expected / 2048 + expected / 2048 / 10 + 2);  // within ~10% of the lower bound
  test::require_input_error([] { (void)summarize_lengths({}, 2, 1024); }, "lengths");
  test::require_input_error([] { (void)summarize_lengths({5, 0}, 2, 1024); }, "length 0");
}

namespace {
// The scan pack_best_fit_decreasing replaced (O(n^2)): the fullest row with room, found by walking every row.
std::vector<std::uint64_t> bfd_by_scan(std::vector<std::uint64_t> lengths, std::uint64_t max_length) {
  std::sort(lengths.begin(), lengths.end(), [](std::uint64_t a, std::uint64_t b) { return a > b; });
  std::vector<std::uint64_t> rows;
  for (std::uint64_t len : lengths) {
    len = std::min(len, max_length);
    std::size_t best = rows.size();
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (max_length - rows[i] >= len && (best == rows.size() || rows[i] > rows[best])) best = i;
    if (best == rows.size())
      rows.push_back(len);
    else
      rows[best] += len;
  }
  return rows;
}
}  // namespace

TEST_CASE(
    "Best-fit decreasing in O(n log n) gives the scan's rows, and one huge length costs no memory "
    "(CR-17..24)",
    "[packing][property]") {
  std::uint64_t x = 12345;
  for (std::uint64_t max_length : {64u, 1000u, 2048u}) {
    std::vector<std::uint64_t> lengths;
    for (int i = 0; i < 2000; ++i) {
      x = x * 6364136223846793005u + 1442695040888963407u;  // Knuth's MMIX LCG: a fixed sequence
      lengths.push_back((x >> 33) % (max_length + max_length / 4) + 1);
    }
    INFO("max_length " << max_length);
    CHECK(pack_best_fit_decreasing(lengths, max_length) == bfd_by_scan(lengths, max_length));
  }
  // TRL bfd_split: 999,999,999,999 tokens in rows of 2048 are 488,281,249 full rows and one of 2,047.
  const packed_rows split = pack_rows({999'999'999'999, 100}, 2048, true);
  CHECK(split.full == 488'281'249);
  CHECK(split.partial == std::vector<std::uint64_t>{2047, 100});
  CHECK(pack_rows({999'999'999'999, 100}, 2048, true).count() == 488'281'251);
  CHECK(pack_rows({std::numeric_limits<std::uint64_t>::max()}, 1, true).full ==
        std::numeric_limits<std::uint64_t>::max());
  test::require_input_error(
      [] {
        (void)pack_rows({std::numeric_limits<std::uint64_t>::max(), 1}, 1, true).count();
      },
      "packed rows");
  test::require_input_error([] { (void)pack_best_fit_decreasing({999'999'999'999}, 2048, true); }, "lengths",
                            "pack_rows");
  // The peak micro-batch of 8 over those rows: 8 full rows, never a list of half a billion.
  batching_config c{batch_layout::padding_free, true, true};
  CHECK(peak_batch_shape({999'999'999'999}, 8, 2048, c).seq_len == 8 * 2048);
  const std::vector<std::uint64_t> many(1'000'000, 1500);  // a million rows of one sequence each, at once
  CHECK(pack_rows(many, 2048).count() == 1'000'000);
  // pad_to_multiple_of: bounded, and rounding never wraps (API-02).
  batching_config huge;
  huge.pad_to_multiple = std::numeric_limits<std::uint64_t>::max();
  test::require_input_error([&] { (void)peak_batch_shape({5}, 1, 8, huge); }, "pad_to_multiple_of",
                            "67108864");
  huge.pad_to_multiple = max_pad_to_multiple;
  CHECK(peak_batch_shape({5}, 1, 8, huge).seq_len == max_pad_to_multiple);
}

TEST_CASE("Variable-length batches: the longest padded batch or the packed length sets the peak shape",
          "[packing]") {
  const std::vector<std::uint64_t> lengths{100, 900, 120, 880, 40, 1000, 5000};
  // Padded to the longest: any shuffled batch can hold the longest sequence (truncated to max_length).
  const peak_micro_batch padded = peak_batch_shape(lengths, 2, 1024);
  CHECK(padded.batch == 2);
  CHECK(padded.seq_len == 1024);
  CHECK(padded.longest == 1024);
  CHECK(padded.truncated == 1);
  CHECK(peak_batch_reason(padded, 1024).find("the longest padded batch sets the peak: 2 x 1024 tokens") == 0);
  const peak_micro_batch short_set = peak_batch_shape({100, 900, 120}, 8, 2048);
  CHECK(short_set.batch == 3);  // fewer sequences than a micro-batch
  CHECK(short_set.seq_len == 900);
  batching_config c;
  c.pad_to_multiple = 64;  // pad_to_multiple_of rounds the padded length up
  CHECK(peak_batch_shape({100, 900, 120}, 8, 2048, c).seq_len == 960);
  c = batching_config{batch_layout::max_length};
  CHECK(peak_batch_shape(lengths, 2, 1024, c).seq_len == 1024);
  // Padding-free over bfd rows of 1024: 1024 (5000 truncated) | 1000 | 900+120 | 880+100+40: the two fullest.
  c = batching_config{batch_layout::padding_free, true};
  const peak_micro_batch flat = peak_batch_shape(lengths, 2, 1024, c);
  CHECK(flat.batch == 1);
  CHECK(flat.seq_len == 1024 + 1020);
  CHECK(peak_batch_reason(flat, 1024, c).find("the packed length sets the peak: 1 x 2044 tokens") == 0);
  // bfd_split: 5000 becomes four full rows and 904 — two full rows make the fullest micro-batch.
  c.split_overflow = true;
  CHECK(peak_batch_shape(lengths, 2, 1024, c).seq_len == 2048);
  // Padding-free without packing: the two longest sequences, flattened.
  c = batching_config{batch_layout::padding_free};
  CHECK(peak_batch_shape({100, 900, 120}, 2, 2048, c).seq_len == 1020);
  test::require_input_error([] { (void)peak_batch_shape({}, 2, 1024); }, "lengths");
  test::require_input_error([] { (void)peak_batch_shape({5, 0}, 2, 1024); }, "length 0");
  test::require_input_error([] { (void)peak_batch_shape({5}, 0, 1024); }, "batch");
  batching_config zero;
  zero.pad_to_multiple = 0;
  test::require_input_error([&] { (void)peak_batch_shape({5}, 1, 1024, zero); }, "pad_to_multiple_of");
}

TEST_CASE("The peak shape never exceeds max_length rows and grows with the longest sequence",
          "[packing][property]") {
  std::vector<std::uint64_t> lengths;
  for (std::uint64_t i = 1; i <= 300; ++i) lengths.push_back((i * 7919) % 3000 + 1);
  for (std::uint64_t batch : {1u, 2u, 8u}) {
    for (batch_layout l :
         {batch_layout::padded, batch_layout::max_length, batch_layout::packed, batch_layout::padding_free}) {
      batching_config c{l, true};
      const peak_micro_batch p = peak_batch_shape(lengths, batch, 2048, c);
      CHECK(p.batch * p.seq_len <= batch * 2048);  // never more tokens than full rows
      std::vector<std::uint64_t> longer = lengths;
      longer.push_back(2048);
      const peak_micro_batch q = peak_batch_shape(longer, batch, 2048, c);
      CHECK(q.batch * q.seq_len >= p.batch * p.seq_len);
    }
  }
}
