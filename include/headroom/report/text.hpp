// SPDX-License-Identifier: MIT
// The per-bucket tables printed by memory_calculator (fmt). GB = 1e9 bytes; GiB = 2^30 on request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../advisor.hpp"
#include "../loaded_model.hpp"
#include "../memory.hpp"
#include "../peak.hpp"
#include "explain.hpp"

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

/// What the PEFT method adds, in one phrase (the adapters line).
inline std::string peft_summary(const lora_config& c) {
  const std::string targets = lora_targets_text(c.targets);
  switch (c.method) {
    case peft_method::ia3:
      return fmt::format("IA3 on {} (feedforward_modules {})", targets, lora_targets_text(c.feedforward));
    case peft_method::vera:
      return fmt::format("VeRA rank {} on {} (shared frozen vera_A, vera_B)", c.rank, targets);
    case peft_method::ln_tuning:
      return "LN tuning: a trainable copy of every norm";
    case peft_method::prompt_tuning:
      return fmt::format("prompt tuning: {} virtual tokens prepended (blocks and loss see seq-len + {})",
                         c.virtual_tokens, c.virtual_tokens);
    case peft_method::p_tuning:
      return fmt::format(
          "P-tuning: {} virtual tokens from an MLP encoder, prepended (blocks and loss see "
          "seq-len + {})",
          c.virtual_tokens, c.virtual_tokens);
    case peft_method::prefix_tuning:
      return fmt::format("prefix tuning: {} trainable key/value positions before every layer's own{}",
                         c.virtual_tokens, c.prefix_projection ? " (prefix_projection: an MLP encoder)" : "");
    case peft_method::lora:
      break;
  }
  const peft_type t = peft_type_of(c);
  return fmt::format("{}rank {} on {}",
                     t == peft_type::lora ? "" : std::string(choice_name(peft_type_names, t)) + " ", c.rank,
                     targets);
}

inline void model_lines(text_lines& line, const loaded_model& model, const training_setup& s,
                        const static_estimate& e) {
  line(fmt::format("model      {} ({}), {} parameters from shapes", model.name, model.model_type,
                   with_commas(e.model_params.count())));
  for (const std::string& n : model.notes) line("note       " + n);
  for (const std::string& c : model.checks) line("checkpoint " + c);
  for (const std::string& w : model.warnings) line("checkpoint warning: " + w);
  line(fmt::format("method     {} | precision {} | optimizer {}", choice_name(method_names, s.method),
                   choice_name(precision_names, s.precision), s.optimizer.name));
  if (s.method != training_method::full)
    line(fmt::format("adapters   {}: {} adapter parameters{}{}", peft_summary(s.lora),
                     with_commas(e.adapter_params.count()),
                     s.lora.dtype == adapter_precision::fp32 ? " in fp32" : "",
                     s.lora.dropout > 0 ? fmt::format(", lora_dropout {}", s.lora.dropout) : std::string()));
  if (s.runtime.device != device_kind::cuda || s.runtime.torch != torch_generation::v2 ||
      s.optim.impl != optimizer_impl::automatic || s.optim.in_backward)
    line(fmt::format("runtime    {} kernels, torch {}, optimizer step {}{}",
                     choice_name(device_names, s.runtime.device), choice_name(torch_names, s.runtime.torch),
                     choice_name(optimizer_impl_names, resolved_impl(s.optimizer, s.optim.impl, s.runtime)),
                     s.optim.in_backward ? ", in backward (one parameter at a time)" : ""));
  line(fmt::format("priced on  {} = {} parameters",
                   e.basis == params_basis::nominal ? "nominal N" : "exact N",
                   with_commas(e.priced_params.count())));
}

