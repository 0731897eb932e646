// SPDX-License-Identifier: MIT
// Software bf16/fp16 and the course's check 3.5 (W28–W32), plus the run-reading numbers W36, W37.
#include <vector>

#include <headroom/precision.hpp>
#include <headroom/signals.hpp>

#include "catch.hpp"

using namespace headroom;

TEST_CASE("W28: bf16 spacing just below 1.0 is 2^-8, so updates below about 0.002 vanish",
          "[precision][worked]") {
  CHECK(spacing_below(1.0, bf16_format) == 0.00390625);
  CHECK(smallest_surviving_update(1.0, bf16_format) == 0.001953125);
  CHECK(to_bf16(1.0 - 0.0019) == 1.0);
  CHECK(to_bf16(1.0 - 0.0021) == 1.0 - 0.00390625);
  CHECK(spacing_below(1.0, fp32_format) == std::ldexp(1.0, -24));
}

TEST_CASE("W29: 100 bf16 updates of -1e-3 leave 1.0, the fp32 master reaches 0.9", "[precision][worked]") {
  double w = 1.0;
  float master = 1.0f;
  for (int i = 0; i < 100; ++i) {
    w = to_bf16(w - to_bf16(1e-3));
    master -= 1e-3f;
  }
  CHECK(w == 1.0);
  REQUIRE_THAT(master, Catch::Matchers::WithinAbs(0.9, 1e-5));
}

TEST_CASE("W30: summing 1,000 x 0.01 gives 10 in fp32 and stalls at 4.0 in bf16", "[precision][worked]") {
  CHECK(stall_point(0.01, bf16_format) == 4.0);  // half the spacing above 4 (2^-6) exceeds 0.01
  double acc = 0;
  for (int i = 0; i < 1000; ++i) acc = to_bf16(acc + to_bf16(0.01));
  CHECK(acc <= 4.0);
  float f = 0;
  for (int i = 0; i < 1000; ++i) f += 0.01f;
  REQUIRE_THAT(f, Catch::Matchers::WithinAbs(10.0, 1e-3));
}

TEST_CASE("W31: fp16 overflows past 65,504 and flushes 1e-8 to zero, loss scaling rescues it",
          "[precision][worked]") {
  CHECK(max_finite(fp16_format) == 65504.0);
  CHECK(std::isinf(to_fp16(60000.0 * 2)));
  CHECK(std::isfinite(to_bf16(60000.0 * 2)));
  CHECK(to_fp16(1e-8) == 0.0);
  CHECK(to_fp16(1e-8 * 65536) > 0.0);
  CHECK(min_subnormal(fp16_format) == std::ldexp(1.0, -24));
  CHECK(to_fp16(std::ldexp(1.0, -25) * 1.5) == std::ldexp(1.0, -24));  // subnormals round to nearest
  CHECK(to_fp16(std::ldexp(1.0, -25)) == 0.0);                         // a tie goes to even (zero)
  CHECK(loss_scale_headroom_bits(1.0) == 15);                          // 2^15 ≤ 65,504 < 2^16
  CHECK(to_fp16(65519.0) == 65504.0);                                  // below the halfway point to 2^16
  CHECK(std::isinf(to_fp16(65520.0)));                                 // rounds to 2^16: overflow
}

TEST_CASE("W32: clipping (3, 4) at 1.0 returns 5 and leaves (0.6, 0.8)", "[precision][worked]") {
  std::vector<double> g{3.0, 4.0};
  CHECK(clip_grad_norm(g, 1.0) == 5.0);
  REQUIRE_THAT(g[0], Catch::Matchers::WithinAbs(0.6, 1e-6));
  REQUIRE_THAT(g[1], Catch::Matchers::WithinAbs(0.8, 1e-6));
  std::vector<double> small{0.3, 0.4};
  CHECK(clip_grad_norm(small, 1.0) == 0.5);
  CHECK(small[0] == 0.3);  // under the threshold nothing changes
  test::require_input_error([&] { (void)clip_grad_norm(g, 0.0); }, "max_grad_norm");
}

TEST_CASE("Rounding is to nearest even and keeps the sign", "[precision]") {
  CHECK(to_bf16(1.0 + std::ldexp(1.0, -8)) == 1.0);                            // tie → even mantissa
  CHECK(to_bf16(1.0 + 3 * std::ldexp(1.0, -8)) == 1.0 + std::ldexp(1.0, -6));  // tie → even
  CHECK(to_bf16(-3.0) == -3.0);
  CHECK(to_fp16(-1e-8) == 0.0);
  CHECK(std::signbit(to_fp16(-1e-8)));
  CHECK(std::isinf(to_bf16(std::ldexp(1.0, 128))));
}

TEST_CASE("W36 and W37: NEFTune's noise scale and the uniform-prediction loss", "[signals][worked]") {
  // W37: ln 151,936 ≈ 11.9 for Qwen3's vocabulary.
  REQUIRE_THAT(uniform_prediction_loss(151'936), Catch::Matchers::WithinAbs(11.93, 0.005));
  // W36: α/√(T·d) with the typical α = 5: Llama-3.1-8B (d 4096) at T 2048 → 5/2896.3.
  REQUIRE_THAT(neftune_noise_scale(5, 2048, 4096),
               Catch::Matchers::WithinRel(5.0 / std::sqrt(2048.0 * 4096.0), 1e-15));
  CHECK(neftune_noise_scale(15, 2048, 4096) == 3 * neftune_noise_scale(5, 2048, 4096));
  test::require_input_error([] { (void)neftune_noise_scale(0, 2048, 4096); }, "neftune_noise_alpha");
  test::require_input_error([] { (void)uniform_prediction_loss(1); }, "vocab_size");
}
