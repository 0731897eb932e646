// SPDX-License-Identifier: MIT
// The YAML readers (torchtune, axolotl, LLaMA-Factory, Unsloth's calls, accelerate) and the framework
// profiles: each shipped-style file round-tripped to the run it describes, each error path with its line.
#include <headroom/framework.hpp>
#include <headroom/recipes/accelerate.hpp>
#include <headroom/recipes/recipe.hpp>

#include "catch.hpp"

using namespace headroom;

namespace {
const std::filesystem::path recipes = std::filesystem::path(HEADROOM_TEST_DATA_DIR) / "recipes";
/// `file` read with `later` (the command line's flags) over it, on `gpus` processes.
recipe read_under(const char* file, const run_request& later, std::uint64_t gpus = 1) {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.gpus = gpus;
  o.later = later;
  return load_recipe(recipes / file, o);
}
recipe read(const char* file, std::uint64_t gpus = 1) { return read_under(file, {}, gpus); }
std::string targets(const recipe& r) { return lora_targets_text(r.args.run.setup.lora.targets); }
}  // namespace

TEST_CASE("Flags over a recipe: the caller's knobs win over the file's and the framework's own",
          "[recipe][request]") {
  run_request later;
  later.batch = 1;
  later.seq_len = 512;
  later.optim_impl = optimizer_impl::foreach;
  const recipe tt = read("tt_llama3_1_8b_qlora_single_device.yaml");
  const recipe flagged = read_under("tt_llama3_1_8b_qlora_single_device.yaml", later);
  CHECK(tt.args.run.setup.optim.impl == optimizer_impl::fused);  // torchtune's fused AdamW
  CHECK(flagged.args.run.setup.optim.impl == optimizer_impl::foreach);
  CHECK(flagged.args.run.activations.batch == 1);
  CHECK(flagged.args.run.activations.seq_len == 512);
  CHECK(flagged.args.run.grad_accum_steps == tt.args.run.grad_accum_steps);  // left alone: the file's
  CHECK(flagged.args.run.load == load_path::torchao_nf4);
  // --method lora over torchtune's QLoRA recipe: no torchao NF4 load without a 4-bit base.
  run_request lora;
  lora.method = training_method::lora;
  CHECK(read_under("tt_llama3_1_8b_qlora_single_device.yaml", lora).args.run.load == load_path::none);
  // axolotl keeps QLoRA's adapters in fp32 (get_peft_model's autocast) unless the caller says otherwise.
  CHECK(read("ax_llama3_qlora_1b.yml").args.run.setup.lora.dtype == adapter_precision::fp32);
  run_request base;
  base.adapter_dtype = adapter_precision::base;
  CHECK(read_under("ax_llama3_qlora_1b.yml", base).args.run.setup.lora.dtype == adapter_precision::base);
  // Unsloth's chunked loss is the framework's choice; a --loss flag replaces it.
  run_request naive;
  naive.loss = loss_impl::naive;
  CHECK(read("us_qwen3_4b_lora16.yaml").args.run.loss.impl == loss_impl::chunked);
  CHECK(read_under("us_qwen3_4b_lora16.yaml", naive).args.run.loss.impl == loss_impl::naive);
}

TEST_CASE("Framework profiles: every framework's defaults, each different where its source says so",
          "[framework]") {
  static_assert(framework_profiles.size() == framework_names.size());
  static_assert(profile_of(framework::torchtune).loss.impl == loss_impl::linear_ce);
  static_assert(profile_of(framework::trl).precision == precision_route::fp32_autocast);
  static_assert(profile_of(framework::unsloth).ckpt == checkpointing::offload_checkpointed);
  for (const auto& [name, id] : framework_names) {
    INFO(name);
    CHECK(profile_of(id).id == id);
    CHECK_FALSE(profile_of(id).source.empty());
  }
  // torchtune: pure bf16 with adapters in bf16, fused AdamW, non-reentrant checkpointing.
  run_request lora;
  lora.method = training_method::lora;
  const run_config r = resolve(lora, framework::torchtune);
  CHECK(r.setup.precision == precision_route::bf16_pure);
  CHECK(r.setup.lora.dtype == adapter_precision::base);
  CHECK(r.setup.optim.impl == optimizer_impl::fused);
  CHECK(r.activations.ckpt == checkpointing::full);
  CHECK_FALSE(r.activations.reentrant);
  CHECK(r.loss.output_chunks == 8);
  // What the request sets stays; QLoRA keeps its bf16 trainable parameters under every profile.
  run_request qlora;
  qlora.method = training_method::qlora;
  qlora.precision = precision_route::bf16_pure;
  qlora.attention = attention_impl::eager;
  const run_config pinned = resolve(qlora, framework::trl);
  CHECK(pinned.activations.attention == attention_impl::eager);
  CHECK(pinned.setup.precision == precision_route::bf16_pure);
  CHECK(pinned.loss.impl == loss_impl::chunked);
  CHECK(pinned.loss.chunk_tokens == 256);
  // Prefix tuning keeps checkpointing off under a profile that turns it on (PEFT refuses both).
  run_request prefix = lora;
  prefix.peft = peft_type::prefix_tuning;
  prefix.virtual_tokens = 20;
  CHECK(resolve(prefix, framework::llama_factory).activations.ckpt == checkpointing::none);
}

