"""The measured grid: which configurations, in which order, with which columns.

Shapes are small (a CPU measures every allocation), but keep the proportions that decide which tensors
exist: grouped-query attention, head_dim different from hidden/heads, tied and untied heads, fused
projections, biases, four norms, soft-capping, routed experts.  Each row carries every column headroom
needs to estimate the same quantity; ``CI_ROWS`` is the subset CI re-measures.
"""

# One small shape per family (config.json keys; values chosen for the proportions above: the vocabulary
# is 10 to 100 times the hidden size, as in the real models).
SHAPES = {
    "llama": dict(hidden=128, intermediate=344, heads=8, kv_heads=2, head_dim=16, vocab=4096, tied=0),
    "mistral": dict(hidden=128, intermediate=448, heads=4, kv_heads=4, head_dim=32, vocab=3072, tied=0),
    "qwen2": dict(hidden=96, intermediate=256, heads=6, kv_heads=2, head_dim=16, vocab=4096, tied=1),
    "qwen3": dict(hidden=64, intermediate=192, heads=8, kv_heads=4, head_dim=32, vocab=4096, tied=1),
    "gemma2": dict(hidden=96, intermediate=288, heads=4, kv_heads=2, head_dim=32, vocab=8192, tied=1,
                   query_pre_attn_scalar=32, attn_softcap=50.0, final_softcap=30.0),
    "phi3": dict(hidden=96, intermediate=256, heads=6, kv_heads=6, head_dim=16, vocab=2048, tied=0),
    "mixtral": dict(hidden=64, intermediate=0, heads=4, kv_heads=2, head_dim=16, vocab=2048, tied=0,
                    experts=4, experts_per_tok=2, moe_intermediate=112, norm_topk=1),
    "qwen3_moe": dict(hidden=64, intermediate=0, heads=4, kv_heads=2, head_dim=32, vocab=4096, tied=0,
                      experts=8, experts_per_tok=2, moe_intermediate=48, norm_topk=0),
    # Added later (later_rows): OLMo-2 (multi-head, as the 7B), Granite (GQA, tied, as the 8B).
    "olmo2": dict(hidden=128, intermediate=344, heads=4, kv_heads=4, head_dim=32, vocab=4096, tied=0),
    "granite": dict(hidden=128, intermediate=400, heads=8, kv_heads=2, head_dim=16, vocab=2048, tied=1),
}
LATER_FAMILIES = ("olmo2", "granite")
# StarCoder2 (LayerNorms, biased linears, GELU MLP, residual and embedding dropout 0.1), GQA and tied as the 3B.
SHAPES["starcoder2"] = dict(hidden=96, intermediate=384, heads=6, kv_heads=2, head_dim=16, vocab=2048, tied=1)
# GPT-NeoX as Pythia: multi-head, d_ff = 4d, RoPE on a quarter of each head, untied embed_out.
SHAPES["gpt_neox"] = dict(hidden=128, intermediate=512, heads=4, kv_heads=4, head_dim=32, vocab=2048, tied=0)
# Cohere as Command-R (multi-head here, tied) and with Command-R+'s q/k norms (GQA).
SHAPES["cohere"] = dict(hidden=128, intermediate=352, heads=4, kv_heads=4, head_dim=32, vocab=4096, tied=1)
SHAPES["cohere_qk"] = dict(hidden=96, intermediate=256, heads=6, kv_heads=2, head_dim=16, vocab=4096, tied=1)
# DeepSeek-V3: MLA (q/k heads of qk_nope 16 + qk_rope 8, values 16), 8 routed experts of 32 (top 2 of 2 groups
# out of 4) and one shared expert; the MLA widths and routing are the harness family's (modules.FAMILIES).
SHAPES["deepseek_v3"] = dict(hidden=64, intermediate=160, heads=4, kv_heads=4, head_dim=24, vocab=2048, tied=0,
                             experts=8, experts_per_tok=2, moe_intermediate=32, norm_topk=1)
# Qwen2-MoE as Qwen1.5-MoE-A2.7B: multi-head, q/k/v biases, top-4 routing without renormalisation, a shared
# expert of 4× the expert width (modules.FAMILIES["qwen2_moe"]).
SHAPES["qwen2_moe"] = dict(hidden=64, intermediate=0, heads=4, kv_heads=4, head_dim=16, vocab=4096, tied=0,
                           experts=8, experts_per_tok=4, moe_intermediate=32, norm_topk=0)
# Cohere2 as Command-R7B (GQA, tied, logit_scale 0.25); steps of 4 layers include a global one.
SHAPES["cohere2"] = dict(hidden=128, intermediate=352, heads=8, kv_heads=2, head_dim=16, vocab=4096, tied=1)
# gpt-oss as gpt-oss-20b (GQA, head_dim 64 of 2880 → 16 of 64 here, 32 experts top 4 → 8 top 2), eager only.
SHAPES["gpt_oss"] = dict(hidden=64, intermediate=0, heads=4, kv_heads=2, head_dim=16, vocab=2048, tied=0,
                         experts=8, experts_per_tok=2, moe_intermediate=32, norm_topk=0)
