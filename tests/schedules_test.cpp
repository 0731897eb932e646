// SPDX-License-Identifier: MIT
// transformers' lr_scheduler_type formulas (optimization.py), the course's W26 and W27.
#include <cmath>

#include <headroom/schedules.hpp>

#include "catch.hpp"

using namespace headroom;

namespace {
schedule_config course(schedule_type type) {
  schedule_config c;  // η_max 2e-4, t_w 10, T_tot 100
  c.type = type;
  c.peak_lr = 2e-4;
  c.warmup_steps = 10;
  c.total_steps = 100;
  return c;
}
}  // namespace

TEST_CASE("W26: warmup + cosine gives 1e-4, 2e-4, 1e-4 and 0 at steps 5, 10, 55 and 100",
          "[schedules][worked]") {
  const schedule_config c = course(schedule_type::cosine);
  REQUIRE_THAT(learning_rate(c, 5), Catch::Matchers::WithinAbs(1e-4, 1e-12));
  REQUIRE_THAT(learning_rate(c, 10), Catch::Matchers::WithinAbs(2e-4, 1e-12));
  REQUIRE_THAT(learning_rate(c, 55), Catch::Matchers::WithinAbs(1e-4, 1e-12));
  REQUIRE_THAT(learning_rate(c, 100), Catch::Matchers::WithinAbs(0.0, 1e-12));
  CHECK(learning_rate(c, 0) == 0.0);  // transformers' first step runs at λ(0) = 0
}

TEST_CASE("W27: WSD with linear decay over the last 20 steps holds 2e-4 on steps 10 to 79 and ends at 0",
          "[schedules][worked]") {
  schedule_config c = course(schedule_type::warmup_stable_decay);
  c.num_decay_steps = 20;
  c.decay_type = wsd_shape::linear;
  for (std::uint64_t t = 10; t < 80; ++t) CHECK(learning_rate(c, t) == 2e-4);
  CHECK(learning_rate(c, 100) == 0.0);
  REQUIRE_THAT(learning_rate(c, 90), Catch::Matchers::WithinAbs(1e-4, 1e-15));
}

TEST_CASE("Schedules are non-increasing after warmup where they should be", "[schedules][property]") {
  for (schedule_type type : {schedule_type::linear, schedule_type::cosine, schedule_type::polynomial,
                             schedule_type::constant_with_warmup, schedule_type::inverse_sqrt,
                             schedule_type::cosine_with_min_lr, schedule_type::warmup_stable_decay}) {
    schedule_config c = course(type);
    c.num_decay_steps = 20;
    c.min_lr_rate = 0.1;
    for (std::uint64_t t = c.warmup_steps; t < c.total_steps; ++t)
      CHECK(learning_rate(c, t + 1) <= learning_rate(c, t));
    for (std::uint64_t t = 0; t < c.warmup_steps; ++t) CHECK(learning_rate(c, t + 1) >= learning_rate(c, t));
  }
}

TEST_CASE("Each schedule's formula at a few steps, as transformers computes it", "[schedules]") {
  schedule_config c = course(schedule_type::linear);
  REQUIRE_THAT(lr_multiplier(c, 55), Catch::Matchers::WithinAbs(45.0 / 90.0, 1e-15));
  c.type = schedule_type::constant;
  CHECK(lr_multiplier(c, 0) == 1.0);  // constant gets no warmup
  c.type = schedule_type::constant_with_warmup;
  CHECK(lr_multiplier(c, 5) == 0.5);
  CHECK(lr_multiplier(c, 50) == 1.0);
  c.type = schedule_type::cosine_with_restarts;
  c.num_cycles = 2.0;  // p = 0.25 → (2·0.25) mod 1 = 0.5 → 0.5·(1 + cos(π/2))
  REQUIRE_THAT(
      lr_multiplier(c, 10 + 22),
      Catch::Matchers::WithinAbs(0.5 * (1 + std::cos(detail::pi * std::fmod(2 * 22.0 / 90, 1.0))), 1e-15));
  CHECK(lr_multiplier(c, 100) == 0.0);
  c = course(schedule_type::polynomial);
  c.power = 2.0;  // ((lr − lr_end)·(1 − p)² + lr_end) / lr
  REQUIRE_THAT(lr_multiplier(c, 55), Catch::Matchers::WithinRel(((2e-4 - 1e-7) * 0.25 + 1e-7) / 2e-4, 1e-12));
  CHECK(lr_multiplier(c, 101) == 1e-7 / 2e-4);
  c = course(schedule_type::inverse_sqrt);  // timescale = W = 10
  REQUIRE_THAT(lr_multiplier(c, 40), Catch::Matchers::WithinRel(1.0 / std::sqrt(4.0), 1e-15));
  c = course(schedule_type::cosine_with_min_lr);
  c.min_lr = 2e-5;  // rate 0.1
  REQUIRE_THAT(lr_multiplier(c, 100), Catch::Matchers::WithinAbs(0.1, 1e-15));
  c = course(schedule_type::cosine_warmup_with_min_lr);
  c.min_lr_rate = 0.1;
  CHECK(lr_multiplier(c, 0) == 0.1);  // (0 + 1) / 10: warmup shifted by one step
  c = course(schedule_type::warmup_stable_decay);
  c.num_decay_steps = 20;
  c.min_lr_ratio = 0.1;
  c.warmup_type = wsd_shape::cosine;
  c.decay_type = wsd_shape::one_minus_sqrt;
  CHECK(lr_multiplier(c, 0) == 0.1);  // the warmup starts at min_lr_ratio
  REQUIRE_THAT(lr_multiplier(c, 85), Catch::Matchers::WithinRel((1 - std::sqrt(0.25)) * 0.9 + 0.1, 1e-15));
  CHECK(lr_multiplier(c, 100) == 0.1);
}

