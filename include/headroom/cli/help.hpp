// SPDX-License-Identifier: MIT
// --help in groups, each option with the type of its value: one table names every flag of the programs, its
// group and its type. The constraints between flags are enforced when parsing (the error names both flags),
// so the help does not list them. docs/cli.md is generated from this help and checked current by the tests.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace headroom::cli {

/// The help's groups, in the order printed.
inline constexpr std::string_view help_groups[] = {
    "Model",
    "Method and adapters",
    "Precision and optimizer",
    "Workload",
    "Loss",
    "Files",
    "Parallelism",
    "Machine",
    "Schedule",
    "Output",
    "Help",
};

/// One flag: its help group and the type of its value ("" for a switch).
struct flag_help {
  std::string_view flag;
  std::string_view group;
  std::string_view type;
};

// A data table: one row per flag of memory_calculator, throughput_calculator and lr_schedule.
inline constexpr flag_help flag_table[] = {
    {"--help", "Help", ""},
    {"--preset", "Model", "NAME"},
    {"--config", "Model", "FILE"},
    {"--model", "Model", "ID"},
    {"--preset-dir", "Model", "DIR"},
    {"--exact-params", "Model", ""},
    {"--list-presets", "Model", ""},
    {"--method", "Method and adapters", "CHOICE"},
    {"--rank", "Method and adapters", "INT"},
    {"--peft-type", "Method and adapters", "CHOICE"},
    {"--targets", "Method and adapters", "MODULES"},
    {"--ia3-feedforward", "Method and adapters", "MODULES"},
    {"--virtual-tokens", "Method and adapters", "INT"},
    {"--encoder-hidden-size", "Method and adapters", "INT"},
    {"--prefix-projection", "Method and adapters", ""},
    {"--init-lora-weights", "Method and adapters", "CHOICE"},
    {"--adapter-dtype", "Method and adapters", "CHOICE"},
    {"--lora-dropout", "Method and adapters", "FRACTION"},
    {"--no-double-quant", "Method and adapters", ""},
    {"--train-vision-tower", "Method and adapters", ""},
    {"--precision", "Precision and optimizer", "CHOICE"},
    {"--optimizer", "Precision and optimizer", "NAME"},
    {"--optim-block-size", "Precision and optimizer", "INT"},
    {"--optimizer-impl", "Precision and optimizer", "CHOICE"},
    {"--sgd-momentum", "Precision and optimizer", ""},
    {"--optimizer-in-backward", "Precision and optimizer", ""},
    {"--grad-accum-buffer", "Precision and optimizer", ""},
    {"--batch", "Workload", "INT"},
    {"--seq-len", "Workload", "INT"},
    {"--grad-accum", "Workload", "INT"},
    {"--images", "Workload", "INT"},
    {"--lengths", "Workload", "FILE"},
    {"--batching", "Workload", "CHOICE"},
    {"--packing", "Workload", ""},
    {"--tokens", "Workload", "NUMBER"},
    {"--activation-formula", "Workload", "CHOICE"},
    {"--attention", "Workload", "CHOICE"},
    {"--eager-attention", "Workload", ""},
    {"--attention-dropout", "Workload", ""},
    {"--checkpointing", "Workload", "CHOICE"},
    {"--no-checkpointing", "Workload", ""},
    {"--non-reentrant", "Workload", ""},
    {"--offload-scope", "Workload", "CHOICE"},
    {"--compile", "Workload", ""},
    {"--load-path", "Workload", "CHOICE"},
    {"--loss", "Loss", "CHOICE"},
    {"--ce-chunk", "Loss", "INT"},
    {"--fused-ce", "Loss", "CHOICE"},
    {"--output-chunks", "Loss", "INT"},
    {"--training-args", "Files", "FILE"},
    {"--recipe", "Files", "FILE"},
    {"--set", "Files", "KEY=VALUE"},
    {"--deepspeed", "Files", "FILE"},
    {"--accelerate-config", "Files", "FILE"},
    {"--framework", "Files", "CHOICE"},
    {"--gpus", "Parallelism", "INT"},
    {"--zero", "Parallelism", "CHOICE"},
    {"--fsdp", "Parallelism", "CHOICE"},
    {"--fsdp-version", "Parallelism", "CHOICE"},
    {"--fsdp-prefetch", "Parallelism", "INT"},
    {"--sync-each-batch", "Parallelism", ""},
    {"--fsdp-use-orig-params", "Parallelism", ""},
    {"--offload-optimizer", "Parallelism", ""},
    {"--offload-params", "Parallelism", ""},
    {"--reduce-bucket-size", "Parallelism", "INT"},
    {"--overlap-comm", "Parallelism", "CHOICE"},
    {"--nccl-channels", "Parallelism", "INT"},
    {"--ddp-bucket-view", "Parallelism", ""},
    {"--tp", "Parallelism", "INT"},
    {"--sp", "Parallelism", ""},
    {"--pp", "Parallelism", "INT"},
    {"--gpu", "Machine", "NAME"},
    {"--device", "Machine", "CHOICE"},
    {"--torch", "Machine", "CHOICE"},
    {"--overhead-gb", "Machine", "GB"},
    {"--budget-gb", "Machine", "GB"},
    {"--tokens-per-second", "Machine", "NUMBER"},
    {"--flops-convention", "Machine", "CHOICE"},
    {"--matmul-efficiency", "Machine", "FRACTION"},
    {"--bandwidth-efficiency", "Machine", "FRACTION"},
    {"--kernel-launch-us", "Machine", "NUMBER"},
    {"--interconnect-gb-s", "Machine", "NUMBER"},
    {"--inter-node-gb-s", "Machine", "NUMBER"},
    {"--interconnect-efficiency", "Machine", "FRACTION"},
    {"--type", "Schedule", "CHOICE"},
    {"--peak", "Schedule", "NUMBER"},
    {"--warmup", "Schedule", "NUMBER"},
    {"--total", "Schedule", "INT"},
    {"--decay-steps", "Schedule", "NUMBER"},
    {"--stable-steps", "Schedule", "NUMBER"},
    {"--decay-type", "Schedule", "CHOICE"},
    {"--warmup-type", "Schedule", "CHOICE"},
    {"--min-lr-ratio", "Schedule", "FRACTION"},
    {"--num-cycles", "Schedule", "NUMBER"},
    {"--min-lr", "Schedule", "NUMBER"},
    {"--min-lr-rate", "Schedule", "FRACTION"},
    {"--lr-end", "Schedule", "NUMBER"},
    {"--power", "Schedule", "NUMBER"},
    {"--json", "Output", ""},
    {"--explain", "Output", ""},
    {"--gib", "Output", ""},
    {"--csv", "Output", ""},
    {"--svg", "Output", "FILE"},
    {"--sweep", "Output", "SPEC"},
    {"--fit", "Output", "CHOICE"},
    {"--solve-gpus", "Output", "INT"},
    {"--smoke", "Output", ""},
};

