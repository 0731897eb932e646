// SPDX-License-Identifier: MIT
// A user who wants only the numbers: headroom::core, no fmt or nlohmann_json needed.
#include <headroom/core.hpp>

#include "../shapes.hpp"

int main() {
  return headroom::parameter_count(headroom::test::llama_3_1_8b) == headroom::params(8'030'261'248) ? 0 : 1;
}
