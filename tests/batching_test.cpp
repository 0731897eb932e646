// SPDX-License-Identifier: MIT
// Effective batch (W23), gradient-accumulation normalisation (W22), padding and packing.
#include <headroom/batching.hpp>
#include <headroom/packing.hpp>

#include "catch.hpp"

using namespace headroom;

static_assert(effective_batch(2, 8) == 16);

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