TEST_CASE("torchtune recipes: the model builder, LoRA arguments and recipe keys", "[recipe][torchtune]") {
  const recipe lora = read("tt_llama3_1_8b_lora_single_device.yaml");
  CHECK(lora.source == framework::torchtune);
  CHECK(lora.model_id == "llama-3.1-8b");
  CHECK(lora.model.name == "llama-3.1-8b-like");
  const run_config& r = lora.args.run;
  CHECK(r.setup.method == training_method::lora);
  CHECK(r.setup.lora.rank == 8);
  CHECK(targets(lora) == "q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj");
  CHECK(r.setup.precision == precision_route::bf16_pure);
  CHECK(r.setup.lora.dtype == adapter_precision::base);  // adapters built under set_default_dtype(bf16)
  CHECK(r.activations.batch == 2);
  CHECK(r.grad_accum_steps == 8);
  CHECK(r.activations.seq_len == 2048);  // max_seq_len: null → the fallback, said in a note
  CHECK(test::mentions(lora.args.notes, "max_seq_len is null"));
  CHECK(r.activations.ckpt == checkpointing::full);
  CHECK_FALSE(r.activations.reentrant);
  CHECK(r.loss.impl == loss_impl::linear_ce);
  CHECK(std::string(r.setup.optimizer.name) == "adamw_torch");
  CHECK(r.setup.optim.impl == optimizer_impl::fused);
  CHECK(r.activations.attention == attention_impl::sdpa);
  CHECK(test::mentions(lora.args.ignored, "epochs"));
  CHECK(test::mentions(lora.args.ignored, "output_dir"));
  // 19,660,800 adapter parameters: r·(in + out) over q, v, o, gate, up, down in 32 layers.
  CHECK(adapter_count(lora.model.spec.shape, r.setup.lora).count() ==
        32ull * 8 * ((4096 + 4096) + (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096)));

  const recipe full = read("tt_llama3_2_1b_full_single_device.yaml");
  CHECK(full.model.name == "llama-3.2-1b-like");
  CHECK(full.args.run.setup.method == training_method::full);
  CHECK(std::string(full.args.run.setup.optimizer.name) == "paged_adamw_8bit");
  CHECK(full.args.run.setup.optim.in_backward);
  CHECK(full.args.run.activations.ckpt == checkpointing::none);
  CHECK(full.args.run.activations.batch == 4);

  const recipe qlora = read("tt_llama3_1_8b_qlora_single_device.yaml");
  CHECK(qlora.args.run.setup.method == training_method::qlora);
  CHECK(qlora.args.run.load == load_path::torchao_nf4);
  CHECK(qlora.args.run.activations.seq_len == 2048);
  CHECK_FALSE(test::mentions(qlora.args.notes, "max_seq_len is null"));

  // The same config run on 4 GPUs is the distributed recipe: FSDP2 fully_shard.
  const recipe dist = read("tt_qwen3_8b_lora.yaml", 4);
  CHECK(dist.model.name == "qwen3-8b");
  CHECK(dist.args.run.parallel.shard == sharding::fsdp_full);
  CHECK(dist.args.run.parallel.fsdp_version == 2);
  CHECK(read("tt_qwen3_8b_lora.yaml").args.run.parallel.shard == sharding::none);
  // fsdp_reshard_after_forward: False is SHARD_GRAD_OP (recipes/lora_finetune_distributed.py docstring).
  const recipe grad_op = read("tt_llama3_1_8b_lora_distributed.yaml", 4);
  CHECK(grad_op.args.run.parallel.shard == sharding::fsdp_grad_op);
  CHECK(grad_op.args.run.activations.seq_len == 4096);
}

