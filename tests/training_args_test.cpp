// SPDX-License-Identifier: MIT
// Training configs as users write them (TrainingArguments / SFTConfig + LoraConfig + BitsAndBytesConfig),
// and config.json files of every supported architecture.
#include <algorithm>

#include <headroom/flops.hpp>
#include <headroom/io/training_args.hpp>

#include "catch.hpp"
#include "files.hpp"

using namespace headroom;

using namespace headroom::test;

namespace {
training_args args(const char* file, const loaded_model& m) {
  return load_training_args(data_dir / "args" / file, m);
}
}  // namespace

TEST_CASE("Real configs: Qwen3-Coder's zero shared expert, and refusals that name the feature",
          "[training_args][config_io]") {
  // shared_expert_intermediate_size: 0 means none (SOURCES.md counts: a safetensors tally, and hand-derived).
  CHECK(parameter_count(
            load_model_config(data_dir / "configs" / "qwen3-coder-30b-a3b-instruct.json").spec.shape)
            .count() == 30'532'122'624);
  CHECK(parameter_count(
            load_model_config(data_dir / "configs" / "qwen3-coder-480b-a35b-instruct.json").spec.shape)
            .count() == 480'154'875'392);
  using test::require_input_error;
  const auto config = [](nlohmann::json j) { return [j] { (void)model_from_config(j, "c.json"); }; };
  // DeepSeek-V3 loads (671B: deepseek_test.cpp); forced through another family, the keys that family does not
  // read are named (the escape hatch once gave 38.6B for 671B).
  nlohmann::json ds = detail::parse_json_file(data_dir / "configs" / "deepseek-v3.json");
  ds["_headroom"] = {{"architecture", "qwen3_moe"}};
  require_input_error(config(ds), "/n_routed_experts", "changes the model's shapes", "'qwen3_moe'");
  nlohmann::json next = {{"model_type", "qwen3_next"}, {"_headroom", {{"architecture", "qwen3_moe"}}}};
  require_input_error(config(next), "/_headroom/architecture", "linear-attention", "wrong count");
  nlohmann::json tiny = {{"model_type", "llama"},  {"hidden_size", 64}, {"num_attention_heads", 4},
                         {"num_hidden_layers", 2}, {"vocab_size", 100}, {"intermediate_size", 128}};
  nlohmann::json unread = tiny;
  unread["n_shared_experts"] = 2;  // a shape key the llama family does not read
  require_input_error(config(unread), "/n_shared_experts", "changes the model's shapes", "'llama'");
  nlohmann::json missing = tiny;
  missing.erase("model_type");
  require_input_error(config(missing), "/model_type", "missing");
  nlohmann::json bad_family = tiny;
  bad_family["_headroom"] = {{"architecture", "transformer"}};
  require_input_error(config(bad_family), "/_headroom/architecture", "unknown family 'transformer'",
                      "valid: llama");
  CHECK(parameter_count(model_from_config(tiny, "c.json").spec.shape).count() > 0);
}

TEST_CASE("Every supported architecture's config.json gives an exact parameter count",
          "[training_args][config_io]") {
  struct row {
    const char* file;
    std::uint64_t count;
  };
  for (const row r : {row{"qwen2.5-0.5b.json", 494'032'768}, row{"mixtral-8x7b.json", 46'702'792'704},
                      row{"phi-3-mini-4k.json", 3'821'079'552}, row{"gemma-3-1b.json", 999'885'952}}) {
    INFO(r.file);
    const loaded_model m = load_model_config(data_dir / "configs" / r.file);
    CHECK(parameter_count(m.spec.shape).count() == r.count);
    CHECK(estimate_training(m.spec, run_config{}).total_bytes().count() > 0);
  }
  const loaded_model phi = load_model_config(data_dir / "configs" / "phi-3-mini-4k.json");
  CHECK(phi.spec.shape.attention == attention_layout::qkv_proj);
  // LoRA on the fused qkv_proj: r·(d + 3d) per layer, not three separate adapters.
  CHECK(adapter_count(phi.spec.shape, lora_config{16, parse_lora_targets("qkv_proj")}).count() ==
        32ull * 16 * (3072 + 3 * 3072));
  // all-linear reaches the fused projections too: qkv (d → 3d), o, gate_up (d → 2·d_ff), down.
  const std::uint64_t d = 3072, ff = 8192;
  CHECK(adapter_count(phi.spec.shape, lora_config{}).count() ==
        32ull * 16 * ((d + 3 * d) + (d + d) + (d + 2 * ff) + (ff + d)));
}

TEST_CASE("MoE: memory counts every expert, FLOPs count the active ones", "[training_args]") {
  const loaded_model mixtral = load_model_config(data_dir / "configs" / "mixtral-8x7b.json");
  const params active = active_parameter_count(mixtral.spec.shape);
  // Two of eight experts: 46.7B total, about 12.9B active.
  CHECK(active.count() == 46'702'792'704ull - 32ull * 6 * 3 * 4096 * 14336);
  const token_flops f = flops_per_token(mixtral.spec.shape, training_setup{}, active, 4096,
                                        flops_convention::six_n, checkpointing::none);
  CHECK(f.model.count() == 6.0 * static_cast<double>(active.count()));
}

TEST_CASE("An SFTConfig with LoRA and 4-bit quantisation becomes a QLoRA run", "[training_args]") {
  const loaded_model m = preset("qwen3-4b");
  const training_args a = args("sft-qlora.json", m);
  const run_config& r = a.run;
  CHECK(r.setup.method == training_method::qlora);
  CHECK(r.setup.lora.rank == 16);
  CHECK(r.setup.lora.targets == lora_targets::all_linear());
  CHECK(r.setup.nf4.double_quant);
  CHECK(r.load == load_path::bnb_4bit);  // from_pretrained quantises each Linear weight as it arrives
  CHECK(r.activations.batch == 2);
  CHECK(r.grad_accum_steps == 8);
  CHECK(r.activations.seq_len == 2048);
  CHECK(r.activations.attention == attention_impl::flash);
  CHECK(r.activations.ckpt == checkpointing::full);  // TRL's default
  CHECK_FALSE(r.activations.reentrant);              // gradient_checkpointing_kwargs.use_reentrant
  CHECK(r.setup.lora.dropout == 0.05);
  CHECK(r.loss.impl == loss_impl::chunked);  // SFTConfig's loss_type default: chunked_nll
  CHECK(r.setup.optimizer.name == "adamw_torch_fused");
  CHECK(r.basis == params_basis::exact);
  CHECK(a.lr_scheduler_type == "cosine");
  CHECK(a.warmup_steps == 0.05);
  CHECK(a.ignored == std::vector<std::string>{"output_dir", "report_to"});
}

TEST_CASE(
    "SFTConfig defaults: fp32 load, bf16 autocast, checkpointing, chunked loss, batch 8, max_length 1024",
    "[training_args]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  const training_args a = args("sft-defaults.json", m);
  CHECK(a.run.setup.method == training_method::full);
  CHECK(a.run.setup.precision == precision_route::fp32_autocast);  // route B: 16 bytes/param
  CHECK(a.run.activations.batch == 8);
  CHECK(a.run.activations.seq_len == 1024);
  CHECK(a.run.activations.attention == attention_impl::sdpa);
  CHECK(a.learning_rate == 2e-5);
  CHECK(estimate_static(m.spec, a.run.setup, a.run.basis).buckets.static_bytes() ==
        bytes(16 * 8'030'261'248ull + 4 * 291));  // + torch's fp32 `step` per tensor
  CHECK(a.notes.size() >= 2);                     // the float32 load and the max_length default are said
}

TEST_CASE("TrainingArguments with bf16 on a bf16 model is the third route", "[training_args]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  const training_args a = args("trainer-full.json", m);
  CHECK(a.config_class == "TrainingArguments");
  CHECK(a.read_as ==
        "TrainingArguments JSON (TrainingArguments / SFTConfig fields without model_name_or_path; "
        "config_class names the class)");
  CHECK(a.run.setup.precision == precision_route::bf16_pure);
  CHECK(a.run.loss.impl == loss_impl::naive);
  CHECK(estimate_static(m.spec, a.run.setup, a.run.basis).buckets.static_bytes() ==
        bytes(8 * 8'030'261'248ull + 4 * 291));  // + torch's fp32 `step` per tensor
  CHECK(std::find(a.ignored.begin(), a.ignored.end(), "train_sampling_strategy") != a.ignored.end());
}

TEST_CASE("PEFT defaults, DoRA and modules_to_save", "[training_args]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  nlohmann::json j = {{"peft_config", nlohmann::json::object()}};
  training_args a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.lora.rank == 8);                                       // LoraConfig default
  CHECK(a.run.setup.lora.targets == parse_lora_targets("q_proj,v_proj"));  // PEFT's llama default
  j["peft_config"] = {{"r", 16},
                      {"target_modules", {"q_proj", "v_proj"}},
                      {"use_dora", true},
                      {"modules_to_save", {"lm_head"}}};
  a = training_args_from_json(j, m, "inline");
  const static_estimate e = estimate_static(m.spec, a.run.setup, params_basis::exact);
  CHECK(e.adapter_params.count() ==
        6'815'744ull + 32ull * (4096 + 1024));                // + DoRA magnitudes (out features)
  CHECK(e.saved_module_params.count() == 128'256ull * 4096);  // a trainable copy of lm_head
  CHECK(e.trainable_params == e.adapter_params + e.saved_module_params);
}

TEST_CASE("Adapters of a 16-bit model are fp32 by PEFT's autocast_adapter_dtype, QLoRA's bf16 by TRL",
          "[training_args]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  nlohmann::json j = {{"config_class", "TrainingArguments"},
                      {"model_init_kwargs", {{"dtype", "bfloat16"}}},
                      {"peft_config", {{"r", 16}, {"target_modules", "all-linear"}}}};
  training_args a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.lora.dtype == adapter_precision::fp32);
  // fp32 adapters: 4 B weights + 4 B grads + 8 B AdamW state each, no master, beside the 2 B base.
  const static_estimate e = estimate_static(m.spec, a.run.setup, params_basis::exact);
  CHECK(e.adapter_params.count() == 41'943'040ull);  // W09
  CHECK(e.buckets.adapter_weights == bytes(4 * 41'943'040ull));
  CHECK(e.buckets.optimizer.count() == 8 * 41'943'040ull + 4 * 2 * 7 * 32);  // + `step` per A and B
  j["autocast_adapter_dtype"] = false;
  a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.lora.dtype == adapter_precision::base);
  j.erase("autocast_adapter_dtype");
  j["quantization_config"] = {{"load_in_4bit", true}};
  a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.method == training_method::qlora);
  CHECK(a.run.setup.lora.dtype == adapter_precision::base);  // TRL casts QLoRA's adapters to bf16
  j.erase("quantization_config");
  j["model_init_kwargs"]["dtype"] = "float32";
  a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.lora.dtype == adapter_precision::base);  // an fp32 model's adapters are fp32 already
}

TEST_CASE("The trainer's own choices: QLoRA adapters kept fp32, torchao's NF4 load, an unfrozen tower",
          "[training_args][request]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  const nlohmann::json qlora = {{"config_class", "TrainingArguments"},
                                {"model_init_kwargs", {{"dtype", "bfloat16"}}},
                                {"peft_config", {{"r", 16}, {"target_modules", "all-linear"}}},
                                {"quantization_config", {{"load_in_4bit", true}}}};
  trainer_behaviour axolotl;  // calls get_peft_model itself: nothing casts the adapters back to bf16
  axolotl.keeps_fp32_qlora_adapters = "the trainer calls get_peft_model";
  axolotl.qlora_load = load_path::torchao_nf4;
  training_args a = training_args_from_json(qlora, m, "inline", {}, axolotl);
  CHECK(a.run.setup.lora.dtype == adapter_precision::fp32);
  CHECK(a.run.load == load_path::torchao_nf4);
  CHECK(a.notes.back() == "QLoRA adapters in fp32: the trainer calls get_peft_model");
  run_request later;  // the caller's adapter dtype, or another method, wins
  later.adapter_dtype = adapter_precision::base;
  CHECK(training_args_from_json(qlora, m, "inline", later, axolotl).run.setup.lora.dtype ==
        adapter_precision::base);
  later = {};
  later.method = training_method::lora;
  a = training_args_from_json(qlora, m, "inline", later, axolotl);
  CHECK(a.run.load == load_path::none);
  CHECK(a.run.setup.lora.dtype == adapter_precision::fp32);  // PEFT's upcast of a 16-bit model's LoRA
  // An unfrozen vision tower trains in a full fine-tune of a multimodal model; otherwise a warning says so.
  const loaded_model gemma3 = load_model_config(data_dir / "configs" / "gemma-3-4b-it.json");
  trainer_behaviour unfrozen;
  unfrozen.unfrozen_vision_tower = "recipe.yaml:7: freeze_vision_tower";
  const nlohmann::json full = {{"config_class", "TrainingArguments"}};
  CHECK(training_args_from_json(full, gemma3, "inline", {}, unfrozen).run.setup.train_vision_tower);
  a = training_args_from_json(full, m, "inline", {}, unfrozen);  // no tower
  CHECK_FALSE(a.run.setup.train_vision_tower);
  CHECK(a.warnings.back().rfind("recipe.yaml:7: freeze_vision_tower: false changes nothing priced", 0) == 0);
}

TEST_CASE("Flags over a training-args file: the later source wins knob by knob", "[training_args][request]") {
  const loaded_model m = preset("qwen3-4b");
  run_request flags;
  flags.batch = 4;
  flags.seq_len = 4096;
  flags.ckpt = checkpointing::none;
  const training_args file = args("sft-qlora.json", m);
  const training_args a = load_training_args(data_dir / "args" / "sft-qlora.json", m, flags);
  CHECK(file.run.activations.batch == 2);  // the file's per_device_train_batch_size
  CHECK(a.run.activations.batch == 4);
  CHECK(a.run.activations.seq_len == 4096);
  CHECK(a.run.activations.ckpt == checkpointing::none);
  // What the flags leave alone stays the file's: QLoRA with nf4 double quantisation, r 16, bf16 and the
  // gradient accumulation.
  CHECK(a.run.setup.method == training_method::qlora);
  CHECK(a.run.setup.lora.rank == 16);
  CHECK(a.run.setup.nf4.double_quant);
  CHECK(a.run.grad_accum_steps == 8);
  CHECK(a.run.setup.precision == file.run.setup.precision);
  // A flag that is given but says what the file says changes nothing.
  run_request same;
  same.batch = 2;
  CHECK(estimate_training(m.spec, load_training_args(data_dir / "args" / "sft-qlora.json", m, same).run)
            .total_bytes() == estimate_training(m.spec, file.run).total_bytes());
  // --seq-len over a file without max_length: no note about SFTConfig's 1024.
  run_request length;
  length.seq_len = 512;
  const training_args d = load_training_args(data_dir / "args" / "sft-defaults.json", m, length);
  CHECK(d.run.activations.seq_len == 512);
  CHECK_FALSE(test::mentions(d.notes, "max_length not set"));
}

TEST_CASE("A method flag over a training-args file drops what that method has no use for",
          "[training_args][request]") {
  const loaded_model m = preset("qwen3-4b");
  run_request full;
  full.method = training_method::full;
  const training_args a = load_training_args(data_dir / "args" / "sft-qlora.json", m, full);
  CHECK(a.run.setup.method == training_method::full);
  CHECK(a.run.load == load_path::none);  // no bitsandbytes load without a 4-bit base
  run_request lora;
  lora.method = training_method::lora;
  const training_args b = load_training_args(data_dir / "args" / "sft-qlora.json", m, lora);
  CHECK(b.run.setup.method == training_method::lora);
  CHECK(b.run.setup.lora.rank == 16);  // the file's adapters stay
  CHECK(b.run.load == load_path::none);
  // LoRA over a file that trains fully: PEFT's get_peft_model upcasts a 16-bit model's adapters.
  nlohmann::json j = {{"config_class", "TrainingArguments"}, {"model_init_kwargs", {{"dtype", "bfloat16"}}}};
  CHECK(training_args_from_json(j, m, "inline", lora).run.setup.lora.dtype == adapter_precision::fp32);
  // Adapter flags with --method full are still refused, by their flag.
  full.rank = 8;
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline", full); }, "--rank",
                            "--method full");
}

TEST_CASE("A torchtune loss component selects its layout", "[training_args]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  nlohmann::json j = {{"loss", {{"_component_", "torchtune.modules.loss.LinearCrossEntropyLoss"}}}};
  training_args a = training_args_from_json(j, m, "inline");
  CHECK(a.run.loss.impl == loss_impl::linear_ce);
  CHECK(a.run.loss.output_chunks == 8);  // torchtune's default num_output_chunks
  j["loss"] = {{"_component_", "torchtune.modules.loss.CEWithChunkedOutputLoss"}, {"num_output_chunks", 16}};
  a = training_args_from_json(j, m, "inline");
  CHECK(a.run.loss.impl == loss_impl::chunked_output);
  CHECK(a.run.loss.output_chunks == 16);
  j["loss"] = {{"_component_", "torchtune.modules.loss.ForwardKLLoss"}};
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline"); }, "/loss/_component_",
                            "LinearCrossEntropyLoss");
  j["loss"] = {{"_component_", "torchtune.modules.loss.LinearCrossEntropyLoss"}};
  j["loss_type"] = "nll";
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline"); }, "/loss", "loss_type");
}

TEST_CASE("Activation offloading keys name their framework's mechanism", "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  auto run = [&](nlohmann::json j) { return training_args_from_json(j, m, "inline").run.activations; };
  // TRL: activation_offloading with SFTConfig's default checkpointing, around training_step.
  activation_config a = run({{"activation_offloading", true}});
  CHECK(a.ckpt == checkpointing::checkpoint_offload);
  CHECK(a.offload_wraps == offload_scope::step);
  CHECK(run({{"activation_offloading", true}, {"gradient_checkpointing", false}}).ckpt ==
        checkpointing::offload);
  // torchtune: non-reentrant wrappers, offloading around the model forward; offloading needs checkpointing.
  a = run({{"enable_activation_checkpointing", true}, {"enable_activation_offloading", true}});
  CHECK(a.ckpt == checkpointing::checkpoint_offload);
  CHECK(a.offload_wraps == offload_scope::model);
  CHECK_FALSE(a.reentrant);
  CHECK(run({{"enable_activation_checkpointing", false}}).ckpt == checkpointing::none);
  test::require_input_error(
      [&] {
        (void)run({{"enable_activation_offloading", true}});
      },
      "/enable_activation_offloading", "needs enable_activation_checkpointing");
  test::require_input_error(
      [&] {
        (void)run({{"enable_activation_checkpointing", true}, {"gradient_checkpointing", true}});
      },
      "/enable_activation_checkpointing", "cannot be combined");
  // Unsloth: get_peft_model(use_gradient_checkpointing="unsloth").
  CHECK(run({{"use_gradient_checkpointing", "unsloth"}}).ckpt == checkpointing::offload_checkpointed);
  CHECK(run({{"use_gradient_checkpointing", false}}).ckpt == checkpointing::none);
  test::require_input_error(
      [&] {
        (void)run({{"use_gradient_checkpointing", "yes"}});
      },
      "/use_gradient_checkpointing", "unsloth");
}

TEST_CASE("TrainingArguments fsdp and fsdp_config choose the sharding and its buffers", "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  auto run = [&](nlohmann::json j) { return training_args_from_json(j, m, "inline").run.parallel; };
  parallel_config p = run({{"fsdp", "full_shard auto_wrap"}});
  CHECK(p.shard == sharding::fsdp_full);
  CHECK(p.fsdp_version == 1);
  CHECK(p.prefetch_units == 1);  // backward_prefetch BACKWARD_PRE
  p = run({{"fsdp", "full_shard auto_wrap offload"}, {"fsdp_config", {{"fsdp_version", 2}}}});
  CHECK(p.fsdp_version == 2);
  CHECK(p.offload_params);
  CHECK(p.offload_optimizer);
  CHECK(run({{"fsdp", {"shard_grad_op"}}, {"fsdp_config", {{"backward_prefetch", "no_prefetch"}}}})
            .prefetch_units == 0);
  test::require_input_error([&] { (void)run({{"fsdp", "zero3"}}); }, "/fsdp", "unknown 'zero3'");
  test::require_input_error(
      [&] {
        (void)run({{"fsdp", "full_shard"}, {"fsdp_config", {{"fsdp_version", 3}}}});
      },
      "fsdp_version");
  test::require_input_error(
      [&] {
        (void)run({{"fsdp", "full_shard"}, {"fsdp_config", {{"backward_prefetch", "early"}}}});
      },
      "/backward_prefetch", "backward_pre");
  // use_orig_params: the Trainer's fsdp_config default is true; FSDP2 has no such flag.
  CHECK(run({{"fsdp", "full_shard"}}).use_orig_params);
  CHECK_FALSE(run({{"fsdp", "full_shard"}, {"fsdp_config", {{"use_orig_params", false}}}}).use_orig_params);
  CHECK_FALSE(run({{"fsdp", "full_shard"}, {"fsdp_config", {{"fsdp_version", 2}}}}).use_orig_params);
  CHECK_FALSE(run(nlohmann::json::object()).use_orig_params);
  test::require_input_error(
      [&] {
        (void)run({{"fsdp", "full_shard"}, {"fsdp_config", {{"use_orig_params", "yes"}}}});
      },
      "/use_orig_params", "true or false");
  const training_args a = training_args_from_json({{"fsdp_config", {{"fsdp_version", 2}}}}, m, "inline");
  CHECK(a.run.parallel.shard == sharding::none);
  CHECK(a.notes.back().find("fsdp_config without fsdp") == 0);
}

TEST_CASE("bf16 on a float32 model under FSDP is accelerate's MixedPrecision: a full fine-tune is bf16-mixed",
          "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  // SFTConfig: float32 load, bf16 (TRL's default): autocast on one GPU, MixedPrecision under FSDP.
  CHECK(training_args_from_json(nlohmann::json::object(), m, "inline").run.setup.precision ==
        precision_route::fp32_autocast);
  const training_args a = training_args_from_json({{"fsdp", "full_shard auto_wrap"}}, m, "inline");
  CHECK(a.run.setup.precision == precision_route::bf16_mixed);
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
    return n.find("MixedPrecision(param_dtype=bfloat16)") != n.npos;
  }));
  // LoRA keeps autocast over its fp32 base; a bfloat16 load is pure bf16 either way.
  const nlohmann::json lora = {{"fsdp", "full_shard"}, {"peft_config", {{"r", 8}}}};
  CHECK(training_args_from_json(lora, m, "inline").run.setup.precision == precision_route::fp32_autocast);
  const nlohmann::json bf16_load = {{"fsdp", "full_shard"}, {"model_init_kwargs", {{"dtype", "bfloat16"}}}};
  CHECK(training_args_from_json(bf16_load, m, "inline").run.setup.precision == precision_route::bf16_pure);
}

