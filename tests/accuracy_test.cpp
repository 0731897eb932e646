// SPDX-License-Identifier: MIT
// headroom against the CPU ground truth: every row of both generations, validation/torch/measurements.csv
// (torch 1.13) and measurements-torch2.6.csv (torch 2.6), each priced for the torch that measured it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "catch.hpp"
#include "measured.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
std::vector<measured_row> both_generations() {
  const std::string dir = std::string(HEADROOM_VALIDATION_DIR) + "/torch/";
  std::vector<measured_row> all = read_measurements(dir + "measurements.csv");
  const std::vector<measured_row> v2 = read_measurements(dir + "measurements-torch2.6.csv");
  all.insert(all.end(), v2.begin(), v2.end());
  return all;
}
const std::vector<measured_row>& rows() {
  static const std::vector<measured_row> all = both_generations();
  return all;
}
// The bounds docs/accuracy.md states and justifies. Every other quantity is compared byte for byte.
// Chunked losses allocate a few 0-dim accumulators per chunk (the running loss, accuracy and entropy
// sums, nll_loss's total_weight) that the timeline lists only in part.
constexpr std::int64_t chunked_loss_scalars = 64;
// torch 2.6's backward of a chunked loss keeps up to 160 bytes more of them (measured: 64 to 160).
constexpr std::int64_t chunked_loss_scalars_torch2 = 256;
// Optimizer.step's 0-dim bookkeeping beyond the modelled 8 + one state-dtype scalar (Adagrad's foreach
// learning-rate list, RMSprop's integer step).
constexpr std::int64_t optimizer_scalars = 96;

std::int64_t signed_bytes(bytes b) { return static_cast<std::int64_t>(b.count()); }
// The losses whose 0-dim chunk tensors are not all modelled (TRL's, torchtune's CEWithChunkedOutputLoss).
bool dora(const measured_row& r) { return r.text("use_dora") == "1"; }
bool chunked(const measured_row& r) {
  return r.text("loss") == "trl_chunked" || r.text("loss") == "torchtune_chunked";
}
std::int64_t loss_scalars(const measured_row& r) {
  if (!chunked(r)) return 0;
  return r.torch2() ? chunked_loss_scalars_torch2 : chunked_loss_scalars;
}
/// torch 2.6's CPU GEMM of a 16-bit 3-D input by a weight that needs no gradient works on a transient copy of
/// the weight, fp32 when the input is a non-contiguous chunk (torchtune's tensor_split), which a CUDA GPU's
/// cuBLAS does not make: a frozen head's forward and backward peaks may exceed the model by that copy. Only
/// CEWithChunkedOutputLoss's rows show it; elsewhere the copy is never at a measured peak.
std::int64_t cpu_gemm_weight_copy(const measured_row& r) {
  const bool frozen_head = r.kind() == "loss" ? r.text("head_trainable") != "1" : r.text("method") != "full";
  if (!r.torch2() || r.text("dtype") != "bf16" || !frozen_head || r.text("loss") != "torchtune_chunked")
    return 0;
  return static_cast<std::int64_t>(r.count("vocab") * r.count("hidden") * sizeof(float));
}
/// The inventory's Python-scalar operands (0-dim tensors of a float or int operand, "the Python …"): torch
/// 2.x still allocates and keeps them on a CPU but no longer hands them to the saved-tensor pack hook.
std::int64_t python_scalar_bytes(const activation_terms& terms) {
  std::int64_t sum = 0;
  for (const activation_term& t : terms)
    if (t.reason.find("the Python ") != std::string_view::npos) sum += signed_bytes(t.amount);
  return sum;
}
}  // namespace

TEST_CASE("Accuracy: the two instruments agree on every block", "[accuracy][block]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "block") continue;
    INFO(r.label());
    const auto saved = static_cast<std::int64_t>(r.count("saved_activation_bytes"));
    const auto live = static_cast<std::int64_t>(r.count("live_after_forward_delta"));
    // Saved-for-backward bytes (pack hook) equal the live bytes the forward left (allocator events) —
    // except under DoRA, whose weight-norm graph saves tensors and dies with the forward (the pack hook
    // sees them; backward never does), and under torch 2.x, whose pack hook misses the Python scalars.
    if (dora(r))
      CHECK(saved > live);
    else if (r.torch2())
      CHECK(live - saved ==
            python_scalar_bytes(layer_inventory(shape_of(r), setup_of(r), activations_of(r))));
    else
      CHECK(saved == live);
    ++checked;
  }
  CHECK(checked >= 320);
}

