// SPDX-License-Identifier: MIT
// throughput_calculator: FLOPs per token under a named convention, and either MFU/HFU from a
// measured tokens/s (--tokens-per-second) or a roofline prediction of step time, tokens/s and MFU.
// With --tokens, the time and GPU-hours to train that many tokens.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <headroom/cli/run_options.hpp>
#include <headroom/headroom.hpp>

namespace {

using namespace headroom;

/// The slowest measured rate taken: below it a step of any batch outlasts a run (1e-300 printed a 300-digit
/// step time, issue 31 SI-18).
constexpr double min_tokens_per_second = 1e-3;

struct options {
  cli::run_options run;
  std::string tokens_per_second;
  std::string convention = "6n";
  std::string tokens;
  std::string lengths;
  std::string matmul_efficiency = "0.7";
  std::string bandwidth_efficiency = "0.8";
  std::string kernel_launch_us = "5";
  std::string interconnect_gb_s;
  std::string inter_node_gb_s = "50";
  std::string interconnect_efficiency = "0.7";
  bool packing = false;
  bool json = false;
};

double fraction(const std::string& flag, const std::string& text) {
  const double v = cli::parse_positive(flag, text);
  if (v > 1 && v <= 100)
    throw input_error(flag, "must be a fraction in [0.01, 1], got '" + text + "' (a percentage? give " +
                                fmt::format("{:g}", v / 100) + ")");
  if (v > 1 || v < min_efficiency)
    throw input_error(flag, "must be a fraction in [0.01, 1] of the datasheet figure, got '" + text + "'");
  return v;
}

roofline_config roofline_from(const options& o) {
  roofline_config rc;
  rc.convention = parse_choice(flops_convention_names, o.convention, "--flops-convention");
  rc.matmul_efficiency = fraction("--matmul-efficiency", o.matmul_efficiency);
  rc.bandwidth_efficiency = fraction("--bandwidth-efficiency", o.bandwidth_efficiency);
  rc.kernel_launch_s = cli::parse_decimal("--kernel-launch-us", o.kernel_launch_us) * 1e-6;
  if (!o.interconnect_gb_s.empty())
    rc.interconnect_gb_s = cli::parse_positive("--interconnect-gb-s", o.interconnect_gb_s);
  rc.inter_node_gb_s = cli::parse_positive("--inter-node-gb-s", o.inter_node_gb_s);
  rc.interconnect_efficiency = fraction("--interconnect-efficiency", o.interconnect_efficiency);
  for (const auto& [flag, v] : {std::pair{"--interconnect-gb-s", rc.interconnect_gb_s},
                                std::pair{"--inter-node-gb-s", rc.inter_node_gb_s}})
    if (v != 0 && !(v >= min_bandwidth_gb_s && v <= max_bandwidth_gb_s))
      throw input_error(flag, fmt::format("must be in [1, 1e5] GB/s per direction, got {:g}", v));
  if (rc.kernel_launch_s > 1e-3)
    throw input_error("--kernel-launch-us",
                      "must be at most 1000 microseconds, got '" + o.kernel_launch_us + "'");
  return rc;
}

/// What the program prints: one JSON document, or the text.
struct report {
  nlohmann::json json;
  std::string text;
};

// --lengths: the padding a dataset's lengths cost (none when packed).
std::optional<padding_summary> padding(const options& o, const run_config& r, roofline_config& rc,
                                       report& out) {
  if (o.lengths.empty()) {
    if (o.packing)
      throw input_error("--packing", "needs --lengths FILE: the lengths it packs (issue 31, SI-09)");
    return std::nullopt;
  }
  const padding_summary pad =
      summarize_lengths(load_lengths(o.lengths), r.activations.batch, r.activations.seq_len);
  rc.padding_waste = o.packing ? 0.0 : pad.padding_waste();
  out.json["padding"] = {{"sequences", pad.sequences},
                         {"trained_tokens", pad.trained_tokens},
                         {"padded_tokens", pad.padded_tokens},
                         {"padding_waste", pad.padding_waste()},
                         {"grouped_by_length_waste", pad.grouped_waste()},
                         {"packed_rows", pad.packed_rows},
                         {"packed_row_fill", 1.0 - pad.packed_waste()},
                         {"packing", o.packing}};
  return pad;
}

/// The rates reported: predicted by the roofline, or from a measured tokens/s.
struct rates {
  double tokens_per_second = 0;
  double step_s = 0;
  double mfu = 0;
  double hfu = 0;
};

rates measured_rates(const options& o, const throughput_estimate& predicted, const roofline_config& rc,
                     const gpu_info& gpu, flops peak) {
  rates x;
  x.tokens_per_second = cli::parse_positive("--tokens-per-second", o.tokens_per_second);
  if (x.tokens_per_second < min_tokens_per_second)
    throw input_error(
        "--tokens-per-second",
        "'" + o.tokens_per_second + "' is below the smallest rate priced (0.001 tokens/s per GPU)");
  x.step_s = static_cast<double>(predicted.tokens_per_step) / x.tokens_per_second;
  x.mfu = utilisation(x.tokens_per_second, predicted.per_token.model, peak);
  x.hfu = utilisation(x.tokens_per_second / (1.0 - rc.padding_waste), predicted.per_token.hardware, peak);
  if (x.mfu > 1 || x.hfu > 1)  // more FLOP/s than the datasheet's dense peak: the figure is not per GPU
    throw input_error("--tokens-per-second",
                      fmt::format("{} tokens/s implies {} of {:.1f}% on {} ({:.4g} FLOP/s dense peak): "
                                  "give trained tokens per second per GPU (divide a cluster's figure by "
                                  "its GPUs), and check --gpu, --precision and the model",
                                  o.tokens_per_second, x.mfu > 1 ? "MFU" : "HFU",
                                  100 * (x.mfu > 1 ? x.mfu : x.hfu), gpu.name, peak.count()));
  return x;
}

void rates_json(nlohmann::json& j, const loaded_model& model, const gpu_info& gpu, const run_config& r,
                const throughput_estimate& predicted, const roofline_config& rc, flops peak, const rates& x,
                bool measured) {
  j["model"] = model.name;
  j["gpu"] = gpu.name;
  j["mode"] = measured ? "measured" : "predicted";
  j["method"] = choice_name(method_names, r.setup.method);
  j["flops_convention"] = predicted.per_token.convention;
  j["flops_per_token"] = predicted.per_token.model.count();
  j["hardware_flops_per_token"] = predicted.per_token.hardware.count();
  j["peak_flops"] = peak.count();
  j["tokens_per_second"] = x.tokens_per_second;
  j["step_time_s"] = x.step_s;
  j["tokens_per_step"] = predicted.tokens_per_step;
  j["mfu"] = x.mfu;
  j["hfu"] = x.hfu;
  j["efficiency"] = {{"matmul", rc.matmul_efficiency}, {"bandwidth", rc.bandwidth_efficiency}};
  if (measured) return;
  const step_time_parts& p = predicted.parts;
  j["step_time_parts_s"] = {{"matmuls", p.matmuls},
                            {"attention", p.attention},
                            {"elementwise", p.elementwise},
                            {"loss_head", p.loss_head},
                            {"recompute", p.recompute},
                            {"optimizer", p.optimizer},
                            {"grad_clipping", p.grad_clipping},
                            {"launch_bound", p.launch_bound}};
  const parallel_config& par = r.parallel;
  if (par.gpus() < 2) return;
  j["step_time_parts_s"]["communication"] = p.communication;
  if (par.pipeline_parallel > 1) j["step_time_parts_s"]["pipeline_bubble"] = p.pipeline_bubble;
  const comm_times& c = predicted.comm;
  nlohmann::json& comm = j["communication"];
  comm = {{"layout", choice_name(sharding_names, par.shard)},
          {"data_parallel", par.data_parallel},
          {"interconnect", gpu.interconnect},
          {"interconnect_gb_s", intra_node_gb_s(gpu, rc)},
          {"inter_node_gb_s", rc.inter_node_gb_s},
          {"efficiency", rc.interconnect_efficiency},
          {"all_reduce_s", c.all_reduce},
          {"all_gather_s", c.all_gather},
          {"reduce_scatter_s", c.reduce_scatter},
          {"exposed_s", c.exposed}};
  if (par.tensor_parallel > 1)
    comm["tensor_parallel"] = {{"ranks", par.tensor_parallel},
                               {"sequence_parallel", par.sequence_parallel},
                               {"all_reduce_s", c.tensor_parallel}};
  if (par.pipeline_parallel > 1)
    comm["pipeline_parallel"] = {{"stages", par.pipeline_parallel},
                                 {"schedule", "1f1b"},
                                 {"micro_batches", r.grad_accum_steps},
                                 {"send_s", c.pipeline_send},
                                 {"bubble_s", p.pipeline_bubble}};
}

// The collectives of a step, itemised (several GPUs only): data parallelism's, then tensor parallelism's and
// the pipeline's.
std::string comm_text(const gpu_info& gpu, const run_config& r, const throughput_estimate& predicted,
                      const roofline_config& rc) {
  const parallel_config& par = r.parallel;
  if (par.gpus() < 2) return "";
  const comm_times& c = predicted.comm;
  const std::string links = fmt::format(
      "{}, {:g} GB/s per direction in a node of {}, {:g} between nodes, at {:.0f}%",
      rc.interconnect_gb_s != 0 ? "--interconnect-gb-s" : gpu.interconnect, intra_node_gb_s(gpu, rc),
      par.node_gpus, rc.inter_node_gb_s, 100 * rc.interconnect_efficiency);
  std::string text;
  if (par.data_parallel > 1)
    text += fmt::format(
        "comm       {} over {} GPUs: all-reduce {:.3f} s, all-gather {:.3f}, reduce-scatter {:.3f} per step; "
        "{:.3f} s not hidden by compute ({})\n",
        choice_name(sharding_names, par.shard), par.data_parallel, c.all_reduce, c.all_gather,
        c.reduce_scatter, c.exposed - c.tensor_parallel - c.pipeline_send, links);
  if (par.tensor_parallel > 1)
    text += fmt::format("tensor     {} ranks{}: all-reduces {:.3f} s per step, none hidden ({})\n",
                        par.tensor_parallel, par.sequence_parallel ? " with sequence parallelism" : "",
                        c.tensor_parallel, links);
  if (par.pipeline_parallel > 1)
    text += fmt::format(
        "pipeline   {} stages, 1F1B over {} micro-batches: bubble {:.3f} s, stage sends {:.3f} s per step\n",
        par.pipeline_parallel, r.grad_accum_steps, predicted.parts.pipeline_bubble, c.pipeline_send);
  return text;
}

std::string rates_text(const loaded_model& model, const gpu_info& gpu, const run_config& r,
                       const throughput_estimate& predicted, const roofline_config& rc, flops peak,
                       const rates& x, bool measured) {
  std::string text = fmt::format(
      "model      {} on {} ({}), {} | {} FLOP/s peak\n"
      "FLOPs      {:.4g} per token under convention '{}' (hardware, with recomputation: {:.4g})\n"
      "{:<10} {:.0f} tokens/s per GPU, {:.3f} s per optimizer step ({} tokens)\n"
      "MFU        {:.1f}%   HFU {:.1f}%\n",
      model.name, gpu.name, choice_name(method_names, r.setup.method),
      choice_name(precision_names, r.setup.precision), fmt::format("{:.4g}", peak.count()),
      predicted.per_token.model.count(), predicted.per_token.convention, predicted.per_token.hardware.count(),
      measured ? "measured" : "predicted", x.tokens_per_second, x.step_s, predicted.tokens_per_step,
      100 * x.mfu, 100 * x.hfu);
  if (measured) return text;
  const step_time_parts& p = predicted.parts;
  return text +
         fmt::format(
             "step parts matmuls {:.3f} s, attention {:.3f}, elementwise {:.3f}, loss head {:.3f}, "
             "recompute {:.3f}, optimizer {:.3f}, gradient clipping {:.3f}, host-bound {:.3f} (roofline "
             "at {:.0f}% of peak FLOP/s, {:.0f}% of bandwidth; {:g} us per kernel launch)\n",
             p.matmuls, p.attention, p.elementwise, p.loss_head, p.recompute, p.optimizer, p.grad_clipping,
             p.launch_bound, 100 * rc.matmul_efficiency, 100 * rc.bandwidth_efficiency,
             rc.kernel_launch_s * 1e6) +
         comm_text(gpu, r, predicted, rc);
}

// --tokens: the wall clock and GPU-hours to train a token budget at these rates.
void token_budget(report& out, const options& o, const run_config& r, const rates& x) {
  if (o.tokens.empty()) return;
  const double budget = static_cast<double>(
      cli::parse_count("--tokens", o.tokens, std::uint64_t{1} << 50, number_kind::tokens));
  const double gpus = static_cast<double>(r.parallel.gpus());
  const double seconds_total = budget / (x.tokens_per_second * gpus);
  out.json["time_to_train_s"] = seconds_total;
  out.json["gpu_hours"] = seconds_total * gpus / 3600.0;
  out.text +=
      fmt::format("budget     {:.4g} tokens on {:.0f} GPU(s): {:.2f} h wall clock, {:.1f} GPU-hours\n",
                  budget, gpus, seconds_total / 3600.0, seconds_total * gpus / 3600.0);
}

// Which framework's defaults the prediction stands on, and every profile that moves it by more than 5%.
void profile_section(report& out, const cli::run_options& o, const model_spec& spec, const run_config& r,
                     const gpu_info& gpu, const roofline_config& rc) {
  out.text += std::string("profile    ") + cli::assumed_profile + "\n";
  nlohmann::json moves = nlohmann::json::array();
  const auto run_under = [&](framework f) {  // the same command line under f's profile
    return cli::run_under(o, spec.shape, gpu, f);
  };
  for (const cli::profile_move& m : cli::profile_moves(r, run_under, [&](const run_config& run) {
         return predict_throughput(spec, run, gpu, rc).tokens_per_second;
       })) {
    moves.push_back({{"framework", m.framework}, {"tokens_per_second", m.value}, {"change", m.change}});
    out.text += fmt::format("           under --framework {:<13} {:>9.0f} tokens/s ({:+.0f}%)\n", m.framework,
                            m.value, m.change * 100);
  }
  out.json["profile"] = {
      {"framework", "headroom-defaults"}, {"from", "assumed"}, {"moves_over_5_percent", moves}};
}

int calculate(const options& o) {
  const auto dirs = o.run.search_path();
  if (o.run.gpu.empty())
    throw input_error("--gpu", "is required: the peak FLOP/s and bandwidth come from it");
  const gpu_info gpu = load_gpu(o.run.gpu, dirs);
  const cli::loaded_run in = cli::load_run(o.run, dirs);
  const loaded_model& model = in.model;
  const training_args* args = in.args ? &*in.args : nullptr;
  run_config r = cli::launch(o.run, cli::layers_of(o.run, args, cli::framework_flag(o.run)), model.spec.shape,
                             args != nullptr && args->deepspeed, gpu)
                     .run;  // the launch notes are the memory calculator's to print
  roofline_config rc = roofline_from(o);
  report out;
  const std::optional<padding_summary> pad = padding(o, r, rc, out);
  const bool measured = !o.tokens_per_second.empty();
  // A measured tokens/s is per GPU: FLOPs per token and tokens per step do not depend on the layout, so
  // they come from the one-GPU model (the prediction itself refuses layouts it cannot time).
  run_config one_gpu = r;
  if (measured) {
    validate_layout(model.spec.shape, r.parallel);  // a layout the model cannot have, measured or not
    one_gpu.parallel = parallel_config{};
  }
  const throughput_estimate predicted = predict_throughput(model.spec, one_gpu, gpu, rc);
  const flops peak = gpu.peak(compute_dtype_for(r.setup.precision));
  const rates x = measured ? measured_rates(o, predicted, rc, gpu, peak)
                           : rates{predicted.tokens_per_second, predicted.step_time.count(), predicted.mfu,
                                   predicted.hfu};
  rates_json(out.json, model, gpu, r, predicted, rc, peak, x, measured);
  out.text = rates_text(model, gpu, r, predicted, rc, peak, x, measured);
  if (pad)
    out.text += fmt::format(
        "padding    {:.1f}% of computed tokens are padding in file order ({:.1f}% grouped by length); "
        "packing fills {:.1f}% of {} rows{}\n",
        100 * pad->padding_waste(), 100 * pad->grouped_waste(), 100 * (1 - pad->packed_waste()),
        pad->packed_rows, o.packing ? " (used)" : "");
  token_budget(out, o, r, x);
  if (measured && r.parallel.gpus() > 1)
    out.text += fmt::format(
        "note: a measured tokens/s is per GPU and taken as given: the layout's {} GPUs count only in "
        "--tokens' "
        "wall clock and GPU-hours\n",
        r.parallel.gpus());
  if (!in.args && o.run.framework.empty() && !measured) profile_section(out, o.run, model.spec, r, gpu, rc);
  out.text +=
      "note: MFU credits the convention's FLOPs; checkpointing lowers MFU but not HFU's hardware count. "
      "Predictions assume well-tuned kernels at the stated efficiencies.\n";
  if (r.setup.method != training_method::full)
    out.text +=
        "note: LoRA/QLoRA credit 4N + 6 per adapter parameter (no weight gradients for the frozen base).\n";
  fmt::print("{}", o.json ? out.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                          : cli::printable(out.text));
  return cli::exit_ok;
}

void add_options(CLI::App& app, options& o) {
  cli::add_run_options(app, o.run);
  app.add_option("--tokens-per-second", o.tokens_per_second,
                 "measured trained tokens/s per GPU: report MFU and HFU");
  app.add_option("--flops-convention", o.convention, "6n | palm | megatron")->capture_default_str();
  app.add_option("--tokens", o.tokens,
                 "a token budget to train: time and GPU-hours (1e9, 2B, 500M, 1,000,000)");
  app.add_option("--lengths", o.lengths, "sequence lengths (CSV or JSON array) for padding waste");
  app.add_flag("--packing", o.packing, "pack sequences (best-fit decreasing, padding-free)");
  app.add_option("--matmul-efficiency", o.matmul_efficiency, "fraction of dense peak large GEMMs reach")
      ->capture_default_str();
  app.add_option("--bandwidth-efficiency", o.bandwidth_efficiency, "fraction of datasheet bandwidth reached")
      ->capture_default_str();
  app.add_option("--kernel-launch-us", o.kernel_launch_us,
                 "host microseconds to dispatch one eager op (0: never host-bound)")
      ->capture_default_str();
  app.add_option("--interconnect-gb-s", o.interconnect_gb_s,
                 "GPU-to-GPU GB/s per direction inside a node (default: the GPU file's NVLink or PCIe)");
  app.add_option("--inter-node-gb-s", o.inter_node_gb_s,
                 "GB/s per GPU and direction between nodes (one 400 Gb/s NIC per GPU: 50)")
      ->capture_default_str();
  app.add_option("--interconnect-efficiency", o.interconnect_efficiency,
                 "fraction of those links NCCL's rings reach")
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"headroom throughput_calculator: FLOPs per token, MFU, and predicted step time and tokens/s"};
  options o;
  add_options(app, o);
  cli::arrange_help(app, "throughput_calculator");
  return cli::run(app, argc, argv, [&]() {
    cli::note_given(app, o.run);
    return calculate(o);
  });
}
