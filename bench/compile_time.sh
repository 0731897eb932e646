#!/usr/bin/env bash
# The compile-time budget: a translation unit that includes only <headroom/core.hpp> against an empty
# one, at -O2, best of five each. Target: under 0.5 s more than the empty file.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
printf 'int main() { return 0; }\n' >"$dir/empty.cpp"
printf '#include <headroom/core.hpp>\nint main() { return 0; }\n' >"$dir/core.cpp"
best() {
  local best=999
  for _ in 1 2 3 4 5; do
    local t0 t1
    t0=$(date +%s.%N)
    ${CXX:-g++} -std=c++17 -O2 -Iinclude -c "$1" -o "$dir/out.o"
    t1=$(date +%s.%N)
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN{print y-x}')" 'BEGIN{print (b<a)?b:a}')
  done
  echo "$best"
}
empty=$(best "$dir/empty.cpp")
core=$(best "$dir/core.cpp")
extra=$(awk -v a="$core" -v b="$empty" 'BEGIN{printf "%.3f", a-b}')
echo "compile_time_empty_s $empty"
echo "compile_time_core_s $core"
echo "compile_time_extra_s $extra (budget 0.5)"
awk -v e="$extra" 'BEGIN{exit !(e < 0.5)}'
