// SPDX-License-Identifier: MIT
// headroom::compiled: the header-only functions that <headroom/compiled.hpp> declares, compiled once.
#include <headroom/compiled.hpp>
#include <headroom/headroom.hpp>

namespace headroom::compiled {

loaded_model load_preset(std::string_view name) { return headroom::load_preset(name, preset_search_path()); }

loaded_model load_model_config(const std::filesystem::path& file) {
  return headroom::load_model_config(file);
}

gpu_info load_gpu(std::string_view name) { return headroom::load_gpu(name, preset_search_path()); }

training_estimate estimate_training(const model_spec& spec, const run_config& r) {
  return headroom::estimate_training(spec, r);
}

fit_answer fit_largest(const model_spec& spec, const run_config& r, bytes budget, fit_dimension d) {
  return headroom::fit_largest(spec, r, budget, d);
}

gpu_plan plan_gpus(const model_spec& spec, const run_config& r, bytes budget, std::uint64_t max_gpus) {
  return headroom::plan_gpus(spec, r, budget, max_gpus);
}

throughput_estimate predict_throughput(const model_spec& spec, const run_config& r, const gpu_info& gpu,
                                       const roofline_config& rc) {
  return headroom::predict_throughput(spec, r, gpu, rc);
}

std::string format_training_table(const loaded_model& model, const run_config& r, const training_estimate& e,
                                  bool with_gib, std::optional<bytes> budget) {
  return headroom::format_training_table(model, r, e, with_gib, budget);
}

std::string training_estimate_json(const loaded_model& model, const run_config& r, const training_estimate& e,
                                   std::optional<bytes> budget, int indent) {
  return headroom::training_estimate_json(model, r, e, budget).dump(indent);
}

}  // namespace headroom::compiled
