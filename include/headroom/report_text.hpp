// SPDX-License-Identifier: MIT
// The per-bucket table printed by memory_calculator (fmt). GB = 1e9 bytes; GiB = 2^30 on request.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "config_io.hpp"
#include "memory.hpp"

namespace headroom {

/// A human-readable table of one static estimate.
[[nodiscard]] inline std::string format_static_table(const loaded_model& model, const training_setup& s,
                                                     const static_estimate& e, bool with_gib) {
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  line(fmt::format("model      {} ({}), {} parameters from shapes", model.name, model.model_type,
                   with_commas(e.model_params.count())));
  line(fmt::format("method     {} | precision {} | optimizer {}", choice_name(method_names, s.method),
                   choice_name(precision_names, s.precision), s.optimizer.name));
  if (s.method != training_method::full)
    line(fmt::format("adapters   rank {} on {}: {} adapter parameters", s.lora.rank,
                     lora_targets_text(s.lora.targets), with_commas(e.adapter_params.count())));
  line(fmt::format("priced on  {} = {} parameters",
                   e.basis == params_basis::nominal ? "nominal N" : "exact N",
                   with_commas(e.priced_params.count())));
  line("");
  auto row = [&](std::string_view name, bytes b) {
    line(with_gib ? fmt::format("{:<16} {:>12.3f} {:>12.3f}", name, in_gb(b), in_gib(b))
                  : fmt::format("{:<16} {:>12.3f}", name, in_gb(b)));
  };
  line(with_gib ? fmt::format("{:<16} {:>12} {:>12}", "bucket", "GB (1e9 B)", "GiB (2^30 B)")
                : fmt::format("{:<16} {:>12}", "bucket", "GB (1e9 B)"));
  for (const bucket_field& f : bucket_fields) row(f.name, e.buckets.*f.member);
  row("static", e.buckets.static_bytes());
  row("total", e.buckets.total_bytes());
  line("");
  for (const std::string& n : estimate_notes(e, s)) line("note: " + n);
  return out;
}

}  // namespace headroom