TEST_CASE("Accuracy: saved activations of a decoder block are byte-exact", "[accuracy][block]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "block") continue;
    const model_shape m = shape_of(r);
    const training_setup s = setup_of(r);
    INFO(r.label() << " " << r.text("family") << " " << r.text("dtype") << " " << r.text("method") << " "
                   << r.text("lora_targets") << " " << r.text("attention"));
    // The allocator's count: what the forward left alive (the pack hook's equals it on 1.13 but for DoRA).
    CHECK(layer_inventory(m, s, activations_of(r)).total().count() == r.count("live_after_forward_delta"));
    // One layer's parameters, from the per-tensor inventory: the measured layer is the last run's (DeepSeek's
    // rows measure the MoE layer after the dense one), a model of that one layer.
    const layer_group_list runs = layer_groups(m);
    const model_shape& one = runs.items[runs.size - 1].shape;
    REQUIRE(one.num_hidden_layers == 1);
    const std::uint64_t final_norm = m.hidden_size * norm_tensors(m);  // a LayerNorm has a bias
    const std::uint64_t layer = layer_parameter_count(one).count();
    std::uint64_t adapters = s.method == training_method::lora ? adapter_count(one, s.lora).count() : 0;
    // The row measures the layer alone: not VeRA's shared projections, nor LN tuning's final-norm copy.
    if (s.method == training_method::lora) {
      visit_model_adapters(one, s.lora, [&](const param_tensor& t) { adapters -= t.total().count(); });
      if (norms_train(s.lora)) adapters -= final_norm;
    }
    CHECK(layer + adapters == r.count("params"));
  }
}

TEST_CASE("Accuracy: DoRA's weight-norm moment is within -5% and +20% of a block's forward peak",
          "[accuracy][block]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "block" || !dora(r)) continue;
    INFO(r.label());
    // The moment the model prices: all of the block's saved tensors and the largest module's temporaries — an
    // upper-bound moment (a module early in the block has fewer saved tensors around it: q_proj/v_proj-only
    // +18%).
    const activation_estimate e = estimate_activations(shape_of(r), setup_of(r), activations_of(r));
    const double modelled = static_cast<double>((e.layer + e.module_transient).count());
    const double measured = static_cast<double>(delta(r, "forward_peak"));
    CHECK(modelled >= 0.95 * measured);
    CHECK(modelled <= 1.20 * measured);
    ++checked;
  }
  CHECK(checked >= 8);
}

TEST_CASE("Accuracy: the loss head's peaks, what it keeps and leaves", "[accuracy][loss]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "loss") continue;
    const logits_estimate e = estimate_logits(shape_of(r), loss_setup_of(r), activations_of(r), loss_of(r));
    const std::int64_t bound = loss_scalars(r);
    INFO(r.label() << " " << r.text("family") << " " << r.text("dtype") << " " << r.text("loss"));
    // The peaks: exact (within the scalars), or below by at most the CPU GEMM's weight copy.
    auto peak = [&](bytes estimate, const char* column) {
      const std::int64_t under = delta(r, column) - signed_bytes(estimate);
      CHECK(under <= bound + cpu_gemm_weight_copy(r));
      CHECK(under >= -bound);
    };
    peak(e.forward, "forward_peak");
    CHECK(std::abs(signed_bytes(e.kept) - delta(r, "after_forward")) <= bound);
    peak(e.backward, "backward_peak");
    CHECK(std::abs(signed_bytes(e.after) - delta(r, "after_backward")) <= bound);
  }
}

TEST_CASE("Accuracy: optimizer state is byte-exact, the step's temporaries within its scalars",
          "[accuracy][optimizer]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "optimizer") continue;
    const training_setup s = setup_of(r);
    const static_estimate st = estimate_static(model_spec{shape_of(r), 0}, s, params_basis::exact);
    INFO(r.label() << " " << r.text("optimizer") << " " << r.text("optimizer_impl") << " "
                   << r.text("dtype"));
    CHECK(st.model_params.count() + st.adapter_params.count() == r.count("params"));
    CHECK(st.trainable_params.count() == r.count("trainable_params"));
    CHECK(st.buckets.optimizer.count() == r.count("state_bytes"));
    CHECK(std::abs(signed_bytes(headroom::detail::step_temporaries(st, s)) - delta(r, "optimizer_peak")) <=
          optimizer_scalars);
  }
}

