// SPDX-License-Identifier: MIT
// Runs one estimate N times for bench/instructions.sh, which counts the instructions under
// callgrind: a figure that does not move with the host's clock or its neighbours, unlike the
// nanoseconds of bench.cpp. Usage: headroom_instructions full|full-ft|static|step N
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <headroom/headroom.hpp>

using namespace headroom;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: headroom_instructions full|full-ft|static|step N\n");
    return 2;
  }
  const std::string_view what = argv[1];
  const long n = std::atol(argv[2]);
  const model_spec spec = load_preset("llama-3.1-8b-like", preset_search_path()).spec;
  run_config r;  // the benchmark's run: QLoRA r16 all-linear, s 4096 (full-ft: the default run)
  if (what != "full-ft") r.setup.method = training_method::qlora;
  r.activations.seq_len = 4096;
  const static_estimate statics = estimate_static(spec, r.setup, r.basis);
  const sharded_state sharded = shard_static(spec.shape, statics, r.setup, r.parallel);
  // The choice is made once, outside the loop: a string comparison per run would be counted as the
  // estimate's.
  const int kind = what == "static" ? 0 : what == "step" ? 1 : 2;
  std::uint64_t sum = 0;
  for (long i = 0; i < n; ++i) {
    asm volatile("" : : "g"(&spec), "g"(&r) : "memory");  // recompute every time: nothing hoisted
    if (kind == 0)
      sum += estimate_static(spec, r.setup, r.basis).buckets.static_bytes().count();
    else if (kind == 1)
      sum += estimate_training(spec, r, statics, sharded).total_bytes().count();
    else
      sum += estimate_training(spec, r).total_bytes().count();
  }
  std::printf("%llu\n", static_cast<unsigned long long>(sum));
  return 0;
}