/// One table row: a name and one or more byte columns, each in GB and optionally GiB.
inline std::string bucket_row(std::string_view name, const std::vector<bytes>& columns, bool with_gib) {
  std::string row = fmt::format("{:<16}", name);
  for (const bytes b : columns) {
    row += fmt::format(" {:>12}", gb_digits(b));
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
  const std::string images =
      a.images == 0 ? ""
                    : fmt::format(" + {} images x {} tokens{}", a.images, model.spec.vision.tokens_per_image,
                                  r.setup.train_vision_tower ? " (the vision tower trains)" : "");
  line(fmt::format(
      "workload   micro-batch {} x seq-len {}{} (accumulation {}) | attention {} | checkpointing {} | "
      "activations {}{} | loss {}",
      a.batch, a.seq_len, images, r.grad_accum_steps, choice_name(attention_names, a.attention),
      choice_name(checkpointing_names, a.ckpt), choice_name(activation_formula_names, a.formula),
      a.compiled ? " (torch.compile)" : "", choice_name(loss_names, r.loss.impl)));
  line("");
  line(detail::header_row({"size", "at peak"}, with_gib));
  const memory_buckets& peak = e.at_peak();
  for (const bucket_field& f : bucket_fields)
    line(detail::bucket_row(f.name, {e.sizes.*f.member, peak.*f.member}, with_gib));
  line(detail::bucket_row("static", {e.sizes.static_bytes(), peak.static_bytes()}, with_gib));
  std::string total_row = fmt::format("{:<16} {:>12}", "total (peak)", "");
  if (with_gib) total_row += fmt::format(" {:>12}", "");
  total_row += fmt::format(" {:>12}", gb_digits(e.total_bytes()));
  if (with_gib) total_row += fmt::format(" {:>12.3f}", in_gib(e.total_bytes()));
  line(fmt::format("{}   peak phase: {}", total_row, choice_name(phase_names, e.peak_phase)));
  std::string phases = "phases    ";
  for (const auto& p : phase_names)
    if (e.has_phase(p.value))
      phases +=
          fmt::format(" {} {};", p.name, gb_text(e.phases[static_cast<std::size_t>(p.value)].total_bytes()));
  phases.pop_back();
  line(phases);
  if (budget) {
    const bool ok = fits(e, *budget);
    const bytes gap = ok ? *budget - e.total_bytes() : e.total_bytes() - *budget;
    line(fmt::format("budget     {}: {}, {} {}", gb_text(*budget), ok ? "fits" : "does not fit",
                     ok ? "headroom" : "over by", gb_text(gap)));
  }
  line("");
  for (const std::string& n : training_notes(model.spec, e, r)) line("note: " + n);
  return line.out;
}

namespace detail {
/// The flags that select a run's parallel layout, as the advisor may have changed it ("" for one plain GPU).
inline std::string layout_flags(const parallel_config& p) {
  std::string flags;
  if (p.data_parallel > 1) flags += " --gpus " + std::to_string(p.data_parallel);
  if (p.tensor_parallel > 1) flags += " --tp " + std::to_string(p.tensor_parallel);
  if (p.pipeline_parallel > 1) flags += " --pp " + std::to_string(p.pipeline_parallel);
  const std::string_view shard = choice_name(sharding_names, p.shard);  // "zero3", "full_shard", ...
  if (is_deepspeed(p.shard)) flags += " --zero " + std::string(shard.substr(4));
  if (is_fsdp(p.shard)) flags += " --fsdp " + std::string(shard);
  if (p.offload_optimizer) flags += " --offload-optimizer";
  if (p.offload_params) flags += " --offload-params";
  return flags;
}
inline void advice_line(text_lines& line, std::string_view label, const advice_step& s) {
  line(fmt::format("{:<11}{}: {} -> {}, {}", label, s.lever, s.change, gb_text(s.total),
                   s.fits ? "fits" : "does not fit"));
  if (!s.warning.empty()) line(fmt::format("           warning: {}", s.warning));
}
}  // namespace detail

/// The advisor's answer as text: the triage, each lever tried alone, the combination when none fits alone,
/// and the flags of the run that fits.
[[nodiscard]] inline std::string format_advice(const advice& a, bytes budget) {
  detail::text_lines line;
  line(fmt::format("triage     biggest bucket at the peak: {}; first lever: {}", a.biggest_bucket,
                   a.first_lever));
  if (a.static_alone_too_big)
    line(fmt::format("           the static state alone exceeds {}: no activation lever can make this fit",
                     gb_text(budget)));
  for (const advice_step& s : a.alone) detail::advice_line(line, "one lever", s);
  if (a.combined) {
    line("           no lever fits alone; the cheapest combination that fits:");
    for (const advice_step& s : a.steps) detail::advice_line(line, "combined", s);
  }
  if (a.found) {
    const run_config& r = a.config;
    line(fmt::format(
        "fits with  --method {} --precision {} --optimizer {} --batch {} --grad-accum {} --seq-len {} "
        "--checkpointing {}{}{}",
        choice_name(method_names, r.setup.method), choice_name(precision_names, r.setup.precision),
        r.setup.optimizer.name, r.activations.batch, r.grad_accum_steps, r.activations.seq_len,
        choice_name(checkpointing_names, r.activations.ckpt), detail::layout_flags(r.parallel),
        r.load == load_path::none ? ""
                                  : " --load-path " + std::string(choice_name(load_path_names, r.load))));
  } else {
    line(
        fmt::format("no lever on the checklist, alone or combined, fits {}: more GPUs (--solve-gpus) or a "
                    "larger GPU",
                    gb_text(budget)));
  }
  return line.out;
}

namespace detail {
/// --explain: the model's shapes (and MLA's or Llama-4's layer pattern).
inline void explain_shapes(text_lines& line, const loaded_model& model) {
  const model_shape& m = model.spec.shape;
  line("explain    shapes: d " + std::to_string(m.hidden_size) + ", layers " +
       std::to_string(m.num_hidden_layers) + ", heads " + std::to_string(m.num_attention_heads) + " (KV " +
       std::to_string(m.num_key_value_heads) + ", head_dim " + std::to_string(m.head_dim) + "), d_ff " +
       std::to_string(is_moe(m) ? m.moe_intermediate_size : m.intermediate_size) + ", V " +
       std::to_string(m.vocab_size) + (m.tie_word_embeddings ? ", tied head" : ", untied head") + " (" +
       model.origin + ")");
  if (is_mla(m))
    line(fmt::format(
        "  MLA      q_lora_rank {}, kv_lora_rank {}, q/k head {} = {} + RoPE {}, v head {}{}", m.q_lora_rank,
        m.kv_lora_rank, m.head_dim, m.head_dim - m.qk_rope_head_dim, m.qk_rope_head_dim, m.v_head_dim,
        m.dense_layers != 0
            ? fmt::format("; the first {} layers dense (d_ff {}), then {} MoE layers of {} experts "
                          "(k {}) and shared experts of width {}",
                          m.dense_layers, m.intermediate_size, moe_layers(m), m.num_experts,
                          m.num_experts_per_tok, m.shared_expert_intermediate_size)
            : ""));
  if (llama4_moe(m))
    line(fmt::format(
        "  Llama-4  {} MoE layers (one in {}) of {} experts (k {}, width {}) beside a shared expert, "
        "{} dense (d_ff {}); {}; {} NoPE layers{}",
        moe_layers(m), m.moe_layer_step > 1 ? m.moe_layer_step : 1, m.num_experts, m.num_experts_per_tok,
        m.moe_intermediate_size, dense_mlp_layers(m), m.intermediate_size,
        m.experts == moe_layout::torchtune ? "torchtune's MoE: each expert runs on its routed tokens only"
                                           : "every expert runs on every token",
        m.nope_layer_interval == 0 ? 0 : m.num_hidden_layers / m.nope_layer_interval,
        m.qk_norm == qk_norm_kind::l2 ? ", L2 q/k norm on the others" : ""));
}

/// One explained value as a line: name, formula = result (source).
inline std::string explained_line(const explained_value& v) {
  std::string text = fmt::format("  {:<8} {}", v.name, v.formula);
  if (!v.result.empty()) text += " = " + v.result;
  if (!v.source.empty()) text += " (" + v.source + ")";
  return text;
}
/// The activation terms after the activations' values, one line each.
inline void activation_term_lines(text_lines& line, const activation_breakdown& acts) {
  for (const activation_term& t : acts.layer)
    if (t.amount.count() != 0)
      line(fmt::format("      per layer {:<28} {:>16} B  {}", t.name, with_commas(t.amount.count()),
                       t.reason));
  for (const activation_term& t : acts.model_level)
    line(fmt::format("      once      {:<28} {:>16} B  {}", t.name, with_commas(t.amount.count()), t.reason));
}
/// The loss head's allocations and releases, in order, after its value.
inline void loss_event_lines(text_lines& line, const loss_timeline& events) {
  for (const loss_event& ev : events)
    line(fmt::format("      {:<8} {} {:<30} {:>16} B  {}", ev.backward ? "backward" : "forward",
                     ev.release ? "-" : "+", ev.name, with_commas(ev.amount.count()), ev.reason));
}
}  // namespace detail

/// Every bucket followed by its formula, the shapes it used and its source (--explain): the shapes, then
/// explain_estimate's values section by section, each section followed by its itemised inventory.
[[nodiscard]] inline std::string format_explanation(const loaded_model& model, const run_config& r,
                                                    const explanation& values) {
  detail::text_lines line;
  detail::explain_shapes(line, model);
  const activation_config a = with_image_tokens(model.spec, r.activations);  // + a multimodal batch's images
  for (const std::string_view section : {"model", "activations", "logits", "step"}) {
    for (const explained_value& v : values)
      if (v.section == section) line(detail::explained_line(v));
    if (section == "activations")
      detail::activation_term_lines(line, activation_inventory(model.spec.shape, r.setup, a));
    if (section == "logits")
      detail::loss_event_lines(line, logits_inventory(model.spec.shape, r.setup, a, r.loss));
  }
  return line.out;
}
/// The same, explaining `e` (explain_estimate) on the way.
[[nodiscard]] inline std::string format_explanation(const loaded_model& model, const run_config& r,
                                                    const training_estimate& e) {
  return format_explanation(model, r, explain_estimate(model, r, e));
}

}  // namespace headroom
