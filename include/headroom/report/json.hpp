// SPDX-License-Identifier: MIT
// The stable JSON document of an estimate (schema in docs/json-schema.md). nlohmann_json.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "../advisor.hpp"
#include "../loaded_model.hpp"
#include "../memory.hpp"
#include "../peak.hpp"
#include "explain.hpp"

namespace headroom {

inline constexpr int json_schema_version = 3;

namespace detail {
inline nlohmann::json buckets_json(const memory_buckets& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const bucket_field& f : bucket_fields) j[std::string(f.name)] = (b.*f.member).count();
  return j;
}
inline nlohmann::json terms_json(const activation_terms& terms) {
  nlohmann::json j = nlohmann::json::array();
  for (const activation_term& t : terms)
    j.push_back({{"name", t.name}, {"bytes", t.amount.count()}, {"reason", t.reason}});
  return j;
}
}  // namespace detail

/// The static part: counts in parameters, buckets in bytes (exact integers).
[[nodiscard]] inline nlohmann::json static_estimate_json(const loaded_model& model, const training_setup& s,
                                                         const static_estimate& e) {
  nlohmann::json j;
  j["schema_version"] = json_schema_version;
  j["model"] = {{"name", model.name}, {"model_type", model.model_type}, {"origin", model.origin}};
  if (!model.notes.empty()) j["model"]["notes"] = model.notes;
  if (!model.checks.empty() || !model.warnings.empty())
    j["model"]["checkpoint"] = {{"checks", model.checks}, {"warnings", model.warnings}};
  j["method"] = choice_name(method_names, s.method);
  j["precision"] = choice_name(precision_names, s.precision);
  j["optimizer"] = s.optimizer.name;
  j["optimizer_block_size"] = s.optim.block_size;
  j["optimizer_impl"] =
      choice_name(optimizer_impl_names, resolved_impl(s.optimizer, s.optim.impl, s.runtime));
  j["optimizer_in_backward"] = s.optim.in_backward;
  j["device"] = choice_name(device_names, s.runtime.device);
  j["torch"] = choice_name(torch_names, s.runtime.torch);
  j["adapter_dtype"] = choice_name(adapter_precision_names, s.lora.dtype);
  j["lora_dropout"] = s.lora.dropout;
  j["grad_accum_buffer"] = s.grad_accum_buffer;
  j["params_basis"] = e.basis == params_basis::nominal ? "nominal" : "exact";
  j["params"] = e.priced_params.count();
  j["model_params_exact"] = e.model_params.count();
  j["adapter_params"] = e.adapter_params.count();
  j["trainable_params"] = e.trainable_params.count();
  j["lora"] =
      s.method == training_method::full
          ? nlohmann::json(nullptr)
          : nlohmann::json{{"rank", s.lora.rank}, {"target_modules", lora_targets_text(s.lora.targets)}};
  if (s.method != training_method::full) {
    const peft_type type = peft_type_of(s.lora);
    if (type != peft_type::lora) j["lora"]["peft_type"] = choice_name(peft_type_names, type);
    if (type == peft_type::ia3) j["lora"]["feedforward_modules"] = lora_targets_text(s.lora.feedforward);
    if (prompt_learning(s.lora) || type == peft_type::ln_tuning) {  // they read neither rank nor targets
      j["lora"].erase("rank");
      j["lora"].erase("target_modules");
    }
    if (prompt_learning(s.lora)) j["lora"]["num_virtual_tokens"] = s.lora.virtual_tokens;
    if (s.lora.encoder_hidden_size != 0) j["lora"]["encoder_hidden_size"] = s.lora.encoder_hidden_size;
    if (type == peft_type::prefix_tuning) j["lora"]["prefix_projection"] = s.lora.prefix_projection;
  }
  j["qlora_layout"] = e.layout == qlora_layout::not_applicable ? nlohmann::json(nullptr)
                                                               : nlohmann::json(layout_name(e.layout));
  j["buckets"] = detail::buckets_json(e.buckets);
  j["static_bytes"] = e.buckets.static_bytes().count();
  j["total_bytes"] = e.buckets.total_bytes().count();
  j["notes"] = estimate_notes(e, s);
  return j;
}

