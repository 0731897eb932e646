// SPDX-License-Identifier: MIT
// Optimizer state layouts by transformers `optim` string (W06, W24, W25).
#include <set>
#include <string>

#include <headroom/memory.hpp>
#include <headroom/optimizer.hpp>
#include <headroom/peak.hpp>
#include <headroom/request.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;

namespace {
constexpr param_tensor matrix(std::uint64_t rows, std::uint64_t cols, std::uint64_t copies = 1) {
  return {module_name::up_proj, tensor_role::linear_weight, rows, cols, copies};
}
constexpr param_tensor vector(std::uint64_t n) {
  return {module_name::norm, tensor_role::norm_weight, n, 0, 1};
}
constexpr optimizer_info opt(std::string_view name) { return *find_optimizer(name); }
}  // namespace

// W24: Adafactor keeps rows + cols fp32 values for a matrix and no first moment.
static_assert(optimizer_state_bytes(opt("adafactor"), matrix(14336, 4096), 4) == bytes(4 * (4096 + 14336)));

TEST_CASE("W24: Adafactor's factored state of a 4096 x 14336 matrix is 73,728 B vs AdamW's 470 MB",
          "[optimizer][worked]") {
  CHECK(optimizer_state_bytes(opt("adafactor"), matrix(14336, 4096), 4) == bytes(73'728));
  CHECK(optimizer_state_bytes(opt("adamw_torch"), matrix(14336, 4096), 4) == bytes(8ull * 4096 * 14336));
  REQUIRE_THAT(in_gb(optimizer_state_bytes(opt("adamw_torch"), matrix(14336, 4096), 4)),
               Catch::Matchers::WithinAbs(0.470, 0.0005));
  CHECK(optimizer_state_bytes(opt("adafactor"), vector(4096), 2) == bytes(4 * 4096));  // fp32 even for bf16
}

TEST_CASE("W25: Lion keeps one momentum, half of AdamW's state", "[optimizer][worked]") {
  const param_tensor t = matrix(4096, 4096);
  CHECK(optimizer_state_bytes(opt("lion_32bit"), t, 4).count() * 2 ==
        optimizer_state_bytes(opt("adamw_torch"), t, 4).count());
  CHECK(optimizer_state_bytes(opt("lion_32bit"), t, 4) == bytes(4ull * 4096 * 4096));
}

TEST_CASE("W06: 8-bit AdamW is 2 + 2·4/2048 bytes/param with the course's 2,048-value blocks",
          "[optimizer][worked]") {
  const param_tensor lumped = matrix(8'000'000'000, 0);
  optimizer_options course{2048, 4096};
  CHECK(optimizer_state_bytes(opt("adamw_8bit"), lumped, 4, course) == bytes(16'031'250'000));  // 16.03 GB
  // Current bitsandbytes (>= 0.44) uses 256-value blocks: 2·(1 + 4/256) = 2.03125 bytes/param.
  CHECK(optimizer_state_bytes(opt("adamw_8bit"), lumped, 4) == bytes(16'250'000'000));
}

TEST_CASE("8-bit optimizers keep fp32 state for tensors under min_8bit_size", "[optimizer]") {
  CHECK(optimizer_state_bytes(opt("adamw_bnb_8bit"), vector(4095), 2) == bytes(8 * 4095));
  CHECK(optimizer_state_bytes(opt("adamw_bnb_8bit"), vector(4096), 2) == bytes(2 * (4096 + 4 * 16)));
  CHECK(optimizer_state_bytes(opt("lion_8bit"), vector(4096), 2) == bytes(4096 + 4 * 16));
  CHECK(optimizer_state_bytes(opt("ademamix_8bit"), vector(100), 2) == bytes(12 * 100));
}

TEST_CASE("torch optimizers keep state in the parameter dtype, bitsandbytes 32-bit in fp32", "[optimizer]") {
  const param_tensor t = matrix(1024, 1024, 3);
  const std::uint64_t n = 3ull * 1024 * 1024;
  CHECK(optimizer_state_bytes(opt("adamw_torch"), t, 2) == bytes(4 * n));  // third route: bf16 m, v
  CHECK(optimizer_state_bytes(opt("adamw_torch_fused"), t, 4) == bytes(8 * n));
  CHECK(optimizer_state_bytes(opt("paged_adamw_32bit"), t, 2) == bytes(8 * n));  // always fp32
  CHECK(optimizer_state_bytes(opt("sgd"), t, 4) == bytes(0));                    // HF passes momentum 0
  CHECK(optimizer_state_bytes(opt("stable_adamw"), t, 2) == bytes(6 * n));       // + Kahan buffer
  CHECK(optimizer_state_bytes(opt("stable_adamw"), t, 4) == bytes(8 * n));
  CHECK(optimizer_state_bytes(opt("ademamix"), t, 2) == bytes(12 * n));
  CHECK(opt("paged_adamw_8bit").paged);
}

TEST_CASE("Muon: one momentum on hidden matrices, AdamW on embeddings, head and norms", "[optimizer]") {
  const optimizer_info muon = opt("muon");
  CHECK(optimizer_state_bytes(muon, matrix(4096, 4096), 4) == bytes(4ull * 4096 * 4096));
  const param_tensor head{module_name::lm_head, tensor_role::linear_weight, 128256, 4096, 1};
  const param_tensor embed{module_name::embed_tokens, tensor_role::embedding, 128256, 4096, 1};
  CHECK(optimizer_state_bytes(muon, head, 4) == bytes(8ull * 128256 * 4096));
  CHECK(optimizer_state_bytes(muon, embed, 4) == bytes(8ull * 128256 * 4096));
  CHECK(optimizer_state_bytes(muon, vector(4096), 4) == bytes(8 * 4096));
}

TEST_CASE("Optimizer names are unique, and an unknown one lists the valid ones", "[optimizer][errors]") {
  std::set<std::string_view> seen;
  for (const optimizer_info& o : optimizer_catalog) CHECK(seen.insert(o.name).second);
  for (const char* course :
       {"adamw_torch", "adamw_torch_fused", "adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit",
        "paged_adamw_32bit", "adafactor", "lion_32bit", "lion_8bit", "sgd", "muon"})
    CHECK(find_optimizer(course).has_value());
  test::require_input_error([] { (void)optimizer_by_name("adam"); }, "optimizer", "unknown 'adam'",
                            "adamw_torch", "paged_adamw_8bit", "muon");
  test::require_input_error(
      [] {
        (void)optimizer_state_bytes(opt("adamw_8bit"), vector(8192), 4, optimizer_options{0, 4096});
      },
      "block size");
}

TEST_CASE("torch keeps a 0-dim fp32 step per tensor: exact pricing counts it", "[optimizer][groundtruth]") {
  const model_shape m = headroom::test::dense(128, 344, 2, 8, 2, 16, 4096, false);
  training_setup s;
  s.precision = precision_route::fp32;
  const static_estimate st = estimate_static(model_spec{m, 0}, s, params_basis::exact);
  // 1,395,328 parameters in 21 tensors (embed, head, final norm, 9 per layer): m and v, plus 4 B each.
  CHECK(st.trainable_tensors == 21);
  CHECK(st.buckets.optimizer == bytes(8 * 1'395'328ull + 4 * 21));  // optimizer-127: 11,162,708 B
}

TEST_CASE("Optimizer step temporaries per implementation and torch generation", "[optimizer][groundtruth]") {
  const optimizer_info adamw = optimizer_by_name("adamw_torch");
  const runtime_config cuda2{}, cpu113{device_kind::cpu, torch_generation::v1_13};
  // automatic: foreach on CUDA under torch 2, the for-loop on a CPU or under 1.13.
  CHECK(resolved_impl(adamw, optimizer_impl::automatic, cuda2) == optimizer_impl::foreach);
  CHECK(resolved_impl(adamw, optimizer_impl::automatic, cpu113) == optimizer_impl::for_loop);
  CHECK(resolved_impl(optimizer_by_name("adamw_torch_fused"), optimizer_impl::automatic, cuda2) ==
        optimizer_impl::fused);
  // foreach: one copy of the trainable values in 2.x (in-place division), two in 1.13 (denom as well).
  CHECK(step_temporary_values(adamw, optimizer_impl::foreach, cuda2, 1000, 0) == 1000);
  CHECK(step_temporary_values(adamw, optimizer_impl::foreach, cpu113, 1000, 0) == 2000);
  CHECK(step_temporary_values(adamw, optimizer_impl::fused, cuda2, 1000, 0) == 0);
}

TEST_CASE("A for-loop step's worst tensor holds the previous tensor's denominator too",
          "[optimizer][groundtruth]") {
  // Llama-shaped, 2 layers, fp32: the head (524,288 values) after the final norm (128): 2·head + norm;
  // Adagrad's worst is q_proj right after the embedding: q_proj + embed (optimizer-127, optimizer-133).
  const model_shape m = headroom::test::dense(128, 344, 2, 8, 2, 16, 4096, false);
  training_setup s;
  s.precision = precision_route::fp32;
  s.optim.impl = optimizer_impl::for_loop;
  CHECK(estimate_static(model_spec{m, 0}, s, params_basis::exact).for_loop_step == params(2 * 524'288 + 128));
  s.optimizer = optimizer_by_name("adagrad");
  CHECK(estimate_static(model_spec{m, 0}, s, params_basis::exact).for_loop_step ==
        params(128 * 128 + 524'288));
}

TEST_CASE("torchao's 8- and 4-bit AdamW: codes, one fp32 scale per 256 values and a code book per state",
          "[optimizer][torchao]") {
  // torchao/optim/subclass_8bit.py zeros: uint8 codes of full shape, numel/256 fp32 scales, a 256-entry
  // fp32 qmap; subclass_4bit.py: numel/2 packed codes, the same scales, a 16-entry qmap. Two states (m, v).
  constexpr std::uint64_t n = 4096ULL * 4096ULL;
  constexpr bytes eight = optimizer_state_bytes(*find_optimizer("adamw_torch_8bit"), matrix(4096, 4096), 4);
  static_assert(eight == bytes(2 * (n + 4 * (n / 256) + 4 * 256)));
  CHECK(eight == bytes(34'080'768));
  constexpr bytes four = optimizer_state_bytes(*find_optimizer("adamw_torch_4bit"), matrix(4096, 4096), 4);
  static_assert(four == bytes(2 * (n / 2 + 4 * (n / 256) + 4 * 16)));
  CHECK(four == bytes(17'301'632));
  // Under 4096 values, or not a whole number of blocks: zeros_like(p), two states in the parameter dtype.
  CHECK(optimizer_state_bytes(*find_optimizer("adamw_torch_8bit"), vector(2048), 4) == bytes(2 * 2048 * 4));
  CHECK(optimizer_state_bytes(*find_optimizer("adamw_torch_8bit"), vector(4100), 2) == bytes(2 * 4100 * 2));
}

TEST_CASE("Every transformers optim string is priced or refused with its reason", "[optimizer]") {
  // transformers OptimizerNames (training_args.py @ 00349ae8), as listed in hf-vocabulary.md section 1.1.
  for (const char* name : {"adamw_torch",
                           "adamw_torch_fused",
                           "adamw_torch_xla",
                           "adamw_torch_npu_fused",
                           "adamw_apex_fused",
                           "adafactor",
                           "adamw_anyprecision",
                           "adamw_torch_4bit",
                           "adamw_torch_8bit",
                           "ademamix",
                           "sgd",
                           "adagrad",
                           "adamw_bnb_8bit",
                           "adamw_8bit",
                           "ademamix_8bit",
                           "lion_8bit",
                           "lion_32bit",
                           "paged_adamw_32bit",
                           "paged_adamw_8bit",
                           "paged_ademamix_32bit",
                           "paged_ademamix_8bit",
                           "paged_lion_32bit",
                           "paged_lion_8bit",
                           "rmsprop",
                           "rmsprop_bnb",
                           "rmsprop_bnb_8bit",
                           "rmsprop_bnb_32bit",
                           "galore_adamw",
                           "galore_adamw_8bit",
                           "galore_adafactor",
                           "galore_adamw_layerwise",
                           "galore_adamw_8bit_layerwise",
                           "galore_adafactor_layerwise",
                           "lomo",
                           "adalomo",
                           "grokadamw",
                           "schedule_free_radam",
                           "schedule_free_adamw",
                           "schedule_free_sgd",
                           "apollo_adamw",
                           "apollo_adamw_layerwise",
                           "stable_adamw"}) {
    INFO(name);
    if (find_optimizer(name)) continue;
    try {
      (void)optimizer_by_name(name);
      FAIL("neither priced nor refused");
    } catch (const input_error& e) {
      const std::string what = e.what();
      CHECK(what.find("valid:") == std::string::npos);  // a reason, not "unknown"
    }
  }
  test::require_input_error([] { (void)optimizer_by_name("galore_adamw"); }, "GaLore", "not modelled yet");
}

TEST_CASE("LOMO fuses its update into backward: no state, no gradients kept, accumulation allowed",
          "[optimizer][lomo]") {
  run_request q;
  q.optimizer = "lomo";
  q.grad_accum = 4;
  const run_config r = resolve(q);
  CHECK(r.setup.optim.in_backward);
  const training_estimate e = estimate_training(test::llama8, r);
  CHECK(e.statics.buckets.optimizer == bytes(0));
  // The step in backward keeps no full gradients: far below the 16 GB of bf16 gradients a step after
  // backward holds.
  run_request after = q;
  after.optimizer = "sgd";
  CHECK(e.at_peak().grads * 10 < estimate_training(test::llama8, resolve(after)).at_peak().grads);
}

// torch 1.13's RMSprop counts its step in a Python int; 2.x keeps a 0-dim fp32 tensor per parameter, as
// Adam(W) always did (optimizer-135, torch 2.6: 84 B more state for its 21 tensors).
static_assert(optimizer_step_counter_bytes(opt("rmsprop"), 21, {device_kind::cpu, torch_generation::v1_13}) ==
              bytes(0));
static_assert(optimizer_step_counter_bytes(opt("rmsprop"), 21, {device_kind::cpu, torch_generation::v2}) ==
              bytes(84));
static_assert(optimizer_step_counter_bytes(opt("adamw_torch"), 21,
                                           {device_kind::cpu, torch_generation::v1_13}) == bytes(84));

TEST_CASE("RMSprop's step counters: none in torch 1.13, 4 bytes per tensor in 2.x",
          "[optimizer][groundtruth]") {
  CHECK(optimizer_step_counter_bytes(opt("rmsprop"), 21, {device_kind::cpu, torch_generation::v2}) ==
        bytes(84));
  CHECK(optimizer_step_counter_bytes(opt("rmsprop"), 21, {device_kind::cpu, torch_generation::v1_13}) ==
        bytes(0));
}
