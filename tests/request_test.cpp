// SPDX-License-Identifier: MIT
// One road in (request.hpp): a request's unset knobs take headroom's defaults or a framework profile's, the
// knobs it sets are kept, merge() lets the later source win, and the cross-knob rules hold for every caller.
#include <headroom/io/gpu.hpp>
#include <headroom/peak.hpp>
#include <headroom/request.hpp>

#include "catch.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

TEST_CASE("An empty request resolves to headroom's defaults, the course's setup", "[request]") {
  const run_config r = resolve(run_request{});
  CHECK(r.setup.method == training_method::full);
  CHECK(r.setup.precision == precision_route::bf16_mixed);
  CHECK(r.setup.optimizer.name == "adamw_torch");
  CHECK(r.setup.lora.rank == 16);
  CHECK(r.setup.lora.targets == lora_targets::all_linear());
  CHECK(r.setup.nf4.double_quant);
  CHECK(r.activations.batch == 1);
  CHECK(r.activations.seq_len == 2048);
  CHECK(r.grad_accum_steps == 1);
  CHECK(r.activations.attention == attention_impl::flash);
  CHECK(r.activations.ckpt == checkpointing::full);
  CHECK(r.activations.reentrant);
  CHECK(r.loss.impl == loss_impl::naive);
  CHECK(r.basis == params_basis::nominal);
  // The same numbers as a run built by hand from the course's defaults (W01's 16 bytes per parameter).
  const training_estimate e = estimate_training(model_spec{llama_3_1_8b, 8'000'000'000}, r);
  CHECK(e.statics.buckets.static_bytes().count() == 16ull * 8'000'000'000);
}

TEST_CASE("merge: knob by knob, the later source wins and unset knobs keep the earlier value", "[request]") {
  run_request file, flags;
  file.method = training_method::lora;
  file.rank = 8;
  file.seq_len = 4096;
  flags.rank = 64;
  flags.batch = 4;
  const run_request m = merge(file, flags);
  CHECK(m.method == training_method::lora);
  CHECK(m.rank == std::uint64_t{64});
  CHECK(m.seq_len == std::uint64_t{4096});
  CHECK(m.batch == std::uint64_t{4});
  CHECK_FALSE(m.precision.has_value());
  // docs/run-request.md's example.
  const run_config r = resolve(m);
  CHECK(r.setup.lora.rank == 64);
  CHECK(r.activations.seq_len == 4096);
  CHECK(r.activations.batch == 4);
  CHECK(r.setup.precision == precision_route::bf16_mixed);
  const run_config under_trl = resolve(m, framework::trl);
  CHECK(under_trl.loss.impl == loss_impl::chunked);
  CHECK(under_trl.setup.precision == precision_route::fp32_autocast);
}

TEST_CASE("A profile decides only what the request leaves unset", "[request]") {
  run_request q;
  q.method = training_method::lora;
  const run_config trl = resolve(q, framework::trl);
  const framework_profile& p = profile_of(framework::trl);
  CHECK(trl.setup.precision == p.precision);
  CHECK(trl.loss.impl == p.loss.impl);
  CHECK(trl.activations.ckpt == p.ckpt);
  CHECK(trl.setup.lora.dtype == p.adapter_dtype);
  q.attention = attention_impl::eager;  // set: the profile leaves it
  q.ckpt = checkpointing::none;
  const run_config pinned = resolve(q, framework::trl);
  CHECK(pinned.activations.attention == attention_impl::eager);
  CHECK(pinned.activations.ckpt == checkpointing::none);
  CHECK(pinned.loss.impl == p.loss.impl);
  // Under every profile: the profile's choice for each knob the request leaves unset, the request's for the
  // rest (profile_defaults is a layer between headroom's defaults and the request).
  for (const framework_profile& each : framework_profiles) {
    INFO(choice_name(framework_names, each.id));
    const run_config direct = resolve(q, each.id);
    CHECK(direct.setup.precision == each.precision);
    CHECK(direct.setup.lora.dtype == each.adapter_dtype);
    CHECK(direct.setup.optimizer.name == each.optimizer);
    CHECK(direct.setup.optim.impl == each.optim_impl);
    CHECK(direct.loss.impl == each.loss.impl);
    CHECK(direct.activations.reentrant == each.reentrant);
    CHECK(direct.activations.attention == attention_impl::eager);
    CHECK(direct.activations.ckpt == checkpointing::none);
    const run_request layer = profile_defaults(each, q);
    CHECK(resolve_over(layer, q).setup.precision == direct.setup.precision);
    CHECK_FALSE(layer.method.has_value());  // a profile never decides what is trained
    CHECK_FALSE(layer.batch.has_value());
  }
  // A full fine-tune takes the profile's full-training precision; QLoRA keeps headroom's (bf16 trainables).
  run_request full;
  CHECK(resolve(full, framework::llama_factory).setup.precision ==
        profile_of(framework::llama_factory).full_precision);
  // Under FSDP, accelerate makes the fp32 weights under autocast FSDP's MixedPrecision: bf16-mixed; LoRA and
  // other layouts keep the profile's route.
  full.shard = sharding::fsdp_full;
  CHECK(resolve(full, framework::llama_factory).setup.precision == precision_route::bf16_mixed);
  CHECK(resolve(full, framework::trl).setup.precision == precision_route::bf16_mixed);
  full.shard = sharding::zero3;
  CHECK(resolve(full, framework::trl).setup.precision == precision_route::fp32_autocast);
  run_request lora_fsdp = q;
  lora_fsdp.shard = sharding::fsdp_full;
  CHECK(resolve(lora_fsdp, framework::trl).setup.precision == precision_route::fp32_autocast);
  run_request qlora;
  qlora.method = training_method::qlora;
  CHECK_FALSE(profile_defaults(profile_of(framework::trl), qlora).precision.has_value());
  CHECK(resolve(qlora, framework::trl).setup.precision == precision_route::bf16_mixed);
  // Any part of the loss head in the request keeps the whole head from the profile.
  run_request chunk = q;
  chunk.chunk_tokens = 512;
  CHECK_FALSE(profile_defaults(profile_of(framework::torchtune), chunk).loss.has_value());
  CHECK(resolve(chunk, framework::torchtune).loss.impl == loss_impl::naive);
}

TEST_CASE("Cross-knob rules, once for every caller", "[request]") {
  run_request q;
  q.rank = 8;  // an adapter knob with full fine-tuning
  test::require_input_error([&] { (void)resolve(q); }, "--rank", "--method full trains every weight");
  q.method = training_method::lora;
  q.peft = peft_type::prefix_tuning;
  test::require_input_error([&] { (void)resolve(q); }, "--virtual-tokens", "is required");
  q.virtual_tokens = 20;
  // PEFT refuses prefix tuning with checkpointing: unless asked for, it trains without.
  CHECK(resolve(q).activations.ckpt == checkpointing::none);
  CHECK(resolve(q, framework::trl).activations.ckpt == checkpointing::none);
  q.ckpt = checkpointing::full;
  CHECK(resolve(q).activations.ckpt == checkpointing::full);
  run_request sgd;
  sgd.sgd_momentum = true;
  test::require_input_error([&] { (void)resolve(sgd); }, "--sgd-momentum", "sgd only");
  sgd.optimizer = "sgd";
  CHECK(resolve(sgd).setup.optim.momentum);
  run_request offload;
  offload.offload_wraps = offload_scope::step;
  test::require_input_error([&] { (void)resolve(offload); }, "--offload-scope", "needs an offloading mode");
  offload.ckpt = checkpointing::checkpoint_offload;
  CHECK(resolve(offload).activations.offload_wraps == offload_scope::step);
  run_request nf4;
  nf4.double_quant = false;
  test::require_input_error([&] { (void)resolve(nf4); }, "--no-double-quant", "--method qlora");
  // A multimodal batch's images and the tower's training are request knobs like the rest.
  run_request tower;
  tower.train_vision_tower = true;
  tower.images = 2;
  const run_config trains_tower = resolve(tower);
  CHECK(trains_tower.setup.train_vision_tower);
  CHECK(trains_tower.activations.images == 2);
  CHECK(resolve(run_request{}).activations.images == 0);
  tower.method = training_method::lora;
  test::require_input_error([&] { (void)resolve(tower); }, "--train-vision-tower", "--method full");
}

TEST_CASE("The machine is knobs of the request too, and on_gpu places a resolved run on a GPU", "[request]") {
  const run_config one = resolve(run_request{});
  CHECK(one.parallel.data_parallel == 1);
  CHECK(one.parallel.shard == sharding::none);
  CHECK(one.load == load_path::none);
  CHECK_FALSE(one.overhead.override_total);
  run_request q;
  q.gpus = 8;
  q.shard = sharding::zero3;
  q.offload_optimizer = true;
  q.overhead_total = bytes(2'000'000'000);
  const run_config r = resolve(q);
  CHECK(r.parallel.data_parallel == 8);
  CHECK(r.parallel.shard == sharding::zero3);
  CHECK(r.parallel.offload_optimizer);
  CHECK(r.overhead.override_total);
  CHECK(r.overhead.total_override == bytes(2'000'000'000));
  run_request flags;
  flags.gpus = 4;  // the later source wins here as everywhere
  CHECK(resolve(merge(q, flags)).parallel.data_parallel == 4);
  // A CPU run has no CUDA context, workspaces or allocator; a GPU refuses it, and bf16 where it has none.
  run_request cpu;
  cpu.device = device_kind::cpu;
  const run_config on_cpu = resolve(cpu);
  CHECK(on_cpu.overhead.override_total);
  CHECK(on_cpu.overhead.total_override == bytes(0));
  const gpu_info h100 = load_gpu("h100-sxm", {HEADROOM_PRESET_SOURCE_DIR});
  const gpu_info v100 = load_gpu("v100", {HEADROOM_PRESET_SOURCE_DIR});
  test::require_input_error([&] { (void)on_gpu(on_cpu, h100); }, "--device", "cannot be combined");
  test::require_input_error([&] { (void)on_gpu(one, v100); }, "--gpu", "no bf16 support");
  const run_config placed = on_gpu(r, h100);
  CHECK(placed.overhead.cc_major == h100.cc_major);
  CHECK(placed.overhead.total_override == bytes(2'000'000'000));  // a measured overhead is kept
  CHECK(on_gpu(one, h100).overhead.cc_major == 9);
}

TEST_CASE("The config classes' defaults, written once, as a layer under the request", "[request]") {
  const run_request sft = config_class_defaults(true), trainer = config_class_defaults(false);
  CHECK((*sft.batch == 8 && *sft.grad_accum == 1 && *sft.seq_len == 1024));
  CHECK(*sft.ckpt == checkpointing::full);  // SFTConfig gradient_checkpointing=True
  CHECK(*trainer.ckpt == checkpointing::none);
  CHECK((*sft.loss == loss_impl::chunked && *sft.chunk_tokens == 256));  // chunked_nll
  CHECK(*trainer.loss == loss_impl::naive);
  CHECK((*sft.optimizer == "adamw_torch_fused" && *sft.attention == attention_impl::sdpa));
  run_request q;
  q.batch = 2;
  const run_config r = resolve_over(sft, q);
  CHECK(r.activations.batch == 2);                          // the request's
  CHECK(r.activations.seq_len == 1024);                     // the class's
  CHECK(r.setup.precision == precision_route::bf16_mixed);  // neither says: headroom's
  CHECK(r.setup.optimizer.name == std::string_view("adamw_torch_fused"));
}
