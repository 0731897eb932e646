// SPDX-License-Identifier: MIT
// A user's program: loads an installed preset by name and checks W04 (128.0e9 bytes).
#include <cstdio>

#include <headroom/headroom.hpp>

int main() {
  const headroom::loaded_model m = headroom::load_preset("llama-3.1-8b-like", headroom::preset_search_path());
  const auto e = headroom::estimate_static(m.spec, headroom::training_setup{});
  std::printf("static_bytes %llu\n", static_cast<unsigned long long>(e.buckets.static_bytes().count()));
  return e.buckets.static_bytes() == headroom::bytes(128'000'000'000) ? 0 : 1;
}
