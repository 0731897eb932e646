#!/usr/bin/env python3
"""Measure real training steps on one GPU: peak memory per phase and tokens/s over a grid of configurations.

Runs on the GPU machine (torch, transformers and peft installed; nothing is downloaded): decoder models are
built from config dictionaries with random weights. Each configuration runs two warm-up steps (forward,
backward, optimizer step) and then measured steps; one CSV row is written and flushed per configuration, so
a run cut short still leaves rows. Configurations that cannot fit are recorded as skipped with the reason.

    python3 validation/gpu/measure.py --out "$OUT/measurements.csv" --deadline-s 420
    /usr/bin/python3 validation/gpu/measure.py --dry-run --out /tmp/gpu-grid.csv    # CPU: the grid and the CSV

The mechanisms the CPU ground truth (validation/torch) cannot see come first in the grid: FlashAttention and
the memory-efficient SDPA kernel against eager and the math path, fused against foreach and for-loop AdamW, the
optimizer stepped inside backward, torch.compile, adapters in fp32 against bf16, TRL's and torchtune's
chunked losses (the CPU harness's own implementations, validation/torch/harness/modules.py), and the CUDA
caching allocator's reserved memory.
"""
import argparse
import csv
import gc
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))

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

CONFIG_COLUMNS = ["id", "model", "method", "precision", "adapter_dtype", "optimizer", "optimizer_impl",
                  "optimizer_in_backward", "compile", "lora_rank", "lora_targets", "batch", "seq_len",
                  "checkpointing", "attention", "loss", "loss_chunk"]
MEASURED_COLUMNS = ["status", "reason", "params", "trainable_params", "allocated_after_init",
                    "allocated_after_forward", "allocated_after_backward", "allocated_after_step",
                    "forward_peak_allocated", "backward_peak_allocated", "step_peak_allocated",
                    "max_memory_allocated", "max_memory_reserved", "tokens_per_second", "seconds",
                    "gpu_name", "driver", "torch", "transformers", "peft"]
COLUMNS = CONFIG_COLUMNS + MEASURED_COLUMNS

# attention: transformers' attn_implementation, or SDPA with one backend forced (torch.nn.attention).
ATTENTION = {"eager": ("eager", None), "sdpa": ("sdpa", None), "sdpa-flash": ("sdpa", "FLASH_ATTENTION"),
             "sdpa-efficient": ("sdpa", "EFFICIENT_ATTENTION"), "sdpa-math": ("sdpa", "MATH")}

BASE = dict(method="lora", precision="bf16-pure", adapter_dtype="fp32", optimizer="adamw", optimizer_impl="fused",
            optimizer_in_backward=0, compile=0, lora_rank=16, lora_targets="all-linear", batch=1, seq_len=2048,
            checkpointing="full", attention="sdpa", loss="hf", loss_chunk="")


def grid():
    """Most informative first: one base row per model, then one factor at a time on the small models, the
    mechanisms the CPU cannot measure before the ones it already checks (>= 40 rows)."""
    rows = []

    def add(model, **kw):
        rows.append(dict(BASE, model=model, **kw))

    for model in MODELS:  # PEFT's defaults: fp32 adapters on a bf16 base, fused AdamW, checkpointing
        add(model)
    full = dict(method="full", lora_rank="", lora_targets="", adapter_dtype="")
    for model in ("qwen3-1.7b", "llama-3.2-1b-like"):
        add(model, checkpointing="none")
        for attention in ("sdpa-flash", "sdpa-efficient", "eager", "sdpa-math"):
            add(model, attention=attention, checkpointing="none")
        add(model, **full)
        for impl in ("foreach", "for_loop"):
            add(model, optimizer_impl=impl, **full)
        add(model, optimizer_in_backward=1, **full)
        add(model, adapter_dtype="bf16")
        add(model, loss="trl_chunked", loss_chunk=256)
        add(model, loss="torchtune_chunked", loss_chunk=8)
        add(model, precision="fp32-autocast", **full)
        add(model, checkpointing="none", **full)
        add(model, batch=4)
        add(model, seq_len=8192)
        add(model, lora_targets="q_proj,v_proj")
        add(model, compile=1, checkpointing="none")
        add(model, checkpointing="checkpoint-offload")
        add(model, checkpointing="checkpoint-offload-step")
    for model in ("qwen3-4b", "llama-3.1-8b-like"):
        add(model, **full)
        add(model, checkpointing="none")
        add(model, attention="sdpa-flash", seq_len=8192)
        add(model, loss="trl_chunked", loss_chunk=256, seq_len=8192)
    for i, row in enumerate(rows):
        row["id"] = f"gpu-{i:03d}"
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
    attn = ATTENTION[cfg["attention"]][0]
    torch.manual_seed(0)
    with torch.device("cuda"):
        try:  # transformers v5 names the argument dtype; v4 torch_dtype
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, attn_implementation=attn)
    checkpointed = cfg["checkpointing"] in ("full", "checkpoint-offload", "checkpoint-offload-step")
    if checkpointed:  # transformers' default kwargs: use_reentrant=True
        model.gradient_checkpointing_enable()
    if cfg["method"] == "lora":
        from peft import LoraConfig, get_peft_model
        targets = "all-linear" if cfg["lora_targets"] == "all-linear" else cfg["lora_targets"].split(",")
        model = get_peft_model(model, LoraConfig(r=int(cfg["lora_rank"]), lora_alpha=2 * int(cfg["lora_rank"]),
                                                 target_modules=targets, lora_dropout=0.0),
                               autocast_adapter_dtype=cfg["adapter_dtype"] == "fp32")
        if checkpointed:
            model.enable_input_require_grads()
    model.train()
    return model


