// SPDX-License-Identifier: MIT
// Numbers as people write them (number_text.hpp): lengths with k = 1024, token counts with decimal suffixes
// and exponents, memory sizes whose unit decides, thousands separators; every other form refused by name.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <headroom/choices.hpp>
#include <headroom/number_text.hpp>

#include "catch.hpp"

using namespace headroom;

namespace number_text_test {
std::uint64_t length(const char* text) {
  return parse_number("--seq-len", text, number_kind::length, 1u << 26);
}
std::uint64_t tokens(const char* text) {
  return parse_number("--tokens", text, number_kind::tokens, std::uint64_t{1} << 50);
}
}  // namespace number_text_test

TEST_CASE("Lengths: 4k is 4,096 tokens, as a 4k context means") {
  using number_text_test::length;
  CHECK(length("4096") == 4096);
  CHECK(length("32,768") == 32768);
  CHECK(length("4k") == 4096);
  CHECK(length("32K") == 32768);
  CHECK(length("128k") == 131072);
  CHECK(length("1.5k") == 1536);
  CHECK(length("1M") == 1048576);
  for (const char* bad :
       {"", "4kb", "4 k", "1e4", "-4k", "0.3k", "32,76", "3,2768", ",768", "4.k", "k", "4096.0x"})
    CHECK_THROWS_WITH(length(bad), Catch::Contains("--seq-len: expected a positive integer such as 4096"));
  CHECK_THROWS_WITH(length("0k"), Catch::Contains("expected a positive integer, got '0k'"));
  CHECK_THROWS_WITH(length("128M"), Catch::Contains("absurdly large"));
  CHECK_THROWS_WITH(length("99999999999999999999"), Catch::Contains("absurdly large"));  // no overflow
  CHECK(parse_number("--batch", "1,024", number_kind::count, 4096) == 1024);
  CHECK_THROWS_WITH(parse_number("--batch", "4k", number_kind::count, 4096),
                    Catch::Contains("--batch: expected a positive integer, got '4k'"));
}

TEST_CASE("Token counts: 1e9, 2B, 500M and 1.5T are decimal") {
  using number_text_test::tokens;
  CHECK(tokens("1000000000") == 1'000'000'000);
  CHECK(tokens("1,000,000") == 1'000'000);
  CHECK(tokens("1e9") == 1'000'000'000);
  CHECK(tokens("2.5e9") == 2'500'000'000);
  CHECK(tokens("500M") == 500'000'000);
  CHECK(tokens("2B") == 2'000'000'000);
  CHECK(tokens("1.5T") == 1'500'000'000'000);
  CHECK(tokens("10k") == 10'000);
  for (const char* bad : {"1e", "1e999", "2b5", "1.5", "2.5e-3", "500m", "1e9B", "e9"})
    CHECK_THROWS_WITH(tokens(bad),
                      Catch::Contains("--tokens: expected a positive integer such as 1000000000"));
  CHECK_THROWS_WITH(tokens("2000T"), Catch::Contains("absurdly large"));
}

TEST_CASE("Memory sizes: the unit decides, GB = 1e9 and GiB = 2^30 bytes") {
  constexpr std::uint64_t gb = 1'000'000'000;
  CHECK(read_memory_size("24", gb) == 24 * gb);
  CHECK(read_memory_size("24GB", gb) == 24 * gb);
  CHECK(read_memory_size("24gb", gb) == 24 * gb);
  CHECK(read_memory_size("24 GiB", gb) == 24 * (std::uint64_t{1} << 30));
  CHECK(read_memory_size("1.5GiB", gb) == 3 * (std::uint64_t{1} << 29));
  CHECK(read_memory_size("80.5", gb) == 80'500'000'000);
  CHECK(read_memory_size("512MiB", gb) == std::uint64_t{1} << 29);
  CHECK(read_memory_size("1TB", gb) == 1000 * gb);
  CHECK(read_memory_size("1e1", gb) == 10 * gb);  // the exponents parse_decimal took
  CHECK(read_memory_size("2.5e-1GB", gb) == 250'000'000);
  CHECK_FALSE(read_memory_size("1e-320", gb).has_value());  // refused by name, not std::stod's error
  for (const char* bad :
       {"", "GB", "24G", "24 gigs", "-1GB", "1e", "1e999", "24GBs", "2,4GB", "nan", "inf", "0x1"})
    CHECK_FALSE(read_memory_size(bad, gb).has_value());
}

TEST_CASE("Names: any case on the command line, the framework's case in files, and did you mean") {
  constexpr std::array<named<int>, 3> table{{{"full", 0}, {"lora", 1}, {"qlora", 2}}};
  CHECK(parse_choice(table, "QLoRA", "--method") == 2);  // a flag: any case
  CHECK_THROWS_WITH(parse_choice(table, "QLoRA", "recipe.yaml: /finetuning_type"),
                    Catch::Contains("unknown 'QLoRA' (did you mean 'qlora'?); valid: full, lora, qlora"));
  CHECK_THROWS_WITH(parse_choice(table, "qlor", "--method"), Catch::Contains("(did you mean 'qlora'?)"));
  CHECK_THROWS_WITH(parse_choice(table, "adapter", "--method"), Catch::Contains("unknown 'adapter'; valid:"));
  CHECK(detail::edit_distance("kitten", "sitting") == 3);
  CHECK(detail::edit_distance("H100", "h100") == 0);
  const std::array<std::string_view, 4> gpus{"h100-pcie", "h100-sxm", "h200", "v100"};
  CHECK(detail::did_you_mean(gpus, "H100") ==
        " (did you mean 'h100-pcie', 'h100-sxm'?)");  // names holding it
  CHECK(detail::did_you_mean(gpus, "h20") == " (did you mean 'h200'?)");
  CHECK(detail::did_you_mean(gpus, "tpu-v5") == "");
}