TEST_CASE("axolotl configs: adapter, LoRA keys, sample packing, bf16 auto", "[recipe][axolotl]") {
  const recipe lora = read("ax_llama3_lora_1b.yml");
  CHECK(lora.source == framework::axolotl);
  CHECK(lora.model.name == "llama-3.2-1b-like");
  const run_config& r = lora.args.run;
  CHECK(r.setup.method == training_method::lora);
  CHECK(r.setup.lora.rank == 16);
  CHECK(r.setup.lora.dropout == 0.05);
  CHECK(r.setup.lora.dtype == adapter_precision::fp32);  // PEFT's autocast_adapter_dtype default
  CHECK(r.setup.precision == precision_route::bf16_pure);
  CHECK(r.activations.batch == 2);
  CHECK(r.grad_accum_steps == 2);
  CHECK(r.activations.seq_len == 2048);
  CHECK(r.activations.attention == attention_impl::flash);
  CHECK(r.activations.ckpt == checkpointing::full);
  CHECK_FALSE(r.activations.reentrant);  // axolotl's gradient_checkpointing_kwargs default
  CHECK(std::string(r.setup.optimizer.name) == "adamw_8bit");
  CHECK(lora.args.packing);
  CHECK(lora.args.batching.layout == batch_layout::padding_free);
  CHECK(test::mentions(lora.args.notes, "bf16: auto"));

  const recipe qlora = read("ax_llama3_qlora_1b.yml");
  CHECK(qlora.args.run.setup.method == training_method::qlora);
  CHECK(qlora.args.run.setup.lora.rank == 32);
  CHECK(qlora.args.run.setup.nf4.double_quant);
  CHECK(qlora.args.run.grad_accum_steps == 4);
  CHECK(qlora.args.run.setup.lora.dtype == adapter_precision::fp32);  // no TRL recast to bf16 here

  const recipe linear = read("ax_llama3_8b_lora_linear.yml");
  CHECK(linear.model.name == "llama-3.1-8b-like");  // NousResearch/Meta-Llama-3-8B: Llama 3 8B shapes
  CHECK(targets(linear) == "all-linear");
  CHECK(linear.args.run.activations.seq_len == 4096);
  CHECK(test::mentions(linear.args.ignored, "tokenizer_type"));
}

TEST_CASE("LLaMA-Factory configs: finetuning_type, upcast trainable parameters, cutoff_len, DeepSpeed",
          "[recipe][llama-factory]") {
  const recipe lora = read("lf_qwen3_lora_sft.yaml");
  CHECK(lora.source == framework::llama_factory);
  CHECK(lora.model.name == "qwen3-4b");  // Qwen/Qwen3-4B-Instruct-2507
  const run_config& r = lora.args.run;
  CHECK(r.setup.method == training_method::lora);
  CHECK(r.setup.lora.rank == 8);
  CHECK(targets(lora) == "all-linear");
  CHECK(r.setup.lora.dtype == adapter_precision::fp32);  // cast_trainable_params_to_fp32
  CHECK(r.activations.ckpt == checkpointing::full);
  CHECK(r.activations.reentrant);
  CHECK(r.activations.batch == 1);
  CHECK(r.grad_accum_steps == 8);
  CHECK(r.activations.attention == attention_impl::sdpa);
  CHECK(test::mentions(lora.args.ignored, "template"));

  const recipe full = read("lf_qwen3_full_sft_ds3.yaml");
  CHECK(full.args.run.setup.method == training_method::full);
  CHECK(full.args.deepspeed);
  CHECK(full.args.run.parallel.shard == sharding::zero3);
  CHECK(full.args.run.setup.precision == precision_route::bf16_mixed);  // the engine's bf16 + fp32 master

  const recipe qlora = read("lf_qwen3_qlora_otfq.yaml");
  CHECK(qlora.args.run.setup.method == training_method::qlora);
  CHECK(qlora.args.run.setup.nf4.double_quant);                       // double_quantization defaults to True
  CHECK(qlora.args.run.setup.lora.dtype == adapter_precision::fp32);  // cast_trainable_params_to_fp32
}

TEST_CASE("LLaMA-Factory's freeze_vision_tower: false trains a multimodal model's tower in full fine-tuning",
          "[recipe]") {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.model =
      load_model_config(std::filesystem::path(HEADROOM_TEST_DATA_DIR) / "configs" / "gemma-3-4b-it.json");
  const recipe r = load_recipe(recipes / "lf_gemma3_full_tower.yaml", o);
  CHECK(r.args.run.setup.train_vision_tower);
  CHECK(r.args.run.setup.method == training_method::full);
  // A text model: nothing to train, said in a warning
  o.model = load_preset("llama-3.1-8b-like", o.preset_dirs);
  const recipe text = load_recipe(recipes / "lf_gemma3_full_tower.yaml", o);
  CHECK_FALSE(text.args.run.setup.train_vision_tower);
  CHECK(test::mentions(text.args.warnings, "freeze_vision_tower"));
}