namespace {
/// One phase of a whole-step row: the estimate against the measurement (both absolute live bytes).
struct phase_check {
  const char* column;
  std::int64_t estimate, measured;
  bool peak;  ///< a peak (the CPU GEMM's weight copy may add to it), not what the forward leaves
};
/// What is live when the measured micro-batch begins: weights, optimizer state, and the gradients of the
/// earlier micro-batches under accumulation.
std::int64_t step_base(const measured_row& r) {
  return static_cast<std::int64_t>(r.count("param_bytes") + r.count("state_bytes") +
                                   r.count("start_grad_bytes"));
}
/// The gradients alive when the measured micro-batch begins: the earlier micro-batches' (sharded, or under
/// FSDP's no_sync every unit's unsharded gradient).
bytes grads_at_start(const training_estimate& e) {
  return e.phases[static_cast<std::size_t>(step_phase::forward_end)].grads;
}
/// FSDP1 shard_grad_op under no_sync reshards nothing between micro-batches: every unit's gathered parameters
/// are alive when the measured one begins (the harness's param_bytes counts the slices).
std::int64_t gathered_at_start(const measured_row& r, const training_estimate& e) {
  const bool kept = r.kind() == "fsdp" && r.text("sharding") == "shard_grad_op" && r.text("no_sync") == "1" &&
                    r.count("grad_accum") > 1;
  return kept ? signed_bytes(e.per_gpu_static.comm.gathered) : 0;
}
/// use_orig_params: zero_grad clears the views' gradients, not the FlatParameter's sharded one, which the
/// next forward frees (_flat_param.py _reset_flat_param_grad_info_if_needed): alive when a step that follows
/// zero_grad begins (the harness's start_bytes counts it; no phase of the step does).
std::int64_t flat_grad_at_start(const measured_row& r, const training_estimate& e) {
  const bool lingers = r.kind() == "fsdp" && r.text("use_orig_params") == "1" && r.count("grad_accum") <= 1;
  return lingers ? signed_bytes(e.per_gpu_static.per_gpu.grads) : 0;
}
std::array<phase_check, 4> step_checks(const measured_row& r, const training_estimate& e) {
  const memory_buckets& st = e.per_gpu_static.per_gpu;
  auto phase = [&](step_phase p) {
    return signed_bytes(e.phases[static_cast<std::size_t>(p)].total_bytes());
  };
  auto measured = [&](const char* column) {
    return step_base(r) + gathered_at_start(r, e) + flat_grad_at_start(r, e) + delta(r, column);
  };
  const bytes at_start = grads_at_start(e);
  // FSDP: the gathered units (the root, or every unit under shard_grad_op) stay after the forward.
  const bytes after_forward = st.static_bytes() - st.grads + at_start + st.temporaries + e.activations.kept +
                              e.logits.kept + e.logits.hidden_kept;
  return {{{"forward_peak", phase(step_phase::forward_end), measured("forward_peak"), true},
           {"after_forward", signed_bytes(after_forward), measured("after_forward"), false},
           {"backward_peak", std::max(phase(step_phase::backward_start), phase(step_phase::backward_end)),
            measured("backward_peak"), true},
           {"optimizer_peak", phase(step_phase::optimizer_step), measured("optimizer_peak"), true}}};
}
}  // namespace

TEST_CASE("Accuracy: whole training steps, phase by phase", "[accuracy][step]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "step") continue;
    const training_estimate e = estimate_training(model_spec{shape_of(r), 0}, run_of(r));
    const memory_buckets& st = e.per_gpu_static.per_gpu;
    const std::int64_t bound = chunked(r) ? loss_scalars(r) : optimizer_scalars;
    INFO(r.label() << " " << r.text("family") << " " << r.text("dtype") << " " << r.text("method") << " "
                   << r.text("checkpointing") << " " << r.text("loss"));
    CHECK(e.statics.model_params.count() + e.statics.adapter_params.count() == r.count("params"));
    CHECK(signed_bytes(st.static_bytes() - st.grads + grads_at_start(e)) == step_base(r));
    for (const phase_check& p : step_checks(r, e)) {
      // A peak may exceed the estimate by the CPU GEMM's weight copy too.
      const std::int64_t copy = p.peak ? cpu_gemm_weight_copy(r) : 0;
      INFO(p.column << ": estimate " << p.estimate << ", measured " << p.measured);
      CHECK(p.measured - p.estimate <= bound + copy);
      CHECK(p.estimate - p.measured <= bound);
      CHECK(std::abs(p.estimate - p.measured) <= p.measured / 50 + copy);  // the 2% on whole steps
    }
  }
}

