// SPDX-License-Identifier: MIT
// Google Benchmark: one full estimate (static + dynamic + peak), the --fit seq-len solver, a sweep of
// 10^6 configurations, and the CLI's work end to end (load a preset, estimate, print). Run by
// bench/run.sh, not by CI; results in docs/performance.md.
#include <benchmark/benchmark.h>
#include <cstdint>
#include <string>

#include <headroom/headroom.hpp>

using namespace headroom;

namespace {
const loaded_model& llama8() {
  static const loaded_model m = load_preset("llama-3.1-8b-like", preset_search_path());
  return m;
}
/// The benchmarked run: Llama-3.1-8B at s 4096 (bench/instructions.cpp counts the same one).
run_config run_with(training_method method) {
  run_config r;
  r.setup.method = method;
  r.activations.seq_len = 4096;
  return r;
}
run_config qlora_run() { return run_with(training_method::qlora); }

/// One whole estimate per iteration; the inputs are re-read every time, so nothing is hoisted.
void estimate_each_iteration(benchmark::State& state, run_config r) {
  const model_spec spec = llama8().spec;
  for (auto _ : state) {
    benchmark::DoNotOptimize(spec);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(estimate_training(spec, r).total_bytes());
  }
}
}  // namespace

static void full_estimate(benchmark::State& state) { estimate_each_iteration(state, qlora_run()); }
BENCHMARK(full_estimate);

static void full_estimate_full_ft(benchmark::State& state) {
  estimate_each_iteration(state, run_with(training_method::full));
}
BENCHMARK(full_estimate_full_ft);

static void static_estimate_only(benchmark::State& state) {
  const model_spec spec = llama8().spec;
  training_setup s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(spec);
    benchmark::DoNotOptimize(estimate_static(spec, s).buckets.static_bytes());
  }
}
BENCHMARK(static_estimate_only);

static void fit_seq_len(benchmark::State& state) {
  const model_spec spec = llama8().spec;
  const run_config r = qlora_run();
  for (auto _ : state) benchmark::DoNotOptimize(max_seq_len(spec, r, bytes(24'000'000'000)));
}
BENCHMARK(fit_seq_len);

static void sweep_one_million(benchmark::State& state) {
  const model_spec spec = llama8().spec;
  for (auto _ : state) {
    std::uint64_t fitting = 0;
    run_config r;
    for (std::uint64_t i = 0; i < 1'000'000; ++i) {  // methods x batch 1..8 x seq 256..32k x checkpointing
      r.setup.method = static_cast<training_method>(i % 3);
      r.activations.batch = 1 + (i / 3) % 8;
      r.activations.seq_len = 256 + (i / 24) % 32'513;
      r.activations.ckpt = (i / 780'312) % 2 == 0 ? checkpointing::full : checkpointing::none;
      fitting += fits(spec, r, bytes(80'000'000'000)) ? 1 : 0;
    }
    benchmark::DoNotOptimize(fitting);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1'000'000);
}
BENCHMARK(sweep_one_million)->Unit(benchmark::kMillisecond);

static void cli_end_to_end(benchmark::State& state) {
  const auto dirs = preset_search_path();
  for (auto _ : state) {
    const loaded_model m = load_preset("llama-3.1-8b-like", dirs);
    const run_config r = qlora_run();
    const training_estimate e = estimate_training(m.spec, r);
    benchmark::DoNotOptimize(format_training_table(m, r, e, false).size());
    benchmark::DoNotOptimize(training_estimate_json(m, r, e).dump().size());
  }
}
BENCHMARK(cli_end_to_end)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