TEST_CASE("Unsloth's calls: from_pretrained, get_peft_model and the SFTConfig", "[recipe][unsloth]") {
  const recipe q = read("us_llama3_1_8b_qlora.yaml");
  CHECK(q.source == framework::unsloth);
  CHECK(q.model.name == "llama-3.1-8b-like");  // unsloth/Meta-Llama-3.1-8B-bnb-4bit
  const run_config& r = q.args.run;
  CHECK(r.setup.method == training_method::qlora);
  CHECK(r.setup.lora.dtype == adapter_precision::base);  // TRL's SFTTrainer recast, as for any TRL QLoRA
  CHECK(r.setup.lora.rank == 16);
  CHECK(targets(q) == "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj");
  CHECK(r.activations.ckpt == checkpointing::offload_checkpointed);
  CHECK(r.loss.impl == loss_impl::chunked);
  CHECK(r.activations.attention == attention_impl::flash);
  CHECK(r.activations.batch == 2);
  CHECK(r.grad_accum_steps == 4);
  CHECK(std::string(r.setup.optimizer.name) == "adamw_8bit");
  // 41,943,040 adapter parameters: rank 16 on the seven projections of Llama 3.1 8B (course W09).
  CHECK(adapter_count(q.model.spec.shape, r.setup.lora).count() == 41'943'040);

  const recipe l16 = read("us_qwen3_4b_lora16.yaml");
  CHECK(l16.args.run.setup.method == training_method::lora);
  CHECK(l16.args.run.activations.seq_len == 4096);
  CHECK(l16.args.run.setup.lora.rank == 32);

  const recipe full = read("us_llama3_2_1b_full.yaml");
  CHECK(full.args.run.setup.method == training_method::full);
  CHECK(full.args.run.activations.ckpt == checkpointing::offload_checkpointed);
}

TEST_CASE("accelerate configs: processes, FSDP and DeepSpeed plugin keys", "[recipe][accelerate]") {
  const accelerate_config fsdp = load_accelerate_config(recipes / "acc_fsdp.yaml");
  CHECK(fsdp.processes == 2);
  CHECK(fsdp.shard == sharding::fsdp_full);
  CHECK_FALSE(fsdp.offload);
  CHECK(test::mentions(fsdp.ignored, "fsdp_config.fsdp_state_dict_type"));
  std::vector<std::string> notes;
  const run_config r = resolve(accelerate_request(fsdp, notes));
  CHECK(r.parallel.data_parallel == 2);
  CHECK(r.parallel.shard == sharding::fsdp_full);
  CHECK(r.parallel.use_orig_params);  // fsdp_use_orig_params: true
  CHECK_FALSE(test::mentions(fsdp.ignored, "fsdp_use_orig_params"));
  CHECK(test::mentions(notes, "mixed_precision bf16"));

  const accelerate_config two = load_accelerate_config(recipes / "acc_fsdp2_offload.yaml");
  const run_config r2 = resolve(accelerate_request(two, notes));
  CHECK(r2.parallel.data_parallel == 8);
  CHECK(r2.parallel.fsdp_version == 2);
  CHECK(r2.parallel.offload_params);
  CHECK(r2.activations.ckpt == checkpointing::full);
  CHECK_FALSE(r2.activations.reentrant);

  const accelerate_config ddp = load_accelerate_config(recipes / "acc_multi_gpu.yaml");
  CHECK(ddp.distributed_type == "MULTI_GPU");
  CHECK(ddp.shard == sharding::none);
  const accelerate_config ds = load_accelerate_config(recipes / "acc_deepspeed.yaml");
  CHECK(ds.deepspeed_file.find("ds_z2_llamafactory.json") != std::string::npos);
}

TEST_CASE("Broken recipes name the file, the line and the key", "[recipe][errors]") {
  using test::require_input_error;
  const auto bad = [](const char* file) { return [file] { (void)read(file); }; };
  require_input_error(bad("tt_broken_rank.yaml"), "tt_broken_rank.yaml:4: model.lora_rank", "-8");
  require_input_error(bad("tt_broken_optimizer.yaml"), ":5: optimizer._component_", "torchao.optim.AdamWFp8");
  require_input_error(bad("tt_broken_model.yaml"), ":2: model._component_", "unknown model 'phi3_mini'");
  require_input_error(bad("tt_broken_syntax.yaml"), "tt_broken_syntax.yaml:3", "malformed YAML");
  require_input_error(bad("tt_broken_batch.yaml"), "batch_size: missing required key");
  require_input_error(bad("ax_broken_qlora.yml"), ":2: adapter", "load_in_4bit");
  require_input_error(bad("ax_broken_8bit.yml"), ":2: load_in_8bit", "not modelled");
  require_input_error(bad("ax_broken_batch.yml"), ":2: micro_batch_size", "\"two\"");
  require_input_error(bad("lf_broken_stage.yaml"), ":2: stage", "'dpo'");
  require_input_error(bad("lf_broken_quant.yaml"), ":4: quantization_bit", "4-bit");
  require_input_error(bad("lf_broken_attn.yaml"), ":3: flash_attn", "fa9");
  require_input_error(bad("lf_broken_model.yaml"), ":1: model_name_or_path", "someone/Secret-Model-13B");
  require_input_error(bad("us_broken_no_peft.yaml"), "get_peft_model", "full_finetuning");
  require_input_error(bad("acc_fsdp.yaml"), "is an accelerate config", "--accelerate-config");
  require_input_error(bad("ds_z2_llamafactory.json"), "not a recipe");
  require_input_error([] { (void)read("."); }, "is a directory");
  const auto bad_acc = [](const char* file) {
    return [file] { (void)load_accelerate_config(recipes / file); };
  };
  require_input_error(bad_acc("acc_broken_strategy.yaml"), ":4: fsdp_config.fsdp_sharding_strategy",
                      "HALF_SHARD");
  require_input_error(bad_acc("acc_broken_type.yaml"), ":1: distributed_type", "XLA");
  require_input_error(bad_acc("acc_broken_processes.yaml"), ":2: num_processes", "got 0");
  // An error raised after translation is pointed back at the YAML key (the optimizer name).
  require_input_error(
      [] {
        (void)recipe_from_yaml(
            detail::parse_yaml_text("base_model: Qwen/Qwen3-4B\noptimizer: adamw_fake\n", "a.yml"));
      },
      "a.yml:2: optimizer", "adamw_fake");
}

