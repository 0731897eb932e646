// SPDX-License-Identifier: MIT
// Example 01: the static training state of Llama-3.1-8B, from shapes written in code.
// Reads top to bottom: shapes → exact parameter count → buckets for full FT, LoRA and QLoRA.
#include <cstdio>

#include <fmt/format.h>

#include <headroom/core.hpp>

using namespace headroom;

// 1. Shapes from meta-llama/Llama-3.1-8B config.json (torchtune llama3_1 builders @ bd2a0fc7).
constexpr model_shape llama_3_1_8b() {
  model_shape m;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 14336;
  m.num_hidden_layers = 32;
  m.vocab_size = 128256;
  return m;
}

// 2. The exact count and the course's nominal size (Table 1 prices N = 8e9).
constexpr model_spec spec{llama_3_1_8b(), 8'000'000'000};
static_assert(parameter_count(spec.shape) == params(8'030'261'248));

int main(int argc, char** argv) {
  if (argc > 1) {  // the shapes are in the code: an argument is a mistake, not something to ignore
    fmt::print(stderr, "error: unexpected argument '{}'; usage: 01_static_memory (takes no arguments)\n",
               argv[1]);
    return 2;
  }
  // 3. Full fine-tuning, route A (bf16 weights + grads, fp32 master, fp32 AdamW m and v): W04.
  constexpr static_estimate full = estimate_static(spec, training_setup{});
  static_assert(full.buckets.static_bytes() == bytes(128'000'000'000));
  fmt::print("full fine-tuning  static {:.3f} GB\n", in_gb(full.buckets.static_bytes()));

  // 4. LoRA r16 on all seven linears: the base is frozen at 2 B/param, adapters pay 16 B (W10).
  training_setup lora;
  lora.method = training_method::lora;
  const static_estimate l = estimate_static(spec, lora);
  fmt::print("LoRA r16          static {:.3f} GB ({} adapter params)\n", in_gb(l.buckets.static_bytes()),
             l.adapter_params.count());

  // 5. QLoRA: NF4 with double quantisation, 4.127 bits/param derived from block sizes (W08, W11).
  training_setup qlora = lora;
  qlora.method = training_method::qlora;
  const static_estimate q = estimate_static(spec, qlora);
  fmt::print("QLoRA r16         static {:.3f} GB\n", in_gb(q.buckets.static_bytes()));

  // 6. The same with the exact 8.03B count: QLoRA then keeps embeddings and lm_head in bf16.
  const static_estimate qe = estimate_static(spec, qlora, params_basis::exact);
  fmt::print("QLoRA r16, exact  static {:.3f} GB\n", in_gb(qe.buckets.static_bytes()));
  return 0;
}
