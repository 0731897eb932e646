// SPDX-License-Identifier: MIT
// Properties over the whole configuration space: a seeded generator of random valid shapes and runs
// (thousands of cases). Rerun with another seed: HEADROOM_PROPERTY_SEED=123 ctest -R property.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include <headroom/peak.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;

namespace {
std::uint64_t seed() {
  const char* env = std::getenv("HEADROOM_PROPERTY_SEED");
  return env != nullptr && *env != '\0' ? std::stoull(env) : 20261202;
}

/// Random but valid decoder shapes and runs, small enough to evaluate thousands of times.
struct generator {
  std::mt19937_64 rng{seed()};
  std::uint64_t pick(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  }
  bool coin() { return pick(0, 1) == 1; }

  model_spec model() {
    model_shape m;
    const std::uint64_t kv = std::uint64_t{1} << pick(0, 4);
    m.num_key_value_heads = kv;
    m.num_attention_heads = kv * pick(1, 8);
    m.head_dim = 32 * pick(1, 8);
    m.hidden_size = 64 * pick(4, 96);
    m.num_hidden_layers = pick(1, 64);
    m.vocab_size = pick(1000, 300'000);
    m.tie_word_embeddings = coin();
    m.attention_bias = coin();
    m.qk_norm = coin() ? qk_norm_kind::per_head : qk_norm_kind::none;
    m.norms_per_layer = coin() ? 2 : 4;
    if (pick(0, 5) == 0) {  // Phi-3
      m.attention = attention_layout::qkv_proj;
      m.mlp = mlp_layout::gate_up_proj;
    }
    if (pick(0, 4) == 0) {
      m.num_experts = pick(2, 64);
      m.num_experts_per_tok = pick(1, m.num_experts);
      m.moe_intermediate_size = 64 * pick(2, 32);
    } else {
      m.intermediate_size = 64 * pick(8, 400);
    }
    return {m, coin() ? 0 : pick(1, 100) * 100'000'000};
  }
  run_config run() {
    run_config r;
    r.setup.method = static_cast<training_method>(pick(0, 2));
    r.setup.precision = static_cast<precision_route>(pick(0, 4));
    r.setup.optimizer = optimizer_catalog[pick(0, optimizer_catalog.size() - 1)];
    r.setup.lora.rank = std::uint64_t{1} << pick(0, 8);
    r.setup.lora.use_dora = pick(0, 3) == 0;
    if (coin()) {  // a random subset of all-linear; o_proj exists in every architecture
      r.setup.lora.targets.mask = static_cast<std::uint32_t>(pick(0, lora_targets::all_linear().mask)) &
                                  lora_targets::all_linear().mask;
      r.setup.lora.targets.add(module_name::o_proj);
    }
    if (pick(0, 3) == 0)
      r.setup.lora.modules_to_save.add(coin() ? module_name::lm_head : module_name::embed_tokens);
    r.activations.batch = pick(1, 8);
    r.activations.seq_len = pick(1, 8192);
    r.activations.attention = static_cast<attention_impl>(pick(0, 3));
    r.activations.attention_dropout = pick(0, 3) == 0;
    r.activations.reentrant = coin();
    r.setup.lora.dropout = coin() ? 0.0 : 0.05;
    if (pick(0, 2) == 0) {  // one of the other PEFT methods, with what each needs
      set_peft_type(r.setup.lora, peft_type_names[pick(3, peft_type_names.size() - 1)].value);
      r.setup.lora.virtual_tokens = pick(1, 64);
      const bool encoder =
          r.setup.lora.method == peft_method::p_tuning || r.setup.lora.method == peft_method::prefix_tuning;
      if (encoder && coin()) r.setup.lora.encoder_hidden_size = 64 * pick(1, 64);
      r.setup.lora.prefix_projection = r.setup.lora.method == peft_method::prefix_tuning && coin();
      r.setup.lora.feedforward = lora_targets{};
      if (r.setup.lora.method != peft_method::vera) r.setup.lora.dropout = 0.0;
    }
    r.setup.lora.dtype = coin() ? adapter_precision::base : adapter_precision::fp32;
    r.setup.runtime.device = coin() ? device_kind::cuda : device_kind::cpu;
    r.setup.runtime.torch = coin() ? torch_generation::v2 : torch_generation::v1_13;
    r.setup.optim.impl = static_cast<optimizer_impl>(pick(0, 3));
    if (!optimizer_impl_available(r.setup.optimizer, r.setup.optim.impl, r.setup.runtime))
      r.setup.optim.impl = optimizer_impl::automatic;
    r.setup.optim.momentum = coin();
    r.activations.ckpt = static_cast<checkpointing>(pick(0, 4));
    if (trains_prefix(r.setup))
      r.activations.ckpt = checkpointing::none;  // PEFT refuses prefix tuning with checkpointing
    r.activations.formula = static_cast<activation_formula>(pick(0, 1));
    r.loss.impl = static_cast<loss_impl>(pick(0, loss_names.size() - 1));
    r.loss.chunk_tokens = pick(1, 1024);
    r.loss.output_chunks = pick(1, 16);
    r.grad_accum_steps = pick(1, 4);
    r.setup.optim.in_backward = r.grad_accum_steps == 1 && pick(0, 3) == 0;  // refused with accumulation
    r.basis = coin() ? params_basis::nominal : params_basis::exact;
    return r;
  }
};

constexpr int cases = 2000;

}  // namespace

TEST_CASE("Property: every phase is the sum of its buckets, and the peak is the largest phase",
          "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < cases; ++i) {
    const model_spec spec = g.model();
    const run_config r = g.run();
    const training_estimate e = estimate_training(spec, r);
    for (const memory_buckets& phase : e.phases) {
      std::uint64_t sum = 0;
      for (const bucket_field& f : bucket_fields) sum += (phase.*f.member).count();
      REQUIRE(sum == phase.total_bytes().count());
      REQUIRE(phase.total_bytes() <= e.total_bytes());
    }
    REQUIRE(e.statics.buckets.static_bytes() ==
            e.statics.buckets.weights + e.statics.buckets.adapter_weights + e.statics.buckets.grads +
                e.statics.buckets.master + e.statics.buckets.optimizer);
  }
}

