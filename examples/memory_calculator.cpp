// SPDX-License-Identifier: MIT
// memory_calculator: the course lab's calculator (L3.1) in C++. Training memory per bucket (static
// state, activations, logits, overhead) and its peak for full fine-tuning, LoRA and QLoRA, from a
// preset or a Hugging Face config.json; with a budget, whether it fits and what to change.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <headroom/cli/run_options.hpp>
#include <headroom/headroom.hpp>
#include <headroom/report/svg.hpp>

namespace {

using namespace headroom;

struct options {
  cli::run_options run;
  std::string budget_gb;
  std::string fit;
  std::string solve_gpus;
  std::string sweep;
  std::string svg;
  std::string lengths;
  std::string batching;
  bool csv = false;
  bool explain = false;
  bool json = false;
  bool gib = false;
  bool smoke = false;
  bool list_presets = false;
};

// ---- --smoke: the course's static numbers (worked-numbers.md), each rounded as the course prints it.
struct smoke_run {
  int failures = 0;
  void check(const char* id, const std::string& what, double got, double want, int decimals) {
    const double scale = std::pow(10.0, decimals);
    const bool ok = std::fabs(std::round(got * scale) / scale - want) < 0.5 / scale;
    if (!ok) ++failures;
    fmt::print("{} {:<4} {:<52} got {:.{}f} want {:.{}f}\n", ok ? "ok  " : "FAIL", id, what, got, decimals,
               want, decimals);
  }
};

double gb(bytes b) { return in_gb(b); }

// The course's route A (bf16 weights, fp32 master, AdamW) with one change.
template <class Change>
training_setup setup_with(Change change) {
  training_setup s;
  change(s);
  return s;
}
static_estimate est(const model_spec& spec, const training_setup& s) { return estimate_static(spec, s); }
const training_setup lora = setup_with([](training_setup& s) { s.method = training_method::lora; });
const training_setup qlora = setup_with([](training_setup& s) { s.method = training_method::qlora; });

// W01-W12: the static buckets of the 8B model under each route, method and optimizer.
void smoke_static(smoke_run& r, const std::vector<std::filesystem::path>& dirs) {
  const loaded_model m8 = load_preset("llama-3.1-8b-like", dirs);
  const training_setup full;
  const double n8 = static_cast<double>(m8.spec.nominal_params);
  r.check("W01", "route A bytes/param", gb(est(m8.spec, full).buckets.static_bytes()) * 1e9 / n8, 16, 0);
  r.check("W02", "route B bytes/param",
          gb(est(m8.spec, setup_with([](training_setup& s) { s.precision = precision_route::fp32_autocast; }))
                 .buckets.static_bytes()) *
              1e9 / n8,
          16, 0);
  r.check("W03", "8B full + bf16 grad-accumulation buffer, GB",
          gb(est(m8.spec, setup_with([](training_setup& s) { s.grad_accum_buffer = true; }))
                 .buckets.static_bytes()),
          144.0, 1);
  r.check("W04", "8B full fine-tuning, GB", gb(est(m8.spec, full).buckets.static_bytes()), 128.0, 1);
  r.check("W04", "8B exact (8.03B) full fine-tuning, GB",
          gb(estimate_static(m8.spec, full, params_basis::exact).buckets.static_bytes()), 128.5, 1);
  model_spec seven = m8.spec;
  seven.nominal_params = 7'000'000'000;
  r.check("W04", "7B full fine-tuning, GB", gb(est(seven, full).buckets.static_bytes()), 112.0, 1);
  r.check("W05", "third route (pure bf16) bytes/param",
          gb(est(m8.spec, setup_with([](training_setup& s) { s.precision = precision_route::bf16_pure; }))
                 .buckets.static_bytes()) *
              1e9 / n8,
          8, 0);
  const auto adam8 = setup_with([](training_setup& s) {
    s.optimizer = optimizer_by_name("adamw_8bit");
    s.optim.block_size = 2048;  // the course's bitsandbytes generation
  });
  r.check("W06", "8-bit AdamW state, 8B, block 2048, GB", gb(est(m8.spec, adam8).buckets.optimizer), 16.03,
          2);
  r.check("W06", "8B full FT with 8-bit AdamW, GB", gb(est(m8.spec, adam8).buckets.static_bytes()), 80.03, 2);
  r.check("W07", "LoRA frozen base bytes/param", gb(est(m8.spec, lora).buckets.weights) * 1e9 / n8, 2, 0);
  r.check("W08", "NF4 + double quant bits/param", nf4_bits_per_param(nf4_layout{}).value(), 4.127, 3);
  const auto e_lora = est(m8.spec, lora);
  r.check("W09", "adapters, Llama-3.1-8B r16 all-linear", static_cast<double>(e_lora.adapter_params.count()),
          41'943'040, 0);
  r.check("W10", "LoRA 8B weights, GB", gb(e_lora.buckets.weights), 16.0, 1);
  r.check("W10", "LoRA 8B adapter state, GB", gb(e_lora.buckets.static_bytes() - e_lora.buckets.weights),
          0.671, 3);
  r.check("W10", "LoRA 8B total, GB", gb(e_lora.buckets.static_bytes()), 16.67, 2);
  const auto e_q = est(m8.spec, qlora);
  r.check("W11", "QLoRA 8B weights, GB", gb(e_q.buckets.weights), 4.127, 3);
  r.check("W11", "QLoRA 8B total, GB", gb(e_q.buckets.static_bytes()), 4.798, 3);
  r.check("W12", "LoRA 8B optimizer state, GB", gb(e_lora.buckets.optimizer), 0.34, 2);
  const auto lora8bit = setup_with([](training_setup& s) {
    s.method = training_method::lora;
    s.optimizer = optimizer_by_name("adamw_8bit");
    s.optim.block_size = 2048;
  });
  r.check("W12", "what 8-bit saves on LoRA 8B, GB",
          gb(e_lora.buckets.optimizer - est(m8.spec, lora8bit).buckets.optimizer), 0.2515, 4);
}

// W13-W14: the course's Table 1, adapters and static totals for four model sizes.
void smoke_table_1(smoke_run& r, const std::vector<std::filesystem::path>& dirs) {
  const training_setup full;
  struct table_row {
    const char* preset;
    double adapters, full, lora, qlora;
  };
  for (const table_row& row : {table_row{"llama-3.2-1b-like", 11'272'192, 16.00, 2.18, 0.696},
                               table_row{"llama-3.1-8b-like", 41'943'040, 128.00, 16.67, 4.798},
                               table_row{"qwen3-32b-like", 134'217'728, 512.00, 66.15, 18.655},
                               table_row{"llama-3.1-70b-like", 207'093'760, 1120.00, 143.31, 39.425}}) {
    const model_spec spec = load_preset(row.preset, dirs).spec;
    const std::string name = row.preset;
    r.check("W13", name + " adapters r16", static_cast<double>(est(spec, lora).adapter_params.count()),
            row.adapters, 0);
    r.check("W14", name + " full, GB", gb(est(spec, full).buckets.static_bytes()), row.full, 2);
    r.check("W14", name + " LoRA, GB", gb(est(spec, lora).buckets.static_bytes()), row.lora, 2);
    r.check("W14", name + " QLoRA, GB", gb(est(spec, qlora).buckets.static_bytes()), row.qlora, 3);
  }
}

// W24-W25: Adafactor's factored state and Lion's single moment.
void smoke_optimizers(smoke_run& r, const std::vector<std::filesystem::path>& dirs) {
  const loaded_model m8 = load_preset("llama-3.1-8b-like", dirs);
  const training_setup full;
  const param_tensor mlp{module_name::up_proj, tensor_role::linear_weight, 14336, 4096, 1};
  r.check("W24", "Adafactor state of a 4096x14336 matrix, bytes",
          static_cast<double>(optimizer_state_bytes(optimizer_by_name("adafactor"), mlp, 4).count()), 73'728,
          0);
  const double adam = static_cast<double>(est(m8.spec, full).buckets.optimizer.count());
  const double lion = static_cast<double>(
      est(m8.spec, setup_with([](training_setup& s) { s.optimizer = optimizer_by_name("lion_32bit"); }))
          .buckets.optimizer.count());
  r.check("W25", "Lion state / AdamW state", lion / adam, 0.5, 2);
}

// W15-W20: the activation table (Qwen3-4B, T 2048, B 1) by the course's formula, and the logits.
void smoke_dynamic(smoke_run& r, const std::vector<std::filesystem::path>& dirs) {
  const model_shape q4 = load_preset("qwen3-4b", dirs).spec.shape;
  activation_config a;
  a.formula = activation_formula::korthikanti;
  const auto acts = [&](attention_impl at, checkpointing ck) {
    a.attention = at;
    a.ckpt = ck;
    return gb(estimate_activations(q4, lora, a).gpu);
  };
  r.check("W15", "Qwen3-4B sbh at T 2048", static_cast<double>(block_input_bytes(q4, lora, a).count()) / 2,
          5'242'880, 0);
  r.check("W16", "eager attention, no checkpointing, GB", acts(attention_impl::eager, checkpointing::none),
          30.58, 2);
  r.check("W17", "FlashAttention, no checkpointing, GB", acts(attention_impl::flash, checkpointing::none),
          6.42, 2);
  r.check("W18", "checkpointing, GB", acts(attention_impl::flash, checkpointing::full), 0.56, 2);
  activation_config long_seq;
  long_seq.seq_len = 8192;
  const loss_timeline lg = logits_inventory(q4, lora, long_seq, loss_config{});
  const auto event = [&](std::string_view name) {
    for (const loss_event& e : lg)
      if (e.name == name) return gb(e.amount);
    return 0.0;
  };
  r.check("W20", "fp32 logits, V 151,936, T 8,192, GB", event("fp32 logits"), 4.98, 2);
  r.check("W20", "bf16 logits, GB", event("logits"), 2.49, 2);
}

int smoke(const std::vector<std::filesystem::path>& dirs) {
  smoke_run r;
  smoke_static(r, dirs);
  smoke_table_1(r, dirs);
  smoke_optimizers(r, dirs);
  smoke_dynamic(r, dirs);
  fmt::print("{} of the course's numbers missed\n", r.failures);
  return r.failures == 0 ? cli::exit_ok : cli::exit_bad_input;
}

/// The run as the flags and files describe it, with what the files said, before any answer is computed.
struct prepared_run {
  cli::loaded_run in;
  std::optional<gpu_info> gpu;
  run_config run;
  std::vector<std::string> launch_notes;  ///< --framework, --accelerate-config
  std::vector<std::string> ds_notes, ds_warnings, ds_ignored;
  batching_config batching;
  std::optional<peak_micro_batch> by_lengths;  ///< the micro-batch a dataset's lengths make the peak
  std::uint64_t max_length = 0;                ///< the run's max_length before --lengths replaced it
  std::optional<bytes> budget;
  std::optional<fit_dimension> fit;  ///< --fit, parsed once
};

// A dataset's lengths: the micro-batch that sets the peak replaces --batch x --seq-len.
void apply_lengths(prepared_run& p, const options& o) {
  run_config& r = p.run;
  p.batching = p.in.args ? p.in.args->batching : batching_config{};
  if (!o.batching.empty()) {
    if (o.lengths.empty()) throw input_error("--batching", "needs --lengths FILE");
    if (p.in.args)
      throw input_error("--batching", "comes from the training-args file (packing, padding_free)");
    p.batching.layout = parse_choice(batch_layout_names, o.batching, "--batching");
  }
  if (!o.lengths.empty()) {
    if (!o.fit.empty() || !o.sweep.empty())
      throw input_error("--lengths",
                        "sets the micro-batch shape; it cannot be combined with --fit or --sweep");
    p.by_lengths =
        peak_batch_shape(load_lengths(o.lengths), r.activations.batch, r.activations.seq_len, p.batching);
    if (p.by_lengths->layout == batch_layout::padding_free &&
        r.activations.attention != attention_impl::flash)
      throw input_error("--batching", "padding-free batches need FlashAttention (--attention flash)");
  }
  p.max_length = r.activations.seq_len;
  if (p.by_lengths) {
    r.activations.batch = p.by_lengths->batch;
    r.activations.seq_len = p.by_lengths->seq_len;
  }
}

// The run from what prepare loaded: the file's or the flags' (under `under`'s profile when given, else
// --framework's), launched (the launcher, DeepSpeed), then a dataset's lengths.
void build_run(prepared_run& p, const options& o, std::optional<framework> under = std::nullopt) {
  const training_args* args = p.in.args && !under ? &*p.in.args : nullptr;
  cli::launched_run l =
      cli::launch(o.run, cli::layers_of(o.run, args, under ? under : cli::framework_flag(o.run)),
                  p.in.model.spec.shape, p.in.args && p.in.args->deepspeed, p.gpu);
  p.run = std::move(l.run);
  p.launch_notes = std::move(l.launch_notes);
  p.ds_notes = std::move(l.ds_notes);
  p.ds_warnings = std::move(l.ds_warnings);
  p.ds_ignored = std::move(l.ds_ignored);
  apply_lengths(p, o);
}

// Which framework's defaults the estimate stands on; without one, every profile that moves the peak by more
// than 5% is named with its peak (docs/frameworks.md).
std::string profile_summary(const prepared_run& p, const options& opts, nlohmann::json& j) {
  const cli::loaded_run& in = p.in;
  const cli::run_options& o = opts.run;
  if (in.source) {
    const std::string name(choice_name(framework_names, *in.source));
    j["profile"] = {{"framework", name}, {"from", "recipe"}};
    return "profile    " + name + " (the recipe's framework and its defaults)\n";
  }
  if (!o.framework.empty()) {
    j["profile"] = {{"framework", o.framework}, {"from", "--framework"}};
    return "";  // cli::launch's note names it
  }
  if (in.args) {
    const bool sft = in.args->config_class == "SFTConfig";
    j["profile"] = {{"framework", sft ? "trl" : "hf-trainer"}, {"from", "training-args"}};
    return std::string("profile    ") +
           (sft ? "trl (SFTConfig's defaults" : "hf-trainer (TrainingArguments' defaults") +
           (in.args->run.setup.method != training_method::full ? "; PEFT's for the adapters)\n" : ")\n");
  }
  std::string text = std::string("profile    ") + cli::assumed_profile + "\n";
  nlohmann::json moves = nlohmann::json::array();
  const auto run_under = [&](framework f) {  // the same command line under f's profile
    prepared_run alt = p;
    build_run(alt, opts, f);
    return alt.run;
  };
  for (const cli::profile_move& m : cli::profile_moves(p.run, run_under, [&](const run_config& run) {
         return static_cast<double>(estimate_training(p.in.model.spec, run).total_bytes().count());
       })) {
    const bytes total(static_cast<std::uint64_t>(m.value));
    moves.push_back({{"framework", m.framework}, {"total_bytes", total.count()}, {"change", m.change}});
    text += fmt::format("           under --framework {:<13} {:>9} GB ({:+.0f}%)\n", m.framework,
                        gb_digits(total), m.change * 100);
  }
  j["profile"] = {{"framework", "headroom-defaults"}, {"from", "assumed"}, {"moves_over_5_percent", moves}};
  return text;
}

prepared_run prepare(const options& o, const std::vector<std::filesystem::path>& dirs) {
  prepared_run p;
  if (!o.run.gpu.empty()) p.gpu = load_gpu(o.run.gpu, dirs);
  p.in = cli::load_run(o.run, dirs);
  build_run(p, o);
  if (p.gpu) p.budget = p.gpu->memory();
  if (!o.budget_gb.empty()) p.budget = cli::gb_flag("--budget-gb", o.budget_gb);
  if (!o.fit.empty()) p.fit = parse_choice(fit_dimension_names, o.fit, "--fit");
  if (p.fit && !p.budget) throw input_error("--fit", "needs a budget: --gpu NAME or --budget-gb G");
  return p;
}

/// What the program prints: one JSON document, or the text.
struct report {
  nlohmann::json json;
  std::string text;
};

// What the files and the dataset said: the lengths' peak batch, the explanation, the training-args, DeepSpeed
// and launcher notes.
void describe_inputs(report& out, const prepared_run& p, const options& o, const training_estimate& e) {
  if (p.by_lengths) {
    const peak_micro_batch& b = *p.by_lengths;
    const std::string why = peak_batch_reason(b, p.max_length, p.batching);
    out.json["lengths"] = {{"file", o.lengths},
                           {"sequences", b.sequences},
                           {"longest", b.longest},
                           {"truncated", b.truncated},
                           {"max_length", p.max_length},
                           {"batching", choice_name(batch_layout_names, b.layout)},
                           {"peak_batch", b.batch},
                           {"peak_seq_len", b.seq_len},
                           {"reason", why}};
    out.text += fmt::format("lengths    {} sequences from {}: {}\n", b.sequences, o.lengths, why);
    if (o.explain) out.text += "           formula: " + std::string(peak_batch_formula(b.layout)) + "\n";
  }
  if (o.explain) {
    const explanation values = explain_estimate(p.in.model, p.run, e);  // one list, printed both ways
    out.json["explain"] = explanation_json(values);
    out.text += "\n" + format_explanation(p.in.model, p.run, values);
  }
  if (const std::optional<training_args>& args = p.in.args) {  // what it said, assumed and ignored
    out.json["training_args"] = {{"read_as", args->read_as},
                                 {"config_class", args->config_class},
                                 {"notes", args->notes},
                                 {"warnings", args->warnings},
                                 {"ignored_fields", args->ignored},
                                 {"lr_scheduler_type", args->lr_scheduler_type},
                                 {"learning_rate", args->learning_rate}};
    out.text += "args: read as: " + args->read_as + "\n";
    for (const std::string& line :
         cli::file_report("args: ", args->notes, args->warnings, "args: ignored fields", args->ignored))
      out.text += line + "\n";
  }
  if (!o.run.deepspeed.empty()) {
    out.json["deepspeed"] = {{"file", o.run.deepspeed},
                             {"notes", p.ds_notes},
                             {"warnings", p.ds_warnings},
                             {"ignored_keys", p.ds_ignored}};
    for (const std::string& line :
         cli::file_report("", p.ds_notes, p.ds_warnings, "deepspeed: ignored keys", p.ds_ignored))
      out.text += line + "\n";
  }
  if (!p.launch_notes.empty()) out.json["launch_notes"] = p.launch_notes;
  for (const std::string& n : p.launch_notes) out.text += n + "\n";
}

// --solve-gpus: the fewest GPUs for each data-parallel layout, and the cheapest.
int solve_gpus(report& out, const prepared_run& p, const options& o) {
  if (!p.budget) throw input_error("--solve-gpus", "needs a budget: --gpu NAME or --budget-gb G");
  const std::uint64_t most =
      o.solve_gpus.empty() ? 1024 : cli::parse_count("--solve-gpus", o.solve_gpus, 1u << 16);
  const gpu_plan plan = plan_gpus(p.in.model.spec, p.run, *p.budget, most);
  out.text +=
      fmt::format("gpus       fewest GPUs with {} each (tensor {} x pipeline {}):\n", gb_text(*p.budget),
                  p.run.parallel.tensor_parallel, p.run.parallel.pipeline_parallel);
  nlohmann::json rows = nlohmann::json::array();
  for (const layout_gpus& row : plan.layouts) {
    rows.push_back({{"layout", row.layout}, {"gpus", row.gpus}});
    out.text += fmt::format("           {:<38} {}\n", row.layout,
                            row.gpus == 0 ? std::string("does not fit") : std::to_string(row.gpus));
  }
  out.json["gpus_needed"] = rows;
  if (plan.cheapest.gpus == 0) return cli::exit_does_not_fit;
  out.json["cheapest"] = {{"layout", plan.cheapest.layout}, {"gpus", plan.cheapest.gpus}};
  out.text += fmt::format("cheapest   {} on {} GPU(s); the simplest layout that fits is {} on {}\n",
                          plan.cheapest.layout, plan.cheapest.gpus, plan.simplest.layout, plan.simplest.gpus);
  return cli::exit_ok;
}

// The advisor's answer for a run over budget, into the report.
advice add_advice(report& out, const prepared_run& p, const run_config& r) {
  advice a = advise(p.in.model.spec, r, *p.budget, advisor_options{!p.gpu || p.gpu->bf16});
  out.json["advice"] = advice_json(a);
  out.text += format_advice(a, *p.budget);
  return a;
}

// --fit: the exact boundary (the answer fits, one more does not). When not even 1 fits, the advisor's lever
// at 1, and the boundary that lever gives.
int fit(report& out, const prepared_run& p, fit_dimension d) {
  const bool seq = d == fit_dimension::seq_len;
  const fit_answer a = fit_largest(p.in.model.spec, p.run, *p.budget, d);
  out.json[seq ? "max_seq_len" : "max_batch"] = a.largest;
  out.text +=
      fmt::format("fit        longest {} that fits {}: {} ({} needs {})\n", seq ? "seq-len" : "micro-batch",
                  gb_text(*p.budget), a.largest, a.largest + 1, gb_text(a.next_total));
  if (a.largest != 0) return cli::exit_ok;
  run_config smallest = p.run;
  (seq ? smallest.activations.seq_len : smallest.activations.batch) = 1;
  const advice advised = add_advice(out, p, smallest);
  if (advised.found) {
    const std::uint64_t with = fit_largest(p.in.model.spec, advised.config, *p.budget, d).largest;
    out.json[seq ? "max_seq_len_with_advice" : "max_batch_with_advice"] = with;
    out.text += fmt::format("fit        with that advice, the longest {} that fits: {}\n",
                            seq ? "seq-len" : "micro-batch", with);
  }
  return cli::exit_does_not_fit;
}

// The question the flags asked beyond the estimate: GPUs, a boundary, or (over budget) what to change.
int answer(report& out, const prepared_run& p, const options& o, const CLI::App& app,
           const training_estimate& e) {
  if (app.count("--solve-gpus") > 0) return solve_gpus(out, p, o);
  if (p.fit) return fit(out, p, *p.fit);
  if (!p.budget || fits(e, *p.budget)) return cli::exit_ok;
  (void)add_advice(out, p, p.run);
  return cli::exit_does_not_fit;
}

// The chart's second line: the run that was swept, as the table's header lines name it.
std::string run_line(const run_config& r, bool seq, const std::optional<gpu_info>& gpu) {
  const activation_config& a = r.activations;
  const parallel_config& p = r.parallel;
  std::string layout = p.gpus() == 1 ? "1 GPU" : fmt::format("{} GPUs", p.gpus());
  if (p.shard != sharding::none) layout += ", " + std::string(choice_name(sharding_names, p.shard));
  if (p.tensor_parallel > 1) layout += fmt::format(", tp {}", p.tensor_parallel);
  if (p.pipeline_parallel > 1) layout += fmt::format(", pp {}", p.pipeline_parallel);
  return fmt::format("{}micro-batch {} x seq-len {} | {} | loss {} | {} | checkpointing {} | GB = 1e9 bytes",
                     gpu ? gpu->name + " | " : "", seq ? std::to_string(a.batch) : "swept",
                     seq ? "swept" : std::to_string(a.seq_len),
                     choice_name(precision_names, r.setup.precision), choice_name(loss_names, r.loss.impl),
                     layout, choice_name(checkpointing_names, a.ckpt));
}

void write_chart(const loaded_model& model, const prepared_run& p, const options& o, bool seq,
                 const std::vector<std::string>& xs, const std::vector<chart_series>& series) {
  stacked_chart c;
  c.title =
      fmt::format("Peak memory by bucket: {}, {}", model.name, choice_name(method_names, p.run.setup.method));
  c.subtitle = run_line(p.run, seq, p.gpu);
  c.x_label = seq ? "sequence length (tokens)" : "micro-batch";
  c.y_label = "memory at the peak phase";
  c.unit = "GB";
  c.xs = xs;
  c.series = series;
  if (p.budget) {
    c.capacity = in_gb(*p.budget);
    c.capacity_name = p.gpu && o.budget_gb.empty() ? p.gpu->name : "budget";
  }
  const cli::run_options& r = o.run;
  cli::write_output_file("--svg", o.svg, svg_stacked_chart(c),
                         {r.config, r.model, r.recipe, r.args_file, r.deepspeed, r.accelerate, o.lengths});
}

/// One estimate per swept value: CSV rows or a compact table, and an SVG chart with --svg.
int sweep(const loaded_model& model, const prepared_run& p, const options& o) {
  const cli::sweep_spec spec = cli::parse_sweep(o.sweep.empty() ? "seq-len=512:32768:x2" : o.sweep);
  const bool seq = spec.dimension == "seq-len";
  const run_config& base = p.run;
  const std::optional<bytes>& budget = p.budget;
  std::vector<std::string> xs;
  std::vector<chart_series> series;
  for (const bucket_field& f : bucket_fields) series.push_back({std::string(f.name), {}});
  std::string csv = std::string(seq ? "seq_len" : "batch");
  for (const bucket_field& f : bucket_fields) csv += "," + std::string(f.name);
  csv += ",total_bytes,peak_phase" + std::string(budget ? ",fits" : "") + "\n";
  std::string table;
  std::size_t over = 0;
  std::optional<std::uint64_t> largest_fit;
  for (std::uint64_t v : spec.values) {
    run_config r = base;
    (seq ? r.activations.seq_len : r.activations.batch) = v;
    const training_estimate e = estimate_training(model.spec, r);
    const memory_buckets& b = e.at_peak();
    xs.push_back(std::to_string(v));
    csv += std::to_string(v);
    for (std::size_t k = 0; k < bucket_fields.size(); ++k) {
      const bytes part = b.*bucket_fields[k].member;
      series[k].values.push_back(in_gb(part));
      csv += "," + std::to_string(part.count());
    }
    const bool ok = !budget || fits(e, *budget);
    if (!ok) ++over;
    if (ok && budget && (!largest_fit || v > *largest_fit)) largest_fit = v;
    csv += "," + std::to_string(e.total_bytes().count()) + "," +
           std::string(choice_name(phase_names, e.peak_phase)) +
           (budget ? std::string(ok ? ",true" : ",false") : std::string()) + "\n";
    table +=
        fmt::format("{:>10} {:>12} GB  {}{}\n", v, gb_digits(e.total_bytes()),
                    choice_name(phase_names, e.peak_phase), budget ? (ok ? "  fits" : "  does not fit") : "");
  }
  if (!o.svg.empty()) write_chart(model, p, o, seq, xs, series);
  if (o.csv) {
    fmt::print("{}", csv);
  } else {
    fmt::print("{:>10} {:>15}  peak phase\n{}", seq ? "seq-len" : "batch", "total", table);
    if (budget)
      fmt::print("budget     {}: {} of {} values do not fit{}\n", gb_text(*budget), over, spec.values.size(),
                 largest_fit ? fmt::format("; the largest that fits is {} {}", seq ? "seq-len" : "batch",
                                           *largest_fit)
                             : std::string());
    if (!o.svg.empty()) fmt::print("chart      {}\n", o.svg);
  }
  return over == 0 ? cli::exit_ok : cli::exit_does_not_fit;
}

// Options that ask different questions, or one that needs another, refused naming both (issue 31,
// SI-06..08, SI-10..12): each was answered by dropping one of them.
void check_program_flags(const CLI::App& app, const options& o) {
  const bool solve = app.count("--solve-gpus") > 0;
  const auto one_of = [](const std::string& a, const std::string& b) {
    throw input_error(a, "and " + b + " ask different questions: give one of them");
  };
  if (!o.fit.empty() && !o.sweep.empty()) one_of("--fit", "--sweep");
  if (!o.fit.empty() && !o.svg.empty()) one_of("--fit", "--svg");
  if (!o.fit.empty() && solve) one_of("--fit", "--solve-gpus");
  if (solve && (!o.sweep.empty() || !o.svg.empty()))
    one_of("--solve-gpus", o.sweep.empty() ? "--svg" : "--sweep");
  if (o.csv && o.sweep.empty()) throw input_error("--csv", "needs --sweep: the CSV rows are a sweep's");
  if (!o.list_presets && !o.smoke) return;
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() > 0 && name != "--list-presets" && name != "--smoke" && name != "--preset-dir")
      throw input_error(o.smoke ? "--smoke" : "--list-presets", "takes no other option (got " + name + ")");
  }
}

