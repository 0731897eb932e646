#!/usr/bin/env bash
# The compile-time budgets (issue 27), at -O2, best of five each (the header-only embed: best of two):
#   core.hpp alone          under 0.5 s more than an empty file
#   examples/03_embed.cpp   at most 3x a file that only includes the dependencies' headers
#                           (nlohmann/json.hpp, fmt/format.h, yaml-cpp/yaml.h)
# and, for comparison, the same program through the header-only library (bench/embed_header_only.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
printf 'int main() { return 0; }\n' >"$dir/empty.cpp"
printf '#include <headroom/core.hpp>\nint main() { return 0; }\n' >"$dir/core.cpp"
printf '#include <fmt/format.h>\n#include <nlohmann/json.hpp>\n#include <yaml-cpp/yaml.h>\nint main() { return 0; }\n' \
  >"$dir/deps.cpp"
best() {
  local runs=$1 file=$2 best=999
  for ((i = 0; i < runs; ++i)); do
    local t0 t1
    t0=$(date +%s.%N)
    ${CXX:-g++} -std=c++17 -O2 -Iinclude -c "$file" -o "$dir/out.o"
    t1=$(date +%s.%N)
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN{print y-x}')" 'BEGIN{print (b<a)?b:a}')
  done
  echo "$best"
}
empty=$(best 5 "$dir/empty.cpp")
core=$(best 5 "$dir/core.cpp")
deps=$(best 5 "$dir/deps.cpp")
embed=$(best 5 examples/03_embed.cpp)
header_only=$(best "${HEADER_ONLY_RUNS:-2}" bench/embed_header_only.cpp)
extra=$(awk -v a="$core" -v b="$empty" 'BEGIN{printf "%.3f", a-b}')
ratio=$(awk -v a="$embed" -v b="$deps" 'BEGIN{printf "%.2f", a/b}')
echo "compile_time_empty_s $empty"
echo "compile_time_core_s $core"
echo "compile_time_core_extra_s $extra (budget 0.5)"
echo "compile_time_deps_only_s $deps"
echo "compile_time_03_embed_s $embed (compiled library's header)"
echo "compile_time_03_embed_ratio $ratio (budget 3 x the dependencies' headers)"
echo "compile_time_embed_header_only_s $header_only (the same program, header-only)"
awk -v e="$extra" -v r="$ratio" 'BEGIN{exit !(e < 0.5 && r <= 3)}'
