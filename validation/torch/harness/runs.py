"""One measurement per row kind: a decoder block's saved tensors, a loss head, an optimizer step, a whole step.

Every function takes a row (a dict of the configuration columns) and returns the measured columns.  All
sizes are bytes.  ``start_bytes`` is the live total when the measured region begins; the phase columns are
absolute live totals (start included), so a difference of two columns is what the region allocated.
"""
import contextlib
import gc
import multiprocessing

import torch

from . import modules
from .instruments import LiveBytes, SavedTensors, distinct_bytes, optimizer_state_bytes, storage_key

# bf16_mixed: an fp32 model that FSDP1 computes in bf16 (MixedPrecision, as accelerate sets it up for bf16).
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "autocast": torch.float32, "bf16_mixed": torch.float32}


def model_config(row, layers=None):
    cfg = {k: int(row[k]) for k in ("hidden", "intermediate", "heads", "kv_heads", "head_dim", "vocab")}
    cfg["family"], cfg["attention"] = row["family"], row["attention"]
    cfg["layers"] = layers if layers is not None else int(row["layers"])
    cfg["tied"] = row["tied"] == "1"
    cfg["attention_dropout"] = float(row["attention_dropout"] or 0)
    for key, cast in (("experts", int), ("experts_per_tok", int), ("moe_intermediate", int),
                      ("attn_softcap", float), ("final_softcap", float), ("query_pre_attn_scalar", int)):
        if row.get(key):
            cfg[key] = cast(row[key])
    if row.get("norm_topk"):
        cfg["norm_topk"] = row["norm_topk"] == "1"
    return cfg


def build_model(row, layers=None):
    """The model in the row's dtype, LoRA applied if asked, in training mode."""
    model = modules.build(model_config(row, layers))
    model.to(DTYPES[row["dtype"]])
    peft_type = row.get("peft_type") or "lora"
    if row["method"] == "lora" and peft_type != "lora":
        adapter_dtype = torch.float32 if row["adapter_dtype"] == "fp32" else DTYPES[row["dtype"]]
        modules.apply_peft(model, peft_type, row["lora_targets"], int(row["lora_rank"] or 0),
                           float(row["lora_dropout"] or 0), adapter_dtype,
                           virtual_tokens=int(row.get("virtual_tokens") or 0),
                           encoder_hidden=int(row.get("encoder_hidden_size") or 0),
                           projection=row.get("prefix_projection") == "1")
    elif row["method"] == "lora":
        adapter_dtype = torch.float32 if row["adapter_dtype"] == "fp32" else None
        modules.apply_lora(model, row["lora_targets"], int(row["lora_rank"]), 2 * int(row["lora_rank"]),
                           float(row["lora_dropout"] or 0), adapter_dtype, row.get("use_dora") == "1")
        if row.get("lora_fa") == "1":  # peft/optimizers/lorafa.py: every lora_A frozen
            for name, p in model.named_parameters():
                if "lora_A" in name:
                    p.requires_grad_(False)
    model.train()
    return model


def autocast(row):
    if row["dtype"] == "autocast":
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def counts(model):
    params = list(model.parameters())
    return {
        "params": sum(p.numel() for p in params),
        "trainable_params": sum(p.numel() for p in params if p.requires_grad),
        "param_bytes": distinct_bytes(params),
    }


