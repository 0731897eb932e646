#!/usr/bin/env bash
# Builds and runs the benchmarks (Release, -O2), the Python baseline, and the compile-time check.
# Usage: bench/run.sh   (results go to stdout; docs/performance.md records a run)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DHEADROOM_BUILD_BENCHMARKS=ON -DHEADROOM_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench --target headroom_bench -j"$(nproc)" >/dev/null
taskset -c 0 ./build-bench/bench/headroom_bench --benchmark_min_time=0.5 2>/dev/null || ./build-bench/bench/headroom_bench
python3 bench/static_estimator.py
bash bench/compile_time.sh
