// SPDX-License-Identifier: MIT
// headroom against the CPU ground truth: every row of validation/torch/measurements.csv.
#include <algorithm>
#include <cstdio>
#include <string>

#include "catch.hpp"
#include "measured.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
const std::vector<measured_row>& rows() {
  static const std::vector<measured_row> all =
      read_measurements(std::string(HEADROOM_VALIDATION_DIR) + "/torch/measurements.csv");
  return all;
}
}  // namespace

TEST_CASE("Saved activations of one decoder block are byte-exact", "[accuracy][block]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "block") continue;
    const model_shape m = shape_of(r);
    const bytes estimate = layer_inventory(m, setup_of(r), activations_of(r)).total();
    INFO(r.id() << " " << r.text("family") << " " << r.text("dtype") << " " << r.text("method") << " "
                << r.text("lora_targets") << " " << r.text("attention"));
    CHECK(estimate.count() == r.count("saved_activation_bytes"));
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("Report: whole steps", "[.report]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "step") continue;
    const model_spec spec{shape_of(r), 0};
    const run_config run = run_of(r);
    const training_estimate e = estimate_training(spec, run);
    const bytes statics = e.per_gpu_static.per_gpu.static_bytes();
    const auto base = static_cast<std::int64_t>(r.count("param_bytes") + r.count("state_bytes"));
    auto at = [&](step_phase p) { return static_cast<std::int64_t>(e.phases[static_cast<std::size_t>(p)].total_bytes().count()); };
    const std::int64_t after_forward = static_cast<std::int64_t>((statics - e.per_gpu_static.per_gpu.grads + e.activations.kept + e.logits.kept + e.logits.hidden_kept).count());
    auto show = [&](const char* what, std::int64_t est, const char* column) {
      const std::int64_t m = base + delta(r, column);
      std::printf(" %s %+.2f%%(%+lld)", what, 100.0 * static_cast<double>(est - m) / static_cast<double>(m), static_cast<long long>(est - m));
    };
    std::printf("%s %-9s %-8s %-4s %-13s %-17s %-12s", r.id().c_str(), r.text("family").c_str(), r.text("dtype").c_str(),
                r.text("method").c_str(), r.text("checkpointing").c_str(), r.text("loss").c_str(), r.text("optimizer").c_str());
    std::printf(" static %+lld", static_cast<long long>((statics - e.per_gpu_static.per_gpu.grads).count()) - base);
    show("fwd", at(step_phase::forward_end), "forward_peak");
    show("afw", after_forward, "after_forward");
    show("bwd", std::max(at(step_phase::backward_start), at(step_phase::backward_end)), "backward_peak");
    show("opt", at(step_phase::optimizer_step), "optimizer_peak");
    std::printf("\n");
  }
}

TEST_CASE("Report: the optimizer", "[.report]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "optimizer") continue;
    const model_shape m = shape_of(r);
    const training_setup s = setup_of(r);
    const static_estimate st = estimate_static(model_spec{m, 0}, s, params_basis::exact);
    const bytes temps = headroom::detail::step_temporaries(st, s);
    std::printf("%s %-7s %-5s %-6s %-13s %-9s params %llu/%llu state %llu/%llu(%+lld) temps %llu/%lld(%+lld)\n",
                r.id().c_str(), r.text("family").c_str(), r.text("dtype").c_str(), r.text("method").c_str(),
                r.text("optimizer").c_str(), r.text("optimizer_impl").c_str(),
                static_cast<unsigned long long>(st.trainable_params.count()), static_cast<unsigned long long>(r.count("trainable_params")),
                static_cast<unsigned long long>(st.buckets.optimizer.count()), static_cast<unsigned long long>(r.count("state_bytes")),
                static_cast<long long>(st.buckets.optimizer.count()) - static_cast<long long>(r.count("state_bytes")),
                static_cast<unsigned long long>(temps.count()), static_cast<long long>(delta(r, "optimizer_peak")),
                static_cast<long long>(temps.count()) - static_cast<long long>(delta(r, "optimizer_peak")));
  }
}

TEST_CASE("Report: the loss head", "[.report]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "loss") continue;
    const logits_estimate e = estimate_logits(shape_of(r), loss_setup_of(r), activations_of(r), loss_of(r));
    auto show = [&](const char* what, bytes est, const char* column) {
      const std::int64_t m = delta(r, column);
      std::printf(" %s %lld/%lld(%+lld)", what, static_cast<long long>(est.count()), static_cast<long long>(m),
                  static_cast<long long>(est.count()) - static_cast<long long>(m));
    };
    std::printf("%s %-7s %-8s %-17s %-3s h%s", r.id().c_str(), r.text("family").c_str(), r.text("dtype").c_str(),
                r.text("loss").c_str(), r.text("loss_chunk").c_str(), r.text("head_trainable").c_str());
    show("fwd", e.forward, "forward_peak");
    show("kept", e.kept, "after_forward");
    show("bwd", e.backward, "backward_peak");
    show("after", e.after, "after_backward");
    std::printf("\n");
  }
}

TEST_CASE("Report: estimate against measurement for every row", "[.report]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "block") continue;
    const bytes estimate = layer_inventory(shape_of(r), setup_of(r), activations_of(r)).total();
    const auto measured = static_cast<long long>(r.count("saved_activation_bytes"));
    std::printf("%s %-9s %-8s %-4s %-16s %-4s %-4s %-5s %lld %lld %+lld\n", r.id().c_str(), r.text("family").c_str(),
                r.text("dtype").c_str(), r.text("method").c_str(), r.text("lora_targets").c_str(),
                r.text("lora_dropout").c_str(), r.text("adapter_dtype").c_str(), r.text("attention").c_str(),
                static_cast<long long>(estimate.count()), measured,
                static_cast<long long>(estimate.count()) - measured);
  }
}
