// SPDX-License-Identifier: MIT
// Charts as plain SVG text, written by the library with the standard library only: stacked memory
// buckets against sequence length or batch (with the GPU's capacity as a line), and a line chart
// for learning-rate schedules (docs/cli.md "Charts").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../error.hpp"

namespace headroom {

/// One stacked series: a name and one value per x (same unit as the axis, e.g. GB).
struct chart_series {
  std::string name;
  std::vector<double> values;
};

/// Stacked bars, one per x value: what a memory sweep draws.
struct stacked_chart {
  std::string title;     ///< first line: what is drawn, model and method
  std::string subtitle;  ///< second line: the run (GPU, batch x length, precision, loss, layout)
  std::string x_label;
  std::string y_label;
  std::string unit;  ///< of every value, written on each y tick ("GB")
  std::vector<std::string> xs;
  std::vector<chart_series> series;
  double capacity = 0;        ///< a horizontal line at the budget (0: none); bars above it are shaded
  std::string capacity_name;  ///< what the line is ("rtx-4090", "budget")
};

/// A point of a line chart worth naming (a schedule's start, warmup end and total).
struct chart_mark {
  double x = 0, y = 0;
  std::string label;
};

/// A line through (x, y) points, e.g. a learning-rate schedule, with its named points.
struct line_chart {
  std::string title, subtitle, x_label, y_label;
  std::vector<double> xs, ys;
  std::vector<chart_mark> marks;
};

namespace detail {
inline std::string fmt_num(double v, const char* spec = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}
inline std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}
// Colour-blind-safe palette (Okabe–Ito), one per bucket in output order.
inline const char* palette(std::size_t i) {
  static const char* colours[] = {"#0072B2", "#56B4E9", "#009E73", "#F0E442", "#E69F00",
                                  "#D55E00", "#CC79A7", "#999999", "#000000"};
  return colours[i % (sizeof colours / sizeof *colours)];
}
inline constexpr const char* over_colour = "#D55E00";  // the capacity line and what is over it
inline constexpr const char* fit_colour = "#009E73";   // the largest value that fits

struct frame {
  double width = 800, height = 460, left = 80, right = 210, top = 62, bottom = 64;
  [[nodiscard]] double plot_w() const { return width - left - right; }
  [[nodiscard]] double plot_h() const { return height - top - bottom; }
  [[nodiscard]] double y0() const { return top + plot_h(); }
};

/// Ticks at 1, 2 or 5 times a power of ten, at most `most` intervals up to a top at or above `max`.
struct axis_ticks {
  double step = 1, top = 1;
  int intervals = 1;
};
inline axis_ticks nice_ticks(double max, int most = 6) {
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  const double raw = max / most, power = std::pow(10.0, std::floor(std::log10(raw)));
  axis_ticks t;
  t.step = 10 * power;
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw * (1 - 1e-12)) {
      t.step = m * power;
      break;
    }
  t.intervals = std::max(1, static_cast<int>(std::ceil(max / t.step - 1e-9)));
  t.top = t.step * t.intervals;
  return t;
}

inline std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
  return "<text x=\"" + fmt_num(x) + "\" y=\"" + fmt_num(y) + "\"" + (attrs.empty() ? "" : " " + attrs) +
         ">" + xml_escape(s) + "</text>\n";
}
inline std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + fmt_num(x1) + "\" y1=\"" + fmt_num(y1) + "\" x2=\"" + fmt_num(x2) + "\" y2=\"" +
         fmt_num(y2) + "\" " + attrs + "/>\n";
}
inline std::string rect(double x, double y, double w, double h, const std::string& attrs) {
  return "<rect x=\"" + fmt_num(x) + "\" y=\"" + fmt_num(y) + "\" width=\"" + fmt_num(w) + "\" height=\"" +
         fmt_num(h) + "\" " + attrs;
}

inline std::string header(const frame& f, const std::string& title, const std::string& subtitle) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt_num(f.width) + "\" height=\"" +
         fmt_num(f.height) + "\" viewBox=\"0 0 " + fmt_num(f.width) + " " + fmt_num(f.height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n" +
         text(16, 24, title, "font-size=\"15\" font-weight=\"bold\"") +
         (subtitle.empty() ? "" : text(16, 44, subtitle, "font-size=\"11\" fill=\"#333333\""));
}

