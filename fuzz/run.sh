#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a bounded time on a copy of
# its committed seed corpus. Usage: fuzz/run.sh [SECONDS per target, default 60]. A finding exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude
       "-DHEADROOM_PRESET_SOURCE_DIR=\"$PWD/presets\"")
targets=(config args cli deepspeed recipe)
# Compile on every core at once (each target is one slow translation unit), then fuzz one at a time.
printf '%s\n' "${targets[@]}" |
  xargs -P "$(nproc)" -I{} clang++ "${flags[@]}" "fuzz/{}_fuzz.cpp" -lfmt -lyaml-cpp -o "$out/{}_fuzz"
for target in "${targets[@]}"; do
  rm -rf "$out/corpus-$target" && cp -r "fuzz/corpus/$target" "$out/corpus-$target"
  echo "== fuzzing $target for ${seconds}s"
  "$out/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    "$out/corpus-$target" 2>&1 | tail -n 12
done
echo "fuzzing found nothing"
