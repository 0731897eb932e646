// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a config.json / preset. The loader must answer with a model or an
// input_error; the estimate of whatever loads must answer with numbers or an input_error.
#include <cstddef>
#include <cstdint>

#include <headroom/headroom.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The same bytes as a safetensors header: a count or nullopt, never a crash (an overflow is an
  // input_error).
  try {
    (void)headroom::detail::safetensors_header_values(
        std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const headroom::input_error&) {
  }
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const headroom::loaded_model m = headroom::model_from_config(j, "fuzz");
    headroom::run_config r;
    (void)headroom::estimate_training(m.spec, r);
    r.setup.method = headroom::training_method::qlora;
    r.basis = headroom::params_basis::exact;
    r.activations.attention = headroom::attention_impl::eager;
    (void)headroom::estimate_training(m.spec, r);
  } catch (const headroom::input_error&) {
  }
  return 0;
}
