// SPDX-License-Identifier: MIT
// The flags that describe a training run, shared by memory_calculator and throughput_calculator:
// the model (--preset / --config), the method and optimizer, the micro-batch, and the loss head.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "../headroom.hpp"
#include "../io/training_args.hpp"
#include "../recipes/accelerate.hpp"
#include "../recipes/recipe.hpp"
#include "../request.hpp"
#include "parse.hpp"
#if defined(HEADROOM_WITH_CURL)  // the programs link headroom::hub (libcurl); the fuzzers and tests do not
#include "../io/hub_download.hpp"
#endif

namespace headroom::cli {

/// How a program fills the Hugging Face cache on a miss: a download where it was built with libcurl
/// (HEADROOM_WITH_CURL, target headroom::hub), otherwise nothing (the cache is only read).
[[nodiscard]] inline hub_fetcher program_hub_fetcher() {
#if defined(HEADROOM_WITH_CURL)
  return hub_downloader();
#else
  return {};
#endif
}
/// What --help says of a miss, as this build behaves.
#if defined(HEADROOM_WITH_CURL)
inline constexpr const char* hub_download_help =
    ", downloaded into it on a miss (HF_ENDPOINT, HF_TOKEN; not under HF_HUB_OFFLINE=1)";
#else
inline constexpr const char* hub_download_help = " (this build does not download: no libcurl)";
#endif

namespace detail {
/// A default of headroom_defaults() as --help shows it.
template <class E, std::size_t N>
std::string default_text(const std::array<named<E>, N>& names, const std::optional<E>& value) {
  return std::string(choice_name(names, *value));
}
inline std::string default_text(const std::optional<std::uint64_t>& value) { return std::to_string(*value); }
/// A fraction without trailing zeros ("0", "0.05").
inline std::string default_text(const std::optional<double>& value) {
  std::string text = std::to_string(*value);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}
}  // namespace detail

/// The command line's strings, as CLI11 fills them; request_from_flags reads those that were given. The
/// defaults shown by --help are headroom_defaults() (request.hpp), written there once.
struct run_options {
  std::string preset = "llama-3.1-8b-like";
  std::string config;
  std::string model;  ///< --model: a Hub id in the local Hugging Face cache, a model directory or config.json
  std::string preset_dir;
  std::string gpu;
  std::string method = detail::default_text(method_names, headroom_defaults().method);
  std::string rank = detail::default_text(headroom_defaults().rank);
  std::string targets = lora_targets_text(*headroom_defaults().targets);
  std::string ia3_feedforward;
  std::string virtual_tokens;
  std::string encoder_hidden_size;
  bool prefix_projection = false;
  std::string init_lora_weights;
  std::string optimizer = *headroom_defaults().optimizer;
  std::string precision = detail::default_text(precision_names, headroom_defaults().precision);
  std::string block = detail::default_text(headroom_defaults().optim_block_size);
  std::string batch = detail::default_text(headroom_defaults().batch);
  std::string seq_len = detail::default_text(headroom_defaults().seq_len);
  std::string grad_accum = detail::default_text(headroom_defaults().grad_accum);
  std::string formula = detail::default_text(activation_formula_names, headroom_defaults().formula);
  std::string attention = detail::default_text(attention_names, headroom_defaults().attention);
  std::string checkpointing = detail::default_text(checkpointing_names, headroom_defaults().ckpt);
  std::string loss = detail::default_text(loss_names, headroom_defaults().loss);
  std::string ce_chunk;
  std::string fused_ce;
  std::string overhead_gb;
  std::string args_file;
  std::string deepspeed;               ///< a ds_config.json (--deepspeed)
  std::string recipe;                  ///< a torchtune / axolotl / LLaMA-Factory / Unsloth YAML (--recipe)
  std::string accelerate;              ///< an accelerate config YAML (--accelerate-config)
  std::vector<std::string> overrides;  ///< --set key.path=value for the recipe
  std::string framework;               ///< --framework: a framework's defaults for what the flags leave unset
  std::string gpus = "1";
  std::string device = detail::default_text(device_names, headroom_defaults().device);
  std::string torch = detail::default_text(torch_names, headroom_defaults().torch);
  std::string adapter_dtype =
      detail::default_text(adapter_precision_names, headroom_defaults().adapter_dtype);
  std::string lora_dropout = detail::default_text(headroom_defaults().lora_dropout);
  std::string optimizer_impl = detail::default_text(optimizer_impl_names, headroom_defaults().optim_impl);
  std::string output_chunks = detail::default_text(headroom_defaults().output_chunks);
  std::string offload_scope;
  std::string load_path;
  std::string peft_type = detail::default_text(peft_type_names, headroom_defaults().peft);
  std::string fsdp_version;
  std::string fsdp_prefetch;
  std::string reduce_bucket;
  std::string overlap_comm;
  std::string nccl_channels;
  bool ddp_bucket_view = false;
  bool sync_each_batch = false;
  bool use_orig_params = false;
  bool non_reentrant = false;
  bool compile = false;
  std::string images;               ///< --images: images (Llama-4: tiles) per sequence of a multimodal model
  bool train_vision_tower = false;  ///< --train-vision-tower: full fine-tuning trains the tower too
  bool sgd_momentum = false;
  bool optimizer_in_backward = false;
  std::string zero;
  std::string fsdp;
  std::string tp = "1";
  std::string pp = "1";
  bool sp = false;
  bool offload_optimizer = false;
  bool offload_params = false;
  bool eager_attention = false;
  bool no_checkpointing = false;
  bool attention_dropout = false;
  bool exact_params = false;
  bool grad_accum_buffer = false;
  bool no_double_quant = false;
  std::set<std::string, std::less<>> flags_given;  ///< the flags on the command line (note_given)

