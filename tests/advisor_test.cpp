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
  CHECK(a.alone.front().lever == "halve the micro-batch");
  CHECK(a.alone.front().warning.find("cannot accumulate") != std::string::npos);
  CHECK(a.config.grad_accum_steps == 1);
  if (a.found) CHECK(fits(qwen4, a.config, budget));
}

TEST_CASE("fp32 training gets bf16 first", "[advisor]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.setup.precision = precision_route::fp32;
  r.activations.seq_len = 8192;
  const advice a = advise(qwen4, r, bytes(20'000'000'000));
  REQUIRE_FALSE(a.alone.empty());
  CHECK(a.alone.front().lever == "bf16 mixed precision");
  CHECK(a.alone.front().change == "fp32 -> bf16 autocast (bf16=True)");
}

TEST_CASE("A GPU without bf16 gets fp16 with loss scaling, and never bf16 weights", "[advisor]") {
  run_config r;
  r.setup.precision = precision_route::fp32;
  r.activations.seq_len = 8192;
  const advice a = advise(qwen4, r, bytes(20'000'000'000), advisor_options{false});
  REQUIRE_FALSE(a.alone.empty());
  CHECK(a.alone.front().lever == "fp16 mixed precision");
  CHECK(a.alone.front().warning.find("GradScaler") != std::string::npos);
  for (const std::vector<advice_step>* list : {&a.alone, &a.steps})
    for (const advice_step& s : *list) CHECK(s.lever != "bf16 weights");
  CHECK(a.config.setup.precision != precision_route::bf16_pure);
}

// training-mechanics.txt "8-bit Adam and paged optimizers": for full fine-tuning the static state's levers
// come before LoRA. Qwen3-8B (exact count) at 4,096 tokens on 80 GB: bf16 weights and an 8-bit optimizer each
// leave it just over; optimizer offload fits alone, and the method stays full fine-tuning.
TEST_CASE("Full fine-tuning tries bf16 weights, an 8-bit optimizer and offload before LoRA", "[advisor]") {
  const model_spec qwen8{qwen3_8b, 0};
  run_config r;
  r.activations.seq_len = 4096;
  const bytes budget(80'000'000'000);
  const advice a = advise(qwen8, r, budget);
  CHECK(a.static_alone_too_big);
  REQUIRE(a.alone.size() == 3);  // the activation levers cannot fit alone: not tried alone
  CHECK(a.alone[0].lever == "bf16 weights");
  CHECK(a.alone[1].lever == "8-bit optimizer");
  CHECK(a.alone[2].lever == "optimizer offload");
  CHECK_FALSE(a.alone[0].fits);
  CHECK_FALSE(a.alone[1].fits);
  CHECK(a.alone[2].fits);
  REQUIRE(a.found);
  CHECK_FALSE(a.combined);
  CHECK(a.config.setup.method == training_method::full);
  CHECK(a.config.parallel.offload_optimizer);
  CHECK(a.config.parallel.shard == sharding::zero3);
  CHECK(a.steps.size() == 1);
  CHECK(a.steps.front().total == estimate_training(qwen8, a.config).total_bytes());
  // The other way the issue names: bf16 weights and an 8-bit optimizer together also fit.
  run_config both = r;
  both.setup.precision = precision_route::bf16_pure;
  both.setup.optimizer = optimizer_by_name("adamw_8bit");
  CHECK(fits(qwen8, both, budget));
}

TEST_CASE("Over several GPUs, ZeRO-3 sharding is tried before optimizer offload", "[advisor]") {
  run_config r;
  r.activations.seq_len = 4096;
  r.parallel.data_parallel = 4;
  const advice a = advise(llama8, r, bytes(40'000'000'000));
  REQUIRE(a.alone.size() == 4);
  CHECK(a.alone[2].lever == "ZeRO-3");
  CHECK(a.alone[2].change == "sharding none -> zero3 over 4 GPUs");
  CHECK_FALSE(a.alone[2].fits);
  CHECK(a.alone[3].lever == "optimizer offload");
  REQUIRE(a.found);
  CHECK(a.config.parallel.data_parallel == 4);
  CHECK(a.config.setup.method == training_method::full);
}

TEST_CASE("When no lever fits alone, the cheapest combination: fewest levers, in checklist order",
          "[advisor]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.activations.batch = 16;
  r.activations.seq_len = 8192;
  r.activations.ckpt = checkpointing::none;
  const bytes budget(24'000'000'000);
  const advice a = advise(qwen4, r, budget);
  for (const advice_step& s : a.alone) CHECK_FALSE(s.fits);
  REQUIRE(a.found);
  CHECK(a.combined);
  REQUIRE(a.steps.size() == 3);
  CHECK(a.steps[0].lever == "halve the micro-batch, double accumulation");
  CHECK(a.steps[1].lever == "gradient checkpointing");
  CHECK(a.steps[2].lever == "shorter max_length");
  CHECK(a.steps[2].fits);
  for (std::size_t i = 0; i + 1 < a.steps.size(); ++i) {
    CHECK_FALSE(a.steps[i].fits);
    CHECK(a.steps[i + 1].total < a.steps[i].total);  // each lever's total includes those before it
  }
  CHECK(a.config.activations.batch * a.config.grad_accum_steps == 16);
  CHECK(a.config.activations.seq_len >= 4096);
  CHECK(fits(qwen4, a.config, budget));
  run_config one_more = a.config;  // max_length is the longest that fits with the other levers
  ++one_more.activations.seq_len;
  CHECK_FALSE(fits(qwen4, one_more, budget));
  // No pair fits: checkpointing with the micro-batch at 1 is still over.
  run_config pair = r;
  pair.activations.batch = 1;
  pair.grad_accum_steps = 16;
  pair.activations.ckpt = checkpointing::full;
  CHECK_FALSE(fits(qwen4, pair, budget));
}

TEST_CASE("Static-state levers are never combined with LoRA, nor LoRA with QLoRA", "[advisor]") {
  using detail::bit_of;
  using detail::combinable;
  CHECK_FALSE(combinable(bit_of(lever::optimizer_8bit) | bit_of(lever::lora)));
  CHECK_FALSE(combinable(bit_of(lever::offload_optimizer) | bit_of(lever::qlora)));
  CHECK_FALSE(combinable(bit_of(lever::lora) | bit_of(lever::qlora)));
  CHECK_FALSE(combinable(bit_of(lever::bf16_compute) | bit_of(lever::bf16_weights)));
  CHECK(combinable(bit_of(lever::checkpointing) | bit_of(lever::qlora)));
  CHECK(combinable(bit_of(lever::bf16_weights) | bit_of(lever::optimizer_8bit)));
  const detail::lever_set offered = bit_of(lever::checkpointing) | bit_of(lever::bf16_weights) |
                                    bit_of(lever::optimizer_8bit) | bit_of(lever::lora);
  const std::vector<detail::lever_set> sets = detail::combinations(offered);
  // Cheapest first: pairs before triples; among pairs, the gentler most drastic lever, then the gentler
  // other.
  REQUIRE(sets.size() == 5);
  CHECK(sets[0] == (bit_of(lever::checkpointing) | bit_of(lever::bf16_weights)));
  CHECK(sets[1] == (bit_of(lever::checkpointing) | bit_of(lever::optimizer_8bit)));
  CHECK(sets[2] == (bit_of(lever::bf16_weights) | bit_of(lever::optimizer_8bit)));
  CHECK(sets[3] == (bit_of(lever::checkpointing) | bit_of(lever::lora)));
  CHECK(sets[4] ==
        (bit_of(lever::checkpointing) | bit_of(lever::bf16_weights) | bit_of(lever::optimizer_8bit)));
}

TEST_CASE("The 8-bit lever keeps the optimizer family", "[advisor]") {
  using detail::eight_bit_sibling;
  CHECK(eight_bit_sibling(optimizer_by_name("adamw_torch")) == "adamw_8bit");
  CHECK(eight_bit_sibling(optimizer_by_name("adamw_torch_fused")) == "adamw_8bit");
  CHECK(eight_bit_sibling(optimizer_by_name("paged_adamw_32bit")) == "paged_adamw_8bit");
  CHECK(eight_bit_sibling(optimizer_by_name("lion_32bit")) == "lion_8bit");
  CHECK(eight_bit_sibling(optimizer_by_name("adamw_8bit")).empty());
  CHECK(eight_bit_sibling(optimizer_by_name("adafactor")).empty());
  CHECK(eight_bit_sibling(optimizer_by_name("sgd")).empty());
  CHECK(eight_bit_sibling(optimizer_by_name("schedule_free_adamw")).empty());
}

TEST_CASE("The chunked-loss note appears only where chunking lowers the peak", "[advisor]") {
  run_config r;
  r.setup.method = training_method::qlora;
  r.activations.seq_len = 8192;
  const training_estimate e8 = estimate_training(llama8, r);
  const std::optional<std::string> note = chunked_loss_note(llama8, r, e8);
  REQUIRE(note);
  CHECK(note->find("--ce-chunk 256") != std::string::npos);
  // Llama-3.1-70B at 2,048 tokens: the fp32 copy of the 8,192 x 128,256 head outweighs the logits it saves.
  const model_spec llama70{llama_3_1_70b, 70'000'000'000};
  r.activations.seq_len = 2048;
  const training_estimate e70 = estimate_training(llama70, r);
  run_config chunked = r;
  chunked.loss.impl = loss_impl::chunked;
  CHECK(estimate_training(llama70, chunked).total_bytes() >= e70.total_bytes());
  CHECK_FALSE(chunked_loss_note(llama70, r, e70));
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
        r.setup.optim.in_backward = seq == 8192;  // torchtune's step in backward: no accumulation
        r.parallel.data_parallel = gb == 48 ? 2 : 1;
        const bytes budget(gb * 1'000'000'000);
        advice a;
        REQUIRE_NOTHROW(a = advise(spec, r, budget));
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

TEST_CASE("An accumulation that halving would overflow skips that lever instead of throwing", "[advisor]") {
  run_config r;
  r.setup.method = training_method::lora;
  r.activations.batch = 16;
  r.activations.seq_len = 8192;
  r.activations.ckpt = checkpointing::none;
  r.grad_accum_steps = std::uint64_t{1} << 62;
  advice a;
  REQUIRE_NOTHROW(a = advise(qwen4, r, bytes(24'000'000'000)));
  for (const advice_step& s : a.alone) CHECK(s.lever.find("micro-batch") == std::string::npos);
  if (a.found) CHECK(fits(qwen4, a.config, bytes(24'000'000'000)));
}