TEST_CASE(
    "accelerator_config's sync_each_batch chooses FSDP's accumulation (accelerate's no_sync by default)",
    "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  auto run = [&](nlohmann::json j) { return training_args_from_json(j, m, "inline").run.parallel; };
  CHECK_FALSE(run({{"fsdp", "full_shard auto_wrap"}}).sync_each_batch);
  CHECK(run({{"fsdp", "full_shard auto_wrap"},
             {"accelerator_config", {{"gradient_accumulation_kwargs", {{"sync_each_batch", true}}}}}})
            .sync_each_batch);
  test::require_input_error(
      [&] {
        (void)run({{"accelerator_config", {{"gradient_accumulation_kwargs", {{"sync_each_batch", "yes"}}}}}});
      },
      "/sync_each_batch", "true or false");
  test::require_input_error(
      [&] {
        (void)run({{"accelerator_config", "accel.json"}});
      },
      "/accelerator_config", "must be an object");
}

TEST_CASE("peft_config.peft_type: LoRA and DoRA are modelled, other methods are refused by name",
          "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  nlohmann::json j = {{"peft_config", {{"peft_type", "LORA"}, {"use_dora", true}}}};
  const training_args a = training_args_from_json(j, m, "inline");
  CHECK(a.run.setup.lora.use_dora);
  j["peft_config"]["use_rslora"] = true;
  j["peft_config"]["init_lora_weights"] = "pissa_niter_4";
  const training_args b = training_args_from_json(j, m, "inline");
  CHECK(std::count_if(b.notes.begin(), b.notes.end(), [](const std::string& n) {
          return n.find("use_rslora: scaling alpha/sqrt(r) only") == 0;
        }) == 1);
  CHECK(b.run.setup.lora.init == lora_init::pissa_niter);  // priced: a load-phase transient
  j["peft_config"]["init_lora_weights"] = "corda";
  const training_args c = training_args_from_json(j, m, "inline");
  CHECK(c.run.setup.lora.init == lora_init::standard);
  CHECK(std::count_if(c.notes.begin(), c.notes.end(), [](const std::string& n) {
          return n.find("init_lora_weights \"corda\": its one-off initialisation") == 0;
        }) == 1);
  j["peft_config"]["init_lora_weights"] = "pissa_niter_x";
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline"); }, "/init_lora_weights",
                            "unknown 'pissa_niter_x'");
  j["peft_config"]["init_lora_weights"] = "olora";
  j["peft_config"]["peft_type"] = "LOHA";
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline"); }, "/peft_type",
                            "'LOHA' is not modelled yet", "PROMPT_TUNING, P_TUNING, PREFIX_TUNING");
}

