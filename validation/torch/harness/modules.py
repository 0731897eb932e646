"""Decoder models written operation for operation the way the libraries write them, for CPU measurement.

Every forward below performs the same tensor operations, in the same order and dtypes, as the named source,
because autograd saves what the operations save: an extra ``.contiguous()`` or a missing ``.to()`` would
change the measurement.  The sources (read for this harness; none of their code is copied):

* transformers (4.5x modeling files; the v5 layout is the same for these paths)
  - ``models/llama/modeling_llama.py``: ``LlamaRMSNorm.forward``, ``LlamaRotaryEmbedding.forward``,
    ``rotate_half``, ``apply_rotary_pos_emb``, ``repeat_kv``, ``eager_attention_forward``,
    ``LlamaAttention.forward``, ``LlamaMLP.forward``, ``LlamaDecoderLayer.forward``, ``LlamaModel.forward``,
    ``LlamaForCausalLM.forward``.  Mistral's files are the same code; Qwen2 adds q/k/v biases.
  - ``models/qwen3/modeling_qwen3.py``: ``Qwen3Attention.forward`` (q_norm / k_norm over head_dim on the
    (b, s, heads, head_dim) view, before the transpose).
  - ``models/gemma2/modeling_gemma2.py``: ``Gemma2RMSNorm`` (fp32 throughout, ``1 + weight``), the four norms
    of ``Gemma2DecoderLayer.forward``, the embedding ``normalizer``, ``query_pre_attn_scalar`` scaling,
    attention logit soft-capping in ``eager_attention_forward``, gelu(tanh) MLP, final logit soft-capping in
    ``Gemma2ForCausalLM.forward``.
  - ``models/phi3/modeling_phi3.py``: fused ``qkv_proj`` sliced into views, fused ``gate_up_proj`` chunked.
  - ``models/mixtral/modeling_mixtral.py`` ``MixtralSparseMoeBlock.forward`` and
    ``models/qwen3_moe/modeling_qwen3_moe.py`` ``Qwen3MoeSparseMoeBlock.forward`` (router, fp32 softmax,
    top-k, optional renormalisation, one_hot expert mask, per-expert ``torch.where`` / index / ``index_add_``).
  - ``models/gpt_oss/modeling_gpt_oss.py``: ``GptOssRotaryEmbedding`` (head_dim / 2 angles), ``_apply_rotary_emb``,
    ``eager_attention_forward`` with ``sinks``, ``GptOssTopKRouter.forward``, ``GptOssExperts.forward`` (the
    training loop over the experts hit, the clamped SwiGLU).
  - ``models/cohere2/modeling_cohere2.py`` ``Cohere2Attention.forward``: Cohere's attention with RoPE only when
    the layer is a sliding-window one (``layer_types``).
  - ``models/qwen2_moe/modeling_qwen2_moe.py`` ``Qwen2MoeSparseMoeBlock.forward``: Qwen3-MoE's routing plus
    ``shared_expert`` on every token times ``sigmoid(shared_expert_gate(x))``, added.
  - ``models/deepseek_v3/modeling_deepseek_v3.py``: ``DeepseekV3Attention.forward`` (MLA: q_a_proj /
    q_a_layernorm / q_b_proj, kv_a_proj_with_mqa split into the latent and the RoPE key, kv_a_layernorm, kv_b_proj
    split into nope keys and values, ``apply_rotary_pos_emb_interleave``, the two ``torch.cat`` calls),
    ``DeepseekV3TopkRouter.forward`` / ``get_topk_indices``, ``DeepseekV3MoE.moe`` / ``forward``,
    ``DeepseekV3DecoderLayer`` (dense MLP below ``first_k_dense_replace``).
  - ``models/llama4/modeling_llama4.py``: ``Llama4TextRotaryEmbedding`` (complex ``freqs_cis``),
    ``apply_rotary_emb`` (q and k as fp32 complex pairs), ``Llama4TextL2Norm``, ``Llama4TextAttention.forward``
    (RoPE and the L2 q/k norm on RoPE layers; NoPE layers scale q by ``attn_scales``), ``Llama4Router``,
    ``Llama4TextExperts`` (every expert on every token, two ``bmm``), ``Llama4TextMoe.forward`` (repeat, scale,
    the shared expert, ``add_`` of the experts' sum), ``Llama4TextDecoderLayer`` (MoE on every
    ``interleave_moe_layer_step``-th layer, ``Llama4TextMLP`` of ``intermediate_size_mlp`` elsewhere). These are
    4.5x's paths as recalled; the dense dispatch (every expert on every token, repeat and scale) matches Meta's
    reference ``llama-models`` ``models/llama4/moe.py`` ``MoE.forward`` (commit a9c89c4), and the shapes, NoPE
    layers and temperature match ``mlx-lm`` ``mlx_lm/models/llama4.py`` (commit d78bf58e).
  - ``models/siglip/modeling_siglip.py``: ``SiglipAttention.forward`` (bidirectional: ``is_causal`` False, no
    mask), ``SiglipMLP`` (fc1, gelu_pytorch_tanh, fc2), ``SiglipEncoderLayer.forward`` — the vision tower's block a
    trained tower keeps (Gemma-3's; Llama-4's encoder layer has the same tensors with an exact GELU).
  - ``integrations/sdpa_attention.py`` ``sdpa_attention_forward`` (repeat_kv before the kernel when torch
    cannot do GQA itself, ``is_causal`` without a mask); on torch 1.13 the kernel is
    ``torch.nn.functional._scaled_dot_product_attention``, whose CPU path is the math implementation.
  - ``loss/loss_utils.py`` ``ForCausalLMLoss`` and ``fixed_cross_entropy`` (``logits.float()``, labels padded
    and shifted, ``reduction="sum"`` divided by ``num_items_in_batch``).
  - ``modeling_utils.py`` ``GradientCheckpointingLayer`` / ``gradient_checkpointing_enable`` (the layer call
    through ``torch.utils.checkpoint.checkpoint`` with the other arguments bound by ``functools.partial``).
  transformers itself is over the fetch tool's size limit; these paths were checked against the copies
  optimum-habana (commit 1d8504c6) keeps of ``eager_attention_forward`` with soft-capping and of the Qwen3-MoE
  routing.
* PEFT ``src/peft/tuners/lora/layer.py`` ``Linear.forward`` (commit 5d602fdb): base output, input cast to
  the adapter dtype (``_cast_input_dtype``), ``lora_B(lora_A(dropout(x))) * scaling`` added, cast back;
  ``autocast_adapter_dtype=True`` (``peft_model.py``) keeps adapters in fp32 under a bf16 base.
* PEFT ``peft_model.py`` ``PeftModelForCausalLM.forward`` and ``get_prompt`` (prompt learning: one encoded copy
  of the prompts repeated over the batch, or prefix tuning's past key/values cast to the base dtype, viewed as
  (2L, b, g, P, head_dim) and put in a ``DynamicCache``); ``tuners/p_tuning/model.py`` ``PromptEncoder`` (MLP
  head), ``tuners/prefix_tuning/model.py`` ``PrefixEncoder``; ``utils/other.py``
  ``_prepare_prompt_learning_config`` (prefix tuning's token_dim is head_dim · num_key_value_heads).
* TRL ``trl/trainer/sft_trainer.py`` ``_chunked_cross_entropy_loss`` and ``_chunk`` (commit f2cd5771).
* torchtune ``torchtune/modules/transformer.py`` ``TransformerDecoder.chunked_output`` and
  ``torchtune/modules/loss/ce_chunked_output_loss.py`` ``CEWithChunkedOutputLoss``;
  ``torchtune/modules/loss/cross_entropy_loss.py`` ``LinearCrossEntropyLoss`` (the loss of 162 of its
  shipped configs; commit bd2a0fc7).
"""
import copy
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as torch_checkpoint

