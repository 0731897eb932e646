#!/usr/bin/env python3
"""Measure real training steps on one GPU: peak memory and tokens/s over a grid of configurations.

Runs on the GPU machine (torch, transformers and peft installed; nothing is downloaded): decoder models are
built from config dictionaries with random weights, each configuration runs two warm-up steps (forward,
backward, optimizer step) and then measured steps, and one CSV row is written (and flushed) per
configuration, so a run cut short still leaves rows. Configurations that cannot fit the card are recorded
as skipped with the reason.

    python3 validation/gpu/measure.py --out validation/gpu/measurements.csv --deadline-s 480

Each row carries every configuration column headroom's estimate needs, so a test can recompute it.
"""
import argparse
import csv
import gc
import math
import os
import sys
import time

import torch

# Shapes from ../shared/reference/model-configs.md (the published config.json values).
MODELS = {
    "llama-3.2-1b-like": dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                              num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                              tie_word_embeddings=True, max_position_embeddings=131072, rope_theta=500000.0),
    "qwen3-1.7b": dict(model_type="qwen3", hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                       tie_word_embeddings=True, max_position_embeddings=40960, rope_theta=1000000.0),
    "qwen3-4b": dict(model_type="qwen3", hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                     tie_word_embeddings=True, max_position_embeddings=40960, rope_theta=1000000.0),
    "llama-3.1-8b-like": dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                              num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                              tie_word_embeddings=False, max_position_embeddings=131072, rope_theta=500000.0),
}

COLUMNS = ["model", "method", "precision", "optimizer", "lora_rank", "lora_targets", "batch", "seq_len",
           "checkpointing", "attention", "loss", "status", "reason", "max_memory_allocated", "max_memory_reserved",
           "allocated_after_init", "allocated_after_step", "tokens_per_second", "params", "gpu_name", "driver",
           "torch", "transformers", "peft"]


def grid():
    """One factor at a time around a base point per model, so every row is attributable (>= 40 rows)."""
    base = dict(method="lora", precision="bf16-pure", optimizer="adamw_torch_fused", lora_rank=16,
                lora_targets="all-linear", batch=1, seq_len=2048, checkpointing="full", attention="sdpa", loss="naive")
    rows = []
    for model in MODELS:
        rows.append(dict(base, model=model))
        for batch in (2, 4):
            rows.append(dict(base, model=model, batch=batch))
        for seq_len in (512, 8192):
            rows.append(dict(base, model=model, seq_len=seq_len))
        rows.append(dict(base, model=model, checkpointing="none"))
        rows.append(dict(base, model=model, attention="eager"))
        rows.append(dict(base, model=model, lora_targets="q_proj,v_proj"))
        rows.append(dict(base, model=model, loss="chunked"))
        rows.append(dict(base, model=model, method="full", precision="fp32-autocast"))
        rows.append(dict(base, model=model, method="full", precision="bf16-pure"))
        rows.append(dict(base, model=model, method="full", precision="bf16-pure", optimizer="adafactor"))
        rows.append(dict(base, model=model, method="full", precision="bf16-pure", optimizer="sgd"))
    return rows


def versions():
    import transformers
    try:
        import peft
        peft_version = peft.__version__
    except ImportError:
        peft_version = ""
    driver = ""
    try:
        import subprocess
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001 - a missing nvidia-smi only loses the driver column
        pass
    return dict(gpu_name=torch.cuda.get_device_name(0), driver=driver, torch=torch.__version__,
                transformers=transformers.__version__, peft=peft_version)


def build_model(cfg):
    from transformers import AutoConfig, AutoModelForCausalLM
    shape = dict(MODELS[cfg["model"]])
    model_type = shape.pop("model_type")
    config = AutoConfig.for_model(model_type, **shape)
    config.use_cache = False
    dtype = torch.float32 if cfg["precision"] == "fp32-autocast" else torch.bfloat16
    attn = "eager" if cfg["attention"] == "eager" else "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        try:  # transformers v5 names the argument dtype; v4 torch_dtype
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, attn_implementation=attn)
    if cfg["checkpointing"] == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if cfg["method"] == "lora":
        from peft import LoraConfig, get_peft_model
        targets = "all-linear" if cfg["lora_targets"] == "all-linear" else cfg["lora_targets"].split(",")
        model = get_peft_model(model, LoraConfig(r=cfg["lora_rank"], lora_alpha=2 * cfg["lora_rank"],
                                                 target_modules=targets, lora_dropout=0.0))
        if cfg["checkpointing"] == "full":
            model.enable_input_require_grads()
    model.train()
    return model


