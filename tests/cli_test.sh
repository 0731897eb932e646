#!/usr/bin/env bash
# End-to-end checks of the example programs: the issues' "done when" numbers and the exit-code
# contract (0 ok, 1 does not fit a given budget, 2 bad input).
# Usage: cli_test.sh BIN_DIR DATA_DIR [GOLDEN_DIR]
# With GOLDEN_DIR, every case's whole output (as given, and with --json added or removed) and every file under
# DATA_DIR run through the programs are compared byte for byte with GOLDEN_DIR/*.txt (tests/golden/README.md);
# HEADROOM_UPDATE_GOLDEN=1 rewrites them instead.
set -u
dir=$1
data=$2
golden=${3:-}
# Hub ids resolve in the test cache only (tests/data/hub), never in the user's own (docs/presets.md).
export HF_HUB_CACHE=$data/hub
unset HUGGINGFACE_HUB_CACHE HF_HOME HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_ENDPOINT HF_HUB_DOWNLOAD_TIMEOUT
unset TRANSFORMERS_OFFLINE
# and nothing is downloaded but from the fake Hub of the download checks below (HF_HUB_OFFLINE unset there).
export HF_HUB_OFFLINE=1
lengths_csv=$data/../../examples/data/chat_lengths.csv
bin=$dir/memory_calculator
passed=0
failed=0
# shellcheck source=tests/golden.sh
[[ -n $golden ]] && source "$(dirname "$0")/golden.sh"

# limited EXE ARGS...: EXE under hostile-inputs.md's limits, so that a hang or a runaway allocation fails its case
# (issue 31, step 5): 20 s and 2 GB of address space; a sanitizer build (its shadow memory reserves terabytes of
# address space, and it runs several times slower) gets 120 s and no memory limit.
declare -A sanitized
limited() {
  [[ -n ${sanitized[$1]+x} ]] || { grep -q __asan_init "$1" && sanitized[$1]=1 || sanitized[$1]=0; }
  if ((sanitized[$1])); then timeout 120 "$@"; else (ulimit -v 2000000 && exec timeout 20 "$@"); fi
}

# expect NAME CODE PATTERN -- ARGS...: exit code CODE and PATTERN (grep -E) in stdout+stderr.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out rc
  out=$(limited "$bin" "$@" 2>&1)
  rc=$?
  [[ -n $golden ]] && golden_case "$name" "$rc" "$out" "$@"
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
expect "W04 exact" 0 '"static_bytes": 128484181132,' -- "${p8[@]}" --method full --json --exact-params
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
expect "GiB column" 0 'size GiB +at peak GB +at peak GiB' -- --gib
expect "qv targets" 0 '"adapter_params": 6815744,' -- "${p8[@]}" --method lora --targets q_proj,v_proj --json
expect "realistic QLoRA" 0 '"qlora_layout": "realistic"' -- "${p8[@]}" --method qlora --exact-params --json
expect "raw config.json" 0 '"params": 4022468096,' -- --config "$data/qwen3-4b-hf-config.json" --json
# Issue 32: a Hub id from the local cache, a revision, a model directory, and the misses.
snap=$data/hub/models--headroom-tests--Qwen3-4B/snapshots/4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b
expect "--model cached" 0 'model +headroom-tests/Qwen3-4B \(qwen3\), 4,022,468,096 parameters' -- --model headroom-tests/Qwen3-4B
expect "--model revision" 0 'headroom-tests/Qwen3-4B@refs/pr/1 \(qwen2\), 138,304' -- --model headroom-tests/Qwen3-4B@refs/pr/1
expect "--model json" 0 '"name": "headroom-tests/Qwen3-4B"' -- --model headroom-tests/Qwen3-4B --method qlora --json
expect "--model preset" 0 "'Qwen/Qwen3-4B' is not in the Hugging Face cache: priced with the preset qwen3-4b \(its shapes\); cache its config.json" -- --model Qwen/Qwen3-4B
expect "--model missing" 2 'not in the Hugging Face cache \(looked for .*models--nobody--nothing' -- --model nobody/nothing
expect "--model no revision" 2 "revision 'v2' is not in the cache" -- --model headroom-tests/Qwen3-4B@v2
expect "--model no config" 2 'has no config.json' -- --model headroom-tests/no-config
expect "--model bad id" 2 "--model: 'org/na--me': a Hub model id is ORG/NAME" -- --model org/na--me
expect "--model and --preset" 2 'excludes' -- --model headroom-tests/Qwen3-4B --preset qwen3-4b
expect "--config directory" 0 'model +headroom-tests/Qwen3-4B \(qwen3\)' -- --config "$snap"
expect "--config empty directory" 2 'must hold a config.json' -- --config "$data/hub"
# Architectures of issue 15 from their real config.json files, and the safetensors cross-check beside them.
expect "olmo2" 0 'olmo2\), 7,298,617,344 parameters' -- --config "$data/configs/olmo-2-1124-7b-instruct.json"
expect "granite" 0 'granite\), 8,170,864,640 parameters' -- --config "$data/configs/granite-3.3-8b-instruct.json"
expect "gpt-oss" 0 'gpt_oss\), 20,914,757,184 parameters' -- --config "$data/configs/gpt-oss-20b.json" --method qlora
expect "starcoder2" 0 'starcoder2\), 3,030,371,328 parameters' -- --config "$data/configs/starcoder2-3b.json"
expect "starcoder2 c_fc" 0 '"attention_dropout": true' -- --config "$data/configs/starcoder2-3b.json" --method lora --targets c_fc,c_proj --json
expect "starcoder2 compile" 2 'compile: StarCoder2' -- --config "$data/configs/starcoder2-3b.json" --compile
expect "pythia" 0 'gpt_neox\), 6,857,302,016 parameters' -- --config "$data/configs/pythia-6.9b.json"
expect "pythia targets" 0 'rank 8 on query_key_value,dense_h_to_4h' -- --config "$data/configs/pythia-160m.json" --method lora --rank 8 --targets query_key_value,dense_h_to_4h
expect "pythia default target" 0 'rank 16 on query_key_value: 589,824 adapter parameters' -- --config "$data/configs/pythia-160m.json" --method lora --targets query_key_value
expect "pythia ia3" 0 'IA3 on query_key_value,dense_4h_to_h \(feedforward_modules dense_4h_to_h\): 64,512 adapter parameters' -- --config "$data/configs/pythia-160m.json" --method lora --peft-type ia3 --targets query_key_value,dense_4h_to_h
expect "ia3 empty feedforward" 2 'target_modules|feedforward' -- "${p8[@]}" --method lora --peft-type ia3 --ia3-feedforward ""
expect "command-r" 0 'cohere\), 34,980,831,232 parameters' -- --config "$data/configs/c4ai-command-r-v01.json"
expect "command-r+" 0 '"params": 103810674688' -- --config "$data/configs/c4ai-command-r-plus.json" --method qlora --json
expect "deepseek-v3" 0 'deepseek_v3\), 671,026,404,352 parameters' -- --config "$data/configs/deepseek-v3.json"
expect "deepseek-v3 mtp note" 0 'num_nextn_predict_layers: .*not counted' -- --config "$data/configs/deepseek-v3.json"
expect "deepseek-v3 explain" 0 'the first 3 layers dense \(d_ff 18432\), then 58 MoE layers of 256 experts' -- --config "$data/configs/deepseek-v3.json" --explain
expect "deepseek MLA targets" 0 'rank 16 on q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj: 74,019,840 adapter parameters' -- --config "$data/configs/deepseek-v3.json" --method lora --rank 16 --targets q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj
expect "deepseek router not a linear" 2 'target_modules: matches no module' -- --config "$data/configs/deepseek-v3.json" --method lora --targets gate
expect "deepseek compile" 2 "compile: DeepSeek's MLA" -- --config "$data/configs/deepseek-v2-lite.json" --compile
expect "deepseek prefix" 2 'prefix tuning: MLA' -- --config "$data/configs/deepseek-v2-lite.json" --method lora --peft-type prefix-tuning --virtual-tokens 16
expect "deepseek-v2-lite" 0 '"params": 15706484224' -- --config "$data/configs/deepseek-v2-lite.json" --method qlora --json
expect "qwen1.5-moe" 0 'qwen2_moe\), 14,315,784,192 parameters' -- --config "$data/configs/qwen1.5-moe-a2.7b.json"
expect "qwen2-moe shared gate target" 0 'rank 8 on shared_expert_gate: ' -- --config "$data/configs/qwen2-57b-a14b.json" --method lora --rank 8 --targets shared_expert_gate
expect "command-r7b" 0 'cohere2\), 8,028,033,024 parameters' -- --config "$data/configs/c4ai-command-r7b-12-2024.json"
expect "command-r7b window" 0 'sliding_window 4096: attention priced as full causal attention' -- --config "$data/configs/c4ai-command-r7b-12-2024.json"
expect "kimi-k2" 0 'kimi_k2\), 1,026,408,209,408 parameters' -- --config "$data/configs/kimi-k2-instruct.json"
expect "gpt-oss sdpa" 2 "attention: gpt-oss's sinks run in eager attention or a FlashAttention kernel" -- --config "$data/configs/gpt-oss-20b.json" --attention sdpa
expect "llama4 scout" 0 'llama4\), 108,641,793,536 parameters' -- --config "$data/configs/llama-4-scout-17b-16e-instruct.json"
expect "llama4 explain" 0 'Llama-4  48 MoE layers \(one in 1\) of 16 experts \(k 1, width 8192\) beside a shared expert, 0 dense' -- --config "$data/configs/llama-4-scout-17b-16e-instruct.json" --explain
expect "llama4 maverick" 0 'Llama-4  24 MoE layers \(one in 2\) of 128 experts' -- --config "$data/configs/llama-4-maverick-17b-128e-instruct.json" --explain
expect "llama4 note" 0 'every expert on every token' -- --config "$data/configs/llama-4-maverick-17b-128e-instruct.json"
expect "llama4 compile" 2 "compile: Llama-4's blocks" -- --config "$data/configs/llama-4-scout-17b-16e-instruct.json" --compile
expect "llama4 prefix" 2 "prefix tuning: Llama-4" -- --config "$data/configs/llama-4-scout-17b-16e-instruct.json" --method lora --peft-type prefix-tuning --virtual-tokens 16
expect "gemma3 images" 0 'seq-len 512 \+ 2 images x 256 tokens' -- --config "$data/configs/gemma-3-4b-it.json" --seq-len 512 --images 2
expect "images on a text model" 2 'images: the model has no vision tower' -- --images 1
expect "tower under lora" 2 '--train-vision-tower: trains the tower by full fine-tuning' -- --config "$data/configs/gemma-3-4b-it.json" --method lora --train-vision-tower
expect "tower without images" 2 'train_vision_tower: the tower gets gradients only from images' -- --config "$data/configs/gemma-3-4b-it.json" --train-vision-tower
expect "tower trains" 0 '\(the vision tower trains\)' -- --config "$data/configs/gemma-3-4b-it.json" --train-vision-tower --images 1
expect "gemma3 multimodal" 0 'gemma3\), 4,300,079,472 parameters' -- --config "$data/configs/gemma-3-4b-it.json"
expect "gemma3 note" 0 'note +Gemma-3 multimodal: the language model from text_config \(3,880,263,168' -- --config "$data/configs/gemma-3-4b-it.json" --method full
expect "checkpoint match" 0 'checkpoint model.safetensors.index.json total_size / 2 bytes: 7,298,617,344 parameters, as the shapes give' -- --config "$data/checkpoints/olmo2-index/config.json"
expect "checkpoint mismatch" 0 'checkpoint warning: model.safetensors.index.json metadata.total_parameters holds 8,171,192,320' -- --config "$data/checkpoints/granite-mismatch/config.json"
expect "checkpoint json" 0 '"warnings": \[' -- --config "$data/checkpoints/granite-mismatch/config.json" --json
expect "checkpoint single" 0 'model.safetensors header: 80,448 parameters' -- --config "$data/checkpoints/tiny-single/config.json"
expect "preset dir" 0 '"name": "gemma-2-2b-no-tie-key"' -- --preset-dir "$data" --preset gemma-2-2b-no-tie-key --json
HEADROOM_PRESET_DIR=$data expect "env preset dir" 0 'gemma-2-2b-no-tie-key' -- --list-presets
expect "fits budget" 0 'budget +200\.000 GB: fits, headroom 38\.490 GB' -- "${p8[@]}" --budget-gb 200
expect "does not fit" 1 'budget +80\.000 GB: does not fit, over by 81\.510 GB' -- "${p8[@]}" --budget-gb 80
expect "fits json" 0 '"headroom_bytes": 38490' -- "${p8[@]}" --budget-gb 200 --json
expect "gpu budget" 1 '"budget_bytes": 80000000000' -- "${p8[@]}" --gpu h100-sxm --json