# What each family changes in the Llama block (config.json model_type → structure).
FAMILIES = {
    "llama": dict(),
    "mistral": dict(),
    "qwen2": dict(qkv_bias=True),
    "qwen3": dict(qk_norm=True),
    "gemma2": dict(gemma=True),
    "phi3": dict(fused=True),
    "mixtral": dict(moe=True, norm_topk=True),
    "qwen3_moe": dict(moe=True, qk_norm=True),
    "olmo2": dict(olmo2=True),
    # Granite-3.3-8B-Instruct's multipliers (its config.json; tests/data/configs)
    "granite": dict(granite=True, embedding_multiplier=12.0, residual_multiplier=0.22,
                    attention_multiplier=0.0078125, logits_scaling=16.0),
    # StarCoder2-3B's dropouts (its config.json; tests/data/configs): residual and embedding 0.1
    "starcoder2": dict(starcoder2=True, residual_dropout=0.1, embedding_dropout=0.1),
    # Pythia's GPT-NeoX: parallel blocks, RoPE on a quarter of each head, hidden_dropout 0
    "gpt_neox": dict(neox=True, rotary_pct=0.25, hidden_dropout=0.0),
    # Command-R's Cohere: one CohereLayerNorm per parallel block, interleaved RoPE in fp32, logits · logit_scale;
    # cohere_qk adds Command-R+'s use_qk_norm (per-head norms with (heads, head_dim) weights).
    "cohere": dict(cohere=True, logit_scale=0.0625),
    "cohere_qk": dict(cohere=True, logit_scale=0.0625, qk_norm_cohere=True),
    # Cohere2 (Command-R7B): Cohere's block; every sliding_window_pattern-th layer global and without RoPE. The
    # grid's sequences are shorter than any window, so the sliding mask is the causal one.
    "cohere2": dict(cohere=True, logit_scale=0.25, sliding_window_pattern=4),
    # gpt-oss (gpt-oss-20b's proportions): q/k/v/o biases, a learned sink per head in eager attention, a biased
    # router whose top-k logits are softmaxed, 3-D expert parameters with biases and the clamped SwiGLU.
    "gpt_oss": dict(gpt_oss=True, swiglu_limit=7.0, alpha=1.702),
    # Qwen1.5-MoE / Qwen2-MoE: Qwen2's q/k/v biases, Qwen3-MoE's routed experts, and a shared expert of 4× the
    # expert width behind a sigmoid gate (Qwen1.5-MoE-A2.7B: 5632 = 4·1408)
    "qwen2_moe": dict(moe=True, qkv_bias=True, shared_expert_intermediate=128),
    # DeepSeek-V3 (and Kimi-K2, the same code): MLA attention, a dense first layer, then sigmoid-routed experts
    # with group-limited top-k and one shared expert; the proportions of DeepSeek-V3's config.json
    # (q_lora_rank 1536 = 3·kv_lora_rank, qk_nope = v_head_dim = 2·qk_rope, 8 groups of which 4 are kept).
    "deepseek_v3": dict(deepseek=True, q_lora_rank=48, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                        v_head_dim=16, first_k_dense=1, n_shared_experts=1, n_group=4, topk_group=2,
                        routed_scaling_factor=2.5, norm_topk=True),
    # Llama-4 (Llama-4-Scout's layout): MoE on every layer with one shared expert, NoPE every 4th layer, the L2 q/k
    # norm on the RoPE layers; llama4_nope has every layer NoPE (its block rows measure a NoPE layer) and
    # llama4_dense Maverick's interleaving (MoE every 2nd layer: its block rows measure a dense layer).
    # SigLIP's encoder layer (a vision tower trained with the language model): LayerNorms, biased q/k/v/out_proj,
    # bidirectional attention, fc1 → gelu(tanh) → fc2
    "siglip": dict(vit=True),
    "llama4": dict(llama4=True, interleave_moe_layer_step=1, no_rope_layer_interval=4, use_qk_norm=True),
    "llama4_nope": dict(llama4=True, interleave_moe_layer_step=1, no_rope_layer_interval=1, use_qk_norm=True),
    "llama4_dense": dict(llama4=True, interleave_moe_layer_step=2, no_rope_layer_interval=4, use_qk_norm=True),
}


class LlamaRMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


class Olmo2RMSNorm(LlamaRMSNorm):
    """transformers models/olmo2/modeling_olmo2.py Olmo2RMSNorm: the weight multiplies in fp32, then the cast."""

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return (self.weight * hidden_states).to(input_dtype)


class GemmaRMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(width))
        self.eps = eps

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Rotary(nn.Module):
    """LlamaRotaryEmbedding: cos/sin of shape (b, s, head_dim), computed once per forward, no grad. Interleaved:
    CohereRotaryEmbedding, whose frequencies are repeat_interleave-d instead of concatenated. Complex:
    Llama4TextRotaryEmbedding, freqs_cis = polar(1, angles), complex64 (1, s, head_dim / 2), returned as a pair
    (freqs_cis, None) so callers unpack it like cos and sin."""

    def __init__(self, head_dim, base=10000.0, interleave=False, halves=False, complex_=False):
        super().__init__()
        self.interleave, self.halves, self.complex = interleave, halves, complex_
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            if self.complex:
                return torch.polar(torch.ones_like(freqs), freqs) * 1.0, None  # · attention_scaling
            emb = (freqs if self.halves  # GptOssRotaryEmbedding: one angle per pair, head_dim / 2 wide
                   else torch.repeat_interleave(freqs, 2, dim=-1) if self.interleave else torch.cat((freqs, freqs), dim=-1))
            cos = emb.cos() * 1.0
            sin = emb.sin() * 1.0
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def apply_partial_rotary_pos_emb(q, k, cos, sin):
    """models/gpt_neox/modeling_gpt_neox.py apply_rotary_pos_emb: RoPE on the first cos.shape[-1] values of each
    head, the rest passed through and concatenated back."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention(module, query, key, value, attention_mask, dropout, scaling, softcap=None):
    key_states = repeat_kv(key, module.groups)
    value_states = repeat_kv(value, module.groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous()


def eager_attention_with_sinks(module, query, key, value, attention_mask, dropout, scaling, softcap=None):
    """models/gpt_oss/modeling_gpt_oss.py eager_attention_forward: each head's sink joins every row's softmax as
    one more column, computed in the logits' dtype after subtracting the row maximum, then sliced off."""
    key_states = repeat_kv(key, module.groups)
    value_states = repeat_kv(value, module.groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]
    attn_weights = F.dropout(scores, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous()


TORCH_2 = not torch.__version__.startswith("1.")
TORCH_2_5 = TORCH_2 and tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


def sdpa_attention(module, query, key, value, attention_mask, dropout, scaling, softcap=None):
    # transformers' sdpa_attention_forward: K and V are expanded unless use_gqa_in_sdpa (torch >= 2.5 and no
    # mask), which passes enable_gqa instead; torch 1.13 has neither the public function nor enable_gqa.
    is_causal = query.shape[2] > 1 and attention_mask is None
    if not TORCH_2:
        key = repeat_kv(key, module.groups)
        value = repeat_kv(value, module.groups)
        out = F._scaled_dot_product_attention(query, key, value, attention_mask, dropout, False, is_causal)[0]
        return out.transpose(1, 2).contiguous()
    gqa = TORCH_2_5 and attention_mask is None
    if not gqa:
        key = repeat_kv(key, module.groups)
        value = repeat_kv(value, module.groups)
    kwargs = {"enable_gqa": True} if gqa else {}
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                         scale=scaling, is_causal=is_causal, **kwargs)
    return out.transpose(1, 2).contiguous()


ATTENTION = {"eager": eager_attention, "sdpa": sdpa_attention}


