#!/usr/bin/env bash
# Instructions per estimate, counted by callgrind (deterministic for one binary, whatever the host is
# doing): the difference between 110,000 and 10,000 runs, divided by 100,000.
# Usage: bench/instructions.sh [build-dir]   (needs valgrind; bench/run.sh calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-build-bench}/bench/headroom_instructions
[ -x "$exe" ] || { echo "no $exe: run bench/run.sh (or build target headroom_instructions) first" >&2; exit 2; }
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$1" "$2" 2>&1 |
    awk '/Collected/ {gsub(",", "", $4); print $4}'
}
for what in full full-ft static step; do
  a=$(count "$what" 10000)
  b=$(count "$what" 110000)
  echo "instructions_per_${what//-/_} $(((b - a) / 100000))"
done