# Dynamic memory (issue 3): the course's activation table (W16-W18) and the logits (W20).
q4=(--preset qwen3-4b --method lora --batch 1 --seq-len 2048 --activation-formula korthikanti)
expect "W16 eager" 0 '"activations": 30576476160,' -- "${q4[@]}" --eager-attention --no-checkpointing --json
expect "W17 flash" 0 '"activations": 6417285120,' -- "${q4[@]}" --no-checkpointing --json
expect "W18 checkpointing" 0 '"with_recompute_bytes": 555745280' -- "${q4[@]}" --json
expect "W20 naive logits" 0 '"logits": 14935916552,' -- --preset qwen3-4b --method lora --seq-len 8192 --json
expect "fused logits" 0 '"logits": 161710080,' -- --preset qwen3-4b --method lora --seq-len 8192 --fused-ce --json
expect "cce logits" 0 '"loss": "cce"' -- --preset qwen3-4b --method lora --seq-len 8192 --fused-ce cce --json
expect "chunked" 0 '"ce_chunk": 512,' -- --preset qwen3-4b --method lora --ce-chunk 512 --json
expect "peak phase" 0 '"peak_phase": "backward_start"' -- --preset qwen3-4b --method qlora --seq-len 16384 --json
expect "lengths padded" 0 'the longest padded batch sets the peak: 4 x 6000 tokens' -- --preset qwen3-1.7b --method lora --batch 4 --seq-len 16384 --lengths "$lengths_csv"
expect "lengths packed" 0 '"peak_seq_len": 16384' -- --preset qwen3-1.7b --method lora --batch 4 --seq-len 4096 --lengths "$lengths_csv" --batching padding-free --json
expect "lengths batching" 2 "--batching: unknown 'ffd'" -- --lengths "$lengths_csv" --batching ffd
expect "lengths fit" 2 '--lengths: sets the micro-batch shape' -- --lengths "$lengths_csv" --fit seq-len --budget-gb 80
expect "checkpoint-offload" 0 'OffloadActivations over checkpointed blocks.*\(the scope is training_step.*pinned host RAM = 3\.244 GB' -- --preset qwen3-4b --method lora --seq-len 4096 --checkpointing checkpoint-offload --offload-scope step --explain
expect "offload scope needs offload" 2 '--offload-scope: needs an offloading mode' -- --offload-scope step
expect "load fp32-cast peak" 0 'peak phase: load' -- --method lora --load-path fp32-cast
expect "load explain" 0 'load     torchao-nf4: weights 4\.127 GB \+ transient 0\.363 GB' -- --method qlora --load-path torchao-nf4 --explain
expect "load json" 0 '"transient_bytes": 124780544' -- --method qlora --load-path bnb-4bit --json
expect "load advice" 1 'one lever  load in bf16: fp32 checkpoint cast on the GPU' -- --method lora --load-path fp32-cast --budget-gb 30
expect "load wrong method" 2 'load_path: bnb-4bit loads a 4-bit base' -- --method full --load-path bnb-4bit
expect "load sharded" 2 '--load-path: prices one GPU' -- --method lora --load-path direct --gpus 2 --zero 3
expect "load unknown" 2 "--load-path: unknown 'safetensors'" -- --load-path safetensors
expect "fsdp2 comm" 0 'comm     gathered 2\.101 GB \+ staging 1\.051 GB.*FSDP2 unit gradients' -- --gpus 8 --fsdp full_shard --fsdp-version 2 --explain
expect "ddp buckets json" 0 '"reduce_bytes": 16000000000' -- --gpus 2 --json
expect "nccl json" 0 '"nccl": 308281344' -- --gpus 2 --json
expect "fsdp version needs fsdp" 2 '--fsdp-version: needs --fsdp' -- --fsdp-version 2
expect "overlap needs zero" 2 '--overlap-comm: needs --zero' -- --gpus 2 --overlap-comm on
expect "fsdp version unknown" 2 "--fsdp-version: unknown '3'" -- --gpus 2 --fsdp full_shard --fsdp-version 3
# FSDP1 unit by unit (docs/parallel.md): accelerate's no_sync keeps every unit's unsharded gradient per rank.
fsdp1=("${p8[@]}" --method full --precision bf16-pure --exact-params --gpus 8 --fsdp full_shard --grad-accum 4)
expect "fsdp1 no_sync" 0 'grads +16\.933 +16\.061' -- "${fsdp1[@]}"
expect "fsdp1 sync each batch" 0 'grads +2\.008 ' -- "${fsdp1[@]}" --sync-each-batch
expect "sync each batch needs fsdp" 2 '--sync-each-batch: needs --fsdp' -- --sync-each-batch
# Every rank loads the whole model, then wraps it: the load phase is the per-GPU peak.
expect "fsdp1 load" 0 'peak phase: load' -- "${fsdp1[@]}" --sync-each-batch --load-path direct
expect "fsdp1 load explain" 0 'wrap +FSDP1 wrapping the whole model \(16\.061 GB\)' -- "${fsdp1[@]}" --sync-each-batch --load-path direct --explain
# bf16-mixed under FSDP1 is MixedPrecision: fp32 slices are the master copy, units gathered in bf16.
expect "fsdp1 mixed precision" 0 'master +0\.000 +0\.000' -- "${fsdp1[@]/bf16-pure/bf16-mixed}" --sync-each-batch
# use_orig_params (the Trainer's default): the optimizer steps rank 0's views of the original parameters.
expect "fsdp1 orig params" 0 '"use_orig_params": true' -- "${fsdp1[@]}" --sync-each-batch --fsdp-use-orig-params --json
expect "orig params needs fsdp" 2 '--fsdp-use-orig-params: needs --fsdp' -- --fsdp-use-orig-params
expect "orig params fsdp2" 2 "--fsdp-use-orig-params: is FSDP1's flag" -- --gpus 2 --fsdp full_shard --fsdp-version 2 --fsdp-use-orig-params
expect "dora transient" 0 '"module_transient_bytes": 1762525184' -- --method lora --adapter-dtype fp32 --peft-type dora --json
expect "dora explain" 0 'DoRA: the base output, saved by' -- --method lora --peft-type dora --explain
expect "peft type unknown" 2 "--peft-type: 'loha' is not modelled yet; valid: lora, dora" -- --method lora --peft-type loha
expect "p-tuning" 0 'P-tuning: 20 virtual tokens from an MLP encoder.*50,425,856 adapter parameters' -- --method lora --peft-type p-tuning --virtual-tokens 20
expect "p-tuning encoder" 0 'once      prompt encoder +327,680 B' -- --method lora --peft-type p-tuning --virtual-tokens 20 --explain
expect "p-tuning width" 0 '"encoder_hidden_size": 512' -- --method lora --peft-type p-tuning --virtual-tokens 20 --encoder-hidden-size 512 --json
expect "prefix tuning" 0 '1,310,720 adapter parameters' -- --method lora --peft-type prefix-tuning --virtual-tokens 20
expect "prefix no checkpointing" 0 'checkpointing none \| activations' -- --method lora --peft-type prefix-tuning --virtual-tokens 20
expect "prefix keys" 0 'attention reads 2048 \+ 20 prefix keys' -- --method lora --peft-type prefix-tuning --virtual-tokens 20 --explain
expect "prefix cache" 0 'forward-only .* = 271,056,896 B' -- --method lora --peft-type prefix-tuning --virtual-tokens 20 --attention sdpa --explain
expect "prefix projection" 0 '68,244,480 adapter parameters' -- --method lora --peft-type prefix-tuning --virtual-tokens 20 --prefix-projection
expect "prefix checkpointing" 2 'PREFIX_TUNING does not work with gradient checkpointing' -- --method lora --peft-type prefix-tuning --virtual-tokens 20 --checkpointing full
expect "prefix compile" 2 'compile: prefix tuning' -- --method lora --peft-type prefix-tuning --virtual-tokens 20 --compile
expect "projection without prefix" 2 '--prefix-projection: needs --peft-type prefix-tuning' -- --method lora --peft-type p-tuning --virtual-tokens 4 --prefix-projection
expect "encoder width without encoder" 2 '--encoder-hidden-size: needs --peft-type p-tuning or prefix-tuning' -- --method lora --peft-type prompt-tuning --virtual-tokens 4 --encoder-hidden-size 64
expect "prefix no tokens" 2 '--virtual-tokens: is required with --peft-type prefix-tuning' -- --method lora --peft-type prefix-tuning
expect "peft type typo" 2 "--peft-type: unknown 'ia4' \\(did you mean 'ia3'\\?\\); valid: lora, dora, lora-fa, ia3" -- --method lora --peft-type ia4
expect "ia3 json" 0 '"feedforward_modules": "down_proj"' -- --method lora --peft-type ia3 --targets k_proj,v_proj,down_proj --json
expect "ia3 explain" 0 'IA3: the base output, saved for the vector' -- --method lora --peft-type ia3 --targets k_proj,v_proj,down_proj --explain
expect "ia3 subset" 2 'feedforward_modules: must be a subset of target_modules' -- --method lora --peft-type ia3 --targets k_proj,v_proj --ia3-feedforward down_proj
expect "ia3 dropout" 2 'lora_dropout: applies to LoRA and VeRA only' -- --method lora --peft-type ia3 --lora-dropout 0.1
expect "vera explain" 0 'shared vera_A, vera_B' -- --method lora --peft-type vera --rank 256 --explain
expect "ln tuning" 0 '"peft_type": "ln-tuning"' -- --method lora --peft-type ln-tuning --json
expect "prompt tokens" 0 'blocks and loss see seq-len \+ 16' -- --method lora --peft-type prompt-tuning --virtual-tokens 16
expect "pissa init" 0 '"init_transient_bytes": 1007828992' -- --method lora --init-lora-weights pissa --json
expect "pissa explain" 0 'init     init_lora_weights pissa' -- --method lora --init-lora-weights pissa --explain
expect "pissa qlora" 2 'init_lora_weights: PiSSA needs a 16- or 32-bit base' -- --method qlora --init-lora-weights pissa
expect "init unknown" 2 "--init-lora-weights: unknown 'svd'; valid: gaussian" -- --method lora --init-lora-weights svd
expect "compile json" 0 '"compile": true' -- --compile --json
expect "compile explain" 0 'compiled torch.compile: AOTAutograd' -- --compile --explain
expect "compile moe" 2 'compile: MoE blocks' -- --preset qwen3-30b-a3b --compile
expect "compile eager" 2 'compile: eager / sdpa-math attention' -- --compile --eager-attention
expect "prompt no tokens" 2 '--virtual-tokens: is required with --peft-type prompt-tuning' -- --method lora --peft-type prompt-tuning
expect "lora-fa json" 0 '"peft_type": "lora-fa"' -- --method lora --peft-type lora-fa --json
expect "dora full" 2 '--peft-type: configures adapters, and --method full' -- --peft-type dora
expect "offload host" 0 'in pinned host RAM' -- --preset qwen3-4b --checkpointing offload
expect "advisor" 1 'biggest bucket at the peak: optimizer' -- "${p8[@]}" --method full --budget-gb 24
expect "advisor fits" 1 'fits with +--method lora' -- "${p8[@]}" --method full --budget-gb 24
expect "advisor json" 1 '"found": true' -- "${p8[@]}" --method full --budget-gb 24 --json
# Issue 28: full fine-tuning keeps its method while a static-state lever fits; one lever at a time; a lever when
# --fit finds nothing; the optimizer in backward never exits 2; the chunked-loss note only where it helps.
expect "advisor stays full" 1 'one lever  optimizer offload: .* -> 31\.495 GB, fits' -- --preset qwen3-8b --seq-len 4096 --gpu h100-sxm
expect "advisor offload flags" 1 'fits with +--method full .* --zero 3 --offload-optimizer' -- --preset qwen3-8b --seq-len 4096 --gpu h100-sxm
expect "advisor combined" 1 'no lever fits alone; the cheapest combination' -- --preset qwen3-4b --method lora --batch 16 --seq-len 8192 --no-checkpointing --budget-gb 24
expect "advisor in backward" 1 'one lever  halve the micro-batch: micro-batch 4 -> 2, accumulation 1 -> 1' -- --recipe "$data/recipes/tt_llama3_2_1b_full_single_device.yaml" --gpu rtx-3090
expect "fit zero lever" 1 'fit        with that advice, the longest seq-len that fits: [1-9]' -- --preset llama-3.1-70b-like --method lora --fit seq-len --gpu h100-sxm
expect "fit zero json" 1 '"max_seq_len_with_advice": [1-9]' -- --preset llama-3.1-70b-like --method lora --fit seq-len --gpu h100-sxm --json
expect "chunked note helps" 0 'chunked_nll, which lowers this peak to' -- --preset qwen3-4b --method lora --seq-len 8192
expect "bf16 on T4" 2 'no bf16 support: use fp16 with loss scaling' -- --gpu t4
expect "unknown gpu" 2 "gpu: unknown 'h300' \\(did you mean 'h200'\\?\\); valid: a100-40gb" -- --gpu h300
expect "fit needs budget" 2 '--fit: needs a budget' -- --fit seq-len
expect "unknown fit" 2 "--fit: unknown 'rank'" -- --fit rank --budget-gb 24
expect "unknown attention" 2 "--attention: unknown 'xformers'; valid: eager, sdpa, flash" -- --attention xformers
expect "unknown checkpointing" 2 "--checkpointing: unknown 'some'" -- --checkpointing some
expect "bad fused" 2 "--fused-ce: unknown 'naive'; valid: liger, cce" -- --fused-ce naive
expect "zero seq" 2 "--seq-len: expected a positive integer, got '0'" -- --seq-len 0
# Issue 32: numbers and names as people write them (docs/cli.md).
expect "seq-len 4k" 0 'micro-batch 1 x seq-len 4096 ' -- --seq-len 4k
expect "seq-len 32,768" 0 'micro-batch 1 x seq-len 32768 ' -- --seq-len 32,768
expect "seq-len bad suffix" 2 "--seq-len: expected a positive integer such as 4096 or 32,768, or with k = 1024" -- --seq-len 4kb
expect "batch no suffix" 2 "--batch: expected a positive integer, got '4k'" -- --batch 4k
expect "budget GiB" 0 'budget +214\.748 GB: fits' -- --budget-gb 200GiB
expect "budget GB unit" 1 'budget +80\.000 GB: does not fit' -- --budget-gb 80GB
expect "budget bare G" 2 "--budget-gb: expected a size in GB such as 24 or 0\.5, or with its unit: 24GB, 24GiB" -- --budget-gb 24G
expect "sweep 1k" 0 '^2048,' -- --sweep seq-len=1k:4k:x2 --csv
expect "method any case" 0 'method +qlora' -- --method QLoRA
expect "preset any case" 0 'model +qwen3-8b \(qwen3\)' -- --preset Qwen3-8B
expect "gpu any case" 1 'budget +80\.000 GB' -- --gpu H100-SXM
expect "gpu did you mean" 2 "gpu: unknown 'H100' \(did you mean 'h100-pcie', 'h100-sxm'\?\)" -- --gpu H100
expect "method did you mean" 2 "--method: unknown 'qlor' \(did you mean 'qlora'\?\)" -- --method qlor
expect "optimizer did you mean" 2 "optimizer: unknown 'adamw_torh' \(did you mean 'adamw_torch'\?\)" -- --optimizer adamw_torh
expect "absurd seq" 2 "--seq-len: is absurdly large" -- --seq-len 1099511627776
expect "zero batch" 2 "--batch: expected a positive integer" -- --batch 0
expect "NaN overhead" 2 "--overhead-gb: expected a size in GB such as 24 or 0.5, .*got 'nan'" -- --overhead-gb nan
expect "overhead override" 0 '"measured_override": true' -- --overhead-gb 2 --json