class LoraLinear(nn.Module):
    """PEFT lora.Linear: a frozen base nn.Linear plus A (r × in) and B (out × r) in the adapter dtype."""

    def __init__(self, base, rank, alpha, dropout, dtype, dora=False):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False, dtype=dtype)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False, dtype=dtype)
        nn.init.zeros_(self.lora_B.weight)
        self.lora_dropout = nn.Dropout(p=dropout) if dropout > 0 else nn.Identity()
        self.scaling = alpha / rank
        self.dora = dora
        if dora:  # DoraLinearLayer.update_layer: the magnitude starts as ||W + s·BA|| row by row (B = 0)
            with torch.no_grad():
                norm = torch.linalg.norm(base.weight.to(dtype), dim=1)
            self.lora_magnitude_vector = nn.Parameter(norm.to(dtype))

    def dora_forward(self, x, base_result):
        """peft/tuners/lora/dora.py DoraLinearLayer.forward (get_lora_weight, get_weight_norm), training mode."""
        x_eye = torch.eye(self.lora_A.weight.shape[1], dtype=self.lora_A.weight.dtype)
        lora_weight = self.lora_B(self.lora_A(x_eye)).T
        lora_weight = lora_weight.to(x.dtype)
        magnitude = self.lora_magnitude_vector
        weight = self.base_layer.weight.to(x.dtype)
        summed = weight + self.scaling * lora_weight.detach()
        weight_norm = torch.linalg.norm(summed, dim=1).to(summed.dtype)
        weight_norm = weight_norm.detach()
        mag_norm_scale = (magnitude / weight_norm).view(1, -1)
        lora_result = self.lora_B(self.lora_A(x))
        if base_result is not None:
            bias = self.base_layer.bias
            if bias is not None:
                base_result = base_result - bias
        else:
            base_result = F.linear(x, weight)
        return (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * self.scaling

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.weight.dtype:  # _cast_input_dtype
            x = x.to(dtype=self.lora_A.weight.dtype)
        if self.dora:  # variants.py DoraLinearVariant.forward
            if isinstance(self.lora_dropout, nn.Identity):
                base_result = result
            else:
                x = self.lora_dropout(x)
                base_result = None
            result = result + self.dora_forward(x, base_result)
        else:
            result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result.to(torch_result_dtype)


class IA3Linear(nn.Module):
    """PEFT ia3.Linear (tuners/ia3/layer.py IA3Layer.update_layer, Linear.forward): a frozen base nn.Linear and
    one vector, (1 × in) on a feedforward module, (out × 1) otherwise, initialised to ones."""

    def __init__(self, base, feedforward, dtype):
        super().__init__()
        self.base_layer = base
        self.is_feedforward = feedforward
        shape = (1, base.in_features) if feedforward else (base.out_features, 1)
        self.ia3_l = nn.Parameter(torch.ones(shape, dtype=dtype))

    def forward(self, x):
        dtype = previous_dtype = x.dtype
        ia3_scaling = 1
        dtype = self.ia3_l.dtype
        ia3_scaling *= self.ia3_l.flatten()
        if self.is_feedforward:
            x = x.to(dtype)
            interm = (x * ia3_scaling).to(previous_dtype)
            return self.base_layer(interm)
        result = self.base_layer(x)
        result_dtype = result.dtype
        return (result * ia3_scaling).to(result_dtype)


class VeraLinear(nn.Module):
    """PEFT vera.Linear (tuners/vera/layer.py VeraLayer.update_layer, Linear.forward): trainable lambda_d (r)
    and lambda_b (out) over the model's shared frozen vera_A (r × max in) and vera_B (max out × r). PEFT keeps
    the projections as buffers of a BufferDict; they are frozen parameters here so that the instruments file
    the slices F.linear saves under parameters (the memory is the same)."""

    def __init__(self, base, vera_A, vera_B, rank, dropout, dtype):
        super().__init__()
        self.base_layer = base
        self.vera = (vera_A, vera_B)  # shared; registered once on the model
        self.vera_lambda_b = nn.Parameter(torch.ones(base.out_features, dtype=dtype))
        self.vera_lambda_d = nn.Parameter(torch.full((rank,), 0.1, dtype=dtype))
        self.vera_dropout = nn.Dropout(p=dropout) if dropout > 0 else nn.Identity()

    def forward(self, x):
        previous_dtype = x.dtype
        result = self.base_layer(x)
        orig_dtype = result.dtype
        lambda_d, lambda_b = self.vera_lambda_d, self.vera_lambda_b
        vera_A, vera_B = self.vera
        sliced_A = vera_A[:, : self.base_layer.in_features]
        sliced_B = vera_B[: self.base_layer.out_features, :]
        if x.dtype != lambda_d.dtype:  # _cast_input_dtype
            x = x.to(lambda_d.dtype)
        result = result + lambda_b * F.linear(lambda_d * F.linear(self.vera_dropout(x), sliced_A), sliced_B)
        result = result.to(orig_dtype)
        return result.to(previous_dtype)


class LNTuningLayer(nn.Module):
    """PEFT LNTuningLayer (tuners/ln_tuning/layer.py): the base norm frozen, a deep copy of it trained and
    used in forward."""

    def __init__(self, base, dtype):
        super().__init__()
        self.base_layer = base
        self.ln_tuning_layer = copy.deepcopy(base).to(dtype)
        self.ln_tuning_layer.requires_grad_(True)  # every parameter of the copy: a LayerNorm's bias too

    def forward(self, x):
        return self.ln_tuning_layer(x)


class Attention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        d, a, g, hd = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.head_dim, self.groups, self.fused = hd, a // g, fam.get("fused", False)
        self.q_width, self.kv_width = a * hd, g * hd
        bias = fam.get("qkv_bias", False) or fam.get("starcoder2", False)  # Starcoder2: use_bias on q/k/v/o
        if self.fused:
            self.qkv_proj = nn.Linear(d, a * hd + 2 * g * hd, bias=False)
        else:
            self.q_proj = nn.Linear(d, a * hd, bias=bias)
            self.k_proj = nn.Linear(d, g * hd, bias=bias)
            self.v_proj = nn.Linear(d, g * hd, bias=bias)
        self.o_proj = nn.Linear(a * hd, d, bias=fam.get("starcoder2", False))
        self.residual_dropout = fam.get("residual_dropout", 0.0)
        self.qk_norm = fam.get("qk_norm", False)
        self.olmo2 = fam.get("olmo2", False)
        if self.olmo2:  # Olmo2Attention: one norm over each projection's full width
            self.q_norm = Olmo2RMSNorm(a * hd)
            self.k_norm = Olmo2RMSNorm(g * hd)
        if self.qk_norm:
            self.q_norm = LlamaRMSNorm(hd)
            self.k_norm = LlamaRMSNorm(hd)
        self.gemma = fam.get("gemma", False)
        self.scaling = (cfg.get("query_pre_attn_scalar", hd) if self.gemma else hd) ** -0.5
        if fam.get("granite", False):  # GraniteAttention: scaling = config.attention_multiplier
            self.scaling = fam["attention_multiplier"]
        self.softcap = cfg.get("attn_softcap") if self.gemma else None
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.kernel = ATTENTION[cfg["attention"]]
        self.cohere = fam.get("cohere", False)
        self.gpt_oss = fam.get("gpt_oss", False)
        if self.gpt_oss:  # GptOssAttention: biased q/k/v/o, one sink per head, eager attention with sinks
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                old_linear = getattr(self, name)
                setattr(self, name, nn.Linear(old_linear.in_features, old_linear.out_features, bias=True))
            self.sinks = nn.Parameter(torch.zeros(a))
            self.kernel = eager_attention_with_sinks
        self.cohere_qk = False  # CohereLayer sets the q/k norms
        pattern = fam.get("sliding_window_pattern")  # Cohere2Config.layer_types: (i + 1) % pattern → sliding
        self.rope = pattern is None or (layer_idx + 1) % pattern != 0

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        if self.cohere_qk:  # CohereAttention.forward: the norms on the (b, s, heads, head_dim) views
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        elif self.fused:
            qkv = self.qkv_proj(hidden_states)
            query_states = qkv[..., : self.q_width]
            key_states = qkv[..., self.q_width: self.q_width + self.kv_width]
            value_states = qkv[..., self.q_width + self.kv_width:]
            query_states = query_states.view(hidden_shape).transpose(1, 2)
            key_states = key_states.view(hidden_shape).transpose(1, 2)
            value_states = value_states.view(hidden_shape).transpose(1, 2)
        elif self.olmo2:
            query_states = self.q_norm(self.q_proj(hidden_states)).view(hidden_shape).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states)).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        elif self.qk_norm:
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        rotary = cohere_apply_rotary_pos_emb if self.cohere else apply_rotary_pos_emb
        if self.gpt_oss:  # GptOssAttention: apply_rotary_pos_emb with _apply_rotary_emb on each
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            query_states, key_states = gpt_oss_rotary(query_states, cos, sin), gpt_oss_rotary(key_states, cos, sin)
        elif self.rope:  # Cohere2Attention: RoPE on the sliding-window layers only
            query_states, key_states = rotary(query_states, key_states, cos, sin)
        if past is not None:  # DynamicLayer.update: the prefix's keys and values, then this layer's
            prefix_key, prefix_value, cache = past
            key_states = torch.cat([prefix_key, key_states], dim=-2)
            value_states = torch.cat([prefix_value, value_states], dim=-2)
            if cache is not None:  # the DynamicCache keeps them until the model's forward returns
                cache.append((key_states, value_states))
        dropout = self.attention_dropout if self.training else 0.0
        attn_output = self.kernel(self, query_states, key_states, value_states, attention_mask, dropout,
                                  self.scaling, self.softcap)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        if self.residual_dropout:  # Starcoder2Attention.forward: dropout(o_proj(...), residual_dropout)
            attn_output = F.dropout(attn_output, p=self.residual_dropout, training=self.training)
        return attn_output


class CohereLayerNorm(nn.Module):
    """models/cohere/modeling_cohere.py CohereLayerNorm: mean-subtracted, weight only, in fp32; a (heads, head_dim)
    weight for the q/k norms."""

    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