# Llama-4 as Scout (40 heads over 8 KV heads → 4 over 2 here, 16 experts top 1 → 4 top 1, the shared expert as
# wide as one, the dense MLP twice that: intermediate_size_mlp 16384 = 2 · 8192)
for _family in ("llama4", "llama4_nope", "llama4_dense"):
    SHAPES[_family] = dict(hidden=64, intermediate=64, heads=4, kv_heads=2, head_dim=16, vocab=2048, tied=0,
                           experts=4, experts_per_tok=1, moe_intermediate=32, norm_topk=0)
# SigLIP's encoder layer as Gemma-3's so400m tower (width 1,152, 16 heads of 72, MLP 4,304 ≈ 3.7×): 4 heads of 16.
SHAPES["siglip"] = dict(hidden=64, intermediate=240, heads=4, kv_heads=4, head_dim=16, vocab=2048, tied=1)
APPENDED_FAMILIES = ("starcoder2", "gpt_neox", "cohere", "cohere_qk", "deepseek_v3", "qwen2_moe", "cohere2", "gpt_oss",
                     "llama4", "llama4_nope", "llama4_dense", "siglip")

CONFIG_COLUMNS = [
    "id", "kind", "family", "hidden", "intermediate", "layers", "heads", "kv_heads", "head_dim", "vocab", "tied",
    "experts", "experts_per_tok", "moe_intermediate", "norm_topk", "query_pre_attn_scalar", "attn_softcap",
    "final_softcap", "batch", "seq_len", "grad_accum", "dtype", "method", "lora_rank", "lora_targets", "lora_dropout",
    "adapter_dtype", "attention", "attention_dropout", "checkpointing", "loss", "loss_chunk", "head_trainable",
    "optimizer", "optimizer_impl", "optimizer_in_backward", "device", "torch_version", "world_size", "sharding",
    "use_orig_params", "no_sync", "use_dora",
    "lora_fa",
    "peft_type", "virtual_tokens", "init_lora_weights", "encoder_hidden_size", "prefix_projection",
]
MEASURED_COLUMNS = [
    "params", "trainable_params", "param_bytes", "saved_activation_bytes", "saved_param_bytes",
    "saved_shared_bytes", "live_after_forward_delta", "state_bytes", "start_grad_bytes", "start_bytes", "forward_peak",
    "after_forward", "backward_peak", "after_backward", "optimizer_peak", "after_step", "after_zero_grad",
    "load_peak", "after_load",
]
COLUMNS = CONFIG_COLUMNS + MEASURED_COLUMNS

BASE = dict(kind="", layers=1, batch=2, seq_len=32, grad_accum=1, dtype="bf16", method="full", lora_rank="", lora_targets="",
            lora_dropout="", adapter_dtype="", attention="sdpa", attention_dropout="", checkpointing="none",
            loss="", loss_chunk="", head_trainable="", optimizer="", optimizer_impl="", optimizer_in_backward=0, device="cpu",
            world_size=1, sharding="", use_orig_params="", no_sync="")


def lora(targets="all-linear", rank=8, dropout=0.0, adapter_dtype="same", dora=False, fa=False):
    return dict(method="lora", lora_rank=rank, lora_targets=targets, lora_dropout=dropout,
                adapter_dtype=adapter_dtype, use_dora="1" if dora else "", lora_fa="1" if fa else "")


def peft(peft_type, targets="all-linear", rank="", dropout=0.0, adapter_dtype="same", virtual_tokens="",
         encoder_hidden="", projection=False):
    """A PEFT method other than LoRA over the frozen base (method stays "lora": a frozen base with adapters)."""
    return dict(method="lora", peft_type=peft_type, lora_rank=rank, lora_targets=targets, lora_dropout=dropout,
                adapter_dtype=adapter_dtype, virtual_tokens=virtual_tokens, encoder_hidden_size=encoder_hidden,
                prefix_projection="1" if projection else "")


def _row(kind, family, **overrides):
    row = dict(BASE, kind=kind, family=family)
    row.update({k: v for k, v in SHAPES[family].items()})
    row.update(overrides)
    return row


