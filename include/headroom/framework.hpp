// SPDX-License-Identifier: MIT
// Framework profiles: the defaults each trainer applies when its user sets nothing (load dtype and autocast,
// adapter dtype, loss head, checkpointing, optimizer, compile, attention kernel), read from each framework's
// source at a named commit. docs/frameworks.md cites every value. Standard library only.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "choices.hpp"
#include "peak.hpp"

namespace headroom {

enum class framework : std::uint8_t { hf_trainer, trl, peft, torchtune, axolotl, llama_factory, unsloth };
inline constexpr std::array<named<framework>, 7> framework_names{{{"hf-trainer", framework::hf_trainer},
                                                                  {"trl", framework::trl},
                                                                  {"peft", framework::peft},
                                                                  {"torchtune", framework::torchtune},
                                                                  {"axolotl", framework::axolotl},
                                                                  {"llama-factory", framework::llama_factory},
                                                                  {"unsloth", framework::unsloth}}};

/// One framework's defaults for the choices that move memory. Text fields say what has no memory effect
/// here (the source read, batching, how the loss is normalised over accumulation).
struct framework_profile {
  framework id = framework::hf_trainer;
  std::string_view source;  ///< the code read, with its commit
  precision_route precision = precision_route::bf16_pure;
  precision_route full_precision = precision_route::bf16_pure;  ///< full fine-tuning, where it differs
  adapter_precision adapter_dtype = adapter_precision::fp32;
  loss_config loss{};
  checkpointing ckpt = checkpointing::none;
  bool reentrant = true;       ///< torch.utils.checkpoint(use_reentrant=...)
  std::string_view optimizer;  ///< transformers' optim name for the optimizer the framework builds
  optimizer_impl optim_impl = optimizer_impl::automatic;
  attention_impl attention = attention_impl::sdpa;
  std::string_view batching;      ///< padding or packing (throughput; memory prices the full length)
  std::string_view accumulation;  ///< how the loss is normalised over gradient accumulation
};

/// The seven profiles. Sources: docs/frameworks.md "Framework profiles" (one line each per value).
inline constexpr std::array<framework_profile, 7> framework_profiles{{
    // transformers Trainer: from_pretrained keeps the checkpoint's dtype (v5), bf16=False, no checkpointing.
    {framework::hf_trainer,
     "transformers v5 TrainingArguments / Trainer",
     precision_route::bf16_pure,
     precision_route::bf16_pure,
     adapter_precision::fp32,
     {loss_impl::naive, 256, 8},
     checkpointing::none,
     true,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "pad to the longest row",
     "num_items_in_batch over the step"},
    // TRL SFTTrainer (f2cd5771): float32 load, bf16 autocast, checkpointing on, chunked_nll loss.
    {framework::trl,
     "TRL f2cd5771 trl/trainer/sft_config.py, sft_trainer.py",
     precision_route::fp32_autocast,
     precision_route::fp32_autocast,
     adapter_precision::fp32,
     {loss_impl::chunked, 256, 8},
     checkpointing::full,
     true,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "pad to the longest row (packing=False)",
     "num_items_in_batch over the step"},
    // PEFT on the Trainer (5d602fdb): get_peft_model(autocast_adapter_dtype=True) upcasts the adapters.
    {framework::peft,
     "PEFT 5d602fdb mapping_func.py get_peft_model, tuners/tuners_utils.py BaseTuner._cast_adapter_dtype",
     precision_route::bf16_pure,
     precision_route::bf16_pure,
     adapter_precision::fp32,
     {loss_impl::naive, 256, 8},
     checkpointing::none,
     true,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "pad to the longest row",
     "num_items_in_batch over the step"},
    // torchtune (bd2a0fc7): the model built under set_default_dtype(bf16), fused AdamW,
    // LinearCrossEntropyLoss.
    {framework::torchtune,
     "torchtune bd2a0fc7 recipes/lora_finetune_single_device.py, recipes/configs",
     precision_route::bf16_pure,
     precision_route::bf16_pure,
     adapter_precision::base,
     {loss_impl::linear_ce, 256, 8},
     checkpointing::full,
     false,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "padded_collate_sft (dataset.packed: False)",
     "tokens over the step (running_loss / num_tokens)"},
    // axolotl (067b021c): bf16 "auto" loads bf16, optimizer adamw_torch_fused, checkpointing off,
    // use_reentrant False when it is on.
    {framework::axolotl,
     "axolotl 067b021c utils/schemas/config.py, training.py, core/builders/base.py",
     precision_route::bf16_pure,
     precision_route::bf16_pure,
     adapter_precision::fp32,
     {loss_impl::naive, 256, 8},
     checkpointing::none,
     false,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "pad (sample_packing: None)",
     "num_items_in_batch over the step"},
    // LLaMA-Factory (ff6d4d12): checkpointing on and reentrant, trainable params upcast to fp32 (a full
    // fine-tune: fp32 weights under bf16 autocast).
    {framework::llama_factory,
     "LLaMA-Factory ff6d4d12 hparams/model_args.py, model/adapter.py",
     precision_route::bf16_pure,
     precision_route::fp32_autocast,
     adapter_precision::fp32,
     {loss_impl::naive, 256, 8},
     checkpointing::full,
     true,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::sdpa,
     "pad (packing: None for sft)",
     "num_items_in_batch over the step"},
    // Unsloth (015bdef0): 16-bit load, its offloaded "unsloth" checkpointing, chunked fused cross-entropy.
    {framework::unsloth,
     "unsloth 015bdef0 unsloth/models/llama.py get_peft_model, loader.py",
     precision_route::bf16_pure,
     precision_route::bf16_pure,
     adapter_precision::fp32,
     {loss_impl::chunked, 256, 8},
     checkpointing::offload_checkpointed,
     true,
     "adamw_torch_fused",
     optimizer_impl::fused,
     attention_impl::flash,
     "pad to the longest row",
     "num_items_in_batch over the step"},
}};

/// The profile of `f`.
[[nodiscard]] constexpr const framework_profile& profile_of(framework f) {
  for (const auto& p : framework_profiles)
    if (p.id == f) return p;
  return framework_profiles[0];
}

}  // namespace headroom
