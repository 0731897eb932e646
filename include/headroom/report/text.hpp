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

/// The adapter count's formula for the method, with its source (--explain).
inline std::string adapter_formula(const lora_config& c) {
  const std::string targets = lora_targets_text(c.targets);
  switch (c.method) {
    case peft_method::ia3:
      return fmt::format("Σ over {} of in (feedforward {}) or out (peft ia3/layer.py update_layer)", targets,
                         lora_targets_text(c.feedforward));
    case peft_method::vera:
      return fmt::format(
          "Σ (r + out) over {} at r {} + r·(widest in + widest out) for the shared vera_A, vera_B "
          "(peft vera/model.py _init_vera_A_vera_B)",
          targets, c.rank);
    case peft_method::ln_tuning:
      return "Σ over every norm of its width (peft ln_tuning/layer.py: a deep copy of each norm)";
    case peft_method::prompt_tuning:
      return fmt::format(
          "num_virtual_tokens {} x hidden_size, fp32 (peft prompt_tuning/model.py PromptEmbedding)",
          c.virtual_tokens);
    case peft_method::p_tuning:
      return fmt::format(
          "P·h + (h·E + E) + (E·E + E) + (E·h + h) at P {} and E = encoder_hidden_size (default h), fp32 "
          "(peft p_tuning/model.py PromptEncoder, MLP head)",
          c.virtual_tokens);
    case peft_method::prefix_tuning:
      return c.prefix_projection
                 ? fmt::format(
                       "P·kv + (kv·E + E) + (E·2L·kv + 2L·kv) at P {}, kv = head_dim·kv_heads, E = "
                       "encoder_hidden_size (default kv), fp32 (peft prefix_tuning/model.py PrefixEncoder)",
                       c.virtual_tokens)
                 : fmt::format(
                       "P·2L·kv at P {}, kv = head_dim·kv_heads, fp32 (peft prefix_tuning/model.py "
                       "PrefixEncoder)",
                       c.virtual_tokens);
    case peft_method::lora:
      break;
  }
  return fmt::format("Σ r·(in + out){} over {} at r {} (peft lora/layer.py)", c.use_dora ? " + out" : "",
                     targets, c.rank);
}

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