TEST_CASE("peft_config: IA3, VeRA, LN tuning and prompt tuning with PEFT's defaults", "[training_args]") {
  const loaded_model qwen = preset("qwen3-1.7b");
  nlohmann::json j = {{"peft_config", {{"peft_type", "IA3"}}}};
  training_args a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.setup.lora.method == peft_method::ia3);
  CHECK(lora_targets_text(a.run.setup.lora.targets) == "q_proj,v_proj,down_proj");  // PEFT's Qwen3 mapping
  CHECK(lora_targets_text(a.run.setup.lora.feedforward) == "down_proj");
  j["peft_config"]["target_modules"] = {"k_proj", "v_proj", "down_proj", "up_proj"};
  j["peft_config"]["feedforward_modules"] = {"down_proj", "up_proj"};
  a = training_args_from_json(j, qwen, "inline");
  CHECK(lora_targets_text(a.run.setup.lora.feedforward) == "up_proj,down_proj");
  // No feedforward_modules and no down_proj target: PEFT's mapping (down_proj) matches no targeted module
  j["peft_config"].erase("feedforward_modules");
  j["peft_config"]["target_modules"] = {"k_proj", "v_proj"};
  CHECK(training_args_from_json(j, qwen, "inline").run.setup.lora.feedforward == lora_targets{});
  const loaded_model llama = preset("llama-2-7b");
  j = {{"peft_config", {{"peft_type", "IA3"}}}};
  CHECK(lora_targets_text(training_args_from_json(j, llama, "inline").run.setup.lora.targets) ==
        "k_proj,v_proj,down_proj");
  // GPT-NeoX's mappings: LoRA query_key_value; IA3 query_key_value and dense_4h_to_h, the latter feedforward
  const loaded_model pythia = load_model_config(data_dir / "configs" / "pythia-160m.json");
  a = training_args_from_json(j, pythia, "inline");
  CHECK(lora_targets_text(a.run.setup.lora.targets) == "query_key_value,dense_4h_to_h");
  CHECK(lora_targets_text(a.run.setup.lora.feedforward) == "dense_4h_to_h");
  j = {{"peft_config", {{"peft_type", "LORA"}}}};
  CHECK(lora_targets_text(training_args_from_json(j, pythia, "inline").run.setup.lora.targets) ==
        "query_key_value");
  j = {{"peft_config", {{"peft_type", "LORA"}}}};
  test::require_input_error(
      [&] {
        (void)training_args_from_json(j, load_model_config(data_dir / "configs" / "starcoder2-3b.json"),
                                      "inline");
      },
      "target_modules", "no default for 'starcoder2'");
  // DeepSeek's MLA names (q_a_proj, kv_b_proj, …) are in no PEFT mapping either (peft utils/constants.py)
  const loaded_model deepseek = load_model_config(data_dir / "configs" / "deepseek-v2-lite.json");
  test::require_input_error([&] { (void)training_args_from_json(j, deepseek, "inline"); }, "target_modules",
                            "no default for 'deepseek_v2'");
  j["peft_config"]["target_modules"] = "all-linear";
  // all-linear: q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj and every SwiGLU's three; not the router
  CHECK(adapter_count(deepseek.spec.shape, training_args_from_json(j, deepseek, "inline").run.setup.lora)
            .count() == 8ull * 27 * ((2048 + 3072) + (2048 + 576) + (512 + 4096) + (2048 + 2048)) +
                            8ull * 3 * (2048 + 10944) + 8ull * 26 * 3 * (64 * (2048 + 1408) + (2048 + 2816)));
  j = {{"peft_config", {{"peft_type", "VERA"}, {"target_modules", "all-linear"}, {"vera_dropout", 0.1}}}};
  a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.setup.lora.method == peft_method::vera);
  CHECK(a.run.setup.lora.rank == 256);  // VeraConfig's default r
  CHECK(a.run.setup.lora.dropout == Approx(0.1));
  j = {{"peft_config", {{"peft_type", "LN_TUNING"}}}};
  CHECK(training_args_from_json(j, qwen, "inline").run.setup.lora.method == peft_method::ln_tuning);
  j = {{"peft_config", {{"peft_type", "PROMPT_TUNING"}, {"num_virtual_tokens", 32}}}};
  a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.setup.lora.method == peft_method::prompt_tuning);
  CHECK(a.run.setup.lora.virtual_tokens == 32);
  j["peft_config"].erase("num_virtual_tokens");
  test::require_input_error([&] { (void)training_args_from_json(j, qwen, "inline"); }, "/num_virtual_tokens",
                            "required");
}

