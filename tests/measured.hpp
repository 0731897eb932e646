// SPDX-License-Identifier: MIT
// The CPU ground truth (validation/torch/measurements.csv, torch 1.13; measurements-torch2.6.csv, torch 2.6)
// as headroom inputs: a small CSV reader and the mapping from each row's configuration columns to a model, a
// training setup and a run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <headroom/headroom.hpp>

namespace headroom::test {

/// One measured row: every column by name.
struct measured_row {
  std::map<std::string, std::string> cells;

  [[nodiscard]] const std::string& text(const std::string& column) const {
    const auto it = cells.find(column);
    if (it == cells.end()) throw std::runtime_error("measurements.csv has no column " + column);
    return it->second;
  }
  [[nodiscard]] bool has(const std::string& column) const { return !text(column).empty(); }
  [[nodiscard]] std::uint64_t count(const std::string& column) const { return std::stoull(text(column)); }
  [[nodiscard]] double number(const std::string& column) const { return std::stod(text(column)); }
  [[nodiscard]] bytes measured(const std::string& column) const { return bytes(count(column)); }
  [[nodiscard]] const std::string& id() const { return text("id"); }
  [[nodiscard]] const std::string& kind() const { return text("kind"); }
  /// The id with the torch that measured it: both generations number their rows alike.
  [[nodiscard]] std::string label() const { return id() + " (torch " + text("torch_version") + ")"; }
  /// Measured by torch 2.x (validation/torch/measurements-torch2.6.csv), not 1.13.
  [[nodiscard]] bool torch2() const { return text("torch_version").rfind("1.", 0) != 0; }
};

/// RFC 4180 fields: commas inside double quotes belong to the field ("q_proj,v_proj").
inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

inline std::vector<measured_row> read_measurements(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  std::vector<measured_row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = split_csv_line(line);
    if (fields.size() != header.size()) throw std::runtime_error("ragged row: " + line);
    measured_row row;
    for (std::size_t i = 0; i < header.size(); ++i) row.cells[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

/// The row's shape, read through headroom's own config.json reader (model_type = the family).
inline model_shape shape_of(const measured_row& r) {
  nlohmann::json j;
  const std::string& family = r.text("family");
  j["model_type"] = family == "cohere_qk" ? "cohere" : family;  // cohere_qk: Command-R+'s use_qk_norm
  if (family == "cohere_qk") j["use_qk_norm"] = true;
  j["hidden_size"] = r.count("hidden");
  j["num_hidden_layers"] = r.count("layers") == 0 ? 1 : r.count("layers");
  if (family == "deepseek_v3") {  // the harness's MLA and routing (modules.py FAMILIES["deepseek_v3"])
    j["q_lora_rank"] = 48;
    j["kv_lora_rank"] = 16;
    j["qk_nope_head_dim"] = 16;
    j["qk_rope_head_dim"] = 8;
    j["v_head_dim"] = 16;
    j["first_k_dense_replace"] = 1;
    j["n_shared_experts"] = 1;
    j["n_group"] = 4;
    j["topk_group"] = 2;
    j["intermediate_size"] = r.count("intermediate");
    // a block row measures the first MoE layer, after the dense one (loss rows have no layers)
    j["num_hidden_layers"] = std::max<std::uint64_t>(2, r.count("layers") + (r.kind() == "block" ? 1 : 0));
  }
  j["num_attention_heads"] = r.count("heads");
  j["num_key_value_heads"] = r.count("kv_heads");
  j["head_dim"] = r.count("head_dim");
  j["vocab_size"] = r.count("vocab");
  j["tie_word_embeddings"] = r.text("tied") == "1";
  if (family == "siglip") {  // modules.SiglipEncoderLayer: a vision tower's encoder, as the loaders build it
    headroom::detail::vit_dims v;
    v.hidden = r.count("hidden");
    v.mlp = r.count("intermediate");
    v.heads = r.count("heads");
    v.layers = std::max<std::uint64_t>(1, r.count("layers"));
    return headroom::detail::vit_encoder(v);
  }
  const bool llama4 = family.rfind("llama4", 0) == 0;
  if (r.has("experts")) {
    const bool mixtral_keys =
        family == "mixtral" || family == "gpt_oss" || llama4;  // num_local_experts, intermediate_size
    j[mixtral_keys              ? "num_local_experts"
      : family == "deepseek_v3" ? "n_routed_experts"
                                : "num_experts"] = r.count("experts");
    j["num_experts_per_tok"] = r.count("experts_per_tok");
    j[mixtral_keys ? "intermediate_size" : "moe_intermediate_size"] = r.count("moe_intermediate");
    if (!mixtral_keys) j["norm_topk_prob"] = r.text("norm_topk") == "1";
  } else {
    j["intermediate_size"] = r.count("intermediate");
  }
  if (family == "qwen2_moe") j["shared_expert_intermediate_size"] = 128;  // modules.FAMILIES["qwen2_moe"]
  if (llama4) {  // modules.FAMILIES["llama4", "llama4_nope", "llama4_dense"]
    j["model_type"] = "llama4_text";
    j["intermediate_size_mlp"] = r.count("intermediate");
    j["interleave_moe_layer_step"] = family == "llama4_dense" ? 2 : 1;
    j["no_rope_layer_interval"] = family == "llama4_nope" ? 1 : 4;
    // a block row measures layer 0: llama4_dense's is a dense one, in a model of at least two layers
    if (family == "llama4_dense") j["num_hidden_layers"] = std::max<std::uint64_t>(2, r.count("layers"));
    const model_shape m = model_from_config(j, r.id()).spec.shape;
    return r.kind() == "block" ? layer_groups(m).items[0].shape : m;
  }
  if (family == "starcoder2")
    j["residual_dropout"] = j["embedding_dropout"] = 0.1;  // the harness's (the 3B's)
  if (family == "gemma2") {
    j["attn_logit_softcapping"] = r.number("attn_softcap");
    j["final_logit_softcapping"] = r.number("final_softcap");
  }
  return model_from_config(j, r.id()).spec.shape;
}

inline precision_route precision_of(const measured_row& r) {
  const std::string& dtype = r.text("dtype");
  if (dtype == "bf16") return precision_route::bf16_pure;
  if (dtype == "fp32") return precision_route::fp32;
  if (dtype == "autocast") return precision_route::fp32_autocast;
  if (dtype == "bf16_mixed") return precision_route::bf16_mixed;  // FSDP1 MixedPrecision over fp32 units
  throw std::runtime_error(r.id() + ": unknown dtype " + dtype);
}

inline training_setup setup_of(const measured_row& r) {
  training_setup s;
  s.method = r.text("method") == "lora" ? training_method::lora : training_method::full;
  s.precision = precision_of(r);
  s.runtime.device = parse_choice(device_names, r.text("device"), "device");
  s.runtime.torch = r.torch2() ? torch_generation::v2 : torch_generation::v1_13;
  if (s.method == training_method::lora) {
    if (r.has("lora_rank")) s.lora.rank = r.count("lora_rank");
    s.lora.targets = parse_lora_targets(r.text("lora_targets"));
    s.lora.dropout = r.number("lora_dropout");
    s.lora.dtype = r.text("adapter_dtype") == "fp32" ? adapter_precision::fp32 : adapter_precision::base;
    s.lora.use_dora = r.text("use_dora") == "1";
    s.lora.freeze_a = r.text("lora_fa") == "1";
    if (r.has("peft_type")) {  // the harness's names are PEFT's, with underscores
      std::string type = r.text("peft_type");
      std::replace(type.begin(), type.end(), '_', '-');
      set_peft_type(s.lora, parse_choice(peft_type_names, type, "peft_type"));
      if (s.lora.method == peft_method::ln_tuning || prompt_learning(s.lora))
        s.lora.targets = lora_targets::all_linear();  // not read by these methods
      if (r.has("virtual_tokens")) s.lora.virtual_tokens = r.count("virtual_tokens");
      if (r.has("encoder_hidden_size")) s.lora.encoder_hidden_size = r.count("encoder_hidden_size");
      s.lora.prefix_projection = r.text("prefix_projection") == "1";
    }
    if (r.has("init_lora_weights")) s.lora.init = parse_lora_init(r.text("init_lora_weights"));
  }
  const std::string& optimizer = r.text("optimizer");
  if (optimizer == "adamw" || optimizer == "adam") {
    s.optimizer = optimizer_by_name("adamw_torch");  // torch.optim.Adam with weight_decay 0: the same tensors
  } else if (optimizer == "sgd_momentum") {
    s.optimizer = optimizer_by_name("sgd");
    s.optim.momentum = true;
  } else if (!optimizer.empty()) {
    s.optimizer = optimizer_by_name(optimizer);
  }
  s.optim.in_backward = r.text("optimizer_in_backward") == "1";
  if (r.has("optimizer_impl"))
    s.optim.impl = r.text("optimizer_impl") == "foreach" ? optimizer_impl::foreach : optimizer_impl::for_loop;
  return s;
}

inline activation_config activations_of(const measured_row& r) {
  activation_config c;
  c.batch = r.count("batch");
  c.seq_len = r.count("seq_len");
  // SDPA's kernel on a CPU (1.13: the math path; 2.x: flash or math) is headroom's choice (sdpa_kernel).
  c.attention = r.text("attention") == "eager" ? attention_impl::eager : attention_impl::sdpa;
  c.attention_dropout = r.has("attention_dropout") && r.number("attention_dropout") > 0;
  c.ckpt = r.text("checkpointing") == "none" ? checkpointing::none : checkpointing::full;
  c.reentrant = r.text("checkpointing") == "reentrant";
  return c;
}

inline loss_config loss_of(const measured_row& r) {
  loss_config l;
  const std::string& loss = r.text("loss");
  if (loss == "trl_chunked") {
    l.impl = loss_impl::chunked;
    l.chunk_tokens = r.count("loss_chunk");
  } else if (loss == "torchtune_chunked") {
    l.impl = loss_impl::chunked_output;
    l.output_chunks = r.count("loss_chunk");
  } else if (loss == "torchtune_linear_ce") {
    l.impl = loss_impl::linear_ce;
    l.output_chunks = r.count("loss_chunk");
  } else if (loss != "hf") {
    throw std::runtime_error(r.id() + ": unknown loss " + loss);
  }
  return l;
}

/// A loss row's setup: the head trains or is frozen (frozen = every other weight frozen too, as in LoRA).
inline training_setup loss_setup_of(const measured_row& r) {
  training_setup s = setup_of(r);
  if (r.text("head_trainable") != "1") s.method = training_method::lora;
  return s;
}

/// A whole-step row as a run: CPU, no CUDA context or workspaces, the measured loss head.
inline run_config run_of(const measured_row& r) {
  run_config run;
  run.setup = setup_of(r);
  run.activations = activations_of(r);
  run.loss = loss_of(r);
  run.basis = params_basis::exact;
  run.grad_accum_steps = r.count("grad_accum");
  run.overhead.override_total = true;  // a CPU has no CUDA context, workspaces or caching allocator
  run.overhead.total_override = bytes(0);
  if (r.kind() == "fsdp") {  // one rank of FSDP1: flat parameters, or the original ones' views
    run.parallel.data_parallel = r.count("world_size");
    run.parallel.shard = r.text("sharding") == "shard_grad_op" ? sharding::fsdp_grad_op : sharding::fsdp_full;
    run.parallel.sync_each_batch = r.text("no_sync") != "1";
    run.parallel.use_orig_params = r.text("use_orig_params") == "1";
  }
  return run;
}

/// Bytes a measured region allocated on top of what was live when it began.
inline std::int64_t delta(const measured_row& r, const std::string& column) {
  return static_cast<std::int64_t>(r.count(column)) - static_cast<std::int64_t>(r.count("start_bytes"));
}

}  // namespace headroom::test
