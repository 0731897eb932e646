// SPDX-License-Identifier: MIT
// One road in (docs/run-request.md): a run as somebody described it, every knob optional (unset = nobody said
// it). merge() layers two descriptions knob by knob (the later wins); resolve() fills every knob nobody set
// from a layer of defaults and then from headroom's. Every default is written in this file:
// headroom_defaults, config_class_defaults (a training-args file's SFTConfig / TrainingArguments) and
// profile_defaults (a framework's, over framework.hpp's values). Each cross-knob rule is applied once; errors
// name a knob by its command-line flag (docs/cli.md), the vocabulary every front end shares. Standard library
// only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "framework.hpp"
#include "optimizer.hpp"
#include "throughput.hpp"

namespace headroom {

/// A run's choices as one source stated them: the flags, a file, a launcher or DeepSpeed config, a library
/// caller. The model and the GPU are loaded apart (on_gpu places a resolved run on one).
struct run_request {
  // Method and adapters.
  std::optional<training_method> method;             ///< --method
  std::optional<peft_type> peft;                     ///< --peft-type
  std::optional<std::uint64_t> rank;                 ///< --rank: LoRA r
  std::optional<lora_targets> targets;               ///< --targets: target_modules
  std::optional<lora_targets> ia3_feedforward;       ///< --ia3-feedforward: IA3 feedforward_modules
  std::optional<std::uint64_t> virtual_tokens;       ///< --virtual-tokens: num_virtual_tokens
  std::optional<std::uint64_t> encoder_hidden_size;  ///< --encoder-hidden-size
  std::optional<bool> prefix_projection;             ///< --prefix-projection
  std::optional<lora_init> init_lora_weights;        ///< --init-lora-weights
  std::optional<adapter_precision> adapter_dtype;    ///< --adapter-dtype
  std::optional<double> lora_dropout;                ///< --lora-dropout: a fraction in [0, 1)
  std::optional<bool> train_vision_tower;            ///< --train-vision-tower: full fine-tuning trains it too
  std::optional<lora_targets> modules_to_save;       ///< PEFT modules_to_save: full trainable copies
  // Precision and optimizer.
  std::optional<precision_route> precision;       ///< --precision
  std::optional<std::string> optimizer;           ///< --optimizer: a transformers `optim` string
  std::optional<std::uint64_t> optim_block_size;  ///< --optim-block-size: values per 8-bit block
  std::optional<optimizer_impl> optim_impl;       ///< --optimizer-impl
  std::optional<bool> sgd_momentum;               ///< --sgd-momentum
  std::optional<bool> optimizer_in_backward;      ///< --optimizer-in-backward
  std::optional<bool> grad_accum_buffer;          ///< --grad-accum-buffer
  std::optional<bool> double_quant;               ///< false: --no-double-quant
  std::optional<params_basis> basis;              ///< exact: --exact-params
  std::optional<device_kind> device;              ///< --device
  std::optional<torch_generation> torch;          ///< --torch
  // Workload.
  std::optional<std::uint64_t> batch;          ///< --batch: sequences per micro-batch
  std::optional<std::uint64_t> seq_len;        ///< --seq-len: tokens per sequence
  std::optional<std::uint64_t> grad_accum;     ///< --grad-accum: micro-batches per optimizer step
  std::optional<std::uint64_t> images;         ///< --images: images (Llama-4: tiles) per sequence
  std::optional<activation_formula> formula;   ///< --activation-formula
  std::optional<attention_impl> attention;     ///< --attention
  std::optional<checkpointing> ckpt;           ///< --checkpointing
  std::optional<bool> attention_dropout;       ///< --attention-dropout
  std::optional<bool> reentrant;               ///< false: --non-reentrant
  std::optional<bool> compiled;                ///< --compile
  std::optional<offload_scope> offload_wraps;  ///< --offload-scope
  // Loss head.
  std::optional<loss_impl> loss;               ///< --loss (--ce-chunk: chunked; --fused-ce: liger or cce)
  std::optional<std::uint64_t> chunk_tokens;   ///< --ce-chunk: tokens per chunk
  std::optional<std::uint64_t> output_chunks;  ///< --output-chunks: torchtune's num_output_chunks
  // Machine: the parallel layout, sharding, offloading, the load and the overhead.
  std::optional<std::uint64_t> gpus;                    ///< --gpus: data-parallel ranks
  std::optional<std::uint64_t> tensor_parallel;         ///< --tp
  std::optional<std::uint64_t> pipeline_parallel;       ///< --pp
  std::optional<bool> sequence_parallel;                ///< --sp
  std::optional<sharding> shard;                        ///< --zero, --fsdp
  std::optional<std::uint64_t> fsdp_version;            ///< --fsdp-version
  std::optional<std::uint64_t> prefetch_units;          ///< --fsdp-prefetch: FSDP units gathered ahead
  std::optional<std::uint64_t> reduce_bucket_elements;  ///< --reduce-bucket-size
  std::optional<comm_switch> overlap_comm;              ///< --overlap-comm
  std::optional<std::uint64_t> nccl_channels;           ///< --nccl-channels
  std::optional<bool> gradient_as_bucket_view;          ///< --ddp-bucket-view
  std::optional<bool> sync_each_batch;    ///< --sync-each-batch (accelerate's gradient_accumulation_kwargs)
  std::optional<bool> use_orig_params;    ///< --fsdp-use-orig-params (FSDP1's flag)
  std::optional<bool> offload_optimizer;  ///< --offload-optimizer
  std::optional<bool> offload_params;     ///< --offload-params
  std::optional<load_path> load;          ///< --load-path
  std::optional<bytes> overhead_total;    ///< --overhead-gb: one measured number replaces the model
};

/// headroom's defaults, the course's setup: what every knob is when nobody set it and no framework profile is
/// named (full fine-tuning, bf16 weights with an fp32 master, adamw_torch, full checkpointing,
/// FlashAttention-2, the naive loss). The one place a knob's default is written; `--help` shows these values.
[[nodiscard]] inline run_request headroom_defaults() {
  run_request d;
  d.method = training_method::full;
  d.peft = peft_type::lora;
  d.rank = 16;
  d.targets = lora_targets::all_linear();
  d.adapter_dtype = adapter_precision::base;
  d.lora_dropout = 0.0;
  d.prefix_projection = false;
  d.train_vision_tower = false;  // transformers and LLaMA-Factory freeze a multimodal model's tower
  d.modules_to_save = lora_targets{};
  d.precision = precision_route::bf16_mixed;
  d.optimizer = "adamw_torch";
  d.optim_block_size = 256;  // bitsandbytes >= 0.44 (the course's W06 uses 2048)
  d.optim_impl = optimizer_impl::automatic;
  d.sgd_momentum = false;
  d.optimizer_in_backward = false;
  d.grad_accum_buffer = false;
  d.double_quant = true;  // bnb_4bit_use_double_quant, as the course's QLoRA
  d.basis = params_basis::nominal;
  d.device = device_kind::cuda;
  d.torch = torch_generation::v2;
  d.batch = 1;
  d.seq_len = 2048;
  d.grad_accum = 1;
  d.images = 0;  // a text-only batch
  d.formula = activation_formula::detailed;
  d.attention = attention_impl::flash;
  d.ckpt = checkpointing::full;  // prefix tuning: none (PEFT refuses it with checkpointing)
  d.attention_dropout = false;
  d.reentrant = true;
  d.compiled = false;
  d.loss = loss_impl::naive;
  d.chunk_tokens = loss_config{}.chunk_tokens;
  d.output_chunks = loss_config{}.output_chunks;
  const parallel_config one{};  // one GPU, no sharding: parallel.hpp's defaults
  d.gpus = one.data_parallel;
  d.tensor_parallel = one.tensor_parallel;
  d.pipeline_parallel = one.pipeline_parallel;
  d.sequence_parallel = one.sequence_parallel;
  d.shard = one.shard;
  d.fsdp_version = one.fsdp_version;
  d.prefetch_units = one.prefetch_units;
  d.reduce_bucket_elements = one.reduce_bucket_elements;
  d.overlap_comm = one.overlap_comm;
  d.nccl_channels = one.nccl_channels;
  d.gradient_as_bucket_view = one.gradient_as_bucket_view;
  d.sync_each_batch = one.sync_each_batch;
  d.use_orig_params = one.use_orig_params;
  d.offload_optimizer = one.offload_optimizer;
  d.offload_params = one.offload_params;
  d.load = load_path::none;  // the model is in memory before the step (no loading transient priced)
  return d;
}

/// The defaults of the config class a training-args file names (`config_class`), for the knobs its keys leave
/// unset (io/training_args.hpp): TRL's SFTConfig (trl/trainer/sft_config.py at f2cd5771) or transformers'
/// TrainingArguments (v5). docs/training-args.md cites each.
[[nodiscard]] inline run_request config_class_defaults(bool sft_config) {
  run_request d;
  d.batch = 8;       // per_device_train_batch_size
  d.grad_accum = 1;  // gradient_accumulation_steps
  d.seq_len = 1024;  // SFTConfig max_length (TrainingArguments has none; headroom reads it from either)
  d.ckpt = sft_config ? checkpointing::full : checkpointing::none;  // SFTConfig: gradient_checkpointing=True
  d.reentrant =
      true;  // gradient_checkpointing_enable passes use_reentrant=True unless the kwargs say otherwise
  d.offload_wraps = offload_scope::step;  // TRL's activation_offloading wraps training_step
  d.attention = attention_impl::sdpa;     // from_pretrained's attn_implementation default
  d.optimizer = "adamw_torch_fused";      // TrainingArguments optim
  d.loss = sft_config ? loss_impl::chunked : loss_impl::naive;  // SFTConfig loss_type chunked_nll; plain nll
  d.chunk_tokens = 256;                                         // TRL _CHUNKED_LM_HEAD_CHUNK_SIZE
  return d;
}

/// The precision accelerate runs a full fine-tune in: under FSDP, bf16 autocast over fp32 weights becomes
/// FSDP's MixedPrecision (AcceleratorState calls FullyShardedDataParallelPlugin.set_mixed_precision), which
/// headroom prices as bf16_mixed (docs/parallel.md); anything else is left as it is. The one rule the
/// training-args reader and the accelerate-based framework profiles share.
[[nodiscard]] constexpr precision_route accelerate_precision(precision_route p, training_method method,
                                                             std::optional<sharding> shard) {
  const bool fsdp = shard && detail::is_fsdp(*shard);
  return fsdp && method == training_method::full && p == precision_route::fp32_autocast
             ? precision_route::bf16_mixed
             : p;
}

/// A framework profile as a layer of defaults under request `q` (framework.hpp holds each framework's values
/// and sources): what the framework decides for the knobs nobody set. Four rules tie a profile to the
/// request: QLoRA's trainable parameters stay in bf16 under every framework (TRL sft_trainer.py, PEFT's kbit
/// path), so the profile leaves its precision alone; a full fine-tune takes the profile's full-training
/// precision, and under FSDP a profile's fp32 weights under bf16 autocast become FSDP's MixedPrecision
/// (bf16-mixed: every such profile runs through accelerate, whose AcceleratorState calls
/// FullyShardedDataParallelPlugin.set_mixed_precision); the loss head comes whole from the profile unless the
/// request names any part of it. (Prefix tuning keeps checkpointing off under any layer unless the request
/// asks: resolve's rule.)
[[nodiscard]] inline run_request profile_defaults(const framework_profile& p, const run_request& q) {
  run_request d;
  const training_method method = q.method ? *q.method : *headroom_defaults().method;
  if (method != training_method::qlora)
    d.precision = accelerate_precision(method == training_method::full ? p.full_precision : p.precision,
                                       method, q.shard);
  d.adapter_dtype = p.adapter_dtype;
  if (!q.loss && !q.chunk_tokens && !q.output_chunks) {
    d.loss = p.loss.impl;
    d.chunk_tokens = p.loss.chunk_tokens;
    d.output_chunks = p.loss.output_chunks;
  }
  d.ckpt = p.ckpt;
  d.reentrant = p.reentrant;
  d.optimizer = std::string(p.optimizer);
  d.optim_impl = p.optim_impl;
  d.attention = p.attention;
  return d;
}

namespace detail {
template <class T>
void take_later(std::optional<T>& into, const std::optional<T>& later) {
  if (later) into = later;
}
}  // namespace detail

/// `earlier` with every knob `later` set replaced by later's: precedence as one expression, e.g.
/// merge(file, flags).
[[nodiscard]] inline run_request merge(run_request earlier, const run_request& later) {
  using detail::take_later;
  run_request& m = earlier;
  take_later(m.method, later.method);
  take_later(m.peft, later.peft);
  take_later(m.rank, later.rank);
  take_later(m.targets, later.targets);
  take_later(m.ia3_feedforward, later.ia3_feedforward);
  take_later(m.virtual_tokens, later.virtual_tokens);
  take_later(m.encoder_hidden_size, later.encoder_hidden_size);
  take_later(m.prefix_projection, later.prefix_projection);
  take_later(m.init_lora_weights, later.init_lora_weights);
  take_later(m.adapter_dtype, later.adapter_dtype);
  take_later(m.lora_dropout, later.lora_dropout);
  take_later(m.train_vision_tower, later.train_vision_tower);
  take_later(m.modules_to_save, later.modules_to_save);
  take_later(m.precision, later.precision);
  take_later(m.optimizer, later.optimizer);
  take_later(m.optim_block_size, later.optim_block_size);
  take_later(m.optim_impl, later.optim_impl);
  take_later(m.sgd_momentum, later.sgd_momentum);
  take_later(m.optimizer_in_backward, later.optimizer_in_backward);
  take_later(m.grad_accum_buffer, later.grad_accum_buffer);
  take_later(m.double_quant, later.double_quant);
  take_later(m.basis, later.basis);
  take_later(m.device, later.device);
  take_later(m.torch, later.torch);
  take_later(m.batch, later.batch);
  take_later(m.seq_len, later.seq_len);
  take_later(m.grad_accum, later.grad_accum);
  take_later(m.images, later.images);
  take_later(m.formula, later.formula);
  take_later(m.attention, later.attention);
  take_later(m.ckpt, later.ckpt);
  take_later(m.attention_dropout, later.attention_dropout);
  take_later(m.reentrant, later.reentrant);
  take_later(m.compiled, later.compiled);
  take_later(m.offload_wraps, later.offload_wraps);
  take_later(m.loss, later.loss);
  take_later(m.chunk_tokens, later.chunk_tokens);
  take_later(m.output_chunks, later.output_chunks);
  take_later(m.gpus, later.gpus);
  take_later(m.tensor_parallel, later.tensor_parallel);
  take_later(m.pipeline_parallel, later.pipeline_parallel);
  take_later(m.sequence_parallel, later.sequence_parallel);
  take_later(m.shard, later.shard);
  take_later(m.fsdp_version, later.fsdp_version);
  take_later(m.prefetch_units, later.prefetch_units);
  take_later(m.reduce_bucket_elements, later.reduce_bucket_elements);
  take_later(m.overlap_comm, later.overlap_comm);
  take_later(m.nccl_channels, later.nccl_channels);
  take_later(m.gradient_as_bucket_view, later.gradient_as_bucket_view);
  take_later(m.sync_each_batch, later.sync_each_batch);
  take_later(m.use_orig_params, later.use_orig_params);
  take_later(m.offload_optimizer, later.offload_optimizer);
  take_later(m.offload_params, later.offload_params);
  take_later(m.load, later.load);
  take_later(m.overhead_total, later.overhead_total);
  return m;
}

namespace detail {
/// The first adapter knob a request sets, by its flag (--help's order); empty when none is.
[[nodiscard]] inline std::string_view first_adapter_knob(const run_request& q) {
  if (q.rank) return "--rank";
  if (q.targets) return "--targets";
  if (q.peft) return "--peft-type";
  if (q.ia3_feedforward) return "--ia3-feedforward";
  if (q.adapter_dtype) return "--adapter-dtype";
  if (q.lora_dropout) return "--lora-dropout";
  if (q.virtual_tokens) return "--virtual-tokens";
  if (q.encoder_hidden_size) return "--encoder-hidden-size";
  if (q.prefix_projection) return "--prefix-projection";
  if (q.init_lora_weights) return "--init-lora-weights";
  return {};
}
/// Unsets every adapter knob (the ones first_adapter_knob names): what a full fine-tune has no use for.
inline void drop_adapter_knobs(run_request& q) {
  q.rank.reset();
  q.targets.reset();
  q.peft.reset();
  q.ia3_feedforward.reset();
  q.adapter_dtype.reset();
  q.lora_dropout.reset();
  q.virtual_tokens.reset();
  q.encoder_hidden_size.reset();
  q.prefix_projection.reset();
  q.init_lora_weights.reset();
  q.modules_to_save.reset();
}

/// The method and its adapters. `q` is the request as given (its unset knobs matter to the rules); `d` is
/// it over headroom's defaults.
inline void resolve_method(const run_request& q, const run_request& d, training_setup& s) {
  s.method = *d.method;
  if (s.method == training_method::full && !first_adapter_knob(q).empty())
    throw input_error(
        std::string(first_adapter_knob(q)),
        "configures adapters, and --method full trains every weight (use --method lora or qlora)");
  if (!*d.double_quant && s.method != training_method::qlora)
    throw input_error("--no-double-quant", "applies to a 4-bit base: it needs --method qlora");
  s.lora.rank = *d.rank;
  s.lora.dtype = *d.adapter_dtype;
  s.lora.dropout = *d.lora_dropout;
  set_peft_type(s.lora, *d.peft);
  s.lora.targets = *d.targets;
  s.lora.feedforward = q.ia3_feedforward ? *q.ia3_feedforward : ia3_default_feedforward(s.lora.targets);
  if (q.virtual_tokens) s.lora.virtual_tokens = *q.virtual_tokens;
  if (q.init_lora_weights) s.lora.init = *q.init_lora_weights;
  const std::string type(choice_name(peft_type_names, *d.peft));
  if (prompt_learning(s.lora) && !q.virtual_tokens)
    throw input_error("--virtual-tokens", "is required with --peft-type " + type + " (PEFT has no default)");
  if (q.encoder_hidden_size) {
    if (*d.peft != peft_type::p_tuning && *d.peft != peft_type::prefix_tuning)
      throw input_error("--encoder-hidden-size", "needs --peft-type p-tuning or prefix-tuning");
    s.lora.encoder_hidden_size = *q.encoder_hidden_size;
  }
  if (*d.prefix_projection && *d.peft != peft_type::prefix_tuning)
    throw input_error("--prefix-projection", "needs --peft-type prefix-tuning");
  s.lora.prefix_projection = *d.prefix_projection;
  s.nf4.double_quant = *d.double_quant;
  s.train_vision_tower = *d.train_vision_tower;
  s.lora.modules_to_save = *d.modules_to_save;
  if (s.train_vision_tower && s.method != training_method::full)
    throw input_error("--train-vision-tower",
                      "trains the tower by full fine-tuning (--method full); adapters leave it frozen");
}

/// Precision, optimizer and runtime.
inline void resolve_optimizer(const run_request& d, training_setup& s) {
  s.precision = *d.precision;
  s.optimizer = optimizer_by_name(*d.optimizer);
  s.optim.block_size = *d.optim_block_size;
  s.grad_accum_buffer = *d.grad_accum_buffer;
  s.optim.impl = *d.optim_impl;
  s.optim.momentum = *d.sgd_momentum;
  // LOMO and AdaLomo fuse their update into backward hooks: the in-backward step, whatever the knob says.
  s.optim.in_backward = *d.optimizer_in_backward || s.optimizer.steps_in_backward;
  if (s.optim.momentum && s.optimizer.name != "sgd")
    throw input_error("--sgd-momentum",
                      "applies to --optimizer sgd only (not " + std::string(s.optimizer.name) + ")");
  s.runtime = {*d.device, *d.torch};
}

/// The micro-batch, attention, checkpointing and the loss head.
inline void resolve_workload(const run_request& q, const run_request& d, run_config& r) {
  r.basis = *d.basis;
  r.activations.batch = *d.batch;
  r.activations.seq_len = *d.seq_len;
  r.grad_accum_steps = *d.grad_accum;
  r.activations.images = *d.images;
  r.activations.formula = *d.formula;
  r.activations.attention = *d.attention;
  // PEFT refuses prefix tuning with gradient checkpointing: unless somebody asked for it, it trains without.
  r.activations.ckpt = !q.ckpt && trains_prefix(r.setup) ? checkpointing::none : *d.ckpt;
  r.activations.attention_dropout = *d.attention_dropout;
  r.activations.reentrant = *d.reentrant;
  r.activations.compiled = *d.compiled;
  if (q.offload_wraps) {
    if (!offloads_activations(r.activations.ckpt))
      throw input_error("--offload-scope",
                        "needs an offloading mode: --checkpointing offload, checkpoint-offload or unsloth");
    r.activations.offload_wraps = *q.offload_wraps;
  } else if (d.offload_wraps) {  // a defaults layer's (a training-args file's trainer: TRL wraps the step)
    r.activations.offload_wraps = *d.offload_wraps;
  }
  r.loss = {*d.loss, *d.chunk_tokens, *d.output_chunks};
}

/// The parallel layout, sharding, offloading, the load and the overhead (a CPU run has none: no CUDA
/// context, workspaces or caching allocator; a measured --overhead-gb replaces the model).
inline void resolve_machine(const run_request& d, run_config& r) {
  parallel_config& p = r.parallel;
  p.data_parallel = *d.gpus;
  p.tensor_parallel = *d.tensor_parallel;
  p.pipeline_parallel = *d.pipeline_parallel;
  p.sequence_parallel = *d.sequence_parallel;
  p.shard = *d.shard;
  p.fsdp_version = *d.fsdp_version;
  p.prefetch_units = *d.prefetch_units;
  p.reduce_bucket_elements = *d.reduce_bucket_elements;
  p.overlap_comm = *d.overlap_comm;
  p.nccl_channels = *d.nccl_channels;
  p.gradient_as_bucket_view = *d.gradient_as_bucket_view;
  p.sync_each_batch = *d.sync_each_batch;
  p.use_orig_params = *d.use_orig_params;
  p.offload_optimizer = *d.offload_optimizer;
  p.offload_params = *d.offload_params;
  r.load = *d.load;
  if (d.overhead_total || r.setup.runtime.device == device_kind::cpu) {
    r.overhead.override_total = true;
    r.overhead.total_override = d.overhead_total ? *d.overhead_total : bytes(0);
  }
}
}  // namespace detail

/// A resolved run placed on `gpu`: its CUDA overhead (the workspaces by compute capability; a measured total
/// is kept), and the two things a GPU refuses: a CPU run, and bf16 where the GPU has none.
[[nodiscard]] inline run_config on_gpu(run_config r, const gpu_info& gpu) {
  if (r.setup.runtime.device == device_kind::cpu)
    throw input_error("--device", "cpu cannot be combined with --gpu " + gpu.name);
  if (!gpu.bf16 && compute_dtype_for(r.setup.precision) == compute_dtype::bf16)
    throw input_error(
        "--gpu", gpu.name + " has no bf16 support: use fp16 with loss scaling (--precision fp16-autocast)");
  overhead_config o = overhead_for(gpu);
  o.override_total = r.overhead.override_total;
  o.total_override = r.overhead.total_override;
  r.overhead = o;
  return r;
}

/// The run `q` describes over a layer of `defaults` (a file's config class: SFTConfig, TrainingArguments)
/// between headroom_defaults() and `q`: every knob from q, else from `defaults`, else headroom's; the
/// cross-knob rules read q for what somebody asked (PEFT's prefix tuning keeps checkpointing off unless q
/// sets it).
[[nodiscard]] inline run_config resolve_over(const run_request& defaults, const run_request& q) {
  const run_request d = merge(merge(headroom_defaults(), defaults), q);
  run_config r;
  detail::resolve_method(q, d, r.setup);
  detail::resolve_optimizer(d, r.setup);
  detail::resolve_workload(q, d, r);
  detail::resolve_machine(d, r);
  return r;
}

/// The run a request describes: every knob it leaves unset from `profile`'s defaults where the framework
/// decides it (profile_defaults), else from headroom_defaults(); then every cross-knob rule. on_gpu places
/// the result on a GPU. "What would framework X do" is resolve(q, X).
[[nodiscard]] inline run_config resolve(const run_request& q,
                                        std::optional<framework> profile = std::nullopt) {
  return resolve_over(profile ? profile_defaults(profile_of(*profile), q) : run_request{}, q);
}

}  // namespace headroom