TEST_CASE("torchtune's torchao optimizers: AdamW8bit and AdamW4bit with torchao's block sizes",
          "[recipe][torchtune][torchao]") {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.overrides = {"optimizer._component_=torchao.optim.AdamW4bit"};
  const recipe four = load_recipe(recipes / "tt_llama3_2_1b_full_single_device.yaml", o);
  CHECK(four.args.run.setup.optimizer.name == "adamw_torch_4bit");
  CHECK(four.args.run.setup.optim.block_size == 128);  // torchao's AdamW4bit default
  o.overrides = {"optimizer._component_=torchao.optim.AdamW8bit"};
  const recipe eight = load_recipe(recipes / "tt_llama3_2_1b_full_single_device.yaml", o);
  CHECK(eight.args.run.setup.optimizer.name == "adamw_torch_8bit");
  CHECK(eight.args.run.setup.optim.block_size == 256);
}

TEST_CASE("axolotl's FSDP (both versions), its plugins and its activation offloading", "[recipe][axolotl]") {
  run_request eight;
  eight.gpus = 8;
  // FSDP1: `fsdp` words and the deprecated fsdp_-prefixed config; Liger's loss, its other kernels warned.
  const recipe v1 = read_under("ax_llama3_fft_8b_liger_fsdp.yaml", eight, 8);
  const parallel_config& p1 = v1.args.run.parallel;
  CHECK(p1.shard == sharding::fsdp_full);
  CHECK(p1.data_parallel == 8);
  CHECK(p1.offload_params);  // fsdp_offload_params: accelerate's CPUOffload
  CHECK(p1.offload_optimizer);
  CHECK(p1.fsdp_version == 1);
  CHECK(v1.args.run.loss.impl == loss_impl::fused_liger);
  CHECK(test::mentions(v1.args.warnings, "liger_rms_norm"));
  // FSDP2: reshard_after_forward false is SHARD_GRAD_OP; a full fine-tune's activation offloading keeps
  // recompute (checkpoint-offload, non-reentrant); Cut Cross-Entropy's plugin prices CCE's loss.
  const recipe v2 = read("ax_llama3_1b_fft_fsdp2_offload.yml");
  CHECK(v2.args.run.parallel.shard == sharding::fsdp_grad_op);
  CHECK(v2.args.run.parallel.fsdp_version == 2);
  CHECK_FALSE(v2.args.run.parallel.offload_params);
  CHECK(v2.args.run.activations.ckpt == checkpointing::checkpoint_offload);
  CHECK_FALSE(v2.args.run.activations.reentrant);
  CHECK(v2.args.run.loss.impl == loss_impl::fused_cce);
  CHECK(test::mentions(v2.args.warnings, "KDPlugin is not modelled"));
  CHECK(test::mentions(v2.args.notes, "priced on one (give --gpus N)"));
  // Under an adapter the offloader replaces recompute: pure offloading.
  const recipe lora = recipe_from_yaml(detail::parse_yaml_text(
      "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nactivation_offloading: true\n", "o.yml"));
  CHECK(lora.args.run.activations.ckpt == checkpointing::offload);
  require_input_error(
      [] {
        (void)recipe_from_yaml(detail::parse_yaml_text(
            "base_model: meta-llama/Llama-3.2-1B\nfsdp_config:\n  sharding_strategy: NO_SHARD\n", "s.yml"));
      },
      "s.yml:3: fsdp_config.sharding_strategy", "NO_SHARD");
}