namespace {
/// A load row: a model built in fp32 and cast to bf16 (module.to), priced as the fp32-cast load path.
load_estimate load_of(const measured_row& r) {
  training_setup s;
  s.precision = precision_route::bf16_pure;  // the dtype the cast ends in
  const model_spec spec{shape_of(r), 0};
  return estimate_load(spec.shape, s, estimate_static(spec, s, params_basis::exact),
                       load_path::fp32_then_cast);
}
// Floating buffers (RoPE inv_freq) are cast too: a few bytes the load path does not list.
constexpr std::int64_t load_buffers = 64;
}  // namespace

TEST_CASE("Accuracy: the load phase (an fp32 checkpoint cast to bf16) is byte-exact", "[accuracy][load]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "load") continue;
    INFO(r.label() << " " << r.text("family"));
    const load_estimate e = load_of(r);
    CHECK(signed_bytes(e.weights) == static_cast<std::int64_t>(r.count("param_bytes")));
    CHECK(signed_bytes(e.transient) == delta(r, "load_peak"));
    // After the cast the weights are half their fp32 bytes (and the buffers a few bytes smaller).
    const std::int64_t after = delta(r, "after_load") + signed_bytes(e.weights) / 2;
    CHECK(after <= 0);
    CHECK(after >= -load_buffers);
    ++checked;
  }
  CHECK(checked >= 6);
}

TEST_CASE("Accuracy: PiSSA and OLoRA initialisation transients are byte-exact", "[accuracy][load]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "init") continue;
    INFO(r.label() << " " << r.text("family") << " " << r.text("dtype") << " "
                   << r.text("init_lora_weights"));
    const model_shape m = shape_of(r);
    const training_setup s = setup_of(r);
    const init_transient init = lora_init_transient(m, s);
    CHECK(signed_bytes(init.amount) == delta(r, "load_peak"));
    CHECK(parameter_count(m).count() + adapter_count(m, s.lora).count() == r.count("params"));
    ++checked;
  }
  CHECK(checked >= 11);
}

TEST_CASE("Accuracy: the grid is the one the issue asks for", "[accuracy]") {
  std::map<std::string, int> kinds;
  for (const measured_row& r : rows()) ++kinds[r.kind()];
  CHECK(rows().size() >= 150);
  CHECK(kinds["step"] >= 30);
  CHECK(kinds["loss"] >= 30);
  CHECK(kinds["optimizer"] >= 15);
  CHECK(kinds["block"] >= 80);
}

namespace {
/// Whether every quantity the tests above compare for a row is byte-exact (no bound used).
bool exact_row(const measured_row& r) {
  if (r.kind() == "block")
    return layer_inventory(shape_of(r), setup_of(r), activations_of(r)).total().count() ==
           r.count("live_after_forward_delta");
  if (r.kind() == "loss") {
    const logits_estimate e = estimate_logits(shape_of(r), loss_setup_of(r), activations_of(r), loss_of(r));
    return signed_bytes(e.forward) == delta(r, "forward_peak") &&
           signed_bytes(e.kept) == delta(r, "after_forward") &&
           signed_bytes(e.backward) == delta(r, "backward_peak") &&
           signed_bytes(e.after) == delta(r, "after_backward");
  }
  if (r.kind() == "optimizer") {
    const training_setup s = setup_of(r);
    const static_estimate st = estimate_static(model_spec{shape_of(r), 0}, s, params_basis::exact);
    return st.buckets.optimizer.count() == r.count("state_bytes") &&
           signed_bytes(headroom::detail::step_temporaries(st, s)) == delta(r, "optimizer_peak");
  }
  if (r.kind() == "step" || r.kind() == "fsdp") {
    const std::array<phase_check, 4> checks =
        step_checks(r, estimate_training(model_spec{shape_of(r), 0}, run_of(r)));
    return std::all_of(checks.begin(), checks.end(),
                       [](const phase_check& p) { return p.estimate == p.measured; });
  }
  if (r.kind() == "load") return signed_bytes(load_of(r).transient) == delta(r, "load_peak");
  const training_setup s = setup_of(r);  // an init row
  return signed_bytes(lora_init_transient(shape_of(r), s).amount) == delta(r, "load_peak");
}
}  // namespace

