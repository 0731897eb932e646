// SPDX-License-Identifier: MIT
// 03_embed: headroom inside your own tool. Load a model, estimate a QLoRA run, print the table and the JSON,
// and find the longest sequence that fits a 24 GB card. It links headroom::compiled and includes one light
// header, so it compiles in about a second; <headroom/headroom.hpp> offers the same functions header-only.
#include <cstdio>

#include <headroom/compiled.hpp>

int main() {
  using namespace headroom;
  const loaded_model model = compiled::load_preset("qwen3-4b");  // or compiled::load_model_config(path)
  run_request request;  // unset knobs take the course's defaults: bf16 mixed, AdamW, full checkpointing
  request.method = training_method::qlora;
  request.seq_len = 4096;
  const run_config run = resolve(request);  // the CLI's rules; resolve(request, framework::trl)
  const training_estimate e = compiled::estimate_training(model.spec, run);
  std::fputs(compiled::format_training_table(model, run, e).c_str(), stdout);
  std::puts(compiled::training_estimate_json(model, run, e).c_str());
  const bytes card(24'000'000'000);  // GB = 1e9 bytes
  const fit_answer longest = compiled::fit_largest(model.spec, run, card, fit_dimension::seq_len);
  std::printf("longest sequence in 24 GB: %llu tokens\n", static_cast<unsigned long long>(longest.largest));
}