def cohere_rotate_half(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)


def cohere_apply_rotary_pos_emb(q, k, cos, sin):
    """Cohere's apply_rotary_pos_emb: q and k in fp32, rotated pairwise, cast back."""
    dtype = q.dtype
    q = q.float()
    k = k.float()
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    q_embed = (q * cos) + (cohere_rotate_half(q) * sin)
    k_embed = (k * cos) + (cohere_rotate_half(k) * sin)
    return q_embed.to(dtype=dtype), k_embed.to(dtype=dtype)


class CohereLayer(nn.Module):
    """CohereDecoderLayer: x + attention(norm(x)) + mlp(norm(x)), one norm; the attention as Llama's with
    CohereAttention's optional q/k norms and Cohere's rotary."""

    def __init__(self, cfg, layer_idx):
        super().__init__()
        d, a, g, hd = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.self_attn = Attention(cfg, layer_idx)
        if FAMILIES[cfg["family"]].get("qk_norm_cohere", False):
            self.self_attn.q_norm = CohereLayerNorm((a, hd))
            self.self_attn.k_norm = CohereLayerNorm((g, hd))
            self.self_attn.cohere_qk = True
        self.mlp = MLP(cfg)
        self.input_layernorm = CohereLayerNorm(d)

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, past=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states_attention = self.self_attn(hidden_states, position_embeddings, attention_mask, past)
        hidden_states_mlp = self.mlp(hidden_states)
        return residual + hidden_states_attention + hidden_states_mlp


def apply_rotary_pos_emb_interleave(q, k, cos, sin):
    """models/deepseek_v3/modeling_deepseek_v3.py apply_rotary_pos_emb_interleave (rope_interleave, the
    DeepseekV3Config default): the interleaved pairs regrouped into halves (a copy), then Llama's rotation."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class DeepseekV3Attention(nn.Module):
    """DeepseekV3Attention.forward: q through q_a_proj, q_a_layernorm, q_b_proj (or one q_proj); the compressed
    K/V and the shared RoPE key from kv_a_proj_with_mqa; kv_b_proj's output split into nope keys and values
    (views); the RoPE key expanded over the heads and concatenated; o_proj over the heads' values."""

    def __init__(self, cfg, layer_idx):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        d, a = cfg["hidden"], cfg["heads"]
        self.q_lora_rank, self.kv_lora_rank = fam["q_lora_rank"], fam["kv_lora_rank"]
        self.nope, self.rope, self.v = fam["qk_nope_head_dim"], fam["qk_rope_head_dim"], fam["v_head_dim"]
        self.qk_head_dim = self.nope + self.rope
        self.groups = 1  # num_key_value_groups: every head has its own keys after kv_b_proj
        if self.q_lora_rank:
            self.q_a_proj = nn.Linear(d, self.q_lora_rank, bias=False)
            self.q_a_layernorm = LlamaRMSNorm(self.q_lora_rank)
            self.q_b_proj = nn.Linear(self.q_lora_rank, a * self.qk_head_dim, bias=False)
        else:
            self.q_proj = nn.Linear(d, a * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d, self.kv_lora_rank + self.rope, bias=False)
        self.kv_a_layernorm = LlamaRMSNorm(self.kv_lora_rank)
        self.kv_b_proj = nn.Linear(self.kv_lora_rank, a * (self.nope + self.v), bias=False)
        self.o_proj = nn.Linear(a * self.v, d, bias=False)
        self.scaling = self.qk_head_dim ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.kernel = ATTENTION[cfg["attention"]]

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.nope + self.v)
        if self.q_lora_rank:
            q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        else:
            q_states = self.q_proj(hidden_states)
        q_states = q_states.view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [self.nope, self.rope], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.rope], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [self.nope, self.v], dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.rope)
        cos, sin = position_embeddings
        q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        dropout = self.attention_dropout if self.training else 0.0
        attn_output = self.kernel(self, query_states, key_states, value_states, attention_mask, dropout,
                                  self.scaling)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)


def gpt_oss_rotary(x, cos, sin):
    """models/gpt_oss/modeling_gpt_oss.py _apply_rotary_emb: the two halves rotated, concatenated."""
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)


class GptOssTopKRouter(nn.Module):
    """GptOssTopKRouter: F.linear with a bias, top-k of the logits, softmax over the k values in their dtype,
    scattered into a (tokens, experts) score matrix."""

    def __init__(self, cfg):
        super().__init__()
        self.top_k, self.num_experts, self.hidden_dim = cfg["experts_per_tok"], cfg["experts"], cfg["hidden"]
        self.weight = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim))
        self.bias = nn.Parameter(torch.zeros(self.num_experts))

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight, self.bias)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_top_value = F.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, router_top_value)
        return router_scores, router_indices


class GptOssExperts(nn.Module):
    """GptOssExperts.forward in training: a loop over the experts hit, each on its tokens, with 3-D parameters
    (gate_up_proj (E, d, 2f) interleaved gate/up columns, down_proj (E, f, d), biases), the clamped SwiGLU
    (up + 1)·gate·sigmoid(alpha·gate), weighted and index_add_-ed."""

    def __init__(self, cfg):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        e, d, f = cfg["experts"], cfg["hidden"], cfg["moe_intermediate"]
        self.num_experts, self.hidden_size = e, d
        self.gate_up_proj = nn.Parameter(torch.empty(e, d, 2 * f))
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(e, 2 * f))
        self.down_proj = nn.Parameter(torch.empty(e, f, d))
        self.down_proj_bias = nn.Parameter(torch.zeros(e, d))
        self.alpha, self.limit = fam["alpha"], fam["swiglu_limit"]

    def forward(self, hidden_states, router_indices, routing_weights):
        batch_size = hidden_states.shape[0]
        hidden_states = hidden_states.reshape(-1, self.hidden_size)
        num_experts = routing_weights.shape[1]
        next_states = torch.zeros_like(hidden_states, dtype=hidden_states.dtype)
        with torch.no_grad():
            expert_mask = F.one_hot(router_indices, num_classes=num_experts).permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit[:]:
            expert_idx = expert_idx[0]
            with torch.no_grad():
                _, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate_up = current_state @ self.gate_up_proj[expert_idx] + self.gate_up_proj_bias[expert_idx]
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            gate = gate.clamp(min=None, max=self.limit)
            up = up.clamp(min=-self.limit, max=self.limit)
            glu = gate * torch.sigmoid(gate * self.alpha)
            gated_output = (up + 1) * glu
            out = gated_output @ self.down_proj[expert_idx] + self.down_proj_bias[expert_idx]
            weighted_output = out * routing_weights[token_idx, expert_idx, None]
            next_states.index_add_(0, token_idx, weighted_output.to(hidden_states.dtype))
        return next_states.view(batch_size, -1, self.hidden_size)


class GptOssMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.router = GptOssTopKRouter(cfg)
        self.experts = GptOssExperts(cfg)

    def forward(self, hidden_states):
        router_scores, router_indices = self.router(hidden_states)
        return self.experts(hidden_states, router_indices=router_indices, routing_weights=router_scores)