TEST_CASE("Accuracy: the torch 2.6 generation has 150 rows or more, 90% of them byte-exact", "[accuracy]") {
  std::map<std::string, int> kinds;
  int all = 0, exact = 0;
  for (const measured_row& r : rows()) {
    if (!r.torch2()) continue;
    ++kinds[r.kind()];
    ++all;
    exact += exact_row(r) ? 1 : 0;
  }
  CHECK(all >= 150);
  CHECK(kinds["block"] >= 200);
  CHECK(kinds["step"] >= 80);
  CHECK(kinds["fsdp"] >= 46);
  CHECK(exact * 10 >= all * 9);
}

TEST_CASE("Accuracy: one rank of FSDP1 (flat parameters) is byte-exact in every phase", "[accuracy][fsdp]") {
  int checked = 0;
  for (const measured_row& r : rows()) {
    if (r.kind() != "fsdp") continue;
    const training_estimate e = estimate_training(model_spec{shape_of(r), 0}, run_of(r));
    const memory_buckets& st = e.per_gpu_static.per_gpu;
    INFO(r.label() << " " << r.text("family") << " " << r.text("dtype") << " " << r.text("sharding")
                   << " ranks " << r.text("world_size") << " accumulation " << r.text("grad_accum")
                   << " no_sync " << r.text("no_sync"));
    CHECK(st.weights.count() == r.count("param_bytes"));
    CHECK(st.optimizer.count() == r.count("state_bytes"));
    CHECK(grads_at_start(e).count() == r.count("start_grad_bytes"));
    for (const phase_check& p : step_checks(r, e)) {
      INFO(p.column << ": estimate " << p.estimate << ", measured " << p.measured);
      CHECK(p.estimate == p.measured);
    }
    // The wrap of the whole model built on the rank (fp32 under MixedPrecision): its worst moment above the
    // slices it leaves.
    const fsdp_flat_units units =
        fsdp_flat_units_for(shape_of(r), e.statics, run_of(r).setup, run_of(r).parallel);
    const bytes whole(units.all.count() * units.weight_bytes);
    CHECK(signed_bytes(fsdp_wrap_transient(units) + whole - st.weights) ==
          static_cast<std::int64_t>(r.count("load_peak")) - static_cast<std::int64_t>(r.count("after_load")));
    ++checked;
  }
  CHECK(checked >= 46);
}

TEST_CASE("Report: whole steps", "[.report]") {
  for (const measured_row& r : rows()) {
    if (r.kind() != "step") continue;
    const training_estimate e = estimate_training(model_spec{shape_of(r), 0}, run_of(r));
    const memory_buckets& st = e.per_gpu_static.per_gpu;
    const bytes at_start = grads_at_start(e);
    std::printf("%s %-9s %-8s %-4s %-13s %-17s %-12s", r.label().c_str(), r.text("family").c_str(),
                r.text("dtype").c_str(), r.text("method").c_str(), r.text("checkpointing").c_str(),
                r.text("loss").c_str(), r.text("optimizer").c_str());
    std::printf(" static %+lld",
                static_cast<long long>(signed_bytes(st.static_bytes() - st.grads + at_start) - step_base(r)));
    for (const phase_check& p : step_checks(r, e))
      std::printf(" %s %+.2f%%(%+lld)", p.column,
                  100.0 * static_cast<double>(p.estimate - p.measured) / static_cast<double>(p.measured),
                  static_cast<long long>(p.estimate - p.measured));
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
    std::printf(
        "%s %-7s %-5s %-6s %-13s %-9s params %llu/%llu state %llu/%llu(%+lld) temps %llu/%lld(%+lld)\n",
        r.label().c_str(), r.text("family").c_str(), r.text("dtype").c_str(), r.text("method").c_str(),
        r.text("optimizer").c_str(), r.text("optimizer_impl").c_str(),
        static_cast<unsigned long long>(st.trainable_params.count()),
        static_cast<unsigned long long>(r.count("trainable_params")),
        static_cast<unsigned long long>(st.buckets.optimizer.count()),
        static_cast<unsigned long long>(r.count("state_bytes")),
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
      std::printf(" %s %lld/%lld(%+lld)", what, static_cast<long long>(est.count()),
                  static_cast<long long>(m), static_cast<long long>(est.count()) - static_cast<long long>(m));
    };
    std::printf("%s %-7s %-8s %-17s %-3s h%s", r.label().c_str(), r.text("family").c_str(),
                r.text("dtype").c_str(), r.text("loss").c_str(), r.text("loss_chunk").c_str(),
                r.text("head_trainable").c_str());
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
    std::printf("%s %-9s %-8s %-4s %-16s %-4s %-4s %-5s %lld %lld %+lld\n", r.label().c_str(),
                r.text("family").c_str(), r.text("dtype").c_str(), r.text("method").c_str(),
                r.text("lora_targets").c_str(), r.text("lora_dropout").c_str(),
                r.text("adapter_dtype").c_str(), r.text("attention").c_str(),
                static_cast<long long>(estimate.count()), measured,
                static_cast<long long>(estimate.count()) - measured);
  }
}

