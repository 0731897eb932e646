// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a DeepSpeed ds_config, resolved against fixed training arguments and
// applied to a run that is then estimated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <headroom/headroom.hpp>
#include <headroom/io/deepspeed.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const headroom::loaded_model model =
      headroom::load_preset("qwen3-4b", headroom::preset_search_path());
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const headroom::deepspeed_inputs in{2, 4, 0, true, false, model.spec.shape.hidden_size, ""};
    const headroom::deepspeed_config ds = headroom::deepspeed_from_json(j, in, "fuzz");
    headroom::run_request q;
    q.gpus = 8;
    q.method = headroom::training_method::lora;
    std::vector<std::string> notes, warnings, ignored;
    q = headroom::merge(
        q, headroom::deepspeed_request(ds, headroom::training_method::lora, notes, warnings, ignored));
    const headroom::run_config r = headroom::resolve(q);
    (void)headroom::estimate_training(model.spec, r);
  } catch (const headroom::input_error&) {
  }
  return 0;
}