class DeepseekV3TopkRouter(nn.Module):
    """DeepseekV3TopkRouter: an nn.Parameter weight applied in fp32, sigmoid scores, group-limited top-k (no
    grad) on the scores plus the e_score_correction_bias buffer, the chosen scores renormalised and scaled."""

    def __init__(self, cfg):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        self.top_k, self.n_routed_experts = cfg["experts_per_tok"], cfg["experts"]
        self.n_group, self.topk_group = fam["n_group"], fam["topk_group"]
        self.routed_scaling_factor = fam["routed_scaling_factor"]
        self.norm_topk_prob = cfg.get("norm_topk", fam["norm_topk"])
        self.hidden = cfg["hidden"]
        self.weight = nn.Parameter(torch.empty((self.n_routed_experts, cfg["hidden"])))
        self.register_buffer("e_score_correction_bias", torch.zeros(self.n_routed_experts))

    @torch.no_grad()
    def get_topk_indices(self, scores):
        scores_for_choice = scores.view(-1, self.n_routed_experts) + self.e_score_correction_bias.unsqueeze(0)
        group_scores = (scores_for_choice.view(-1, self.n_group, self.n_routed_experts // self.n_group)
                        .topk(2, dim=-1)[0].sum(dim=-1))
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = (group_mask.unsqueeze(-1).expand(-1, self.n_group, self.n_routed_experts // self.n_group)
                      .reshape(-1, self.n_routed_experts))
        scores_for_choice = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
        return torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden)
        router_logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
        scores = router_logits.sigmoid()
        topk_indices = self.get_topk_indices(scores)
        topk_weights = scores.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        return topk_indices, topk_weights


class DeepseekV3MoE(nn.Module):
    """DeepseekV3MoE: the routed experts looped over with torch.where and index_add_ into an fp32 buffer (the
    routing weights' dtype), cast back, plus the shared experts (one MLP of n_shared · moe_intermediate_size)."""

    def __init__(self, cfg):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        self.experts = nn.ModuleList([MLP(cfg, cfg["moe_intermediate"]) for _ in range(cfg["experts"])])
        self.gate = DeepseekV3TopkRouter(cfg)
        self.shared_experts = MLP(cfg, cfg["moe_intermediate"] * fam["n_shared_experts"])

    def moe(self, hidden_states, topk_indices, topk_weights):
        final_hidden_states = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
        expert_mask = F.one_hot(topk_indices, num_classes=len(self.experts)).permute(2, 0, 1)
        for expert_idx in range(len(self.experts)):
            token_indices, weight_indices = torch.where(expert_mask[expert_idx])
            if token_indices.numel() > 0:
                expert_weights = topk_weights[token_indices, weight_indices]
                expert_output = self.experts[expert_idx](hidden_states[token_indices])
                weighted_output = expert_output * expert_weights.unsqueeze(-1)
                final_hidden_states.index_add_(0, token_indices, weighted_output)
        return final_hidden_states.type(hidden_states.dtype)

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        topk_indices, topk_weights = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.moe(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        return hidden_states + self.shared_experts(residuals)


def llama4_apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def llama4_l2_norm(x, eps=1e-5):
    """Llama4TextL2Norm (eps = rms_norm_eps): no weight, computed in fp32, cast back."""
    y = x.float()
    return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


class Llama4Attention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        d, a, g, hd = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.head_dim, self.groups = hd, a // g
        self.q_proj = nn.Linear(d, a * hd, bias=False)
        self.k_proj = nn.Linear(d, g * hd, bias=False)
        self.v_proj = nn.Linear(d, g * hd, bias=False)
        self.o_proj = nn.Linear(a * hd, d, bias=False)
        self.use_rope = (layer_idx + 1) % fam["no_rope_layer_interval"] != 0  # Llama4TextConfig.no_rope_layers
        self.qk_norm = fam["use_qk_norm"] and self.use_rope
        self.scaling = hd ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.kernel = ATTENTION[cfg["attention"]]

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(*input_shape, -1, self.head_dim)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.use_rope:
            query_states, key_states = llama4_apply_rotary_emb(query_states, key_states, position_embeddings[0])
        if self.qk_norm:
            query_states = llama4_l2_norm(query_states)
            key_states = llama4_l2_norm(key_states)
        if not self.use_rope:  # attn_temperature_tuning (floor_scale 8192, attn_scale 0.1), cache_position from 0
            cache_position = torch.arange(input_shape[-1])
            attn_scales = torch.log(torch.floor((cache_position.float() + 1.0) / 8192) + 1.0) * 0.1 + 1.0
            attn_scales = attn_scales.view((1, input_shape[-1], 1, 1)).expand((*input_shape, 1, 1))
            query_states = (query_states * attn_scales).to(query_states.dtype)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        dropout = self.attention_dropout if self.training else 0.0
        attn_output = self.kernel(self, query_states, key_states, value_states, attention_mask, dropout, self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Llama4Router(nn.Linear):
    def __init__(self, cfg):
        super().__init__(cfg["hidden"], cfg["experts"], bias=False)
        self.top_k = cfg["experts_per_tok"]

    def forward(self, hidden_states):
        router_logits = super().forward(hidden_states)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=1)
        router_scores = torch.full_like(router_logits, float("-inf")).scatter_(1, router_indices, router_top_value)
        router_scores = router_scores.transpose(0, 1)
        router_scores = torch.sigmoid(router_scores.float()).to(router_scores.dtype)
        return router_scores, router_logits


class Llama4TextExperts(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts, self.hidden_size, f = cfg["experts"], cfg["hidden"], cfg["moe_intermediate"]
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_size, 2 * f))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, f, self.hidden_size))

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(self.num_experts, -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj)
        gate, up = gate_up.chunk(2, dim=-1)
        next_states = torch.bmm((up * F.silu(gate)), self.down_proj)
        return next_states.view(-1, self.hidden_size)


class Llama4TextMoe(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hidden_dim = cfg["hidden"]
        self.experts = Llama4TextExperts(cfg)
        self.router = Llama4Router(cfg)
        self.shared_expert = MLP(cfg, cfg["moe_intermediate"])

    def forward(self, hidden_states):
        shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_scores, router_logits = self.router(hidden_states)
        routed_in = hidden_states.repeat(router_scores.shape[0], 1)
        routed_in = routed_in * router_scores.reshape(-1, 1)
        routed_out = self.experts(routed_in)
        out = self.shared_expert(hidden_states)
        out.add_(routed_out.reshape(router_scores.shape[0], -1, routed_out.shape[-1]).sum(dim=0))
        return out.view(shape)  # Llama4TextDecoderLayer: hidden_states.view(residual.shape)


class SiglipEncoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        d, a, hd, f = cfg["hidden"], cfg["heads"], cfg["head_dim"], cfg["intermediate"]
        self.heads, self.head_dim, self.scale = a, hd, hd ** -0.5
        self.layer_norm1 = nn.LayerNorm(d, eps=1e-6)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d, a * hd) for _ in range(3))
        self.out_proj = nn.Linear(a * hd, d)
        self.layer_norm2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, f)
        self.fc2 = nn.Linear(f, d)
        self.eager = cfg["attention"] == "eager"

    def attention(self, hidden_states):
        b, s, _ = hidden_states.shape
        queries = self.q_proj(hidden_states).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        keys = self.k_proj(hidden_states).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        values = self.v_proj(hidden_states).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        if self.eager:  # eager_attention_forward without a mask
            weights = torch.matmul(queries, keys.transpose(2, 3)) * self.scale
            weights = F.softmax(weights, dim=-1, dtype=torch.float32).to(queries.dtype)
            weights = F.dropout(weights, p=0.0, training=self.training)
            out = torch.matmul(weights, values).transpose(1, 2).contiguous()
        elif not TORCH_2:  # sdpa_attention_forward with is_causal False
            out = F._scaled_dot_product_attention(queries, keys, values, None, 0.0, False, False)[0]
            out = out.transpose(1, 2).contiguous()
        else:
            out = F.scaled_dot_product_attention(queries, keys, values, scale=self.scale, is_causal=False)
            out = out.transpose(1, 2).contiguous()
        return self.out_proj(out.reshape(b, s, -1).contiguous())

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, past=None):
        residual = hidden_states
        hidden_states = self.attention(self.layer_norm1(hidden_states))
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(self.layer_norm2(hidden_states)), approximate="tanh"))
        return residual + hidden_states


class NeoXAttention(nn.Module):
    """models/gpt_neox/modeling_gpt_neox.py GPTNeoXAttention: one biased query_key_value viewed as
    (b, s, heads, 3·head_size), transposed and chunked into q, k, v views; partial RoPE; the biased dense."""

    def __init__(self, cfg, layer_idx):
        super().__init__()
        d, a = cfg["hidden"], cfg["heads"]
        self.head_size, self.groups = d // a, 1
        self.query_key_value = nn.Linear(d, 3 * d, bias=True)
        self.dense = nn.Linear(d, d, bias=True)
        self.scaling = self.head_size ** -0.5
        self.softcap = None
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.kernel = ATTENTION[cfg["attention"]]

    def forward(self, hidden_states, position_embeddings, attention_mask, past=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = apply_partial_rotary_pos_emb(query_states, key_states, cos, sin)
        dropout = self.attention_dropout if self.training else 0.0
        attn_output = self.kernel(self, query_states, key_states, value_states, attention_mask, dropout,
                                  self.scaling, self.softcap)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class NeoXMLP(nn.Module):
    """GPTNeoXMLP: dense_h_to_4h, exact GELU (hidden_act "gelu"), dense_4h_to_h, both biased."""

    def __init__(self, cfg):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(cfg["hidden"], cfg["intermediate"])
        self.dense_4h_to_h = nn.Linear(cfg["intermediate"], cfg["hidden"])

    def forward(self, hidden_states):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(hidden_states)))


