// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a YAML file for every YAML reader — a torchtune, axolotl, LLaMA-Factory
// or Unsloth recipe, and an accelerate config — each resolved into a run that is then estimated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <headroom/headroom.hpp>
#include <headroom/recipes/accelerate.hpp>
#include <headroom/recipes/recipe.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const headroom::recipe_options options{};
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const headroom::detail::yaml_doc d = headroom::detail::parse_yaml_text(text, "fuzz.yaml");
    if (d.root.contains("distributed_type")) {
      const headroom::accelerate_config a = headroom::accelerate_from_yaml(d);
      std::vector<std::string> notes;
      const headroom::run_config r = headroom::resolve(headroom::accelerate_request(a, notes));
      (void)headroom::estimate_training(headroom::load_preset("qwen3-1.7b", options.preset_dirs).spec, r);
    } else {
      const headroom::recipe rec = headroom::recipe_from_yaml(d, options);
      (void)headroom::estimate_training(rec.model.spec, rec.args.run);
    }
  } catch (const headroom::input_error&) {
  }
  return 0;
}