def family_block_rows(family):
    """The block variants every family is measured under."""
    return [_row("block", family),                                             # full, bf16, sdpa
            _row("block", family, attention="eager"),
            _row("block", family, dtype="fp32", attention="eager"),
            _row("block", family, dtype="autocast"),
            _row("block", family, **lora()),                                   # LoRA all-linear, bf16 adapters
            _row("block", family, **lora(adapter_dtype="fp32")),               # PEFT's autocast_adapter_dtype
            _row("block", family, attention="eager",
                 **lora({"phi3": "qkv_proj", "gpt_neox": "query_key_value",
                         "deepseek_v3": "q_b_proj,kv_b_proj"}.get(family, "q_proj,v_proj"))),
            _row("block", family, **lora(dropout=0.1)),
            _row("block", family, dtype="fp32", **lora(adapter_dtype="fp32"))]


def block_rows():
    rows = []
    for family in (f for f in SHAPES if f not in LATER_FAMILIES + APPENDED_FAMILIES):
        rows += family_block_rows(family)
    # Sizes and the remaining switches on Llama and Qwen3.
    for family in ("llama", "qwen3"):
        rows.append(_row("block", family, batch=1, seq_len=128))
        rows.append(_row("block", family, batch=4, seq_len=16, attention="eager"))
        rows.append(_row("block", family, attention="eager", attention_dropout=0.1))
        rows.append(_row("block", family, dtype="autocast", **lora()))
        rows.append(_row("block", family, dtype="autocast", attention="eager", **lora(dropout=0.1)))
        rows.append(_row("block", family, **lora("o_proj,down_proj", rank=16)))
    rows.append(_row("block", "mixtral", **lora("gate,q_proj")))
    rows.append(_row("block", "qwen3_moe", dtype="fp32"))
    return rows


def loss_rows():
    rows = []
    for family in ("llama", "qwen3", "gemma2"):
        for dtype in ("bf16", "fp32", "autocast"):
            for trainable in ("0", "1"):
                rows.append(_row("loss", family, dtype=dtype, loss="hf", head_trainable=trainable))
    for family, chunk in (("llama", 16), ("qwen3", 32), ("gemma2", 24)):
        for dtype in ("bf16", "fp32"):
            for trainable in ("0", "1"):
                rows.append(_row("loss", family, dtype=dtype, loss="trl_chunked", loss_chunk=chunk,
                                 head_trainable=trainable))
    for family, chunks in (("llama", 8), ("qwen3", 4)):
        for dtype in ("bf16", "fp32"):
            for trainable in ("0", "1"):
                rows.append(_row("loss", family, dtype=dtype, loss="torchtune_chunked", loss_chunk=chunks,
                                 head_trainable=trainable))
    rows.append(_row("loss", "llama", batch=1, seq_len=96, loss="hf", head_trainable="0"))
    rows.append(_row("loss", "llama", batch=1, seq_len=96, loss="trl_chunked", loss_chunk=40, head_trainable="0"))
    rows.append(_row("loss", "qwen3", batch=4, seq_len=16, loss="torchtune_chunked", loss_chunk=2,
                     head_trainable="1"))
    return rows


def optimizer_rows():
    rows = []
    for optimizer in ("adamw", "adam", "sgd_momentum", "adagrad", "rmsprop"):
        for impl in ("for_loop", "foreach"):
            rows.append(_row("optimizer", "llama", layers=2, dtype="fp32", optimizer=optimizer, optimizer_impl=impl))
    for impl in ("for_loop", "foreach"):
        rows.append(_row("optimizer", "llama", layers=2, dtype="bf16", optimizer="adamw", optimizer_impl=impl))
        rows.append(_row("optimizer", "qwen3", layers=2, dtype="bf16", optimizer="sgd_momentum", optimizer_impl=impl))
        rows.append(_row("optimizer", "qwen3", layers=2, dtype="fp32", optimizer="adamw", optimizer_impl=impl,
                         **lora()))
        rows.append(_row("optimizer", "mixtral", layers=2, dtype="bf16", optimizer="adamw", optimizer_impl=impl,
                         **lora(adapter_dtype="fp32")))
    return rows