/// The two axes, the y ticks (each with its unit) and grid lines, and both axis titles.
inline std::string axes(const frame& f, const axis_ticks& t, const std::string& unit,
                        const std::string& y_label, const std::string& x_label) {
  const double x0 = f.left, y0 = f.y0();
  std::string out =
      line(x0, f.top, x0, y0, "stroke=\"black\"") + line(x0, y0, x0 + f.plot_w(), y0, "stroke=\"black\"");
  for (int i = 0; i <= t.intervals; ++i) {
    const double y = y0 - f.plot_h() * i / t.intervals;
    out += text(x0 - 6, y + 4, fmt_num(t.step * i, "%g") + (unit.empty() ? "" : " " + unit),
                "text-anchor=\"end\"");
    if (i > 0) out += line(x0, y, x0 + f.plot_w(), y, "stroke=\"#dddddd\"");
  }
  const double mid = f.top + f.plot_h() / 2;
  out += text(14, mid, y_label, "transform=\"rotate(-90 14 " + fmt_num(mid) + ")\" text-anchor=\"middle\"");
  return out + text(x0 + f.plot_w() / 2, f.height - 10, x_label, "text-anchor=\"middle\"");
}

inline std::vector<double> column_sums(const stacked_chart& c) {
  std::vector<double> sums(c.xs.size(), 0.0);
  for (const chart_series& s : c.series)
    for (std::size_t i = 0; i < sums.size(); ++i) sums[i] += s.values[i];
  return sums;
}

/// The legend's rows in the right margin: buckets that are zero everywhere are left out; the shade when
/// shown.
inline std::string legend(const frame& f, const stacked_chart& c, double top, bool shaded) {
  std::string out;
  const double x = f.left + f.plot_w() + 16;
  double y = top;
  for (std::size_t k = 0; k < c.series.size(); ++k) {
    const std::vector<double>& v = c.series[k].values;
    if (std::none_of(v.begin(), v.end(), [](double d) { return d > 0; })) continue;
    out += rect(x, y, 12, 12, "fill=\"" + std::string(palette(k)) + "\"/>\n") +
           text(x + 18, y + 10, c.series[k].name);
    y += 18;
  }
  if (shaded)
    out += rect(x, y, 12, 12, "fill=\"" + std::string(over_colour) + "\" fill-opacity=\"0.15\"/>\n") +
           text(x + 18, y + 10, "over " + c.capacity_name);
  return out;
}

inline std::size_t legend_rows(const stacked_chart& c, bool shaded) {
  std::size_t n = shaded ? 1 : 0;
  for (const chart_series& s : c.series)
    n += std::any_of(s.values.begin(), s.values.end(), [](double d) { return d > 0; }) ? 1 : 0;
  return n;
}
}  // namespace detail

/// The chart as SVG text: 1-2-5 ticks with the unit, the capacity line labelled in the margin, bars over
/// it shaded, the largest x that fits marked, and only the buckets that hold memory in the legend.
[[nodiscard]] inline std::string svg_stacked_chart(const stacked_chart& c) {
  if (c.xs.empty()) throw input_error("chart", "no x values");
  for (const chart_series& s : c.series)
    if (s.values.size() != c.xs.size())
      throw input_error("chart", "series '" + s.name + "' does not match the x values");
  const detail::frame f;
  const std::vector<double> sums = detail::column_sums(c);
  const detail::axis_ticks t =
      detail::nice_ticks(std::max(c.capacity, *std::max_element(sums.begin(), sums.end())));
  std::string out = detail::header(f, c.title, c.subtitle) + detail::axes(f, t, c.unit, c.y_label, c.x_label);
  const double slot = f.plot_w() / static_cast<double>(c.xs.size()), bar = slot * 0.7, y0 = f.y0();
  const bool limited = c.capacity > 0;
  std::size_t fit = c.xs.size();  // the last x whose total fits (none: size)
  bool any_over = false;
  for (std::size_t i = 0; i < c.xs.size(); ++i) {
    const bool over = limited && sums[i] > c.capacity;
    any_over = any_over || over;
    if (limited && !over) fit = i;
    const double x = f.left + slot * static_cast<double>(i);
    if (over)
      out += detail::rect(x, f.top, slot, f.plot_h(),
                          "fill=\"" + std::string(detail::over_colour) + "\" fill-opacity=\"0.15\"/>\n");
    double stacked = 0;
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      const double h = f.plot_h() * c.series[k].values[i] / t.top;
      if (h > 0)
        out += detail::rect(
            x + (slot - bar) / 2, y0 - stacked - h, bar, h,
            "fill=\"" + std::string(detail::palette(k)) + "\"><title>" +
                detail::xml_escape(c.series[k].name + " " + detail::fmt_num(c.series[k].values[i]) +
                                   (c.unit.empty() ? "" : " " + c.unit)) +
                "</title></rect>\n");
      stacked += h;
    }
    out += detail::text(x + slot / 2, y0 + 16, c.xs[i],
                        std::string("text-anchor=\"middle\" font-size=\"10\"") +
                            (over ? " fill=\"" + std::string(detail::over_colour) + "\"" : ""));
  }
  if (fit < c.xs.size()) {  // the largest value that fits, outlined and named under its label
    const double x = f.left + slot * static_cast<double>(fit);
    const double h = f.plot_h() * sums[fit] / t.top;
    out += detail::rect(
               x + (slot - bar) / 2, y0 - h, bar, h,
               "fill=\"none\" stroke=\"" + std::string(detail::fit_colour) + "\" stroke-width=\"3\"/>\n") +
           detail::text(x + slot / 2, y0 + 32, "largest fit",
                        "text-anchor=\"middle\" font-size=\"10\" font-weight=\"bold\" fill=\"" +
                            std::string(detail::fit_colour) + "\"");
  }
  double legend_top = f.top;
  if (limited) {  // the line across the plot, its name and value in the margin beside it
    const double y = y0 - f.plot_h() * c.capacity / t.top;
    out += detail::line(f.left, y, f.left + f.plot_w(), y,
                        "stroke=\"" + std::string(detail::over_colour) +
                            "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"") +
           detail::text(f.left + f.plot_w() + 8, y + 4,
                        c.capacity_name + " " + detail::fmt_num(c.capacity, "%.4g") +
                            (c.unit.empty() ? "" : " " + c.unit),
                        "fill=\"" + std::string(detail::over_colour) + "\" font-weight=\"bold\"");
    const double rows = 18.0 * static_cast<double>(detail::legend_rows(c, any_over));
    if (y + 8 > legend_top && y - 16 < legend_top + rows)  // the label would sit on the legend
      legend_top = y + 14 + rows <= y0 ? y + 14 : std::max(4.0, y - 20 - rows);
  }
  return out + detail::legend(f, c, legend_top, any_over) + "</svg>\n";
}