TEST_CASE("TRL script configs (alignment-handbook): ModelConfig's fields built as trl/scripts/sft.py does",
          "[recipe][trl]") {
  // zephyr-7b-beta's QLoRA recipe: r 16 on every linear, NF4 without nested quantisation, FlashAttention-2,
  // max_seq_length 2048 (TRL's name for max_length before #2895).
  const recipe z = read("trl_zephyr_7b_sft_qlora.yaml");
  CHECK(z.source == framework::trl);
  const run_config& r = z.args.run;
  CHECK(r.setup.method == training_method::qlora);
  CHECK(r.setup.lora.rank == 16);
  CHECK(r.setup.lora.dropout == Approx(0.05));
  CHECK(targets(z) == "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj");
  CHECK_FALSE(r.setup.nf4.double_quant);  // use_bnb_nested_quant: ModelConfig's default False
  CHECK(r.activations.attention == attention_impl::flash);
  CHECK(r.activations.seq_len == 2048);
  CHECK(r.activations.batch == 4);
  CHECK(r.grad_accum_steps == 2);
  CHECK(z.args.read_as.rfind("TRL script config (model_name_or_path with ModelConfig keys", 0) == 0);
  CHECK(test::mentions(z.args.ignored, "chat_template"));
  // SmolLM3's SFT recipe: a full fine-tune at 65,536 tokens, packed (ffd: bfd's first name), Liger's loss.
  const recipe s3 = read("trl_smollm3_sft_full.yaml");
  CHECK(s3.args.run.setup.method == training_method::full);
  CHECK(s3.args.run.activations.seq_len == 65536);
  CHECK(s3.args.run.loss.impl == loss_impl::fused_liger);
  CHECK(s3.args.batching.layout == batch_layout::padding_free);
  CHECK(s3.args.run.setup.precision == precision_route::bf16_pure);  // torch_dtype bfloat16 with bf16
  // The keys decide the kind; a file that names only a model is refused unless --framework says which.
  const auto ambiguous = detail::parse_yaml_text("model_name_or_path: Qwen/Qwen3-4B\nbf16: true\n", "m.yaml");
  require_input_error([&] { (void)recipe_from_yaml(ambiguous); }, "m.yaml", "--framework trl");
  const auto both =
      detail::parse_yaml_text("model_name_or_path: Qwen/Qwen3-4B\nstage: sft\nuse_peft: true\n", "b.yaml");
  require_input_error([&] { (void)recipe_from_yaml(both); }, "b.yaml", "--framework llama-factory");
  recipe_options declared;
  declared.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  declared.kind = framework::trl;
  const recipe as_trl = recipe_from_yaml(ambiguous, declared);
  CHECK(as_trl.source == framework::trl);
  CHECK(as_trl.args.run.setup.method == training_method::full);
  CHECK(as_trl.args.run.setup.precision == precision_route::fp32_autocast);  // ModelConfig dtype float32
  // A bad value is named by the script's own key and line.
  require_input_error(
      [] {
        (void)recipe_from_yaml(detail::parse_yaml_text(
            "model_name_or_path: Qwen/Qwen3-4B\nuse_peft: true\nlora_r: -4\n", "r.yaml"));
      },
      "r.yaml:3: lora_r");
}

TEST_CASE("Every shipped-style recipe estimates, and its peak grows with the length and the batch",
          "[recipe][property]") {
  for (const char* file :
       {"tt_llama3_1_8b_lora_single_device.yaml", "tt_llama3_2_1b_full_single_device.yaml",
        "tt_llama3_1_8b_qlora_single_device.yaml", "tt_qwen3_8b_lora.yaml",
        "tt_llama3_1_8b_lora_distributed.yaml", "ax_llama3_lora_1b.yml", "ax_llama3_qlora_1b.yml",
        "ax_llama3_8b_lora_linear.yml", "lf_qwen3_lora_sft.yaml", "lf_qwen3_full_sft_ds3.yaml",
        "lf_qwen3_qlora_otfq.yaml", "us_llama3_1_8b_qlora.yaml", "us_qwen3_4b_lora16.yaml",
        "us_llama3_2_1b_full.yaml", "trl_zephyr_7b_sft_qlora.yaml", "trl_smollm3_sft_full.yaml",
        "ax_llama3_fft_8b_liger_fsdp.yaml", "ax_llama3_1b_fft_fsdp2_offload.yml"}) {
    INFO(file);
    const recipe r = read(file);
    const training_estimate e = estimate_training(r.model.spec, r.args.run);
    CHECK(e.total_bytes() >= e.statics.buckets.weights);
    run_config longer = r.args.run;
    longer.activations.seq_len *= 2;
    CHECK(estimate_training(r.model.spec, longer).total_bytes() > e.total_bytes());
    run_config wider = r.args.run;
    wider.activations.batch *= 2;
    CHECK(estimate_training(r.model.spec, wider).total_bytes() > e.total_bytes());
  }
}