namespace detail {
/// The micro-batch, attention, checkpointing and loss the estimate priced (`a`: image tokens included).
inline void workload_json(nlohmann::json& j, const loaded_model& model, const run_config& r,
                          const activation_config& a, const training_estimate& e) {
  j["workload"] = {{"batch", a.batch},
                   {"seq_len", a.seq_len},  // image tokens included
                   {"images", r.activations.images},
                   {"grad_accum_steps", r.grad_accum_steps},
                   {"attention", choice_name(attention_names, a.attention)},
                   {"checkpointing", choice_name(checkpointing_names, a.ckpt)},
                   {"activation_formula", choice_name(activation_formula_names, a.formula)},
                   {"loss", choice_name(loss_names, r.loss.impl)},
                   {"ce_chunk", r.loss.chunk_tokens},
                   {"output_chunks", r.loss.output_chunks},
                   {"checkpoint_reentrant", a.reentrant},
                   {"attention_dropout", a.attention_dropout || model.spec.shape.attention_dropout}};
  if (offloads_activations(a.ckpt)) {  // only when offloading, so other runs print what they printed
    j["workload"]["offload_scope"] = choice_name(offload_scope_names, a.offload_wraps);
    j["activation_host_bytes"] = e.activations.host.count();
  }
  if (a.compiled) j["workload"]["compile"] = true;  // only when compiled
}

/// Every phase's buckets and total, and the load phase's mechanism when it is modelled.
inline void phases_json(nlohmann::json& j, const run_config& r, const training_estimate& e) {
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& p : phase_names) {
    if (!e.has_phase(p.value)) continue;
    const memory_buckets& b = e.phases[static_cast<std::size_t>(p.value)];
    phases[std::string(p.name)] = {{"buckets", detail::buckets_json(b)},
                                   {"total_bytes", b.total_bytes().count()}};
  }
  j["phases"] = phases;
  if (e.load.modelled()) {
    j["load"] = {{"path", choice_name(load_path_names, e.load.path)},
                 {"weights_bytes", e.load.weights.count()},
                 {"transient_bytes", e.load.transient.count()},
                 {"largest_tensor_params", e.load.largest.count()},
                 {"total_bytes", e.phases[static_cast<std::size_t>(step_phase::load)].total_bytes().count()}};
    if (e.load.wrap_transient.count() != 0) {  // FSDP1: every rank loads the whole model, then wraps it
      j["load"]["wrap_weights_bytes"] = e.load.wrap_weights.count();
      j["load"]["wrap_transient_bytes"] = e.load.wrap_transient.count();
    }
    if (e.load.init_transient.count() != 0) {
      j["load"]["init_lora_weights"] = choice_name(lora_init_names, r.setup.lora.init);
      j["load"]["init_transient_bytes"] = e.load.init_transient.count();
      j["load"]["init_weight_params"] = e.load.init_largest.count();
    }
  }
}

/// The layout across GPUs and, when there is one, its communication buffers.
inline void parallel_json(nlohmann::json& j, const run_config& r, const training_estimate& e) {
  const parallel_config& par = r.parallel;
  j["parallel"] = {{"gpus", par.gpus()},
                   {"data_parallel", par.data_parallel},
                   {"sharding", choice_name(sharding_names, par.shard)},
                   {"offload_optimizer", par.offload_optimizer},
                   {"offload_params", par.offload_params},
                   {"tensor_parallel", par.tensor_parallel},
                   {"sequence_parallel", par.sequence_parallel},
                   {"pipeline_parallel", par.pipeline_parallel}};
  const comm_buffers& comm = e.per_gpu_static.comm;
  if (comm.communicators != 0 || par.shard != sharding::none)  // single-GPU runs print what they printed
    j["parallel"]["communication"] = {
        {"gathered_bytes", comm.gathered.count()}, {"staging_bytes", comm.staging.count()},
        {"reduce_bytes", comm.reduce.count()},     {"nccl_bytes", comm.nccl.count()},
        {"communicators", comm.communicators},     {"fsdp_version", par.fsdp_version},
        {"prefetch_units", par.prefetch_units},    {"sync_each_batch", par.sync_each_batch},
        {"use_orig_params", par.use_orig_params}};
}