TEST_CASE("peft_config: P-tuning and prefix tuning, their encoders and PEFT's checks", "[training_args]") {
  const loaded_model qwen = preset("qwen3-1.7b");
  nlohmann::json j = {{"peft_config", {{"peft_type", "P_TUNING"}, {"num_virtual_tokens", 20}}}};
  training_args a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.setup.lora.method == peft_method::p_tuning);
  CHECK(a.run.setup.lora.encoder_hidden_size == 0);  // PEFT's default: token_dim
  j["peft_config"]["encoder_hidden_size"] = 256;
  CHECK(training_args_from_json(j, qwen, "inline").run.setup.lora.encoder_hidden_size == 256);
  j["peft_config"]["encoder_reparameterization_type"] = "LSTM";
  test::require_input_error([&] { (void)training_args_from_json(j, qwen, "inline"); },
                            "/encoder_reparameterization_type", "'LSTM' is not modelled");
  j["peft_config"]["encoder_reparameterization_type"] = "GRU";
  test::require_input_error([&] { (void)training_args_from_json(j, qwen, "inline"); },
                            "/encoder_reparameterization_type", "valid: MLP, LSTM");
  // SFTConfig turns checkpointing on by default; PEFT refuses it with prefix tuning, so the default yields.
  j = {{"peft_config",
        {{"peft_type", "PREFIX_TUNING"}, {"num_virtual_tokens", 30}, {"prefix_projection", true}}}};
  a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.setup.lora.method == peft_method::prefix_tuning);
  CHECK(a.run.setup.lora.prefix_projection);
  CHECK(a.run.activations.ckpt == checkpointing::none);
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
    return n.find("PREFIX_TUNING does not work") != std::string::npos;
  }));
  j["gradient_checkpointing"] = true;  // said explicitly: the estimate refuses it as PEFT does
  a = training_args_from_json(j, qwen, "inline");
  CHECK(a.run.activations.ckpt == checkpointing::full);
  test::require_input_error([&] { (void)estimate_training(qwen.spec, a.run); }, "gradient_checkpointing",
                            "PREFIX_TUNING does not work with gradient checkpointing");
  j.erase("gradient_checkpointing");
  j["peft_config"]["token_dim"] = 512;
  test::require_input_error([&] { (void)training_args_from_json(j, qwen, "inline"); }, "/token_dim",
                            "derives it from the model");
}