TEST_CASE("Recipe overrides: key.path=value as tune run and llamafactory-cli take them", "[recipe]") {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.overrides = {"dataset.packed=True", "compile=True", "tokenizer.max_seq_len=4096", "model.lora_rank=16",
                 "optimizer={_component_: bitsandbytes.optim.PagedAdamW8bit}"};
  const recipe r = load_recipe(recipes / "tt_llama3_1_8b_lora_single_device.yaml", o);
  CHECK(r.args.packing);
  CHECK(r.args.run.activations.compiled);
  CHECK(r.args.run.activations.seq_len == 4096);
  CHECK(r.length_from_file);
  CHECK(r.args.run.setup.lora.rank == 16);
  CHECK(std::string(r.args.run.setup.optimizer.name) == "paged_adamw_8bit");
  // A key the file does not have is created; errors name the override, not a line of the file.
  o.overrides = {"new_section.flag=1", "model.lora_rank=-2"};
  test::require_input_error([&] { (void)load_recipe(recipes / "tt_llama3_1_8b_lora_single_device.yaml", o); },
                            "--set model.lora_rank", "-2");
  o.overrides = {"batch_size.inner=3"};
  test::require_input_error([&] { (void)load_recipe(recipes / "tt_llama3_1_8b_lora_single_device.yaml", o); },
                            "--set batch_size.inner", "not a mapping");
  for (const char* bad : {"compile", "=1", "a..b=1", ".a=1", "a.=1"}) {
    o.overrides = {bad};
    test::require_input_error(
        [&] { (void)load_recipe(recipes / "tt_llama3_1_8b_lora_single_device.yaml", o); }, "--set",
        "expected key.path=value");
  }
}

TEST_CASE("YAML scalars are typed as YAML reads them, and quoted text stays text", "[recipe]") {
  const detail::yaml_doc d = detail::parse_yaml_text(
      "a: True\nb: 'true'\nc: 3e-4\nd: 8\ne: null\nf: ~\ng: -2\nh: 1.0e-4\ni: auto\nj: \"12\"\n", "t.yml");
  CHECK(d.root.at("a") == true);
  CHECK(d.root.at("b") == "true");
  CHECK(d.root.at("c").get<double>() == 3e-4);
  CHECK(d.root.at("d") == 8);
  CHECK(d.root.at("e").is_null());
  CHECK(d.root.at("f").is_null());
  CHECK(d.root.at("g") == -2);
  CHECK(d.root.at("h").get<double>() == 1e-4);
  CHECK(d.root.at("i") == "auto");
  CHECK(d.root.at("j") == "12");
  CHECK(d.at("h") == "t.yml:8: h");
  CHECK(detail::normalise_model_id("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit") == "llama-3.1-8b");
  CHECK(detail::normalise_model_id("Qwen/Qwen3-4B-Instruct-2507") == "qwen3-4b");
}

TEST_CASE("Every recipe says what it was read as, and by which rule", "[recipe]") {
  CHECK(read("tt_qwen3_8b_lora.yaml").args.read_as == "torchtune recipe (model._component_ names a builder)");
  CHECK(read("ax_llama3_lora_1b.yml").args.read_as == "axolotl config (base_model)");
  CHECK(
      read("lf_qwen3_lora_sft.yaml").args.read_as ==
      "LLaMA-Factory config (model_name_or_path with its own keys: stage, finetuning_type, lora_rank, ...)");
  CHECK(read("us_qwen3_4b_lora16.yaml").args.read_as ==
        "Unsloth calls (from_pretrained, get_peft_model, training_args)");
  // Neither rule matches: --framework declares the kind, and the line says so.
  detail::yaml_doc d = detail::parse_yaml_file(recipes / "lf_qwen3_lora_sft.yaml");
  for (std::string_view key : detail::llama_factory_only_keys) d.root.erase(std::string(key));
  recipe_options opt;
  opt.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  opt.kind = framework::llama_factory;
  CHECK(recipe_from_yaml(d, opt).args.read_as ==
        "LLaMA-Factory config (model_name_or_path; --framework says so)");
}

TEST_CASE("An axolotl key that changes memory and is not read is a warning, never only ignored",
          "[recipe][axolotl]") {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.overrides = {"model_quantization_config=Mxfp4Config", "chunked_cross_entropy=true",
                 "lora_mlp_kernel=true", "tiled_mlp=false"};
  const recipe r = load_recipe(recipes / "ax_llama3_lora_1b.yml", o);
  for (const char* key : {"model_quantization_config", "chunked_cross_entropy", "lora_mlp_kernel"}) {
    CHECK(test::mentions(r.args.warnings, std::string(key) + " changes memory but is not modelled"));
    CHECK_FALSE(test::mentions(r.args.ignored, key));
  }
  CHECK_FALSE(test::mentions(r.args.warnings, "tiled_mlp"));  // switched off: nothing to warn about
  CHECK_FALSE(test::mentions(r.args.ignored, "tiled_mlp"));
}