TEST_CASE("Property: torch.compile never keeps more than eager, where it is modelled", "[property]") {
  generator g;
  INFO("seed " << seed());
  int compared = 0;
  for (int i = 0; i < cases; ++i) {
    const model_spec spec = g.model();
    run_config r = g.run();
    r.activations.compiled = true;
    if (compile_not_modelled(spec.shape, r.setup, r.activations) != nullptr) continue;
    const activation_estimate compiled = estimate_activations(spec.shape, r.setup, r.activations);
    r.activations.compiled = false;
    const activation_estimate eager = estimate_activations(spec.shape, r.setup, r.activations);
    REQUIRE(compiled.layer <= eager.layer);
    REQUIRE(compiled.gpu <= eager.gpu);
    ++compared;
  }
  CHECK(compared > 50);
}

TEST_CASE("Property: the totals equal the sums of the terms and tensors they summarise", "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < cases / 2; ++i) {
    const model_spec spec = g.model();
    const run_config r = g.run();
    const model_shape& m = spec.shape;
    // Activations and logits: the estimate's totals are what --explain itemises.
    const activation_estimate a = estimate_activations(m, r.setup, r.activations);
    const activation_breakdown terms = activation_inventory(m, r.setup, r.activations);
    REQUIRE(terms.layer.total() == a.layer);
    REQUIRE(terms.model_level.total() == a.model_level);
    const logits_estimate l = estimate_logits(m, r.setup, r.activations, r.loss);
    // The loss timeline is consistent: it never releases more than it holds (the replay would throw),
    // its peaks hold what they keep, and the fully listed losses replay to the same numbers.
    REQUIRE(l.forward_peak() >= l.kept);
    REQUIRE(l.backward_peak() >= l.kept);
    REQUIRE(l.backward_peak() >= l.after);
    if (r.loss.impl != loss_impl::chunked && r.loss.impl != loss_impl::chunked_output &&
        r.loss.impl != loss_impl::linear_ce) {  // these list some chunks only
      std::uint64_t live = 0, forward = 0;
      for (const loss_event& ev : logits_inventory(m, r.setup, r.activations, r.loss)) {
        live = ev.release ? live - ev.amount.count() : live + ev.amount.count();
        if (!ev.backward) forward = std::max(forward, live);
      }
      REQUIRE(bytes(live) == l.after);
      REQUIRE(bytes(forward) == l.forward_peak());
    }
    // Static: one pass over visit_parameters agrees with the tensor lists, and a lumped optimizer
    // state equals the per-tensor sum wherever it is used.
    const static_estimate st = estimate_static(spec, r.setup, r.basis);
    const param_inventory base = parameter_inventory(m);
    REQUIRE(st.model_params == parameter_count(m));
    bytes per_tensor_state{0};
    if (r.setup.method == training_method::full) {
      for (const param_tensor& t : base) per_tensor_state += detail::tensor_state(t, r.setup);
    } else {
      params adapters{0}, saved{0};
      for (const param_tensor& t : adapter_inventory(m, r.setup.lora)) adapters += t.total();
      // State for the trainable ones only (not VeRA's shared projections), in the adapter dtype.
      auto state = [&](const param_tensor& t) { per_tensor_state += detail::tensor_state(t, r.setup, true); };
      for (const param_tensor& t : base) visit_adapters(t, r.setup.lora, state, true);
      visit_model_adapters(m, r.setup.lora, state, true);
      for (const param_tensor& t : saved_module_inventory(base, r.setup.lora)) {
        saved += t.total();
        per_tensor_state += detail::tensor_state(t, r.setup);
      }
      REQUIRE(st.adapter_params == adapters);
      REQUIRE(st.saved_module_params == saved);
    }
    if (st.basis == params_basis::exact)  // torch's per-tensor `step` counters, on exact pricing only
      per_tensor_state +=
          optimizer_step_counter_bytes(r.setup.optimizer, st.trainable_tensors, r.setup.runtime);
    if (r.setup.method != training_method::full || st.basis == params_basis::exact)
      REQUIRE(st.buckets.optimizer == per_tensor_state);
  }
}

