// SPDX-License-Identifier: MIT
// A user who wants only the numbers: headroom::core, no fmt or nlohmann_json needed.
#include <headroom/core.hpp>

int main() {
  headroom::model_shape m;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 14336;
  m.num_hidden_layers = 32;
  m.vocab_size = 128256;
  return headroom::parameter_count(m) == headroom::params(8'030'261'248) ? 0 : 1;
}
