// SPDX-License-Identifier: MIT
// Learning-rate schedules exactly as transformers' lr_scheduler_type computes them
// (src/transformers/optimization.py: LambdaLR multipliers), and warmup_steps resolution.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "choices.hpp"
#include "detail/math.hpp"
#include "error.hpp"
#include "memory.hpp"

namespace headroom {

enum class schedule_type : std::uint8_t {
  linear,  ///< TrainingArguments default
  cosine,
  cosine_with_restarts,
  polynomial,
  constant,
  constant_with_warmup,
  inverse_sqrt,
  cosine_with_min_lr,
  cosine_warmup_with_min_lr,
  warmup_stable_decay,
};
inline constexpr std::array<named<schedule_type>, 10> schedule_names{{
    {"linear", schedule_type::linear},
    {"cosine", schedule_type::cosine},
    {"cosine_with_restarts", schedule_type::cosine_with_restarts},
    {"polynomial", schedule_type::polynomial},
    {"constant", schedule_type::constant},
    {"constant_with_warmup", schedule_type::constant_with_warmup},
    {"inverse_sqrt", schedule_type::inverse_sqrt},
    {"cosine_with_min_lr", schedule_type::cosine_with_min_lr},
    {"cosine_warmup_with_min_lr", schedule_type::cosine_warmup_with_min_lr},
    {"warmup_stable_decay", schedule_type::warmup_stable_decay},
}};

/// WSD's warmup and decay shapes (get_wsd_schedule's warmup_type / decay_type).
enum class wsd_shape : std::uint8_t { linear, cosine, one_minus_sqrt };
inline constexpr std::array<named<wsd_shape>, 3> wsd_shape_names{
    {{"linear", wsd_shape::linear}, {"cosine", wsd_shape::cosine}, {"1-sqrt", wsd_shape::one_minus_sqrt}}};

/// A schedule and its lr_scheduler_kwargs. Steps are 0-based optimizer steps.
struct schedule_config {
  schedule_type type = schedule_type::linear;
  double peak_lr = 5e-5;                          ///< learning_rate (the optimizer's base lr)
  std::uint64_t warmup_steps = 0;                 ///< W, resolved (see resolve_warmup_steps)
  std::uint64_t total_steps = 0;                  ///< T, num_training_steps
  std::optional<double> num_cycles;               ///< cosine 0.5; cosine_with_restarts 1; WSD 0.5
  double lr_end = 1e-7;                           ///< polynomial
  double power = 1.0;                             ///< polynomial
  std::optional<std::uint64_t> timescale;         ///< inverse_sqrt: W, or 10,000 when W = 0
  std::optional<double> min_lr;                   ///< cosine_with_min_lr / cosine_warmup_with_min_lr
  std::optional<double> min_lr_rate;              ///< min_lr / peak_lr
  std::optional<double> warmup_lr_rate;           ///< cosine_warmup_with_min_lr
  std::optional<std::uint64_t> num_decay_steps;   ///< WSD: required
  std::optional<std::uint64_t> num_stable_steps;  ///< WSD: T − W − decay when absent
  wsd_shape warmup_type = wsd_shape::linear;
  wsd_shape decay_type = wsd_shape::cosine;  ///< get_wsd_schedule's default
  double min_lr_ratio = 0.0;                 ///< WSD floor
};

/// TrainingArguments.get_warmup_steps: a value ≥ 1 is a step count, one in [0, 1) a fraction of T
/// rounded up. transformers truncates fractional counts ≥ 1; headroom rejects them instead.
[[nodiscard]] inline std::uint64_t resolve_warmup_steps(double warmup, std::uint64_t total_steps) {
  if (!detail::math::isfinite(warmup) || warmup < 0)
    throw input_error("warmup_steps", "must be a finite number >= 0");
  if (warmup >= 1) {
    if (warmup != detail::math::floor(warmup))
      throw input_error("warmup_steps", "a value >= 1 must be a whole number of steps");
    if (warmup > 1e15) throw input_error("warmup_steps", "is absurdly large");
    return static_cast<std::uint64_t>(warmup);
  }
  return static_cast<std::uint64_t>(detail::math::ceil(static_cast<double>(total_steps) * warmup));
}

namespace detail {
inline constexpr double pi = 3.14159265358979323846;
inline double ratio(std::uint64_t num, std::uint64_t den) {
  return static_cast<double>(num) / static_cast<double>(den < 1 ? 1 : den);
}
inline double wsd_factor(wsd_shape shape, double p, bool warmup, double cycles) {
  switch (shape) {
    case wsd_shape::linear:
      return warmup ? p : 1.0 - p;
    case wsd_shape::cosine:
      return warmup ? 0.5 * (1.0 - detail::math::cos(pi * p))
                    : 0.5 * (1.0 + detail::math::cos(pi * cycles * 2.0 * p));
    case wsd_shape::one_minus_sqrt:
      return warmup ? 1.0 - detail::math::sqrt(1.0 - p) : 1.0 - detail::math::sqrt(p);
  }
  return 0.0;
}
inline double min_lr_rate_of(const schedule_config& c) {
  if (c.min_lr.has_value() == c.min_lr_rate.has_value())
    throw input_error("lr_scheduler_kwargs",
                      "cosine_with_min_lr needs exactly one of min_lr and min_lr_rate");
  return c.min_lr ? *c.min_lr / c.peak_lr : *c.min_lr_rate;
}
/// A rate in [0, 1] (NaN is not).
inline void check_rate(std::optional<double> v, const char* key) {
  if (v && !(*v >= 0 && *v <= 1))
    throw input_error(key, std::string("must be in [0, 1], got ") + std::to_string(*v));
}
/// Whether `type`'s schedule function takes `key` (transformers optimization.py: get_scheduler passes
/// lr_scheduler_kwargs on as keyword arguments, so a key the function lacks is a TypeError there).
inline bool takes_kwarg(schedule_type type, std::string_view key) {
  using t = schedule_type;
  const bool min_lr_family = type == t::cosine_with_min_lr || type == t::cosine_warmup_with_min_lr;
  if (key == "num_cycles")
    return type == t::cosine || type == t::cosine_with_restarts || min_lr_family ||
           type == t::warmup_stable_decay;
  if (key == "min_lr" || key == "min_lr_rate") return min_lr_family;
  if (key == "warmup_lr_rate") return type == t::cosine_warmup_with_min_lr;
  if (key == "timescale") return type == t::inverse_sqrt;
  return type == t::warmup_stable_decay;  // num_decay_steps, num_stable_steps
}
}  // namespace detail

/// Checks the settings once; throws input_error naming the field.
inline void validate(const schedule_config& c) {
  if (!detail::math::isfinite(c.peak_lr) || c.peak_lr <= 0)
    throw input_error("learning_rate", "must be a positive number");
  if (c.total_steps == 0) throw input_error("num_training_steps", "must be a positive integer");
  const std::string_view name = choice_name(schedule_names, c.type);
  const std::pair<const char*, bool> given[] = {{"num_cycles", c.num_cycles.has_value()},
                                                {"min_lr", c.min_lr.has_value()},
                                                {"min_lr_rate", c.min_lr_rate.has_value()},
                                                {"warmup_lr_rate", c.warmup_lr_rate.has_value()},
                                                {"timescale", c.timescale.has_value()},
                                                {"num_decay_steps", c.num_decay_steps.has_value()},
                                                {"num_stable_steps", c.num_stable_steps.has_value()}};
  for (const auto& [key, set] : given)
    if (set && !detail::takes_kwarg(c.type, key))
      throw input_error(key, std::string("is not an argument of the ") + std::string(name) +
                                 " schedule (transformers get_scheduler would raise a TypeError)");
  if (c.warmup_steps > c.total_steps)
    throw input_error("warmup_steps", std::to_string(c.warmup_steps) + " exceed num_training_steps " +
                                          std::to_string(c.total_steps) + ": the peak is never reached");
  if (c.type == schedule_type::constant && c.warmup_steps != 0)
    throw input_error("warmup_steps",
                      "the constant schedule has no warmup (get_scheduler passes none): "
                      "use constant_with_warmup");
  if (c.num_cycles && !(*c.num_cycles > 0 && *c.num_cycles <= 1e6))
    throw input_error("num_cycles", "must be a number in (0, 1e6]");
  if (c.type == schedule_type::polynomial) {
    if (!(c.power >= 0 && c.power <= 1e6)) throw input_error("power", "must be a number in [0, 1e6]");
    if (!(c.lr_end >= 0 && c.peak_lr > c.lr_end))
      throw input_error("lr_end", "must be at least 0 and below the initial learning rate (polynomial)");
  }
  if (c.type == schedule_type::warmup_stable_decay) {
    if (!c.num_decay_steps) throw input_error("num_decay_steps", "is required by warmup_stable_decay");
    if (!c.num_stable_steps && c.warmup_steps + *c.num_decay_steps > c.total_steps)
      throw input_error("num_decay_steps", "warmup + decay exceed the total steps");
    if (!(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1)) throw input_error("min_lr_ratio", "must be in [0, 1]");
  }
  detail::check_rate(c.min_lr_rate, "min_lr_rate");
  detail::check_rate(c.warmup_lr_rate, "warmup_lr_rate");
  if (c.min_lr && !(*c.min_lr >= 0 && *c.min_lr <= c.peak_lr))
    throw input_error(
        "min_lr", std::string("must be in [0, the peak learning rate ") + std::to_string(c.peak_lr) + "]");
  if (c.type == schedule_type::cosine_with_min_lr || c.type == schedule_type::cosine_warmup_with_min_lr)
    (void)detail::min_lr_rate_of(c);
}

/// The LambdaLR multiplier λ(t); the learning rate is peak_lr·λ(t).
[[nodiscard]] inline double lr_multiplier(const schedule_config& c, std::uint64_t t) {
  using detail::ratio;
  const std::uint64_t W = c.warmup_steps, T = c.total_steps;
  const double pi = detail::pi;
  const bool shared_warmup = c.type != schedule_type::constant &&
                             c.type != schedule_type::warmup_stable_decay &&
                             c.type != schedule_type::cosine_warmup_with_min_lr;
  if (shared_warmup && t < W) return ratio(t, W);                         // λ = t / max(1, W)
  const double progress = ratio(t - (t < W ? t : W), T > W ? T - W : 0);  // (t − W) / max(1, T − W)
  switch (c.type) {
    case schedule_type::constant:
      return 1.0;
    case schedule_type::constant_with_warmup:
      return 1.0;
    case schedule_type::linear:
      return detail::math::fmax(0.0, ratio(T > t ? T - t : 0, T > W ? T - W : 0));
    case schedule_type::cosine:
      return detail::math::fmax(
          0.0, 0.5 * (1.0 + detail::math::cos(pi * c.num_cycles.value_or(0.5) * 2.0 * progress)));
    case schedule_type::cosine_with_restarts: {
      if (progress >= 1.0) return 0.0;
      const double cycles = c.num_cycles.value_or(1.0);
      return detail::math::fmax(
          0.0, 0.5 * (1.0 + detail::math::cos(pi * detail::math::fmod(cycles * progress, 1.0))));
    }
    case schedule_type::polynomial: {
      if (t > T) return c.lr_end / c.peak_lr;
      const double decay = (c.peak_lr - c.lr_end) * detail::math::pow(1.0 - progress, c.power) + c.lr_end;
      return decay / c.peak_lr;
    }
    case schedule_type::inverse_sqrt: {
      const std::uint64_t scale = c.timescale.value_or(W != 0 ? W : 10'000);
      return 1.0 / detail::math::sqrt(static_cast<double>(t + scale - W) / static_cast<double>(scale));
    }
    case schedule_type::cosine_with_min_lr: {
      const double rate = detail::min_lr_rate_of(c);
      const double f = 0.5 * (1.0 + detail::math::cos(pi * c.num_cycles.value_or(0.5) * 2.0 * progress));
      return detail::math::fmax(0.0, f * (1.0 - rate) + rate);
    }
    case schedule_type::cosine_warmup_with_min_lr: {
      if (t < W) {
        if (!c.warmup_lr_rate) return static_cast<double>(t + 1) / static_cast<double>(W < 1 ? 1 : W);
        return *c.warmup_lr_rate + (1.0 - *c.warmup_lr_rate) * ratio(t, W > 1 ? W - 1 : 0);
      }
      const double rate = detail::min_lr_rate_of(c);
      const double p = ratio(t - W + 1, T > W ? T - W : 0);
      const double f = 0.5 * (1.0 + detail::math::cos(pi * c.num_cycles.value_or(0.5) * 2.0 * p));
      return detail::math::fmax(0.0, f * (1.0 - rate) + rate);
    }
    case schedule_type::warmup_stable_decay: {
      const double m = c.min_lr_ratio, cycles = c.num_cycles.value_or(0.5);
      const std::uint64_t D = c.num_decay_steps.value_or(0);
      const std::uint64_t S = c.num_stable_steps.value_or(T > W + D ? T - W - D : 0);
      if (t < W)
        return detail::math::fmax(0.0,
                                  detail::wsd_factor(c.warmup_type, ratio(t, W), true, cycles) * (1 - m) + m);
      if (t < W + S) return 1.0;
      if (t < W + S + D)
        return detail::math::fmax(
            0.0, detail::wsd_factor(c.decay_type, ratio(t - W - S, D), false, cycles) * (1 - m) + m);
      return m;
    }
  }
  return 0.0;
}

/// The learning rate at optimizer step t: peak_lr·λ(t).
[[nodiscard]] inline double learning_rate(const schedule_config& c, std::uint64_t t) {
  return c.peak_lr * lr_multiplier(c, t);
}

}  // namespace headroom