class NeoXLayer(nn.Module):
    """GPTNeoXLayer with use_parallel_residual: x + dropout(attention(ln1(x))) + dropout(mlp(ln2(x))); the two
    LayerNorms are registered first."""

    def __init__(self, cfg, layer_idx):
        super().__init__()
        d, p = cfg["hidden"], FAMILIES[cfg["family"]]["hidden_dropout"]
        self.input_layernorm = nn.LayerNorm(d, eps=1e-5)
        self.post_attention_layernorm = nn.LayerNorm(d, eps=1e-5)
        self.post_attention_dropout = nn.Dropout(p)
        self.post_mlp_dropout = nn.Dropout(p)
        self.attention = NeoXAttention(cfg, layer_idx)
        self.mlp = NeoXMLP(cfg)

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, past=None):
        attn_output = self.attention(self.input_layernorm(hidden_states), position_embeddings, attention_mask, past)
        attn_output = self.post_attention_dropout(attn_output)
        mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
        mlp_output = self.post_mlp_dropout(mlp_output)
        return mlp_output + attn_output + hidden_states


class MLP(nn.Module):
    def __init__(self, cfg, width=None):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        d, f = cfg["hidden"], width or cfg["intermediate"]
        self.fused = fam.get("fused", False)
        self.starcoder2 = fam.get("starcoder2", False)
        if self.starcoder2:  # Starcoder2MLP: c_fc, gelu_pytorch_tanh, c_proj (use_bias), residual dropout
            self.c_fc = nn.Linear(d, f, bias=True)
            self.c_proj = nn.Linear(f, d, bias=True)
            self.residual_dropout = fam["residual_dropout"]
            return
        if self.fused:
            self.gate_up_proj = nn.Linear(d, 2 * f, bias=False)
        else:
            self.gate_proj = nn.Linear(d, f, bias=False)
            self.up_proj = nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)
        self.gelu = fam.get("gemma", False)

    def act(self, x):
        return F.gelu(x, approximate="tanh") if self.gelu else F.silu(x)

    def forward(self, x):
        if self.starcoder2:
            x = self.c_fc(x)
            x = F.gelu(x, approximate="tanh")
            x = self.c_proj(x)
            return F.dropout(x, p=self.residual_dropout, training=self.training)
        if self.fused:
            up_states = self.gate_up_proj(x)
            gate, up_states = up_states.chunk(2, dim=-1)
            up_states = up_states * self.act(gate)
            return self.down_proj(up_states)
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts, self.top_k = cfg["experts"], cfg["experts_per_tok"]
        self.norm_topk_prob = cfg.get("norm_topk", FAMILIES[cfg["family"]].get("norm_topk", False))
        self.gate = nn.Linear(cfg["hidden"], self.num_experts, bias=False)
        self.experts = nn.ModuleList([MLP(cfg, cfg["moe_intermediate"]) for _ in range(self.num_experts)])
        shared = FAMILIES[cfg["family"]].get("shared_expert_intermediate")
        self.shared_expert = MLP(cfg, shared) if shared else None  # Qwen2MoeSparseMoeBlock
        self.shared_expert_gate = nn.Linear(cfg["hidden"], 1, bias=False) if shared else None

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[int(expert_idx)]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        if self.shared_expert is not None:  # Qwen2MoeSparseMoeBlock.forward: the gated shared expert
            shared_expert_output = self.shared_expert(hidden_states)
            shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
            final_hidden_states = final_hidden_states + shared_expert_output
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)


class DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        fam = FAMILIES[cfg["family"]]
        d = cfg["hidden"]
        self.gemma = fam.get("gemma", False)
        self.olmo2 = fam.get("olmo2", False)
        self.residual_multiplier = fam.get("residual_multiplier")
        norm = GemmaRMSNorm if self.gemma else Olmo2RMSNorm if self.olmo2 else LlamaRMSNorm
        if fam.get("starcoder2", False):  # Starcoder2DecoderLayer: nn.LayerNorm(hidden, eps=norm_epsilon)
            norm = functools.partial(nn.LayerNorm, eps=1e-5)
        if fam.get("llama4", False):  # Llama4TextDecoderLayer: MoE on every interleave_moe_layer_step-th layer
            self.self_attn = Llama4Attention(cfg, layer_idx)
            step = fam["interleave_moe_layer_step"]
            self.mlp = Llama4TextMoe(cfg) if (layer_idx + 1) % step == 0 else MLP(cfg)
        elif fam.get("deepseek", False):  # DeepseekV3DecoderLayer: MLA, a dense MLP below first_k_dense_replace
            self.self_attn = DeepseekV3Attention(cfg, layer_idx)
            self.mlp = MLP(cfg) if layer_idx < fam["first_k_dense"] else DeepseekV3MoE(cfg)
        else:
            self.self_attn = Attention(cfg, layer_idx)
            self.mlp = (GptOssMLP(cfg) if fam.get("gpt_oss", False) else SparseMoeBlock(cfg) if fam.get("moe", False)
                        else MLP(cfg))
        if not self.olmo2:  # Olmo2DecoderLayer has no input_layernorm
            self.input_layernorm = norm(d)
        self.post_attention_layernorm = norm(d)
        if self.olmo2:
            self.post_feedforward_layernorm = norm(d)
        if self.gemma:
            self.pre_feedforward_layernorm = norm(d)
            self.post_feedforward_layernorm = norm(d)

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, past=None):
        residual = hidden_states
        if self.olmo2:  # Olmo2DecoderLayer.forward: norms on the outputs of attention and MLP
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past)
            hidden_states = residual + self.post_attention_layernorm(hidden_states)
            residual = hidden_states
            hidden_states = self.post_feedforward_layernorm(self.mlp(hidden_states))
            return residual + hidden_states
        if self.residual_multiplier is not None:  # GraniteDecoderLayer.forward
            hidden_states = self.input_layernorm(hidden_states)
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past)
            hidden_states = residual + hidden_states * self.residual_multiplier
            residual = hidden_states
            hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
            return residual + hidden_states * self.residual_multiplier
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past)
        if self.gemma:
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.pre_feedforward_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
            hidden_states = self.post_feedforward_layernorm(hidden_states)
        else:
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def causal_mask(batch, seq_len, dtype, past=0):
    """The (b, 1, s, past + s) additive mask transformers builds for eager attention (masking_utils); with
    cached positions before the queries (prefix tuning) every query also sees them, and SDPA gets it too."""
    allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool).tril(diagonal=past)
    mask = torch.where(allowed, torch.tensor(0.0, dtype=dtype), torch.tensor(torch.finfo(dtype).min, dtype=dtype))
    return mask[None, None, :, :].expand(batch, 1, seq_len, past + seq_len).contiguous()


