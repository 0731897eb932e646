// SPDX-License-Identifier: MIT
// The printed table and the JSON document (schema in docs/json-schema.md).
#include <headroom/io/config.hpp>
#include <headroom/report/json.hpp>
#include <headroom/report/text.hpp>

#include "catch.hpp"
#include "files.hpp"

using namespace headroom;

using headroom::test::preset;

TEST_CASE("JSON: W04 8B full fine-tuning has static_bytes 128.0e9 and every documented key",
          "[report][worked]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  const training_setup s;
  const nlohmann::json j = static_estimate_json(m, s, estimate_static(m.spec, s));
  CHECK(j.at("schema_version") == json_schema_version);
  CHECK(j.at("params") == 8'000'000'000ull);
  CHECK(j.at("model_params_exact") == 8'030'261'248ull);
  CHECK(j.at("adapter_params") == 0);
  CHECK(j.at("static_bytes") == 128'000'000'000ull);
  CHECK(j.at("total_bytes") == 128'000'000'000ull);
  CHECK(j.at("params_basis") == "nominal");
  CHECK(j.at("qlora_layout").is_null());
  CHECK(j.at("lora").is_null());
  std::uint64_t sum = 0;
  for (const char* key : {"weights", "adapter_weights", "grads", "master", "optimizer", "activations",
                          "logits", "temporaries", "overhead"})
    sum += j.at("buckets").at(key).get<std::uint64_t>();
  CHECK(sum == j.at("total_bytes").get<std::uint64_t>());
}

TEST_CASE("JSON: LoRA r16 reports 41,943,040 adapter params and 16.67e9 static bytes (W10)",
          "[report][worked]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  training_setup s;
  s.method = training_method::lora;
  const nlohmann::json j = static_estimate_json(m, s, estimate_static(m.spec, s));
  CHECK(j.at("adapter_params") == 41'943'040);
  CHECK(j.at("static_bytes") == 16'671'088'640ull);
  CHECK(j.at("lora").at("rank") == 16);
  CHECK(j.at("lora").at("target_modules") == "all-linear");
}

TEST_CASE("JSON: QLoRA says which layout priced the base", "[report]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  training_setup s;
  s.method = training_method::qlora;
  CHECK(static_estimate_json(m, s, estimate_static(m.spec, s)).at("qlora_layout") == "uniform-nominal");
  CHECK(static_estimate_json(m, s, estimate_static(m.spec, s, params_basis::exact)).at("qlora_layout") ==
        "realistic");
}

TEST_CASE("The table prints GB (1e9) and, on request, GiB (2^30), with thousands separators", "[report]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  const training_setup s;
  const static_estimate e = estimate_static(m.spec, s);
  const std::string gb_only = format_static_table(m, s, e, false);
  CHECK(gb_only.find("static GB") != std::string::npos);
  CHECK(gb_only.find("GiB") == std::string::npos);
  CHECK(gb_only.find("8,030,261,248") != std::string::npos);
  CHECK(gb_only.find("128.000") != std::string::npos);
  const std::string both = format_static_table(m, s, e, true);
  CHECK(both.find("static GiB") != std::string::npos);
  CHECK(both.find("119.209") != std::string::npos);  // 128e9 / 2^30
  CHECK(with_commas(0) == "0");
  CHECK(with_commas(999) == "999");
  CHECK(with_commas(1000) == "1,000");
}

TEST_CASE("Explain: each value is one record, printed as a text line and as a JSON item (W08, W09)",
          "[report][worked]") {
  const loaded_model m = preset("llama-3.1-8b-like");
  run_config r;
  r.setup.method = training_method::qlora;
  const training_estimate e = estimate_training(m.spec, r);
  const explanation values = explain_estimate(m, r, e);
  auto find = [&](std::string_view name) {
    for (const explained_value& v : values)
      if (v.name == name) return v;
    FAIL("no explained value " << name);
    return explained_value{};
  };
  const explained_value adapters = find("adapters");  // W09: r·(in + out) over the seven linears, 32 layers
  CHECK(adapters.amount == 41'943'040u);
  CHECK(adapters.unit == explained_unit::parameter);
  CHECK(adapters.formula == "A = Σ r·(in + out) over all-linear at r 16");
  CHECK(adapters.source == "peft lora/layer.py");
  const explained_value weights = find("weights");  // W08: 4.127 bits per nominal parameter
  CHECK(weights.amount == 4'127'000'000u);
  CHECK(weights.formula == "N x 4.127 bits / 8");
  CHECK(find("peak").amount == e.total_bytes().count());
  CHECK(find("grads").amount == e.statics.buckets.grads.count());
  // The text and the JSON render the same records.
  const std::string text = format_explanation(m, r, e);
  const nlohmann::json j = explanation_json(values);
  REQUIRE(j.size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    CHECK(j[i].at("name") == values[i].name);
    CHECK(j[i].at("formula") == values[i].formula);
    CHECK(j[i].at("source") == values[i].source);
    CHECK(j[i].contains("amount") == values[i].amount.has_value());
    CHECK(text.find(values[i].formula) != std::string::npos);
  }
  CHECK(text.find("  adapters A = Σ r·(in + out) over all-linear at r 16 = 41,943,040 parameters (peft "
                  "lora/layer.py)\n") != std::string::npos);
  CHECK(text.find("  weights  N x 4.127 bits / 8 = 4.127 GB (NF4 4 + 8/64 + 32/(64·256) bits, bitsandbytes "
                  "quantize_4bit; course W08)\n") != std::string::npos);
}