def run_block(row):
    """One decoder layer on a hidden-state input that requires grad (a middle layer of a model)."""
    # DeepSeek's first layers are dense: its block rows measure the first MoE layer.
    first_moe = modules.FAMILIES[row["family"]].get("first_k_dense", 0)
    model = build_model(row, layers=first_moe + 1)
    layer = model.layers[first_moe]
    b, s, d = int(row["batch"]), int(row["seq_len"]), int(row["hidden"])
    torch.manual_seed(1)
    # A middle layer's input is the previous layer's output, not a leaf: autocast caches the bf16 cast of a
    # leaf that requires grad (torch cached_cast), which linears reading x directly (OLMo-2) would share.
    x = torch.randn(b, s, d, dtype=DTYPES[row["dtype"]], requires_grad=True).clone()
    past, start, prefix = None, 0, ()
    if model.prefix:  # a middle layer's past keys and values, as get_prompt makes them (they require grad)
        start = model.prompt_tokens.numel()
        with torch.no_grad():
            key, value = model.past_key_values(b, x.dtype)[0]
        prefix = (key.clone().requires_grad_(True), value.clone().requires_grad_(True))
        past = (*prefix, None)  # the cache itself is the model's (forward_cached), not the layer's
    with torch.no_grad():
        cos, sin = model.rotary_emb(x, torch.arange(start, start + s).unsqueeze(0))
    mask = modules.causal_mask(b, s, x.dtype, start) if row["attention"] == "eager" or start else None
    live = LiveBytes()
    with live, SavedTensors(params=model.parameters(), shared=(cos, sin, mask, *prefix)) as saved:
        live.mark("forward")
        with autocast(row):
            y = layer(x, mask, (cos, sin), past)
        live.mark("end")
    seg = live.timeline()
    out = counts(layer)
    # The second instrument's view of the same set: what the forward allocated and left alive, less its
    # output, plus the input itself when a layer saves it (an fp32 stream: the first norm keeps x as is).
    x_ptr, x_bytes = storage_key(x)
    input_saved = x_bytes if x_ptr in saved.activations else 0
    out.update(saved_activation_bytes=saved.activation_bytes, saved_param_bytes=saved.param_bytes,
               saved_shared_bytes=saved.shared_bytes,
               live_after_forward_delta=seg["forward"][1] - seg["start"][1] - distinct_bytes([y]) + input_saved)
    saved.release()
    if row.get("use_dora") == "1":
        # DoRA builds a graph in forward that dies with it (the weight norm from lora_B(lora_A(eye))): the pack
        # hook sees those saves, and holding them keeps them alive. What backward keeps is what a second,
        # uninstrumented forward leaves alive.
        del y  # the first forward's graph goes before the second is measured
        gc.collect()
        live = LiveBytes()
        with live:
            live.mark("forward")
            with autocast(row):
                y = layer(x, mask, (cos, sin), past)
            live.mark("end")
        seg = live.timeline()
        out["live_after_forward_delta"] = seg["forward"][1] - seg["start"][1] - distinct_bytes([y]) + input_saved
        out["forward_peak"] = seg["forward"][0]
        out["start_bytes"] = seg["start"][1]
    return out


def run_loss(row):
    """The loss head alone: final hidden states (requiring grad) → lm_head → loss, forward and backward."""
    model = build_model(row, layers=0)
    head = model.lm_head.weight
    head.requires_grad_(row["head_trainable"] == "1")
    b, s, d, v = int(row["batch"]), int(row["seq_len"]), int(row["hidden"]), int(row["vocab"])
    torch.manual_seed(1)
    hidden = torch.randn(b, s, d, dtype=DTYPES[row["dtype"]], requires_grad=True)
    labels = torch.randint(0, v, (b, s))
    num_items = modules.num_items_in_batch(labels)
    live = LiveBytes()
    with live:
        live.mark("forward")
        with autocast(row):
            loss = modules.loss_from_hidden(model, hidden, labels, row["loss"], int(row["loss_chunk"] or 0),
                                            num_items)
        live.mark("backward")
        loss.backward()
        live.mark("end")
    seg = live.timeline()
    return {
        "start_bytes": seg["start"][1], "forward_peak": seg["forward"][0], "after_forward": seg["forward"][1],
        "backward_peak": seg["backward"][0], "after_backward": seg["backward"][1],
    }


OPTIMIZERS = {
    "adamw": lambda ps, foreach: torch.optim.AdamW(ps, lr=1e-3, foreach=foreach),
    "adam": lambda ps, foreach: torch.optim.Adam(ps, lr=1e-3, foreach=foreach),
    "sgd_momentum": lambda ps, foreach: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=foreach),
    "adagrad": lambda ps, foreach: torch.optim.Adagrad(ps, lr=1e-3, foreach=foreach),
    "rmsprop": lambda ps, foreach: torch.optim.RMSprop(ps, lr=1e-3, foreach=foreach),
}