def step_rows():
    rows = []

    def step(family, **kw):
        kw.setdefault("layers", 2)
        kw.setdefault("loss", "hf")
        kw.setdefault("optimizer", "adamw")
        kw.setdefault("optimizer_impl", "for_loop")
        rows.append(_row("step", family, **kw))

    # Full fine-tuning, the precision routes torch has (pure bf16, fp32, fp32 weights under autocast).
    for family in ("llama", "qwen3", "gemma2", "phi3", "mixtral"):
        step(family, dtype="fp32")
        step(family, dtype="bf16")
    step("llama", dtype="autocast")
    step("qwen3", dtype="autocast", optimizer_impl="foreach")
    step("llama", dtype="fp32", optimizer_impl="foreach")
    step("llama", dtype="fp32", optimizer="sgd_momentum")
    step("qwen2", dtype="fp32", attention="eager")
    step("mistral", dtype="bf16", attention="eager")
    # Checkpointing, reentrant and not.
    for ckpt in ("reentrant", "non_reentrant"):
        step("llama", dtype="fp32", checkpointing=ckpt)
        step("qwen3", dtype="bf16", checkpointing=ckpt, **lora())
    step("gemma2", dtype="bf16", checkpointing="non_reentrant", attention="eager")
    # LoRA: the adapter dtypes, targets and dropout; the loss heads.
    step("llama", dtype="bf16", **lora())
    step("llama", dtype="bf16", **lora(adapter_dtype="fp32"))
    step("llama", dtype="bf16", **lora("q_proj,v_proj"))
    step("qwen3", dtype="bf16", **lora(dropout=0.1))
    step("phi3", dtype="bf16", **lora(adapter_dtype="fp32"))
    step("qwen3_moe", dtype="bf16", **lora())
    step("llama", dtype="autocast", **lora())
    step("llama", dtype="bf16", loss="trl_chunked", loss_chunk=16, checkpointing="non_reentrant",
         **lora(adapter_dtype="fp32"))
    step("qwen3", dtype="fp32", loss="trl_chunked", loss_chunk=32)
    step("llama", dtype="bf16", loss="torchtune_chunked", loss_chunk=8, optimizer_impl="foreach")
    step("qwen3", dtype="bf16", loss="torchtune_chunked", loss_chunk=4, checkpointing="reentrant", **lora())
    step("llama", dtype="fp32", layers=4, batch=1, seq_len=64)
    # Gradient accumulation: the measured micro-batch is the second, its forward runs with the gradients.
    step("llama", dtype="fp32", grad_accum=2)
    step("qwen3", dtype="bf16", grad_accum=2, **lora())
    step("gemma2", dtype="bf16", grad_accum=2, checkpointing="reentrant")
    # The optimizer stepped inside backward (torchtune optimizer_in_bwd): one optimizer per parameter.
    step("llama", dtype="fp32", optimizer_in_backward=1)
    step("llama", dtype="fp32", optimizer_in_backward=1, optimizer_impl="foreach")
    step("qwen3", dtype="bf16", optimizer_in_backward=1)
    step("gemma2", dtype="fp32", optimizer_in_backward=1, checkpointing="non_reentrant")
    step("llama", dtype="bf16", optimizer_in_backward=1, optimizer="sgd_momentum", **lora())
    return rows


