// SPDX-License-Identifier: MIT
// Charts as plain SVG text, written by the library with the standard library only: stacked memory
// buckets against sequence length or batch (with the GPU's capacity as a line), and a line chart
// for learning-rate schedules.
#pragma once

#include <algorithm>
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
struct frame {
  double width = 760, height = 420, left = 70, right = 190, top = 40, bottom = 50;
  [[nodiscard]] double plot_w() const { return width - left - right; }
  [[nodiscard]] double plot_h() const { return height - top - bottom; }
};
inline std::string header(const frame& f, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt_num(f.width) + "\" height=\"" +
         fmt_num(f.height) + "\" viewBox=\"0 0 " + fmt_num(f.width) + " " + fmt_num(f.height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n"
         "<text x=\"" +
         fmt_num(f.left) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" + xml_escape(title) +
         "</text>\n";
}
inline std::string axes(const frame& f, double y_max, const std::string& y_label,
                        const std::string& x_label) {
  std::string out;
  const double x0 = f.left, y0 = f.top + f.plot_h();
  out += "<line x1=\"" + fmt_num(x0) + "\" y1=\"" + fmt_num(f.top) + "\" x2=\"" + fmt_num(x0) + "\" y2=\"" +
         fmt_num(y0) + "\" stroke=\"black\"/>\n<line x1=\"" + fmt_num(x0) + "\" y1=\"" + fmt_num(y0) +
         "\" x2=\"" + fmt_num(x0 + f.plot_w()) + "\" y2=\"" + fmt_num(y0) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {  // five y ticks
    const double v = y_max * i / 4, y = y0 - f.plot_h() * i / 4;
    out += "<text x=\"" + fmt_num(x0 - 6) + "\" y=\"" + fmt_num(y + 4) + "\" text-anchor=\"end\">" +
           fmt_num(v, "%.3g") + "</text>\n<line x1=\"" + fmt_num(x0) + "\" y1=\"" + fmt_num(y) + "\" x2=\"" +
           fmt_num(x0 + f.plot_w()) + "\" y2=\"" + fmt_num(y) + "\" stroke=\"#dddddd\"/>\n";
  }
  out += "<text x=\"16\" y=\"" + fmt_num(f.top + f.plot_h() / 2) + "\" transform=\"rotate(-90 16 " +
         fmt_num(f.top + f.plot_h() / 2) + ")\" text-anchor=\"middle\">" + xml_escape(y_label) + "</text>\n";
  out += "<text x=\"" + fmt_num(x0 + f.plot_w() / 2) + "\" y=\"" + fmt_num(f.height - 10) +
         "\" text-anchor=\"middle\">" + xml_escape(x_label) + "</text>\n";
  return out;
}
}  // namespace detail