def build_optimizer(cfg, model):
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg["optimizer"] == "adamw_torch_fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if cfg["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=1e-5)
    if cfg["optimizer"] == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-5, scale_parameter=False, relative_step=False)
    raise ValueError(cfg["optimizer"])


def chunked_loss(model, hidden, labels, chunk=256):
    """Cross-entropy over chunks of tokens with the head recomputed per chunk (like TRL's chunked_nll)."""
    head = model.get_output_embeddings()
    flat_h, flat_y = hidden[:, :-1].reshape(-1, hidden.size(-1)), labels[:, 1:].reshape(-1)
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, flat_y.numel(), chunk):
        h = flat_h[start:start + chunk]
        y = flat_y[start:start + chunk]

        def piece(h_, y_=y):
            logits = torch.nn.functional.linear(h_.float(), head.weight.float())
            return torch.nn.functional.cross_entropy(logits, y_, reduction="sum")

        total = total + torch.utils.checkpoint.checkpoint(piece, h, use_reentrant=False)
    return total / flat_y.numel()


def step(cfg, model, optimizer, batch):
    autocast = cfg["precision"] == "fp32-autocast"
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        if cfg["loss"] == "chunked":
            base = model.get_base_model() if hasattr(model, "get_base_model") else model
            hidden = base.model(input_ids=batch).last_hidden_state
            loss = chunked_loss(base, hidden, batch)
        else:
            loss = model(input_ids=batch, labels=batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def measure(cfg, info, measured_steps=2):
    row = dict(cfg, **info, status="ok", reason="")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    try:
        model = build_model(cfg)
        row["params"] = sum(p.numel() for p in model.parameters())
        torch.cuda.synchronize()
        row["allocated_after_init"] = torch.cuda.memory_allocated()
        optimizer = build_optimizer(cfg, model)
        vocab = MODELS[cfg["model"]]["vocab_size"]
        batch = torch.randint(0, vocab, (cfg["batch"], cfg["seq_len"]), device="cuda")
        for _ in range(2):  # warm-up: allocates the optimizer state and the kernels' workspaces
            step(cfg, model, optimizer, batch)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(measured_steps):
            step(cfg, model, optimizer, batch)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        row["allocated_after_step"] = torch.cuda.memory_allocated()
        row["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        row["max_memory_reserved"] = torch.cuda.max_memory_reserved()
        row["tokens_per_second"] = measured_steps * cfg["batch"] * cfg["seq_len"] / elapsed
    except torch.cuda.OutOfMemoryError as e:
        row.update(status="skipped", reason="out of memory: " + str(e).split("\n")[0][:200])
    except Exception as e:  # noqa: BLE001 - a failing configuration is recorded, not fatal
        row.update(status="error", reason=f"{type(e).__name__}: {str(e)[:200]}")
    finally:
        model = optimizer = batch = None  # noqa: F841 - drop references before the next run
        gc.collect()
        torch.cuda.empty_cache()
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="validation/gpu/measurements.csv")
    parser.add_argument("--deadline-s", type=float, default=480.0, help="stop starting new runs after this")
    parser.add_argument("--only", default="", help="comma list of model names to run")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: run this on the GPU machine")
    info = versions()
    start = time.monotonic()
    configs = [c for c in grid() if not args.only or c["model"] in args.only.split(",")]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for i, cfg in enumerate(configs):
            if time.monotonic() - start > args.deadline_s:
                writer.writerow(dict(cfg, **info, status="skipped", reason="deadline reached"))
                f.flush()
                continue
            row = measure(cfg, info)
            writer.writerow(row)
            f.flush()
            peak = row.get("max_memory_allocated") or math.nan
            print(f"[{i + 1}/{len(configs)}] {cfg['model']} {cfg['method']} b{cfg['batch']} s{cfg['seq_len']} "
                  f"{cfg['checkpointing']} {cfg['attention']} {cfg['loss']} {cfg['optimizer']}: {row['status']} "
                  f"peak {peak / 1e9 if peak == peak else peak:.3f} GB", flush=True)


if __name__ == "__main__":
    main()
