// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a training-args JSON for a fixed model.
#include <cstddef>
#include <cstdint>

#include <headroom/headroom.hpp>
#include <headroom/io/training_args.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const headroom::loaded_model model =
      headroom::load_preset("qwen3-4b", headroom::preset_search_path());
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const headroom::training_args a = headroom::training_args_from_json(j, model, "fuzz");
    (void)headroom::estimate_training(model.spec, a.run);
  } catch (const headroom::input_error&) {
  }
  return 0;
}
