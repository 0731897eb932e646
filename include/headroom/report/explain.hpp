// SPDX-License-Identifier: MIT
// --explain as data: every explained number once, with its formula (this run's shapes filled in), its
// result, its exact amount and its source. format_explanation (text.hpp) and explanation_json (json.hpp)
// render the same list. fmt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../loaded_model.hpp"
#include "../memory.hpp"
#include "../peak.hpp"

namespace headroom {

/// What an explained amount counts.
enum class explained_unit { byte, parameter };

/// One explained number: `name` = `formula` = `result` (`source`).
struct explained_value {
  std::string section;                  ///< "model", "activations", "logits" or "step"
  std::string name;                     ///< what is explained: "weights", "grads", "overhead", ...
  std::string formula;                  ///< how it is computed, with this run's shapes and sizes
  std::string result;                   ///< the value it gives, with its unit ("4.127 GB"); empty: none
  std::optional<std::uint64_t> amount;  ///< the same value exactly (`unit`), where there is one
  explained_unit unit = explained_unit::byte;
  std::string source;  ///< where the formula comes from: course id, paper, library file and function
};
using explanation = std::vector<explained_value>;

namespace detail {
/// A formula and where it comes from.
struct sourced_formula {
  std::string formula;
  std::string source;
};

/// The adapter count's formula for the method, with its source.
inline sourced_formula adapter_formula(const lora_config& c) {
  const std::string targets = lora_targets_text(c.targets);
  switch (c.method) {
    case peft_method::ia3:
      return {
          fmt::format("Σ over {} of in (feedforward {}) or out", targets, lora_targets_text(c.feedforward)),
          "peft ia3/layer.py update_layer"};
    case peft_method::vera:
      return {fmt::format("Σ (r + out) over {} at r {} + r·(widest in + widest out) for the shared vera_A, "
                          "vera_B",
                          targets, c.rank),
              "peft vera/model.py _init_vera_A_vera_B"};
    case peft_method::ln_tuning:
      return {"Σ over every norm of its width", "peft ln_tuning/layer.py: a deep copy of each norm"};
    case peft_method::prompt_tuning:
      return {fmt::format("num_virtual_tokens {} x hidden_size, fp32", c.virtual_tokens),
              "peft prompt_tuning/model.py PromptEmbedding"};
    case peft_method::p_tuning:
      return {fmt::format("P·h + (h·E + E) + (E·E + E) + (E·h + h) at P {} and E = encoder_hidden_size "
                          "(default h), fp32",
                          c.virtual_tokens),
              "peft p_tuning/model.py PromptEncoder, MLP head"};
    case peft_method::prefix_tuning:
      return {c.prefix_projection
                  ? fmt::format("P·kv + (kv·E + E) + (E·2L·kv + 2L·kv) at P {}, kv = head_dim·kv_heads, E = "
                                "encoder_hidden_size (default kv), fp32",
                                c.virtual_tokens)
                  : fmt::format("P·2L·kv at P {}, kv = head_dim·kv_heads, fp32", c.virtual_tokens),
              "peft prefix_tuning/model.py PrefixEncoder"};
    case peft_method::lora:
      break;
  }
  return {fmt::format("Σ r·(in + out){} over {} at r {}", c.use_dora ? " + out" : "", targets, c.rank),
          "peft lora/layer.py"};
}

/// A value in bytes, shown in GB.
inline explained_value gb_value(std::string section, std::string name, std::string formula, bytes amount,
                                std::string source) {
  return {std::move(section), std::move(name),      std::move(formula), gb_text(amount),
          amount.count(),     explained_unit::byte, std::move(source)};
}
/// A value in bytes, shown exactly.
inline explained_value exact_bytes_value(std::string section, std::string name, std::string formula,
                                         bytes amount, std::string source) {
  return {std::move(section), std::move(name),      std::move(formula), with_commas(amount.count()) + " B",
          amount.count(),     explained_unit::byte, std::move(source)};
}
/// A parameter count.
inline explained_value param_value(std::string name, std::string formula, params amount, std::string source) {
  return {"model",
          std::move(name),
          std::move(formula),
          with_commas(amount.count()) + " parameters",
          amount.count(),
          explained_unit::parameter,
          std::move(source)};
}

/// The parameter count and the four static buckets with their bytes per value.
inline void explain_static(explanation& out, const model_shape& m, const training_setup& s,
                           const static_estimate& st) {
  const std::uint64_t wb = weight_bytes(s.precision);
  const bool nominal = st.basis == params_basis::nominal;
  out.push_back(param_value("params",
                            fmt::format("embedding + L·(attention + MLP + norms) + final norm{}",
                                        m.tie_word_embeddings ? "" : " + lm_head"),
                            st.model_params, "the parameter inventory, model.hpp visit_parameters"));
  out.push_back(
      param_value("priced", nominal ? "the nominal N" : "the exact N", st.priced_params,
                  nominal ? "course Table 1; --exact-params prices the inventory" : "the inventory"));
  if (s.method == training_method::qlora && st.layout == qlora_layout::uniform_nominal)
    out.push_back(gb_value(
        "model", "weights",
        fmt::format("N x {} bits / 8", static_cast<double>(nf4_bits_per_param(s.nf4).millibits()) / 1000),
        st.buckets.weights, "NF4 4 + 8/64 + 32/(64·256) bits, bitsandbytes quantize_4bit; course W08"));
  else if (s.method == training_method::qlora)
    out.push_back(
        gb_value("model", "weights",
                 fmt::format("Σ over nn.Linear weights ⌈n/2⌉ + ⌈n/64⌉ + 4·⌈n/16384⌉ bytes, the rest at "
                             "{} B",
                             wb),
                 st.buckets.weights, "bitsandbytes"));
  else
    out.push_back(gb_value(
        "model", "weights",
        fmt::format("N x {} B ({})", wb, fp32_weights(s.precision) ? "fp32 weights" : "bf16 weights"),
        st.buckets.weights, "course: the four buckets"));
  if (s.method != training_method::full) {
    const sourced_formula a = adapter_formula(s.lora);
    out.push_back(param_value("adapters", "A = " + a.formula, st.adapter_params, a.source));
    out.push_back(gb_value("model", "adapter weights", fmt::format("A x {} B", adapter_bytes(s)),
                           st.buckets.adapter_weights, "peft: the adapters in their dtype"));
  }
}

/// Gradients, master copy and optimizer state per trainable value.
inline void explain_trainable_state(explanation& out, const training_setup& s, const static_estimate& st) {
  // Bytes per trainable value as the buckets hold them (fp32 adapters differ from the base dtype).
  const std::uint64_t trainable = st.trainable_params.count();
  auto per_value = [&](bytes bucket) -> std::string {
    if (trainable == 0) return "x 0 B";
    if (bucket.count() % trainable != 0) return "in their dtypes";
    return fmt::format("x {} B", bucket.count() / trainable);
  };
  const bytes buffer = s.grad_accum_buffer ? bytes(checked_mul(trainable, 2)) : bytes(0);
  out.push_back(gb_value(
      "model", "grads",
      fmt::format("{} trainable {}{}", with_commas(trainable), per_value(st.buckets.grads - buffer),
                  s.grad_accum_buffer ? " + 2 B accumulation buffer" : ""),
      st.buckets.grads, s.grad_accum_buffer ? "course: the four buckets; W03" : "course: the four buckets"));
  out.push_back(
      gb_value("model", "master",
               fmt::format("{} trainable {} ({})", with_commas(trainable), per_value(st.buckets.master),
                           st.buckets.master.count() != 0 ? "fp32 master copy, route A"
                                                          : "no master copy on this route"),
               st.buckets.master, "course: the four buckets"));
  out.push_back(
      gb_value("model", "optimizer",
               fmt::format("{}: {} state(s) per value, {} (params seen at {} B)", s.optimizer.name,
                           static_cast<int>(s.optimizer.states),
                           s.optimizer.storage == state_storage::blockwise_8bit
                               ? "uint8 + fp32 absmax per " + std::to_string(s.optim.block_size) + " values"
                           : s.optimizer.storage == state_storage::torchao_8bit
                               ? "uint8 + fp32 scale per " + std::to_string(s.optim.block_size) + " values"
                           : s.optimizer.storage == state_storage::torchao_4bit
                               ? "4-bit + fp32 scale per " + std::to_string(s.optim.block_size) + " values"
                           : s.optimizer.factored                       ? "factored rows + cols in fp32"
                           : s.optimizer.storage == state_storage::fp32 ? "fp32"
                                                                        : "in the parameter dtype",
                           optimizer_param_bytes(s.precision)),
               st.buckets.optimizer, std::string(s.optimizer.source)));
}

/// What t is: the tokens per micro-batch and what PEFT adds to them.
inline std::string token_count_text(const training_setup& s, const activation_config& a) {
  std::string extra;
  if (s.method != training_method::full && prompt_positions(s.lora) != 0)
    extra = fmt::format(" + {} virtual tokens per sequence ({})", prompt_positions(s.lora),
                        choice_name(peft_type_names, peft_type_of(s.lora)));
  else if (s.method != training_method::full && prefix_positions(s.lora) != 0)
    extra = fmt::format(" (attention reads {} + {} prefix keys)", a.seq_len, prefix_positions(s.lora));
  return fmt::format("t = b·s = {} x {} tokens{}", a.batch, a.seq_len, extra);
}

/// The activations and their mechanisms (DoRA, prefix tuning, compile, offloading).
inline void explain_activations(explanation& out, const activation_config& a, const training_setup& s,
                                const activation_estimate& e) {
  const std::string docs = "docs/activations.md";
  out.push_back(
      gb_value("activations", "activations",
               fmt::format("{}; {} formula; checkpointing {}: L x {} kept + {} model-level + {} recomputing",
                           token_count_text(s, a), choice_name(activation_formula_names, a.formula),
                           choice_name(checkpointing_names, a.ckpt), gb_text(e.per_layer_kept),
                           gb_text(e.model_level), gb_text(e.recompute)),
               e.gpu, docs));
  if (e.module_transient.count() != 0)
    out.push_back(exact_bytes_value(
        "activations", "transient",
        "DoRA's weight norm in the largest adapted module (eye(in), lora_B(lora_A(eye)), the cast "
        "base weight, s*lora_weight and the sum), freed when the module returns; at forward_end "
        "and in the recompute",
        e.module_transient, docs));
  if (e.forward_cached.count() != 0 && trains_prompt(s))
    out.push_back(exact_bytes_value(
        "activations", "forward-only",
        "alive until the loss is computed, not saved for backward (prefix tuning's key/value "
        "cache where the kernel saved copies, the encoder's cached bias casts); at forward_end",
        e.forward_cached, docs));
  if (a.compiled)
    out.push_back(
        {"activations", "compiled",
         "torch.compile: AOTAutograd's min-cut partitioner keeps matmul and attention-kernel outputs, "
         "each norm's input and rstd, and recomputes the fused elementwise chains (norms, SwiGLU, RoPE, "
         "casts, dropout products) in backward; transformers' loss (--loss naive) keeps the bf16 logits "
         "and row statistics, the other losses are priced eager",
         "", std::nullopt, explained_unit::byte, "docs/activations.md, docs/logits.md"});
  if (offloads_activations(a.ckpt))
    out.push_back(
        gb_value("activations", "offload",
                 fmt::format("{}{}: pinned host RAM", offload_mechanism(a.ckpt),
                             a.offload_wraps == offload_scope::step && offloads_through_hooks(a.ckpt)
                                 ? " (the scope is training_step: the loss's saved tensors are copied too)"
                                 : ""),
                 e.host, docs));
}

/// The optimizer step, the load phase and PEFT's initialisation.
inline void explain_step_and_load(explanation& out, const run_config& r, const training_estimate& e) {
  const training_setup& s = r.setup;
  const auto at = [&](step_phase ph) { return e.phases[static_cast<std::size_t>(ph)]; };
  const std::string_view impl =
      choice_name(optimizer_impl_names, resolved_impl(s.optimizer, s.optim.impl, s.runtime));
  if (s.optim.in_backward)
    out.push_back(gb_value(
        "step", "step",
        fmt::format("{} in backward (torchtune optimizer_in_bwd): each tensor stepped and its gradient "
                    "freed when complete; at the end of backward the last gradient {} + its step "
                    "temporaries; no optimizer phase",
                    impl, gb_text(at(step_phase::backward_end).grads)),
        at(step_phase::backward_end).temporaries, "docs/peak.md"));
  else
    out.push_back(gb_value("step", "step", fmt::format("{} step temporaries at optimizer_step", impl),
                           at(step_phase::optimizer_step).temporaries, "docs/peak.md, optimizer.hpp"));
  if (e.load.path != load_path::none)
    out.push_back(
        gb_value("step", "load",
                 fmt::format("{}: weights {} + transient {} (the tensor in flight at the worst moment, {} "
                             "values) + overhead; {}",
                             choice_name(load_path_names, e.load.path), gb_text(e.load.weights),
                             gb_text(e.load.transient), with_commas(e.load.largest.count()),
                             load_mechanism(e.load.path)),
                 at(step_phase::load).total_bytes(), "docs/peak.md"));
  if (e.load.wrap_transient.count() != 0)
    out.push_back(gb_value(
        "step", "wrap",
        fmt::format("FSDP1 wrapping the whole model ({}) on each rank, unit by unit: the worst unit's "
                    "parameters, flat parameter and slice at once (the first layer's, or the root's)",
                    gb_text(e.load.wrap_weights)),
        e.load.wrap_transient, "torch distributed/fsdp/_flat_param.py; docs/parallel.md"));
  if (e.load.init_transient.count() != 0)
    out.push_back(gb_value(
        "step", "init",
        fmt::format("init_lora_weights {}: the worst module's transient over weights + adapters (its "
                    "base weight has {} values); {}",
                    choice_name(lora_init_names, s.lora.init), with_commas(e.load.init_largest.count()),
                    init_mechanism(s.lora.init)),
        e.load.init_transient, "peft lora/layer.py pissa_init / olora_init; docs/peak.md"));
}

/// The overhead and, across GPUs, the layout and its communication buffers.
inline void explain_overhead_and_layout(explanation& out, const run_config& r, const training_estimate& e) {
  out.push_back(
      gb_value("step", "overhead",
               fmt::format("context {} + cuBLAS {} + cuBLASLt {} + fragmentation {}",
                           gb_text(e.overhead.cuda_context), gb_text(e.overhead.cublas_workspace),
                           gb_text(e.overhead.cublaslt_workspace), gb_text(e.overhead.fragmentation)),
               e.overhead.total(), e.overhead.overridden ? "measured, --overhead-gb" : "course W38: 1-2 GB"));
  if (r.parallel.gpus() <= 1) return;
  out.push_back({"step", "per GPU",
                 fmt::format("sharding {} over {} ranks, tensor {}, pipeline {}",
                             choice_name(sharding_names, r.parallel.shard), r.parallel.data_parallel,
                             r.parallel.tensor_parallel, r.parallel.pipeline_parallel),
                 "", std::nullopt, explained_unit::byte, "docs/parallel.md"});
  const comm_buffers& c = e.per_gpu_static.comm;
  out.push_back(
      {"step", "comm",
       fmt::format("gathered {} + staging {} (forward and backward); reduce {} (backward: {}); NCCL {} = {} "
                   "communicator(s) x {} channels x {} B (in the overhead, outside the allocator)",
                   gb_text(c.gathered), gb_text(c.staging), gb_text(c.reduce), reduce_mechanism(r.parallel),
                   gb_text(c.nccl), c.communicators, r.parallel.nccl_channels,
                   with_commas(nccl_channel_bytes)),
       "", std::nullopt, explained_unit::byte, "docs/parallel.md"});
}
}  // namespace detail

/// Every explained number of an estimate, in the order --explain prints them.
[[nodiscard]] inline explanation explain_estimate(const loaded_model& model, const run_config& r,
                                                  const training_estimate& e) {
  explanation out;
  detail::explain_static(out, model.spec.shape, r.setup, e.statics);
  detail::explain_trainable_state(out, r.setup, e.statics);
  const activation_config a = with_image_tokens(model.spec, r.activations);  // + a multimodal batch's images
  detail::explain_activations(out, a, r.setup, e.activations);
  out.push_back(detail::gb_value(
      "logits", "logits",
      fmt::format("loss {}: forward peak {}, kept {}, backward peak", choice_name(loss_names, r.loss.impl),
                  gb_text(e.logits.forward_peak()), gb_text(e.logits.kept)),
      e.logits.backward_peak(), "docs/logits.md"));
  detail::explain_step_and_load(out, r, e);
  detail::explain_overhead_and_layout(out, r, e);
  out.push_back(detail::gb_value("step", "peak",
                                 fmt::format("the largest phase, {}: the sum of what is alive then",
                                             choice_name(phase_names, e.peak_phase)),
                                 e.total_bytes(), "docs/peak.md"));
  return out;
}

}  // namespace headroom
