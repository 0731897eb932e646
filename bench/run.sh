#!/usr/bin/env bash
# Builds and runs the benchmarks (CMake Release: -O3), instruction counts under callgrind, the Python
# baseline, and the compile-time check.
# Usage: bench/run.sh   (results go to stdout; docs/performance.md records a run)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DHEADROOM_BUILD_BENCHMARKS=ON -DHEADROOM_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench --target headroom_bench headroom_instructions -j"$(nproc)" >/dev/null
# Medians of 9 runs: the build machine is a shared VM whose speed drifts.
bench_args=(--benchmark_min_time=0.2 --benchmark_repetitions=9 --benchmark_report_aggregates_only=true)
taskset -c 0 ./build-bench/bench/headroom_bench "${bench_args[@]}" 2>/dev/null | grep -E "Benchmark|_median" ||
  ./build-bench/bench/headroom_bench "${bench_args[@]}"
if command -v valgrind >/dev/null; then bash bench/instructions.sh build-bench; fi
python3 bench/static_estimator.py
bash bench/compile_time.sh