  /// Whether `flag` was on the command line (a flag left out: nobody said it).
  [[nodiscard]] bool given(std::string_view flag) const { return flags_given.count(flag) != 0; }
  [[nodiscard]] std::vector<std::filesystem::path> search_path() const {
    return program_search_path(preset_dir);
  }
  [[nodiscard]] loaded_model load_model(const std::vector<std::filesystem::path>& dirs) const {
    if (!model.empty())
      return load_model_named(model, "--model", dirs, hub_cache_dir(hub_environment_of_process()),
                              program_hub_fetcher());
    return config.empty() ? load_preset(preset, dirs) : load_model_config(config);
  }
};

// The model, the method, its adapters and the optimizer (the first flags of --help's groups).
inline void add_model_and_method_options(CLI::App& app, run_options& o) {
  auto* preset =
      app.add_option("--preset", o.preset, "model preset name (see --list-presets)")->capture_default_str();
  auto* config =
      app.add_option("--config", o.config,
                     "a Hugging Face config.json (or the model directory holding it) instead of a preset")
          ->excludes(preset);
  app.add_option("--model", o.model,
                 std::string("ORG/NAME[@REVISION]: the config.json of a Hub model in the local Hugging Face "
                             "cache (HF_HUB_CACHE, HF_HOME)") +
                     hub_download_help + "; also a model directory")
      ->excludes(preset)
      ->excludes(config);
  app.add_option("--preset-dir", o.preset_dir, "directory searched first for presets (and its gpus/)");
  app.add_option("--gpu", o.gpu, "a GPU from presets/gpus: h100-sxm, a100-80gb, rtx-4090, ...");
  app.add_option("--method", o.method, "full | lora | qlora")->capture_default_str();
  app.add_option("--rank", o.rank, "LoRA rank r")->capture_default_str();
  app.add_option(
         "--peft-type", o.peft_type,
         "lora | dora | lora-fa | ia3 | vera | ln-tuning | prompt-tuning | p-tuning | prefix-tuning (with "
         "--method lora or qlora)")
      ->capture_default_str();
  app.add_option("--targets", o.targets,
                 "target_modules (LoRA, IA3, VeRA): all-linear or e.g. k_proj,v_proj,down_proj")
      ->capture_default_str();
  app.add_option(
      "--ia3-feedforward", o.ia3_feedforward,
      "IA3 feedforward_modules (scaled on their input); default PEFT's mapping: the targeted down_proj "
      "or dense_4h_to_h");
  app.add_option("--virtual-tokens", o.virtual_tokens, "prompt, P- and prefix tuning num_virtual_tokens");
  app.add_option("--encoder-hidden-size", o.encoder_hidden_size,
                 "P-tuning / prefix tuning encoder_hidden_size (default: the encoder's token_dim)");
  app.add_flag("--prefix-projection", o.prefix_projection,
               "prefix tuning prefix_projection: the prefix from an embedding through a 2-layer MLP");
  app.add_option(
      "--init-lora-weights", o.init_lora_weights,
      "PEFT init_lora_weights: gaussian | pissa | pissa_niter_N | olora (PiSSA / OLoRA: a load-phase "
      "transient)");
  app.add_option("--optimizer", o.optimizer, "transformers optim string, e.g. adamw_torch, adamw_8bit")
      ->capture_default_str();
  app.add_option("--precision", o.precision, "bf16-mixed | fp32-autocast | bf16-pure | fp32 | fp16-autocast")
      ->capture_default_str();
  app.add_option("--optim-block-size", o.block, "8-bit optimizer block (bnb >= 0.44: 256; course W06: 2048)")
      ->capture_default_str();
}

// The micro-batch, attention, checkpointing, the loss head and multimodal batches.
inline void add_workload_options(CLI::App& app, run_options& o) {
  app.add_option("--batch", o.batch, "micro-batch (per_device_train_batch_size)")->capture_default_str();
  app.add_option("--seq-len", o.seq_len, "tokens per sequence (max_length): 4096, 32,768, 4k, 32K (k = 1024)")
      ->capture_default_str();
  app.add_option("--grad-accum", o.grad_accum, "gradient_accumulation_steps")->capture_default_str();
  app.add_option("--activation-formula", o.formula, "detailed (per-tensor) | korthikanti (the course's)")
      ->capture_default_str();
  app.add_option("--attention", o.attention, "eager | sdpa | flash")->capture_default_str();
  app.add_flag("--eager-attention", o.eager_attention, "alias of --attention eager (the course's flag)")
      ->excludes("--attention");
  app.add_option("--checkpointing", o.checkpointing,
                 "none | full | selective | offload | checkpoint-offload | unsloth (prefix tuning: none)")
      ->capture_default_str();
  app.add_flag("--no-checkpointing", o.no_checkpointing, "alias of --checkpointing none")
      ->excludes("--checkpointing");
  app.add_flag("--attention-dropout", o.attention_dropout, "attention_dropout > 0 (eager keeps a mask)");
  app.add_option("--loss", o.loss, "naive | chunked | liger | cce | chunked-output | linear-ce")
      ->capture_default_str();
  app.add_option("--output-chunks", o.output_chunks,
                 "torchtune's num_output_chunks (--loss chunked-output or linear-ce)")
      ->capture_default_str();
  app.add_option("--offload-scope", o.offload_scope,
                 "model (torchtune: the model forward) | step (TRL: training_step, the loss too): what the "
                 "offloading context wraps");
  app.add_option(
      "--load-path", o.load_path,
      "direct | bnb-4bit | torchao-nf4 | fp32-cast: price loading the checkpoint as a phase of the "
      "peak");
  app.add_flag("--non-reentrant", o.non_reentrant, "torch.utils.checkpoint(use_reentrant=False)");
  app.add_flag(
      "--compile", o.compile,
      "torch.compile (TrainingArguments torch_compile, torchtune compile): Inductor's fused, recomputed "
      "elementwise chains");
  app.add_option("--images", o.images,
                 "images per sequence of a multimodal model (Llama-4: tiles): their tokens join --seq-len");
  app.add_flag("--train-vision-tower", o.train_vision_tower,
               "full fine-tuning also trains the vision tower and projector (LLaMA-Factory "
               "freeze_vision_tower: false); its activations need --images");
}

// The kernels, the adapters' dtype, the optimizer's implementation and the overhead.
inline void add_runtime_options(CLI::App& app, run_options& o) {
  app.add_option("--device", o.device, "cuda | cpu: which kernels' saved tensors to price")
      ->capture_default_str();
  app.add_option("--torch", o.torch, "2 | 1.13: the PyTorch generation (autograd and optimizer details)")
      ->capture_default_str();
  app.add_option("--adapter-dtype", o.adapter_dtype,
                 "base | fp32: LoRA weights in the base dtype or in fp32 (PEFT autocast_adapter_dtype)")
      ->capture_default_str();
  app.add_option("--lora-dropout", o.lora_dropout, "LoraConfig lora_dropout (above 0 keeps masks)")
      ->capture_default_str();
  app.add_option("--optimizer-impl", o.optimizer_impl, "auto | for-loop | foreach | fused (torch.optim)")
      ->capture_default_str();
  app.add_flag("--sgd-momentum", o.sgd_momentum, "SGD with momentum > 0 (a momentum buffer per parameter)");
  app.add_flag("--optimizer-in-backward", o.optimizer_in_backward,
               "step each parameter as its gradient is ready (torchtune optimizer_in_bwd)");
  app.add_option("--ce-chunk", o.ce_chunk,
                 "chunked cross-entropy with N tokens per chunk (TRL chunked_nll: 256)");
  app.add_option("--fused-ce", o.fused_ce, "fused linear cross-entropy: liger (default) or cce")
      ->expected(0, 1);
  app.add_option("--overhead-gb", o.overhead_gb,
                 "measured overhead (context + workspaces + fragmentation), GB");
  app.add_flag("--exact-params", o.exact_params, "price the base on the exact count, not the nominal N");
  app.add_flag("--grad-accum-buffer", o.grad_accum_buffer, "add a bf16 gradient-accumulation buffer (W03)");
  app.add_flag("--no-double-quant", o.no_double_quant, "QLoRA without bnb_4bit_use_double_quant");
}

// GPUs and sharding, DeepSpeed's config, tensor and pipeline parallelism.
inline void add_parallel_options(CLI::App& app, run_options& o) {
  app.add_option("--gpus", o.gpus, "data-parallel GPUs (per-GPU numbers; x --tp x --pp in all)")
      ->capture_default_str();
  auto* zero = app.add_option("--zero", o.zero, "DeepSpeed ZeRO stage: 1 | 2 | 3");
  app.add_option("--fsdp", o.fsdp, "FSDP sharding: full_shard | shard_grad_op | hybrid_shard")
      ->excludes(zero);
  app.add_flag("--offload-optimizer", o.offload_optimizer, "optimizer state (and master) in CPU RAM");
  app.add_flag("--offload-params", o.offload_params, "parameters in CPU RAM (ZeRO-3 / FSDP full shard)");
  app.add_option("--fsdp-version", o.fsdp_version, "1 (FlatParameter, default) | 2 (fully_shard)");
  app.add_option("--fsdp-prefetch", o.fsdp_prefetch,
                 "FSDP units all-gathered ahead (default 1, BACKWARD_PRE)");
  app.add_option("--reduce-bucket-size", o.reduce_bucket, "DeepSpeed reduce_bucket_size in elements (5e8)");
  app.add_option("--overlap-comm", o.overlap_comm,
                 "DeepSpeed overlap_comm: on | off (default: on for ZeRO-3)");
  app.add_option("--nccl-channels", o.nccl_channels, "NCCL channels per communicator (default 32)");
  app.add_flag("--ddp-bucket-view", o.ddp_bucket_view, "DDP gradient_as_bucket_view=True (no bucket copy)");
  app.add_flag("--sync-each-batch", o.sync_each_batch,
               "FSDP: reduce gradients every micro-batch (accelerate's sync_each_batch; default no_sync)");
  app.add_flag("--fsdp-use-orig-params", o.use_orig_params,
               "FSDP1: the optimizer steps the original parameters' views (the Trainer's default; "
               "accelerate's plugin: flat parameters)");
  auto* ds =
      app.add_option("--deepspeed", o.deepspeed,
                     "a DeepSpeed ds_config.json: ZeRO stage, offloading, buckets, precision (\"auto\" "
                     "values from the training arguments or the flags)");
  for (const char* flag : {"--zero", "--fsdp", "--offload-optimizer", "--offload-params",
                           "--reduce-bucket-size", "--overlap-comm", "--precision"})
    ds->excludes(app.get_option(flag));
  app.add_option("--tp", o.tp, "tensor-parallel degree")->capture_default_str();
  app.add_flag("--sp", o.sp, "sequence parallelism (with --tp)");
  app.add_option("--pp", o.pp, "pipeline stages")->capture_default_str();
}

// The files that describe a run, and a framework's defaults.
inline void add_file_options(CLI::App& app, run_options& o) {
  auto* args = app.add_option(
      "--training-args", o.args_file,
      "TrainingArguments / SFTConfig JSON (with peft_config, quantization_config sections); run flags "
      "given win over its keys");
  auto* recipe =
      app.add_option("--recipe", o.recipe,
                     "a framework's YAML: torchtune recipe, axolotl, LLaMA-Factory or TRL script config, "
                     "Unsloth's calls (the model "
                     "from the file unless --preset / --config); run flags given win over its keys");
  recipe->excludes(args);
  app.add_option("--set", o.overrides,
                 "key.path=value: override a recipe key, as `tune run ... compile=True` does (repeatable)")
      ->needs(recipe);
  app.add_option("--accelerate-config", o.accelerate,
                 "an accelerate config YAML: num_processes, FSDP or DeepSpeed plugin settings");
  for (const char* flag : {"--zero", "--fsdp", "--offload-optimizer", "--offload-params", "--fsdp-version"})
    app.get_option("--accelerate-config")->excludes(app.get_option(flag));
  app.add_option("--framework", o.framework,
                 "hf-trainer | trl | peft | torchtune | axolotl | llama-factory | unsloth: that framework's "
                 "defaults for every choice the flags leave unset (docs/frameworks.md); with a file, its own "
                 "framework only (which also says whose a model_name_or_path YAML is when its keys do not)");
}

/// Every run flag, in --help's order within each group.
inline void add_run_options(CLI::App& app, run_options& o) {
  add_model_and_method_options(app, o);
  add_workload_options(app, o);
  add_runtime_options(app, o);
  add_parallel_options(app, o);
  add_file_options(app, o);
}

/// --peft-type: a modelled method, or an error naming the ones not modelled yet.
inline peft_type peft_type_flag(const std::string& text) {
  if (text.empty()) throw input_error("--peft-type", "is empty");
  if (is_unmodelled_peft_type(text))
    throw input_error("--peft-type", "'" + text +
                                         "' is not modelled yet; valid: " + choice_list(peft_type_names) +
                                         " (not modelled: " + std::string(unmodelled_peft_types) + ")");
  return parse_choice(peft_type_names, text, "--peft-type");
}

/// The method, adapter, precision and optimizer flags given, as a request's knobs.
inline void method_flags(const run_options& o, run_request& q) {
  if (o.given("--method")) q.method = parse_choice(method_names, o.method, "--method");
  if (o.given("--precision")) q.precision = parse_choice(precision_names, o.precision, "--precision");
  if (o.given("--optimizer")) {
    (void)optimizer_by_name(o.optimizer);  // an unknown name: the error names the valid ones
    q.optimizer = o.optimizer;
  }
  if (o.given("--optim-block-size"))
    q.optim_block_size = parse_count("--optim-block-size", o.block, 1u << 20);
  if (o.grad_accum_buffer) q.grad_accum_buffer = true;
  if (o.given("--rank")) q.rank = parse_count("--rank", o.rank, max_lora_rank);
  if (o.given("--adapter-dtype"))
    q.adapter_dtype = parse_choice(adapter_precision_names, o.adapter_dtype, "--adapter-dtype");
  if (o.given("--lora-dropout")) q.lora_dropout = parse_fraction("--lora-dropout", o.lora_dropout);
  if (o.given("--peft-type")) q.peft = peft_type_flag(o.peft_type);
  if (o.given("--targets")) q.targets = parse_lora_targets(o.targets);
  if (o.given("--ia3-feedforward")) q.ia3_feedforward = parse_lora_targets(o.ia3_feedforward);
  if (o.given("--virtual-tokens"))
    q.virtual_tokens = parse_count("--virtual-tokens", o.virtual_tokens, max_virtual_tokens);
  if (o.given("--init-lora-weights"))
    q.init_lora_weights = parse_lora_init(o.init_lora_weights, "--init-lora-weights");
  if (o.given("--encoder-hidden-size"))
    q.encoder_hidden_size =
        parse_count("--encoder-hidden-size", o.encoder_hidden_size, max_encoder_hidden_size);
  if (o.prefix_projection) q.prefix_projection = true;
  if (o.no_double_quant) q.double_quant = false;
  if (o.given("--optimizer-impl"))
    q.optim_impl = parse_choice(optimizer_impl_names, o.optimizer_impl, "--optimizer-impl");
  if (o.sgd_momentum) q.sgd_momentum = true;
  if (o.optimizer_in_backward) q.optimizer_in_backward = true;
  if (o.given("--device")) q.device = parse_choice(device_names, o.device, "--device");
  if (o.given("--torch")) q.torch = parse_choice(torch_names, o.torch, "--torch");
  if (o.exact_params) q.basis = params_basis::exact;
}

/// The workload and loss flags given, as a request's knobs (--eager-attention, --no-checkpointing, --ce-chunk
/// and --fused-ce are other spellings of --attention, --checkpointing and --loss).
inline void workload_flags(const run_options& o, run_request& q) {
  if (o.given("--batch")) q.batch = parse_count("--batch", o.batch, max_solver_batch);
  if (o.given("--seq-len")) q.seq_len = parse_length("--seq-len", o.seq_len, max_solver_seq_len);
  if (o.given("--grad-accum")) q.grad_accum = parse_count("--grad-accum", o.grad_accum, 1u << 20);
  if (o.given("--images")) q.images = parse_count("--images", o.images, max_images_per_sequence);
  if (o.train_vision_tower) q.train_vision_tower = true;
  if (o.given("--activation-formula"))
    q.formula = parse_choice(activation_formula_names, o.formula, "--activation-formula");
  if (o.eager_attention) q.attention = attention_impl::eager;
  if (o.given("--attention")) q.attention = parse_choice(attention_names, o.attention, "--attention");
  if (o.no_checkpointing) q.ckpt = checkpointing::none;
  if (o.given("--checkpointing"))
    q.ckpt = parse_choice(checkpointing_names, o.checkpointing, "--checkpointing");
  if (o.attention_dropout) q.attention_dropout = true;
  if (o.non_reentrant) q.reentrant = false;
  if (o.compile) q.compiled = true;
  if (o.given("--offload-scope"))
    q.offload_wraps = parse_choice(offload_scope_names, o.offload_scope, "--offload-scope");
  if (o.given("--loss")) q.loss = parse_choice(loss_names, o.loss, "--loss");
  if (o.given("--output-chunks"))
    q.output_chunks = parse_count("--output-chunks", o.output_chunks, max_solver_seq_len);
  // --ce-chunk and --fused-ce choose the loss themselves: a --loss that says otherwise is a conflict, not
  // something to drop (issue 31, SI-04, SI-05).
  if (o.given("--ce-chunk") && o.given("--loss") && *q.loss != loss_impl::chunked)
    throw input_error("--ce-chunk", "needs --loss chunked, got --loss " + o.loss);
  if (o.given("--fused-ce") && o.given("--loss"))
    throw input_error("--fused-ce", "and --loss " + o.loss + ": give one of them");
  if (o.given("--ce-chunk")) {
    q.loss = loss_impl::chunked;
    q.chunk_tokens = parse_length("--ce-chunk", o.ce_chunk, max_solver_seq_len);
  }
  if (o.given("--fused-ce")) {
    if (o.given("--ce-chunk")) throw input_error("--fused-ce", "cannot be combined with --ce-chunk");
    q.loss = o.fused_ce.empty() ? loss_impl::fused_liger : parse_choice(loss_names, o.fused_ce, "--fused-ce");
    if (*q.loss != loss_impl::fused_liger && *q.loss != loss_impl::fused_cce)
      throw input_error("--fused-ce", "unknown '" + o.fused_ce + "'; valid: liger, cce");
  }
}

/// Bytes from a decimal GB flag value (positive, or >= 0 where zero is meaningful).
inline bytes gb_flag(const std::string& flag, const std::string& text, bool zero_allowed = false) {
  const std::optional<std::uint64_t> size = read_memory_size(text, bytes_per_gb);
  if (!size)
    throw input_error(flag,
                      "expected a size in GB such as 24 or 0.5, or with its unit: 24GB, 24GiB, 512MiB "
                      "(GB = 10^9 bytes, GiB = 2^30), got '" +
                          text + "'");
  if (*size == 0 && !zero_allowed) throw input_error(flag, "expected a positive number, got '" + text + "'");
  if (*size > std::uint64_t{1'000'000'000} * bytes_per_gb)
    throw input_error(flag, "is absurdly large ('" + text + "')");
  return bytes(*size);
}

/// --gpus, --tp, --pp, --sp, --zero, --fsdp and --load-path given, as a request's knobs.
inline void layout_flags(const run_options& o, run_request& q) {
  if (o.given("--gpus")) q.gpus = parse_count("--gpus", o.gpus, max_parallel_gpus);
  if (o.given("--tp")) q.tensor_parallel = parse_count("--tp", o.tp, 1024);
  if (o.given("--pp")) q.pipeline_parallel = parse_count("--pp", o.pp, 1024);
  if (o.sp) q.sequence_parallel = true;
  if (!o.zero.empty()) {
    if (o.zero != "1" && o.zero != "2" && o.zero != "3")
      throw input_error("--zero", "unknown '" + o.zero + "'; valid: 1, 2, 3");
    q.shard = parse_choice(sharding_names, "zero" + o.zero, "--zero");
  }
  if (!o.fsdp.empty()) {
    q.shard = parse_choice(sharding_names, o.fsdp, "--fsdp");
    if (*q.shard == sharding::none || headroom::detail::is_deepspeed(*q.shard))
      throw input_error("--fsdp", "unknown '" + o.fsdp + "'; valid: full_shard, shard_grad_op, hybrid_shard");
  }
  if (o.load_path.empty()) return;
  q.load = parse_choice(load_path_names, o.load_path, "--load-path");
  if (*q.load == load_path::none)
    throw input_error("--load-path", "'none' is the default: leave the flag out");
}

/// The communication knobs (--fsdp-version, --fsdp-prefetch, --reduce-bucket-size, --overlap-comm,
/// --nccl-channels, --ddp-bucket-view), offloading and --overhead-gb given, as a request's knobs.
inline void comm_flags(const run_options& o, run_request& q) {
  if (!o.fsdp_version.empty()) {
    if (o.fsdp_version != "1" && o.fsdp_version != "2")
      throw input_error("--fsdp-version", "unknown '" + o.fsdp_version + "'; valid: 1, 2");
    q.fsdp_version = o.fsdp_version == "2" ? 2 : 1;
  }
  if (!o.fsdp_prefetch.empty())  // 0: no prefetch (FSDP1 backward_prefetch=None)
    q.prefetch_units = o.fsdp_prefetch == "0" ? 0 : parse_count("--fsdp-prefetch", o.fsdp_prefetch, 64);
  if (!o.reduce_bucket.empty())
    q.reduce_bucket_elements =  // DeepSpeed configs write it as 5e8
        parse_count("--reduce-bucket-size", o.reduce_bucket, std::uint64_t{1} << 40, number_kind::tokens);
  if (!o.overlap_comm.empty()) {
    if (o.overlap_comm != "on" && o.overlap_comm != "off")
      throw input_error("--overlap-comm", "unknown '" + o.overlap_comm + "'; valid: on, off");
    q.overlap_comm = o.overlap_comm == "on" ? comm_switch::on : comm_switch::off;
  }
  if (!o.nccl_channels.empty()) q.nccl_channels = parse_count("--nccl-channels", o.nccl_channels, 64);
  if (o.ddp_bucket_view) q.gradient_as_bucket_view = true;
  if (o.sync_each_batch) q.sync_each_batch = true;
  if (o.use_orig_params) q.use_orig_params = true;
  if (o.offload_optimizer) q.offload_optimizer = true;
  if (o.offload_params) q.offload_params = true;
  if (!o.overhead_gb.empty())
    q.overhead_total = gb_flag("--overhead-gb", o.overhead_gb, true);  // 0: a measured nothing
}

/// The run flags on the command line as a request: a flag left out leaves its knob unset.
inline run_request request_from_flags(const run_options& o) {
  run_request q;
  method_flags(o, q);
  workload_flags(o, q);
  layout_flags(o, q);
  comm_flags(o, q);
  return q;
}

/// The layer of defaults under the flags: `under`'s profile, if any (profile_defaults). With --deepspeed the
/// precision and the adapters' dtype stay out of it: a DeepSpeed config decides them itself (its engine casts
/// the model, adapters included).
inline run_request flag_defaults(const run_options& o, const run_request& q, std::optional<framework> under) {
  if (!under) return {};
  run_request layer = profile_defaults(profile_of(*under), q);
  if (o.given("--deepspeed")) {
    layer.precision.reset();
    layer.adapter_dtype.reset();
  }
  return layer;
}

/// --framework, when given.
inline std::optional<framework> framework_flag(const run_options& o) {
  if (o.framework.empty()) return std::nullopt;
  return parse_choice(framework_names, o.framework, "--framework");
}

/// Records which flags the command line gave (after CLI11 parsed it): what request_from_flags reads.
inline void note_given(const CLI::App& app, run_options& o) {
  for (const CLI::Option* opt : app.get_options())
    if (opt->count() > 0) o.flags_given.insert(opt->get_name());
}

/// What a --deepspeed file's "auto" values resolve from: the run's micro-batch, accumulation and precision,
/// the GPUs when --gpus was given, the model's hidden size.
inline deepspeed_inputs deepspeed_inputs_of(const run_config& r, const run_options& o, const model_shape& m) {
  const precision_route p = r.setup.precision;
  return {r.activations.batch, r.grad_accum_steps, o.given("--gpus") ? r.parallel.data_parallel : 0,
          p == precision_route::bf16_mixed || p == precision_route::bf16_pure ||
              p == precision_route::fp32_autocast,
          p == precision_route::fp16_autocast, m.hidden_size,
          // a file's bf16 / fp16 keep the Trainer's wording; the flags' name the flag
          o.args_file.empty() && o.recipe.empty()
              ? "--precision " + std::string(choice_name(precision_names, p)) +
                    (o.given("--precision") ? "" : " (the default)")
              : std::string()};
}

/// What a config file reader said, one line each: notes and warnings after `prefix`, then the keys it did not
/// use after `ignored_label`.
inline std::vector<std::string> file_report(const std::string& prefix, const std::vector<std::string>& notes,
                                            const std::vector<std::string>& warnings,
                                            const std::string& ignored_label,
                                            const std::vector<std::string>& ignored) {
  std::vector<std::string> lines;
  for (const std::string& n : notes) lines.push_back(prefix + n);
  for (const std::string& w : warnings) lines.push_back(prefix + "warning: " + w);
  if (!ignored.empty()) {
    std::string list;
    for (const std::string& k : ignored) headroom::detail::append_listed(list, k);
    lines.push_back(ignored_label + " (not used by the estimate): " + list);
  }
  return lines;
}

/// The model and, when a file describes the run, what it said: --training-args or --recipe.
struct loaded_run {
  loaded_model model;
  std::optional<training_args> args;
  std::optional<framework> source;  ///< the framework whose file it was (a recipe)
};

/// The frameworks a file is read under: a recipe's own; a training-args file's config class's (SFTConfig:
/// TRL; TrainingArguments: the Trainer, or PEFT on it). --framework may name one of them; another would be a
/// second set of defaults for one file, so it is refused.
inline void check_framework_of_file(const run_options& o, const loaded_run& in) {
  const std::optional<framework> named = framework_flag(o);
  if (!named || (!in.source && !in.args)) return;
  const bool sft = in.args && in.args->config_class == "SFTConfig";
  const framework own = in.source ? *in.source : sft ? framework::trl : framework::hf_trainer;
  if (*named == own || (!in.source && !sft && *named == framework::peft)) return;
  const std::string file =
      in.source ? "the recipe" : "the training-args file (" + in.args->config_class + ")";
  throw input_error("--framework",
                    "'" + o.framework + "' differs from " + file + "'s framework, " +
                        std::string(choice_name(framework_names, own)) +
                        ": a file is read with its own framework's defaults (drop --framework, "
                        "or describe the run with flags)");
}

inline loaded_run load_run(const run_options& o, const std::vector<std::filesystem::path>& dirs) {
  loaded_run out;
  if (!o.recipe.empty()) {
    recipe_options ro;
    ro.preset_dirs = dirs;
    ro.fetch = program_hub_fetcher();
    if (o.given("--preset") || o.given("--config") || o.given("--model")) ro.model = o.load_model(dirs);
    ro.fallback_seq_len = parse_length("--seq-len", o.seq_len, max_solver_seq_len);
    ro.gpus = parse_count("--gpus", o.gpus, max_parallel_gpus);
    ro.overrides = o.overrides;
    ro.later = request_from_flags(o);  // the flags given over the file's keys (docs/run-request.md)
    ro.kind = framework_flag(o);       // declares the file's kind where its keys do not
    recipe r = load_recipe(o.recipe, ro);
    out.model = std::move(r.model);
    out.args = std::move(r.args);
    out.source = r.source;
    check_framework_of_file(o, out);
    return out;
  }
  const bool model_given = o.given("--preset") || o.given("--config") || o.given("--model");
  const std::optional<std::string> named =
      o.args_file.empty() || model_given ? std::nullopt : training_args_model_id(o.args_file);
  out.model = named ? load_model_named(*named, o.args_file + ": /model_name_or_path", dirs,
                                       hub_cache_dir(hub_environment_of_process()), program_hub_fetcher())
                    : o.load_model(dirs);
  // The flags given over the file, knob by knob (merge(file, flags): docs/run-request.md).
  if (!o.args_file.empty()) out.args = load_training_args(o.args_file, out.model, request_from_flags(o));
  check_framework_of_file(o, out);
  return out;
}

/// What the output says when no framework was named: the defaults it stands on.
inline constexpr const char* assumed_profile =
    "none given: headroom's defaults (the course's setup: bf16 weights + fp32 master, adamw_torch, full "
    "checkpointing, FlashAttention-2, the naive loss); --framework names another";

/// A framework whose defaults move an estimate by more than 5%.
struct profile_move {
  std::string framework;
  double value = 0;   ///< the estimate under that framework's defaults
  double change = 0;  ///< relative to the run as given
};
/// Every framework whose profile moves `metric` by more than 5%: `run_under(f)` builds the run the command
/// line describes under f's profile (the same request, resolved under it); a profile that cannot run the
/// setup is skipped.
template <class RunUnder, class Metric>
std::vector<profile_move> profile_moves(const run_config& r, RunUnder&& run_under, Metric metric) {
  std::vector<profile_move> moves;
  const double base = metric(r);
  for (const auto& [name, id] : framework_names) {
    double value = 0;
    try {
      value = metric(run_under(id));
    } catch (const input_error&) {
      continue;
    }
    const double change = value / base - 1.0;
    if (change > 0.05 || change < -0.05) moves.push_back({std::string(name), value, change});
  }
  return moves;
}

/// The two layers a run resolves from: the request (a file's keys with the flags over them, or the flags) and
/// the defaults under it (the file's config class, or --framework's profile).
struct request_layers {
  run_request defaults;
  run_request request;
};

/// The layers of the command line: a file's (training_args keeps them), or the flags' under `under`'s
/// profile.
inline request_layers layers_of(const run_options& o, const training_args* args,
                                std::optional<framework> under) {
  if (args != nullptr) return {args->defaults, args->request};
  const run_request q = request_from_flags(o);
  return {flag_defaults(o, q, under), q};
}

namespace detail {
/// The machine flags' combinations, on the run the flags and the file describe (before a launcher or
/// DeepSpeed config adds its own layout): each tuning knob needs the sharding it tunes.
inline void check_machine_flags(const run_config& r, const run_options& o) {
  if (!o.load_path.empty() && load_not_modelled(r))
    throw input_error("--load-path",
                      "prices one GPU's whole model, or FSDP1 full fine-tuning on exact counts (--fsdp with "
                      "--exact-params, no offloading); not --zero, --tp, --pp or another FSDP layout");
  if ((!o.fsdp_version.empty() || !o.fsdp_prefetch.empty()) && !headroom::detail::is_fsdp(r.parallel.shard))
    throw input_error(o.fsdp_version.empty() ? "--fsdp-prefetch" : "--fsdp-version", "needs --fsdp");
  if ((!o.reduce_bucket.empty() || !o.overlap_comm.empty()) &&
      !headroom::detail::is_deepspeed(r.parallel.shard))
    throw input_error(o.reduce_bucket.empty() ? "--overlap-comm" : "--reduce-bucket-size", "needs --zero");
  if (o.ddp_bucket_view && r.parallel.shard != sharding::none)
    throw input_error("--ddp-bucket-view", "applies to DDP (no --zero or --fsdp)");
  if (o.sync_each_batch && !headroom::detail::is_fsdp(r.parallel.shard))
    throw input_error("--sync-each-batch", "needs --fsdp");
  if (o.use_orig_params && !headroom::detail::is_fsdp(r.parallel.shard))
    throw input_error("--fsdp-use-orig-params", "needs --fsdp");
  if (o.use_orig_params && r.parallel.fsdp_version != 1)
    throw input_error("--fsdp-use-orig-params",
                      "is FSDP1's flag (FSDP2 always steps the original parameters)");
  if (o.offload_optimizer && r.parallel.shard == sharding::none)
    throw input_error("--offload-optimizer", "needs --zero or --fsdp");
  if ((!o.zero.empty() || !o.fsdp.empty()) && r.parallel.data_parallel == 1 && !o.offload_optimizer &&
      !o.offload_params)
    throw input_error(
        o.zero.empty() ? "--fsdp" : "--zero",
        "shards over the data-parallel GPUs, and --gpus is 1: nothing to shard (give --gpus N, or "
        "--offload-optimizer / --offload-params to offload on one GPU)");
}

/// The launched layout's own rules (issue 31, SI-14, SI-22): sequence parallelism splits the sequence over
/// the tensor-parallel ranks (Megatron asserts seq_length % tp == 0), and NCCL channels need a communicator.
inline void check_launched_layout(const run_config& r, const run_options& o) {
  const parallel_config& p = r.parallel;
  if (p.sequence_parallel && r.activations.seq_len % p.tensor_parallel != 0)
    throw input_error("--sp", "seq-len " + std::to_string(r.activations.seq_len) +
                                  " must be a multiple of --tp " + std::to_string(p.tensor_parallel));
  if (!o.nccl_channels.empty() && p.gpus() == 1)
    throw input_error("--nccl-channels",
                      "needs more than one GPU (--gpus, --tp or --pp): one GPU opens no "
                      "NCCL communicator");
}

/// `q` with what DeepSpeed config `file` decides merged over it: its "auto" values from the run `q` resolves
/// to over `defaults` (the GPU count from --gpus, or `world_size` when a launcher says it).
inline run_request add_deepspeed_file(const run_options& o, const run_request& defaults, const run_request& q,
                                      const model_shape& m, const std::string& file,
                                      std::optional<std::uint64_t> world_size,
                                      std::vector<std::string>& notes, std::vector<std::string>& warnings,
                                      std::vector<std::string>& ignored) {
  const run_config so_far = resolve_over(defaults, q);
  deepspeed_inputs in = deepspeed_inputs_of(so_far, o, m);
  if (world_size) in.world_size = *world_size;
  return merge(q, deepspeed_request(load_deepspeed(file, in), so_far.setup.method, notes, warnings, ignored));
}

/// --accelerate-config's layout (and a DeepSpeed config it names) over request `q`, resolved over
/// `defaults` for the "auto" values; notes say what.
inline run_request add_accelerate(const run_options& o, const run_request& defaults, run_request q,
                                  const model_shape& m, bool file_deepspeed,
                                  std::vector<std::string>& notes) {
  const accelerate_config a = load_accelerate_config(o.accelerate);
  if (o.given("--gpus") && parse_count("--gpus", o.gpus, max_parallel_gpus) != a.processes)
    throw input_error(
        "--gpus", "differs from " + o.accelerate + "'s num_processes (" + std::to_string(a.processes) + ")");
  // DeepSpeed from --deepspeed or the training arguments, and a launcher that says otherwise: two answers.
  const bool deepspeed = !o.deepspeed.empty() || file_deepspeed;
  if (deepspeed &&
      (a.distributed_type == "FSDP" || (a.distributed_type == "DEEPSPEED" && a.deepspeed_file.empty())))
    throw input_error("--accelerate-config",
                      o.accelerate + " sets " +
                          (a.distributed_type == "FSDP" ? "FSDP" : "its own ZeRO stage") +
                          ", and a DeepSpeed config is given too (--deepspeed or the "
                          "training arguments' deepspeed)");
  q = merge(q, accelerate_request(a, notes));
  for (std::string& line : file_report("accelerate: ", {}, a.warnings, "accelerate: ignored keys", a.ignored))
    notes.push_back(std::move(line));
  if (a.deepspeed_file.empty()) return q;
  if (deepspeed) throw input_error("--deepspeed", o.accelerate + " names a DeepSpeed config already");
  std::vector<std::string> ds_notes, warnings, ignored;
  q = named_by(o.accelerate + ": deepspeed_config.deepspeed_config_file",
               [&] {  // the launcher's key first (MI-46)
                 return add_deepspeed_file(o, defaults, q, m, a.deepspeed_file, a.processes, ds_notes,
                                           warnings, ignored);
               });
  for (std::string& line : file_report("", ds_notes, warnings, "deepspeed: ignored keys", ignored))
    notes.push_back(std::move(line));
  return q;
}
}  // namespace detail

/// A run as the command line launches it, with what its launcher and DeepSpeed files said.
struct launched_run {
  run_config run;
  std::vector<std::string> launch_notes;                       ///< --framework, --accelerate-config
  std::vector<std::string> ds_notes, ds_warnings, ds_ignored;  ///< --deepspeed
};

/// The run: the layers' request, then what the launcher (--accelerate-config) and DeepSpeed (--deepspeed)
/// decide from that run merged over it (docs/run-request.md), resolved once and placed on `gpu`. The machine
/// flags' combinations and the GPU's refusals are checked on the run as the flags and the file describe it.
inline launched_run launch(const run_options& o, const request_layers& layers, const model_shape& m,
                           bool file_deepspeed, const std::optional<gpu_info>& gpu) {
  launched_run out;
  const run_config described = resolve_over(layers.defaults, layers.request);
  detail::check_machine_flags(described, o);
  if (gpu) (void)on_gpu(described, *gpu);
  if (const std::optional<framework> f = framework_flag(o))
    out.launch_notes.push_back("profile: " + o.framework + " (" + std::string(profile_of(*f).source) +
                               "); flags given on the command line take precedence");
  run_request q = layers.request;
  if (!o.accelerate.empty())
    q = detail::add_accelerate(o, layers.defaults, q, m, file_deepspeed, out.launch_notes);
  if (!o.deepspeed.empty()) {
    if (file_deepspeed)
      throw input_error("--deepspeed",
                        "the training-args file names a DeepSpeed config already (\"deepspeed\")");
    q = detail::add_deepspeed_file(o, layers.defaults, q, m, o.deepspeed, std::nullopt, out.ds_notes,
                                   out.ds_warnings, out.ds_ignored);
  }
  // Without a launcher or DeepSpeed file the request is the one described: resolved already.
  out.run = o.accelerate.empty() && o.deepspeed.empty() ? described : resolve_over(layers.defaults, q);
  if (gpu) out.run = on_gpu(out.run, *gpu);
  detail::check_launched_layout(out.run, o);
  return out;
}

/// The command line's run under framework `f`'s profile (headroom's defaults without one): "what would
/// framework X do" is the same request resolved under X's profile, launched the same way.
inline run_config run_under(const run_options& o, const model_shape& m, const std::optional<gpu_info>& gpu,
                            std::optional<framework> f) {
  return launch(o, layers_of(o, nullptr, f), m, false, gpu).run;
}

}  // namespace headroom::cli
