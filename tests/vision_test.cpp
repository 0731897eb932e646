// SPDX-License-Identifier: MIT
// A multimodal batch: image tokens in the language model's sequence, and a vision tower trained or frozen.
#include <cstdint>

#include <headroom/io/config.hpp>
#include <headroom/io/gpu.hpp>
#include <headroom/peak.hpp>
#include <headroom/throughput.hpp>
#include <headroom/vision.hpp>

#include "catch.hpp"
#include "files.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
loaded_model gemma3_4b() { return load_model_config(data_dir / "configs" / "gemma-3-4b-it.json"); }
}  // namespace

TEST_CASE("The towers' encoders: SigLIP's and Llama-4's as LayerNorm blocks, their patches and tensors",
          "[vision]") {
  const vision_tower g = gemma3_4b().spec.vision;
  // SigLIP so400m/14 at 896: 64² patches of 3·14² values, 27 layers of width 1,152 (16 heads), MLP 4,304
  CHECK((g.patches_per_image == 4096 && g.patch_values == 588 && g.tokens_per_image == 256));
  CHECK((g.encoder.hidden_size == 1152 && g.encoder.num_hidden_layers == 27 && g.encoder.head_dim == 72));
  CHECK((g.encoder.intermediate_size == 4304 && g.encoder.norm == norm_kind::layer_norm &&
         g.encoder.mlp == mlp_layout::c_fc));
  CHECK(g.tensors == 2 + 1 + 16 * 27 + 2 + 2);  // patch conv, positions, layers, post-layernorm, projector
  // The encoder's layers (no embedding of its own: vocabulary 1, tied) are the tower's 27 layers
  CHECK(layer_parameter_count(g.encoder).count() ==
        4 * 1152 + 4 * (1152ull * 1152 + 1152) + 2ull * 1152 * 4304 + 4304 + 1152);
  const vision_tower l =
      load_model_config(data_dir / "configs" / "llama-4-scout-17b-16e-instruct.json").spec.vision;
  CHECK((l.patches_per_image == 577 && l.tokens_per_image == 144 && l.encoder.num_hidden_layers == 34));
  CHECK(l.tensors == 1 + 2 + 4 + 16 * 34 + 2 + 1);
}

TEST_CASE("Images add their tokens to the sequence, a frozen tower keeps nothing", "[vision]") {
  const loaded_model g = gemma3_4b();
  run_config r;
  r.setup = full_ft;
  r.activations.batch = 2;
  r.activations.seq_len = 512;
  r.activations.images = 2;
  const activation_config lm = with_image_tokens(g.spec, r.activations);
  CHECK((lm.seq_len == 512 + 2 * 256 && lm.images == 0));
  run_config text = r;
  text.activations = lm;
  // The frozen tower: the estimate is the language model's on the longer sequence
  CHECK(estimate_training(g.spec, r).total_bytes() == estimate_training(g.spec, text).total_bytes());
  // A text model takes no images; the inventories refuse a batch whose image tokens were not added
  test::require_input_error(
      [&] {
        (void)with_image_tokens(model_spec{llama_3_1_8b, 0}, r.activations);
      },
      "images", "no vision tower");
  test::require_input_error([&] { (void)estimate_activations(g.spec.shape, full_ft, r.activations); },
                            "images", "with_image_tokens");
}

TEST_CASE("A trained tower: its parameters' gradients, master and state, and its encoder's activations",
          "[vision]") {
  const loaded_model g = gemma3_4b();
  training_setup s = full_ft;
  s.train_vision_tower = true;
  const static_estimate frozen = estimate_static(g.spec, full_ft, params_basis::exact);
  const static_estimate trained = estimate_static(g.spec, s, params_basis::exact);
  const std::uint64_t tower = g.spec.vision.params;  // 419,816,304 (SigLIP + projector)
  CHECK(trained.trainable_params.count() == frozen.trainable_params.count() + tower);
  CHECK(trained.trainable_tensors == frozen.trainable_tensors + g.spec.vision.tensors);
  CHECK(trained.buckets.weights == frozen.buckets.weights);  // resident either way
  CHECK(trained.buckets.grads == frozen.buckets.grads + bytes(tower * 2));
  CHECK(trained.buckets.master == frozen.buckets.master + bytes(tower * 4));
  // AdamW: two fp32 moments per value, one step counter per tensor
  CHECK(trained.buckets.optimizer == frozen.buckets.optimizer + bytes(tower * 8) +
                                         optimizer_step_counter_bytes(s.optimizer, g.spec.vision.tensors) -
                                         optimizer_step_counter_bytes(s.optimizer, 0));
  // Its activations: the encoder's 27 blocks on b·images sequences of 4,096 patches, the final norm, the
  // pixels
  activation_config c;
  c.batch = 1;
  c.seq_len = 512;
  c.images = 2;
  c.ckpt = checkpointing::none;
  const activation_estimate v = vision_activations(g.spec, s, c);
  activation_config patches = c;
  patches.batch = 2;
  patches.seq_len = 4096;
  patches.images = 0;
  const bytes block = layer_inventory(g.spec.vision.encoder, s, patches).total();
  const bytes final_norm = term(model_level_inventory(g.spec.vision.encoder, s, patches), "final norm");
  CHECK(v.kept == block * 27 + final_norm + bytes(2 * 4096 * 588 * 2));
  CHECK(vision_activations(g.spec, full_ft, c).kept == bytes(0));  // frozen: nothing
  run_config r;
  r.setup = s;
  r.activations = c;
  run_config frozen_run = r;
  frozen_run.setup = full_ft;
  CHECK(estimate_training(g.spec, r).activations.kept ==
        estimate_training(g.spec, frozen_run).activations.kept + v.kept);
  // The tower trains by full fine-tuning only, on images, of a model that has one
  training_setup lora = lora16;
  lora.train_vision_tower = true;
  test::require_input_error([&] { (void)estimate_static(g.spec, lora, params_basis::exact); },
                            "train_vision_tower", "LoRA");
  r.activations.images = 0;
  test::require_input_error([&] { (void)estimate_training(g.spec, r); }, "train_vision_tower", "images");
  test::require_input_error(
      [&] {
        (void)estimate_static(model_spec{llama_3_1_8b, 0}, s, params_basis::exact);
      },
      "train_vision_tower", "no vision tower");
}

TEST_CASE("The step time adds the tower's forward on the images, three passes when it trains", "[vision]") {
  const loaded_model g = gemma3_4b();
  const gpu_info h100 = load_gpu("h100-sxm", {HEADROOM_PRESET_SOURCE_DIR});
  run_config r;
  r.setup = full_ft;
  r.activations.seq_len = 512;
  r.activations.ckpt = checkpointing::none;
  const throughput_estimate text = predict_throughput(g.spec, r, h100);
  r.activations.images = 2;
  const throughput_estimate frozen = predict_throughput(g.spec, r, h100);
  r.setup.train_vision_tower = true;
  const throughput_estimate trained = predict_throughput(g.spec, r, h100);
  // 2 images × 4,096 patches through 419,816,304 parameters, and 27 layers of 4,096² attention over 1,152
  const double tower_flops = 2 * (2.0 * 419'816'304 * 4096 + 4.0 * 4096 * 4096 * 1152 * 27);
  const double roof = h100.peak(compute_dtype::bf16).count() * 0.7;
  // the language model's longer sequence (512 + 2·256) and the tower's forward
  CHECK(frozen.parts.matmuls > text.parts.matmuls + tower_flops / roof);
  CHECK(trained.parts.matmuls == Approx(frozen.parts.matmuls + 2 * tower_flops / roof).epsilon(1e-9));
}