def later_rows():
    """Rows added after the first grid, appended so that every earlier id stays the same."""
    rows = []
    # torchtune's LinearCrossEntropyLoss: ignored tokens masked out, the head applied per token chunk.
    for family, chunks in (("llama", 8), ("qwen3", 4), ("gemma2", 3)):
        for dtype in ("bf16", "fp32"):
            for trainable in ("0", "1"):
                rows.append(_row("loss", family, dtype=dtype, loss="torchtune_linear_ce", loss_chunk=chunks,
                                 head_trainable=trainable))
    rows.append(_row("loss", "llama", batch=1, seq_len=50, loss="torchtune_linear_ce", loss_chunk=8,
                     head_trainable="1"))
    for trainable in ("0", "1"):
        rows.append(_row("loss", "llama", dtype="autocast", loss="torchtune_linear_ce", loss_chunk=4,
                         head_trainable=trainable))
    rows.append(_row("loss", "qwen3", batch=1, seq_len=6, loss="torchtune_linear_ce", loss_chunk=8,
                     head_trainable="1"))
    rows.append(_row("step", "llama", dtype="bf16", layers=2, loss="torchtune_linear_ce", loss_chunk=8,
                     optimizer="adamw", optimizer_impl="for_loop"))
    rows.append(_row("step", "qwen3", dtype="bf16", layers=2, loss="torchtune_linear_ce", loss_chunk=4,
                     checkpointing="non_reentrant", optimizer="adamw", optimizer_impl="for_loop", **lora()))
    # The load phase: a model built in fp32, cast to bf16 with module.to (tensor by tensor).
    for family in ("llama", "qwen3", "gemma2", "phi3", "mistral"):
        rows.append(_row("load", family, layers=2, dtype="fp32"))
    rows.append(_row("load", "qwen2", layers=3, dtype="fp32", vocab=128))  # MLP weights larger than the table
    # DoRA (PEFT use_dora): the magnitude's saved tensors, and the weight-norm temporaries of each forward.
    # (fp32 adapters only: torch 1.13 has no bf16 torch.eye on the CPU, which DoRA's get_lora_weight calls.)
    for family in ("llama", "qwen3", "phi3"):
        rows.append(_row("block", family, dtype="bf16", **lora(dora=True, adapter_dtype="fp32")))
        rows.append(_row("block", family, dtype="fp32", **lora(dora=True)))
    rows.append(_row("block", "llama", dtype="fp32", **lora(dora=True, targets="q_proj,v_proj")))
    rows.append(_row("block", "mistral", dtype="bf16", **lora(dora=True, dropout=0.1, adapter_dtype="fp32")))
    rows.append(_row("step", "llama", dtype="bf16", layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop",
                     **lora(dora=True, adapter_dtype="fp32")))
    rows.append(_row("step", "qwen3", dtype="fp32", layers=2, loss="hf", checkpointing="non_reentrant",
                     optimizer="adamw", optimizer_impl="for_loop", **lora(dora=True)))
    # LoRA-FA (peft create_lorafa_optimizer freezes lora_A): less saved, B alone trains (AdamW over B here).
    for family in ("llama", "qwen3"):
        rows.append(_row("block", family, dtype="bf16", **lora(fa=True)))
        rows.append(_row("block", family, dtype="bf16", **lora(fa=True, dropout=0.1, adapter_dtype="fp32")))
    rows.append(_row("optimizer", "llama", dtype="bf16", optimizer="adamw", optimizer_impl="foreach", **lora(fa=True)))
    rows.append(_row("step", "llama", dtype="bf16", layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop",
                     **lora(fa=True)))
    # IA3: PEFT's default targets (k_proj, v_proj, down_proj; feedforward down_proj), fp32 and base-dtype vectors.
    ia3 = dict(targets="k_proj,v_proj,down_proj")
    for family in ("llama", "qwen3", "mixtral"):
        rows.append(_row("block", family, dtype="bf16", **peft("ia3", adapter_dtype="fp32", **ia3)))
    rows.append(_row("block", "llama", dtype="fp32", **peft("ia3", **ia3)))
    rows.append(_row("block", "mistral", dtype="bf16", **peft("ia3", **ia3)))
    rows.append(_row("block", "llama", dtype="autocast", **peft("ia3", **ia3)))
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("ia3", adapter_dtype="fp32", **ia3)))
    rows.append(_row("step", "qwen3", dtype="fp32", checkpointing="non_reentrant", **step_kw, **peft("ia3", **ia3)))
    # VeRA: shared projections, two vectors per module.
    for family in ("llama", "qwen3", "phi3"):
        rows.append(_row("block", family, dtype="bf16", **peft("vera", rank=16, adapter_dtype="fp32")))
    rows.append(_row("block", "llama", dtype="fp32", **peft("vera", rank=16, dropout=0.1)))
    rows.append(_row("block", "llama", dtype="autocast", **peft("vera", rank=16)))
    rows.append(_row("block", "mistral", dtype="bf16", **peft("vera", targets="q_proj,v_proj", rank=32)))
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("vera", rank=16, adapter_dtype="fp32")))
    rows.append(_row("step", "qwen3", dtype="fp32", checkpointing="reentrant", **step_kw, **peft("vera", rank=16)))
    # LN tuning: a trainable copy of every norm.
    for family in ("llama", "qwen3", "gemma2"):
        rows.append(_row("block", family, dtype="bf16", **peft("ln_tuning")))
        rows.append(_row("block", family, dtype="fp32", **peft("ln_tuning")))
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("ln_tuning")))
    rows.append(_row("step", "gemma2", dtype="fp32", checkpointing="non_reentrant", **step_kw, **peft("ln_tuning")))
    # Prompt tuning: fp32 virtual-token embeddings prepended; every block and the loss see s + P positions.
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("prompt_tuning", virtual_tokens=8)))
    rows.append(_row("step", "qwen3", dtype="fp32", **step_kw, **peft("prompt_tuning", virtual_tokens=12)))
    rows.append(_row("step", "gemma2", dtype="bf16", checkpointing="non_reentrant", **step_kw,
                     **peft("prompt_tuning", virtual_tokens=4)))
    # LoRA initialised from the base weights (init_lora_weights): an fp32 SVD or QR per adapted module.
    for init in ("pissa", "pissa_niter_4", "olora"):
        for family, dtype in (("llama", "bf16"), ("qwen3", "fp32"), ("mixtral", "bf16")):
            # (not Mixtral's router: its 4 outputs are fewer than r, which svd_lowrank refuses)
            targets = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj" if family == "mixtral" else "all-linear"
            rows.append(_row("init", family, dtype=dtype, init_lora_weights=init, **lora(targets)))
    rows.append(_row("init", "phi3", dtype="bf16", init_lora_weights="pissa", **lora(rank=16)))
    rows.append(_row("init", "llama", dtype="bf16", init_lora_weights="olora", **lora("q_proj,v_proj", rank=4)))
    # P-tuning: the MLP encoder's saved tensors (one copy of the prompts), then s + P positions as prompt tuning.
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("p_tuning", virtual_tokens=8)))
    rows.append(_row("step", "qwen3", dtype="fp32", **step_kw, **peft("p_tuning", virtual_tokens=6, encoder_hidden=48)))
    rows.append(_row("step", "llama", dtype="autocast", attention="eager", **step_kw,
                     **peft("p_tuning", virtual_tokens=4, encoder_hidden=32)))
    # Prefix tuning: s queries over P + s keys in every layer, the prefix's keys and values requiring grad.
    for family, attention in (("llama", "sdpa"), ("qwen3", "sdpa"), ("mistral", "eager"), ("phi3", "eager")):
        rows.append(_row("block", family, dtype="bf16", attention=attention, **peft("prefix_tuning", virtual_tokens=8)))
    rows.append(_row("block", "qwen3", dtype="fp32", **peft("prefix_tuning", virtual_tokens=5)))
    rows.append(_row("block", "llama", dtype="autocast", attention="eager", **peft("prefix_tuning", virtual_tokens=4)))
    rows.append(_row("step", "llama", dtype="bf16", **step_kw, **peft("prefix_tuning", virtual_tokens=8)))
    rows.append(_row("step", "qwen3", dtype="fp32", **step_kw,
                     **peft("prefix_tuning", virtual_tokens=6, encoder_hidden=48, projection=True)))
    rows.append(_row("step", "mistral", dtype="bf16", attention="eager", **step_kw,
                     **peft("prefix_tuning", virtual_tokens=4, projection=True)))
    rows.append(_row("step", "llama", dtype="autocast", attention="eager", **step_kw,
                     **peft("prefix_tuning", virtual_tokens=4, encoder_hidden=40, projection=True)))
    # OLMo-2 (output norms, full-width q/k norms) and Granite (scalar multipliers, logits / logits_scaling).
    for family in LATER_FAMILIES:
        rows += family_block_rows(family)
        rows.append(_row("step", family, dtype="bf16", **step_kw))
        rows.append(_row("step", family, dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    rows.append(_row("loss", "granite", dtype="bf16", loss="hf", head_trainable="0"))
    rows.append(_row("loss", "granite", dtype="fp32", loss="hf", head_trainable="1"))
    return rows


def starcoder2_rows():
    """StarCoder2's blocks under every variant, attention dropout, LN tuning (weight and bias), its MLP adapted
    alone, and whole steps (embedding dropout, the final LayerNorm)."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("starcoder2")
    rows.append(_row("block", "starcoder2", attention="eager", attention_dropout=0.1))
    rows.append(_row("block", "starcoder2", dtype="autocast", attention="eager", attention_dropout=0.1, **lora()))
    rows.append(_row("block", "starcoder2", **lora("c_fc,c_proj", rank=16)))
    rows.append(_row("block", "starcoder2", dtype="bf16", **peft("ln_tuning")))
    rows.append(_row("step", "starcoder2", dtype="bf16", **step_kw))
    rows.append(_row("step", "starcoder2", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    rows.append(_row("step", "starcoder2", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("loss", "starcoder2", dtype="bf16", loss="hf", head_trainable="1"))
    return rows


def gpt_neox_rows():
    """GPT-NeoX (Pythia) blocks under every variant and PEFT's default target, LN tuning, and whole steps: over
    frozen embeddings without checkpointing the first layer's parallel MLP keeps nothing."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("gpt_neox")
    rows.append(_row("block", "gpt_neox", attention="eager", attention_dropout=0.1))
    rows.append(_row("block", "gpt_neox", **lora("query_key_value", rank=16)))
    rows.append(_row("block", "gpt_neox", **lora("dense_h_to_4h,dense_4h_to_h")))
    rows.append(_row("block", "gpt_neox", dtype="fp32", **peft("ln_tuning")))
    rows.append(_row("step", "gpt_neox", dtype="bf16", **step_kw))
    rows.append(_row("step", "gpt_neox", dtype="bf16", **step_kw, **lora("query_key_value")))
    rows.append(_row("step", "gpt_neox", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("step", "gpt_neox", dtype="autocast", **step_kw, **lora("dense_4h_to_h", adapter_dtype="fp32")))
    rows.append(_row("step", "gpt_neox", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    rows.append(_row("loss", "gpt_neox", dtype="bf16", loss="hf", head_trainable="1"))
    return rows


def cohere_rows():
    """Cohere blocks (q/k/v and gate/up reading one norm output), with and without q/k norms, and whole steps:
    over frozen embeddings the first layer's MLP keeps only what its adapters need; the scaled logits."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("cohere") + family_block_rows("cohere_qk")
    rows.append(_row("block", "cohere", dtype="bf16", **peft("ln_tuning")))
    rows.append(_row("block", "cohere_qk", dtype="fp32", **peft("ln_tuning")))
    rows.append(_row("block", "cohere", **lora("gate_proj,down_proj", rank=16)))
    rows.append(_row("step", "cohere", dtype="bf16", **step_kw))
    rows.append(_row("step", "cohere", dtype="bf16", **step_kw, **lora("q_proj,v_proj")))
    rows.append(_row("step", "cohere", dtype="autocast", **step_kw, **lora("down_proj", adapter_dtype="fp32")))
    rows.append(_row("step", "cohere_qk", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("step", "cohere_qk", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    rows.append(_row("loss", "cohere", dtype="bf16", loss="hf", head_trainable="1"))
    rows.append(_row("loss", "cohere", dtype="fp32", loss="hf", head_trainable="0"))
    return rows


def deepseek_rows():
    """DeepSeek-V3 MoE blocks (MLA attention, sigmoid routing, the shared expert) under every variant and MLA's
    own modules adapted alone, and whole steps over a dense first layer and an MoE second."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("deepseek_v3")
    rows.append(_row("block", "deepseek_v3", attention="eager", attention_dropout=0.1))
    rows.append(_row("block", "deepseek_v3", **lora("q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj", rank=16)))
    rows.append(_row("block", "deepseek_v3", dtype="autocast", **lora()))
    rows.append(_row("step", "deepseek_v3", dtype="bf16", **step_kw))
    rows.append(_row("step", "deepseek_v3", dtype="bf16", **step_kw, **lora("q_b_proj,kv_b_proj")))
    rows.append(_row("step", "deepseek_v3", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("step", "deepseek_v3", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    rows.append(_row("loss", "deepseek_v3", dtype="bf16", loss="hf", head_trainable="1"))
    return rows


def qwen2_moe_rows():
    """Qwen2-MoE blocks (the router, the shared expert and its gate read one input) under every variant, the
    shared expert's gate adapted, and whole steps."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("qwen2_moe")
    rows.append(_row("block", "qwen2_moe", **lora("shared_expert_gate,gate", rank=4)))
    rows.append(_row("block", "qwen2_moe", dtype="autocast", **lora()))
    rows.append(_row("step", "qwen2_moe", dtype="bf16", **step_kw))
    rows.append(_row("step", "qwen2_moe", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("step", "qwen2_moe", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    return rows


def cohere2_rows():
    """Cohere2 blocks (a sliding-window layer, with RoPE) and whole 4-layer steps whose last layer is global (no
    RoPE); the scaled logits."""
    step_kw = dict(layers=4, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = [_row("block", "cohere2"), _row("block", "cohere2", attention="eager"), _row("block", "cohere2", **lora())]
    rows.append(_row("step", "cohere2", dtype="bf16", **step_kw))
    rows.append(_row("step", "cohere2", dtype="autocast", attention="eager", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("loss", "cohere2", dtype="bf16", loss="hf", head_trainable="1"))
    return rows


def gpt_oss_rows():
    """gpt-oss blocks (sinks, the biased router, 3-D experts with the clamped SwiGLU) in eager attention, LoRA on
    q/k/v/o (all-linear: the experts and router are not nn.Linear), and whole steps."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop", attention="eager")
    rows = [_row("block", "gpt_oss", attention="eager"), _row("block", "gpt_oss", dtype="fp32", attention="eager"),
            _row("block", "gpt_oss", dtype="autocast", attention="eager"),
            _row("block", "gpt_oss", attention="eager", **lora()),
            _row("block", "gpt_oss", attention="eager", **lora(adapter_dtype="fp32")),
            _row("block", "gpt_oss", attention="eager", **lora("q_proj,v_proj", dropout=0.1))]
    rows.append(_row("step", "gpt_oss", dtype="bf16", **step_kw))
    # (bf16: autocast's per-expert weight casts depend on how many experts a 64-token step hits; the blocks,
    # whose random inputs reach every expert, check those)
    rows.append(_row("step", "gpt_oss", dtype="bf16", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("block", "gpt_oss", dtype="autocast", attention="eager", **lora(adapter_dtype="fp32")))
    return rows


def llama4_rows():
    """Llama-4 blocks: an MoE layer with RoPE and the L2 q/k norm (every expert on every token), a NoPE layer (q
    scaled by the temperature) and a dense layer, under the block variants; whole steps over 4 layers (the last
    NoPE; Maverick's interleaving: dense, MoE, dense, MoE)."""
    step_kw = dict(layers=4, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    rows = family_block_rows("llama4")
    rows += [_row("block", "llama4_nope"), _row("block", "llama4_nope", dtype="fp32", attention="eager"),
             _row("block", "llama4_nope", dtype="autocast"), _row("block", "llama4_nope", **lora("q_proj,v_proj")),
             _row("block", "llama4_dense"), _row("block", "llama4_dense", dtype="autocast", **lora(adapter_dtype="fp32"))]
    rows.append(_row("step", "llama4", dtype="bf16", **step_kw))
    rows.append(_row("step", "llama4", dtype="autocast", **step_kw, **lora(adapter_dtype="fp32")))
    rows.append(_row("step", "llama4_dense", dtype="bf16", **step_kw))
    rows.append(_row("step", "llama4_dense", dtype="fp32", checkpointing="non_reentrant", **step_kw, **lora()))
    return rows


def siglip_rows():
    """A vision tower's encoder layer, trained (full fine-tuning only: adapters leave the tower frozen), on
    batches of images' patches: bidirectional SDPA and eager attention, bf16, fp32 and autocast."""
    return [_row("block", "siglip"), _row("block", "siglip", attention="eager"),
            _row("block", "siglip", dtype="fp32", attention="eager"), _row("block", "siglip", dtype="autocast"),
            _row("block", "siglip", batch=4, seq_len=64)]


def fsdp_rows():
    """One rank of FSDP1 (FullyShardedDataParallel, a unit per decoder layer and the root) at 2 and 4 ranks, torch
    2.x only: full_shard and shard_grad_op over flat parameters (use_orig_params False), gradient accumulation with
    the gradients synced every micro-batch and under no_sync (accelerate's default)."""
    step_kw = dict(layers=2, loss="hf", optimizer="adamw", optimizer_impl="for_loop")
    out = []
    for world in (2, 4):
        def fsdp(family="llama", sharding="full_shard", orig="0", **kw):
            out.append(_row("fsdp", family, world_size=world, sharding=sharding, use_orig_params=orig,
                            **dict(step_kw, **kw)))
        for sharding in ("full_shard", "shard_grad_op"):
            fsdp(sharding=sharding, dtype="fp32")
            fsdp(sharding=sharding, dtype="bf16")
            fsdp(sharding=sharding, dtype="fp32", grad_accum=2, no_sync="1")
        fsdp(dtype="fp32", grad_accum=2, no_sync="0")
        fsdp(family="qwen2", dtype="bf16")
    # Eight narrow layers over a small vocabulary: the wrap's worst moment is the first layer's, not the root's.
    for world in (2, 4):
        out.append(_row("fsdp", "mistral", world_size=world, sharding="full_shard", use_orig_params="0",
                        **dict(step_kw, layers=8, dtype="fp32")))
    # FSDP1's MixedPrecision over fp32 FlatParameters (accelerate's bf16 policy): bf16 gathers and gradients.
    for world in (2, 4):
        def mixed(family="llama", sharding="full_shard", layers=2, **kw):
            out.append(_row("fsdp", family, world_size=world, sharding=sharding, use_orig_params="0",
                            **dict(step_kw, layers=layers, dtype="bf16_mixed", **kw)))
        mixed()
        mixed(sharding="shard_grad_op")
        mixed(grad_accum=2, no_sync="0")
        mixed(grad_accum=2, no_sync="1")
        mixed(family="qwen2")
        mixed(family="mistral", layers=8)
    # use_orig_params=True (the Trainer's fsdp_config default): the optimizer steps the original parameters'
    # views of the rank's slices.
    for world in (2, 4):
        def orig(family="llama", sharding="full_shard", layers=2, dtype="fp32", **kw):
            out.append(_row("fsdp", family, world_size=world, sharding=sharding, use_orig_params="1",
                            **dict(step_kw, layers=layers, dtype=dtype, **kw)))
        orig()
        orig(dtype="bf16")
        orig(dtype="bf16_mixed")
        orig(sharding="shard_grad_op")
        orig(grad_accum=2, no_sync="0")
        orig(grad_accum=2, no_sync="1")
        orig(family="qwen2", dtype="bf16")
        orig(family="mistral", layers=8)
    return out


def rows(torch2=False):
    """Every row of the grid; ``torch2``: with the rows only torch 2.x can measure, appended last."""
    out = (block_rows() + loss_rows() + optimizer_rows() + step_rows() + later_rows() + starcoder2_rows()
           + gpt_neox_rows() + cohere_rows() + deepseek_rows() + qwen2_moe_rows() + cohere2_rows() + gpt_oss_rows()
           + llama4_rows() + siglip_rows() + (fsdp_rows() if torch2 else []))
    for i, row in enumerate(out):
        row["id"] = f"{row['kind']}-{i:03d}"
    return out


# A quick subset (--ci): one row of each kind and mechanism, for a check in seconds. CI re-measures all.
CI_ROWS = ["block-000", "block-005", "block-037", "block-054", "block-075", "loss-087", "loss-099", "loss-107",
           "loss-117", "optimizer-127", "optimizer-133", "step-149", "step-163", "step-166", "step-173",
           "step-181", "loss-187", "loss-199", "step-202", "load-204", "block-210", "step-218", "block-220", "step-225",
           "block-226", "step-232", "block-238", "step-240", "block-246", "step-249", "step-252", "init-253",
           "init-259", "step-266", "block-267", "block-270", "step-276", "block-369", "step-379", "fsdp-437",
           "fsdp-448", "fsdp-462", "fsdp-470"]
