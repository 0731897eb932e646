// SPDX-License-Identifier: MIT
// The SVG charts are well-formed text with what they promise (rendering is checked in CI).
#include <string>

#include <headroom/report/svg.hpp>

#include "catch.hpp"

using namespace headroom;

namespace {
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("A stacked chart draws one rect per non-zero part, a legend and the capacity line", "[svg]") {
  const std::string svg = svg_stacked_chart("peak <by> bucket", "seq", "GB", {"512", "1024"},
                                            {{"weights", {2.0, 2.0}}, {"logits", {0.0, 3.0}}}, 24.0);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<rect x=") == 3 + 2);  // three bar segments, two legend swatches
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
  CHECK(svg.find("peak &lt;by&gt; bucket") != std::string::npos);  // titles are escaped
  test::require_input_error(
      [] {
        (void)svg_stacked_chart("t", "x", "y", {"1"}, {{"a", {1.0, 2.0}}});
      },
      "chart");
}

TEST_CASE("A line chart joins every point", "[svg]") {
  const std::string svg = svg_line_chart("lr", "step", "lr", {0, 1, 2}, {0, 2e-4, 1e-4});
  CHECK(count(svg, "<polyline") == 1);
  CHECK(count(svg.substr(svg.find("points=")), ",") == 3);
  test::require_input_error([] { (void)svg_line_chart("lr", "x", "y", {0}, {0}); }, "chart");
}
