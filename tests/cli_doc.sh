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
  printf 'when given together, with an error naming both.\n\n'
  printf 'Numbers and names are taken as people write them (`include/headroom/number_text.hpp`, one parser for every\n'
  printf 'program): counts with thousands separators (`1,024`); lengths (`--seq-len`, `--ce-chunk`, a `seq-len` sweep)\n'
  printf 'also as `4k`, `32K`, `1.5k`, `1M` (k = 1024, as "a 4k context" means); token counts (`--tokens`) also as\n'
  printf '`1e9`, `2.5e9`, `500M`, `2B`, `1.5T` (decimal); memory sizes (`--budget-gb`, `--overhead-gb`) bare in GB or\n'
  printf 'with a unit that decides: `24GB` (10^9 bytes), `24GiB` (2^30), `512MiB`, `1TB`. Every other form is refused\n'
  printf 'with the accepted ones named. Choices, presets and GPUs are taken in any case on the command line (`--method\n'
  printf 'QLoRA`, `--preset Qwen3-8B`, `--gpu H100-SXM`); a near miss is answered with "did you mean" (`--gpu H100`:\n'
  printf '`h100-pcie`, `h100-sxm`). Keys in files keep their framework'"'"'s case.\n'
  printf '\nOutputs are checked: standard output is flushed before the exit code is returned, and a write that fails\n'
  printf '(a full disk, a closed stdout) is exit 2 with `error: standard output: cannot write (...)`. `--svg FILE` is\n'
  printf 'written under a temporary name beside FILE and renamed (a device such as `/dev/stdout` is written in place),\n'
  printf 'and is refused when FILE is a file the run reads (`--config`, `--model`, `--recipe`, `--training-args`,\n'
  printf '`--deepspeed`, `--accelerate-config`, `--lengths`).\n'
  printf '\nCharts (`--svg FILE`, `include/headroom/report/svg.hpp`): memory_calculator draws the peak-phase buckets of each\n'
  printf 'swept value as stacked bars (the sweep `seq-len=512:32768:x2` when `--sweep` is not given), titled with the model\n'
  printf 'and method, with a second line naming the GPU, micro-batch x length, precision, loss, layout and checkpointing. Y\n'
  printf 'ticks fall on 1, 2 or 5 times a power of ten, each with its unit (GB = 10^9 bytes). With a GPU or `--budget-gb` the\n'
  printf 'capacity is a dashed line labelled with its name and size beside the plot, bars over it are shaded, and the largest\n'
  printf 'value that fits is outlined and named; buckets that are zero at every value are left out of the legend. The table\n'
  printf 'is printed too, with `budget ...: K of N values do not fit; the largest that fits is ...`; the exit is 1 when a\n'
  printf 'value exceeds a given budget, 0 otherwise. lr_schedule labels the start, warmup end, decay start (WSD) and total\n'
  printf 'with their step and learning rate, and draws at most 2,001 evenly spaced steps (a schedule of 2^32 steps is a\n'
  printf 'chart of kilobytes). CI renders both charts to PNG and compares them with `tests/charts/*.png`, 16-pixel cell by\n'
  printf 'cell (`tests/charts/compare_png.py`).\n'
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
