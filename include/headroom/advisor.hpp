// SPDX-License-Identifier: MIT
// Triage and advice for a run that does not fit: name the biggest bucket at the peak and its first lever, try
// the course's OOM checklist (trainingarguments-levers.txt) one lever at a time and name the first that fits,
// and when none fits alone, the cheapest combination that does (docs/peak.md, "Advice").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
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
  bytes total{0};       ///< the peak after this step (and the answer's levers before it), overhead included
  bool fits = false;
};

/// What the advisor may assume about the machine.
struct advisor_options {
  bool bf16 = true;  ///< the GPU has bf16 tensor cores (Ampere or newer); without them fp16 and a GradScaler
};

struct advice {
  std::string biggest_bucket;         ///< the largest bucket at the peak phase
  std::string first_lever;            ///< the course's first lever for that bucket
  bool static_alone_too_big = false;  ///< weights + grads + master + optimizer exceed the budget
  std::vector<advice_step>
      alone;  ///< levers tried one at a time in checklist order, up to the first that fits
  std::vector<advice_step>
      steps;              ///< the answer's levers in checklist order, each total with those before it
  bool combined = false;  ///< no lever fits alone: `steps` is the cheapest combination that does
  bool found = false;     ///< a configuration fits (`steps` empty: the run already did)
  run_config config{};    ///< the configuration that fits (the run itself when none does)
};

/// The checklist's levers in order: trainingarguments-levers.txt's (bf16, halve the batch and double
/// accumulation, checkpointing, a shorter max_length, an 8-bit optimizer, then LoRA or QLoRA), with a bf16
/// load first and, for full fine-tuning, training-mechanics.txt's levers on the static state (bf16 weights
/// without the master copy, ZeRO sharding over the GPUs given, optimizer offload) before LoRA.
enum class lever : std::uint8_t {
  load_bf16,
  bf16_compute,
  micro_batch,
  checkpointing,
  max_length,
  bf16_weights,
  optimizer_8bit,
  shard,
  offload_optimizer,
  lora,
  qlora,
};
inline constexpr std::array<lever, 11> checklist{{lever::load_bf16, lever::bf16_compute, lever::micro_batch,
                                                  lever::checkpointing, lever::max_length,
                                                  lever::bf16_weights, lever::optimizer_8bit, lever::shard,
                                                  lever::offload_optimizer, lever::lora, lever::qlora}};

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

/// The 8-bit sibling of a full-size optimizer by its transformers `optim` name (bitsandbytes' block-wise
/// state, training-mechanics.txt "8-bit Adam and paged optimizers"); "" when it has none.
inline std::string_view eight_bit_sibling(const optimizer_info& o) {
  if (o.states == 0 || !same_bytes_per_value(o)) return "";  // no state, or already blocks / shape-dependent
  constexpr std::array<std::array<std::string_view, 2>, 8> siblings{{
      {"paged_adamw_32bit", "paged_adamw_8bit"},
      {"lion_32bit", "lion_8bit"},
      {"paged_lion_32bit", "paged_lion_8bit"},
      {"ademamix", "ademamix_8bit"},
      {"paged_ademamix_32bit", "paged_ademamix_8bit"},
      {"rmsprop", "rmsprop_bnb_8bit"},
      {"rmsprop_bnb", "rmsprop_bnb_8bit"},
      {"rmsprop_bnb_32bit", "rmsprop_bnb_8bit"},
  }};
  for (const auto& s : siblings)
    if (o.name == s[0]) return s[1];
  return o.name.substr(0, 5) == "adamw" ? "adamw_8bit" : "";  // torch's, HF's and the fused AdamW
}

/// Whether the run as given can take a lever that changes something (a lever the machine cannot run is not
/// offered; one that the run's other settings forbid is found by the estimate refusing it).
inline bool offered(lever l, const run_config& r, const advisor_options& o) {
  const bool full = r.setup.method == training_method::full;
  switch (l) {
    case lever::load_bf16:
      return r.load == load_path::fp32_then_cast;
    case lever::bf16_compute:
      return r.setup.precision == precision_route::fp32;
    case lever::micro_batch:
      return r.activations.batch > 1;
    case lever::checkpointing:
      return r.activations.ckpt == checkpointing::none;
    case lever::max_length:
      return r.activations.seq_len > 1;
    case lever::bf16_weights:
      return full && o.bf16 && r.setup.precision != precision_route::bf16_pure;
    case lever::optimizer_8bit:
      return full && !eight_bit_sibling(r.setup.optimizer).empty();
    case lever::shard:
      return full && r.parallel.data_parallel > 1 && r.parallel.shard == sharding::none;
    case lever::offload_optimizer:
      return full && !r.parallel.offload_optimizer;
    case lever::lora:
      return full;
    case lever::qlora:
      return r.setup.method != training_method::qlora;
  }
  return false;
}