/// Prints the groups in help_groups' order, each option as `--flag TYPE=default` and its description wrapped
/// under it; no Excludes / Needs lists.
class help_formatter : public CLI::Formatter {
 public:
  static constexpr std::size_t width = 110;  ///< the columns of the help, as the code's

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode) const override {
    std::string out = make_description(app) + make_usage(app, std::move(name));
    for (std::string_view group : help_groups) {
      const std::vector<const CLI::Option*> opts = app->get_options(
          [group](const CLI::Option* o) { return o->get_group() == group && o->nonpositional(); });
      if (!opts.empty()) out += make_group(std::string(group), false, opts);
    }
    return out + "\n" + make_footer(app);
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0) return "";
    std::string out = " " + opt->get_type_name();
    if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
    if (opt->get_expected_max() > 1) out += " ...";
    if (opt->get_required()) out += " REQUIRED";
    return out;
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(opt->get_description(), width - get_column_width());
  }

 private:
  static std::string wrap(const std::string& text, std::size_t columns) {
    std::string out, line;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      const std::string word = text.substr(start, end - start);
      if (!line.empty() && line.size() + 1 + word.size() > columns) {
        out += line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
      start = end + 1;
    }
    return out + line;
  }
};

/// The calculators' footer: the exit-code contract and the unit.
inline constexpr const char* calculator_footer =
    "Exit codes: 0 ok, 1 does not fit the budget, 2 bad input (the message names the flag, file or key).\n"
    "GB means 1e9 bytes. Every flag of every program: docs/cli.md.";

/// Gives every option of `app` its group and type from flag_table and installs help_formatter; a flag missing
/// from the table is a programming error (the programs' help test catches it).
inline void arrange_help(CLI::App& app, std::string name, const char* footer = calculator_footer) {
  app.name(std::move(name));
  app.formatter(std::make_shared<help_formatter>());
  app.footer(footer);
  for (CLI::Option* opt : app.get_options()) {
    const flag_help* row = nullptr;
    for (const flag_help& h : flag_table)
      if (opt->check_lname(std::string(h.flag.substr(2)))) row = &h;
    if (row == nullptr) throw std::logic_error("cli::flag_table has no row for " + opt->get_name());
    opt->group(std::string(row->group));
    if (!row->type.empty()) opt->type_name(std::string(row->type));
  }
}

}  // namespace headroom::cli