# --fit answers exactly, and moves the right way with --fused-ce and --no-checkpointing.
fit() { "$bin" --preset qwen3-4b --method qlora --budget-gb 24 --fit seq-len --json "$@" | sed -n 's/.*"max_seq_len": \([0-9]*\).*/\1/p'; }
plain=$(fit); fused=$(fit --fused-ce); nockpt=$(fit --no-checkpointing)
if [[ -n $plain && $fused -gt $plain && $nockpt -lt $plain && $nockpt -gt 0 ]]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL fit ordering: plain=$plain fused=$fused no-ckpt=$nockpt"; fi
expect "fit boundary" 0 "fits 24\.000 GB: $plain \($((plain + 1)) needs 24\.0" -- --preset qwen3-4b --method qlora --budget-gb 24 --fit seq-len
expect "fit batch" 0 '"max_batch": [1-9]' -- --preset qwen3-4b --method qlora --budget-gb 24 --fit batch --json
expect "help" 0 'Usage' -- --help
expect "help groups" 0 'Method and adapters:' -- --help
expect "help typed" 0 '--rank INT=16 ' -- --help
expect "help without exclusion lists" 0 'Parallelism:' -- --help
if "$bin" --help | grep -q 'Excludes'; then failed=$((failed + 1)); echo "FAIL help lists Excludes"; else passed=$((passed + 1)); fi

expect "unknown preset" 2 "unknown 'llama-9b'.*llama-3.1-8b-like" -- --preset llama-9b
expect "unknown method" 2 "--method: unknown 'dora' \\(did you mean 'lora'\\?\\); valid: full, lora, qlora" -- --method dora
expect "unknown optimizer" 2 "optimizer: unknown 'adam' \\(did you mean 'adamw_torch', 'adamw_torch_fused', 'adamw_8bit', \\.\\.\\.\\?\\); valid: adamw_torch" -- --optimizer adam
expect "negative rank" 2 "--rank: expected a positive integer, got '-5'" -- --method lora --rank=-5
expect "zero rank" 2 "--rank: expected a positive integer, got '0'" -- --method lora --rank 0
expect "fractional rank" 2 "--rank: expected a positive integer, got '1.5'" -- --method lora --rank 1.5
expect "text rank" 2 "--rank: expected a positive integer, got 'abc'" -- --method lora --rank abc
expect "absurd rank" 2 "rank: is absurdly large" -- --method lora --rank 99999999
expect "unknown target" 2 "target_modules: unknown module 'qkv'" -- --method lora --targets qkv
expect "NaN budget" 2 "--budget-gb: expected a size in GB such as 24 or 0.5, .*got 'nan'" -- --budget-gb nan
expect "negative budget" 2 "--budget-gb: expected a size in GB.*got '-3'" -- --budget-gb=-3
expect "zero block" 2 "--optim-block-size: expected a positive integer" -- --optim-block-size 0
expect "malformed JSON" 2 "malformed\.json: malformed JSON at line [0-9]+, column [0-9]+ \(byte" -- --config "$data/malformed.json"
expect "negative field" 2 "negative_heads\.json: /num_attention_heads: must be a positive integer, got -32" -- \
  --config "$data/negative_heads.json"
expect "missing file" 2 "cannot open file" -- --config "$data/nope.json"
expect "unknown flag" 2 "error: " -- --no-such-flag
expect "preset and config" 2 "excludes" -- --preset qwen3-4b --config "$data/qwen3-4b-hf-config.json"
expect "both sources" 0 '"name": "qwen3-4b-hf-config"' -- --config "$data/qwen3-4b-hf-config.json" --json

# Issue 5: every architecture's config.json alone, and TRL-style training args.
for cfg in qwen2.5-0.5b mixtral-8x7b phi-3-mini-4k gemma-3-1b; do
  expect "config $cfg" 0 'total \(peak\)' -- --config "$data/configs/$cfg.json"
done
expect "args qlora" 0 'method     qlora \| precision bf16-pure' -- --preset qwen3-4b --training-args "$data/args/sft-qlora.json"
expect "args ignored" 0 'ignored fields \(not used by the estimate\): output_dir, report_to' -- --preset qwen3-4b --training-args "$data/args/sft-qlora.json"
expect "args defaults" 0 'TRL loads the model in float32' -- --training-args "$data/args/sft-defaults.json"
expect "args json" 0 '"config_class": "SFTConfig"' -- --training-args "$data/args/sft-defaults.json" --json
expect "args names the model" 0 'model +headroom-tests/Qwen3-4B \(qwen3\)' -- --training-args "$data/args/trl-script-cached-model.json"
expect "args model flag wins" 0 'model +qwen3-1.7b' -- --preset qwen3-1.7b --training-args "$data/args/trl-script-cached-model.json"
expect "args bad" 2 'per_device_train_batch_size: must be a positive integer, got -2' -- --training-args "$data/args/bad-batch.json"
rec=$data/recipes
expect "lf tower" 0 '\(the vision tower trains\)' -- --recipe "$rec/lf_gemma3_full_tower.yaml" --config "$data/configs/gemma-3-4b-it.json" --images 1
expect "deepspeed z3 offload" 0 'zero3' -- --preset qwen3-1.7b --method full --batch 2 --grad-accum 4 --gpus 8 --deepspeed "$rec/ds_z3_offload_llamafactory.json"
expect "deepspeed warning" 0 'warning: deepspeed: zero_optimization.stage3_prefetch_bucket_size: not modelled' -- --preset qwen3-1.7b --method full --gpus 8 --deepspeed "$rec/ds_z3_offload_llamafactory.json"
expect "deepspeed auto" 0 'deepspeed: zero_optimization.reduce_bucket_size "auto": hidden_size² = 4194304' -- --preset qwen3-1.7b --method full --gpus 8 --deepspeed "$rec/ds_z3_offload_llamafactory.json"
expect "deepspeed ignored" 0 'deepspeed: ignored keys \(not used by the estimate\): .*gradient_clipping' -- --preset qwen3-1.7b --method full --gpus 8 --deepspeed "$rec/ds_z2_llamafactory.json"
expect "deepspeed json" 0 '"ignored_keys"' -- --preset qwen3-1.7b --method full --gpus 8 --deepspeed "$rec/ds_z2_llamafactory.json" --json
expect "deepspeed gpus implied" 0 'x 2 GPUs|2 GPUs' -- --preset qwen3-1.7b --method full --batch 4 --grad-accum 8 --deepspeed "$rec/ds_explicit.json"
expect "deepspeed mismatch" 2 'train_micro_batch_size_per_gpu: 4 mismatches the training arguments. per_device_train_batch_size = 8' -- --preset qwen3-1.7b --method full --batch 8 --grad-accum 8 --deepspeed "$rec/ds_explicit.json"
expect "deepspeed syntax" 2 'ds_broken_syntax.json: malformed JSON at line 3' -- --method full --deepspeed "$rec/ds_broken_syntax.json"
expect "deepspeed stage" 2 '/zero_optimization/stage: must be a whole number from 0 to 3' -- --method full --deepspeed "$rec/ds_broken_stage.json"
expect "deepspeed excludes zero" 2 'excludes' -- --method full --gpus 4 --zero 2 --deepspeed "$rec/ds_z2_llamafactory.json"
expect "deepspeed in args" 0 'args: deepspeed: train_micro_batch_size_per_gpu "auto"' -- --preset qwen3-1.7b --training-args "$rec/sft_with_deepspeed.json"
expect "deepspeed twice" 2 'names a DeepSpeed config already' -- --preset qwen3-1.7b --training-args "$rec/sft_with_deepspeed.json" --deepspeed "$rec/ds_z2_llamafactory.json"
# Recipes (issue 13): one file per framework gives an estimate with no other flag; bad files exit 2 naming
# file, line and key; --framework and the assumed profile; accelerate configs.
expect "recipe torchtune" 0 'profile    torchtune \(the recipe' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml"
expect "recipe torchtune total" 0 'total \(peak\) +21\.494' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml"
expect "recipe torchtune seq fallback" 0 'priced at 4096 tokens' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml" --seq-len 4096
expect "recipe torchtune distributed" 0 'sharding full_shard' -- --recipe "$rec/tt_qwen3_8b_lora.yaml" --gpus 4
# torchtune's Llama-4 (issue 28): LoRAGroupedExperts adapts all 16 experts of each layer (about 542 M adapters).
scout=(--recipe "$rec/tt_llama4_scout_17b_16e_lora.yaml" --config "$data/configs/llama-4-scout-17b-16e-instruct.json" --gpus 8)
expect "torchtune llama4 experts" 0 'rank 16 on q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj: 541,851,648 adapter parameters' -- "${scout[@]}"
expect "torchtune llama4 routed" 0 "torchtune's MoE: each expert runs on its routed tokens only" -- "${scout[@]}" --explain
expect "torchtune llama4 dora" 2 "use_dora: torchtune's LoRAGroupedExperts has no DoRA" -- "${scout[@]}" --set model.use_dora=True
expect "recipe axolotl" 0 'profile    axolotl' -- --recipe "$rec/ax_llama3_qlora_1b.yml"
expect "recipe llama-factory" 0 'profile    llama-factory' -- --recipe "$rec/lf_qwen3_lora_sft.yaml"
expect "recipe llama-factory deepspeed" 0 'sharding zero3' -- --recipe "$rec/lf_qwen3_full_sft_ds3.yaml" --gpus 2
expect "recipe unsloth" 0 'checkpointing unsloth' -- --recipe "$rec/us_llama3_1_8b_qlora.yaml"
expect "recipe model override" 0 'qwen3-1.7b' -- --recipe "$rec/lf_qwen3_lora_sft.yaml" --preset qwen3-1.7b
expect "recipe json" 0 '"from": "recipe"' -- --recipe "$rec/ax_llama3_lora_1b.yml" --json
expect "recipe set" 0 'micro-batch 2 x seq-len 1024 \(accumulation 1\).*torch.compile' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml" --set tokenizer.max_seq_len=1024 gradient_accumulation_steps=1 compile=True
expect "recipe set bad" 2 '\-\-set model.lora_rank: must be a positive integer' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml" --set model.lora_rank=0
expect "set needs recipe" 2 'requires --recipe|--set requires' -- --set compile=True
expect "recipe bad line" 2 'tt_broken_rank.yaml:4: model.lora_rank: must be a positive integer' -- --recipe "$rec/tt_broken_rank.yaml"
expect "recipe bad syntax" 2 'tt_broken_syntax.yaml:3: malformed YAML' -- --recipe "$rec/tt_broken_syntax.yaml"
expect "flags over recipe" 0 'adapters   rank 4 on all-linear: 8,257,536 adapter parameters in fp32' -- --recipe "$rec/lf_qwen3_lora_sft.yaml" --rank 4
expect "flags over torchtune recipe" 0 'micro-batch 1 x seq-len 512 .*loss linear-ce' -- --recipe "$rec/tt_llama3_1_8b_lora_single_device.yaml" --batch 1 --seq-len 512
expect "recipe missing" 2 'cannot open file' -- --recipe "$rec/nope.yaml"
expect "framework torchtune" 0 'profile: torchtune' -- --framework torchtune --method lora
expect "framework keeps flags" 0 'attention eager' -- --framework torchtune --method lora --attention eager
expect "framework unknown" 2 'valid: hf-trainer, trl, peft, torchtune, axolotl, llama-factory, unsloth' -- --framework deepspeed
expect "framework excludes recipe" 2 "--framework: 'trl' differs from the recipe's framework, llama-factory" -- --framework trl --recipe "$rec/lf_qwen3_lora_sft.yaml"
expect "framework of the recipe" 0 'profile    llama-factory' -- --framework llama-factory --recipe "$rec/lf_qwen3_lora_sft.yaml"
expect "framework of the args file" 0 'profile: trl' -- --framework trl --training-args "$data/args/sft-qlora.json"
expect "framework against args file" 2 "differs from the training-args file \(SFTConfig\)'s framework, trl" -- --framework torchtune --training-args "$data/args/sft-qlora.json"
expect "assumed profile" 0 'profile    none given' --
expect "profile sensitivity" 0 'under --framework torchtune +[0-9.]+ GB \(-[0-9]+%\)' --
expect "accelerate fsdp" 0 'sharding full_shard' -- --preset qwen3-1.7b --accelerate-config "$rec/acc_fsdp.yaml"
expect "accelerate deepspeed" 0 'sharding zero2' -- --preset qwen3-1.7b --accelerate-config "$rec/acc_deepspeed.yaml"
expect "accelerate with recipe" 0 'for 8 GPUs' -- --recipe "$rec/lf_qwen3_lora_sft.yaml" --accelerate-config "$rec/acc_fsdp2_offload.yaml"
expect "three files" 0 'data 2 x tensor 1 x pipeline 1, sharding zero3' -- --preset qwen3-1.7b --training-args "$data/args/sft-defaults.json" --deepspeed "$rec/ds_z3_llamafactory.json" --accelerate-config "$rec/acc_multi_gpu.yaml"
expect "accelerate gpus differ" 2 'differs from .*num_processes \(2\)' -- --accelerate-config "$rec/acc_fsdp.yaml" --gpus 4
expect "accelerate bad" 2 'acc_broken_strategy.yaml:4: fsdp_config.fsdp_sharding_strategy' -- --accelerate-config "$rec/acc_broken_strategy.yaml"
expect "accelerate fsdp and deepspeed" 2 'sets FSDP, and a DeepSpeed config is given too' -- --preset qwen3-1.7b --training-args "$rec/sft_with_deepspeed.json" --accelerate-config "$rec/acc_fsdp.yaml"
expect "accelerate ddp with deepspeed" 0 'sharding zero2' -- --preset qwen3-1.7b --method full --accelerate-config "$rec/acc_multi_gpu.yaml" --deepspeed "$rec/ds_z2_llamafactory.json"
expect "hf-trainer file" 0 'profile    hf-trainer \(TrainingArguments' -- --training-args "$data/args/trainer-full.json"
expect "peft example file" 0 'profile    trl \(SFTConfig.s defaults. PEFT.s for the adapters\)' -- --preset mistral-7b-v0.3 --training-args "$rec/peft_sft_qlora.json"
expect "training-args profile" 0 'profile    trl \(SFTConfig' -- --training-args "$data/args/sft-qlora.json"
expect "accelerate as recipe" 2 'is an accelerate config' -- --recipe "$rec/acc_fsdp.yaml"
expect "directory without config.json" 2 'a model directory must hold a config.json' -- --config "$data"
expect "flags over args" 0 'method     lora' -- --training-args "$data/args/sft-defaults.json" --method lora
expect "flags over args batch" 0 'micro-batch 4 x seq-len 4096 \(accumulation 8\)' -- --preset qwen3-4b --training-args "$data/args/sft-qlora.json" --batch 4 --seq-len 4096