class InBackward:
    """torchtune's optimizer_in_bwd: one optimizer per parameter, stepped (and its gradient freed) by a hook
    as soon as the gradient is accumulated. torch 1.13 has no register_post_accumulate_grad_hook, so the
    hook sits on the parameter's AccumulateGrad node, which runs it right after accumulating."""

    def __init__(self, row, params):
        self.optimizers = {p: OPTIMIZERS[row["optimizer"]]([p], row["optimizer_impl"] == "foreach") for p in params}
        self.nodes = []
        for p in params:
            node = p.expand_as(p).grad_fn.next_functions[0][0]
            node.register_hook(self._hook(p))
            self.nodes.append(node)  # the node must outlive the hook registration
        self.state = {}
        for opt in self.optimizers.values():
            self.state.update(opt.state)

    def _hook(self, p):
        def step(*_):
            self.optimizers[p].step()
            self.optimizers[p].zero_grad(set_to_none=True)
        return step

    def step(self):  # the work happened in backward
        self.state = {}
        for opt in self.optimizers.values():
            self.state.update(opt.state)

    def zero_grad(self, set_to_none=True):
        pass


def make_optimizer(row, params):
    if str(row.get("optimizer_in_backward", "0")) == "1":
        return InBackward(row, params)
    return OPTIMIZERS[row["optimizer"]](params, row["optimizer_impl"] == "foreach")


def run_optimizer(row):
    """The trainable tensors of a model (full) or its adapters (LoRA), stepped twice; the second step measured."""
    model = build_model(row)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = make_optimizer(row, params)
    opt.step()
    state = optimizer_state_bytes(opt)
    live = LiveBytes()
    with live:
        live.mark("optimizer")
        opt.step()
        live.mark("end")
    seg = live.timeline()
    out = counts(model)
    out.update(state_bytes=state, start_bytes=seg["start"][1], optimizer_peak=seg["optimizer"][0],
               after_step=seg["optimizer"][1])
    return out


def forward_loss(model, row, input_ids, labels, num_items):
    """Trainer.compute_loss: the model's forward and loss under autocast; only the loss survives."""
    with autocast(row):
        hidden = model.hidden(input_ids)
        loss = modules.loss_from_hidden(model, hidden, labels, row["loss"], int(row["loss_chunk"] or 0), num_items)
    model.prefix_cache = None  # the model output (and prefix tuning's cache in it) goes when compute_loss returns
    return loss


def measured_step(live, compute_loss, opt):
    """The measured micro-batch: forward and loss, backward, the optimizer step and zero_grad(set_to_none), each
    phase marked."""
    live.mark("forward")
    loss = compute_loss()
    live.mark("backward")
    loss.backward()
    loss = loss.detach()  # Trainer.training_step returns loss.detach(): the graph goes before the step
    live.mark("optimizer")
    opt.step()
    live.mark("zero_grad")
    opt.zero_grad(set_to_none=True)
    live.mark("end")


def step_columns(seg, start):
    """The phase columns of a measured_step's timeline; ``start``: the live total when its forward began."""
    return dict(start_bytes=start, forward_peak=seg["forward"][0], after_forward=seg["forward"][1],
                backward_peak=seg["backward"][0], after_backward=seg["backward"][1],
                optimizer_peak=seg["optimizer"][0], after_step=seg["optimizer"][1],
                after_zero_grad=seg["zero_grad"][1])


