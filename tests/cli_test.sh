#!/usr/bin/env bash
# End-to-end checks of memory_calculator: the issue's "done when" numbers and the exit-code
# contract (0 ok, 1 does not fit a given budget, 2 bad input). Usage: cli_test.sh BINARY DATA_DIR
set -u
bin=$1
data=$2
passed=0
failed=0

# expect NAME CODE PATTERN -- ARGS...: exit code CODE and PATTERN (grep -E) in stdout+stderr.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  if [[ $rc -eq $code ]] && grep -Eq -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: exit %s (want %s), pattern /%s/\n%s\n' "$name" "$rc" "$code" "$pattern" "$out"
  fi
}

p8=(--preset llama-3.1-8b-like)
expect "default table" 0 'static +128\.000' --
expect "W04 json" 0 '"static_bytes": 128000000000,' -- "${p8[@]}" --method full --json
expect "W04 exact" 0 '"static_bytes": 128484179968,' -- "${p8[@]}" --method full --json --exact-params
expect "W09 adapters" 0 '"adapter_params": 41943040,' -- "${p8[@]}" --method lora --rank 16 --json
expect "W10 LoRA" 0 '"static_bytes": 16671088640,' -- "${p8[@]}" --method lora --rank 16 --json
expect "W11 QLoRA" 0 '"static_bytes": 4798088640,' -- "${p8[@]}" --method qlora --rank 16 --json
expect "W14 1B LoRA" 0 '"static_bytes": 2180355072,' -- --preset llama-3.2-1b-like --method lora --json
expect "W14 1B QLoRA" 0 '"static_bytes": 696230072,' -- --preset llama-3.2-1b-like --method qlora --json
expect "W14 32B full" 0 '"static_bytes": 512000000000,' -- --preset qwen3-32b-like --json
expect "W14 32B LoRA" 0 '"static_bytes": 66147483648,' -- --preset qwen3-32b-like --method lora --json
expect "W14 32B QLoRA" 0 '"static_bytes": 18655483648,' -- --preset qwen3-32b-like --method qlora --json
expect "W14 70B full" 0 '"static_bytes": 1120000000000,' -- --preset llama-3.1-70b-like --json
expect "W14 70B LoRA" 0 '"static_bytes": 143313500160,' -- --preset llama-3.1-70b-like --method lora --json
expect "W14 70B QLoRA" 0 '"static_bytes": 39424750160,' -- --preset llama-3.1-70b-like --method qlora --json
expect "smoke" 0 '^0 of the course' -- --smoke
expect "GiB column" 0 'GiB \(2\^30 B\)' -- --gib
expect "qv targets" 0 '"adapter_params": 6815744,' -- "${p8[@]}" --method lora --targets q_proj,v_proj --json
expect "realistic QLoRA" 0 '"qlora_layout": "realistic"' -- "${p8[@]}" --method qlora --exact-params --json
expect "raw config.json" 0 '"params": 4022468096,' -- --config "$data/qwen3-4b-hf-config.json" --json
expect "preset dir" 0 '"name": "gemma-2-2b-no-tie-key"' -- --preset-dir "$data" --preset gemma-2-2b-no-tie-key --json
HEADROOM_PRESET_DIR=$data expect "env preset dir" 0 'gemma-2-2b-no-tie-key' -- --list-presets
expect "fits budget" 0 'fits: 128\.000 GB' -- "${p8[@]}" --budget-gb 141
expect "does not fit" 1 'does not fit: 128\.000 GB' -- "${p8[@]}" --budget-gb 80
expect "help" 0 'Usage' -- --help

expect "unknown preset" 2 "unknown 'llama-9b'.*llama-3.1-8b-like" -- --preset llama-9b
expect "unknown method" 2 "--method: unknown 'dora'; valid: full, lora, qlora" -- --method dora
expect "unknown optimizer" 2 "optimizer: unknown 'adam'; valid: adamw_torch" -- --optimizer adam
expect "negative rank" 2 "--rank: expected a positive integer, got '-5'" -- --method lora --rank=-5
expect "zero rank" 2 "--rank: expected a positive integer, got '0'" -- --method lora --rank 0
expect "fractional rank" 2 "--rank: expected a positive integer, got '1.5'" -- --method lora --rank 1.5
expect "text rank" 2 "--rank: expected a positive integer, got 'abc'" -- --method lora --rank abc
expect "absurd rank" 2 "rank: is absurdly large" -- --method lora --rank 99999999
expect "unknown target" 2 "target_modules: unknown module 'qkv'" -- --method lora --targets qkv
expect "NaN budget" 2 "--budget-gb: expected a positive number, got 'nan'" -- --budget-gb nan
expect "negative budget" 2 "--budget-gb: expected a positive number" -- --budget-gb=-3
expect "zero block" 2 "--optim-block-size: expected a positive integer" -- --optim-block-size 0
expect "malformed JSON" 2 "malformed\.json: malformed JSON at byte" -- --config "$data/malformed.json"
expect "negative field" 2 "negative_heads\.json: /num_attention_heads: must be a positive integer, got -32" -- \
  --config "$data/negative_heads.json"
expect "missing file" 2 "cannot open file" -- --config "$data/nope.json"
expect "unknown flag" 2 "error: " -- --no-such-flag
expect "preset and config" 2 "excludes" -- --preset qwen3-4b --config "$data/qwen3-4b-hf-config.json"
expect "both sources" 0 '"name": "qwen3-4b-hf-config"' -- --config "$data/qwen3-4b-hf-config.json" --json

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