/// A set of levers: bit i is the checklist's lever i.
using lever_set = std::uint16_t;
constexpr lever_set bit_of(lever l) { return static_cast<lever_set>(1u << static_cast<unsigned>(l)); }
constexpr std::size_t lever_count(lever_set set) {
  std::size_t n = 0;
  for (; set != 0; set = static_cast<lever_set>(set & (set - 1))) ++n;
  return n;
}

/// Whether the levers of a set combine: the static-state levers only make sense with the user's method (full
/// fine-tuning; for LoRA the course calls 8-bit and paged optimizers a spike safety valve), QLoRA is LoRA on
/// a 4-bit base, and bf16 weights supersede bf16 autocast.
constexpr bool combinable(lever_set set) {
  const lever_set static_state = bit_of(lever::bf16_weights) | bit_of(lever::optimizer_8bit) |
                                 bit_of(lever::shard) | bit_of(lever::offload_optimizer);
  const lever_set adapters = bit_of(lever::lora) | bit_of(lever::qlora);
  const lever_set bf16 = bit_of(lever::bf16_compute) | bit_of(lever::bf16_weights);
  return !((set & static_state) != 0 && (set & adapters) != 0) && (set & adapters) != adapters &&
         (set & bf16) != bf16;
}

/// What applying a lever did: its words, and for the two searched levers the value found.
struct lever_effect {
  lever which = lever::load_bf16;
  std::string name, change, warning;
  std::uint64_t value = 0;  ///< micro_batch: halvings; max_length: the length
};

/// The levers that change only settings (not a searched value), applied to `r`.
inline lever_effect apply_setting(lever l, run_config& r, const advisor_options& o) {
  const std::string precision(choice_name(precision_names, r.setup.precision));
  switch (l) {
    case lever::load_bf16:
      r.load = load_path::direct;
      return {l, "load in bf16", "fp32 checkpoint cast on the GPU -> from_pretrained(dtype=torch.bfloat16)",
              ""};
    case lever::bf16_compute:
      r.setup.precision = o.bf16 ? precision_route::fp32_autocast : precision_route::fp16_autocast;
      return o.bf16 ? lever_effect{l, "bf16 mixed precision", "fp32 -> bf16 autocast (bf16=True)", ""}
                    : lever_effect{l, "fp16 mixed precision", "fp32 -> fp16 autocast (fp16=True)",
                                   "fp16's range needs the GradScaler's loss scaling (no bf16 on this GPU)"};
    case lever::checkpointing:
      r.activations.ckpt = checkpointing::full;
      return {l, "gradient checkpointing", "none -> full (about one extra forward per step, W19)", ""};
    case lever::bf16_weights:
      r.setup.precision = precision_route::bf16_pure;
      return {l, "bf16 weights", "precision " + precision + " -> bf16-pure (no fp32 master copy)",
              "updates below half the bf16 spacing (about 0.002 near 1.0) round to nothing"};
    case lever::optimizer_8bit: {
      const std::string was(r.setup.optimizer.name);
      r.setup.optimizer = optimizer_by_name(eight_bit_sibling(r.setup.optimizer));
      r.setup.optim.impl = optimizer_impl::automatic;  // bitsandbytes has one step kernel
      return {l, "8-bit optimizer", "optim " + was + " -> " + std::string(r.setup.optimizer.name), ""};
    }
    case lever::shard:
      r.parallel.shard = sharding::zero3;
      return {l, "ZeRO-3",
              "sharding none -> zero3 over " + std::to_string(r.parallel.data_parallel) + " GPUs",
              "weights are gathered layer by layer: more communication per step"};
    case lever::offload_optimizer:
      if (r.parallel.shard == sharding::none) r.parallel.shard = sharding::zero3;
      r.parallel.offload_optimizer = true;
      return {l, "optimizer offload",
              "DeepSpeed ZeRO-3 offload_optimizer: the optimizer state and master copy in CPU RAM",
              "the optimizer step runs on the CPU (DeepSpeedCPUAdam): slower steps, and host RAM holds the "
              "state"};
    case lever::lora:
    case lever::qlora:
      break;
    case lever::micro_batch:
    case lever::max_length:
      return {l, "", "", ""};  // searched: apply_searched
  }
  const bool q = l == lever::qlora, from_full = r.setup.method == training_method::full;
  const std::string was = from_full ? "full fine-tuning" : "LoRA";
  r.setup.method = q ? training_method::qlora : training_method::lora;
  if (from_full) r.setup.lora = lora_config{};
  if (q && r.load != load_path::none)
    r.load = load_path::bnb_4bit;  // a 4-bit base loads through bitsandbytes
  if (q)
    return {l, "QLoRA",
            was + " -> QLoRA (NF4 base, double quantisation)" + (from_full ? ", r16 on all-linear" : ""),
            "4-bit base: small quality cost"};
  return {l, "LoRA", "full fine-tuning -> LoRA r16 on all-linear",
          "raise the learning rate: the best LoRA rate is about 10x the full fine-tuning one"};
}

