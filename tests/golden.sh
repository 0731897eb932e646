# Golden outputs (issue 27): sourced by cli_test.sh when it is given a golden directory. Every `expect` case is
# recorded whole (its output as given, and again with --json added or removed), then every file under the data
# directory is run through the programs, and the records are compared byte for byte with the committed ones.
# A golden that changes is a bug, or a deliberate correction listed with its reason in CHANGELOG.md.
# Uses cli_test.sh's variables: dir, data, golden, bin, passed, failed.

golden_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
golden_work=$(mktemp -d)

# Paths that differ from machine to machine become placeholders; nothing else is touched.
golden_normalise() {
  sed -e "s|$data|<data>|g" -e "s|$dir|<bin>|g" -e "s|$golden_root|<root>|g" \
    -e 's|/tmp/tmp\.[A-Za-z0-9]*|<tmp>|g'
}

# golden_record FILE NAME RC OUT ARGS...: one record, appended to FILE.
golden_record() {
  local file=$1 name=$2 rc=$3 out=$4
  shift 4
  {
    printf '=== %s\n$ %s' "$name" "$(basename "$bin")"
    (($#)) && printf ' %q' "$@"
    printf '\nexit %s\n%s\n' "$rc" "$out"
  } | golden_normalise >>"$golden_work/$file"
}

# golden_case NAME RC OUT ARGS...: the case as cli_test.sh ran it, then the other of text and JSON.
golden_case() {
  local name=$1 rc=$2 out=$3 prog
  shift 3
  prog=$(basename "$bin")
  golden_record "$prog.txt" "$name" "$rc" "$out" "$@"
  [[ $prog == memory_calculator || $prog == throughput_calculator ]] || return 0
  local toggled=() a had_json=0
  for a in "$@"; do
    if [[ $a == --json ]]; then had_json=1; else toggled+=("$a"); fi
  done
  ((had_json)) || toggled+=(--json)
  out=$(limited "$bin" "${toggled[@]}" 2>&1)
  local toggled_rc=$?  # taken at once: the label's own $(...) below would overwrite $?
  golden_record "$prog.txt" "$name (--json $( ((had_json)) && echo removed || echo added))" "$toggled_rc" \
    "$out" "${toggled[@]}"
}

# golden_file NAME PATH: a file a program wrote (an SVG chart).
golden_file() {
  { printf '=== %s: the file written\n' "$1"; cat "$2"; } | golden_normalise >>"$golden_work/files.txt"
}

# golden_run PROG ARGS...: a data file through PROG, as a text table and as JSON.
golden_run() {
  local bin=$dir/$1 out rc name=$1
  shift
  out=$("$bin" "$@" 2>&1)
  rc=$?  # taken at once: any $(...) in golden_record's arguments would overwrite $?
  golden_record data_files.txt "$name text" "$rc" "$out" "$@"
  out=$("$bin" "$@" --json 2>&1)
  rc=$?
  golden_record data_files.txt "$name json" "$rc" "$out" "$@" --json
}

# Every file under the data directory, through the flag that reads its kind.
golden_data() {
  local f base
  while IFS= read -r f; do
    base=$(basename "$f")
    case $f in
      */README.md | */checkpoints/*/model.safetensors* | */checkpoints/*/*.index.json) ;;  # read beside a config
      */hub/*) ;;  # a Hugging Face cache: read through --model (cli_test.sh)
      */recipes/acc_*.yaml) golden_run memory_calculator --accelerate-config "$f" ;;
      */recipes/ds_*.json) golden_run memory_calculator --deepspeed "$f" --gpus 8 ;;
      */recipes/*.yaml | */recipes/*.yml) golden_run memory_calculator --recipe "$f" ;;
      */args/*.json | */recipes/*.json) golden_run memory_calculator --training-args "$f" ;;
      *.json)
        golden_run memory_calculator --config "$f"
        golden_run throughput_calculator --config "$f" --gpu h100-sxm --method lora
        ;;
      *) echo "golden: no reader for $base (tests/golden.sh)" && failed=$((failed + 1)) ;;
    esac
  done < <(find "$data" -type f | LC_ALL=C sort)
}

# Compare (or, with HEADROOM_UPDATE_GOLDEN=1, rewrite) every golden file.
golden_finish() {
  golden_data
  local name
  if [[ ${HEADROOM_UPDATE_GOLDEN:-0} == 1 ]]; then
    mkdir -p "$golden" && rm -f "$golden"/*.txt
    cp "$golden_work"/*.txt "$golden"/
    echo "golden: rewrote $(ls "$golden_work" | wc -l) files in $golden"
  else
    while IFS= read -r name; do
      if cmp -s "$golden_work/$name" "$golden/$name"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1))
        echo "FAIL golden $name differs (first lines of the diff; HEADROOM_UPDATE_GOLDEN=1 rewrites):"
        diff -u "$golden/$name" "$golden_work/$name" 2>&1 | head -40
      fi
    done < <({ (cd "$golden_work" && ls -- *.txt) && (cd "$golden" && ls -- *.txt 2>/dev/null); } | LC_ALL=C sort -u)
  fi
  rm -rf "$golden_work"
}
