// SPDX-License-Identifier: MIT
// Activations: the course's activation table (W15–W19) and the per-tensor inventory.
#include <algorithm>

#include <headroom/activations/estimate.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
constexpr activation_config course(attention_impl a, checkpointing c) {
  activation_config cfg;  // Qwen3-4B worked example: T 2048, B 1
  cfg.batch = 1;
  cfg.seq_len = 2048;
  cfg.attention = a;
  cfg.ckpt = c;
  cfg.formula = activation_formula::korthikanti;
  return cfg;
}
constexpr bytes korthikanti(attention_impl a, checkpointing c) {
  return estimate_activations(qwen3_4b, lora16, course(a, c)).gpu;
}
}  // namespace

// W16–W18 at compile time.
static_assert(korthikanti(attention_impl::eager, checkpointing::none) == bytes(30'576'476'160));
static_assert(korthikanti(attention_impl::flash, checkpointing::none) == bytes(6'417'285'120));
static_assert(korthikanti(attention_impl::flash, checkpointing::full) == bytes(555'745'280));
// Both sinks are constexpr: the itemised inventory sums to the estimate's per-layer total.
static_assert(layer_inventory(qwen3_4b, lora16, activation_config{}).total() ==
              estimate_activations(qwen3_4b, lora16, activation_config{}).layer);

TEST_CASE("W15: Qwen3-4B at T 2048, B 1 has sbh = 5,242,880 and 5as/h = 128", "[activations][worked]") {
  const activation_config c = course(attention_impl::eager, checkpointing::none);
  CHECK(block_input_bytes(qwen3_4b, lora16, c) == bytes(2 * 5'242'880));  // 2 bytes per value
  CHECK(5 * qwen3_4b.num_attention_heads * c.seq_len / qwen3_4b.hidden_size == 128);
  CHECK(5 * qwen3_4b.num_attention_heads * c.seq_len % qwen3_4b.hidden_size == 0);
}

TEST_CASE("W16: eager attention without checkpointing is sbh·(34 + 128)·36 = 30.58 GB",
          "[activations][worked]") {
  CHECK(korthikanti(attention_impl::eager, checkpointing::none) == bytes(5'242'880ull * (34 + 128) * 36));
  REQUIRE_THAT(in_gb(korthikanti(attention_impl::eager, checkpointing::none)),
               Catch::Matchers::WithinAbs(30.58, 0.005));
}

TEST_CASE("W17: FlashAttention removes the 5as/h term: 34·sbh·36 = 6.42 GB", "[activations][worked]") {
  CHECK(korthikanti(attention_impl::flash, checkpointing::none) == bytes(34 * 5'242'880ull * 36));
  // Memory-efficient SDPA removes the same term, once.
  CHECK(korthikanti(attention_impl::sdpa, checkpointing::none) ==
        korthikanti(attention_impl::flash, checkpointing::none));
}

TEST_CASE("W18: checkpointing keeps 2·sbh per layer plus one block: 0.377 + 0.178 = 0.56 GB",
          "[activations][worked]") {
  const activation_estimate e =
      estimate_activations(qwen3_4b, lora16, course(attention_impl::flash, checkpointing::full));
  CHECK(e.per_layer_kept * 36 == bytes(377'487'360));  // 2·sbh·L
  CHECK(e.recompute == bytes(178'257'920));            // 34·sbh
  CHECK(e.gpu == bytes(555'745'280));
  // With eager attention the recomputed block also holds its s² scores, but only one block's worth.
  const activation_estimate eager =
      estimate_activations(qwen3_4b, lora16, course(attention_impl::eager, checkpointing::full));
  CHECK(eager.gpu - e.gpu == bytes(5'242'880ull * 128));
}

TEST_CASE("W19: full recomputation makes a step 4 forward passes instead of 3 (+33%)",
          "[activations][worked]") {
  CHECK(forward_passes_per_step(checkpointing::none) == 3);
  CHECK(forward_passes_per_step(checkpointing::full) == 4);
  CHECK(forward_passes_per_step(checkpointing::offload) == 3);
  const double slowdown = static_cast<double>(forward_passes_per_step(checkpointing::full)) /
                              static_cast<double>(forward_passes_per_step(checkpointing::none)) -
                          1.0;
  REQUIRE_THAT(slowdown, Catch::Matchers::WithinAbs(0.33, 0.005));
}

TEST_CASE("Detailed inventory of a Llama-3.1-8B block, full fine-tuning, flash, term by term",
          "[activations]") {
  activation_config c;
  c.batch = 2;
  c.seq_len = 1024;
  c.ckpt = checkpointing::none;
  const std::uint64_t t = 2048, d = 4096, q = 4096, kv = 1024, f = 14336, a = 32;
  // Two RMSNorms (fp32 input 4td, rstd 4t, normalised bf16 2td), q/k/v input 2td, flash q/k/v
  // 2t(q + 2kv), flash output 2tq, lse 4ta, gate/up input 2td, SwiGLU 3·2tf, down input 2tf.
  const std::uint64_t by_hand = 2 * (4 * t * d + 4 * t + 2 * t * d) + 2 * t * d + 2 * t * (q + 2 * kv) +
                                2 * t * q + 4 * t * a + 2 * t * d + 3 * 2 * t * f + 2 * t * f;
  const activation_terms layer = layer_inventory(llama_3_1_8b, full_ft, c);
  CHECK(layer.total() == bytes(by_hand));
  for (const activation_term& term : layer) CHECK_FALSE(term.reason.empty());
  // 32 layers plus the model-level terms: RoPE tables (1, s, 128) cos and sin, the final norm. (The
  // head's input belongs to the loss head: estimate_logits' hidden_kept.)
  const activation_estimate e = estimate_activations(llama_3_1_8b, full_ft, c);
  const std::uint64_t model_level = 2 * 1024 * 2 * 128 + (4 * t * d + 4 * t + 2 * t * d);
  CHECK(e.gpu == bytes(32 * by_hand + model_level));
  // torch 1.13's mean() keeps x² too: one more fp32 tensor per norm.
  training_setup old = full_ft;
  old.runtime.torch = torch_generation::v1_13;
  CHECK(layer_inventory(llama_3_1_8b, old, c).total() - layer.total() == bytes(2 * 4 * t * d));
}

TEST_CASE("LoRA keeps only the inputs its adapters read, frozen linears save nothing", "[activations]") {
  activation_config c;
  c.ckpt = checkpointing::none;
  const bytes full = layer_inventory(llama_3_1_8b, full_ft, c).total();
  const bytes all_linear = layer_inventory(llama_3_1_8b, lora16, c).total();
  training_setup qv = lora16;
  qv.lora.targets = parse_lora_targets("q_proj,v_proj");
  const bytes q_v_only = layer_inventory(llama_3_1_8b, qv, c).total();
  const std::uint64_t t = 2048, d = 4096, f = 14336, r = 16;
  // all-linear drops the two norm-weight products (2·2td) and adds lora_A outputs (7 adapters · t·r).
  CHECK(full - all_linear + bytes(2 * 7 * t * r) == bytes(2 * 2 * t * d));
  // q,v only also drops the MLP input (2td) and down_proj input (2tf), and has 2 adapters.
  CHECK(all_linear - q_v_only == bytes(2 * t * d + 2 * t * f + 2 * 5 * t * r));
}

TEST_CASE("Eager attention stores s²-sized scores, flash and SDPA do not", "[activations]") {
  activation_config c;
  c.batch = 1;
  c.seq_len = 4096;
  c.ckpt = checkpointing::none;
  c.attention = attention_impl::eager;
  const bytes eager = layer_inventory(qwen3_4b, lora16, c).total();
  c.attention_dropout = true;
  const bytes eager_dropout = layer_inventory(qwen3_4b, lora16, c).total();
  const std::uint64_t scores = 32ull * 4096 * 4096;
  CHECK(eager_dropout - eager == bytes(scores));  // CUDA's fused dropout: a one-byte mask per score
  // (the dropped probabilities replace the bf16 copy that ·v saves without dropout)
  training_setup on_cpu = lora16;
  on_cpu.runtime.device = device_kind::cpu;
  c.attention_dropout = false;
  const bytes cpu_eager = layer_inventory(qwen3_4b, on_cpu, c).total();
  c.attention_dropout = true;
  const bytes cpu_dropout = layer_inventory(qwen3_4b, on_cpu, c).total();
  CHECK(cpu_dropout - cpu_eager == bytes(2 * scores));  // the CPU's mask is in the input dtype
  c.attention_dropout = false;
  c.attention = attention_impl::flash;
  const bytes flash = layer_inventory(qwen3_4b, lora16, c).total();
  CHECK(eager - flash > bytes(6 * scores));  // fp32 softmax output + bf16 probabilities
  c.attention = attention_impl::sdpa;
  const bytes sdpa = layer_inventory(qwen3_4b, lora16, c).total();
  CHECK(sdpa > flash);  // repeat_kv expands K and V to all 32 heads
  CHECK(sdpa - flash ==
        bytes(2 * 4096ull * (3 * 4096 - (4096 + 2 * 1024)) + 2 * 4096ull * 4096));  // + o_proj input
}

TEST_CASE("Selective and offloaded modes keep what their implementations keep", "[activations]") {
  activation_config c;
  const std::uint64_t t = 2048;
  c.ckpt = checkpointing::full;
  const activation_estimate full = estimate_activations(qwen3_4b, lora16, c);
  c.ckpt = checkpointing::selective;
  const activation_estimate selective = estimate_activations(qwen3_4b, lora16, c);
  CHECK(selective.per_layer_kept - full.per_layer_kept == bytes(2 * t * 4096 + 4 * t * 32));  // output + lse
  CHECK(selective.recompute == full.recompute);
  c.ckpt = checkpointing::offload;
  const activation_estimate offload = estimate_activations(qwen3_4b, lora16, c);
  CHECK(offload.host == offload.layer * 36);
  CHECK(offload.gpu == offload.layer + offload.model_level);
  // The totals are the sums of the terms --explain prints.
  const activation_breakdown terms = activation_inventory(qwen3_4b, lora16, c);
  CHECK(terms.layer.total() == offload.layer);
  CHECK(terms.model_level.total() == offload.model_level);
  c.ckpt = checkpointing::offload_checkpointed;
  const activation_estimate unsloth = estimate_activations(qwen3_4b, lora16, c);
  CHECK(unsloth.host == block_input_bytes(qwen3_4b, lora16, c) * 36);
  CHECK(unsloth.gpu < full.gpu);
  // OffloadActivations over checkpoints: the same host copies; in backward the input being recomputed and
  // the previous node's (freed once the next node unpacks) are on the GPU.
  c.ckpt = checkpointing::checkpoint_offload;
  const activation_estimate hooks = estimate_activations(qwen3_4b, lora16, c);
  const bytes input = block_input_bytes(qwen3_4b, lora16, c);
  CHECK(input == bytes(2 * t * 2560));
  CHECK(hooks.host == input * 36);
  CHECK(hooks.recompute == full.recompute + input * 2);
  CHECK(hooks.gpu == hooks.model_level + full.recompute + input * 2);
  CHECK(hooks.gpu == unsloth.gpu + input);
  CHECK(forward_passes_per_step(checkpointing::checkpoint_offload) == 4);
  // A block input under 1 KiB is not worth moving (min_offload_size): it stays, as under checkpointing.
  constexpr model_shape small = dense(256, 1024, 4, 4, 4, 64, 32000, true);
  c.seq_len = 1;  // 1 x 256 bf16 values: 512 B
  const activation_estimate tiny = estimate_activations(small, lora16, c);
  CHECK(block_input_bytes(small, lora16, c) == bytes(512));
  CHECK(tiny.host == bytes(0));
  CHECK(tiny.per_layer_kept == bytes(512));
}

TEST_CASE("MoE activations follow the routed tokens", "[activations]") {
  activation_config c;
  c.ckpt = checkpointing::none;
  const std::uint64_t t = 2048, k = 8, fe = 768, d = 2048;
  const activation_terms layer = layer_inventory(qwen3_30b_a3b, full_ft, c);
  bytes swiglu{0};
  for (const activation_term& term : layer)
    if (term.name == "gate_proj output") swiglu = term.amount;
  CHECK(swiglu == bytes(2 * t * k * fe));
  bytes expert_inputs{0}, expert_outputs{0};
  for (const activation_term& term : layer) {
    if (term.name == "gate/up_proj input" && term.amount > bytes(2 * t * d)) expert_inputs = term.amount;
    if (term.name == "expert outputs") expert_outputs = term.amount;
  }
  CHECK(expert_inputs == bytes(2 * t * k * d));  // each token copied to its k experts (index)
  CHECK(expert_outputs == bytes(2 * t * k * d));
}

TEST_CASE("Activations grow with batch, sequence length and rank, checkpointing never raises them",
          "[activations][property]") {
  for (const model_shape& m : {llama_3_2_1b, qwen3_4b, gemma_2_2b, qwen3_30b_a3b}) {
    for (activation_formula f : {activation_formula::korthikanti, activation_formula::detailed}) {
      for (attention_impl a : {attention_impl::eager, attention_impl::sdpa, attention_impl::flash}) {
        activation_config c;
        c.formula = f;
        c.attention = a;
        bytes previous{0};
        for (std::uint64_t s : {128u, 256u, 1000u, 1001u, 4096u}) {
          c.seq_len = s;
          c.ckpt = checkpointing::none;
          const bytes none = estimate_activations(m, lora16, c).gpu;
          CHECK(none > previous);
          previous = none;
          for (checkpointing k : {checkpointing::full, checkpointing::selective, checkpointing::offload,
                                  checkpointing::offload_checkpointed, checkpointing::checkpoint_offload}) {
            c.ckpt = k;
            CHECK(estimate_activations(m, lora16, c).gpu <= none);
          }
        }
        c.seq_len = 512;
        c.ckpt = checkpointing::full;
        bytes last{0};
        for (std::uint64_t b : {1u, 2u, 3u, 8u}) {
          c.batch = b;
          CHECK(estimate_activations(m, lora16, c).gpu > last);
          last = estimate_activations(m, lora16, c).gpu;
        }
      }
    }
  }
  activation_config c;
  c.ckpt = checkpointing::none;
  bytes previous{0};
  for (std::uint64_t r : {1u, 8u, 16u, 64u}) {
    training_setup s = lora16;
    s.lora.rank = r;
    const bytes now = estimate_activations(qwen3_4b, s, c).gpu;
    CHECK(now > previous);
    previous = now;
  }
}

TEST_CASE("Bad workload sizes are errors naming the field", "[activations][errors]") {
  activation_config c;
  c.batch = 0;
  require_input_error([&] { (void)estimate_activations(qwen3_4b, lora16, c); }, "batch", "positive");
  c.batch = 1;
  c.seq_len = 0;
  require_input_error([&] { (void)estimate_activations(qwen3_4b, lora16, c); }, "seq_len", "positive");
  c.seq_len = std::uint64_t{1} << 40;
  require_input_error([&] { (void)estimate_activations(qwen3_4b, lora16, c); }, "seq_len", "absurd");
  // The itemised inventories check the same, rather than listing zero-sized tensors.
  c.seq_len = 2048;
  c.batch = 0;
  require_input_error([&] { (void)layer_inventory(qwen3_4b, lora16, c); }, "batch", "positive");
  require_input_error([&] { (void)activation_inventory(qwen3_4b, lora16, c); }, "batch", "positive");
}

TEST_CASE("The Korthikanti formula's 34·sbh is checked, not wrapped", "[activations][errors]") {
  activation_config c;  // s·b = 2^40 tokens: 34·s·b·h bytes fit in 64 bits
  c.formula = activation_formula::korthikanti;
  c.seq_len = std::uint64_t{1} << 26;
  c.batch = std::uint64_t{1} << 14;
  CHECK(estimate_activations(qwen3_4b, lora16, c).layer ==
        bytes(34 * (std::uint64_t{1} << 40) * qwen3_4b.hidden_size));
  c.batch = std::uint64_t{1} << 24;  // s·b·h = 2^50 · 2560: 34 of those bytes overflow 64 bits
  CHECK_THROWS_AS(estimate_activations(qwen3_4b, lora16, c), overflow_error);
}

// Fixes the CPU ground truth (validation/torch) found; each test failed before its fix.
namespace {
constexpr model_shape small_llama = dense(128, 344, 1, 8, 2, 16, 4096, false);  // the grid's Llama row
activation_config cpu_workload(attention_impl a) {
  activation_config c;
  c.batch = 2;
  c.seq_len = 32;
  c.attention = a;
  c.ckpt = checkpointing::none;
  return c;
}
training_setup on_cpu_113(training_setup s) {
  s.runtime = {device_kind::cpu, torch_generation::v1_13};
  return s;
}
}  // namespace

TEST_CASE("SDPA's math path (the CPU's) saves scaled q and k and the probabilities, no log-sum-exp",
          "[activations][groundtruth]") {
  const std::uint64_t t = 64, q = 128, scores = 2 * 8 * 32 * 32;
  const training_setup s = on_cpu_113(with_method(training_method::full, precision_route::bf16_pure));
  bytes attention{0};
  for (const activation_term& term : layer_inventory(small_llama, s, cpu_workload(attention_impl::sdpa_math)))
    if (term.name.substr(0, 9) == "sdpa-math") attention += term.amount;
  CHECK(attention == bytes(2 * t * 2 * q + 2 * scores + 2 * t * q));  // q·s, kᵀ·s, probs, v (block-000)
}

namespace {
training_setup on_cpu_2(training_setup s) {
  s.runtime = {device_kind::cpu, torch_generation::v2};
  return s;
}
bytes attention_terms(const model_shape& m, const training_setup& s, const activation_config& c) {
  bytes sum{0};
  for (const activation_term& term : layer_inventory(m, s, c))
    if (term.name.substr(0, 4) == "sdpa" || term.name == "o_proj input") sum += term.amount;
  return sum;
}
}  // namespace

TEST_CASE("torch 2.x on a CPU: SDPA with grouped heads runs the math path in fp32 (block-000, torch 2.6)",
          "[activations][groundtruth]") {
  // transformers' enable_gqa (no mask, torch >= 2.5) leaves the CPU flash kernel: q, k, v upcast to fp32
  const training_setup s = on_cpu_2(with_method(training_method::full, precision_route::bf16_pure));
  const std::uint64_t t = 64, q = 128, scores = 2 * 8 * 32 * 32;
  const bytes core{4 * t * 2 * q + 4 * scores + 4 * t * q};  // q·s, kᵀ·s, probs, v: 163,840 B
  CHECK(core == bytes(163'840));
  CHECK(attention_terms(small_llama, s, cpu_workload(attention_impl::sdpa)) == core + bytes(2 * t * q));
}

TEST_CASE(
    "torch 2.x on a CPU: SDPA without grouped heads takes the flash kernel, its output o_proj's input "
    "(block-009, torch 2.6)",
    "[activations][groundtruth]") {
  constexpr model_shape small_mistral = dense(128, 448, 1, 4, 4, 32, 3072, false);  // the grid's Mistral row
  const training_setup s = on_cpu_2(with_method(training_method::full, precision_route::bf16_pure));
  const std::uint64_t t = 64, q = 128, lse = 4 * t * 4;
  // q, k, v, the output (read by o_proj: the same storage), the fp32 log-sum-exp: 66,560 B
  CHECK(attention_terms(small_mistral, s, cpu_workload(attention_impl::sdpa)) == bytes(2 * t * 4 * q + lse));
  CHECK(2 * t * 4 * q + lse == 66'560);
}

TEST_CASE(
    "SDPA without grouped heads over a fused q/k/v keeps the projection's whole output (Phi-3, "
    "block-045, torch 2.6)",
    "[activations][groundtruth]") {
  model_shape phi3 = dense(96, 256, 1, 6, 6, 16, 2048, false);  // the grid's Phi-3 row
  phi3.attention = attention_layout::qkv_proj;
  const training_setup s = on_cpu_2(with_method(training_method::full, precision_route::bf16_pure));
  const std::uint64_t t = 64, q = 96;
  bytes v{0};
  for (const activation_term& term : layer_inventory(phi3, s, cpu_workload(attention_impl::sdpa)))
    if (term.name == "sdpa v") v += term.amount;
  CHECK(v == bytes(2 * t * 3 * q));  // v is a view of qkv_proj's (t, q + 2kv) output: 36,864 B
}

TEST_CASE("torch 2.x non-reentrant checkpoints keep each block's Python scalars (step-164, torch 2.6)",
          "[activations][groundtruth]") {
  // The 0-dim tensors of LoRA's `* scaling` never reach the saved-tensor hooks the checkpoint drops
  const model_shape two_layers = dense(128, 344, 2, 8, 2, 16, 4096, false);
  training_setup s = on_cpu_2(with_method(training_method::lora, precision_route::bf16_pure));
  s.lora.rank = 8;
  s.lora.targets = lora_targets::all_linear();
  activation_config c = cpu_workload(attention_impl::sdpa);
  c.ckpt = checkpointing::full;
  c.reentrant = false;
  const bytes v2 = estimate_activations(two_layers, s, c).per_layer_kept;
  s.runtime.torch = torch_generation::v1_13;
  const bytes v1 = estimate_activations(two_layers, s, c).per_layer_kept;
  CHECK(v2 - v1 ==
        bytes(7 * 8));  // 7 adapted linears × one 8-byte scalar per layer (step-164: 2 layers, 112 B)
  c.reentrant = true;   // a reentrant checkpoint runs the forward without a graph: nothing is kept
  s.runtime.torch = torch_generation::v2;
  const bytes reentrant_v2 = estimate_activations(two_layers, s, c).per_layer_kept;
  s.runtime.torch = torch_generation::v1_13;
  CHECK(reentrant_v2 == estimate_activations(two_layers, s, c).per_layer_kept);
}

TEST_CASE("In fp32, eager attention's probabilities are the softmax output itself: counted once",
          "[activations][groundtruth]") {
  const training_setup fp32 = on_cpu_113(with_method(training_method::full, precision_route::fp32));
  bool probabilities = false;
  for (const activation_term& term : layer_inventory(small_llama, fp32, cpu_workload(attention_impl::eager)))
    probabilities = probabilities || term.name == "eager probabilities";
  CHECK_FALSE(probabilities);  // .to(float32) of an fp32 tensor returns it (block-002: 811,528 B)
}

TEST_CASE("fp32 adapters on a bf16 base: each adapted linear keeps its own fp32 copy of the input",
          "[activations][groundtruth]") {
  training_setup s = on_cpu_113(with_method(training_method::lora, precision_route::bf16_pure));
  s.lora.rank = 8;
  const activation_config c = cpu_workload(attention_impl::sdpa_math);
  const bytes same = layer_inventory(small_llama, s, c).total();
  s.lora.dtype = adapter_precision::fp32;
  const bytes fp32 = layer_inventory(small_llama, s, c).total();
  const std::uint64_t t = 64, d = 128, q = 128, f = 344, r = 8;
  // Shared bf16 inputs (q/k/v 2td, o 2tq, gate/up 2td, down 2tf) become one fp32 copy per adapter
  // (3·4td + 4tq + 2·4td + 4tf), and the seven lora_A outputs double (2tr → 4tr).
  const std::uint64_t before = 2 * t * d + 2 * t * q + 2 * t * d + 2 * t * f + 7 * 2 * t * r;
  const std::uint64_t after = 3 * 4 * t * d + 4 * t * q + 2 * 4 * t * d + 4 * t * f + 7 * 4 * t * r;
  CHECK(fp32 - same == bytes(after - before));  // block-005 vs block-004: 644,664 - 446,008 B
}

TEST_CASE("The first layer over frozen embeddings saves nothing in its input norm",
          "[activations][groundtruth]") {
  training_setup s = on_cpu_113(with_method(training_method::lora, precision_route::bf16_pure));
  activation_config c = cpu_workload(attention_impl::sdpa_math);
  const activation_estimate e = estimate_activations(small_llama, s, c);
  // input_layernorm: fp32 copy 4td, x² 4td (torch 1.13), rstd 4t — nothing requires grad there.
  CHECK(e.first_layer_saving == bytes(2 * 4 * 64 * 128 + 4 * 64));
  c.ckpt = checkpointing::full;  // enable_input_require_grads: the input requires grad again
  CHECK(estimate_activations(small_llama, s, c).first_layer_saving == bytes(0));
}

TEST_CASE("Gemma-2 has four norms per block, the last on the MLP output", "[activations][groundtruth]") {
  int norms = 0;
  for (const activation_term& term : layer_inventory(gemma_2_2b, full_ft, activation_config{}))
    norms += term.reason == std::string_view("rsqrt(variance + eps), one fp32 value per row") ? 1 : 0;
  CHECK(norms == 4);
}

TEST_CASE("Autocast keeps a bf16 cast of every frozen weight a LoRA model multiplies by",
          "[activations][groundtruth]") {
  training_setup s = with_method(training_method::lora, precision_route::fp32_autocast);
  s.lora.targets = parse_lora_targets("q_proj");
  bytes frozen_casts{0};
  for (const activation_term& term : layer_inventory(small_llama, s, cpu_workload(attention_impl::sdpa_math)))
    if (term.reason == std::string_view("the weight cast to bf16, saved for the input gradient"))
      frozen_casts += term.amount;
  const std::uint64_t d = 128, q = 128, kv = 32, f = 344;
  CHECK(frozen_casts == bytes(2 * (d * q + 2 * d * kv + q * d + 3 * d * f)));
}

TEST_CASE("RoPE tables are (1, s, head_dim): one per position, not per sequence",
          "[activations][groundtruth]") {
  const activation_terms once =
      model_level_inventory(small_llama, full_ft, cpu_workload(attention_impl::flash));
  CHECK(once.items[0].name == std::string_view("RoPE cos/sin"));
  CHECK(once.items[0].amount == bytes(32 * 2 * 16 * 2));  // s · (cos + sin) · head_dim · bf16
}

TEST_CASE(
    "DoRA keeps the base output, lora_B's output and three vectors per module, and builds a weight-norm "
    "transient",
    "[activations]") {
  activation_config c;
  c.ckpt = checkpointing::none;
  training_setup lora = lora16;
  const activation_estimate plain = estimate_activations(llama_3_1_8b, lora, c);
  lora.lora.use_dora = true;
  const activation_estimate dora = estimate_activations(llama_3_1_8b, lora, c);
  // Per layer, bf16 throughout, t = 2048: for each adapted module 2·t·out·2 B + 3·out·2 B.
  const std::uint64_t t = 2048, outs = 4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096;
  CHECK(dora.layer - plain.layer == bytes(2 * t * outs * 2 + 3 * outs * 2));
  // The transient: down_proj (in 14,336, out 4,096): eye 14,336² + lora_A(eye) + three out x in matrices.
  static_assert(headroom::detail::dora_transient(14336, 4096, 16, 2, false) ==
                14336ull * 14336 * 2 + 14336ull * 16 * 2 + 3 * 14336ull * 4096 * 2);
  CHECK(dora.module_transient == bytes(763'822'080));
  CHECK(plain.module_transient == bytes(0));
  // fp32 adapters on a bf16 base: everything in fp32 and the base weight cast too.
  lora.lora.dtype = adapter_precision::fp32;
  CHECK(estimate_activations(llama_3_1_8b, lora, c).module_transient ==
        bytes(14336ull * 14336 * 4 + 14336ull * 16 * 4 + 4 * 14336ull * 4096 * 4));
}

TEST_CASE("LoRA-FA saves no input for the frozen lora_A", "[activations]") {
  activation_config c;
  c.ckpt = checkpointing::none;
  training_setup lora = lora16;
  lora.lora.targets = parse_lora_targets("q_proj,v_proj");
  const activation_estimate plain = estimate_activations(llama_3_1_8b, lora, c);
  lora.lora.freeze_a = true;
  const activation_estimate fa = estimate_activations(llama_3_1_8b, lora, c);
  // q_proj and v_proj read the attention norm's output, which no frozen linear keeps: one t x d bf16 tensor
  // less.
  CHECK(plain.layer - fa.layer == bytes(2048ull * 4096 * 2));
}

TEST_CASE("The longest inventory fits: every switch that adds terms, on every linear of an MoE block",
          "[activations]") {
  // MoE with a shared expert, q/k norms, four norms, eager attention with dropout and soft-capping, CPU
  // scalars, fp32 adapters with dropout under autocast: DoRA lists the most (152 terms); and DeepSeek's MLA
  // with its MoE block (four latent projections, two latent norms, the router, the shared experts).
  model_shape m = with_experts(with_qk_norm(dense(256, 0, 2, 4, 2, 64, 1000, false)), 4, 2, 128);
  m.attention_bias = true;
  m.norms_per_layer = 4;
  m.norm_topk_prob = true;
  m.shared_expert_intermediate_size = 256;
  m.attn_logit_softcapping = 50;
  model_shape mla = deepseek_v3;
  mla.num_hidden_layers = 4;
  mla.dense_layers = 1;
  std::size_t longest = 0, longest_mla = 0;
  for (const auto& type : peft_type_names) {
    training_setup s = with_method(training_method::lora, precision_route::fp32_autocast);
    set_peft_type(s.lora, type.value);
    s.lora.dtype = adapter_precision::fp32;
    s.lora.virtual_tokens = 4;
    s.lora.feedforward = lora_targets{};
    if (s.lora.method == peft_method::lora || s.lora.method == peft_method::vera) s.lora.dropout = 0.1;
    s.runtime = {device_kind::cpu, torch_generation::v1_13};
    activation_config c;
    c.batch = 1;
    c.seq_len = 16;
    c.attention = attention_impl::eager;
    c.attention_dropout = true;
    c.ckpt = checkpointing::none;  // prefix tuning refuses checkpointing
    const activation_terms terms = layer_inventory(m, s, c);
    longest = std::max(longest, terms.size);
    if (!prompt_learning(s.lora) || s.lora.method != peft_method::prefix_tuning)  // MLA refuses prefix tuning
      longest_mla = std::max(longest_mla, layer_inventory(mla, s, c).size);
  }
  CHECK(longest == 152);
  CHECK(longest < activation_terms::capacity);
  CHECK(longest_mla < activation_terms::capacity);
}

namespace {
constexpr activation_config compiled_llama_batch() {
  activation_config c;
  c.batch = 2;
  c.seq_len = 1024;
  c.ckpt = checkpointing::none;
  c.compiled = true;
  return c;
}
constexpr std::uint64_t compiled_block_by_hand() {
  const std::uint64_t t = 2048, d = 4096, q = 4096, kv = 1024, f = 14336, a = 32;
  // Two norms keep their bf16 input (2td) and rstd (4t); flash keeps q/k/v 2t(q + 2kv), its output 2tq and
  // lse 4ta; the SwiGLU keeps gate_proj's and up_proj's outputs (2·2tf). Everything else is recomputed.
  return 2 * (2 * t * d + 4 * t) + 2 * t * (q + 2 * kv) + 2 * t * q + 4 * t * a + 2 * 2 * t * f;
}
}  // namespace

static_assert(layer_inventory(llama_3_1_8b, full_ft, compiled_llama_batch()).total() ==
              bytes(compiled_block_by_hand()));

TEST_CASE("torch.compile: a Llama-3.1-8B block keeps matmul and kernel outputs, norm inputs and rstd",
          "[activations]") {
  const activation_config c = compiled_llama_batch();
  const bytes compiled = layer_inventory(llama_3_1_8b, full_ft, c).total();
  CHECK(compiled == bytes(compiled_block_by_hand()));
  activation_config eager = c;
  eager.compiled = false;
  const bytes before = layer_inventory(llama_3_1_8b, full_ft, eager).total();
  CHECK(compiled < before);
  // LoRA on all seven linears adds lora_A's r-wide output per module (bf16 adapters): 7 · 2·t·16.
  CHECK(layer_inventory(llama_3_1_8b, lora16, c).total() - compiled == bytes(7 * 2 * 2048 * 16));
  // Not modelled, and said so: MoE blocks, eager attention, DoRA.
  activation_config eager_attention = c;
  eager_attention.attention = attention_impl::eager;
  require_input_error([&] { (void)layer_inventory(llama_3_1_8b, full_ft, eager_attention); }, "compile",
                      "eager / sdpa-math attention");
  model_shape moe = llama_3_1_8b;
  moe.num_experts = 8;
  moe.num_experts_per_tok = 2;
  moe.moe_intermediate_size = 1024;
  require_input_error([&] { (void)layer_inventory(moe, full_ft, c); }, "compile", "MoE");
  training_setup dora = lora16;
  dora.lora.use_dora = true;
  require_input_error([&] { (void)layer_inventory(llama_3_1_8b, dora, c); }, "compile", "DoRA");
}

namespace {
constexpr training_setup prefix20 = [] {
  training_setup s = with_method(training_method::lora);
  set_peft_type(s.lora, peft_type::prefix_tuning);
  s.lora.virtual_tokens = 20;
  return s;
}();
constexpr activation_config one_sequence_2048(attention_impl a) {
  activation_config c;  // one 2,048-token sequence, no checkpointing (docs/activations.md, prefix tuning)
  c.batch = 1;
  c.seq_len = 2048;
  c.ckpt = checkpointing::none;
  c.attention = a;
  return c;
}
}  // namespace

// Prefix tuning: each layer's kernel reads s + P keys; the cache of concatenated keys and values lives until
// the loss is computed where the kernel saved copies instead.
static_assert(detail::prefix_cache_bytes(llama_3_1_8b, prefix20, one_sequence_2048(attention_impl::sdpa)) ==
              bytes(32ull * 8'470'528));
static_assert(detail::prefix_cache_bytes(llama_3_1_8b, prefix20, one_sequence_2048(attention_impl::flash)) ==
              bytes(0));

TEST_CASE(
    "Prefix tuning: the kernels read s + P keys, SDPA keeps the mask as a bias, the cache outlives them",
    "[activations]") {
  const activation_terms flash =
      layer_inventory(llama_3_1_8b, prefix20, one_sequence_2048(attention_impl::flash));
  CHECK(term(flash, "flash-attn k, v") == bytes(2068ull * 2 * 1024 * 2));  // 8,470,528
  CHECK(term(flash, "flash-attn k, v") == bytes(8'470'528));
  CHECK(term(flash, "flash-attn q") == bytes(2048ull * 4096 * 2));  // queries stay at s
  const activation_terms sdpa =
      layer_inventory(llama_3_1_8b, prefix20, one_sequence_2048(attention_impl::sdpa));
  CHECK(term(sdpa, "sdpa attention bias") == bytes(2048ull * 2080 * 2));  // 2,068 keys padded to 2,080
  CHECK(term(sdpa, "sdpa attention bias") == bytes(8'519'680));
  CHECK(term(sdpa, "sdpa k, v") == bytes(2068ull * 2 * 4096 * 2));  // repeat_kv: all 32 heads
  activation_config eager = one_sequence_2048(attention_impl::eager);
  const bytes scores = term(layer_inventory(llama_3_1_8b, prefix20, eager), "eager softmax output");
  CHECK(scores == bytes(32ull * 2048 * 2068 * 4));  // b·a·s·(s + P) in fp32
  // The step: the cache is forward-only, and the loss sees s positions (no virtual tokens).
  const activation_estimate e =
      estimate_activations(llama_3_1_8b, prefix20, one_sequence_2048(attention_impl::sdpa));
  CHECK(e.forward_cached == bytes(271'056'896));
  CHECK(positions_seen(eager, prefix20).seq_len == 2048);
  // PEFT refuses it with gradient checkpointing; compile is not modelled.
  eager.ckpt = checkpointing::full;
  require_input_error([&] { (void)estimate_activations(llama_3_1_8b, prefix20, eager); },
                      "gradient_checkpointing", "PREFIX_TUNING does not work with gradient checkpointing");
  activation_config compiled = one_sequence_2048(attention_impl::flash);
  compiled.compiled = true;
  require_input_error([&] { (void)layer_inventory(llama_3_1_8b, prefix20, compiled); }, "compile",
                      "prefix tuning");
}

TEST_CASE(
    "P-tuning: the MLP encoder keeps its embedding output and two ReLU outputs for one copy of the prompts",
    "[activations]") {
  training_setup s = with_method(training_method::lora);
  set_peft_type(s.lora, peft_type::p_tuning);
  s.lora.virtual_tokens = 20;
  s.lora.encoder_hidden_size = 1024;
  s.precision = precision_route::bf16_pure;
  activation_config c = one_sequence_2048(attention_impl::flash);
  const bytes encoder = term(model_level_inventory(llama_3_1_8b, s, c), "prompt encoder");
  CHECK(encoder == bytes(20ull * 4096 * 4 + 2 * 20ull * 1024 * 4));  // fp32, P rows whatever the batch
  c.batch = 8;
  CHECK(term(model_level_inventory(llama_3_1_8b, s, c), "prompt encoder") == encoder);
  CHECK(positions_seen(c, s).seq_len == 2048 + 20);
}

TEST_CASE("OLMo-2: no input norm, q/k norms over the full width, norms on the attention and MLP outputs",
          "[activations]") {
  const activation_terms olmo = layer_inventory(olmo2_7b, full_ft, one_sequence_2048(attention_impl::flash));
  const std::uint64_t t = 2048, d = 4096;
  CHECK(term(olmo, "input_layernorm") == bytes(0));
  // bf16 mixed: each norm keeps its fp32 input and rstd, and (full FT) the fp32 normalised input for w's grad
  const bytes norm = bytes(t * d * 4 + t * 4 + t * d * 4);
  CHECK(term(olmo, "q_norm") == norm);  // a·head_dim = 4,096 wide, one rstd per token (not per head)
  CHECK(term(olmo, "k_norm") == norm);
  CHECK(term(olmo, "post_attention_layernorm") == norm);
  CHECK(term(olmo, "post_feedforward_layernorm") == norm);
  // the projections read the block input itself: saved once for q, k and v
  CHECK(term(olmo, "q/k/v_proj input") == bytes(t * d * 2));
}

TEST_CASE("gpt-oss eager attention: the softmax covers s + 1 columns in the logits' dtype, max keeps indices",
          "[activations]") {
  activation_config c = one_sequence_2048(attention_impl::eager);
  c.seq_len = 256;
  const activation_terms oss = layer_inventory(gpt_oss_20b, full_ft, c);
  const std::uint64_t a = 64, s = 256;
  CHECK(term(oss, "eager softmax output") == bytes(a * s * (s + 1) * 2));  // bf16, not the fp32 of Llama's
  CHECK(term(oss, "eager sink max") == bytes(a * s * 8));
  CHECK(term(oss, "eager probabilities") == bytes(0));  // no separate cast: the softmax ran in bf16
  // the router: a softmax over the k chosen logits only, in their dtype
  CHECK(term(oss, "router softmax") == bytes(s * 4 * 2));
}

TEST_CASE("StarCoder2: LayerNorms keep input, mean and rstd, GELU keeps c_fc's output, dropouts keep masks",
          "[activations]") {
  const std::uint64_t t = 2048, d = 3072, ff = 12288;
  const activation_terms sc =
      layer_inventory(starcoder2_3b, full_ft, one_sequence_2048(attention_impl::flash));
  // CUDA: native_layer_norm keeps its bf16 input and an fp32 mean and rstd per row
  CHECK(term(sc, "input_layernorm") == bytes(t * d * 2 + t * 2 * 4));
  CHECK(term(sc, "post_attention_layernorm") == bytes(t * d * 2 + t * 2 * 4));
  CHECK(term(sc, "c_fc input") == bytes(t * d * 2));     // the LayerNorm's output, for c_fc's weight gradient
  CHECK(term(sc, "c_fc output") == bytes(t * ff * 2));   // saved by GELU
  CHECK(term(sc, "c_proj input") == bytes(t * ff * 2));  // GELU's output
  CHECK(term(sc, "gate_proj output") == bytes(0));       // no gate
  CHECK(term(sc, "o_proj output dropout") == bytes(t * d));  // residual_dropout: bool masks on CUDA
  CHECK(term(sc, "c_proj output dropout") == bytes(t * d));
  // A CPU keeps the statistics in the input's dtype and a scaled mask in it (as the measured rows do).
  training_setup cpu = full_ft;
  cpu.runtime.device = device_kind::cpu;
  const activation_terms on_cpu =
      layer_inventory(starcoder2_3b, cpu, one_sequence_2048(attention_impl::flash));
  CHECK(term(on_cpu, "input_layernorm") == bytes(t * d * 2 + t * 2 * 2));
  CHECK(term(on_cpu, "o_proj output dropout") == bytes(t * d * 2));
  // The config's attention_dropout 0.1 is priced without --attention-dropout: eager keeps the mask.
  activation_config eager = one_sequence_2048(attention_impl::eager);
  eager.seq_len = 256;
  CHECK(term(layer_inventory(starcoder2_3b, full_ft, eager), "eager dropout mask") ==
        bytes(24ull * 256 * 256));
  model_shape no_dropout = starcoder2_3b;
  no_dropout.residual_dropout = no_dropout.attention_dropout = no_dropout.embedding_dropout = false;
  CHECK(term(layer_inventory(no_dropout, full_ft, eager), "eager dropout mask") == bytes(0));
  CHECK(layer_inventory(no_dropout, full_ft, one_sequence_2048(attention_impl::flash)).total() ==
        layer_inventory(starcoder2_3b, full_ft, one_sequence_2048(attention_impl::flash)).total() -
            bytes(2 * t * d));
  // embedding_dropout keeps a mask once the embeddings need a gradient (full FT, or LoRA with checkpointing)
  CHECK(term(model_level_inventory(starcoder2_3b, full_ft, one_sequence_2048(attention_impl::flash)),
             "embedding dropout") == bytes(t * d));
  CHECK(term(model_level_inventory(starcoder2_3b, lora16, one_sequence_2048(attention_impl::flash)),
             "embedding dropout") == bytes(0));
  activation_config compiled = one_sequence_2048(attention_impl::flash);
  compiled.compiled = true;
  test::require_input_error([&] { (void)layer_inventory(starcoder2_3b, full_ft, compiled); }, "compile",
                            "StarCoder2");
}

namespace {
training_setup lora_on(std::string_view targets) {
  training_setup s = lora16;
  s.lora.targets = parse_lora_targets(targets);
  return s;
}
/// The first layer over frozen embeddings (LoRA without checkpointing): its input needs no gradient.
activation_terms first_layer(const model_shape& m, const training_setup& s, const activation_config& c) {
  activation_terms out;
  detail::layer_terms(m, s, c, out, false);
  return out;
}
}  // namespace

TEST_CASE(
    "GPT-NeoX: both LayerNorms read the block input (saved once), over frozen embeddings the parallel MLP "
    "keeps nothing",
    "[activations]") {
  const std::uint64_t t = 2048, d = 4096, ff = 16384;
  const activation_config c = one_sequence_2048(attention_impl::flash);
  const activation_terms neox = layer_inventory(pythia_6_9b, full_ft, c);
  CHECK(term(neox, "input_layernorm") == bytes(t * d * 2 + t * 2 * 4));
  CHECK(term(neox, "post_attention_layernorm") == bytes(t * 2 * 4));  // its input is the same block input
  CHECK(term(neox, "query_key_value input") == bytes(t * d * 2));
  CHECK(term(neox, "dense_h_to_4h input") == bytes(t * d * 2));  // the second norm's output
  CHECK(term(neox, "dense_h_to_4h output") == bytes(t * ff * 2));
  CHECK(term(neox, "dense_4h_to_h input") == bytes(t * ff * 2));
  // RoPE on a quarter of each head: the tables are s × 2·32, not s × 2·128
  CHECK(term(model_level_inventory(pythia_6_9b, full_ft, c), "RoPE cos/sin") == bytes(2048 * 2 * 32 * 2));
  // PEFT's default LoRA target (query_key_value) without checkpointing: the first layer's MLP branch reads
  // the frozen embeddings and saves nothing.
  const training_setup lora = lora_on("query_key_value");
  const activation_terms first = first_layer(pythia_6_9b, lora, c);
  CHECK(term(first, "dense_h_to_4h output") == bytes(0));
  CHECK(term(first, "input_layernorm") == bytes(0));
  CHECK(term(layer_inventory(pythia_6_9b, lora, c), "dense_h_to_4h output") == bytes(t * ff * 2));
  const activation_estimate e = estimate_activations(pythia_6_9b, lora, c);
  CHECK(e.first_layer_saving == layer_inventory(pythia_6_9b, lora, c).total() - first.total());
}

TEST_CASE(
    "Cohere: one fp32 Python norm whose output q/k/v and gate/up all read, a frozen first layer's MLP "
    "keeps nothing",
    "[activations]") {
  const std::uint64_t t = 2048, d = 8192, ff = 22528;
  const activation_config c = one_sequence_2048(attention_impl::flash);
  const activation_terms r = layer_inventory(command_r, full_ft, c);
  // x − mean twice (pow's and the rsqrt product's), rsqrt, the weight's fp32 cast, the normalised input
  CHECK(term(r, "input_layernorm") == bytes(3 * t * d * 4 + t * 4 + d * 4));
  CHECK(term(r, "q/k/v and gate/up_proj input") == bytes(t * d * 2));  // one storage for five linears
  CHECK(term(r, "post_attention_layernorm") == bytes(0));
  CHECK(term(r, "gate_proj output") == bytes(t * ff * 2));
  // Command-R+'s per-head q/k norms: t·heads rows of head_dim, (heads, head_dim) weights
  const activation_terms plus = layer_inventory(command_r_plus, full_ft, c);
  CHECK(term(plus, "q_norm") == bytes(3 * t * 96 * 128 * 4 + t * 96 * 4 + 96 * 128 * 4));
  // LoRA on q_proj, v_proj without checkpointing: the first layer's MLP reads the frozen input
  const training_setup lora = lora_on("q_proj,v_proj");
  const activation_terms first = first_layer(command_r, lora, c);
  CHECK(term(first, "gate_proj output") == bytes(0));
  CHECK(term(first, "act(gate)") == bytes(0));
  CHECK(term(first, "down_proj input") == bytes(0));
  CHECK(term(layer_inventory(command_r, lora, c), "act(gate)") == bytes(t * ff * 2));
}

TEST_CASE(
    "DeepSeek-V3: MLA keeps the two latent norms' inputs and the concatenated q and k, the MoE block an fp32 "
    "router and routing, dense first layers their own block",
    "[activations]") {
  const std::uint64_t t = 2048, d = 7168, heads = 128, routed = t * 8;
  const activation_config c = one_sequence_2048(attention_impl::flash);
  const activation_terms r = layer_inventory(deepseek_v3, full_ft, c);      // an MoE layer
  CHECK(term(r, "q_a_proj/kv_a_proj_with_mqa input") == bytes(t * d * 2));  // one storage for both
  // RMSNorm over q_lora_rank 1536 and kv_lora_rank 512: the fp32 input, rsqrt, the normalised input
  CHECK(term(r, "q_a_layernorm") == bytes(t * 1536 * 4 + t * 4 + t * 1536 * 2));
  CHECK(term(r, "kv_a_layernorm") == bytes(t * 512 * 4 + t * 4 + t * 512 * 2));
  CHECK(term(r, "q_b_proj input") == bytes(t * 1536 * 2));
  CHECK(term(r, "kv_b_proj input") == bytes(t * 512 * 2));
  // FlashAttention-2: q, k (192 per head) and v padded to 192; the padded output; o_proj reads a sliced copy
  CHECK(term(r, "flash-attn q, k, v") == bytes(3 * t * heads * 192 * 2));
  CHECK(term(r, "flash-attn output") == bytes(t * heads * 192 * 2));
  CHECK(term(r, "o_proj input") == bytes(t * heads * 128 * 2));
  // The router: x and the weight cast to fp32, sigmoid's fp32 scores; routing in fp32 promotes the products
  CHECK(term(r, "router input in fp32") == bytes(t * d * 4));
  CHECK(term(r, "router weight in fp32") == bytes(256 * d * 4));
  CHECK(term(r, "router scores") == bytes(t * 256 * 4));
  CHECK(term(r, "weighted expert outputs") == bytes(routed * d * 4));
  // SDPA's memory-efficient kernel keeps the value view, and with it all of kv_b_proj's output (nope + v)
  const activation_terms sdpa =
      layer_inventory(deepseek_v3, full_ft, one_sequence_2048(attention_impl::sdpa));
  CHECK(term(sdpa, "sdpa q, k, v") == bytes(t * heads * (2 * 192 + 128 + 128) * 2));
  CHECK(term(sdpa, "sdpa output") == bytes(t * heads * 128 * 2));
  // The model: 3 dense layers and 58 MoE layers, each priced as its own block
  const layer_group_list runs = layer_groups(deepseek_v3);
  const bytes dense = layer_inventory(runs.items[0].shape, full_ft, c).total();
  const bytes moe = layer_inventory(runs.items[1].shape, full_ft, c).total();
  CHECK(moe == r.total());
  CHECK(dense < moe);
  const activation_estimate e = estimate_activations(deepseek_v3, full_ft, c);
  CHECK(e.kept == dense * 3 + moe * 58 + e.model_level);
  CHECK(term(model_level_inventory(deepseek_v3, full_ft, c), "RoPE cos/sin") == bytes(2048 * 2 * 64 * 2));
  activation_config ckpt = c;
  ckpt.ckpt = checkpointing::full;
  const activation_estimate full = estimate_activations(deepseek_v3, full_ft, ckpt);
  CHECK(full.recompute == moe);  // the largest block is the one recomputed
  CHECK(full.layer == moe);
  // LoRA on the latent projections without checkpointing: over frozen embeddings the first (dense) layer's
  // q_a/kv_a inputs are not kept, but their outputs require grad, so both norms are.
  const training_setup lora = lora_on("q_a_proj,kv_a_proj_with_mqa");
  const activation_terms first = first_layer(runs.items[0].shape, lora, c);
  CHECK(term(first, "q_a_layernorm") == bytes(t * 1536 * 4 + t * 4));
  CHECK(term(first, "kv_a_layernorm") == bytes(t * 512 * 4 + t * 4));
  const activation_estimate le = estimate_activations(deepseek_v3, lora, c);
  CHECK(le.first_layer_saving == layer_inventory(runs.items[0].shape, lora, c).total() - first.total());
}

TEST_CASE(
    "Qwen2-MoE: the router, the shared expert and its gate keep one input, the gated product both operands",
    "[activations]") {
  // Qwen1.5-MoE-A2.7B (tests/data/configs/qwen1.5-moe-a2.7b.json): 60 experts of 1,408, top 4, a shared 5,632
  model_shape m = with_experts(dense(2048, 0, 24, 16, 16, 128, 151936, false), 60, 4, 1408);
  m.attention_bias = true;
  m.shared_expert_intermediate_size = 5632;
  const std::uint64_t t = 2048, d = 2048, sf = 5632;
  const activation_terms r = layer_inventory(m, full_ft, one_sequence_2048(attention_impl::flash));
  CHECK(term(r, "router and shared expert input") == bytes(t * d * 2));
  CHECK(term(r, "router input") == bytes(0));            // not listed apart
  CHECK(term(r, "shared expert gate") == bytes(t * 2));  // sigmoid's output
  CHECK(term(r, "shared expert output") == bytes(t * d * 2));
  // the routed experts' SwiGLU terms and the shared expert's are listed under the same names: t·4 rows and t
  CHECK(term(r, "gate_proj output") == bytes((t * 4) * 1408 * 2 + t * sf * 2));
}

TEST_CASE(
    "Llama-4: every expert runs on every token, the L2 q/k norm keeps fp32 copies, a NoPE layer its "
    "temperature",
    "[activations]") {
  const std::uint64_t t = 2048, d = 5120, E = 16, f = 8192;
  const activation_config c = one_sequence_2048(attention_impl::flash);
  const layer_group_list groups = layer_groups(llama4_scout);  // 36 MoE layers with RoPE, 12 NoPE
  REQUIRE(groups.size == 2);
  const activation_terms r = layer_inventory(groups.items[0].shape, full_ft, c);
  CHECK(term(r, "router and shared expert input") == bytes(t * d * 2));
  CHECK(term(r, "top-k indices") == bytes(t * 8));
  CHECK(term(r, "router sigmoid") == bytes(E * t * 4));
  CHECK(term(r, "routing weights") == bytes(E * t * 2));
  CHECK(term(r, "repeated tokens") == bytes(E * t * d * 2));
  CHECK(term(r, "experts input") == bytes(E * t * d * 2));
  CHECK(term(r, "experts gate_up output") == bytes(E * t * 2 * f * 2));
  CHECK(term(r, "experts act(gate)") == bytes(E * t * f * 2));
  CHECK(term(r, "experts down input") == bytes(E * t * f * 2));
  CHECK(term(r, "q L2 norm") == bytes(t * 40 * 128 * 4 + t * 40 * 4));
  CHECK(term(r, "k L2 norm") == bytes(t * 8 * 128 * 4 + t * 8 * 4));
  CHECK(term(r, "attn_scales") == bytes(0));
  // A NoPE layer: no L2 norm, q times the fp32 temperature (one value per position)
  const activation_terms nope = layer_inventory(groups.items[1].shape, full_ft, c);
  CHECK(term(nope, "q L2 norm") == bytes(0));
  CHECK(term(nope, "attn_scales") == bytes(2048 * 4));
  CHECK(nope.total() == r.total() - term(r, "q L2 norm") - term(r, "k L2 norm") + bytes(2048 * 4));
  // LoRA: the frozen experts keep neither bmm input; the rest stays
  const activation_terms lora = layer_inventory(groups.items[0].shape, lora16, c);
  CHECK(term(lora, "experts input") == bytes(0));
  CHECK(term(lora, "experts down input") == bytes(0));
  CHECK(term(lora, "repeated tokens") == bytes(E * t * d * 2));
  // The model: 36 + 12 layers; the complex64 freqs_cis once
  const activation_estimate e = estimate_activations(llama4_scout, full_ft, c);
  CHECK(e.kept == r.total() * 36 + nope.total() * 12 + e.model_level);
  CHECK(term(model_level_inventory(llama4_scout, full_ft, c), "RoPE freqs_cis") == bytes(2048 * 64 * 8));
  // Maverick's first layer is dense (its block has no experts)
  const layer_group_list maverick = layer_groups(llama4_maverick);
  CHECK(term(layer_inventory(maverick.items[0].shape, full_ft, c), "repeated tokens") == bytes(0));
  CHECK(term(layer_inventory(maverick.items[0].shape, full_ft, c), "gate_proj output") ==
        bytes(t * 16384 * 2));
}
