// SPDX-License-Identifier: MIT
// NF4 storage from block sizes: W08's 4.127 bits/param and exact per-tensor bytes.
#include <headroom/quantization.hpp>

#include "catch.hpp"

using namespace headroom;
using headroom::test::require_input_error;

// W08: 4 + 8/64 + 32/(64·256) = 4.126953125 bits, which the course quotes as 4.127.
constexpr bits_fraction dq = nf4_bits_per_param(nf4_layout{});
static_assert(dq.num == 67'616 && dq.den == 16'384);  // 8,452 bytes per 16,384 values
static_assert(dq.millibits() == 4127);
static_assert(nf4_bits_per_param(nf4_layout{64, false, 256}).millibits() == 4500);

TEST_CASE("W08: NF4 with double quantisation costs 4.127 bits per parameter", "[quantization][worked]") {
  CHECK(dq.value() == 4.126953125);
  REQUIRE_THAT(dq.value() / 8, Catch::Matchers::WithinAbs(0.516, 0.0005));  // ≈ 0.516 bytes/param
  CHECK(nf4_bits_per_param(nf4_layout{64, false, 256}).value() == 4.5);     // without double quant
}

TEST_CASE("W11: an 8B nominal base at 4.127 bits is 4.127 GB", "[quantization][worked]") {
  CHECK(nf4_nominal_bytes(params(8'000'000'000), nf4_layout{}) == bytes(4'127'000'000));
}

TEST_CASE("Per-tensor NF4 bytes: packed codes, uint8 absmax per 64, fp32 scale per 256 blocks",
          "[quantization]") {
  // q_proj of Llama-3.1-8B: 4096 x 4096 = 16,777,216 values → 8,388,608 packed bytes,
  // 262,144 first-level codes and 1,024 fp32 second-level scales.
  CHECK(nf4_tensor_bytes(16'777'216, nf4_layout{}) == bytes(8'388'608 + 262'144 + 4 * 1'024));
  // Without double quantisation the absmax stays fp32: 4 bytes per 64 values.
  CHECK(nf4_tensor_bytes(16'777'216, nf4_layout{64, false, 256}) == bytes(8'388'608 + 4 * 262'144));
  // Partial blocks round up: 65 values need 33 packed bytes, 2 codes and 1 scale.
  CHECK(nf4_tensor_bytes(65, nf4_layout{}) == bytes(33 + 2 + 4));
}

TEST_CASE("Zero or absurd 4-bit block sizes are errors, not a division by zero", "[quantization][errors]") {
  nf4_layout q;
  q.block_size = 0;
  require_input_error([&] { (void)nf4_bits_per_param(q); }, "bnb_4bit block size", "positive");
  q.block_size = 64;
  q.dq_block_size = 1ull << 40;
  require_input_error([&] { (void)nf4_tensor_bytes(4096, q); }, "bnb_4bit block size", "absurd");
}