def build_optimizer(cfg, params):
    impl = cfg["optimizer_impl"]
    kwargs = dict(lr=1e-5, fused=impl == "fused", foreach=impl == "foreach")
    if cfg["optimizer_in_backward"]:
        # torchtune optimizer_in_bwd / PyTorch's pattern: one optimizer per parameter, stepped by the
        # post-accumulate-grad hook, the gradient freed right after.
        optimizers = {p: torch.optim.AdamW([p], **kwargs) for p in params}

        def hook(p):
            optimizers[p].step()
            optimizers[p].zero_grad(set_to_none=True)

        for p in params:
            p.register_post_accumulate_grad_hook(hook)
        return None
    return torch.optim.AdamW(params, **kwargs)


def forward_loss(cfg, model, batch, num_items):
    """Trainer.compute_loss: the loss the row names; only the loss survives."""
    from harness import modules  # the CPU harness's TRL and torchtune losses
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "_orig_mod", base)
    if cfg["loss"] == "hf" and cfg["checkpointing"] == "checkpoint-offload":  # torchtune: the loss outside
        with offload_context(cfg, model, "model"):
            logits = model(input_ids=batch).logits
        return inner.loss_function(logits=logits, labels=batch, vocab_size=logits.shape[-1],
                                   num_items_in_batch=num_items)
    if cfg["loss"] == "hf":
        return model(input_ids=batch, labels=batch, num_items_in_batch=num_items).loss
    hidden = inner.model(input_ids=batch).last_hidden_state
    if cfg["loss"] == "trl_chunked":
        return modules.trl_chunked_loss(hidden, inner.lm_head.weight, batch, int(cfg["loss_chunk"]), num_items)
    return modules.torchtune_chunked_loss(inner, hidden, batch, int(cfg["loss_chunk"]))


OFFLOAD_CONTEXTS = {}


def offload_context(cfg, model, scope):
    """OffloadActivations (TRL's copy of torchtune's), entered around the model forward ("checkpoint-offload",
    torchtune's recipes) or the whole step ("checkpoint-offload-step", TRL's training_step)."""
    import contextlib
    wanted = {"model": "checkpoint-offload", "step": "checkpoint-offload-step"}[scope]
    if cfg["checkpointing"] != wanted:
        return contextlib.nullcontext()
    if id(model) not in OFFLOAD_CONTEXTS:
        from trl.models.activation_offloading import get_act_offloading_ctx_manager
        OFFLOAD_CONTEXTS.clear()
        OFFLOAD_CONTEXTS[id(model)] = get_act_offloading_ctx_manager(model)
    return OFFLOAD_CONTEXTS[id(model)]


def attention_context(cfg):
    backend = ATTENTION[cfg["attention"]][1]
    if backend is None:
        import contextlib
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(getattr(SDPBackend, backend))


def one_step(cfg, model, optimizer, batch, num_items, row=None):
    """One training step; with `row`, the allocated bytes and the peak of each phase are recorded."""
    autocast = cfg["precision"] == "fp32-autocast"

    def phase(name):
        if row is not None:
            torch.cuda.synchronize()
            row[f"allocated_after_{name}"] = torch.cuda.memory_allocated()
            row[f"{name}_peak_allocated"] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()

    with offload_context(cfg, model, "step"):
        with attention_context(cfg), torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = forward_loss(cfg, model, batch, num_items)
        phase("forward")
        loss.backward()
        loss = loss.detach()
        phase("backward")
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    phase("step")