/// Stacked bars with an optional capacity line (same unit as the values); the y label names the unit.
[[nodiscard]] inline std::string svg_stacked_chart(const std::string& title, const std::string& x_label,
                                                   const std::string& y_label,
                                                   const std::vector<std::string>& xs,
                                                   const std::vector<chart_series>& series,
                                                   double capacity = 0) {
  return svg_stacked_chart(stacked_chart{title, "", x_label, y_label, "", xs, series, capacity, "capacity"});
}

/// The line chart as SVG text: 1-2-5 ticks on both axes, each mark a dot with its label under the axis.
[[nodiscard]] inline std::string svg_line_chart(const line_chart& c) {
  if (c.xs.size() != c.ys.size() || c.xs.size() < 2)
    throw input_error("chart", "needs at least two matching points");
  detail::frame f;
  f.right = 40;
  f.left = 100;  // room for tick labels such as 0.00015
  const detail::axis_ticks ty = detail::nice_ticks(*std::max_element(c.ys.begin(), c.ys.end()));
  const double x_max = std::max(*std::max_element(c.xs.begin(), c.xs.end()), 1e-300);
  const auto px = [&](double x) { return f.left + f.plot_w() * x / x_max; };
  const auto py = [&](double y) { return f.y0() - f.plot_h() * y / ty.top; };
  std::string out = detail::header(f, c.title, c.subtitle) + detail::axes(f, ty, "", c.y_label, c.x_label);
  std::string points;
  for (std::size_t i = 0; i < c.xs.size(); ++i)
    points += detail::fmt_num(px(c.xs[i])) + "," + detail::fmt_num(py(c.ys[i])) + " ";
  out += "<polyline fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\" points=\"" + points + "\"/>\n";
  std::vector<double> row_ends;  // the right end of the last label on each row under the axis
  for (const chart_mark& m : c.marks) {
    const double x = px(m.x), y = py(m.y);
    const double w = 5.6 * static_cast<double>(m.label.size());  // about 5.6 px a character at 10 px
    const double left = std::max(4.0, std::min(x - w / 2, f.width - 4 - w));  // centred, kept on the page
    std::size_t row = 0;
    while (row < row_ends.size() && left < row_ends[row] + 8) ++row;
    if (row == row_ends.size()) row_ends.push_back(0);
    row_ends[row] = left + w;
    out += detail::line(x, y, x, f.y0(), "stroke=\"#999999\" stroke-dasharray=\"3 3\"") + "<circle cx=\"" +
           detail::fmt_num(x) + "\" cy=\"" + detail::fmt_num(y) + "\" r=\"3.5\" fill=\"#0072B2\"/>\n" +
           detail::text(left, f.y0() + 14 + 12.0 * static_cast<double>(row), m.label, "font-size=\"10\"");
  }
  return out + "</svg>\n";
}

/// A line through (x, y) points with its last x labelled.
[[nodiscard]] inline std::string svg_line_chart(const std::string& title, const std::string& x_label,
                                                const std::string& y_label, const std::vector<double>& xs,
                                                const std::vector<double>& ys) {
  line_chart c{title, "", x_label, y_label, xs, ys, {}};
  if (!xs.empty() && xs.size() == ys.size())
    c.marks.push_back({xs.back(), ys.back(), detail::fmt_num(xs.back(), "%.6g")});
  return svg_line_chart(c);
}

}  // namespace headroom