inline bool fits_or_refused(const model_spec& spec, const run_config& r, bytes budget) {
  const std::optional<bytes> t = total_or_refused(spec, r);
  return t && *t <= budget;
}

/// Halve the micro-batch `k` times from the start's; accumulation doubles with it (effective batch kept)
/// unless the optimizer steps in backward, which cannot accumulate.
inline void halve_micro_batch(run_config& r, const run_config& start, std::uint64_t k) {
  r.activations.batch = start.activations.batch >> k;
  if (!start.setup.optim.in_backward)
    r.grad_accum_steps =
        checked_mul(start.grad_accum_steps, std::uint64_t{1} << k, "gradient_accumulation_steps");
}
inline lever_effect micro_batch_effect(const run_config& start, const run_config& r, std::uint64_t k) {
  const std::uint64_t b = start.activations.batch, ga = start.grad_accum_steps;
  const bool accumulates = !start.setup.optim.in_backward;
  const std::string warn =
      !accumulates ? "optimizer_in_backward cannot accumulate: the effective batch shrinks"
      : b % (std::uint64_t{1} << k) != 0 ? "odd micro-batch: the effective batch shrinks a little per rank"
                                         : "";
  return {lever::micro_batch,
          accumulates ? "halve the micro-batch, double accumulation" : "halve the micro-batch",
          "micro-batch " + std::to_string(b) + " -> " + std::to_string(r.activations.batch) +
              ", accumulation " + std::to_string(ga) + " -> " + std::to_string(r.grad_accum_steps),
          warn, k};
}

/// The two searched levers, on a run whose settings levers are applied: the micro-batch halved until the run
/// fits (or reaches 1); max_length cut to the longest that fits, if that keeps at least half (else half).
inline lever_effect apply_searched(lever l, run_config& r, const model_spec& spec, const run_config& start,
                                   bytes budget) {
  if (l == lever::micro_batch) {
    std::uint64_t k = 1;
    for (halve_micro_batch(r, start, k); r.activations.batch > 1 && !fits_or_refused(spec, r, budget);)
      halve_micro_batch(r, start, ++k);
    return micro_batch_effect(start, r, k);
  }
  const std::uint64_t was = r.activations.seq_len, half = (was + 1) / 2;
  std::uint64_t longest = 0;
  try {
    longest = max_seq_len(spec, r, budget);
  } catch (const input_error&) {
  }
  r.activations.seq_len = longest >= half && longest < was ? longest : half;
  return {l, "shorter max_length",
          "max_length " + std::to_string(was) + " -> " + std::to_string(r.activations.seq_len),
          "longer examples are truncated; tokens per optimizer step fall", r.activations.seq_len};
}

/// A set of levers applied to the run: the settings first, then the searched values given them.
struct tried_levers {
  run_config config;
  std::vector<lever_effect> effects;  ///< in checklist order
  std::optional<bytes> total;         ///< nothing: refused
};
inline bool searched(lever l) { return l == lever::micro_batch || l == lever::max_length; }
/// A lever on activations (or the loss): it cannot bring a run whose static state alone is over the budget
/// under it, only help in a combination.
inline bool activation_lever(lever l) { return searched(l) || l == lever::checkpointing; }
inline tried_levers try_levers(const model_spec& spec, const run_config& start, bytes budget,
                               const advisor_options& o, lever_set set) {
  tried_levers t{start, std::vector<lever_effect>(lever_count(set)), std::nullopt};
  try {
    // A lever's place in checklist order: the set's levers before it.
    auto slot = [&](lever l) -> lever_effect& {
      return t.effects[lever_count(static_cast<lever_set>(set & (bit_of(l) - 1)))];
    };
    for (lever l : checklist)
      if ((set & bit_of(l)) != 0 && !searched(l)) slot(l) = apply_setting(l, t.config, o);
    for (lever l : checklist)
      if ((set & bit_of(l)) != 0 && searched(l)) slot(l) = apply_searched(l, t.config, spec, start, budget);
  } catch (const input_error&) {
    return t;  // a lever the run cannot take (an accumulation beyond 64 bits): refused
  }
  t.total = total_or_refused(spec, t.config);
  return t;
}