def measure(cfg, info, measured_steps=2):
    row = dict(cfg, **info, status="ok", reason="")
    model = optimizer = batch = None
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    began = time.perf_counter()
    try:
        model = build_model(cfg)
        params = [p for p in model.parameters() if p.requires_grad]
        row["params"] = sum(p.numel() for p in model.parameters())
        row["trainable_params"] = sum(p.numel() for p in params)
        torch.cuda.synchronize()
        row["allocated_after_init"] = torch.cuda.memory_allocated()
        optimizer = build_optimizer(cfg, params)
        if cfg["compile"]:
            model = torch.compile(model)
        vocab = MODELS[cfg["model"]]["vocab_size"]
        batch = torch.randint(0, vocab, (int(cfg["batch"]), int(cfg["seq_len"])), device="cuda")
        num_items = (batch[..., 1:] != -100).sum()
        for _ in range(2):  # warm-up: the optimizer state, the kernels' workspaces, compilation
            one_step(cfg, model, optimizer, batch, num_items)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(measured_steps - 1):
            one_step(cfg, model, optimizer, batch, num_items)
        measured = {}
        one_step(cfg, model, optimizer, batch, num_items, row=measured)  # the last step, phase by phase
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        row.update(measured)
        row["max_memory_allocated"] = max(measured[k] for k in measured if k.endswith("_peak_allocated"))
        row["max_memory_reserved"] = torch.cuda.max_memory_reserved()
        row["tokens_per_second"] = measured_steps * int(cfg["batch"]) * int(cfg["seq_len"]) / elapsed
    except torch.cuda.OutOfMemoryError as e:
        row.update(status="skipped", reason="out of memory: " + str(e).split("\n")[0][:200])
    except Exception as e:  # noqa: BLE001 - a failing configuration is recorded, not fatal
        row.update(status="error", reason=f"{type(e).__name__}: {str(e)[:200]}")
    finally:
        model = optimizer = batch = None  # noqa: F841 - drop references before the next run
        gc.collect()
        torch.cuda.empty_cache()
    row["seconds"] = round(time.perf_counter() - began, 1)
    return row


def dry_run(out):
    """Checks the grid and the CSV writer without a GPU: every row, every column, written and read back."""
    rows = grid()
    assert len(rows) >= 40, len(rows)
    assert len({r["id"] for r in rows}) == len(rows)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="raise")
        writer.writeheader()
        for cfg in rows:
            assert set(cfg) <= set(CONFIG_COLUMNS), set(cfg) - set(CONFIG_COLUMNS)
            assert cfg["attention"] in ATTENTION and cfg["model"] in MODELS
            writer.writerow(dict(cfg, status="dry-run", reason="no GPU: configuration only"))
    with open(out, newline="") as f:
        back = list(csv.DictReader(f))
    assert [r["id"] for r in back] == [r["id"] for r in rows]
    assert all(r["status"] == "dry-run" for r in back)
    from harness import modules  # the losses the GPU rows borrow import on this machine too
    assert callable(modules.trl_chunked_loss) and callable(modules.torchtune_chunked_loss)
    print(f"dry run: {len(rows)} configurations, {len(COLUMNS)} columns -> {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="validation/gpu/measurements.csv")
    parser.add_argument("--deadline-s", type=float, default=420.0, help="stop starting new runs after this")
    parser.add_argument("--only", default="", help="comma list of row ids or model names to run")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: check the grid and the CSV writer")
    args = parser.parse_args()
    if args.dry_run:
        dry_run(args.out)
        return
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: run this on the GPU machine (or --dry-run)")
    info = versions()
    start = time.monotonic()
    wanted = set(args.only.split(",")) if args.only else None
    configs = [c for c in grid() if wanted is None or c["id"] in wanted or c["model"] in wanted]
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
            print(f"[{i + 1}/{len(configs)}] {cfg['id']} {cfg['model']} {cfg['method']} {cfg['attention']} "
                  f"{cfg['optimizer_impl']} {cfg['loss']}: {row['status']} "
                  f"peak {peak / 1e9 if peak == peak else peak:.3f} GB in {row['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
