// SPDX-License-Identifier: MIT
// The stable JSON document of a static estimate (schema in docs/json-schema.md). nlohmann_json.
#pragma once

#include <nlohmann/json.hpp>

#include "config_io.hpp"
#include "memory.hpp"

namespace headroom {

inline constexpr int json_schema_version = 1;

/// One JSON object with every count in parameters and every bucket in bytes (exact integers).
[[nodiscard]] inline nlohmann::json static_estimate_json(const loaded_model& model, const training_setup& s,
                                                         const static_estimate& e) {
  nlohmann::json j;
  j["schema_version"] = json_schema_version;
  j["model"] = {{"name", model.name}, {"model_type", model.model_type}, {"origin", model.origin}};
  j["method"] = choice_name(method_names, s.method);
  j["precision"] = choice_name(precision_names, s.precision);
  j["optimizer"] = s.optimizer.name;
  j["optimizer_block_size"] = s.optim.block_size;
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
  j["qlora_layout"] = e.layout == qlora_layout::not_applicable ? nlohmann::json(nullptr)
                                                               : nlohmann::json(layout_name(e.layout));
  nlohmann::json buckets = nlohmann::json::object();
  for (const bucket_field& f : bucket_fields) buckets[std::string(f.name)] = (e.buckets.*f.member).count();
  j["buckets"] = buckets;
  j["static_bytes"] = e.buckets.static_bytes().count();
  j["total_bytes"] = e.buckets.total_bytes().count();
  j["notes"] = estimate_notes(e, s);
  return j;
}

}  // namespace headroom