TEST_CASE("Packing settings choose how variable-length batches are shaped", "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  nlohmann::json j = nlohmann::json::object();
  CHECK(training_args_from_json(j, m, "inline").batching.layout == batch_layout::padded);
  j["pad_to_multiple_of"] = 64;
  CHECK(training_args_from_json(j, m, "inline").batching.pad_to_multiple == 64);
  j = {{"packing", true}};  // TRL's default strategy bfd forces padding_free over bfd rows
  training_args a = training_args_from_json(j, m, "inline");
  CHECK(a.batching.layout == batch_layout::padding_free);
  CHECK(a.batching.bfd_packed);
  CHECK_FALSE(a.batching.split_overflow);
  j["packing_strategy"] = "bfd_split";
  CHECK(training_args_from_json(j, m, "inline").batching.split_overflow);
  j["packing_strategy"] = "wrapped";
  CHECK(training_args_from_json(j, m, "inline").batching.layout == batch_layout::packed);
  j = {{"padding_free", true}};
  a = training_args_from_json(j, m, "inline");
  CHECK(a.batching.layout == batch_layout::padding_free);
  CHECK_FALSE(a.batching.bfd_packed);
  // "ffd" is bfd's first name (TRL #3696 renamed it); another name is an error listing the valid ones.
  j = {{"packing", true}, {"packing_strategy", "ffd"}};
  const training_args ffd = training_args_from_json(j, m, "inline");
  CHECK(ffd.batching.layout == batch_layout::padding_free);
  CHECK(ffd.batching.bfd_packed);
  CHECK(test::mentions(ffd.notes, "read as bfd"));
  j = {{"packing", true}, {"packing_strategy", "greedy"}};
  test::require_input_error([&] { (void)training_args_from_json(j, m, "inline"); }, "/packing_strategy",
                            "bfd_split");
}