TEST_CASE("torchtune's Llama-4: its own MoE, each expert on its routed tokens, every expert adapted",
          "[recipe][torchtune][moe]") {
  recipe_options o;
  o.preset_dirs = {HEADROOM_PRESET_SOURCE_DIR};
  o.gpus = 8;
  o.model = load_model_config(std::filesystem::path(HEADROOM_TEST_DATA_DIR) / "configs" /
                              "llama-4-scout-17b-16e-instruct.json");
  const recipe r = load_recipe(recipes / "tt_llama4_scout_17b_16e_lora.yaml", o);
  const model_shape& m = r.model.spec.shape;
  REQUIRE(m.experts == moe_layout::torchtune);
  CHECK(experts_run_per_token(m) == 1);  // TokenChoiceTopKRouter, experts_per_token 1
  CHECK_FALSE(test::mentions(r.model.notes, "Llama-4: transformers'"));
  // torchtune models/llama4/_component_builders.py (bd2a0fc7): per layer LoRAGroupedExperts' lora_{gate,up}_a
  // (E, d, r), _b (E, r, f), lora_down_a (E, f, r), _b (E, r, d); the shared expert's three LoRALinears; q
  // (d → 40·128), v (d → 8·128) and output_proj (40·128 → d).
  const std::uint64_t L = 48, E = 16, rank = 16, d = 5120, f = 8192, kv = 8 * 128;
  const std::uint64_t experts = L * E * 3 * rank * (d + f), shared = L * 3 * rank * (d + f);
  const std::uint64_t attention = L * rank * ((d + d) + (d + kv) + (d + d));
  const training_estimate e = estimate_training(r.model.spec, r.args.run);
  CHECK(e.statics.adapter_params == params(experts + shared + attention));
  CHECK(e.statics.adapter_params == params(541'851'648));  // issue 28: "about 542 M"
  CHECK(e.statics.trainable_tensors == L * (6 + 6 + 6));   // the experts' six are 3-D: one tensor each
  // The experts save their SwiGLU on the t·k routed rows (transformers' Llama4TextMoe: on all t·E).
  const run_config& run = r.args.run;
  const std::uint64_t t = run.activations.batch * run.activations.seq_len;
  const activation_terms layer = layer_inventory(m, run.setup, run.activations);
  bytes routed{0};
  for (const activation_term& term : layer)
    if (term.name == "routed tokens") routed += term.amount;
  CHECK(routed == bytes(t * 1 * d * 2));
  model_shape transformers = m;
  transformers.experts = moe_layout::llama4;
  CHECK(layer_inventory(transformers, run.setup, run.activations).total() > layer.total() + bytes(t * E * d));
  // torchtune quantises no MoE expert and has no DoRA for them (lora_llama4_decoder's docstring).
  run_config qlora = run;
  qlora.setup.method = training_method::qlora;
  test::require_input_error([&] { (void)estimate_training(r.model.spec, qlora); }, "method", "no QLoRA");
}

TEST_CASE(
    "YAML aliases: a self-reference and a billion laughs are refused, a shared anchor is read (issue 31)") {
  CHECK_THROWS_WITH(detail::parse_yaml_text("a: &x [1, *x]\n", "x.yaml"),
                    "x.yaml:1: a: alias *x refers to its own anchor &x");
  CHECK_THROWS_WITH(detail::parse_yaml_text("top: 1\nloop: &k\n  inner: *k\n", "y.yaml"),
                    "y.yaml:3: loop.inner: alias *k refers to its own anchor &k");
  std::string laughs = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string n = std::to_string(i), m = std::to_string(i - 1);
    laughs.append("a").append(n).append(": &a").append(n).append(" [");
    for (int j = 0; j < 9; ++j) laughs.append(j ? ",*a" : "*a").append(m);
    laughs.append("]\n");
  }
  CHECK_THROWS_WITH(detail::parse_yaml_text(laughs, "l.yaml"),
                    Catch::Contains("alias expansion exceeds the limit of 100000 nodes"));
  const detail::yaml_doc shared = detail::parse_yaml_text("d: &d {x: 1}\ne: *d\nf: *d\n", "s.yaml");
  CHECK(shared.root["f"]["x"] == 1);
}

TEST_CASE(
    "YAML as PyYAML and OmegaConf read it: merge keys, hex integers, one document, no duplicates (issue 31)",
    "[recipe][errors]") {
  // A merge key's mapping joins the one it is in; the mapping's own keys win, wherever they are written.
  const auto merged = detail::parse_yaml_text("d: &d {a: 1, b: 2}\nb: 3\n<<: *d\n", "m.yml");
  CHECK(merged.root.at("a") == 1);
  CHECK(merged.root.at("b") == 3);
  CHECK(merged.root.count("<<") == 0);
  CHECK(detail::parse_yaml_text("x: 0x800\ny: 0o17\nz: '0x800'\n", "h.yml").root ==
        nlohmann::json{{"x", 2048}, {"y", 15}, {"z", "0x800"}});
  CHECK_THROWS_WITH(detail::parse_yaml_text("a: 1\nb: 2\na: 3\n", "dup.yml"),
                    "dup.yml:3: a: duplicate key (first at line 1); give it once");
  CHECK_THROWS_WITH(detail::parse_yaml_text("a: 1\n---\na: 2\n", "two.yml"),
                    "two.yml:2: a second YAML document; a config is one document");
  CHECK_THROWS_WITH(detail::parse_yaml_text("<<: [1]\n", "bad.yml"),
                    "bad.yml:1: <<: a merge key takes a mapping or a list of mappings");
}
