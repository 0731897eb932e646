#!/usr/bin/env bash
# docs/cli.md is the programs' --help, generated: this prints it (BIN_DIR), or with --check compares it with the
# committed file. Usage: cli_doc.sh BIN_DIR [--check DOC]. Regenerate: bash tests/cli_doc.sh build/examples > docs/cli.md
set -euo pipefail
dir=$1
generate() {
  printf '# Command-line reference\n\n'
  printf 'Generated from each program'"'"'s `--help` by `tests/cli_doc.sh`; the tests fail when it is stale.\n'
  printf 'Options are grouped as in the help; a value'"'"'s type follows the flag (`INT`, `NUMBER`, `FRACTION`, `GB`,\n'
  printf '`FILE`, `NAME`, `CHOICE`, ...) and its default follows `=`. Flags that exclude each other are refused\n'
  printf 'when given together, with an error naming both.\n'
  for prog in memory_calculator throughput_calculator lr_schedule; do
    printf '\n## %s\n\n```text\n' "$prog"
    "$dir/$prog" --help
    printf '```\n'
  done
}
if [[ ${2:-} == --check ]]; then
  if diff -u "$3" <(generate); then echo "docs/cli.md is current"; else
    echo "docs/cli.md is stale: bash tests/cli_doc.sh build/examples > docs/cli.md"; exit 1; fi
else
  generate
fi