int calculate(const CLI::App& app, const options& o) {
  check_program_flags(app, o);
  const auto dirs = o.run.search_path();
  if (o.list_presets) {
    for (const auto& n : preset_names(dirs)) fmt::print("{}\n", n);
    return cli::exit_ok;
  }
  if (o.smoke) return smoke(dirs);
  const prepared_run p = prepare(o, dirs);
  const loaded_model& model = p.in.model;
  const training_estimate e = estimate_training(model.spec, p.run);
  if (!o.sweep.empty() || !o.svg.empty()) return sweep(model, p, o);
  report out{training_estimate_json(model, p.run, e, p.budget),
             format_training_table(model, p.run, e, o.gib, p.budget)};
  describe_inputs(out, p, o, e);
  out.text += profile_summary(p, o, out.json);
  const int code = answer(out, p, o, app, e);
  if (o.json)
    fmt::print("{}\n", out.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  else
    fmt::print("{}", cli::printable(out.text));  // a config's name with ESC in it stays text
  return code;
}

void add_options(CLI::App& app, options& o) {
  cli::add_run_options(app, o.run);
  app.add_option("--budget-gb", o.budget_gb,
                 "GPU memory budget: 24 (GB), 24GB, 24GiB; exit 1 if the total exceeds it");
  app.add_option("--fit", o.fit, "seq-len | batch: the largest value that fits the budget");
  app.add_option("--sweep", o.sweep, "seq-len=FROM:TO[:xK|:+K] or batch=...: one estimate per value");
  app.add_option("--lengths", o.lengths,
                 "token lengths of the dataset (CSV or JSON array): the peak micro-batch they make");
  app.add_option("--batching", o.batching,
                 "with --lengths: padded | max-length | packed | padding-free (default padded, or the "
                 "training-args packing)");
  app.add_flag("--explain", o.explain, "follow every number with its formula, shapes and source");
  app.add_flag("--csv", o.csv, "with --sweep: CSV rows of the peak-phase buckets in bytes");
  app.add_option("--svg", o.svg,
                 "write a stacked-bucket chart of the peak against the sweep (default seq-len=512:32768:x2); "
                 "exit 1 when a value exceeds a given budget");
  app.add_option("--solve-gpus", o.solve_gpus, "with a budget: the fewest GPUs per sharding layout, up to N")
      ->expected(0, 1);
  app.add_flag("--json", o.json, "print one JSON object (docs/json-schema.md)");
  app.add_flag("--gib", o.gib, "add a GiB (2^30 bytes) column");
  app.add_flag("--smoke", o.smoke, "assert the course's numbers; non-zero exit on a miss");
  app.add_flag("--list-presets", o.list_presets, "print the preset names found and exit");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"headroom memory_calculator: static training memory per bucket (GB = 1e9 bytes)"};
  options o;
  add_options(app, o);
  cli::arrange_help(app, "memory_calculator");
  return cli::run(app, argc, argv, [&]() {
    cli::note_given(app, o.run);
    return calculate(app, o);
  });
}
