// SPDX-License-Identifier: MIT
// Units: no implicit conversions, GB vs GiB, and overflow-checked integer arithmetic.
#include <type_traits>

#include <headroom/units.hpp>

#include "catch.hpp"

using namespace headroom;

static_assert(!std::is_convertible_v<std::uint64_t, bytes>, "bytes must be constructed explicitly");
static_assert(!std::is_convertible_v<bytes, std::uint64_t>, "bytes must be read with count()");
static_assert(!std::is_convertible_v<params, bytes>, "params are not bytes");
static_assert(!std::is_same_v<bytes, params>);
static_assert(bytes_per_gb == 1'000'000'000 && bytes_per_gib == 1'073'741'824);
static_assert((bytes(3) + bytes(4)) * 2 == bytes(14));

TEST_CASE("GB is 1e9 bytes and GiB is 2^30 bytes", "[units]") {
  REQUIRE_THAT(in_gb(bytes(128'000'000'000)), Catch::Matchers::WithinRel(128.0, 1e-15));
  REQUIRE_THAT(in_gib(bytes(128'000'000'000)), Catch::Matchers::WithinRel(119.2092895507812, 1e-12));
  CHECK(in_gib(bytes(bytes_per_gib)) == 1.0);
}

TEST_CASE("Integer quantities refuse to overflow or go negative", "[units][errors]") {
  const bytes huge(detail::u64_max - 1);
  REQUIRE_THROWS_AS(huge + bytes(2), input_error);
  REQUIRE_THROWS_AS(huge * 2, input_error);
  REQUIRE_THROWS_AS(bytes(1) - bytes(2), input_error);
  CHECK((huge + bytes(1)).count() == detail::u64_max);
  CHECK(detail::checked_mul(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1) ==
        (std::uint64_t{1} << 32) * ((std::uint64_t{1} << 32) - 1));
  REQUIRE_THROWS_AS(detail::checked_mul(std::uint64_t{1} << 32, std::uint64_t{1} << 32), input_error);
}

TEST_CASE("ceil_div rounds up to whole blocks", "[units]") {
  CHECK(detail::ceil_div(8'000'000'000, 2048) == 3'906'250);
  CHECK(detail::ceil_div(4097, 4096) == 2);
  CHECK(detail::ceil_div(0, 64) == 0);
}

TEST_CASE("GB digits: exact decimal rounding, half up, the same in every table and sentence", "[units]") {
  CHECK(gb_digits(bytes(2'063'500'000)) == "2.064");  // a double prints this as 2.063 (binary rounding)
  CHECK(gb_digits(bytes(2'063'499'999)) == "2.063");
  CHECK(gb_digits(bytes(999'999'999)) == "1.000");
  CHECK(gb_digits(bytes(5'000'000)) == "0.005");
  CHECK(gb_text(bytes(128'000'000'000)) == "128.000 GB");  // W04
}