TEST_CASE("warmup_steps: a count, or a fraction of the total rounded up", "[schedules]") {
  CHECK(resolve_warmup_steps(10, 100) == 10);
  CHECK(resolve_warmup_steps(0.05, 1000) == 50);
  CHECK(resolve_warmup_steps(0.03, 101) == 4);  // ceil(3.03)
  CHECK(resolve_warmup_steps(0, 100) == 0);
  test::require_input_error([] { (void)resolve_warmup_steps(-1, 100); }, "warmup_steps");
  test::require_input_error([] { (void)resolve_warmup_steps(10.5, 100); }, "warmup_steps", "whole number");
  test::require_input_error([] { (void)resolve_warmup_steps(std::nan(""), 100); }, "warmup_steps");
}

TEST_CASE("Schedule settings are validated with the field named", "[schedules][errors]") {
  schedule_config c = course(schedule_type::warmup_stable_decay);
  test::require_input_error([&] { validate(c); }, "num_decay_steps", "required");
  c.num_decay_steps = 95;
  test::require_input_error([&] { validate(c); }, "num_decay_steps", "exceed");
  c = course(schedule_type::cosine_with_min_lr);
  test::require_input_error([&] { validate(c); }, "exactly one of min_lr and min_lr_rate");
  c = course(schedule_type::polynomial);
  c.lr_end = 1.0;
  test::require_input_error([&] { validate(c); }, "lr_end");
  c = course(schedule_type::linear);
  c.total_steps = 0;
  test::require_input_error([&] { validate(c); }, "num_training_steps");
  // API-07..09 and the schedules' own arguments: a key the schedule function lacks is transformers'
  // TypeError.
  c = course(schedule_type::polynomial);
  c.power = std::nan("");
  test::require_input_error([&] { validate(c); }, "power");
  c = course(schedule_type::cosine);
  c.num_cycles = -1;
  test::require_input_error([&] { validate(c); }, "num_cycles", "(0, 1e6]");
  c = course(schedule_type::cosine_with_min_lr);
  c.min_lr = 1;  // above the peak 2e-4
  test::require_input_error([&] { validate(c); }, "min_lr", "peak learning rate");
  c.min_lr.reset();
  c.min_lr_rate = 2;
  test::require_input_error([&] { validate(c); }, "min_lr_rate", "[0, 1]");
  c.min_lr_rate = 0.1;
  CHECK_NOTHROW(validate(c));
  c = course(schedule_type::linear);
  c.min_lr = 1e-6;
  test::require_input_error([&] { validate(c); }, "min_lr", "linear schedule", "TypeError");
  c = course(schedule_type::linear);
  c.num_cycles = 2;
  test::require_input_error([&] { validate(c); }, "num_cycles", "linear");
  c = course(schedule_type::linear);
  c.warmup_steps = 101;
  test::require_input_error([&] { validate(c); }, "warmup_steps", "101 exceed num_training_steps 100");
  c = course(schedule_type::constant);  // get_scheduler builds constant with no warmup argument
  test::require_input_error([&] { validate(c); }, "warmup_steps", "constant_with_warmup");
  c.warmup_steps = 0;
  CHECK_NOTHROW(validate(c));
  c = course(schedule_type::warmup_stable_decay);
  c.num_decay_steps = 20;
  c.min_lr_ratio = std::nan("");
  test::require_input_error([&] { validate(c); }, "min_lr_ratio");
  CHECK(parse_choice(schedule_names, "warmup_stable_decay", "--type") == schedule_type::warmup_stable_decay);
  test::require_input_error([] { (void)parse_choice(schedule_names, "onecycle", "--type"); }, "--type",
                            "unknown 'onecycle'", "cosine_with_restarts");
}
