// SPDX-License-Identifier: MIT
// Triage and advice for a run that does not fit: name the biggest bucket at the peak and its first
// lever, then walk the course's OOM checklist (trainingarguments-levers.txt) until a configuration
// fits, saying what changed and what that changes about training.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "peak.hpp"

namespace headroom {

/// One lever applied by the advisor.
struct advice_step {
  std::string lever;    ///< e.g. "gradient checkpointing"
  std::string change;   ///< what changed, e.g. "micro-batch 8 -> 4, accumulation 1 -> 2"
  std::string warning;  ///< what it changes about training ("" when nothing)
  bytes total{0};       ///< the peak after this step, overhead included
  bool fits = false;
};

struct advice {
  std::string biggest_bucket;         ///< the largest bucket at the peak phase
  std::string first_lever;            ///< the course's first lever for that bucket
  bool static_alone_too_big = false;  ///< weights + grads + master + optimizer exceed the budget
  std::vector<advice_step> steps;     ///< levers in checklist order, up to the first that fits
  bool found = false;                 ///< the last step fits
  run_config config{};                ///< the configuration after the steps
};

namespace detail {
struct bucket_lever {
  std::string_view bucket;
  std::string_view lever;
};
// The course's triage: find the big bucket first, then reach for its knob.
inline constexpr std::array<bucket_lever, 9> bucket_levers{{
    {"weights", "a smaller base: QLoRA (4-bit) or LoRA (frozen bf16), or shard it across GPUs"},
    {"adapter_weights", "a lower LoRA rank or fewer target modules"},
    {"grads", "LoRA (no gradients for the frozen base), or shard gradients (ZeRO-2)"},
    {"master", "LoRA, or drop the fp32 master copy (--precision bf16-pure) and accept the precision risk"},
    {"optimizer", "an 8-bit optimizer (adamw_8bit), then LoRA; the static state must fit first"},
    {"activations", "gradient checkpointing, then a smaller micro-batch with more accumulation"},
    {"logits", "chunked or fused cross-entropy (--ce-chunk, --fused-ce), or a shorter max_length"},
    {"temporaries", "a fused optimizer (adamw_torch_fused) instead of the foreach one"},
    {"overhead", "measure the context and fragmentation once and pass --overhead-gb"},
}};

inline std::string_view lever_for(std::string_view bucket) {
  for (const bucket_lever& b : bucket_levers)
    if (b.bucket == bucket) return b.lever;
  return "";
}
}  // namespace detail

/// The largest bucket in a composition (ties go to the earlier bucket).
[[nodiscard]] inline std::string_view biggest_bucket(const memory_buckets& b) {
  const bucket_field* best = &bucket_fields[0];
  for (const bucket_field& f : bucket_fields)
    if (b.*f.member > b.*best->member) best = &f;
  return best->name;
}

/// Triage, then the checklist: bf16, halve the micro-batch and double accumulation (effective batch
/// kept), gradient checkpointing, a shorter max_length, an 8-bit optimizer, LoRA, QLoRA. Levers
/// accumulate; the walk stops at the first configuration that fits `budget`.
[[nodiscard]] inline advice advise(const model_spec& spec, const run_config& start, bytes budget) {
  advice out;
  const training_estimate first = estimate_training(spec, start);
  out.biggest_bucket = std::string(biggest_bucket(first.at_peak()));
  out.first_lever = std::string(detail::lever_for(out.biggest_bucket));
  out.static_alone_too_big = first.statics.buckets.static_bytes() > budget;
  out.config = start;
  run_config& r = out.config;
  run_config accepted = start;  // the levers so far that the run can take
  // A lever the run's other settings forbid (an estimate refuses it) is skipped, not an error: the advisor
  // answers for every valid run.
  auto record = [&](std::string lever, std::string change, std::string warning) {
    training_estimate e;
    try {
      e = estimate_training(spec, r);
    } catch (const input_error&) {
      r = accepted;
      return false;
    }
    accepted = r;
    out.steps.push_back(
        {std::move(lever), std::move(change), std::move(warning), e.total_bytes(), fits(e, budget)});
    out.found = out.steps.back().fits;
    return out.found;
  };
  if (fits(first, budget)) {
    out.found = true;
    return out;
  }

  if (first.peak_phase == step_phase::load && r.load == load_path::fp32_then_cast) {  // the load is the peak
    r.load = load_path::direct;
    if (record("load in bf16", "fp32 checkpoint cast on the GPU -> from_pretrained(dtype=torch.bfloat16)",
               ""))
      return out;
  }
  if (r.setup.precision == precision_route::fp32) {
    r.setup.precision = precision_route::fp32_autocast;
    if (record("bf16 mixed precision", "fp32 -> bf16 autocast (bf16=True)", "")) return out;
  }
  // The optimizer stepping in backward cannot accumulate (each gradient is freed as it is made): there the
  // micro-batch halves alone, and with it the effective batch.
  const bool accumulates = !r.setup.optim.in_backward;
  while (r.activations.batch > 1) {
    const std::uint64_t b = r.activations.batch, ga = r.grad_accum_steps;
    r.activations.batch = b / 2;
    r.grad_accum_steps = accumulates ? ga * 2 : ga;
    const std::string warn =
        !accumulates ? "optimizer_in_backward cannot accumulate: the effective batch halves"
        : b % 2 != 0 ? "odd micro-batch: the effective batch shrinks by one sequence per rank"
                     : "";
    if (record(accumulates ? "halve the micro-batch, double accumulation" : "halve the micro-batch",
               "micro-batch " + std::to_string(b) + " -> " + std::to_string(b / 2) + ", accumulation " +
                   std::to_string(ga) + " -> " + std::to_string(r.grad_accum_steps),
               warn))
      return out;
    if (r.activations.batch == b) break;  // refused: the run cannot take it
  }
  if (r.activations.ckpt == checkpointing::none) {
    r.activations.ckpt = checkpointing::full;
    if (record("gradient checkpointing", "none -> full (about one extra forward per step, W19)", ""))
      return out;
  }
  {  // a shorter max_length, if some length at least half the current one fits as configured
    const std::uint64_t longest = max_seq_len(spec, r, budget);
    if (longest != 0 && longest * 2 >= r.activations.seq_len && longest < r.activations.seq_len) {
      const std::uint64_t was = r.activations.seq_len;
      r.activations.seq_len = longest;
      if (record("shorter max_length", "max_length " + std::to_string(was) + " -> " + std::to_string(longest),
                 "longer examples are truncated; tokens per optimizer step fall"))
        return out;
    }
  }
  const state_storage storage =
      r.setup.optimizer.storage;  // 16/32-bit full-size state: an 8-bit one is smaller
  if (r.setup.method == training_method::full && r.setup.optimizer.states != 0 &&
      !r.setup.optimizer.factored &&
      (storage == state_storage::param_dtype || storage == state_storage::fp32)) {
    const std::string was(r.setup.optimizer.name);
    r.setup.optimizer = optimizer_by_name("adamw_8bit");
    if (record("8-bit optimizer", "optim " + was + " -> adamw_8bit", "")) return out;
  }
  if (r.setup.method == training_method::full) {
    r.setup.method = training_method::lora;
    r.setup.lora = lora_config{};
    if (record("LoRA", "full fine-tuning -> LoRA r16 on all-linear",
               "raise the learning rate: the best LoRA rate is about 10x the full fine-tuning one"))
      return out;
  }
  if (r.setup.method == training_method::lora) {
    r.setup.method = training_method::qlora;
    if (r.load != load_path::none) r.load = load_path::bnb_4bit;  // a 4-bit base loads through bitsandbytes
    if (record("QLoRA", "LoRA -> QLoRA (NF4 base, double quantisation)", "4-bit base: small quality cost"))
      return out;
  }
  return out;
}

}  // namespace headroom