/// Stacked bars, one per x value, with an optional horizontal capacity line (same unit as values).
[[nodiscard]] inline std::string svg_stacked_chart(const std::string& title, const std::string& x_label,
                                                   const std::string& y_label,
                                                   const std::vector<std::string>& xs,
                                                   const std::vector<chart_series>& series,
                                                   double capacity = 0) {
  if (xs.empty()) throw input_error("chart", "no x values");
  for (const chart_series& s : series)
    if (s.values.size() != xs.size())
      throw input_error("chart", "series '" + s.name + "' does not match the x values");
  const detail::frame f;
  double y_max = capacity;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double sum = 0;
    for (const chart_series& s : series) sum += s.values[i];
    y_max = std::max(y_max, sum);
  }
  y_max = y_max <= 0 ? 1 : y_max * 1.05;
  std::string out = detail::header(f, title) + detail::axes(f, y_max, y_label, x_label);
  const double slot = f.plot_w() / static_cast<double>(xs.size()), bar = slot * 0.7;
  const double y0 = f.top + f.plot_h();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = f.left + slot * static_cast<double>(i) + (slot - bar) / 2;
    double stacked = 0;
    for (std::size_t k = 0; k < series.size(); ++k) {
      const double h = f.plot_h() * series[k].values[i] / y_max;
      if (h > 0)
        out += "<rect x=\"" + detail::fmt_num(x) + "\" y=\"" + detail::fmt_num(y0 - stacked - h) +
               "\" width=\"" + detail::fmt_num(bar) + "\" height=\"" + detail::fmt_num(h) + "\" fill=\"" +
               detail::palette(k) + "\"><title>" +
               detail::xml_escape(series[k].name + " " + detail::fmt_num(series[k].values[i])) +
               "</title></rect>\n";
      stacked += h;
    }
    out += "<text x=\"" + detail::fmt_num(x + bar / 2) + "\" y=\"" + detail::fmt_num(y0 + 16) +
           "\" text-anchor=\"middle\" font-size=\"10\">" + detail::xml_escape(xs[i]) + "</text>\n";
  }
  if (capacity > 0) {
    const double y = y0 - f.plot_h() * capacity / y_max;
    out += "<line x1=\"" + detail::fmt_num(f.left) + "\" y1=\"" + detail::fmt_num(y) + "\" x2=\"" +
           detail::fmt_num(f.left + f.plot_w()) + "\" y2=\"" + detail::fmt_num(y) +
           "\" stroke=\"#D55E00\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n<text x=\"" +
           detail::fmt_num(f.left + f.plot_w() - 4) + "\" y=\"" + detail::fmt_num(y - 6) +
           "\" text-anchor=\"end\" fill=\"#D55E00\">GPU capacity " + detail::fmt_num(capacity, "%.4g") +
           "</text>\n";
  }
  for (std::size_t k = 0; k < series.size(); ++k) {  // legend
    const double y = f.top + 18.0 * static_cast<double>(k);
    const double x = f.left + f.plot_w() + 16;
    out += "<rect x=\"" + detail::fmt_num(x) + "\" y=\"" + detail::fmt_num(y) +
           "\" width=\"12\" height=\"12\" fill=\"" + detail::palette(k) + "\"/><text x=\"" +
           detail::fmt_num(x + 18) + "\" y=\"" + detail::fmt_num(y + 10) + "\">" +
           detail::xml_escape(series[k].name) + "</text>\n";
  }
  return out + "</svg>\n";
}

/// A line through (x, y) points, e.g. a learning-rate schedule.
[[nodiscard]] inline std::string svg_line_chart(const std::string& title, const std::string& x_label,
                                                const std::string& y_label, const std::vector<double>& xs,
                                                const std::vector<double>& ys) {
  if (xs.size() != ys.size() || xs.size() < 2)
    throw input_error("chart", "needs at least two matching points");
  detail::frame f;
  f.right = 30;
  f.left = 100;  // room for tick labels such as 0.000158
  const double x_max = std::max(*std::max_element(xs.begin(), xs.end()), 1e-300);
  double y_max = *std::max_element(ys.begin(), ys.end());
  y_max = y_max <= 0 ? 1 : y_max * 1.05;
  std::string out = detail::header(f, title) + detail::axes(f, y_max, y_label, x_label);
  std::string points;
  for (std::size_t i = 0; i < xs.size(); ++i)
    points += detail::fmt_num(f.left + f.plot_w() * xs[i] / x_max) + "," +
              detail::fmt_num(f.top + f.plot_h() * (1 - ys[i] / y_max)) + " ";
  out += "<polyline fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\" points=\"" + points + "\"/>\n";
  out += "<text x=\"" + detail::fmt_num(f.left + f.plot_w()) + "\" y=\"" +
         detail::fmt_num(f.top + f.plot_h() + 16) + "\" text-anchor=\"end\" font-size=\"10\">" +
         detail::fmt_num(x_max, "%.6g") + "</text>\n";
  return out + "</svg>\n";
}

}  // namespace headroom