TEST_CASE("Invalid training args are errors naming the field", "[training_args][errors]") {
  const loaded_model m = preset("qwen3-4b");
  test::require_input_error([&] { (void)args("bad-batch.json", m); }, "/per_device_train_batch_size",
                            "got -2");
  test::require_input_error([&] { (void)args("bad-optim.json", m); }, "optimizer", "unknown 'adam'");
  auto with = [&](nlohmann::json j) { return [j, &m] { (void)training_args_from_json(j, m, "inline"); }; };
  test::require_input_error(with({{"bf16", true}, {"fp16", true}}), "/bf16", "cannot both");
  test::require_input_error(with({{"loss_type", "focal"}}), "/loss_type", "unknown 'focal'");
  test::require_input_error(with({{"lr_scheduler_type", "onecycle"}}), "lr_scheduler_type", "unknown");
  test::require_input_error(with({{"model_init_kwargs", {{"dtype", "float64"}}}}), "/dtype",
                            "unknown 'float64'");
  test::require_input_error(with({{"model_init_kwargs", {{"attn_implementation", "xformers"}}}}),
                            "attn_implementation");
  test::require_input_error(with({{"quantization_config", {{"load_in_4bit", true}}}}), "needs a peft_config");
  test::require_input_error(with({{"peft_config", {{"target_modules", 7}}}}), "/target_modules");
  test::require_input_error(with({{"config_class", "DPOConfig"}}), "/config_class", "SFTConfig");
  test::require_input_error(with({{"gradient_checkpointing", "yes"}}), "/gradient_checkpointing",
                            "true or false");
}

TEST_CASE("torch_compile (and torchtune's compile) switch Inductor's fusions on where they are modelled",
          "[training_args]") {
  const loaded_model dense = preset("qwen3-1.7b");
  nlohmann::json j = {{"torch_compile", true}};
  CHECK(training_args_from_json(j, dense, "inline").run.activations.compiled);
  j = {{"compile", true}};  // torchtune's recipe key
  CHECK(training_args_from_json(j, dense, "inline").run.activations.compiled);
  // An MoE model is priced eager, with a note (the CLI's --compile is an error there instead).
  const loaded_model moe = preset("qwen3-30b-a3b");
  j = {{"torch_compile", true}};
  const training_args a = training_args_from_json(j, moe, "inline");
  CHECK_FALSE(a.run.activations.compiled);
  CHECK(std::count_if(a.notes.begin(), a.notes.end(), [](const std::string& n) {
          return n.find("torch_compile: not modelled for MoE blocks") == 0;
        }) == 1);
}

