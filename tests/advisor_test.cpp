// SPDX-License-Identifier: MIT
// Triage and advice: the biggest bucket, the checklist, and never a configuration that does not fit.
#include <headroom/advisor.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

TEST_CASE("8B full fine-tuning on 24 GB: optimizer state is the biggest bucket, LoRA is the first fix",
          "[advisor]") {
  const advice a = advise(llama8, run_config{}, bytes(24'000'000'000));
  CHECK(a.biggest_bucket == "optimizer");
  CHECK(a.static_alone_too_big);
  REQUIRE(a.found);
  CHECK(a.config.setup.method == training_method::lora);
  CHECK(a.steps.back().lever == "LoRA");
  CHECK_FALSE(a.steps.back().warning.empty());  // the learning-rate scale changes
  CHECK(fits(llama8, a.config, bytes(24'000'000'000)));
}

TEST_CASE("Halving the micro-batch doubles accumulation, keeping the effective batch", "[advisor]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.activations.batch = 16;
  r.activations.seq_len = 4096;
  const advice a = advise(qwen4, r, bytes(24'000'000'000));
  REQUIRE(a.found);
  REQUIRE_FALSE(a.steps.empty());
  CHECK(a.steps.front().lever == "halve the micro-batch, double accumulation");
  CHECK(a.config.activations.batch * a.config.grad_accum_steps == 16);
}

TEST_CASE("The optimizer in backward cannot accumulate: the micro-batch halves alone, and nothing throws",
          "[advisor]") {
  run_config r;  // torchtune's full single-device recipe: the step fused into backward
  r.setup.optim.in_backward = true;
  r.activations.batch = 16;
  r.activations.seq_len = 4096;
  r.activations.ckpt = checkpointing::none;
  const bytes budget(80'000'000'000);
  advice a;
  REQUIRE_NOTHROW(a = advise(qwen4, r, budget));
  REQUIRE_FALSE(a.steps.empty());
  CHECK(a.steps.front().lever == "halve the micro-batch");
  CHECK(a.steps.front().warning.find("effective batch halves") != std::string::npos);
  CHECK(a.config.grad_accum_steps == 1);
  if (a.found) CHECK(fits(qwen4, a.config, budget));
}

TEST_CASE("fp32 training gets bf16 first", "[advisor]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.setup.precision = precision_route::fp32;
  r.activations.seq_len = 8192;
  const advice a = advise(qwen4, r, bytes(20'000'000'000));
  REQUIRE_FALSE(a.steps.empty());
  CHECK(a.steps.front().lever == "bf16 mixed precision");
}

TEST_CASE("A run that already fits gets no steps", "[advisor]") {
  run_config r;
  r.setup.method = training_method::qlora;
  const advice a = advise(qwen4, r, bytes(24'000'000'000));
  CHECK(a.found);
  CHECK(a.steps.empty());
}

TEST_CASE("The advisor never returns a configuration that does not fit", "[advisor][property]") {
  for (const model_spec& spec : {llama8, qwen4, model_spec{llama_3_1_70b, 70'000'000'000}}) {
    for (std::uint64_t gb : {8u, 16u, 24u, 48u, 80u}) {
      for (std::uint64_t seq : {1024u, 8192u, 32768u}) {
        run_config r;
        r.activations.seq_len = seq;
        r.activations.batch = 4;
        r.activations.ckpt = checkpointing::none;
        const bytes budget(gb * 1'000'000'000);
        const advice a = advise(spec, r, budget);
        if (a.found) {
          CHECK(fits(spec, a.config, budget));
          CHECK(a.config.activations.batch * a.config.grad_accum_steps <= 4);
        } else {
          CHECK_FALSE(fits(spec, a.config, budget));
        }
        for (std::size_t i = 0; i + 1 < a.steps.size(); ++i) CHECK_FALSE(a.steps[i].fits);
      }
    }
  }
}