// The summary tables of docs/accuracy.md: ./build/tests/headroom_tests_cxx20 "[.summary]"
TEST_CASE("Summary: rows per family, exact rows and the largest difference", "[.summary]") {
  struct tally {
    int rows = 0, exact = 0;
    std::int64_t worst = 0;
    double worst_rel = 0;
  };
  std::map<std::string, tally> table;
  auto add = [&](const std::string& key, std::int64_t estimate, std::int64_t measured) {
    tally& t = table[key];
    const std::int64_t diff = estimate - measured;
    ++t.rows;
    t.exact += diff == 0 ? 1 : 0;
    if (std::abs(diff) > std::abs(t.worst)) t.worst = diff;
    const double rel =
        measured == 0 ? 0.0 : std::abs(static_cast<double>(diff) / static_cast<double>(measured));
    t.worst_rel = std::max(t.worst_rel, rel);
  };
  for (const measured_row& r : rows()) {
    const std::string fam = r.text("family");
    const std::string gen = r.torch2() ? "torch 2.6 | " : "torch 1.13 | ";
    if (r.kind() == "block") {
      add(gen + "block saved activations | " + fam,  // the comparand of the block test above (live bytes)
          signed_bytes(layer_inventory(shape_of(r), setup_of(r), activations_of(r)).total()),
          static_cast<std::int64_t>(r.count("live_after_forward_delta")));
    } else if (r.kind() == "loss") {
      const logits_estimate e = estimate_logits(shape_of(r), loss_setup_of(r), activations_of(r), loss_of(r));
      const std::string key = gen + "loss head | " + r.text("loss");
      add(key + " | forward peak", signed_bytes(e.forward), delta(r, "forward_peak"));
      add(key + " | kept", signed_bytes(e.kept), delta(r, "after_forward"));
      add(key + " | backward peak", signed_bytes(e.backward), delta(r, "backward_peak"));
    } else if (r.kind() == "optimizer") {
      const training_setup s = setup_of(r);
      const static_estimate st = estimate_static(model_spec{shape_of(r), 0}, s, params_basis::exact);
      add(gen + "optimizer | " + r.text("optimizer") + " state", signed_bytes(st.buckets.optimizer),
          static_cast<std::int64_t>(r.count("state_bytes")));
      add(gen + "optimizer | " + r.text("optimizer") + " " + r.text("optimizer_impl") + " step temporaries",
          signed_bytes(headroom::detail::step_temporaries(st, s)), delta(r, "optimizer_peak"));
    } else if (r.kind() == "step") {
      const training_estimate e = estimate_training(model_spec{shape_of(r), 0}, run_of(r));
      std::int64_t peak = 0, measured = 0;
      for (const phase_check& p : step_checks(r, e))
        if (p.peak) peak = std::max(peak, p.estimate), measured = std::max(measured, p.measured);
      add(gen + "whole step peak | " + r.text("method") + " " + r.text("dtype"), peak, measured);
    } else if (r.kind() == "load") {
      add(gen + "load phase | fp32-cast transient", signed_bytes(load_of(r).transient),
          delta(r, "load_peak"));
    }
  }
  std::printf(
      "| rows | family | exact | largest difference (bytes) | largest relative |\n|---|---|---|---|---|\n");
  for (const auto& [key, t] : table)
    std::printf("| %d | %s | %d | %+lld | %.4f%% |\n", t.rows, key.c_str(), t.exact,
                static_cast<long long>(t.worst), 100.0 * t.worst_rel);
}