namespace {
deepspeed_config recipe_ds(const char* file, const deepspeed_inputs& in) {
  return load_deepspeed(data_dir / "recipes" / file, in);
}
}  // namespace

TEST_CASE("Training-args warnings: renamed keys and files with nothing headroom reads", "[training_args]") {
  const loaded_model m = preset("qwen3-1.7b");
  const training_args renamed = training_args_from_json({{"max_seq_length", 4096}}, m, "old.json");
  CHECK(renamed.run.activations.seq_len == 1024);  // SFTConfig's default, said in the warning
  REQUIRE(renamed.warnings.size() == 2);
  CHECK(renamed.warnings[0].find("old.json: /max_seq_length: deprecated and not read; its value goes in "
                                 "max_length (the default is priced)") != std::string::npos);
  CHECK(renamed.warnings[1].find("has no key headroom reads") != std::string::npos);
  const training_args empty = training_args_from_json(nlohmann::json::object(), m, "empty.json");
  REQUIRE(empty.warnings.size() == 1);
  CHECK(empty.warnings[0].find("empty.json is empty") != std::string::npos);
  CHECK(training_args_from_json({{"max_length", 512}}, m, "ok.json").warnings.empty());
}

TEST_CASE("DeepSpeed configs: the ZeRO stage, offloading and \"auto\" values as the Trainer resolves them",
          "[training_args][deepspeed]") {
  const deepspeed_inputs args{2,     4,    0, true,
                              false, 2048, ""};  // per-device 2, accumulation 4, bf16, hidden 2048
  SECTION("No bf16 / fp16 section: the Trainer's accelerator adds the one its arguments ask for") {
    const nlohmann::json bare = {{"zero_optimization", {{"stage", 2}}}};
    const deepspeed_config with_bf16 = deepspeed_from_json(bare, args, "bare.json");
    CHECK(with_bf16.precision == deepspeed_precision::bf16);
    CHECK(std::any_of(with_bf16.notes.begin(), with_bf16.notes.end(),
                      [](const std::string& n) { return n.find("no bf16 section") != std::string::npos; }));
    const deepspeed_inputs fp32_args{2, 4, 0, false, false, 2048, ""};
    CHECK(deepspeed_from_json(bare, fp32_args, "bare.json").precision == deepspeed_precision::fp32);
  }
  SECTION("LLaMA-Factory's ZeRO-0 and ZeRO-2 files: every size \"auto\", explicit 5e8 buckets") {
    const deepspeed_config z0 = recipe_ds("ds_z0_llamafactory.json", args);
    CHECK(z0.stage == 0);
    CHECK(z0.micro_batch == 2);
    CHECK(z0.grad_accum == 4);
    CHECK(z0.precision == deepspeed_precision::bf16);
    const deepspeed_config z2 = recipe_ds("ds_z2_llamafactory.json", args);
    CHECK(z2.stage == 2);
    CHECK(z2.reduce_bucket_elements == 500'000'000);
    CHECK(z2.overlap_comm == comm_switch::off);
    CHECK_FALSE(z2.offload_optimizer);
    CHECK(std::find(z2.ignored.begin(), z2.ignored.end(), "gradient_clipping") != z2.ignored.end());
    CHECK(std::any_of(z2.warnings.begin(), z2.warnings.end(), [](const std::string& w) {
      return w.find("allgather_bucket_size") != std::string::npos;
    }));
  }
  SECTION("ZeRO-3 with both offloads: the bucket \"auto\" is hidden_size squared") {
    const deepspeed_config z3 = recipe_ds("ds_z3_offload_llamafactory.json", args);
    CHECK(z3.stage == 3);
    CHECK(z3.offload_optimizer);
    CHECK(z3.offload_params);
    CHECK(z3.reduce_bucket_elements == 2048u * 2048u);
    std::vector<std::string> notes, warnings, ignored;
    run_request lora;
    lora.method = training_method::lora;
    const run_config r =
        resolve(merge(lora, deepspeed_request(z3, training_method::lora, notes, warnings, ignored)));
    CHECK(r.setup.lora.dtype == adapter_precision::base);  // the engine casts the adapters to 16 bits
    CHECK(r.parallel.shard == sharding::zero3);
    CHECK(r.parallel.offload_params);
    CHECK(r.setup.precision == precision_route::bf16_mixed);
    CHECK(r.activations.batch == 2);
    CHECK(r.grad_accum_steps == 4);
  }
  SECTION("Explicit values must match the training arguments; train_batch_size says how many GPUs") {
    const deepspeed_config ds =
        recipe_ds("ds_explicit.json", deepspeed_inputs{4, 8, 0, true, false, 4096, ""});
    CHECK(ds.world_size == 2);  // 64 / (4 x 8)
    CHECK(ds.offload_optimizer);
    CHECK(ds.reduce_bucket_elements == 200'000'000);
    CHECK(ds.overlap_comm == comm_switch::on);
    test::require_input_error(
        [&] {
          (void)recipe_ds("ds_explicit.json", deepspeed_inputs{8, 8, 0, true, false, 4096, ""});
        },
        "/train_micro_batch_size_per_gpu", "mismatches", "per_device_train_batch_size = 8");
    test::require_input_error(
        [&] {
          (void)recipe_ds("ds_explicit.json", deepspeed_inputs{4, 8, 4, true, false, 4096, ""});
        },
        "/train_batch_size", "implies 2 GPUs");
    test::require_input_error(
        [&] {
          (void)recipe_ds("ds_explicit.json", deepspeed_inputs{4, 8, 0, false, false, 4096, ""});
        },
        "/bf16/enabled", "mismatches");
  }
  SECTION("Broken files name the file, the line or the key") {
    test::require_input_error([&] { (void)recipe_ds("ds_broken_syntax.json", args); },
                              "ds_broken_syntax.json", "malformed JSON at line 3");
    test::require_input_error([&] { (void)recipe_ds("ds_broken_stage.json", args); },
                              "/zero_optimization/stage", "0 to 3");
    test::require_input_error([&] { (void)recipe_ds("ds_broken_offload.json", args); },
                              "/zero_optimization/offload_param", "needs stage 3");
    test::require_input_error([&] { (void)recipe_ds("ds_broken_device.json", args); },
                              "/zero_optimization/offload_optimizer/device", "valid: none, cpu, nvme");
  }
}

