// SPDX-License-Identifier: MIT
// examples/03_embed.cpp through the header-only library: the same calls, for bench/compile_time.sh to time
// against the compiled library's header (compiled.hpp).
#include <cstdio>

#include <headroom/headroom.hpp>

int main() {
  using namespace headroom;
  const loaded_model model = load_preset("qwen3-4b", preset_search_path());
  run_config run;
  run.setup.method = training_method::qlora;
  run.activations.seq_len = 4096;
  const training_estimate e = estimate_training(model.spec, run);
  std::fputs(format_training_table(model, run, e, false).c_str(), stdout);
  std::puts(training_estimate_json(model, run, e).dump(2).c_str());
  const fit_answer longest = fit_largest(model.spec, run, bytes(24'000'000'000), fit_dimension::seq_len);
  std::printf("longest sequence in 24 GB: %llu tokens\n", static_cast<unsigned long long>(longest.largest));
}