class PromptEncoderMLP(nn.Module):
    """P-tuning's PromptEncoder with its default MLP head: embedding, then h → E → E → h with ReLUs."""

    def __init__(self, num_virtual_tokens, token_dim, hidden):
        super().__init__()
        self.embedding = nn.Embedding(num_virtual_tokens, token_dim)
        self.mlp_head = nn.Sequential(nn.Linear(token_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                      nn.Linear(hidden, token_dim))

    def forward(self, indices):
        return self.mlp_head(self.embedding(indices))


class PrefixEncoder(nn.Module):
    """Prefix tuning's PrefixEncoder: an embedding of P × 2·L·kv, or with prefix_projection an embedding of
    P × kv through kv → E (tanh) → 2·L·kv."""

    def __init__(self, num_virtual_tokens, token_dim, layers, hidden, projection):
        super().__init__()
        self.projection = projection
        if projection:
            self.embedding = nn.Embedding(num_virtual_tokens, token_dim)
            self.transform = nn.Sequential(nn.Linear(token_dim, hidden), nn.Tanh(),
                                           nn.Linear(hidden, layers * 2 * token_dim))
        else:
            self.embedding = nn.Embedding(num_virtual_tokens, layers * 2 * token_dim)

    def forward(self, prefix):
        return self.transform(self.embedding(prefix)) if self.projection else self.embedding(prefix)


class CausalLM(nn.Module):
    """Embedding, decoder layers, final norm, lm_head (tied or not), as *ForCausalLM."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        fam = FAMILIES[cfg["family"]]
        d, v = cfg["hidden"], cfg["vocab"]
        self.gemma = fam.get("gemma", False)
        self.embed_tokens = nn.Embedding(v, d)
        layer = (NeoXLayer if fam.get("neox", False) else CohereLayer if fam.get("cohere", False)
                 else SiglipEncoderLayer if fam.get("vit", False) else DecoderLayer)
        self.layers = nn.ModuleList([layer(cfg, i) for i in range(cfg["layers"])])
        self.norm = (GemmaRMSNorm if self.gemma else Olmo2RMSNorm if fam.get("olmo2") else LlamaRMSNorm)(d)
        if fam.get("starcoder2", False) or fam.get("neox", False):  # Starcoder2Model.norm, final_layer_norm
            self.norm = nn.LayerNorm(d, eps=1e-5)
        self.embedding_dropout = fam.get("embedding_dropout", 0.0)
        self.neox = fam.get("neox", False)
        if fam.get("cohere", False):  # CohereModel.norm
            self.norm = CohereLayerNorm(d)
        self.logit_scale = fam.get("logit_scale")
        self.granite = fam.get("granite", False)
        self.rotary_emb = Rotary(int(cfg["head_dim"] * fam.get("rotary_pct", 1.0)))  # GPT-NeoX: rotary_ndims
        if fam.get("gpt_oss", False):
            self.rotary_emb = Rotary(cfg["head_dim"], halves=True)
        if fam.get("deepseek", False):  # DeepseekV3RotaryEmbedding: over qk_rope_head_dim
            self.rotary_emb = Rotary(fam["qk_rope_head_dim"])
        if fam.get("cohere", False):
            self.rotary_emb = Rotary(cfg["head_dim"], interleave=True)
        if fam.get("llama4", False):
            self.rotary_emb = Rotary(cfg["head_dim"], base=500000.0, complex_=True)
        self.lm_head = nn.Linear(d, v, bias=False)
        if cfg.get("tied", False):
            self.lm_head.weight = self.embed_tokens.weight
        self.checkpointing = None  # None | "reentrant" | "non_reentrant"
        self.input_requires_grad = False  # PreTrainedModel.enable_input_require_grads
        self.prompt_encoder = None  # prompt learning: the encoder and its prompt_tokens
        self.prefix = False  # prefix tuning: the encoder makes every layer's past keys and values
        self.prefix_cache = None  # the DynamicCache's concatenated keys and values, until the loss is computed

    def add_prompt(self, num_virtual_tokens, kind="prompt_tuning", encoder_hidden=0, projection=False):
        """PEFT prompt learning (peft_model.py _setup_prompt_encoder): an fp32 encoder and the arange of its
        ids. Prompt tuning: PromptEmbedding, an nn.Embedding of P × hidden; P-tuning: PromptEncoder's MLP head;
        prefix tuning: PrefixEncoder with token_dim = head_dim · kv_heads."""
        d = self.cfg["hidden"]
        if kind == "prompt_tuning":
            self.prompt_encoder = nn.Embedding(num_virtual_tokens, d)
        elif kind == "p_tuning":
            self.prompt_encoder = PromptEncoderMLP(num_virtual_tokens, d, encoder_hidden or d)
        else:
            kv = self.cfg["kv_heads"] * self.cfg["head_dim"]
            self.prompt_encoder = PrefixEncoder(num_virtual_tokens, kv, self.cfg["layers"], encoder_hidden or kv,
                                                projection)
            self.prefix = True
        self.register_buffer("prompt_tokens", torch.arange(num_virtual_tokens).long(), persistent=False)

    def past_key_values(self, b, dtype):
        """get_prompt for prefix tuning: every sequence's prefix encoded, cast to the base model's dtype and
        split per layer into (b, kv_heads, P, head_dim) keys and values."""
        prompt_tokens = self.prompt_tokens.unsqueeze(0).expand(b, -1)
        past = self.prompt_encoder(prompt_tokens).to(dtype)
        p, g, hd = self.prompt_tokens.numel(), self.cfg["kv_heads"], self.cfg["head_dim"]
        past = past.view(b, p, self.cfg["layers"] * 2, g, hd).permute([2, 0, 3, 1, 4]).split(2)
        return [(layer[0], layer[1]) for layer in past]

    def hidden(self, input_ids):
        b, s = input_ids.shape
        hidden_states = self.embed_tokens(input_ids)
        if self.input_requires_grad:
            hidden_states.requires_grad_(True)
        pasts, start = [None] * len(self.layers), 0
        if self.prefix:  # PeftModelForCausalLM.forward: past_key_values = get_prompt(batch_size)
            self.prefix_cache = []
            pasts = [(k, v, self.prefix_cache) for k, v in self.past_key_values(b, self.embed_tokens.weight.dtype)]
            start = self.prompt_tokens.numel()  # cache_position and position_ids start after the prefix
        elif self.prompt_encoder is not None:  # get_prompt: one copy of the prompts, repeated
            prompts = self.prompt_encoder(self.prompt_tokens.unsqueeze(0)[:1]).repeat(b, 1, 1)
            hidden_states = torch.cat((prompts.to(hidden_states.dtype), hidden_states), dim=1)
            s = hidden_states.shape[1]
        if self.gemma:
            normalizer = torch.tensor(self.cfg["hidden"] ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        if self.granite:  # GraniteModel.forward: inputs_embeds * embedding_multiplier (a Python float)
            hidden_states = hidden_states * FAMILIES["granite"]["embedding_multiplier"]
        if self.embedding_dropout:  # Starcoder2Model.forward: dropout(inputs_embeds, embedding_dropout)
            hidden_states = F.dropout(hidden_states, p=self.embedding_dropout, training=self.training)
        if self.neox:  # GPTNeoXModel.forward: emb_dropout (nn.Dropout(hidden_dropout))
            hidden_states = F.dropout(hidden_states, p=FAMILIES["gpt_neox"]["hidden_dropout"], training=self.training)
        position_ids = torch.arange(start, start + s).unsqueeze(0)
        # transformers skips the mask for SDPA only when the key length equals the query length
        mask = causal_mask(b, s, hidden_states.dtype, start) if self.cfg["attention"] == "eager" or start else None
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer, past in zip(self.layers, pasts):
            if self.checkpointing is None:
                hidden_states = layer(hidden_states, mask, position_embeddings, past)
            else:
                call = functools.partial(layer.__call__, attention_mask=mask, position_embeddings=position_embeddings)
                hidden_states = torch_checkpoint.checkpoint(call, hidden_states,
                                                            use_reentrant=self.checkpointing == "reentrant")
        return self.norm(hidden_states)

    def head_logits(self, hidden_states):
        logits = self.lm_head(hidden_states[:, slice(0, None), :])
        if self.granite:  # GraniteForCausalLM.forward
            logits = logits / FAMILIES["granite"]["logits_scaling"]
        if self.logit_scale is not None:  # CohereForCausalLM.forward
            logits = logits * self.logit_scale
        cap = self.cfg.get("final_softcap") if self.gemma else None
        if cap is not None:
            logits = logits / cap
            logits = torch.tanh(logits)
            logits = logits * cap
        return logits


# ----- loss heads -----------------------------------------------------------------------------------------

def hf_causal_lm_loss(logits, labels, vocab_size, num_items_in_batch):
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=-100)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    loss = F.cross_entropy(logits, shift_labels, ignore_index=-100, reduction="sum")
    return loss / num_items_in_batch


def _trl_chunk(h, w, lbl):
    logits = h.float() @ w.float().t()
    log_p = F.log_softmax(logits, dim=-1)
    chunk_loss = F.nll_loss(log_p, lbl, ignore_index=-100, reduction="sum")
    valid = lbl != -100
    chunk_correct = ((logits.argmax(dim=-1) == lbl) & valid).sum().float()
    chunk_entropy = (-(log_p.exp() * log_p).sum(dim=-1) * valid).sum()
    return chunk_loss, chunk_correct, chunk_entropy


def trl_chunked_loss(hidden_states, lm_head_weight, labels, chunk_size, num_items_in_batch):
    hidden = hidden_states[..., :-1, :].reshape(-1, hidden_states.size(-1))
    labels = labels[..., 1:].reshape(-1)
    valid = labels != -100
    n_valid_tensor = valid.sum()
    correct = hidden.new_zeros((), dtype=torch.float32)
    entropy_sum = hidden.new_zeros((), dtype=torch.float32)
    order = valid.to(torch.int8).argsort(descending=True, stable=True)
    hidden = hidden[order]
    labels = labels[order]
    n_padded = int((n_valid_tensor / chunk_size).ceil().to(torch.int64) * chunk_size)
    loss = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, n_padded, chunk_size):
        h_chunk = hidden[start: start + chunk_size]
        lbl_chunk = labels[start: start + chunk_size]
        chunk_loss, chunk_correct, chunk_entropy = torch_checkpoint.checkpoint(
            _trl_chunk, h_chunk, lm_head_weight, lbl_chunk, use_reentrant=False)
        loss = loss + chunk_loss
        correct = correct + chunk_correct
        entropy_sum = entropy_sum + chunk_entropy
    return loss / num_items_in_batch


def torchtune_chunked_loss(model, hidden_states, labels, num_chunks):
    # The recipe shifts labels left and pads with the ignore index; the model returns bf16 chunks.
    labels = torch.hstack((labels[..., 1:], torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)))
    logits = [model.lm_head(chunk) for chunk in hidden_states.tensor_split(num_chunks, dim=1)]
    total_elements = (labels != -100).sum()
    label_chunks = [c.reshape(-1) for c in labels.tensor_split(num_chunks, dim=1)]
    logits = [c.reshape(-1, c.size(-1)) for c in logits]
    total_loss = 0.0
    for logits_chunk, labels_chunk in zip(logits, label_chunks):
        total_loss += F.cross_entropy(logits_chunk.float(), labels_chunk, ignore_index=-100, reduction="sum")
    return total_loss / total_elements


def torchtune_linear_ce_loss(model, hidden_states, labels, num_chunks):
    # LinearCrossEntropyLoss (mask_ignored_tokens=True, not compiled): the model skips its output layer and
    # returns the final hidden states; the loss masks ignored tokens out, then projects and cross-entropies
    # one token chunk at a time. The recipe shifts the labels as for CEWithChunkedOutputLoss.
    labels = torch.hstack((labels[..., 1:], torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)))
    total_valid_tokens = torch.where(labels != -100)[0].numel()
    targets = labels.reshape(-1)
    outputs = hidden_states.reshape(-1, hidden_states.shape[-1])
    indices = torch.where(targets != -100)[0]
    outputs = outputs.index_select(0, indices)
    targets = targets.index_select(0, indices)
    hidden_chunks = outputs.tensor_split(num_chunks, dim=0)
    target_chunks = targets.tensor_split(num_chunks, dim=0)
    total_loss = torch.tensor(0.0)
    for hidden_chunk, target_chunk in zip(hidden_chunks, target_chunks):
        loss = _linear_ce_chunk(model.lm_head, hidden_chunk, target_chunk)
        total_loss += loss
    return total_loss / total_valid_tokens


def _linear_ce_chunk(projection, hidden_chunk, target_chunk):
    # LinearCrossEntropyLoss.compute_cross_entropy: the chunk's logits die when it returns.
    logits = projection(hidden_chunk)
    return F.cross_entropy(logits.float(), target_chunk, reduction="sum", ignore_index=-100)


def num_items_in_batch(labels):
    """Trainer.get_batch_samples: the trained-token count, computed before the step."""
    return (labels[..., 1:] != -100).sum()


def loss_from_hidden(model, hidden_states, labels, loss, chunk, num_items):
    """The loss head as each library computes it; returns only the loss (the caller drops the logits)."""
    if loss == "hf":
        # *ForCausalLM.forward keeps `logits` (returned in the output) while the loss runs; the Trainer
        # drops the output when compute_loss returns, so the logits die at the end of the forward.
        logits = model.head_logits(hidden_states)
        result = hf_causal_lm_loss(logits, labels, model.cfg["vocab"], num_items)
        del logits
        return result
    if loss == "trl_chunked":
        return trl_chunked_loss(hidden_states, model.lm_head.weight, labels, chunk, num_items)
    if loss == "torchtune_chunked":
        return torchtune_chunked_loss(model, hidden_states, labels, chunk)
    if loss == "torchtune_linear_ce":
        return torchtune_linear_ce_loss(model, hidden_states, labels, chunk)
    raise ValueError(f"unknown loss {loss!r}")


# ----- building a model for a row ------------------------------------------------------------------------

LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "gate_proj", "up_proj", "down_proj",
                "gate_up_proj", "gate", "c_fc", "c_proj", "query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h",
                "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "shared_expert_gate")


def apply_lora(model, targets, rank, alpha, dropout, dtype, dora=False):
    """get_peft_model: freeze everything, wrap the targeted nn.Linear modules (by attribute name)."""
    for p in model.parameters():
        p.requires_grad_(False)
    wanted = set(LINEAR_NAMES) if targets == "all-linear" else set(targets.split(","))
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and name in wanted and name != "lm_head":
                setattr(parent, name, LoraLinear(child, rank, alpha, dropout, dtype or child.weight.dtype, dora))
                replaced += 1
    if replaced == 0:
        raise ValueError(f"target_modules {targets!r} matched nothing")
    return model


def apply_peft(model, peft_type, targets, rank, dropout, dtype, feedforward="down_proj", virtual_tokens=0,
               encoder_hidden=0, projection=False):
    """get_peft_model for IA3, VeRA, LN tuning and prompt, P- and prefix tuning: freeze everything, then add
    the method."""
    for p in model.parameters():
        p.requires_grad_(False)
    if peft_type in ("prompt_tuning", "p_tuning", "prefix_tuning"):  # the encoder stays fp32
        model.add_prompt(virtual_tokens, peft_type, encoder_hidden, projection)
        return model
    if peft_type == "ln_tuning":  # the Llama mapping: every RMSNorm of the blocks and the final norm
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, (LlamaRMSNorm, GemmaRMSNorm, nn.LayerNorm, CohereLayerNorm)):
                    setattr(parent, name, LNTuningLayer(child, dtype or child.weight.dtype))
        return model
    wanted = set(LINEAR_NAMES) if targets == "all-linear" else set(targets.split(","))
    sites = [(parent, name, child) for parent in list(model.modules()) for name, child in parent.named_children()
             if isinstance(child, nn.Linear) and name in wanted and name != "lm_head"]
    if not sites:
        raise ValueError(f"target_modules {targets!r} matched nothing")
    if peft_type == "vera":  # VeraModel._find_dim: the widest input and output over the targets
        in_dim = max(c.in_features for _, _, c in sites)
        out_dim = max(c.out_features for _, _, c in sites)
        generator = torch.Generator().manual_seed(0)
        model.vera_A = nn.Parameter(torch.rand(rank, in_dim, generator=generator).to(dtype), requires_grad=False)
        model.vera_B = nn.Parameter(torch.rand(out_dim, rank, generator=generator).to(dtype), requires_grad=False)
    for parent, name, child in sites:
        if peft_type == "ia3":
            wrapped = IA3Linear(child, name in feedforward.split(","), dtype or child.weight.dtype)
        else:
            wrapped = VeraLinear(child, model.vera_A, model.vera_B, rank, dropout, dtype or child.weight.dtype)
        setattr(parent, name, wrapped)
    return model


def pissa_init(layer, mode):
    """PEFT lora/layer.py LoraLayer.pissa_init ("pissa" and "pissa_niter_[n]"), line for line."""
    weight = layer.base_layer.weight
    dtype = weight.dtype
    weight = weight.to(torch.float32)
    r = layer.lora_A.weight.shape[0]
    if mode == "pissa":
        V, S, Uh = torch.linalg.svd(weight.data, full_matrices=False)
        Vr = V[:, :r]
        Sr = S[:r]
        Sr /= layer.scaling
        Uhr = Uh[:r]
    else:
        Vr, Sr, Ur = torch.svd_lowrank(weight.data, r, niter=int(mode.split("_niter_")[-1]))
        Sr /= layer.scaling
        Uhr = Ur.t()
    lora_A = torch.diag(torch.sqrt(Sr)) @ Uhr
    lora_B = Vr @ torch.diag(torch.sqrt(Sr))
    layer.lora_A.weight.data = lora_A
    layer.lora_B.weight.data = lora_B
    weight = weight.data - layer.scaling * lora_B @ lora_A
    weight = weight.to(dtype)
    layer.base_layer.weight.data = weight


def olora_init(layer):
    """PEFT lora/layer.py LoraLayer.olora_init (a 16- or 32-bit base), line for line."""
    orig_weight = layer.base_layer.weight
    dtype = orig_weight.dtype
    weight_tensor = orig_weight
    scale_factor = layer.scaling
    r = layer.lora_A.weight.shape[0]
    weight_tensor = weight_tensor.to(torch.float32)
    Q, R = torch.linalg.qr(weight_tensor.data)
    Qr, Rr = Q[:, :r], R[:r]
    layer.lora_A.weight.data = Rr.contiguous()
    layer.lora_B.weight.data = Qr.contiguous()
    weight_tensor.data -= scale_factor * layer.lora_B.weight @ layer.lora_A.weight
    weight_tensor = weight_tensor.to(dtype)
    layer.base_layer.weight.data = weight_tensor


def build(cfg, seed=0):
    torch.manual_seed(seed)
    model = CausalLM(cfg)
    # Small, well-conditioned weights: nothing here depends on values except the MoE routing.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    return model