def run_step(row):
    """A whole training step after a warm-up step: forward, backward, optimizer step, zero_grad(set_to_none)."""
    model = build_model(row)
    if row["checkpointing"] != "none":
        model.checkpointing = row["checkpointing"]
        model.input_requires_grad = row["method"] == "lora"  # TRL/PEFT: enable_input_require_grads
    b, s, v = int(row["batch"]), int(row["seq_len"]), int(row["vocab"])
    torch.manual_seed(1)
    input_ids = torch.randint(0, v, (b, s))
    labels = input_ids.clone()
    num_items = modules.num_items_in_batch(labels)
    if model.prompt_encoder is not None and not model.prefix:  # -100 labels for the virtual tokens
        prefix_labels = torch.full((b, model.prompt_tokens.numel()), -100)
        labels = torch.cat((prefix_labels, labels), dim=1)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(row, params)
    forward_loss(model, row, input_ids, labels, num_items).backward()  # warm-up: creates the optimizer state
    opt.step()
    opt.zero_grad(set_to_none=True)
    # Gradient accumulation: the earlier micro-batches leave their gradients for the measured last one.
    for _ in range(int(row["grad_accum"] or 1) - 1):
        forward_loss(model, row, input_ids, labels, num_items).backward()
    gc.collect()
    start_grads = distinct_bytes(p.grad for p in params)
    live = LiveBytes()
    with live:
        measured_step(live, lambda: forward_loss(model, row, input_ids, labels, num_items), opt)
    seg = live.timeline()
    out = counts(model)
    out.update(step_columns(seg, seg["start"][1]), state_bytes=optimizer_state_bytes(opt),
               start_grad_bytes=start_grads)
    if int(row["grad_accum"] or 1) > 1:
        # zero_grad frees gradients made before the profiler started, and the profiler does not report
        # frees of blocks it never saw allocated: this one column would be wrong, so it is left empty.
        out["after_zero_grad"] = ""
    return out


def run_load(row):
    """The load phase of a checkpoint read in fp32 and cast to bf16: module.to casts tensor by tensor, each
    new bf16 tensor allocated before the fp32 one it replaces is freed."""
    live = LiveBytes()
    with live:  # built inside: the profiler only reports frees of blocks it saw allocated
        model = modules.build(model_config(row))  # fp32, as from_pretrained without dtype (transformers v4)
        out = counts(model)  # param_bytes: the fp32 weights
        gc.collect()
        live.mark("load")
        model.to(torch.bfloat16)
        live.mark("end")
    seg = live.timeline()
    out.update(start_bytes=seg["start"][1], load_peak=seg["load"][0], after_load=seg["load"][1])
    del model
    return out


def run_init(row):
    """get_peft_model with init_lora_weights "pissa", "pissa_niter_4" or "olora": module by module, the adapter
    is created (update_layer) and initialised from the base weight at once. load_peak is the largest live-byte
    rise over one module's initialisation (start_bytes 0): the transient the load phase prices.

    Measured in a fresh interpreter: after other rows in the same process the allocator replay misses up to
    one adapter-sized block of an SVD / QR (its value then depends on what ran before)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure_init, (row,))


def _measure_init(row):
    model = modules.build(model_config(row))
    model.to(DTYPES[row["dtype"]])
    for p in model.parameters():
        p.requires_grad_(False)
    wanted = set(modules.LINEAR_NAMES) if row["lora_targets"] == "all-linear" else set(row["lora_targets"].split(","))
    rank = int(row["lora_rank"])
    adapter_dtype = torch.float32 if row["adapter_dtype"] == "fp32" else None
    worst = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if not (isinstance(child, torch.nn.Linear) and name in wanted and name != "lm_head"):
                continue
            layer = modules.LoraLinear(child, rank, 2 * rank, 0.0, adapter_dtype or child.weight.dtype)
            setattr(parent, name, layer)
            gc.collect()
            live = LiveBytes()
            with live:
                live.mark("init")
                if row["init_lora_weights"] == "olora":
                    modules.olora_init(layer)
                else:
                    modules.pissa_init(layer, row["init_lora_weights"])
                live.mark("end")
            seg = live.timeline()
            worst = max(worst, seg["init"][0] - seg["start"][1])
    out = counts(model)
    out.update(start_bytes=0, load_peak=worst)
    return out


def run_fsdp(row):
    """One rank of a FullyShardedDataParallel (FSDP1) step: the whole model wrapped with a unit per decoder layer
    (transformer_auto_wrap_policy, as accelerate's TRANSFORMER_BASED_WRAP) and the root, then run_step's warm-up,
    micro-batches and measured step. load_peak and after_load: the wrap of the whole model built on the rank.

    Measured in a fresh interpreter on torch's fake process group (FakeProcessGroup: collectives return at once,
    in the training thread) rather than gloo: a rank's allocations do not depend on the values the collectives
    carry, and on gloo the last reference to a collective's tensor is dropped by a worker thread at a time that
    varies from run to run (validation/torch/README.md)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure_fsdp, (row,))