/// The advisor's answer as text.
[[nodiscard]] inline std::string format_advice(const advice& a, bytes budget) {
  detail::text_lines line;
  line(fmt::format("triage     biggest bucket at the peak: {}; first lever: {}", a.biggest_bucket,
                   a.first_lever));
  if (a.static_alone_too_big)
    line(fmt::format("           the static state alone exceeds {}: no activation lever can make this fit",
                     gb_text(budget)));
  for (const advice_step& s : a.steps) {
    line(fmt::format("lever      {}: {} -> {}, {}", s.lever, s.change, gb_text(s.total),
                     s.fits ? "fits" : "does not fit"));
    if (!s.warning.empty()) line(fmt::format("           warning: {}", s.warning));
  }
  if (a.found) {
    const run_config& r = a.config;
    line(fmt::format(
        "fits with  --method {} --precision {} --optimizer {} --batch {} --grad-accum {} --seq-len {} "
        "--checkpointing {}{}",
        choice_name(method_names, r.setup.method), choice_name(precision_names, r.setup.precision),
        r.setup.optimizer.name, r.activations.batch, r.grad_accum_steps, r.activations.seq_len,
        choice_name(checkpointing_names, r.activations.ckpt),
        r.load == load_path::none ? ""
                                  : " --load-path " + std::string(choice_name(load_path_names, r.load))));
  } else {
    line(
        "no single-GPU configuration on the checklist fits: shard across GPUs (ZeRO-3 / FSDP) or use a "
        "larger GPU");
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
  if (m.experts == moe_layout::llama4)
    line(fmt::format(
        "  Llama-4  {} MoE layers (one in {}) of {} experts (k {}, width {}) beside a shared expert, "
        "{} dense (d_ff {}); every expert runs on every token; {} NoPE layers{}",
        moe_layers(m), m.moe_layer_step > 1 ? m.moe_layer_step : 1, m.num_experts, m.num_experts_per_tok,
        m.moe_intermediate_size, dense_mlp_layers(m), m.intermediate_size,
        m.nope_layer_interval == 0 ? 0 : m.num_hidden_layers / m.nope_layer_interval,
        m.qk_norm == qk_norm_kind::l2 ? ", L2 q/k norm on the others" : ""));
}

/// --explain: the parameter count and the four static buckets with their bytes per value.
inline void explain_static(text_lines& line, const model_shape& m, const run_config& r,
                           const static_estimate& st) {
  const training_setup& s = r.setup;
  const std::uint64_t wb = detail::weight_bytes(s.precision);
  const std::uint64_t pb = detail::optimizer_param_bytes(s.precision);
  line(
      fmt::format("  params   {} from the inventory (embedding + L·(attention + MLP + norms) + final "
                  "norm{}); priced on {} = {}",
                  with_commas(st.model_params.count()), m.tie_word_embeddings ? "" : " + lm_head",
                  st.basis == params_basis::nominal ? "the nominal N" : "the exact N",
                  with_commas(st.priced_params.count())));
  if (s.method == training_method::qlora && st.layout == qlora_layout::uniform_nominal)
    line(fmt::format(
        "  weights  N x {} bits / 8 = {} (NF4 4 + 8/64 + 32/(64·256) bits, bitsandbytes quantize_4bit; "
        "course W08)",
        static_cast<double>(nf4_bits_per_param(s.nf4).millibits()) / 1000, gb_text(st.buckets.weights)));
  else if (s.method == training_method::qlora)
    line(
        fmt::format("  weights  Σ over nn.Linear weights ⌈n/2⌉ + ⌈n/64⌉ + 4·⌈n/16384⌉ bytes, the rest at {} "
                    "B = {} (bitsandbytes)",
                    wb, gb_text(st.buckets.weights)));
  else
    line(fmt::format("  weights  N x {} B ({}) = {} (course: the four buckets)", wb,
                     detail::fp32_weights(s.precision) ? "fp32 weights" : "bf16 weights",
                     gb_text(st.buckets.weights)));
  if (s.method != training_method::full)
    line(fmt::format("  adapters A = {} = {} values; x {} B = {}", detail::adapter_formula(s.lora),
                     with_commas(st.adapter_params.count()), detail::adapter_bytes(s),
                     gb_text(st.buckets.adapter_weights)));
  // Bytes per trainable value as the buckets hold them (fp32 adapters differ from the base dtype).
  const std::uint64_t trainable = st.trainable_params.count();
  auto per_value = [&](bytes bucket) -> std::string {
    if (trainable == 0) return "x 0 B";
    if (bucket.count() % trainable != 0) return "in their dtypes";
    return fmt::format("x {} B", bucket.count() / trainable);
  };
  const bytes buffer = s.grad_accum_buffer ? bytes(detail::checked_mul(trainable, 2)) : bytes(0);
  line(fmt::format("  grads    {} trainable {}{} = {}", with_commas(trainable),
                   per_value(st.buckets.grads - buffer),
                   s.grad_accum_buffer ? " + 2 B accumulation buffer (W03)" : "", gb_text(st.buckets.grads)));
  line(fmt::format(
      "  master   {} trainable {} ({}) = {}", with_commas(trainable), per_value(st.buckets.master),
      st.buckets.master.count() != 0 ? "fp32 master copy, route A" : "no master copy on this route",
      gb_text(st.buckets.master)));
  line(fmt::format("  optimizer {}: {} state(s) per value, {} (params seen at {} B) = {} — {}",
                   s.optimizer.name, static_cast<int>(s.optimizer.states),
                   s.optimizer.storage == state_storage::blockwise_8bit
                       ? "uint8 + fp32 absmax per " + std::to_string(s.optim.block_size) + " values"
                   : s.optimizer.factored                       ? "factored rows + cols in fp32"
                   : s.optimizer.storage == state_storage::fp32 ? "fp32"
                                                                : "in the parameter dtype",
                   pb, gb_text(st.buckets.optimizer), s.optimizer.source));
}

/// --explain: the activations, their mechanisms (DoRA, prefix tuning, compile, offloading) and every term.
inline void explain_activations(text_lines& line, const loaded_model& model, const run_config& r,
                                const training_estimate& e) {
  const model_shape& m = model.spec.shape;
  const training_setup& s = r.setup;
  const activation_config a = with_image_tokens(model.spec, r.activations);  // + a multimodal batch's images
  const activation_breakdown acts = activation_inventory(m, s, a);
  line(fmt::format(
      "  activations t = b·s = {} x {} tokens{}; {} formula; checkpointing {}: L x {} kept + {} "
      "model-level + {} "
      "recomputing = {}",
      a.batch, a.seq_len,
      s.method == training_method::full ? std::string()
      : prompt_positions(s.lora) != 0
          ? fmt::format(" + {} virtual tokens per sequence ({})", prompt_positions(s.lora),
                        choice_name(peft_type_names, peft_type_of(s.lora)))
      : prefix_positions(s.lora) != 0
          ? fmt::format(" (attention reads {} + {} prefix keys)", a.seq_len, prefix_positions(s.lora))
          : std::string(),
      choice_name(activation_formula_names, a.formula), choice_name(checkpointing_names, a.ckpt),
      gb_text(e.activations.per_layer_kept), gb_text(e.activations.model_level),
      gb_text(e.activations.recompute), gb_text(e.activations.gpu)));
  if (e.activations.module_transient.count() != 0)
    line(fmt::format(
        "      transient {} B: DoRA's weight norm in the largest adapted module (eye(in), lora_B(lora_A("
        "eye)), the cast base weight, s*lora_weight and the sum), freed when the module returns; "
        "at forward_end and in the recompute (docs/activations.md)",
        with_commas(e.activations.module_transient.count())));
  if (e.activations.forward_cached.count() != 0 && trains_prompt(s))
    line(fmt::format(
        "      forward-only {} B: alive until the loss is computed, not saved for backward (prefix tuning's "
        "key/value cache where the kernel saved copies, the encoder's cached bias casts); at forward_end",
        with_commas(e.activations.forward_cached.count())));
  if (a.compiled)
    line(
        "      compiled torch.compile: AOTAutograd's min-cut partitioner keeps matmul and attention-kernel "
        "outputs, "
        "each norm's input and rstd, and recomputes the fused elementwise chains (norms, SwiGLU, RoPE, "
        "casts, "
        "dropout products) in backward; transformers' loss (--loss naive) keeps the bf16 logits and row "
        "statistics, the other losses are priced eager (docs/activations.md, docs/logits.md)");
  if (offloads_activations(a.ckpt))
    line(fmt::format("      offload  {}; pinned host RAM {}{}", offload_mechanism(a.ckpt),
                     gb_text(e.activations.host),
                     a.offload_wraps == offload_scope::step && offloads_through_hooks(a.ckpt)
                         ? " (the scope is training_step: the loss's saved tensors are copied too)"
                         : ""));
  for (const activation_term& t : acts.layer)
    if (t.amount.count() != 0)
      line(fmt::format("      per layer {:<28} {:>16} B  {}", t.name, with_commas(t.amount.count()),
                       t.reason));
  for (const activation_term& t : acts.model_level)
    line(fmt::format("      once      {:<28} {:>16} B  {}", t.name, with_commas(t.amount.count()), t.reason));
}

/// --explain: the loss head's allocations and releases, in order.
inline void explain_logits(text_lines& line, const loaded_model& model, const run_config& r,
                           const training_estimate& e) {
  const model_shape& m = model.spec.shape;
  const training_setup& s = r.setup;
  const activation_config a = with_image_tokens(model.spec, r.activations);  // + a multimodal batch's images
  line(fmt::format(
      "  logits   loss {}: forward peak {}, kept {}, backward peak {} (docs/logits.md); in order:",
      choice_name(loss_names, r.loss.impl), gb_text(e.logits.forward_peak()), gb_text(e.logits.kept),
      gb_text(e.logits.backward_peak())));
  for (const loss_event& ev : logits_inventory(m, s, a, r.loss))
    line(fmt::format("      {:<8} {} {:<30} {:>16} B  {}", ev.backward ? "backward" : "forward",
                     ev.release ? "-" : "+", ev.name, with_commas(ev.amount.count()), ev.reason));
}

/// --explain: the optimizer step, the load phase and PEFT's initialisation.
inline void explain_step_and_load(text_lines& line, const run_config& r, const training_estimate& e) {
  const training_setup& s = r.setup;
  const auto at = [&](step_phase ph) { return e.phases[static_cast<std::size_t>(ph)]; };
  const std::string_view impl =
      choice_name(optimizer_impl_names, resolved_impl(s.optimizer, s.optim.impl, s.runtime));
  if (s.optim.in_backward)
    line(fmt::format(
        "  step     {} in backward (torchtune optimizer_in_bwd): each tensor stepped and its gradient freed "
        "when complete; at the end of backward the last gradient {} + its step temporaries {}; "
        "no optimizer phase (docs/peak.md)",
        impl, gb_text(at(step_phase::backward_end).grads),
        gb_text(at(step_phase::backward_end).temporaries)));
  else
    line(fmt::format("  step     {} step temporaries {} at optimizer_step (docs/peak.md, optimizer.hpp)",
                     impl, gb_text(at(step_phase::optimizer_step).temporaries)));
  if (e.load.path != load_path::none)
    line(
        fmt::format("  load     {}: weights {} + transient {} (the tensor in flight at the worst moment, {} "
                    "values) + overhead "
                    "= {}; {}",
                    choice_name(load_path_names, e.load.path), gb_text(e.load.weights),
                    gb_text(e.load.transient), with_commas(e.load.largest.count()),
                    gb_text(at(step_phase::load).total_bytes()), load_mechanism(e.load.path)));
  if (e.load.init_transient.count() != 0)
    line(fmt::format(
        "  init     init_lora_weights {}: weights + adapters + the worst module's transient {} (its base "
        "weight has {} values): {} (peft lora/layer.py pissa_init / olora_init; docs/peak.md)",
        choice_name(lora_init_names, s.lora.init), gb_text(e.load.init_transient),
        with_commas(e.load.init_largest.count()), init_mechanism(s.lora.init)));
}

/// --explain: the overhead and, across GPUs, the layout and its communication buffers.
inline void explain_overhead_and_layout(text_lines& line, const run_config& r, const training_estimate& e) {
  line(fmt::format("  overhead context {} + cuBLAS {} + cuBLASLt {} + fragmentation {} = {}{}",
                   gb_text(e.overhead.cuda_context), gb_text(e.overhead.cublas_workspace),
                   gb_text(e.overhead.cublaslt_workspace), gb_text(e.overhead.fragmentation),
                   gb_text(e.overhead.total()),
                   e.overhead.overridden ? " (measured, --overhead-gb)" : " (course W38: 1-2 GB)"));
  if (r.parallel.gpus() > 1) {
    line(fmt::format("  per GPU  sharding {} over {} ranks, tensor {}, pipeline {} (docs/parallel.md)",
                     choice_name(sharding_names, r.parallel.shard), r.parallel.data_parallel,
                     r.parallel.tensor_parallel, r.parallel.pipeline_parallel));
    const comm_buffers& c = e.per_gpu_static.comm;
    line(fmt::format(
        "  comm     gathered {} + staging {} (forward and backward); reduce {} (backward: {}); NCCL {} "
        "= {} communicator(s) x {} channels x {} B (in the overhead, outside the allocator)",
        gb_text(c.gathered), gb_text(c.staging), gb_text(c.reduce), reduce_mechanism(r.parallel),
        gb_text(c.nccl), c.communicators, r.parallel.nccl_channels, with_commas(nccl_channel_bytes)));
  }
}
}  // namespace detail

/// Every bucket followed by its formula, the shapes it used and its source (--explain).
[[nodiscard]] inline std::string format_explanation(const loaded_model& model, const run_config& r,
                                                    const training_estimate& e) {
  detail::text_lines line;
  detail::explain_shapes(line, model);
  detail::explain_static(line, model.spec.shape, r, e.statics);
  detail::explain_activations(line, model, r, e);
  detail::explain_logits(line, model, r, e);
  detail::explain_step_and_load(line, r, e);
  detail::explain_overhead_and_layout(line, r, e);
  line(fmt::format("  peak     the largest phase, {}: the sum of what is alive then = {}",
                   choice_name(phase_names, e.peak_phase), gb_text(e.total_bytes())));
  return line.out;
}

}  // namespace headroom
