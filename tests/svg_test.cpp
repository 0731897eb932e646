// SPDX-License-Identifier: MIT
// The SVG charts are well-formed text with what they promise (rendering is checked in CI against
// tests/charts/*.png by tests/charts/compare_png.py).
#include <cmath>
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
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("A stacked chart draws one rect per non-zero part, a legend and the capacity line", "[svg]") {
  const std::string svg = svg_stacked_chart("peak <by> bucket", "seq", "GB", {"512", "1024"},
                                            {{"weights", {2.0, 2.0}}, {"logits", {0.0, 3.0}}}, 24.0);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(count(svg, "<rect x=") == 3 + 1 + 2);  // three bar segments, the largest fit's outline, two swatches
  CHECK(has(svg, "stroke-dasharray"));
  CHECK(has(svg, "peak &lt;by&gt; bucket"));  // titles are escaped
  test::require_input_error(
      [] {
        (void)svg_stacked_chart("t", "x", "y", {"1"}, {{"a", {1.0, 2.0}}});
      },
      "chart");
}

TEST_CASE("Ticks fall on 1, 2 or 5 times a power of ten and the top is the first tick at or above the data",
          "[svg][property]") {
  for (double max = 1e-6; max < 1e6; max *= 1.37) {
    const detail::axis_ticks t = detail::nice_ticks(max);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step) + 1e-9));
    INFO("max " << max << " step " << t.step);
    CHECK(
        (std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 || std::fabs(mantissa - 5) < 1e-9));
    CHECK(t.intervals >= 1);
    CHECK(t.intervals <= 6);
    CHECK(t.top >= max * (1 - 1e-12));
    CHECK(t.top - t.step < max);
  }
  CHECK(detail::nice_ticks(99.4).step == 20);  // the sweep that drew 24.9, 49.7, 74.6, 99.4
  CHECK(detail::nice_ticks(99.4).top == 100);
  CHECK(detail::nice_ticks(0).top == 1);  // an empty chart still has an axis
}

TEST_CASE(
    "A memory chart names its unit and capacity, shades what is over, marks the largest fit and lists "
    "only buckets that hold memory",
    "[svg]") {
  stacked_chart c;
  c.title = "Peak memory by bucket: qwen3-4b, qlora";
  c.subtitle = "rtx-4090 | micro-batch 1 x seq-len swept";
  c.x_label = "sequence length (tokens)";
  c.y_label = "memory at the peak phase";
  c.unit = "GB";
  c.xs = {"4096", "8192", "16384"};
  c.series = {{"weights", {2, 2, 2}}, {"grads", {0, 0, 0}}, {"logits", {10, 18, 35}}};
  c.capacity = 24;
  c.capacity_name = "rtx-4090";
  const std::string svg = svg_stacked_chart(c);
  CHECK(has(svg, ">rtx-4090 24 GB</text>"));  // the line's label carries its unit
  CHECK(has(svg, ">10 GB</text>"));           // ticks at 0, 10, ..., 40 GB
  CHECK(has(svg, ">40 GB</text>"));
  CHECK_FALSE(has(svg, ">grads</text>"));  // zero everywhere: not in the legend
  CHECK(has(svg, ">logits</text>"));
  CHECK(has(svg, ">over rtx-4090</text>"));         // one bar over: the shade is explained
  CHECK(count(svg, "fill-opacity=\"0.15\"") == 2);  // the shaded slot and its legend swatch
  CHECK(count(svg, ">largest fit</text>") == 1);
  const std::size_t fit = svg.find(">largest fit</text>");
  CHECK(svg.rfind("<text x=\"", fit) == svg.rfind("<text x=\"335\"", fit));  // under the second slot (8192)
  CHECK(has(svg, ">rtx-4090 | micro-batch 1 x seq-len swept</text>"));
  c.capacity = 0;  // no budget: no line, no shade, no mark
  const std::string free = svg_stacked_chart(c);
  CHECK_FALSE(has(free, "stroke-dasharray"));
  CHECK_FALSE(has(free, "largest fit"));
  CHECK_FALSE(has(free, "fill-opacity"));
}

TEST_CASE("A line chart joins every point and labels its named points without overlapping them", "[svg]") {
  const std::string svg = svg_line_chart("lr", "step", "lr", {0, 1, 2}, {0, 2e-4, 1e-4});
  CHECK(count(svg, "<polyline") == 1);
  CHECK(count(svg.substr(svg.find("points=")), ",") == 3);
  test::require_input_error([] { (void)svg_line_chart("lr", "x", "y", {0}, {0}); }, "chart");
  line_chart c{"cosine",
               "",
               "optimizer step",
               "learning rate",
               {0, 1, 10, 100},
               {0, 1e-5, 2e-4, 0},
               {{0, 0, "start, step 0: lr 0"}, {1, 1e-5, "warmup end, step 1: lr 1e-05"}, {100, 0, "total"}}};
  const std::string marked = svg_line_chart(c);
  CHECK(count(marked, "<circle") == 3);
  // start and warmup end are 6 pixels apart: the second label goes a row lower (y0 396 + 14, + 12).
  CHECK(has(marked, "y=\"410\" font-size=\"10\">start, step 0: lr 0</text>"));
  CHECK(has(marked, "y=\"422\" font-size=\"10\">warmup end, step 1: lr 1e-05</text>"));
  CHECK(has(marked, "y=\"410\" font-size=\"10\">total</text>"));
}