TEST_CASE("TRL's script form in JSON: the ModelConfig fields beside SFTConfig's, as sft.py builds them",
          "[training_args][trl]") {
  const loaded_model m = preset("qwen3-4b");
  const nlohmann::json flat = nlohmann::json::parse(R"({
      "dtype": "bfloat16", "attn_implementation": "flash_attention_2", "use_peft": true, "lora_r": 32,
      "lora_target_modules": "all-linear", "load_in_4bit": true, "use_bnb_nested_quant": true,
      "per_device_train_batch_size": 2, "max_length": 4096, "dataset_name": "trl-lib/Capybara"})");
  const training_args a = training_args_from_json(flat, m, "s.json");
  CHECK(a.run.setup.method == training_method::qlora);
  CHECK(a.run.setup.lora.rank == 32);
  CHECK(a.run.setup.lora.dropout == Approx(0.05));  // ModelConfig's lora_dropout, not PEFT's 0
  CHECK(a.run.setup.nf4.double_quant);
  CHECK(a.run.activations.attention == attention_impl::flash);
  CHECK(a.run.activations.seq_len == 4096);
  CHECK(test::mentions(a.ignored, "dataset_name"));
  // The same keys nested by hand give the same run.
  const nlohmann::json nested = nlohmann::json::parse(R"({
      "model_init_kwargs": {"dtype": "bfloat16", "attn_implementation": "flash_attention_2"},
      "peft_config": {"r": 32, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": "all-linear"},
      "quantization_config": {"load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
                              "bnb_4bit_use_double_quant": true},
      "per_device_train_batch_size": 2, "max_length": 4096})");
  CHECK(estimate_training(m.spec, a.run).total_bytes() ==
        estimate_training(m.spec, training_args_from_json(nested, m, "n.json").run).total_bytes());
  // LoRA keys without use_peft train nothing of their own: a full fine-tune, the keys listed as unused.
  const training_args full = training_args_from_json(nlohmann::json::parse(R"({"lora_r": 8})"), m, "f.json");
  CHECK(full.run.setup.method == training_method::full);
  CHECK(test::mentions(full.ignored, "lora_r (without use_peft"));
  // One form or the other; errors name the script's keys.
  test::require_input_error(
      [&] {
        (void)training_args_from_json(nlohmann::json::parse(R"({"use_peft": true, "peft_config": {"r": 8}})"),
                                      m, "c.json");
      },
      "c.json: /peft_config", "give one or the other");
  test::require_input_error(
      [&] {
        (void)training_args_from_json(nlohmann::json::parse(R"({"use_peft": true, "load_in_8bit": true})"), m,
                                      "e.json");
      },
      "e.json: /load_in_8bit", "8-bit");
}

TEST_CASE("A training-args file's deepspeed field: the file beside it, \"auto\" from its own fields",
          "[training_args][deepspeed]") {
  const loaded_model m = preset("qwen3-1.7b");
  const training_args a = load_training_args(data_dir / "recipes" / "sft_with_deepspeed.json", m);
  CHECK(a.deepspeed);
  CHECK(a.run.parallel.shard == sharding::zero3);
  CHECK(a.run.parallel.offload_optimizer);
  CHECK(a.run.activations.batch == 2);
  CHECK(a.run.grad_accum_steps == 4);
  CHECK(a.run.setup.precision == precision_route::bf16_mixed);
  // DeepSpeed's decisions are knobs of the file's request: its layers resolve to its run, offloading included
  // (the CLI puts a launcher over the same layers).
  CHECK(a.request.offload_params == std::optional<bool>(true));
  const run_config again = resolve_over(a.defaults, a.request);
  CHECK(again.parallel.offload_params);
  CHECK(estimate_training(m.spec, again).total_bytes() == estimate_training(m.spec, a.run).total_bytes());
  // An explicit train_batch_size says how many GPUs: a caller's GPU count is checked against it, as DeepSpeed
  // checks it, not written over it.
  const nlohmann::json explicit_size = nlohmann::json::parse(
      R"({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8, "bf16": true,
          "deepspeed": {"train_batch_size": 64, "zero_optimization": {"stage": 2}}})");
  run_request eight, two;
  eight.gpus = 8;
  two.gpus = 2;
  test::require_input_error([&] { (void)training_args_from_json(explicit_size, m, "x.json", eight); },
                            "train_batch_size", "implies 2 GPUs, not the 8 given");
  CHECK(training_args_from_json(explicit_size, m, "x.json", two).run.parallel.data_parallel == 2);
  CHECK(training_args_from_json(explicit_size, m, "x.json").run.parallel.data_parallel == 2);
  CHECK(std::any_of(a.warnings.begin(), a.warnings.end(), [](const std::string& w) {
    return w.find("stage3_prefetch_bucket_size") != std::string::npos;
  }));
  CHECK(std::find(a.ignored.begin(), a.ignored.end(), "deepspeed.zero_allow_untested_optimizer") !=
        a.ignored.end());
}

TEST_CASE("torchtune's plain torch.nn.CrossEntropyLoss: transformers' loss, said to be an upper bound",
          "[training_args][torchtune]") {
  const loaded_model m = preset("qwen3-4b");
  nlohmann::json j = {{"loss", {{"_component_", "torch.nn.CrossEntropyLoss"}}},
                      {"model_init_kwargs", {{"dtype", "bfloat16"}}}};
  const training_args a = training_args_from_json(j, m, "tt.json");
  CHECK(a.run.loss.impl == loss_impl::naive);
  CHECK(test::mentions(a.notes, "an upper bound"));
  j["loss"] = {{"_component_", "torch.nn.NLLLoss"}};
  test::require_input_error([&] { (void)training_args_from_json(j, m, "tt.json"); }, "/loss/_component_",
                            "torch.nn.CrossEntropyLoss");
}