TEST_CASE("Property: memory is monotone in batch, sequence length and LoRA rank", "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < cases / 4; ++i) {
    const model_spec spec = g.model();
    run_config r = g.run();
    const bytes base = estimate_training(spec, r).total_bytes();
    run_config longer = r;
    longer.activations.seq_len += g.pick(1, 512);
    REQUIRE(estimate_training(spec, longer).total_bytes() >= base);
    run_config wider = r;
    wider.activations.batch += 1;
    REQUIRE(estimate_training(spec, wider).total_bytes() >= base);
    if (r.setup.method != training_method::full &&
        (r.setup.lora.method == peft_method::lora || r.setup.lora.method == peft_method::vera)) {
      run_config ranked = r;
      ranked.setup.lora.rank *= 2;
      REQUIRE(estimate_training(spec, ranked).statics.buckets.static_bytes() >
              estimate_training(spec, r).statics.buckets.static_bytes());
    }
  }
}

TEST_CASE(
    "Property: checkpointing never raises activations, a fused loss never raises a frozen head's logits",
    "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < cases / 4; ++i) {
    const model_spec spec = g.model();
    run_config r = g.run();
    if (spec.shape.num_hidden_layers < 2) continue;  // with one layer a checkpoint is pure overhead
    if (trains_prefix(r.setup))
      r.setup.lora = lora_config{};  // prefix tuning refuses checkpointing (PEFT): compare plain LoRA
    r.activations.ckpt = checkpointing::none;
    const bytes none = estimate_activations(spec.shape, r.setup, r.activations).gpu;
    for (checkpointing k : {checkpointing::full, checkpointing::offload, checkpointing::offload_checkpointed,
                            checkpointing::checkpoint_offload}) {
      r.activations.ckpt = k;
      REQUIRE(estimate_activations(spec.shape, r.setup, r.activations).gpu <= none);
    }
    const bool head_frozen = !r.setup.lora.modules_to_save.contains(module_name::lm_head);
    if (r.setup.method != training_method::full && head_frozen &&
        r.activations.batch * r.activations.seq_len >= 1024) {
      const bytes naive = estimate_logits(spec.shape, r.setup, r.activations, loss_config{}).peak();
      for (loss_impl l : {loss_impl::fused_liger, loss_impl::fused_cce})
        REQUIRE(estimate_logits(spec.shape, r.setup, r.activations, loss_config{l, 256}).peak() <= naive);
    }
  }
}