# Issues 11 and 12: the runtime and trainer mechanisms, from flags and from training-args files.
expect "in backward" 0 'optimizer step fused, in backward' -- "${p8[@]}" --optimizer adamw_torch_fused --optimizer-in-backward
expect "in backward peak" 0 'peak phase: backward_start' -- "${p8[@]}" --optimizer adamw_torch_fused --optimizer-in-backward
expect "in backward json" 0 '"optimizer_in_backward": true' -- "${p8[@]}" --optimizer-in-backward --json
expect "in backward accum" 2 'optimizer_in_backward: cannot be combined with gradient_accumulation_steps' -- "${p8[@]}" --optimizer-in-backward --grad-accum 2
expect "args in backward" 0 'in backward \(one parameter at a time\)' -- --training-args "$data/args/full-in-bwd.json"
expect "args in backward accum" 2 'optimizer_in_backward' -- --training-args "$data/args/in-bwd-accum.json"
expect "impl note" 0 'note: optimizer step: foreach assumed .* fused 129\.527 GB' -- "${p8[@]}"
expect "impl peaks json" 0 '"impl": "fused",' -- "${p8[@]}" --json
expect "impl refused" 2 'optimizer_impl: torch has no fused kernel' -- "${p8[@]}" --optimizer rmsprop --optimizer-impl fused
expect "linear-ce loss" 0 'loss linear-ce' -- --preset qwen3-4b --method lora --seq-len 8192 --loss linear-ce
expect "linear-ce logits" 0 '"logits": 6221606424,' -- --preset qwen3-4b --method lora --seq-len 8192 --loss linear-ce --json
expect "cpu runtime" 0 'runtime    cpu kernels, torch 1.13' -- "${p8[@]}" --device cpu --torch 1.13
expect "fp32 adapters" 0 'adapter parameters in fp32, lora_dropout 0.05' -- "${p8[@]}" --method lora --adapter-dtype fp32 --lora-dropout 0.05

# Across GPUs: a 70B full fine-tune reports the GPUs it needs under ZeRO-3 and FSDP with CPU offload.
expect "solve gpus zero3" 0 'zero3 +[0-9]+$' -- --preset llama-3.1-70b-like --method full --gpu h100-sxm --solve-gpus
expect "solve gpus fsdp" 0 'fsdp full_shard \+ cpu offload +[0-9]+' -- --preset llama-3.1-70b-like --method full --gpu h100-sxm --solve-gpus
expect "solve cheapest" 0 'cheapest +.* on [0-9]+ GPU' -- --preset llama-3.1-70b-like --method full --gpu h100-sxm --solve-gpus
expect "unknown type with family" 0 '"model_type": "my_llama_variant"' -- --config "$data/unknown_model_type_with_family.json" --json
expect "solve json" 0 '"layout": "zero3"' -- --preset llama-3.1-70b-like --gpu h100-sxm --solve-gpus --json
expect "zero3 per gpu" 0 '"sharding": "zero3"' -- --preset llama-3.1-70b-like --gpus 32 --zero 3 --json
expect "fsdp offload host" 0 'CPU offload keeps' -- --preset llama-3.1-70b-like --gpus 4 --fsdp full_shard --offload-optimizer --offload-params
expect "tp sp" 0 '"tensor_parallel": 8' -- --preset llama-3.1-70b-like --tp 8 --sp --json
# The input contract (issue 15): empty values, conflicting flags, impossible layouts, decimal syntax.
expect "empty value" 2 '--virtual-tokens: is empty' -- --virtual-tokens ''
expect "empty zero" 2 '--zero: is empty' -- --zero ''
expect "empty recipe" 2 '--recipe: is empty' -- --recipe ''
expect "no-checkpointing and checkpointing" 2 'excludes --checkpointing|--checkpointing excludes' -- --no-checkpointing --checkpointing full
expect "eager and attention" 2 'excludes --attention|--attention excludes' -- --eager-attention --attention flash
expect "full with targets" 2 '--targets: configures adapters, and --method full' -- --method full --targets q_proj
expect "full with rank" 2 '--rank: configures adapters' -- --rank 8
expect "double quant needs qlora" 2 '--no-double-quant: applies to a 4-bit base' -- --method lora --no-double-quant
expect "zero on one gpu" 2 '--zero: shards over the data-parallel GPUs, and --gpus is 1' -- --zero 2
expect "fsdp on one gpu" 2 '--fsdp: shards over the data-parallel GPUs' -- --fsdp full_shard
expect "zero offload on one gpu" 0 'CPU offload keeps 128.000 GB' -- --zero 2 --offload-optimizer
expect "tp not dividing" 2 'tensor_parallel: must divide the attention heads and the KV heads \(the model has 32 and 8. tensor_parallel is 3\)' -- --tp 3
expect "tp above kv heads" 2 'tensor_parallel: must divide' -- --tp 16
expect "pp above layers" 2 'pipeline_parallel: is above the layer count \(32 layers' -- --pp 64
expect "overhead zero" 0 'total \(peak\)' -- --overhead-gb 0
expect "overhead hex" 2 "--overhead-gb: expected a size in GB such as 24 or 0.5, .*got '0x1'" -- --overhead-gb 0x1
expect "overhead sign" 2 '--overhead-gb: expected a size in GB' -- --overhead-gb +2
expect "overhead space" 2 '--overhead-gb: expected a size in GB' -- --overhead-gb ' 2'
expect "overhead exponent" 0 'total \(peak\)' -- --overhead-gb 1e1
expect "budget zero" 2 '--budget-gb: expected a positive number' -- --budget-gb 0
expect "missing model_type" 2 '/model_type: missing' -- --config "$data/args/sft-defaults.json"
expect "bad zero" 2 "--zero: unknown '4'" -- --zero 4
expect "bad fsdp" 2 "--fsdp: unknown 'zero3'" -- --fsdp zero3
expect "offload needs sharding" 2 '--offload-optimizer: needs --zero or --fsdp' -- --offload-optimizer
expect "params offload" 2 'offload_params: needs parameter sharding' -- --zero 2 --offload-params
expect "solve needs budget" 2 '--solve-gpus: needs a budget' -- --solve-gpus

# Output people would rather look at: sweeps as CSV, SVG charts, --explain.
svg=$(mktemp --suffix=.svg)
expect "sweep table" 1 '16384 +37\.107 GB  backward_start  does not fit' -- --preset qwen3-4b --method qlora --gpu rtx-4090 --sweep seq-len=1024:32768:x2
expect "sweep csv" 0 '^seq_len,weights,adapter_weights,grads,master,optimizer,activations,logits,temporaries,overhead,total_bytes,peak_phase$' -- --preset qwen3-4b --method qlora --sweep seq-len=512:2048:x2 --csv
expect "sweep batch" 0 '^4,' -- --preset qwen3-4b --method qlora --sweep batch=1:4 --csv
expect "svg written" 0 '' -- --preset qwen3-4b --method qlora --svg "$svg"
[[ -n $golden ]] && golden_file "svg written" "$svg"
if grep -q '</svg>' "$svg"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL svg content"; fi
# Issue 32: --svg alone draws the default sweep and says so; 1 only when a given budget is exceeded, said.
expect "svg alone" 0 "^chart      $svg\$" -- --svg "$svg"
expect "svg over a gpu" 1 'budget     24.000 GB: 2 of 7 values do not fit; the largest that fits is seq-len 8192' -- --preset qwen3-4b --method qlora --gpu rtx-4090 --svg "$svg"
[[ -n $golden ]] && golden_file "svg over a gpu" "$svg"
if grep -q '>largest fit</text>' "$svg" && grep -q '>rtx-4090 24 GB</text>' "$svg" && grep -q '>over rtx-4090</text>' "$svg" &&
  grep -q '>20 GB</text>' "$svg" && ! grep -q '>temporaries</text>' "$svg"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL svg marks: largest fit, capacity label with its unit, shade, 1-2-5 ticks, no empty bucket"; fi
expect "svg in the budget" 0 'budget     80.000 GB: 0 of 7 values do not fit; the largest that fits is seq-len 32768' -- --preset qwen3-4b --method qlora --gpu h100-sxm --svg "$svg"
expect "bad sweep" 2 "--sweep: unknown dimension 'rank'" -- --sweep rank=1:8
expect "bad sweep step" 2 '--sweep: a geometric step must be at least x2' -- --sweep seq-len=512:1024:x1
expect "explain" 0 'per layer flash-attn q, k, v' -- --preset qwen3-4b --method lora --explain
expect "explain optimizer" 0 'optimizer adamw_torch: 2 state' -- --preset qwen3-4b --explain
rm -f "$svg"

