// SPDX-License-Identifier: MIT
// One include for Catch2 v3 and v2.13, plus the helpers the tests share.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <algorithm>
#include <string>
#include <vector>

#include <headroom/error.hpp>

namespace headroom::test {
/// Runs `f`, which must throw input_error whose message contains every given fragment.
template <class F, class... Fragments>
void require_input_error(F&& f, const Fragments&... fragments) {
  std::string message;
  try {
    f();
  } catch (const input_error& e) {
    message = e.what();
  }
  INFO("message: " << message);
  REQUIRE_FALSE(message.empty());
  for (const std::string& fragment : {std::string(fragments)...}) {
    INFO("expected fragment: " << fragment);
    CHECK(message.find(fragment) != std::string::npos);
  }
}
/// Whether any line of `list` (notes, warnings) contains `fragment`.
inline bool mentions(const std::vector<std::string>& list, const std::string& fragment) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& line) { return line.find(fragment) != std::string::npos; });
}
}  // namespace headroom::test