TEST_CASE("Property: from two GPUs on, sharding over more never raises per-GPU memory", "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < cases / 8; ++i) {
    const model_spec spec = g.model();
    run_config r = g.run();
    const layout_choice& l = layout_choices[g.pick(0, layout_choices.size() - 1)];
    r.parallel.shard = l.shard;
    r.parallel.offload_optimizer = l.offload_optimizer;
    r.parallel.offload_params = l.offload_params;
    bytes last(~std::uint64_t{0});
    for (std::uint64_t n : {2u, 3u, 8u}) {  // (one to two GPUs adds the communication buffers)
      r.parallel.data_parallel = n;
      const bytes now = estimate_training(spec, r).total_bytes();
      REQUIRE(now <= last);
      last = now;
    }
  }
}

TEST_CASE("Property: --fit answers are exact boundaries", "[property]") {
  generator g;
  INFO("seed " << seed());
  for (int i = 0; i < 60; ++i) {
    const model_spec spec = g.model();
    run_config r = g.run();
    const bytes budget(g.pick(1, 200) * 1'000'000'000);
    const std::uint64_t s = max_seq_len(spec, r, budget);
    if (s == 0) {
      r.activations.seq_len = 1;
      REQUIRE_FALSE(fits(spec, r, budget));
      continue;
    }
    r.activations.seq_len = s;
    REQUIRE(fits(spec, r, budget));
    if (s < max_solver_seq_len) {
      r.activations.seq_len = s + 1;
      REQUIRE_FALSE(fits(spec, r, budget));
    }
  }
}

TEST_CASE("Absurd sizes give an error or an exact answer, never a wrapped one", "[property][errors]") {
  model_shape m;
  m.hidden_size = std::uint64_t{1} << 20;
  m.num_attention_heads = 8;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = std::uint64_t{1} << 24;
  m.num_hidden_layers = 40'000;
  m.vocab_size = 1000;
  // About 2.1·10^18 parameters: counted exactly; 16 bytes each would overflow, which is an error.
  const params n = parameter_count(m);
  CHECK(n.count() > 2'000'000'000'000'000'000ull);
  CHECK_THROWS_AS(
      estimate_static(model_spec{m, 0}, training_setup{}, params_basis::exact).buckets.static_bytes(),
      overflow_error);
  CHECK_FALSE(fits(model_spec{m, 0}, run_config{}, bytes(~std::uint64_t{0})));
  m.hidden_size = std::uint64_t{1} << 24;  // now the count itself overflows: an error too
  m.num_hidden_layers = 100'000;
  CHECK_THROWS_AS(parameter_count(m), overflow_error);
  run_config r;
  r.activations.seq_len = std::uint64_t{1} << 40;  // 2^40 tokens
  test::require_input_error(
      [&] {
        (void)estimate_training(model_spec{test::llama_3_1_8b, 0}, r);
      },
      "seq_len", "absurd");
}