# Issue 31: every output is checked, and no file the run reads is written over.
out_dir=$(mktemp -d)
cp "$data/qwen3-4b-hf-config.json" "$out_dir/config.json"
expect "svg over its config" 2 "--svg: '.*/config.json' is a file this run reads; refusing to write over it" -- --config "$out_dir/config.json" --svg "$out_dir/config.json"
if cmp -s "$data/qwen3-4b-hf-config.json" "$out_dir/config.json"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL the config was written over"; fi
expect "svg into a missing folder" 2 "--svg: cannot write '.*/missing/chart.svg': No such file or directory" -- --svg "$out_dir/missing/chart.svg"
expect "svg to a full disk" 2 "--svg: cannot write '/dev/full': No space left on device" -- --svg /dev/full
[[ -z $(ls -A "$out_dir" | grep -v '^config.json$') ]] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL a temporary file was left: $(ls -A "$out_dir")"; }
# Issue 31, step 1: limits at every reader (docs/errors.md "Limits"), from ../shared/validation/hostile-inputs.md.
hostile=$(mktemp -d)
nest() { python3 -c "import sys; print('{\"$1\": ' + '[' * $2 + ']' * $2 + '}')"; }
nest hidden_size 100000 >"$hostile/deep.json"
expect "CR-01 deep config" 2 'deep.json: /hidden_size: nested deeper than the limit of 256 levels' -- --config "$hostile/deep.json"
nest per_device_train_batch_size 100000 >"$hostile/args.json"
expect "CR-02 deep training args" 2 'args.json: /per_device_train_batch_size: nested deeper than the limit of 256 levels' -- --training-args "$hostile/args.json"
nest train_micro_batch_size_per_gpu 100000 >"$hostile/ds.json"
expect "CR-04 deep deepspeed" 2 'ds.json: /train_micro_batch_size_per_gpu: nested deeper than the limit' -- --deepspeed "$hostile/ds.json"
printf 'base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nmicro_batch_size: 1\nloop: &x [1, *x]\n' >"$hostile/selfref.yaml"
expect "CR-11 self alias" 2 'selfref.yaml:4: loop: alias \*x refers to its own anchor &x' -- --recipe "$hostile/selfref.yaml"
printf 'base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nmicro_batch_size: 1\nloop: &x {b: *x}\n' >"$hostile/selfref2.yaml"
expect "CR-15 self alias map" 2 'selfref2.yaml:4: loop.b: alias \*x refers to its own anchor &x' -- --recipe "$hostile/selfref2.yaml"
printf 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config: &x {inner: *x}\n' >"$hostile/acc.yaml"
expect "CR-13 accelerate self alias" 2 'acc.yaml:3: fsdp_config.inner: alias \*x refers to its own anchor &x' -- --preset qwen3-1.7b --accelerate-config "$hostile/acc.yaml"
expect "CR-14 --set self alias" 2 '^error: --set micro_batch_size: alias \*a refers to its own anchor &a' -- --recipe "$rec/ax_llama3_lora_1b.yml" --set 'micro_batch_size=&a [*a]'
python3 -c "
L=['base_model: NousResearch/Llama-3.2-1B','adapter: lora','micro_batch_size: 1','a0: &a0 [x,x,x,x,x,x,x,x,x]']
for i in range(1,10): L.append('a%d: &a%d [%s]'%(i,i,','.join(['*a%d'%(i-1)]*9)))
open('$hostile/laughs.yaml','w').write('\n'.join(L)+'\n')"
expect "CR-16 billion laughs" 2 'laughs.yaml:[0-9]+: a[0-9]: alias expansion exceeds the limit of 100000 nodes' -- --recipe "$hostile/laughs.yaml"
echo 999999999999 >"$hostile/long.csv"
expect "CR-17 absurd length" 2 'long.csv:1: length 999999999999 is absurdly large \(limit 67108864 tokens\)' -- --preset qwen3-1.7b --lengths "$hostile/long.csv"
echo '[18446744073709551615]' >"$hostile/huge.json"
expect "CR-18 absurd length json" 2 'huge.json: /0: length 18446744073709551615 is absurdly large' -- --preset qwen3-1.7b --lengths "$hostile/huge.json"
mkfifo "$hostile/fifo.csv"
expect "CR-20 lengths fifo" 2 'fifo.csv: is not a regular file' -- --preset qwen3-1.7b --lengths "$hostile/fifo.csv"
expect "CR-22 lengths device" 2 '/dev/zero: is not a regular file' -- --preset qwen3-1.7b --lengths /dev/zero
awk 'BEGIN { for (i = 1; i <= 1000000; ++i) print (i * 7919) % 2048 + 1 }' >"$hostile/m1.csv"
printf '{"packing":true,"max_length":2048,"per_device_train_batch_size":8,"model_init_kwargs":{"attn_implementation":"flash_attention_2"}}' >"$hostile/packbfd.json"
expect "CR-24 bfd of a million lengths" 0 'the packed length sets the peak: 1 x 16384 tokens' -- --preset qwen3-1.7b --training-args "$hostile/packbfd.json" --lengths "$hostile/m1.csv"
expect "API-14 fit beyond the cap" 2 '^error: budget: holds even seq_len 67108864, the largest the estimate prices' -- --preset qwen3-1.7b --method qlora --fit seq-len --budget-gb 1e9
printf '\xef\xbb\xbf512\n1024\n' >"$hostile/bom.csv"
expect "lengths BOM" 0 '^lengths +2 sequences from .*: .*1 x 1024 tokens' -- --preset qwen3-1.7b --lengths "$hostile/bom.csv"
# Issue 31, step 3: misleading messages (MI-*) name the flag, file or key.
expect "MI-04 denormal dropout" 2 "^error: --lora-dropout: '4e-324' is out of range: a nonzero value below 1e-30" -- --method lora --lora-dropout 4e-324
expect "MI-09 bucket as DeepSpeed writes it" 0 'zero3' -- --zero 3 --gpus 2 --reduce-bucket-size 5e8
python3 -c "import sys; s=open(sys.argv[1]).read(); open(sys.argv[2],'w').write(s.replace('\"vocab_size\": 128256', '\"vocab_size\": 1' + '0' * 400))" "$data/../../presets/llama-3.1-8b-like.json" "$hostile/bignum.json"
expect "MI-06 number overflow" 2 "bignum.json: /vocab_size: number out of range \('10000000000000000\.\.\.', 401 characters\)" -- --config "$hostile/bignum.json"
printf '{"zero_optimization":{"stage":1e400}}' >"$hostile/st1e400.json"
expect "MI-47 deepspeed number overflow" 2 "st1e400.json: /zero_optimization/stage: number out of range \('1e400'" -- --deepspeed "$hostile/st1e400.json" --gpus 2
printf '{"train_batch_size":8388608}' >"$hostile/tbs.json"
expect "MI-15 train_batch_size" 2 'tbs.json: /train_batch_size: 8388608 gives a data-parallel degree of 8388608 GPUs' -- --deepspeed "$hostile/tbs.json"
printf 'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 0\n' >"$hostile/z0.yaml"
expect "MI-16 accelerate zero_stage 0" 0 'sharding +none' -- --accelerate-config "$hostile/z0.yaml"
expect "MI-42 fsdp_version 3" 2 "^error: --set fsdp_config.fsdp_version: unknown '3'; valid: 1, 2" -- --recipe "$rec/ax_llama3_lora_1b.yml" --set 'fsdp_config.fsdp_version=3' --gpus 2
printf '{"fsdp":"full_shard","fsdp_config":{"fsdp_version":7}}' >"$hostile/fv7.json"
expect "MI-44 training args fsdp_version 7" 2 "fv7.json: /fsdp_config: /fsdp_version: unknown '7'; valid: 1, 2" -- --training-args "$hostile/fv7.json" --gpus 2
cp "$data/../../presets/llama-3.1-8b-like.json" "$hostile/bad"$'\xff'"name.json"
expect "MI-29 file name not UTF-8" 0 '"origin": ".*/bad.name.json"' -- --config "$hostile/bad"$'\xff'"name.json" --json
# Issue 31, step 3: flags that conflict or need another are refused naming both (SI-*).
expect "SI-04 ce-chunk against loss" 2 '^error: --ce-chunk: needs --loss chunked, got --loss liger' -- --loss liger --ce-chunk 256
expect "SI-05 fused-ce and loss" 2 '^error: --fused-ce: and --loss chunked: give one of them' -- --fused-ce cce --loss chunked
expect "SI-06 fit and sweep" 2 '^error: --fit: and --sweep ask different questions' -- --fit seq-len --budget-gb 80 --sweep seq-len=512:1024
expect "SI-07 fit and solve-gpus" 2 '^error: --fit: and --solve-gpus ask different questions' -- --solve-gpus 8 --fit seq-len --budget-gb 80
expect "SI-08 csv without sweep" 2 '^error: --csv: needs --sweep' -- --csv
expect "SI-10 smoke with a flag" 2 '^error: --smoke: takes no other option \(got --batch\)' -- --smoke --batch 0
expect "SI-11 list-presets with a config" 2 '^error: --list-presets: takes no other option \(got --config\)' -- --list-presets --config /nonexistent
expect "SI-12 fit and svg" 2 '^error: --fit: and --svg ask different questions' -- --fit seq-len --budget-gb 80 --svg "$hostile/fit.svg"
expect "SI-14 sp over a short sequence" 2 '^error: --sp: seq-len 3 must be a multiple of --tp 8' -- --tp 8 --sp --seq-len 3
expect "SI-22 nccl channels on one GPU" 2 '^error: --nccl-channels: needs more than one GPU' -- --nccl-channels 64
expect "SI-41 preset-dir a file" 2 "^error: --preset-dir: '.*llama-3.1-8b-like.json' is not a directory" -- --preset-dir "$data/../../presets/llama-3.1-8b-like.json"
mkdir "$hostile/empty"
expect "SI-43 preset-dir empty" 2 "^error: --preset-dir: '.*/empty' holds no preset files" -- --preset-dir "$hostile/empty"
# Issue 31, step 3: files that contradict themselves (SI-23..38, MI-25, MI-39).
printf '{"fsdp":"full_shard shard_grad_op"}' >"$hostile/fsdp2w.json"
expect "SI-23 two fsdp shardings" 2 'fsdp2w.json: /fsdp: full_shard and shard_grad_op exclude each other' -- --training-args "$hostile/fsdp2w.json" --gpus 2
printf '{"gradient_checkpointing_kwargs":"garbage"}' >"$hostile/gck.json"
expect "SI-24 checkpointing kwargs" 2 'gck.json: /gradient_checkpointing_kwargs: must be an object' -- --training-args "$hostile/gck.json"
grep -v '^micro_batch_size\|^sequence_len' "$rec/ax_llama3_lora_1b.yml" >"$hostile/merge.yaml"
printf 'defaults: &d\n  micro_batch_size: 16\n  sequence_len: 8192\n<<: *d\n' >>"$hostile/merge.yaml"
expect "SI-25 merge keys" 0 'micro-batch 16 x seq-len 8192' -- --recipe "$hostile/merge.yaml"
{ grep -v '^bf16:\|^fp16:' "$rec/ax_llama3_lora_1b.yml"; printf 'bf16: true\nfp16: true\n'; } >"$hostile/bf16fp16.yml"
expect "SI-26 bf16 and fp16" 2 'bf16fp16.yml:[0-9]+: fp16: and bf16 are both true; give one' -- --recipe "$hostile/bf16fp16.yml"
{ cat "$rec/ax_llama3_lora_1b.yml"; printf 'bf16: true\nfp16: true\n'; } >"$hostile/bf16again.yml"
expect "SI-26 as reproduced: bf16 twice" 2 'bf16again.yml:[0-9]+: bf16: duplicate key \(first at line [0-9]+\)' -- --recipe "$hostile/bf16again.yml"
{ cat "$rec/ax_llama3_lora_1b.yml"; printf -- '---\nmicro_batch_size: 64\n'; } >"$hostile/twodoc.yml"
expect "SI-27 a second document" 2 'twodoc.yml:[0-9]+: a second YAML document' -- --recipe "$hostile/twodoc.yml"
printf ',molel_name.or_path: someone/Secret-Mo$del-13B\nasgte: sft\n' >"$hostile/loadall.yaml"
expect "malformed YAML that hung yaml-cpp's LoadAll" 2 'loadall.yaml: expected a YAML mapping of config keys at the top level' -- --recipe "$hostile/loadall.yaml"
printf 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config: "FULL_SHARD"\n' >"$hostile/accstr.yaml"
expect "SI-28 accelerate fsdp_config string" 2 'accstr.yaml:3: fsdp_config: must be a mapping, got "FULL_SHARD"' -- --accelerate-config "$hostile/accstr.yaml"
sed '/^fsdp_config:/a\  use_orig_params: true' "$rec/ax_llama3_1b_fft_fsdp2_offload.yml" >"$hostile/ax_fv2orig.yml"
expect "SI-29 orig params on FSDP2" 2 "ax_fv2orig.yml:[0-9]+: fsdp_config: fsdp_config.use_orig_params: is FSDP1's setting; fsdp_version is 2" -- --recipe "$hostile/ax_fv2orig.yml" --gpus 2
{ cat "$rec/ax_llama3_1b_fft_fsdp2_offload.yml"; echo 'deepspeed: z2.json'; } >"$hostile/ax_fsdpds.yml"
expect "SI-31 deepspeed and fsdp" 2 'ax_fsdpds.yml:[0-9]+: deepspeed: and fsdp_config: give one of them' -- --recipe "$hostile/ax_fsdpds.yml" --gpus 2
{ cat "$rec/tt_llama3_2_1b_full_single_device.yaml"; echo 'batch_size: 64'; } >"$hostile/tt_dup.yaml"
expect "SI-32 duplicate key" 2 'tt_dup.yaml:[0-9]+: batch_size: duplicate key \(first at line [0-9]+\)' -- --recipe "$hostile/tt_dup.yaml"
printf '{"fsdp":"full_shard","fsdp_config":{"fsdp_version":2,"use_orig_params":true}}' >"$hostile/ta_fv2orig.json"
expect "SI-34 training args orig params on FSDP2" 2 "ta_fv2orig.json: /fsdp_config: /use_orig_params: is FSDP1's setting" -- --training-args "$hostile/ta_fv2orig.json" --gpus 2
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['_headroom']['nominal_params'] = 1; json.dump(d, open(sys.argv[2], 'w'))" "$data/../../presets/llama-3.1-8b-like.json" "$hostile/np1.json"
expect "SI-35 nominal far from the shapes" 2 'np1.json: /_headroom: /nominal_params: 1 is far from the 8030261248 parameters' -- --config "$hostile/np1.json"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['head_dim'] = 3; json.dump(d, open(sys.argv[2], 'w'))" "$data/../../presets/llama-3.1-8b-like.json" "$hostile/hd3.json"
expect "SI-36 odd head_dim" 2 'hd3.json: /head_dim: 3 must be even' -- --config "$hostile/hd3.json"
expect "SI-37 pissa niter absurd" 2 'pissa_niter_N: N is absurdly large \(99999999999999999999\)' -- --method lora --init-lora-weights pissa_niter_99999999999999999999
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['_headroom']['name'] = '\x1b[2Jpwned'; json.dump(d, open(sys.argv[2], 'w'))" "$data/../../presets/llama-3.1-8b-like.json" "$hostile/ansi.json"
expect "SI-38 escape in a name" 0 '\\x1b\[2Jpwned' -- --config "$hostile/ansi.json"
expect "SI-40 escape in a flag" 2 "gpu: unknown 'h100-sxm\\\\x1b\[2J'" -- --gpu $'h100-sxm\x1b[2J'
sed 's/^sequence_len:.*/sequence_len: 0x800/' "$rec/ax_llama3_lora_1b.yml" >"$hostile/hex.yaml"
expect "MI-25 hex length" 0 'seq-len 2048' -- --recipe "$hostile/hex.yaml"
printf '{"fsdp":"full_shard","deepspeed":{"zero_optimization":{"stage":2}}}' >"$hostile/fsdpds.json"
expect "MI-39 training args fsdp and deepspeed" 2 'fsdpds.json: /fsdp: and /deepspeed: give one of them' -- --training-args "$hostile/fsdpds.json" --gpus 2
# Issue 31, step 3: the remaining misleading messages (MI-*) and the empty --set (SI-13).
expect "SI-13 empty --set" 2 '^error: --set micro_batch_size: is empty; give a value or leave the flag out' -- --recipe "$rec/ax_llama3_lora_1b.yml" --set micro_batch_size=
printf '{"fp16":{"enabled":true}}' >"$hostile/fp16.json"
expect "MI-10 deepspeed fp16 against the flags" 2 'fp16.json: /fp16/enabled: true disagrees with --precision bf16-mixed \(the default\): give --precision fp16-autocast' -- --deepspeed "$hostile/fp16.json" --gpus 2
printf '{"bf16":{"enabled":false}}' >"$hostile/bf16f.json"
expect "MI-11 deepspeed bf16 off against the flags" 2 'bf16f.json: /bf16/enabled: false disagrees with --precision bf16-mixed \(the default\): give --precision fp32 or fp16-autocast' -- --deepspeed "$hostile/bf16f.json" --gpus 2
printf '1e3\n' >"$hostile/e3.csv"
expect "MI-19 a length in exponent form" 2 "e3.csv:1: expected a positive integer length, got '1e3'" -- --lengths "$hostile/e3.csv"
python3 -c "N=100000; open('$hostile/deep.yaml','w').write('base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nloop: '+'['*N+']'*N+'\n')"
expect "MI-21 deep flow YAML" 2 'deep.yaml:3: loop: nested deeper than the limit of 256 levels' -- --recipe "$hostile/deep.yaml"
python3 -c "open('$hostile/deepblock.yaml','w').write('base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nloop:\n'+''.join(' '*(i+1)+'k:\n' for i in range(2000))+' '*2001+'v\n')"
expect "MI-22 deep block YAML" 2 'deepblock.yaml:[0-9]+: k: nested deeper than the limit of 256 levels' -- --recipe "$hostile/deepblock.yaml"
python3 -c "N=100000; open('$hostile/deepmap.yaml','w').write('base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nloop: '+'{a: '*N+'1'+'}'*N+'\n')"
expect "MI-23 deep flow map YAML" 2 'deepmap.yaml:3: loop: nested deeper than the limit of 256 levels' -- --recipe "$hostile/deepmap.yaml"
printf 'hello\n' >"$hostile/notjson.txt"
sed "s#^base_model:.*#base_model: $hostile/notjson.txt#" "$rec/ax_llama3_lora_1b.yml" >"$hostile/etc.yaml"
expect "MI-26 base_model not a config" 2 'etc.yaml:[0-9]+: base_model: .*notjson.txt: malformed JSON at line 1, column 1 \(byte 1\): syntax error while parsing value - invalid literal$' -- --recipe "$hostile/etc.yaml"
sed "s#^deepspeed:.*#deepspeed: $hostile/lf_self.yaml#" "$rec/lf_qwen3_full_sft_ds3.yaml" >"$hostile/lf_self.yaml"
expect "MI-45 recipe deepspeed not JSON" 2 'lf_self.yaml:8: deepspeed: .*lf_self.yaml: malformed JSON at line 1' -- --recipe "$hostile/lf_self.yaml"
sed "s#deepspeed_config_file:.*#deepspeed_config_file: $hostile/acc_dsself.yaml#" "$rec/acc_deepspeed.yaml" >"$hostile/acc_dsself.yaml"
expect "MI-46 accelerate deepspeed file not JSON" 2 'acc_dsself.yaml: deepspeed_config.deepspeed_config_file: .*acc_dsself.yaml: malformed JSON at line 1' -- --accelerate-config "$hostile/acc_dsself.yaml"
mkdir "$hostile/st"
cp "$data/checkpoints/tiny-single/config.json" "$hostile/st/"
python3 -c "import json, struct; h = json.dumps({'model.embed_tokens.weight': {'dtype': 'BF16', 'shape': [2**40, 2**40], 'data_offsets': [0, 0]}}).encode(); open('$hostile/st/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h)"
expect "MI-28 safetensors overflow" 2 'st/model.safetensors: model.embed_tokens.weight: shape \[1099511627776,1099511627776\] overflows 64-bit arithmetic' -- --config "$hostile/st/config.json"
printf '{"fsdp":"full_shard","fsdp_config":"/nonexistent/fsdp.json"}' >"$hostile/fsdpcfgpath.json"
expect "MI-48 fsdp_config path missing" 2 'fsdpcfgpath.json: /fsdp_config: /nonexistent/fsdp.json: cannot open file' -- --training-args "$hostile/fsdpcfgpath.json" --gpus 2
printf '{"fsdp_version":2}' >"$hostile/fsdp_cfg.json"
printf '{"fsdp":"full_shard","fsdp_config":"%s"}' "$hostile/fsdp_cfg.json" >"$hostile/fsdpcfgfile.json"
expect "MI-48 fsdp_config path read" 0 'full_shard' -- --training-args "$hostile/fsdpcfgfile.json" --gpus 2
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['_headroom'] = {'architecture': 'llama'}; json.dump(d, open(sys.argv[2], 'w'))" "$data/configs/olmo-2-1124-7b-instruct.json" "$hostile/olmo_as_llama.json"
expect "a family forced on one headroom reads" 2 "olmo_as_llama.json: /_headroom/architecture: 'llama' forced on 'olmo2', which headroom reads as itself" -- --config "$hostile/olmo_as_llama.json"
rm -rf "$hostile"
# Issue 32: --model ORG/NAME downloads what the cache lacks, from a fake Hub on 127.0.0.1 (tests/fake_hub.cpp),
# in huggingface_hub's layout; every failure is exit 2 naming the flag. Not golden records: the port changes.
if [[ -x $dir/fake_hub ]]; then
  hub_out=$(mktemp)
  "$dir/fake_hub" 30 >"$hub_out" &
  hub_pid=$!
  for _ in $(seq 50); do [[ -s $hub_out ]] && break; sleep 0.1; done
  hub="http://127.0.0.1:$(cat "$hub_out")"
  hub_cache=$(mktemp -d)
  saved_golden=$golden
  golden=
  export HF_ENDPOINT=$hub HF_HUB_CACHE=$hub_cache HF_HUB_DOWNLOAD_TIMEOUT=1
  unset HF_HUB_OFFLINE
  tiny=$hub_cache/models--headroom-tests--tiny-llama
  commit=0123456789abcdef0123456789abcdef01234567
  expect "hub download" 0 '^model      headroom-tests/tiny-llama \(llama\), 44,372,480 parameters' -- --model headroom-tests/tiny-llama
  if [[ -L $tiny/snapshots/$commit/config.json && $(readlink "$tiny/snapshots/$commit/config.json") == ../../blobs/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 &&
    $(cat "$tiny/refs/main") == "$commit" && -f $tiny/.no_exist/$commit/model.safetensors.index.json &&
    -z $(find "$hub_cache" -name '*.incomplete') ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL hub cache layout: $(find "$hub_cache" | sed "s|$hub_cache||")"; fi
  HF_HUB_OFFLINE=1 expect "hub cached, offline" 0 '"origin": ".*/models--headroom-tests--tiny-llama/snapshots/0123456789abcdef0123456789abcdef01234567/config.json"' -- --model headroom-tests/tiny-llama --json
  expect "hub by commit" 0 '^model      headroom-tests/tiny-llama@0123456789abcdef0123456789abcdef01234567 ' -- --model headroom-tests/tiny-llama@$commit
  expect "hub redirect" 0 '^model      headroom-tests/renamed \(llama\)' -- --model headroom-tests/renamed
  expect "hub gated" 2 '^error: --model: headroom-tests/gated is gated: accept its licence on the Hub, then set HF_TOKEN \(no token was sent\)' -- --model headroom-tests/gated
  HF_TOKEN=hf_wrong expect "hub gated, refused token" 2 'is gated: .*\(the token was refused\)' -- --model headroom-tests/gated
  HF_TOKEN=hf_headroom_test_token expect "hub gated, token" 0 '^model      headroom-tests/gated \(llama\)' -- --model headroom-tests/gated
  token_file=$(mktemp)
  echo hf_headroom_test_token >"$token_file"
  HF_TOKEN_PATH=$token_file expect "hub token file" 0 '^model      headroom-tests/gated@main|^model      headroom-tests/gated \(' -- --model headroom-tests/gated --method lora
  expect "hub no repo" 2 "^error: --model: headroom-tests/nothing-here: no such repository on $hub \\(or it is private: set HF_TOKEN\\)" -- --model headroom-tests/nothing-here
  expect "hub no revision" 2 "headroom-tests/tiny-llama@v9: the repository has no revision 'v9'" -- --model headroom-tests/tiny-llama@v9
  expect "hub truncated" 2 'the download of config.json was cut short after 40 bytes .*nothing was cached' -- --model headroom-tests/truncated
  expect "hub slow" 2 'no data for 1 s \(HF_HUB_DOWNLOAD_TIMEOUT\)' -- --model headroom-tests/slow
  expect "hub 500" 2 'headroom-tests/broken: the Hub answered HTTP 500' -- --model headroom-tests/broken
  HUGGING_FACE_HUB_TOKEN=hf_headroom_test_token expect "hub legacy token" 0 '^model      headroom-tests/gated \(llama\)' -- --model headroom-tests/gated --seq-len 1k
  home=$(mktemp -d)
  echo hf_headroom_test_token >"$home/token"
  HF_HOME=$home expect "hub HF_HOME token" 0 '^model      headroom-tests/gated \(llama\)' -- --model headroom-tests/gated --seq-len 2k
  rm -rf "$home"
  TRANSFORMERS_OFFLINE=1 expect "hub transformers offline" 2 "unknown model 'headroom-tests/other': not in the Hugging Face cache" -- --model headroom-tests/other
  HF_HUB_OFFLINE=yes expect "hub offline" 2 "unknown model 'headroom-tests/other': not in the Hugging Face cache .*HF_HUB_OFFLINE is unset" -- --model headroom-tests/other
  expect "hub preset stands in" 0 "note       'Qwen/Qwen3-4B' could not be downloaded \(Qwen/Qwen3-4B: no such repository on .*\): priced with the preset qwen3-4b" -- --model Qwen/Qwen3-4B
  HF_ENDPOINT=http://127.0.0.1:9 expect "hub unreachable" 2 'cannot reach the Hub at http://127.0.0.1:9 \(HF_ENDPOINT\): .*with HF_HUB_OFFLINE=1 only the cache is read' -- --model headroom-tests/other
  HF_HUB_DOWNLOAD_TIMEOUT=soon expect "hub bad timeout" 2 "HF_HUB_DOWNLOAD_TIMEOUT: 'soon' is not a number of seconds" -- --model headroom-tests/other
  if [[ ! -e $hub_cache/models--headroom-tests--truncated/snapshots ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL a truncated download left a snapshot"; fi
  kill "$hub_pid" 2>/dev/null
  wait "$hub_pid" 2>/dev/null
  rm -rf "$hub_cache" "$hub_out" "$token_file"
  golden=$saved_golden
  export HF_HUB_CACHE=$data/hub HF_HUB_OFFLINE=1
  unset HF_ENDPOINT HF_HUB_DOWNLOAD_TIMEOUT
fi
# full_stdout NAME PROG ARGS...: PROG's standard output on a full disk is exit 2 naming it, never a silent 0.
full_stdout() {
  local name=$1 prog=$2 err rc
  shift 2
  err=$("$dir/$prog" "$@" 2>&1 >/dev/full)
  rc=$?
  if [[ $rc -eq 2 ]] && grep -q 'standard output: cannot write (No space left on device)' <<<"$err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: stdout on /dev/full gave exit %s\n%s\n' "$name" "$rc" "$err"
  fi
}
full_stdout "full table" memory_calculator --preset qwen3-4b
full_stdout "full json" memory_calculator --preset qwen3-4b --json
full_stdout "full csv" memory_calculator --sweep seq-len=512:1024:x2 --csv
full_stdout "full help" memory_calculator --help
full_stdout "full presets" memory_calculator --list-presets
full_stdout "full throughput" throughput_calculator --gpu h100-sxm --json
full_stdout "full lr csv" lr_schedule --type cosine --peak 2e-4 --warmup 10 --total 100 --csv
rm -rf "$out_dir"

# throughput_calculator (issue 4): W33 from a measured rate, a prediction that names its convention.
bin=$dir/throughput_calculator
expect "W33 mfu" 0 '"mfu": 0\.1455' -- --preset llama-3.1-8b-like --method full --gpu h100-sxm --tokens-per-second 3000 --json
expect "W33 text" 0 'MFU +14\.6%' -- --preset llama-3.1-8b-like --method full --gpu h100-sxm --tokens-per-second 3000
expect "prediction" 0 '"flops_convention": "6n"' -- --preset qwen3-1.7b --method lora --gpu a100-80gb --batch 2 --seq-len 2048 --json
expect "prediction mfu" 0 '"mfu": 0\.[0-9]' -- --preset qwen3-1.7b --method lora --gpu a100-80gb --batch 2 --seq-len 2048 --json
expect "json keys" 0 '"step_time_s": [0-9]' -- --preset qwen3-1.7b --method lora --gpu a100-80gb --json
expect "megatron" 0 "under convention 'megatron'" -- --preset qwen3-1.7b --gpu a100-80gb --flops-convention megatron
expect "token budget" 0 'GPU-hours' -- --preset qwen3-1.7b --gpu a100-80gb --method lora --tokens 1000000000 --gpus 8 --tokens-per-second 12000
expect "tokens 2B" 0 'budget +2e\+09 tokens on 8 GPU\(s\)' -- --preset qwen3-1.7b --gpu a100-80gb --method lora --tokens 2B --gpus 8 --tokens-per-second 12000
expect "tokens 1e9" 0 'budget +1e\+09 tokens' -- --preset qwen3-1.7b --gpu a100-80gb --method lora --tokens 1e9 --tokens-per-second 12000
expect "tokens bad" 2 "--tokens: expected a positive integer such as 1000000000 or 1,000,000, 1e9" -- --preset qwen3-1.7b --gpu a100-80gb --tokens 1.5
expect "gpu hours json" 0 '"gpu_hours": [0-9]' -- --preset qwen3-1.7b --gpu a100-80gb --method lora --tokens 1000000000 --json
expect "lengths" 0 'of computed tokens are padding' -- --preset qwen3-1.7b --gpu rtx-4090 --method lora --batch 4 --lengths "$data/../../examples/data/chat_lengths.csv"
expect "ddp comm" 0 '^comm +none over 8 GPUs: all-reduce [0-9.]+ s, .*NVLink 4 \(18 links\), 450 GB/s per direction in a node of 8, 50 between nodes, at 70%' -- --preset llama-3.1-8b-like --method full --gpu h100-sxm --gpus 8
expect "fsdp comm json" 0 '"all_gather_s": [0-9]' -- --preset llama-3.1-8b-like --method full --gpu h100-sxm --gpus 16 --fsdp full_shard --json
expect "tokens over gpus" 0 'budget +1e\+09 tokens on 8 GPU\(s\): ' -- --preset qwen3-1.7b --gpu a100-80gb --method lora --tokens 1e9 --gpus 8
expect "no interconnect" 2 'mi300x lists no interconnect, so collectives between GPUs cannot be timed: give its GB/s per direction \(--interconnect-gb-s\)' -- --preset qwen3-1.7b --gpu mi300x --gpus 8
expect "interconnect given" 0 '^comm +none over 8 GPUs.*--interconnect-gb-s, 448 GB/s' -- --preset qwen3-1.7b --gpu mi300x --gpus 8 --interconnect-gb-s 448
expect "interconnect range" 2 '--interconnect-gb-s: must be in \[1, 1e5\] GB/s per direction, got 1e\+09' -- --preset qwen3-1.7b --gpu h100-sxm --gpus 8 --interconnect-gb-s 1e9
expect "needs gpu" 2 '--gpu: is required' -- --preset qwen3-1.7b
expect "t4 bf16" 2 'no bf16 support: use fp16 with loss scaling' -- --preset qwen3-1.7b --gpu t4
million=$(mktemp --suffix=.csv)
awk 'BEGIN { for (i = 1; i <= 1000000; ++i) print (i * 7919) % 2048 + 1 }' >"$million"
expect "CR-23 a million lengths" 0 'of computed tokens are padding' -- --preset qwen3-1.7b --gpu h100-sxm --lengths "$million"
rm -f "$million"
expect "t4 fp16" 0 'MFU' -- --preset qwen3-1.7b --gpu t4 --method lora --precision fp16-autocast
expect "bad convention" 2 "--flops-convention: unknown 'kaplan'; valid: 6n, palm, megatron" -- --gpu h100-sxm --flops-convention kaplan
expect "bad tps" 2 "--tokens-per-second: expected a decimal number.*got '-5'" -- --gpu h100-sxm --tokens-per-second=-5
expect "bad efficiency" 2 '--matmul-efficiency: must be a fraction in \[0.01, 1\]' -- --gpu h100-sxm --matmul-efficiency 1.5
# Throughput sanity (issue 15): percentages, absurd efficiencies, MFU above 100%, layouts the roofline cannot time.
expect "efficiency percent" 2 "--matmul-efficiency: .*\(a percentage\? give 0.7\)" -- --gpu h100-sxm --matmul-efficiency 70
expect "efficiency absurd" 2 '--bandwidth-efficiency: must be a fraction in \[0.01, 1\]' -- --gpu h100-sxm --bandwidth-efficiency 0.001
expect "mfu over 100" 2 '--tokens-per-second: 1e6 tokens/s implies MFU of [0-9.]+% on h100-sxm' -- --preset llama-3.1-8b-like --gpu h100-sxm --tokens-per-second 1e6
expect "mfu sane" 0 'measured +3000 tokens/s' -- --preset llama-3.1-8b-like --gpu h100-sxm --tokens-per-second 3000
expect "SI-09 packing without lengths" 2 '^error: --packing: needs --lengths FILE' -- --gpu h100-sxm --packing
expect "SI-15 measured rate, impossible tp" 2 '^error: tensor_parallel: must divide the attention heads' -- --preset llama-3.1-8b-like --gpu h100-sxm --tokens-per-second 5000 --tp 3
expect "SI-16 measured rate, impossible pp" 2 '^error: pipeline_parallel: is above the layer count' -- --preset llama-3.1-8b-like --gpu h100-sxm --tokens-per-second 5000 --pp 1000
expect "SI-17 measured rate, a layout" 0 'note: a measured tokens/s is per GPU and taken as given: the layout.s 100000 GPUs' -- --preset llama-3.1-8b-like --gpu h100-sxm --tokens-per-second 5000 --gpus 100000 --zero 3
expect "SI-18 a rate of nothing" 2 "^error: --tokens-per-second: '1e-300' is out of range" -- --gpu h100-sxm --tokens-per-second 1e-300
expect "a rate below the smallest" 2 "^error: --tokens-per-second: '1e-5' is below the smallest rate priced" -- --gpu h100-sxm --tokens-per-second 1e-5
expect "MI-03 denormal rate" 2 "^error: --tokens-per-second: '1e-310' is out of range" -- --gpu h100-sxm --tokens-per-second 1e-310
gpu_dir=$(mktemp -d)
mkdir "$gpu_dir/gpus"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); del d['dense_tflops']['bf16']; d['name'] = 'mygpu'; json.dump(d, open(sys.argv[2], 'w'))" "$data/../../presets/gpus/h100-sxm.json" "$gpu_dir/gpus/mygpu.json"
expect "MI-17 gpu file without its bf16 peak" 2 'mygpu.json: /dense_tflops/bf16: missing, but bf16_supported is true' -- --preset-dir "$gpu_dir" --gpu mygpu
rm -rf "$gpu_dir"
expect "predict tp" 0 '^tensor +2 ranks: all-reduces [0-9.]+ s per step, none hidden \(NVLink 4' -- --preset llama-3.1-8b-like --gpu h100-sxm --tp 2 --gpus 2
expect "predict tp sp" 0 '^tensor +8 ranks with sequence parallelism' -- --preset llama-3.1-8b-like --gpu h100-sxm --tp 8 --sp
expect "predict tp json" 0 '"tensor_parallel": \{' -- --preset llama-3.1-8b-like --gpu h100-sxm --tp 2 --json
expect "predict tp heads" 2 'tensor_parallel: must divide the attention heads' -- --preset llama-3.1-8b-like --gpu h100-sxm --tp 3
expect "predict pp" 0 '^pipeline +2 stages, 1F1B over 4 micro-batches: bubble [0-9.]+ s' -- --preset llama-3.1-8b-like --gpu h100-sxm --pp 2 --gpus 2 --grad-accum 4
expect "predict pp json" 0 '"pipeline_bubble": [0-9]' -- --preset llama-3.1-8b-like --gpu h100-sxm --pp 2 --json
expect "tokens over tp pp" 0 'budget +1e\+09 tokens on 16 GPU\(s\): ' -- --preset llama-3.1-8b-like --gpu h100-sxm --tp 2 --pp 2 --gpus 4 --tokens 1e9
expect "predict gpus" 0 '^comm +none over 8 GPUs: all-reduce 0\.089 s' -- --preset llama-3.1-8b-like --gpu h100-sxm --gpus 8
expect "measured gpus" 0 'budget +1e\+09 tokens on 8 GPU\(s\)' -- --preset llama-3.1-8b-like --gpu h100-sxm --gpus 8 --tokens-per-second 3000 --tokens 1000000000
expect "clipping part" 0 'gradient clipping [0-9.]+' -- --preset qwen3-1.7b --gpu a100-80gb --method lora
expect "host bound" 0 'host-bound 0\.0[0-9]*[1-9]' -- --preset qwen3-1.7b --gpu h100-sxm --method lora --batch 1 --seq-len 128
expect "launch free" 0 'host-bound 0\.000 .*0 us per kernel launch' -- --preset qwen3-1.7b --gpu h100-sxm --method lora --batch 1 --seq-len 128 --kernel-launch-us 0
expect "launch absurd" 2 '--kernel-launch-us: must be at most 1000' -- --gpu h100-sxm --kernel-launch-us 5000

# lr_schedule (issue 4): W26 and W27 as CSV, and the terminal chart.
bin=$dir/lr_schedule
cosine=$("$bin" --type cosine --peak 2e-4 --warmup 10 --total 100 --csv)
wsd=$("$bin" --type warmup_stable_decay --decay-type linear --decay-steps 20 --peak 2e-4 --warmup 10 --total 100 --csv)
row() { grep -x "$2,$3" <<<"$1" >/dev/null; }
if row "$cosine" 5 0.0001 && row "$cosine" 10 0.0002 && row "$cosine" 55 0.0001 && row "$cosine" 100 0 &&
  [[ $(wc -l <<<"$cosine") -eq 102 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL W26 csv"; fi
stable=$(awk -F, 'NR > 1 && $1 >= 10 && $1 < 80 && $2 != "0.0002"' <<<"$wsd" | wc -l)
if [[ $stable -eq 0 ]] && row "$wsd" 100 0 && row "$wsd" 9 0.00018; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL W27 csv"; fi
expect "chart" 0 '\*' -- --type cosine --peak 2e-4 --warmup 10 --total 100
expect "MI-01 denormal peak" 2 "^error: --peak: '1e-320' is out of range" -- --total 100 --peak 1e-320
expect "MI-05 denormal min-lr-rate" 2 "^error: --min-lr-rate: '1e-315' is out of range" -- --total 100 --type cosine_with_min_lr --min-lr-rate 1e-315
lr_svg=$(mktemp --suffix=.svg)
expect "lr svg" 0 'step,lr' -- --type cosine --peak 2e-4 --warmup 10 --total 100 --csv --svg "$lr_svg"
[[ -n $golden ]] && golden_file "lr svg" "$lr_svg"
if grep -q '<polyline' "$lr_svg"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL lr svg"; fi
if grep -q '>start, step 0: lr 0</text>' "$lr_svg" && grep -q '>warmup end, step 10: lr 0.0002</text>' "$lr_svg" &&
  grep -q '>total, step 100: lr 0</text>' "$lr_svg"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL lr svg marks"; fi
expect "lr svg of 2^32 steps" 0 'warmup 128849019 of 4294967295 steps' -- --type cosine --peak 2e-4 --warmup 0.03 --total 4294967295 --svg "$lr_svg"
if [[ $(stat -c %s "$lr_svg") -lt 200000 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL lr svg of 2^32 steps is $(stat -c %s "$lr_svg") bytes"; fi
rm -f "$lr_svg"
expect "fraction warmup" 0 'warmup 5 of 100 steps' -- --type linear --peak 1e-4 --warmup 0.05 --total 100
expect "wsd needs decay" 2 'num_decay_steps: is required' -- --type warmup_stable_decay --peak 1e-4 --total 100
expect "bad type" 2 "--type: unknown 'onecycle'" -- --type onecycle --total 100
expect "no total" 2 'total' -- --type cosine
expect "bad warmup" 2 'warmup_steps: a value >= 1 must be a whole number' -- --type cosine --total 100 --warmup 2.5
expect "min-lr on linear" 2 'min_lr: is not an argument of the linear schedule \(transformers get_scheduler would raise a TypeError\)' -- --type linear --min-lr 1e-6 --total 100
expect "min-lr above peak" 2 'min_lr: must be in \[0, the peak learning rate' -- --type cosine_with_min_lr --peak 1e-5 --min-lr 1 --total 100
expect "min-lr-rate 2" 2 'min_lr_rate: must be in \[0, 1\], got 2' -- --type cosine_with_min_lr --min-lr-rate 2 --total 100
expect "warmup past total" 2 'warmup_steps: 200 exceed num_training_steps 100' -- --type cosine --warmup 200 --total 100
expect "constant warmup" 2 'warmup_steps: the constant schedule has no warmup' -- --type constant --warmup 50 --total 100

# The numbered examples take no unknown arguments (issue 31, SI-46..48).
bin=$dir/01_static_memory
expect "SI-47 example 01 argument" 2 "^error: unexpected argument '--bogus'; usage: 01_static_memory" -- --bogus
bin=$dir/02_recipe
expect "SI-46 example 02 arguments" 2 "^error: unexpected argument 'extra'; usage: 02_recipe \[RECIPE.yaml\]" -- "$rec/ax_llama3_lora_1b.yml" extra --bogus
bin=$dir/precision_failure_modes
expect "SI-48 precision help" 0 '^usage: precision_failure_modes' -- --help
bin=$dir/throughput_ablation
expect "MI-31 ablation on a GPU without bf16" 2 '^error: --gpu: t4 has no bf16 support, and throughput_ablation prices bf16 runs only' -- --gpu t4

# Issue 31, step 5: the rest of ../shared/validation/hostile-inputs.md, one case per id (those not above).
hostile=$(mktemp -d)
# deep_json OUT KEY.PATH LEVELS [BASE]: BASE (or {}) with KEY.PATH set to LEVELS nested empty arrays.
deep_json() {
  python3 -c "
import json, sys
out, keys, levels = sys.argv[1], sys.argv[2].split('.'), int(sys.argv[3])
doc = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}
node = doc
for k in keys[:-1]: node = node.setdefault(k, {})
node[keys[-1]] = 'DEEP'
open(out, 'w').write(json.dumps(doc).replace('\"DEEP\"', '[' * levels + ']' * levels))" "$@"
}
# set_json OUT KEY.PATH JSON BASE: BASE with KEY.PATH set to the JSON value.
set_json() {
  python3 -c "
import json, sys
doc = json.load(open(sys.argv[4]))
node = doc
keys = sys.argv[2].split('.')
for k in keys[:-1]: node = node.setdefault(k, {})
node[keys[-1]] = json.loads(sys.argv[3])
json.dump(doc, open(sys.argv[1], 'w'))" "$@"
}
model=$data/../../presets/llama-3.1-8b-like.json
h100=$data/../../presets/gpus/h100-sxm.json
bin=$dir/memory_calculator
deep_json "$hostile/init.json" model_init_kwargs.x 1000000
expect "CR-03 deep model_init_kwargs" 2 'init.json: /model_init_kwargs/x: nested deeper than the limit of 256 levels' -- --training-args "$hostile/init.json"
deep_json "$hostile/g3.json" text_config.junk 1000000 "$data/configs/gemma-3-4b-it.json"
expect "CR-05 deep text_config" 2 'g3.json: /text_config/junk: nested deeper than the limit' -- --config "$hostile/g3.json"
mkdir "$hostile/ck"
cp "$data/checkpoints/olmo2-index/config.json" "$hostile/ck/"
deep_json "$hostile/ck/model.safetensors.index.json" metadata.total_size 100000
expect "CR-06 deep checkpoint index" 2 'model.safetensors.index.json: /metadata/total_size: nested deeper than the limit' -- --config "$hostile/ck/config.json"
deep_json "$hostile/hname.json" _headroom.name 1000000 "$model"
expect "CR-07 deep _headroom name" 2 'hname.json: /_headroom/name: nested deeper than the limit' -- --config "$hostile/hname.json"
deep_json "$hostile/peftr.json" peft_config.r 1000000
expect "CR-08 deep peft_config" 2 'peftr.json: /peft_config/r: nested deeper than the limit' -- --training-args "$hostile/peftr.json"
deep_json "$hostile/deep80k.json" hidden_size 80000 "$model"
expect "CR-09 80,000 levels" 2 'deep80k.json: /hidden_size: nested deeper than the limit' -- --config "$hostile/deep80k.json"
deep_json "$hostile/dsinline.json" deepspeed.zero_optimization.stage 100000
expect "CR-10 deep inline deepspeed" 2 'dsinline.json: /deepspeed/zero_optimization/stage: nested deeper than the limit' -- --training-args "$hostile/dsinline.json" --gpus 2
printf '[999999999999]\n' >"$hostile/longj.json"
expect "CR-19 absurd length in a JSON list" 2 'longj.json: /0: length 999999999999 is absurdly large' -- --lengths "$hostile/longj.json"
deep_json "$hostile/dsdeep.json" zero_optimization.stage 100000
sed "s#^deepspeed:.*#deepspeed: $hostile/dsdeep.json#" "$rec/lf_qwen3_full_sft_ds3.yaml" >"$hostile/lf_dsdeep.yaml"
expect "CR-26 recipe's deep deepspeed" 2 'dsdeep.json: /zero_optimization/stage: nested deeper than the limit' -- --recipe "$hostile/lf_dsdeep.yaml"
sed "s#deepspeed_config_file:.*#deepspeed_config_file: $hostile/dsdeep.json#" "$rec/acc_deepspeed.yaml" >"$hostile/acc_dsdeep.yaml"
expect "CR-27 accelerate's deep deepspeed" 2 'dsdeep.json: /zero_optimization/stage: nested deeper than the limit' -- --accelerate-config "$hostile/acc_dsdeep.yaml"
mkdir -p "$hostile/gd/gpus" "$hostile/pdd"
deep_json "$hostile/gd/gpus/deep.json" memory_gb 100000 "$h100"
expect "CR-28 deep GPU file" 2 'deep.json: /memory_gb: nested deeper than the limit' -- --preset-dir "$hostile/gd" --gpu deep
deep_json "$hostile/pdd/deepm.json" hidden_size 100000
expect "CR-29 deep preset" 2 'deepm.json: /hidden_size: nested deeper than the limit' -- --preset-dir "$hostile/pdd" --preset deepm
{ sed '/^lr_scheduler_kwargs:/,+1d' "$rec/trl_smollm3_sft_full.yaml"; printf 'lr_scheduler_kwargs: &k\n  x: *k\n'; } >"$hostile/trl_self.yaml"
expect "CR-30 TRL self alias" 2 'trl_self.yaml:[0-9]+: lr_scheduler_kwargs.x: alias \*k refers to its own anchor &k' -- --recipe "$hostile/trl_self.yaml"
{ cat "$rec/tt_llama3_2_1b_full_single_device.yaml"; printf 'loop: &x\n  a: *x\n'; } >"$hostile/tt_self.yaml"
expect "CR-31 torchtune self alias" 2 'tt_self.yaml:[0-9]+: loop.a: alias \*x refers to its own anchor &x' -- --recipe "$hostile/tt_self.yaml"
expect "MI-02 denormal budget" 2 "^error: --budget-gb: expected a size in GB.*got '1e-320'" -- --budget-gb 1e-320
expect "MI-07 fit batch past the cap" 2 '^error: budget: holds even batch 16777216' -- --fit batch --budget-gb 1e9
expect "MI-08 accelerate's spelling" 0 'sharding +full_shard' -- --fsdp FULL_SHARD --gpus 2
printf '{"fp16":{"enabled":true}}' >"$hostile/fp16.json"
printf '{"bf16":{"enabled":false}}' >"$hostile/bf16f.json"
expect "MI-12 deepspeed fp16 on an A100" 2 'fp16.json: /fp16/enabled: true disagrees with --precision' -- --deepspeed "$hostile/fp16.json" --gpus 2 --gpu a100-80gb
expect "MI-13 deepspeed bf16 off on an A100" 2 'bf16f.json: /bf16/enabled: false disagrees with --precision' -- --deepspeed "$hostile/bf16f.json" --gpus 2 --gpu a100-80gb
expect "MI-14 deepspeed fp16 on one GPU" 2 'fp16.json: /fp16/enabled: true disagrees with --precision' -- --deepspeed "$hostile/fp16.json"
printf '  4096\n' >"$hostile/sp.csv"
expect "MI-18 a length with blanks" 0 '^lengths +1 sequences from' -- --lengths "$hostile/sp.csv"
printf '4096\t\n' >"$hostile/tt.csv"
expect "MI-20 a length with a tab" 0 '^lengths +1 sequences from' -- --lengths "$hostile/tt.csv"
printf '100\n' >"$hostile/bad"$'\xff'"name.csv"
expect "MI-30 lengths file name not UTF-8" 0 '"sequences": 1' -- --lengths "$hostile/bad"$'\xff'"name.csv" --json
deep_json "$hostile/n5k.json" hidden_size 5000 "$model"
expect "MI-33 a short message for a deep value" 2 '^error: .*n5k.json: /hidden_size: nested deeper than the limit of 256 levels$' -- --config "$hostile/n5k.json"
deep_json "$hostile/n70k.json" hidden_size 70000 "$model"
expect "MI-38 a short message for a deeper value" 2 '^error: .*n70k.json: /hidden_size: nested deeper than the limit of 256 levels$' -- --config "$hostile/n70k.json"
cp "$rec/ds_z2_llamafactory.json" "$hostile/z2.json"
printf '{"fsdp":"full_shard","deepspeed":"%s"}' "$hostile/z2.json" >"$hostile/fsdpdsp.json"
expect "MI-40 fsdp and a deepspeed path" 2 'fsdpdsp.json: /fsdp: and /deepspeed: give one of them' -- --training-args "$hostile/fsdpdsp.json" --gpus 2
sed 's/^fsdp_config:/fsdp_config:\n  fsdp_version: 3/' "$rec/acc_fsdp.yaml" >"$hostile/acc_fv3.yaml"
expect "MI-43 accelerate fsdp_version 3" 2 "acc_fv3.yaml:[0-9]+: fsdp_config.fsdp_version: unknown '3'; valid: 1, 2" -- --accelerate-config "$hostile/acc_fv3.yaml"
sed 's/^fsdp_config:/fsdp_config:\n  fsdp_version: 2/' "$rec/acc_fsdp.yaml" >"$hostile/acc_fv2orig.yaml"
expect "SI-33 accelerate orig params on FSDP2" 2 "acc_fv2orig.yaml:[0-9]+: fsdp_config.fsdp_use_orig_params: is FSDP1's setting" -- --accelerate-config "$hostile/acc_fv2orig.yaml"
printf '\xef\xbb\xbf5000\n100\n' >"$hostile/bom.csv"
expect "SI-01 a BOM" 0 '^lengths +2 sequences from' -- --lengths "$hostile/bom.csv" --batch 2
printf '\t5000\n100\n' >"$hostile/tab1.csv"
expect "SI-02 a leading tab" 0 '^lengths +2 sequences from' -- --lengths "$hostile/tab1.csv" --batch 2
sed '/^fsdp_version:/,/^  reshard_after_forward:/d' "$rec/ax_llama3_1b_fft_fsdp2_offload.yml" >"$hostile/ax_fsdp2w.yml"
echo 'fsdp: [full_shard, shard_grad_op]' >>"$hostile/ax_fsdp2w.yml"
expect "SI-30 axolotl's two fsdp shardings" 2 'ax_fsdp2w.yml:[0-9]+: fsdp: full_shard and shard_grad_op exclude each other' -- --recipe "$hostile/ax_fsdp2w.yml" --gpus 2
set_json "$hostile/ansimt.json" model_type '"\u001b[2Jx"' "$model"
expect "SI-39 escape in a model_type" 2 "ansimt.json: /model_type: unsupported '\\\\x1b\[2Jx'" -- --config "$hostile/ansimt.json"
expect "SI-42 preset-dir /proc" 2 "^error: --preset-dir: '/proc' holds no preset files" -- --preset-dir /proc
for id in OW-13:--config:model.json OW-19:--recipe:ax.yml OW-20:--training-args:ta.json OW-22:--accelerate-config:accx.yaml; do
  IFS=: read -r name flag file <<<"$id"
  case $file in
    model.json) cp "$model" "$hostile/$file" ;;
    ax.yml) cp "$rec/ax_llama3_lora_1b.yml" "$hostile/$file" ;;
    ta.json) printf '{"per_device_train_batch_size":2}' >"$hostile/$file" ;;
    accx.yaml) cp "$rec/acc_fsdp.yaml" "$hostile/$file" ;;
  esac
  expect "$name svg over the $flag input" 2 "--svg: '.*$file' is a file this run reads; refusing to write over it" -- "$flag" "$hostile/$file" --svg "$hostile/$file"
done
printf '100\n200\n' >"$hostile/lens.csv"
expect "OW-14 svg over the lengths" 2 "--svg: '.*lens.csv' is a file this run reads" -- --lengths "$hostile/lens.csv" --svg "$hostile/lens.csv"
sed 's/^fsdp_version: 2/fsdp_version: 3/' "$rec/ax_llama3_1b_fft_fsdp2_offload.yml" >"$hostile/ax_fv3.yml"
expect "MI-41 axolotl fsdp_version 3" 2 "ax_fv3.yml:[0-9]+: fsdp_version: unknown '3'; valid: 1, 2" -- --recipe "$hostile/ax_fv3.yml" --gpus 2
ln -sf "$hostile/model.json" "$hostile/link2.json"
expect "OW-16 svg over the file a config symlink names" 2 "--svg: '.*model.json' is a file this run reads" -- --config "$hostile/link2.json" --svg "$hostile/model.json"
expect "OW-18 svg over the lengths by another path" 2 "--svg: '.*lens.csv' is a file this run reads" -- --lengths "$hostile/lens.csv" --svg "$hostile/ck/../lens.csv"
ln -sf "$hostile/model.json" "$hostile/link.svg"
expect "OW-15 svg through a symlink to the config" 2 "--svg: '.*link.svg' is a file this run reads" -- --config "$hostile/model.json" --svg "$hostile/link.svg"
ln "$hostile/model.json" "$hostile/hard.json"
expect "OW-17 svg over a hard link of the config" 2 "--svg: '.*model.json' is a file this run reads" -- --config "$hostile/hard.json" --svg "$hostile/model.json"
cp "$hostile/z2.json" "$hostile/dsx.json"
expect "OW-21 svg over the deepspeed input" 2 "--svg: '.*dsx.json' is a file this run reads" -- --deepspeed "$hostile/dsx.json" --gpus 2 --svg "$hostile/dsx.json"
expect "OW-09 svg to a full disk" 2 "--svg: cannot write '/dev/full': No space left on device" -- --svg /dev/full
expect "OW-11 csv and svg to a full disk" 2 "--svg: cannot write '/dev/full'" -- --sweep seq-len=512:1024 --csv --svg /dev/full
expect "OW-12 sweep svg to a full disk" 2 "--svg: cannot write '/dev/full'" -- --sweep seq-len=512:1024:x2 --svg /dev/full
full_stdout "OW-01 table to a full disk" memory_calculator
full_stdout "OW-02 csv to a full disk" memory_calculator --sweep seq-len=512:1024:x2 --csv
full_stdout "OW-03 lr csv to a full disk" lr_schedule --total 10 --csv
full_stdout "OW-04 throughput json to a full disk" throughput_calculator --gpu h100-sxm --json
full_stdout "OW-05 over budget to a full disk" memory_calculator --budget-gb 10
full_stdout "OW-06 presets to a full disk" memory_calculator --list-presets
full_stdout "OW-07 help to a full disk" memory_calculator --help
err=$("$dir/memory_calculator" 2>&1 >&-)
if [[ $? -eq 2 ]] && grep -q 'standard output: cannot write (Bad file descriptor)' <<<"$err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL OW-08 closed stdout: $err"; fi
bin=$dir/throughput_calculator
mkdir -p "$hostile/pd/gpus"
set_json "$hostile/pd/gpus/slow.json" memory_bandwidth_gb_s 1e-300 "$h100"
set_json "$hostile/pd/gpus/weak.json" dense_tflops.bf16 1e-300 "$h100"
set_json "$hostile/pd/gpus/fast.json" memory_bandwidth_gb_s 1e308 "$h100"
expect "SI-19 a GPU of no bandwidth" 2 'slow.json: /memory_bandwidth_gb_s: must be a number of GB/s in \[1, 1e5\], got 1e-300' -- --preset-dir "$hostile/pd" --gpu slow
expect "SI-20 a GPU of no compute" 2 'weak.json: /dense_tflops: /bf16: must be a TFLOP/s figure in \[0.01, 1e6\]' -- --preset-dir "$hostile/pd" --gpu weak
expect "SI-21 a GPU of infinite bandwidth" 2 'fast.json: /memory_bandwidth_gb_s: must be a number of GB/s in \[1, 1e5\], got 1e\+308' -- --preset-dir "$hostile/pd" --gpu fast
bin=$dir/throughput_ablation
mkfifo "$hostile/fifo.csv"
expect "CR-21 ablation lengths fifo" 2 'fifo.csv: is not a regular file' -- --lengths "$hostile/fifo.csv"
expect "SI-03 ablation lengths with a BOM" 0 'lengths: 2 sequences' -- --lengths "$hostile/bom.csv"
bin=$dir/02_recipe
printf 'base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nmicro_batch_size: 1\nloop: &x [1, *x]\n' >"$hostile/selfref.yaml"
expect "CR-12 example 02 self alias" 2 'selfref.yaml:4: loop: alias \*x refers to its own anchor &x' -- "$hostile/selfref.yaml"
python3 -c "N=100000; open('$hostile/deep.yaml','w').write('base_model: NousResearch/Llama-3.2-1B\nadapter: lora\nloop: '+'['*N+']'*N+'\n')"
expect "MI-24 example 02 deep YAML" 2 'deep.yaml:3: loop: nested deeper than the limit of 256 levels' -- "$hostile/deep.yaml"
printf 'hello\n' >"$hostile/notjson.txt"
sed "s#^base_model:.*#base_model: $hostile/notjson.txt#" "$rec/ax_llama3_lora_1b.yml" >"$hostile/etc.yaml"
expect "MI-27 example 02 base_model not a config" 2 'etc.yaml:[0-9]+: base_model: .*notjson.txt: malformed JSON at line 1' -- "$hostile/etc.yaml"
bin=$dir/lr_schedule
expect "MI-32 constant with a warmup" 2 'warmup_steps: the constant schedule has no warmup' -- --total 100 --type constant --warmup 50
expect "SI-44 min-lr on linear" 2 'min_lr: is not an argument of the linear schedule' -- --type linear --min-lr 0.1 --total 100
expect "SI-45 a warmup past the run" 2 'warmup_steps: 1000000000000000 exceed num_training_steps 100' -- --warmup 1e15 --total 100
expect "OW-10 lr svg to a full disk" 2 "--svg: cannot write '/dev/full'" -- --total 100 --svg /dev/full
rm -rf "$hostile"

[[ -n $golden ]] && golden_finish
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
