// SPDX-License-Identifier: MIT
// lr_schedule: the learning rate at every optimizer step, exactly as transformers' lr_scheduler_type
// computes it. --csv prints step,lr rows for steps 0…total; otherwise a chart is drawn in the terminal.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <headroom/cli/parse.hpp>
#include <headroom/report/svg.hpp>
#include <headroom/schedules.hpp>

namespace {

using namespace headroom;

/// A terminal chart: `height` rows of `width` columns, one '*' per column at its sampled step.
std::string chart(const schedule_config& c, std::size_t width, std::size_t height) {
  std::vector<double> values(width);
  double top = 0;
  for (std::size_t x = 0; x < width; ++x) {
    const auto step = static_cast<std::uint64_t>(static_cast<double>(c.total_steps) * static_cast<double>(x) /
                                                 static_cast<double>(width - 1));
    values[x] = learning_rate(c, step);
    top = std::max(top, values[x]);
  }
  std::string out;
  for (std::size_t row = 0; row < height; ++row) {
    const double level = top * static_cast<double>(height - 1 - row) / static_cast<double>(height - 1);
    out += fmt::format("{:>10.3g} |", level);
    for (std::size_t x = 0; x < width; ++x) {
      const double cell = top == 0 ? 0 : values[x] / top * static_cast<double>(height - 1);
      out += static_cast<std::size_t>(cell + 0.5) == height - 1 - row ? '*' : ' ';
    }
    out += '\n';
  }
  out += fmt::format("{:>10} +{}\n{:>12}{:<{}}{}\n", "", std::string(width, '-'), "", 0, width - 1,
                     c.total_steps);
  return out;
}

// The curve as an SVG chart: at most chart_points steps (evenly spaced, the named steps always among them)
// so that a schedule of 2^32 steps is a chart of kilobytes, with its start, warmup end, decay start and
// total.
std::string schedule_chart(const schedule_config& c, const std::string& type) {
  constexpr std::uint64_t chart_points = 2000;  // finer than the plot's 680 pixels
  const std::uint64_t T = c.total_steps, W = c.warmup_steps;
  std::vector<std::pair<const char*, std::uint64_t>> named{{"start", 0}};
  if (W > 0 && W < T) named.emplace_back("warmup end", W);
  if (c.type == schedule_type::warmup_stable_decay) {  // schedules.hpp learning_rate: the stable phase ends
    const std::uint64_t D = c.num_decay_steps.value_or(0),
                        S = c.num_stable_steps.value_or(T > W + D ? T - W - D : 0);
    if (W + S > W && W + S < T) named.emplace_back("decay start", W + S);
  }
  named.emplace_back("total", T);
  std::vector<std::uint64_t> ts;
  for (std::uint64_t i = 0; i <= chart_points; ++i)
    ts.push_back(T <= chart_points ? i : T / chart_points * i);
  for (const auto& n : named) ts.push_back(n.second);
  std::sort(ts.begin(), ts.end());
  ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
  while (!ts.empty() && ts.back() > T) ts.pop_back();
  line_chart lc;
  lc.title = fmt::format("{} schedule, peak learning rate {:g}", type, c.peak_lr);
  lc.subtitle = fmt::format("warmup {} of {} optimizer steps", W, T);
  lc.x_label = "optimizer step";
  lc.y_label = "learning rate";
  for (std::uint64_t t : ts) {
    lc.xs.push_back(static_cast<double>(t));
    lc.ys.push_back(learning_rate(c, t));
  }
  for (const auto& [what, t] : named)
    lc.marks.push_back({static_cast<double>(t), learning_rate(c, t),
                        fmt::format("{}, step {}: lr {:.3g}", what, t, learning_rate(c, t))});
  return svg_line_chart(lc);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"headroom lr_schedule: transformers learning-rate schedules, step by step"};
  std::string type = "linear", peak = "5e-5", warmup = "0", total, decay_steps, stable_steps, decay_type,
              warmup_type, min_lr_ratio, num_cycles, min_lr, min_lr_rate, lr_end, power;
  bool csv = false;
  std::string svg;
  app.add_option("--type", type, "lr_scheduler_type: linear, cosine, warmup_stable_decay, ...")
      ->capture_default_str();
  app.add_option("--peak", peak, "peak (base) learning rate")->capture_default_str();
  app.add_option("--warmup", warmup, "warmup_steps: a step count, or a fraction of total below 1")
      ->capture_default_str();
  app.add_option("--total", total, "num_training_steps")->required();
  app.add_option("--decay-steps", decay_steps, "warmup_stable_decay: num_decay_steps");
  app.add_option("--stable-steps", stable_steps, "warmup_stable_decay: num_stable_steps");
  app.add_option("--decay-type", decay_type,
                 "warmup_stable_decay: linear | cosine | 1-sqrt (default cosine)");
  app.add_option("--warmup-type", warmup_type,
                 "warmup_stable_decay: linear | cosine | 1-sqrt (default linear)");
  app.add_option("--min-lr-ratio", min_lr_ratio, "warmup_stable_decay floor, in [0, 1]");
  app.add_option("--num-cycles", num_cycles, "cosine cycles (cosine 0.5, restarts 1)");
  app.add_option("--min-lr", min_lr, "cosine_with_min_lr: the floor");
  app.add_option("--min-lr-rate", min_lr_rate, "cosine_with_min_lr: the floor as a fraction of the peak");
  app.add_option("--lr-end", lr_end, "polynomial: final learning rate (default 1e-7)");
  app.add_option("--power", power, "polynomial: power (default 1)");
  app.add_flag("--csv", csv, "print step,lr rows for steps 0..total");
  app.add_option("--svg", svg, "write the curve as an SVG file, its start, warmup end and total labelled");
  cli::arrange_help(
      app, "lr_schedule",
      "Exit codes: 0 ok, 2 bad input (the message names the flag). Every flag of every program: "
      "docs/cli.md.");
  return cli::run(app, argc, argv, [&]() {
    schedule_config c;
    c.type = parse_choice(schedule_names, type, "--type");
    c.peak_lr = cli::parse_positive("--peak", peak);
    c.total_steps = cli::parse_count("--total", total, std::uint64_t{1} << 32);
    c.warmup_steps = resolve_warmup_steps(cli::parse_nonnegative("--warmup", warmup), c.total_steps);
    if (!decay_steps.empty())
      c.num_decay_steps = cli::parse_count("--decay-steps", decay_steps, c.total_steps);
    if (!stable_steps.empty())
      c.num_stable_steps = cli::parse_count("--stable-steps", stable_steps, c.total_steps);
    if (!decay_type.empty()) c.decay_type = parse_choice(wsd_shape_names, decay_type, "--decay-type");
    if (!warmup_type.empty()) c.warmup_type = parse_choice(wsd_shape_names, warmup_type, "--warmup-type");
    if (!min_lr_ratio.empty()) c.min_lr_ratio = cli::parse_nonnegative("--min-lr-ratio", min_lr_ratio);
    if (!num_cycles.empty()) c.num_cycles = cli::parse_positive("--num-cycles", num_cycles);
    if (!min_lr.empty()) c.min_lr = cli::parse_nonnegative("--min-lr", min_lr);
    if (!min_lr_rate.empty()) c.min_lr_rate = cli::parse_nonnegative("--min-lr-rate", min_lr_rate);
    if (!lr_end.empty()) c.lr_end = cli::parse_nonnegative("--lr-end", lr_end);
    if (!power.empty()) c.power = cli::parse_positive("--power", power);
    validate(c);
    if (!svg.empty()) {
      const std::string chart = schedule_chart(c, type);
      cli::write_output_file("--svg", svg, chart, {});
    }
    if (csv) {
      fmt::print("step,lr\n");
      for (std::uint64_t t = 0; t <= c.total_steps; ++t) fmt::print("{},{:.12g}\n", t, learning_rate(c, t));
    } else {
      fmt::print("{} schedule, peak {:g}, warmup {} of {} steps\n\n", type, c.peak_lr, c.warmup_steps,
                 c.total_steps);
      fmt::print("{}", chart(c, std::min<std::uint64_t>(c.total_steps + 1, 72), 12));
    }
    return cli::exit_ok;
  });
}
