// SPDX-License-Identifier: MIT
// The per-bucket tables printed by memory_calculator (fmt). GB = 1e9 bytes; GiB = 2^30 on request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "advisor.hpp"
#include "config_io.hpp"
#include "memory.hpp"
#include "peak.hpp"

namespace headroom {

namespace detail {
/// Appends lines to a string.
struct text_lines {
  std::string out;
  void operator()(const std::string& text) {
    out += text;
    out += '\n';
  }
};

inline void model_lines(text_lines& line, const loaded_model& model, const training_setup& s,
                        const static_estimate& e) {
  line(fmt::format("model      {} ({}), {} parameters from shapes", model.name, model.model_type,
                   with_commas(e.model_params.count())));
  line(fmt::format("method     {} | precision {} | optimizer {}", choice_name(method_names, s.method),
                   choice_name(precision_names, s.precision), s.optimizer.name));
  if (s.method != training_method::full)
    line(fmt::format("adapters   rank {} on {}: {} adapter parameters", s.lora.rank,
                     lora_targets_text(s.lora.targets), with_commas(e.adapter_params.count())));
  line(fmt::format("priced on  {} = {} parameters",
                   e.basis == params_basis::nominal ? "nominal N" : "exact N",
                   with_commas(e.priced_params.count())));
}

/// One table row: a name and one or more byte columns, each in GB and optionally GiB.
inline std::string bucket_row(std::string_view name, const std::vector<bytes>& columns, bool with_gib) {
  std::string row = fmt::format("{:<16}", name);
  for (const bytes b : columns) {
    row += fmt::format(" {:>12.3f}", in_gb(b));
    if (with_gib) row += fmt::format(" {:>12.3f}", in_gib(b));
  }
  return row;
}
inline std::string header_row(const std::vector<std::string>& titles, bool with_gib) {
  std::string row = fmt::format("{:<16}", "bucket");
  for (const std::string& t : titles) {
    row += fmt::format(" {:>12}", t + " GB");
    if (with_gib) row += fmt::format(" {:>12}", t + " GiB");
  }
  return row;
}
}  // namespace detail

/// A human-readable table of a static estimate (the floor before activations).
[[nodiscard]] inline std::string format_static_table(const loaded_model& model, const training_setup& s,
                                                     const static_estimate& e, bool with_gib) {
  detail::text_lines line;
  detail::model_lines(line, model, s, e);
  line("");
  line(detail::header_row({"static"}, with_gib));
  for (const bucket_field& f : bucket_fields)
    if (f.name != "activations" && f.name != "logits" && f.name != "temporaries" && f.name != "overhead")
      line(detail::bucket_row(f.name, {e.buckets.*f.member}, with_gib));
  line(detail::bucket_row("static", {e.buckets.static_bytes()}, with_gib));
  line("");
  for (const std::string& n : estimate_notes(e, s)) line("note: " + n);
  line("note: the static floor only; estimate_training adds activations, logits and overhead");
  return line.out;
}

/// The full report: each bucket's size, what is alive at the peak, the phases and the budget.
[[nodiscard]] inline std::string format_training_table(const loaded_model& model, const run_config& r,
                                                       const training_estimate& e, bool with_gib,
                                                       std::optional<bytes> budget = std::nullopt) {
  detail::text_lines line;
  detail::model_lines(line, model, r.setup, e.statics);
  const activation_config& a = r.activations;
  line(fmt::format(
      "workload   micro-batch {} x seq-len {} (accumulation {}) | attention {} | checkpointing {} | "
      "activations {} | loss {}",
      a.batch, a.seq_len, r.grad_accum_steps, choice_name(attention_names, a.attention),
      choice_name(checkpointing_names, a.ckpt), choice_name(activation_formula_names, a.formula),
      choice_name(loss_names, r.loss.impl)));
  line("");
  line(detail::header_row({"size", "at peak"}, with_gib));
  const memory_buckets& peak = e.at_peak();
  for (const bucket_field& f : bucket_fields)
    line(detail::bucket_row(f.name, {e.sizes.*f.member, peak.*f.member}, with_gib));
  line(detail::bucket_row("static", {e.sizes.static_bytes(), peak.static_bytes()}, with_gib));
  std::string total_row = fmt::format("{:<16} {:>12}", "total (peak)", "");
  if (with_gib) total_row += fmt::format(" {:>12}", "");
  total_row += fmt::format(" {:>12.3f}", in_gb(e.total_bytes()));
  if (with_gib) total_row += fmt::format(" {:>12.3f}", in_gib(e.total_bytes()));
  line(fmt::format("{}   peak phase: {}", total_row, choice_name(phase_names, e.peak_phase)));
  std::string phases = "phases    ";
  for (const auto& p : phase_names)
    phases += fmt::format(" {} {:.3f} GB;", p.name,
                          in_gb(e.phases[static_cast<std::size_t>(p.value)].total_bytes()));
  phases.pop_back();
  line(phases);
  if (budget) {
    const bool ok = fits(e, *budget);
    const bytes gap = ok ? *budget - e.total_bytes() : e.total_bytes() - *budget;
    line(fmt::format("budget     {:.3f} GB: {}, {} {:.3f} GB", in_gb(*budget), ok ? "fits" : "does not fit",
                     ok ? "headroom" : "over by", in_gb(gap)));
  }
  line("");
  for (const std::string& n : training_notes(e, r)) line("note: " + n);
  return line.out;
}

/// The advisor's answer as text.
[[nodiscard]] inline std::string format_advice(const advice& a, bytes budget) {
  detail::text_lines line;
  line(fmt::format("triage     biggest bucket at the peak: {}; first lever: {}", a.biggest_bucket,
                   a.first_lever));
  if (a.static_alone_too_big)
    line(fmt::format(
        "           the static state alone exceeds {:.3f} GB: no activation lever can make this fit",
        in_gb(budget)));
  for (const advice_step& s : a.steps) {
    line(fmt::format("lever      {}: {} -> {:.3f} GB, {}", s.lever, s.change, in_gb(s.total),
                     s.fits ? "fits" : "does not fit"));
    if (!s.warning.empty()) line(fmt::format("           warning: {}", s.warning));
  }
  if (a.found) {
    const run_config& r = a.config;
    line(fmt::format(
        "fits with  --method {} --precision {} --optimizer {} --batch {} --grad-accum {} --seq-len {} "
        "--checkpointing {}",
        choice_name(method_names, r.setup.method), choice_name(precision_names, r.setup.precision),
        r.setup.optimizer.name, r.activations.batch, r.grad_accum_steps, r.activations.seq_len,
        choice_name(checkpointing_names, r.activations.ckpt)));
  } else {
    line(
        "no single-GPU configuration on the checklist fits: shard across GPUs (ZeRO-3 / FSDP) or use a "
        "larger GPU");
  }
  return line.out;
}

}  // namespace headroom
