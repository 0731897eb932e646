// SPDX-License-Identifier: MIT
// Example 02: a torchtune recipe in, the estimate out, through the library (headroom::recipes).
// Reads top to bottom: the recipe file → the run it describes → the peak → the same run under each
// framework's defaults. Usage: 02_recipe [RECIPE.yaml] (default: torchtune's 8B LoRA single-device config).
#include <string>

#include <fmt/format.h>

#include <headroom/headroom.hpp>
#include <headroom/recipes/recipe.hpp>

using namespace headroom;

int main(int argc, char** argv) {
  if (argc > 2) {
    fmt::print(stderr, "error: unexpected argument '{}'; usage: 02_recipe [RECIPE.yaml]\n", argv[2]);
    return 2;
  }
  const std::string file =
      argc > 1 ? argv[1]
               : std::string(HEADROOM_EXAMPLE_RECIPES_DIR) + "/tt_llama3_1_8b_lora_single_device.yaml";
  try {
    // 1. Read the file: the framework, the model it names (a preset here), the run and what was assumed.
    const recipe r = load_recipe(file);
    fmt::print("{} recipe, model {}: {} x {} tokens, accumulation {}\n",
               choice_name(framework_names, r.source), r.model.name, r.args.run.activations.batch,
               r.args.run.activations.seq_len, r.args.run.grad_accum_steps);
    fmt::print("  read as: {}\n", r.args.read_as);
    for (const std::string& note : r.args.notes) fmt::print("  note: {}\n", note);

    // 2. Estimate the step's peak on one GPU.
    const training_estimate e = estimate_training(r.model.spec, r.args.run);
    fmt::print("peak {:.3f} GB (allocated {:.3f} GB)\n", in_gb(e.total_bytes()),
               in_gb(e.peak_allocated_bytes()));

    // 3. The same model, method, adapters and batch, resolved under each framework's defaults (request.hpp:
    //    what the request leaves unset comes from the profile).
    const run_config& run = r.args.run;
    run_request same;
    same.method = run.setup.method;
    if (run.setup.method != training_method::full) {
      same.rank = run.setup.lora.rank;
      same.targets = run.setup.lora.targets;
    }
    same.batch = run.activations.batch;
    same.seq_len = run.activations.seq_len;
    same.grad_accum = run.grad_accum_steps;
    same.basis = run.basis;
    for (const auto& [name, id] : framework_names)
      fmt::print("  with {:<13} defaults {:8.3f} GB\n", name,
                 in_gb(estimate_training(r.model.spec, resolve(same, id)).total_bytes()));
  } catch (const input_error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