/// The activation and loss-head inventories, term by term and event by event.
inline void inventories_json(nlohmann::json& j, const loaded_model& model, const run_config& r,
                             const activation_config& a, const training_estimate& e) {
  const activation_breakdown acts = activation_inventory(model.spec.shape, r.setup, a);
  nlohmann::json events = nlohmann::json::array();
  for (const loss_event& ev : logits_inventory(model.spec.shape, r.setup, a, r.loss))
    events.push_back({{"name", ev.name},
                      {"bytes", ev.amount.count()},
                      {"event", ev.release ? "release" : "alloc"},
                      {"pass", ev.backward ? "backward" : "forward"},
                      {"reason", ev.reason}});
  if (e.activations.module_transient.count() != 0)
    j["module_transient_bytes"] = e.activations.module_transient.count();  // DoRA's weight-norm temporaries
  j["activations_detail"] = {{"layer_terms", detail::terms_json(acts.layer)},
                             {"model_terms", detail::terms_json(acts.model_level)},
                             {"per_layer_kept_bytes", e.activations.per_layer_kept.count()},
                             {"kept_bytes", e.activations.kept.count()},
                             {"recompute_bytes", e.activations.recompute.count()},
                             {"with_recompute_bytes", e.activations.gpu.count()},
                             {"first_layer_saving_bytes", e.activations.first_layer_saving.count()},
                             {"checkpoint_state_bytes", e.activations.checkpoint_state.count()}};
  if (trains_prompt(r.setup))  // alive until the loss
    j["activations_detail"]["forward_cached_bytes"] = e.activations.forward_cached.count();
  j["logits_detail"] = {{"events", events},
                        {"forward_peak_bytes", e.logits.forward.count()},
                        {"kept_bytes", e.logits.kept.count()},
                        {"backward_peak_bytes", e.logits.backward.count()},
                        {"after_backward_bytes", e.logits.after.count()}};
}

/// The overhead's parts.
inline void overhead_json(nlohmann::json& j, const training_estimate& e) {
  j["overhead_detail"] = {{"cuda_context", e.overhead.cuda_context.count()},
                          {"cublas_workspace", e.overhead.cublas_workspace.count()},
                          {"cublaslt_workspace", e.overhead.cublaslt_workspace.count()},
                          {"fragmentation", e.overhead.fragmentation.count()},
                          {"measured_override", e.overhead.overridden}};
  if (e.overhead.nccl.count() != 0) j["overhead_detail"]["nccl"] = e.overhead.nccl.count();
}

/// Whether the estimate fits the budget, and by how much.
inline void budget_json(nlohmann::json& j, const training_estimate& e, bytes budget) {
  const bool ok = fits(e, budget);
  j["budget_bytes"] = budget.count();
  j["fits"] = ok;
  const auto gap =
      static_cast<std::int64_t>(ok ? (budget - e.total_bytes()).count() : (e.total_bytes() - budget).count());
  j["headroom_bytes"] = ok ? gap : -gap;
}

/// The peak under each optimizer implementation torch could run, and the estimate's notes.
inline void impl_peaks_and_notes_json(nlohmann::json& j, const loaded_model& model, const run_config& r,
                                      const training_estimate& e) {
  const std::vector<impl_peak> peaks = optimizer_impl_peaks(model.spec, r, e);  // the first is the one priced
  nlohmann::json impl_peaks = nlohmann::json::array();
  for (const impl_peak& p : peaks)
    impl_peaks.push_back(
        {{"impl", choice_name(optimizer_impl_names, p.impl)}, {"total_bytes", p.total.count()}});
  j["optimizer_impl_peaks"] = impl_peaks;
  std::vector<std::string> notes = training_notes(e, r);
  if (auto n = chunked_loss_note(model.spec, r, e)) notes.push_back(std::move(*n));
  if (auto n = optimizer_impl_note(peaks, r))
    notes.push_back(std::move(*n));  // the same peaks, not re-estimated
  j["notes"] = notes;
}
}  // namespace detail