class _WholeModel(torch.nn.Module):
    """The model and its loss as one forward (FSDP's root runs its pre- and post-forward around it)."""

    def __init__(self, model, row):
        super().__init__()
        self.model, self.row = model, row

    def forward(self, input_ids, labels, num_items):
        return forward_loss(self.model, self.row, input_ids, labels, num_items)


def _fsdp_mixed_precision(row):
    """accelerate's FSDP1 policy for mixed_precision "bf16" (FullyShardedDataParallelPlugin.set_mixed_precision):
    parameters, gradient reduction and buffers in bf16 over fp32 FlatParameters. Without accelerate's autocast
    around the forward: the CPU's autocast op lists are not CUDA's."""
    if row["dtype"] != "bf16_mixed":
        return None
    from torch.distributed.fsdp import MixedPrecision
    return MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)


def _measure_fsdp(row):
    import functools
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    from torch.testing._internal.distributed.fake_pg import FakeStore

    torch.set_num_threads(1)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=int(row["world_size"]))
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={modules.DecoderLayer})
    strategy = {"full_shard": ShardingStrategy.FULL_SHARD, "shard_grad_op": ShardingStrategy.SHARD_GRAD_OP}
    # The load phase: the whole model on the rank (as from_pretrained puts it there), then wrapped unit by unit.
    # Built inside the profile: the wrap frees the original parameters, which the profiler must have seen.
    wrap = LiveBytes()
    with wrap:
        model = build_model(row)
        gc.collect()
        wrap.mark("wrap")
        wrapped = FullyShardedDataParallel(_WholeModel(model, row), sharding_strategy=strategy[row["sharding"]],
                                           auto_wrap_policy=policy, use_orig_params=row["use_orig_params"] == "1",
                                           mixed_precision=_fsdp_mixed_precision(row), device_id=torch.device("cpu"))
        wrap.mark("end")
    loading = wrap.timeline()["wrap"]
    b, s, v = int(row["batch"]), int(row["seq_len"]), int(row["vocab"])
    torch.manual_seed(1)
    input_ids = torch.randint(0, v, (b, s))
    labels = input_ids.clone()
    num_items = modules.num_items_in_batch(labels)
    params = [p for p in wrapped.parameters() if p.requires_grad]
    opt = make_optimizer(row, params)
    # Profiled from the warm-up on: FSDP frees, in the measured step, gradients made by the micro-batches
    # before it (and with use_orig_params the flat gradient zero_grad leaves), which the profiler must have
    # seen allocated to report.
    live = LiveBytes()
    with live:
        live.mark("warm_up")
        wrapped(input_ids, labels, num_items).backward()  # creates the optimizer state
        opt.step()
        opt.zero_grad(set_to_none=True)
        for _ in range(int(row["grad_accum"] or 1) - 1):
            with wrapped.no_sync() if row["no_sync"] == "1" else contextlib.nullcontext():
                wrapped(input_ids, labels, num_items).backward()
        gc.collect()
        start_grads = distinct_bytes(p.grad for p in params)
        measured_step(live, lambda: wrapped(input_ids, labels, num_items), opt)
    seg = live.timeline()
    out = counts(wrapped)  # this rank's shards: params and param_bytes are what the rank holds
    out.update(step_columns(seg, seg["warm_up"][1]), state_bytes=optimizer_state_bytes(opt),
               start_grad_bytes=start_grads, load_peak=loading[0], after_load=loading[1])
    dist.destroy_process_group()
    return out


RUNNERS = {"fsdp": run_fsdp, "block": run_block, "loss": run_loss, "optimizer": run_optimizer, "step": run_step, "load": run_load, "init": run_init}