/// The answer's steps: each lever's total with the levers before it (searched values as found).
inline std::vector<advice_step> cumulative_steps(const model_spec& spec, const run_config& start,
                                                 bytes budget, const advisor_options& o,
                                                 const tried_levers& t) {
  std::vector<advice_step> steps;
  run_config r = start;
  for (const lever_effect& e : t.effects) {
    if (e.which == lever::micro_batch)
      halve_micro_batch(r, start, e.value);
    else if (e.which == lever::max_length)
      r.activations.seq_len = e.value;
    else
      apply_setting(e.which, r, o);
    const std::optional<bytes> total = total_or_refused(spec, r);
    steps.push_back({e.name, e.change, e.warning, total.value_or(bytes(0)), total && *total <= budget});
  }
  return steps;
}

/// Sets of two or more of the offered levers that combine, cheapest first: the fewest levers, then, comparing
/// from the most drastic lever down, the gentler (earlier in the checklist) wins — the sets' numeric order.
inline std::vector<lever_set> combinations(lever_set offered_levers) {
  std::vector<lever_set> sets;
  const std::size_t n = lever_count(offered_levers);
  for (std::size_t size = 2; size <= n; ++size)
    for (unsigned mask = 1; mask < (1u << checklist.size()); ++mask) {
      const auto set = static_cast<lever_set>(mask);
      if ((set & ~offered_levers) == 0 && lever_count(set) == size && combinable(set)) sets.push_back(set);
    }
  return sets;
}
}  // namespace detail

/// The largest bucket in a composition (ties go to the earlier bucket).
[[nodiscard]] inline std::string_view biggest_bucket(const memory_buckets& b) {
  const bucket_field* best = &bucket_fields[0];
  for (const bucket_field& f : bucket_fields)
    if (b.*f.member > b.*best->member) best = &f;
  return best->name;
}

/// Triage, then the checklist one lever at a time (docs/peak.md, "Advice"): each lever the run can take is
/// applied alone, in order, until one fits; if none does, the cheapest combination that fits. A lever the
/// run's other settings forbid (an estimate refuses it) is skipped, so every valid run gets an answer.
[[nodiscard]] inline advice advise(const model_spec& spec, const run_config& start, bytes budget,
                                   const advisor_options& o = {}) {
  advice out;
  const training_estimate first = estimate_training(spec, start);
  out.biggest_bucket = std::string(biggest_bucket(first.at_peak()));
  out.first_lever = std::string(detail::lever_for(out.biggest_bucket));
  out.static_alone_too_big = first.statics.buckets.static_bytes() > budget;
  out.config = start;
  out.found = fits(first, budget);
  if (out.found) return out;
  detail::lever_set levers = 0;
  for (lever l : checklist)
    if (detail::offered(l, start, o)) levers |= detail::bit_of(l);
  auto answer = [&](const detail::tried_levers& t, bool combined) {
    out.steps = detail::cumulative_steps(spec, start, budget, o, t);
    out.config = t.config;
    out.combined = combined;
    out.found = true;
    return out;
  };
  for (lever l : checklist) {
    if ((levers & detail::bit_of(l)) == 0) continue;
    if (out.static_alone_too_big && detail::activation_lever(l)) continue;  // cannot fit alone
    const detail::tried_levers t = detail::try_levers(spec, start, budget, o, detail::bit_of(l));
    if (!t.total) continue;  // the run's other settings forbid it
    const detail::lever_effect& e = t.effects.front();
    out.alone.push_back({e.name, e.change, e.warning, *t.total, *t.total <= budget});
    if (out.alone.back().fits) return answer(t, false);
  }
  for (const detail::lever_set set : detail::combinations(levers)) {
    const detail::tried_levers t = detail::try_levers(spec, start, budget, o, set);
    if (t.total && *t.total <= budget) return answer(t, true);
  }
  return out;
}

}  // namespace headroom