/// The full estimate: the static keys, the workload, each bucket's size, every phase, the peak,
/// and (with a budget) whether it fits and by how much.
[[nodiscard]] inline nlohmann::json training_estimate_json(const loaded_model& model, const run_config& r,
                                                           const training_estimate& e,
                                                           std::optional<bytes> budget = std::nullopt) {
  nlohmann::json j = static_estimate_json(model, r.setup, e.statics);
  const activation_config a = with_image_tokens(model.spec, r.activations);  // + a multimodal batch's images
  detail::workload_json(j, model, r, a, e);
  j["buckets"] = detail::buckets_json(e.sizes);
  detail::phases_json(j, r, e);
  j["peak_phase"] = choice_name(phase_names, e.peak_phase);
  j["total_bytes"] = e.total_bytes().count();
  j["peak_allocated_bytes"] = e.peak_allocated_bytes().count();
  j["host_bytes"] = (e.activations.host + e.per_gpu_static.host).count();
  detail::parallel_json(j, r, e);
  detail::inventories_json(j, model, r, a, e);
  detail::overhead_json(j, e);
  if (budget) detail::budget_json(j, e, *budget);
  detail::impl_peaks_and_notes_json(j, model, r, e);
  return j;
}

/// --explain as JSON: each explained value with its formula, result, exact amount and unit, and source.
[[nodiscard]] inline nlohmann::json explanation_json(const explanation& values) {
  nlohmann::json j = nlohmann::json::array();
  for (const explained_value& v : values) {
    nlohmann::json item = {{"section", v.section},
                           {"name", v.name},
                           {"formula", v.formula},
                           {"result", v.result},
                           {"source", v.source}};
    if (v.amount) {
      item["amount"] = *v.amount;
      item["unit"] = v.unit == explained_unit::byte ? "bytes" : "parameters";
    }
    j.push_back(std::move(item));
  }
  return j;
}

/// The advisor's answer: triage, each lever tried alone, the answer's levers, and the configuration that
/// fits.
[[nodiscard]] inline nlohmann::json advice_json(const advice& a) {
  auto steps_json = [](const std::vector<advice_step>& steps) {
    nlohmann::json j = nlohmann::json::array();
    for (const advice_step& s : steps)
      j.push_back({{"lever", s.lever},
                   {"change", s.change},
                   {"warning", s.warning},
                   {"total_bytes", s.total.count()},
                   {"fits", s.fits}});
    return j;
  };
  nlohmann::json j{{"biggest_bucket", a.biggest_bucket},
                   {"first_lever", a.first_lever},
                   {"static_alone_too_big", a.static_alone_too_big},
                   {"alone", steps_json(a.alone)},
                   {"steps", steps_json(a.steps)},
                   {"combined", a.combined},
                   {"found", a.found}};
  if (a.found) {
    const run_config& r = a.config;
    j["config"] = {{"method", choice_name(method_names, r.setup.method)},
                   {"precision", choice_name(precision_names, r.setup.precision)},
                   {"optimizer", r.setup.optimizer.name},
                   {"batch", r.activations.batch},
                   {"grad_accum_steps", r.grad_accum_steps},
                   {"seq_len", r.activations.seq_len},
                   {"checkpointing", choice_name(checkpointing_names, r.activations.ckpt)},
                   {"gpus", r.parallel.data_parallel},
                   {"sharding", choice_name(sharding_names, r.parallel.shard)},
                   {"offload_optimizer", r.parallel.offload_optimizer}};
  }
  return j;
}

}  // namespace headroom
