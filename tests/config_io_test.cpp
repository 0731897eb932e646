// SPDX-License-Identifier: MIT
// The config.json / preset loader: every preset, HF defaults, and errors that name file and key.
#include <algorithm>
#include <string>
#include <vector>

#include <headroom/flops.hpp>
#include <headroom/io/config.hpp>
#include <headroom/peak.hpp>

#include "catch.hpp"
#include "files.hpp"
#include "shapes.hpp"

using namespace headroom;
using namespace headroom::test;

namespace {
const std::vector<std::filesystem::path> source_presets{HEADROOM_PRESET_SOURCE_DIR};

bool same_shape(const model_shape& a, const model_shape& b) {
  return a.hidden_size == b.hidden_size && a.num_attention_heads == b.num_attention_heads &&
         a.num_key_value_heads == b.num_key_value_heads && a.head_dim == b.head_dim &&
         a.intermediate_size == b.intermediate_size && a.num_hidden_layers == b.num_hidden_layers &&
         a.vocab_size == b.vocab_size && a.tie_word_embeddings == b.tie_word_embeddings &&
         a.norms_per_layer == b.norms_per_layer && a.qk_norm == b.qk_norm && a.num_experts == b.num_experts &&
         a.attention == b.attention && a.mlp == b.mlp && a.norm == b.norm && a.residual == b.residual &&
         a.num_experts_per_tok == b.num_experts_per_tok &&
         a.moe_intermediate_size == b.moe_intermediate_size && a.attention_bias == b.attention_bias;
}
}  // namespace

TEST_CASE("Every preset loads, equals the constexpr shape in tests, and has its exact count", "[config_io]") {
  struct row {
    const char* preset;
    model_shape shape;
    std::uint64_t count;
    std::uint64_t nominal;
  };
  const row rows[] = {
      {"llama-3.2-1b-like", llama_3_2_1b, 1'235'814'400, 1'000'000'000},
      {"qwen3-1.7b", qwen3_1_7b, 1'720'574'976, 1'700'000'000},
      {"qwen3-4b", qwen3_4b, 4'022'468'096, 4'000'000'000},
      {"llama-3.1-8b-like", llama_3_1_8b, 8'030'261'248, 8'000'000'000},
      {"qwen3-32b-like", qwen3_32b, 32'762'123'264, 32'000'000'000},
      {"llama-3.1-70b-like", llama_3_1_70b, 70'553'706'496, 70'000'000'000},
      {"llama-3.2-3b", llama_3_2_3b, 3'212'749'824, 0},
      {"llama-2-7b", llama_2_7b, 6'738'415'616, 0},
      {"mistral-7b-v0.3", mistral_7b_v03, 7'248'023'552, 0},
      {"gemma-2-2b", gemma_2_2b, 2'614'341'888, 0},
      {"qwen3-8b", qwen3_8b, 8'190'735'360, 0},
      {"qwen3-14b", qwen3_14b, 14'768'307'200, 0},
      {"qwen3-30b-a3b", qwen3_30b_a3b, 30'532'122'624, 0},
  };
  for (const row& r : rows) {
    INFO(r.preset);
    const loaded_model m = load_preset(r.preset, source_presets);
    CHECK(m.name == r.preset);
    CHECK_FALSE(m.source.empty());
    CHECK(same_shape(m.spec.shape, r.shape));
    CHECK(parameter_count(m.spec.shape).count() == r.count);
    CHECK(m.spec.nominal_params == r.nominal);
  }
  CHECK(preset_names(source_presets).size() == std::size(rows));
}

TEST_CASE("A raw Hugging Face config.json goes through the same loader, with the class defaults",
          "[config_io]") {
  const loaded_model qwen = load_model_config(data_dir / "qwen3-4b-hf-config.json");
  CHECK(qwen.spec.shape.head_dim == 128);  // Qwen3Config default
  CHECK(qwen.spec.nominal_params == 0);
  CHECK(parameter_count(qwen.spec.shape).count() == 4'022'468'096);
  CHECK(estimate_static(qwen.spec, training_setup{}).basis == params_basis::exact);

  const loaded_model gemma = load_model_config(data_dir / "gemma-2-2b-no-tie-key.json");
  CHECK(gemma.spec.shape.tie_word_embeddings);  // Gemma2Config ties by default
  CHECK(parameter_count(gemma.spec.shape).count() == 2'614'341'888);

  const loaded_model tiny = load_model_config(data_dir / "qwen2-style-tiny.json");
  CHECK(tiny.spec.shape.attention_bias);  // Qwen2Attention: bias=True on q, k, v
  CHECK_FALSE(tiny.spec.shape.o_proj_bias);
  // embed 1000·64; per layer q 64·64 + k, v 32·64 each + o 64·64 + biases 64+32+32 + MLP 3·64·128 + norms
  // 2·64.
  const std::uint64_t per_layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + (64 + 32 + 32) + 3 * 64 * 128 + 2 * 64;
  CHECK(parameter_count(tiny.spec.shape).count() == 1000 * 64 + 2 * per_layer + 64);
}

TEST_CASE("Loader errors name the file, the key and what was wrong", "[config_io][errors]") {
  auto load = [](const char* file) { return [file] { (void)load_model_config(data_dir / file); }; };
  require_input_error(load("malformed.json"), "malformed.json", "malformed JSON at line");
  require_input_error(load("negative_heads.json"), "negative_heads.json: /num_attention_heads",
                      "positive integer, got -32");
  require_input_error(load("fractional_layers.json"), "/num_hidden_layers", "got 32.5");
  require_input_error(load("string_hidden.json"), "/hidden_size", "got \"4096\"");
  require_input_error(load("missing_vocab.json"), "/vocab_size", "missing required key");
  require_input_error(load("zero_vocab.json"), "/vocab_size", "got 0");
  require_input_error(load("bad_kv_heads.json"), "bad_kv_heads.json", "num_key_value_heads", "divide");
  require_input_error(load("bool_tie_string.json"), "/tie_word_embeddings", "true or false");
  require_input_error(load("unknown_model_type.json"), "/model_type", "unsupported 'gpt_bigcode'", "llama",
                      "qwen3_moe", "gemma2");
  require_input_error(load("does-not-exist.json"), "does-not-exist.json", "cannot open");
}

TEST_CASE("An unknown model_type loads when the file names its shape family", "[config_io]") {
  const loaded_model m = load_model_config(data_dir / "unknown_model_type_with_family.json");
  CHECK(m.model_type == "my_llama_variant");
  CHECK(parameter_count(m.spec.shape).count() == 8'030'261'248);
}

TEST_CASE("An unknown preset lists the valid names, paths are not preset names", "[config_io][errors]") {
  require_input_error([] { (void)load_preset("llama-9b", source_presets); }, "preset", "unknown 'llama-9b'",
                      "llama-3.1-8b-like", "qwen3-4b");
  require_input_error([] { (void)load_preset("../presets/qwen3-4b", source_presets); }, "unknown");
}

TEST_CASE("The preset search path: explicit dir, then HEADROOM_PRESET_DIR, then built-in dirs",
          "[config_io]") {
  const auto dirs = preset_search_path(std::filesystem::path("/tmp/first"));
  REQUIRE(dirs.size() >= 2);
  CHECK(dirs.front() == std::filesystem::path("/tmp/first"));
  CHECK(dirs.back() == std::filesystem::path(HEADROOM_PRESET_SOURCE_DIR));
  // The test data dir as a preset dir: its files load by name.
  const loaded_model m = load_preset("qwen3-4b-hf-config", {data_dir});
  CHECK(m.name == "qwen3-4b-hf-config");
}

TEST_CASE("OLMo-2 and Granite config.json files load with their published counts", "[config_io]") {
  const loaded_model olmo = load_model_config(data_dir / "configs" / "olmo-2-1124-7b-instruct.json");
  CHECK(parameter_count(olmo.spec.shape).count() == 7'298'617'344);
  CHECK(olmo.spec.shape.residual == residual_layout::post_norms);
  CHECK(olmo.spec.shape.qk_norm == qk_norm_kind::full_width);
  CHECK(olmo.spec.shape.norm == norm_kind::rms_fp32_scale);
  const loaded_model granite = load_model_config(data_dir / "configs" / "granite-3.3-8b-instruct.json");
  CHECK(parameter_count(granite.spec.shape).count() == 8'170'864'640);
  CHECK(granite.spec.shape.scalar_multipliers);
  CHECK(granite.spec.shape.tie_word_embeddings);
  nlohmann::json g = detail::parse_json_file(data_dir / "configs" / "granite-3.3-8b-instruct.json");
  g["logits_scaling"] = nullptr;
  test::require_input_error([&] { (void)model_from_config(g, "g.json"); }, "g.json: /logits_scaling",
                            "positive number");
  g["logits_scaling"] = -16;
  test::require_input_error([&] { (void)model_from_config(g, "g.json"); }, "/logits_scaling");
}

TEST_CASE("StarCoder2's config.json loads with its published count, dropouts and GELU", "[config_io]") {
  const auto file = data_dir / "configs" / "starcoder2-3b.json";
  const loaded_model sc = load_model_config(file);
  CHECK(parameter_count(sc.spec.shape).count() == 3'030'371'328);
  const model_shape& m = sc.spec.shape;
  CHECK((m.norm == norm_kind::layer_norm && m.mlp == mlp_layout::c_fc && m.tie_word_embeddings &&
         m.mlp_bias && m.o_proj_bias));
  CHECK((m.residual_dropout && m.embedding_dropout && m.attention_dropout));  // 0.1 each in the file
  nlohmann::json j = detail::parse_json_file(file);
  j["use_bias"] = false;  // no biases: 30·(3,072 + 2·256 + 3,072 + 12,288 + 3,072) fewer
  CHECK(parameter_count(model_from_config(j, "s.json").spec.shape).count() ==
        3'030'371'328 - 30ull * (3072 + 2 * 256 + 3072 + 12288 + 3072));
  j["residual_dropout"] = 0.0;
  j.erase("embedding_dropout");
  j["attention_dropout"] = nullptr;
  const model_shape quiet = model_from_config(j, "s.json").spec.shape;
  CHECK_FALSE((quiet.residual_dropout || quiet.embedding_dropout || quiet.attention_dropout));
  j["residual_dropout"] = 1.0;
  test::require_input_error([&] { (void)model_from_config(j, "s.json"); }, "s.json: /residual_dropout",
                            "[0, 1)");
  j["residual_dropout"] = "0.1";
  test::require_input_error([&] { (void)model_from_config(j, "s.json"); }, "/residual_dropout");
  j["residual_dropout"] = 0.1;
  j["hidden_act"] = "gelu_new";
  test::require_input_error([&] { (void)model_from_config(j, "s.json"); }, "s.json: /hidden_act",
                            "gelu_pytorch_tanh");
  // Any family's attention_dropout is read: a Llama config with 0.1 prices the dropout mask.
  const nlohmann::json llama = {{"model_type", "llama"},   {"hidden_size", 64}, {"num_attention_heads", 4},
                                {"num_hidden_layers", 2},  {"vocab_size", 128}, {"intermediate_size", 128},
                                {"attention_dropout", 0.1}};
  CHECK(model_from_config(llama, "l.json").spec.shape.attention_dropout);
}

TEST_CASE("GPT-NeoX (Pythia) config.json files load with the paper's counts", "[config_io]") {
  const loaded_model small = load_model_config(data_dir / "configs" / "pythia-160m.json");
  CHECK(parameter_count(small.spec.shape).count() == 162'322'944);
  const loaded_model big = load_model_config(data_dir / "configs" / "pythia-6.9b.json");
  CHECK(parameter_count(big.spec.shape).count() == 6'857'302'016);
  const model_shape& m = small.spec.shape;
  CHECK((m.attention == attention_layout::query_key_value && m.residual == residual_layout::parallel &&
         m.norm == norm_kind::layer_norm && m.mlp == mlp_layout::dense_h_to_4h));
  CHECK(m.rotary_dim == 16);  // int(64 · 0.25)
  CHECK_FALSE((m.residual_dropout || m.attention_dropout || m.tie_word_embeddings));
  nlohmann::json j = detail::parse_json_file(data_dir / "configs" / "pythia-160m.json");
  j["attention_bias"] = false;  // no query_key_value and dense biases: 12·(3·768 + 768) fewer
  CHECK(parameter_count(model_from_config(j, "p.json").spec.shape).count() == 162'322'944 - 12ull * 4 * 768);
  j.erase("attention_bias");
  j["use_parallel_residual"] = false;
  j["partial_rotary_factor"] = 1.0;
  j["hidden_dropout"] = 0.1;
  const model_shape sequential = model_from_config(j, "p.json").spec.shape;
  CHECK(sequential.residual == residual_layout::sequential);
  CHECK(sequential.rotary_dim == 0);  // all of the head
  CHECK((sequential.residual_dropout && sequential.embedding_dropout));
  j["partial_rotary_factor"] = 0.01;  // int(64 · 0.01) = 0 dimensions
  test::require_input_error([&] { (void)model_from_config(j, "p.json"); }, "p.json: /partial_rotary_factor",
                            "even, positive");
  j["partial_rotary_factor"] = 1.5;
  test::require_input_error([&] { (void)model_from_config(j, "p.json"); }, "/partial_rotary_factor",
                            "(0, 1]");
  j.erase("partial_rotary_factor");
  j["hidden_act"] = "gelu_fast";
  test::require_input_error([&] { (void)model_from_config(j, "p.json"); }, "p.json: /hidden_act",
                            "gelu_fast");
  // Phi-3's partial_rotary_factor (Phi-4-mini's 0.75): RoPE on 96 of 128 values, tables s × 2·96
  const nlohmann::json phi4 = {{"model_type", "phi3"},      {"hidden_size", 3072},
                               {"num_attention_heads", 24}, {"num_key_value_heads", 8},
                               {"num_hidden_layers", 32},   {"vocab_size", 200064},
                               {"intermediate_size", 8192}, {"partial_rotary_factor", 0.75}};
  CHECK(model_from_config(phi4, "phi4.json").spec.shape.rotary_dim == 96);
  j["hidden_act"] = "gelu";
  j["num_key_value_heads"] = 4;
  test::require_input_error([&] { (void)model_from_config(j, "p.json"); }, "/num_key_value_heads",
                            "grouped-query");
}

TEST_CASE("Cohere config.json files load with their counts, q/k norms and the logit scale", "[config_io]") {
  const loaded_model r = load_model_config(data_dir / "configs" / "c4ai-command-r-v01.json");
  CHECK(parameter_count(r.spec.shape).count() == 34'980'831'232);
  CHECK((r.spec.shape.norm == norm_kind::cohere && r.spec.shape.residual == residual_layout::parallel &&
         r.spec.shape.logit_scale));
  CHECK((r.spec.shape.tie_word_embeddings && r.spec.shape.qk_norm == qk_norm_kind::none &&
         r.spec.shape.norms_per_layer == 1));
  const loaded_model plus = load_model_config(data_dir / "configs" / "c4ai-command-r-plus.json");
  CHECK(parameter_count(plus.spec.shape).count() == 103'810'674'688);
  CHECK(plus.spec.shape.qk_norm == qk_norm_kind::full_width);
  nlohmann::json j = detail::parse_json_file(data_dir / "configs" / "c4ai-command-r-v01.json");
  j["logit_scale"] = nullptr;
  test::require_input_error([&] { (void)model_from_config(j, "c.json"); }, "c.json: /logit_scale", "null");
  j["logit_scale"] = -1;
  test::require_input_error([&] { (void)model_from_config(j, "c.json"); }, "/logit_scale", "positive");
  const nlohmann::json bigcode = {{"model_type", "gpt_bigcode"}};
  test::require_input_error([&] { (void)model_from_config(bigcode, "b.json"); }, "unsupported 'gpt_bigcode'",
                            "multi-query");
}

TEST_CASE("Unpriced architectures are refused with the feature named, loaded plainly or forced",
          "[config_io][errors]") {
  const nlohmann::json next = {{"model_type", "qwen3_next"}, {"hidden_size", 2048}};
  test::require_input_error([&] { (void)model_from_config(next, "n.json"); }, "/model_type",
                            "unsupported 'qwen3_next'", "linear-attention", "not priced yet");
  const nlohmann::json llava = {{"model_type", "llava"}, {"text_config", {{"model_type", "llama"}}}};
  test::require_input_error([&] { (void)model_from_config(llava, "l.json"); }, "unsupported 'llava'",
                            "vision tower");
  // A family plus one feature: the message names both and the escape hatch that prices the family's count.
  const nlohmann::json smol = {{"model_type", "smollm3"}, {"hidden_size", 2048}};
  test::require_input_error([&] { (void)model_from_config(smol, "s.json"); }, "unsupported 'smollm3'",
                            "llama plus layers without RoPE", "\"architecture\": \"llama\"");
}

TEST_CASE("Issue 28's models: OLMo-3 priced, InternLM2 and MiniCPM as Llama plus a feature, the rest refused",
          "[config_io][errors]") {
  // OLMo-3 (Olmo3Config): OLMo-2's tensors plus sliding windows; OLMo-core's olmo3_7B is olmo2_7B plus a
  // window (src/olmo_core/nn/transformer/config.py @ fa6c5014c). On OLMo-2-7B's shapes (real-configs) it
  // counts OLMo-2's 7,298,617,344 and says how the window is priced.
  nlohmann::json olmo3 = detail::parse_json_file(data_dir / "configs" / "olmo-2-1124-7b-instruct.json");
  olmo3["model_type"] = "olmo3";
  olmo3["sliding_window"] = 4096;
  olmo3["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention"};
  const loaded_model o = model_from_config(olmo3, "olmo3.json");
  CHECK(parameter_count(o.spec.shape).count() == 7'298'617'344);
  CHECK(o.spec.shape.qk_norm == qk_norm_kind::full_width);
  CHECK(test::mentions(o.notes, "sliding_window 4096"));
  // InternLM2.5-7B and MiniCPM-2B-sft (mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @ 79d603f0, their
  // config.json values): refused with the family named; forced to llama, their published 7.74B and 2.7B
  // (2.4B without the embedding) to the parameter.
  nlohmann::json internlm = {{"model_type", "internlm2"}, {"bias", false},
                             {"hidden_size", 4096},       {"intermediate_size", 14336},
                             {"num_attention_heads", 32}, {"num_hidden_layers", 32},
                             {"num_key_value_heads", 8},  {"tie_word_embeddings", false},
                             {"vocab_size", 92544}};
  test::require_input_error([&] { (void)model_from_config(internlm, "i.json"); }, "unsupported 'internlm2'",
                            "llama plus one fused wqkv", "\"architecture\": \"llama\"");
  internlm["_headroom"] = {{"architecture", "llama"}};
  CHECK(parameter_count(model_from_config(internlm, "i.json").spec.shape).count() == 7'737'708'544);
  nlohmann::json minicpm = {
      {"model_type", "minicpm"},     {"hidden_size", 2304},     {"intermediate_size", 5760},
      {"num_attention_heads", 36},   {"num_hidden_layers", 40}, {"num_key_value_heads", 36},
      {"tie_word_embeddings", true}, {"vocab_size", 122753},    {"scale_emb", 12},
      {"dim_model_base", 256},       {"scale_depth", 1.4}};
  test::require_input_error([&] { (void)model_from_config(minicpm, "m.json"); }, "unsupported 'minicpm'",
                            "scale_emb");
  minicpm["_headroom"] = {{"architecture", "llama"}};
  const model_shape cpm = model_from_config(minicpm, "m.json").spec.shape;
  CHECK(parameter_count(cpm).count() == 2'724'880'896);
  CHECK(parameter_count(cpm).count() - 122'753ull * 2'304 == 2'442'057'984);
  // The others name what no family prices, loaded plainly or forced.
  for (const auto& [type, feature] : std::array<std::pair<const char*, const char*>, 7>{{
           {"glm4_moe", "multi-token-prediction"},
           {"falcon", "one shared LayerNorm"},
           {"phi3_v", "CLIP vision tower"},
           {"qwen3_5", "gated DeltaNet"},
           {"qwen3_5_moe", "gated DeltaNet"},
           {"mistral3", "Pixtral vision tower"},
           {"ministral3", "llama_4_scaling_beta"},
       }}) {
    INFO(type);
    nlohmann::json j = {{"model_type", type}, {"hidden_size", 4096}};
    test::require_input_error([&] { (void)model_from_config(j, "x.json"); }, "unsupported", feature);
    j["_headroom"] = {{"architecture", "llama"}};
    test::require_input_error([&] { (void)model_from_config(j, "x.json"); }, "would give a wrong count");
  }
}

TEST_CASE("Gemma-3 multimodal: the language model from text_config, the SigLIP tower and projector frozen",
          "[config_io]") {
  const loaded_model g = load_model_config(data_dir / "configs" / "gemma-3-4b-it.json");
  // SOURCES.md: 4,300,079,472 in all (HF), 3,880,263,168 for the language model (the post's module listing).
  CHECK(parameter_count(g.spec.shape).count() == 3'880'263'168);
  CHECK(g.spec.vision.params == 4'300'079'472 - 3'880'263'168);
  // SigLIP so400m/14 at 896: patch conv 3·14²·1152 + 1152, 4,096 position rows, 27 layers, post-layernorm;
  // projector 1152 × 2560 + the 1152-wide soft-embedding norm.
  const std::uint64_t h = 1152, f = 4304;
  const std::uint64_t layer = 4 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h);
  CHECK(g.spec.vision.params == 3 * 14 * 14 * h + h + 4096 * h + 27 * layer + 2 * h + h * 2560 + h);
  CHECK(g.spec.vision.tokens_per_image == 256);
  CHECK(g.model_type == "gemma3");
  CHECK(g.spec.shape.qk_norm == qk_norm_kind::per_head);
  CHECK(g.spec.shape.tie_word_embeddings);
  // LoRA: all 4.3B resident in bf16; full fine-tuning trains the language model only.
  const static_estimate lora = estimate_static(g.spec, test::lora16, params_basis::exact);
  CHECK(lora.model_params.count() == 4'300'079'472);
  CHECK(lora.buckets.weights.count() == 4'300'079'472ull * 2);
  const static_estimate full = estimate_static(g.spec, test::full_ft, params_basis::exact);
  CHECK(full.trainable_params.count() == 3'880'263'168);
  CHECK(full.buckets.grads.count() == 3'880'263'168ull * 2);
  CHECK(full.buckets.weights.count() == 4'300'079'472ull * 2);
  // QLoRA: the tower stays in the load dtype
  const static_estimate q = estimate_static(g.spec, test::qlora16, params_basis::exact);
  model_spec text_only = g.spec;
  text_only.vision = {};
  CHECK(q.buckets.weights.count() ==
        estimate_static(text_only, test::qlora16, params_basis::exact).buckets.weights.count() +
            g.spec.vision.params * 2);
  nlohmann::json j = detail::parse_json_file(data_dir / "configs" / "gemma-3-4b-it.json");
  nlohmann::json no_text = j;
  no_text.erase("text_config");
  test::require_input_error([&] { (void)model_from_config(no_text, "g.json"); }, "g.json: /text_config",
                            "missing");
  nlohmann::json head = j;
  head["vision_config"]["vision_use_head"] = true;
  test::require_input_error([&] { (void)model_from_config(head, "g.json"); }, "/vision_use_head");
  nlohmann::json bad_patch = j;
  bad_patch["vision_config"]["patch_size"] = 15;
  test::require_input_error([&] { (void)model_from_config(bad_patch, "g.json"); }, "patch_size",
                            "divide image_size");
}

TEST_CASE("A safetensors checkpoint beside the config cross-checks the count", "[config_io]") {
  const std::filesystem::path dir = data_dir / "checkpoints";
  // model.safetensors.index.json: total_size over the bf16 value size equals the shapes' count
  const loaded_model olmo = load_model_config(dir / "olmo2-index" / "config.json");
  REQUIRE(olmo.checks.size() == 1);
  CHECK(olmo.checks[0].find("total_size / 2 bytes: 7,298,617,344 parameters, as the shapes give") !=
        std::string::npos);
  CHECK(olmo.warnings.empty());
  // metadata.total_parameters, when present, is compared directly; a difference names both numbers
  const loaded_model granite = load_model_config(dir / "granite-mismatch" / "config.json");
  CHECK(granite.checks.empty());
  REQUIRE(granite.warnings.size() == 1);
  CHECK(granite.warnings[0].find(
            "holds 8,171,192,320 parameters, the shapes give 8,170,864,640 (+327,680)") != std::string::npos);
  // a single model.safetensors: the header's shapes are summed (no tensor data is read)
  const loaded_model tiny = load_model_config(dir / "tiny-single" / "config.json");
  REQUIRE(tiny.checks.size() == 1);
  CHECK(tiny.checks[0] == "model.safetensors header: 80,448 parameters, as the shapes give");
  CHECK(parameter_count(tiny.spec.shape).count() == 80'448);
  // a config alone: nothing to compare
  CHECK(load_model_config(data_dir / "configs" / "granite-3.3-8b-instruct.json").checks.empty());
}

TEST_CASE(
    "gpt-oss-20b loads exactly, bitsandbytes leaves its 3-D experts in bf16, all-linear adapts attention",
    "[config_io]") {
  const loaded_model oss = load_model_config(data_dir / "configs" / "gpt-oss-20b.json");
  const model_shape& m = oss.spec.shape;
  CHECK(parameter_count(m).count() == 20'914'757'184);
  CHECK((m.attention_sinks && m.router_bias && m.attention_bias && m.o_proj_bias));
  CHECK(m.experts == moe_layout::gpt_oss);
  // LoRA all-linear: q, k, v, o only (the router and experts are nn.Parameter tensors; PEFT reaches experts
  // through target_parameters, which headroom does not price).
  const training_setup s = test::qlora16;
  CHECK(adapter_count(m, s.lora).count() == 24ull * 16 * ((2880 + 4096) + 2 * (2880 + 512) + (4096 + 2880)));
  // Realistic QLoRA: only the attention projections are 4-bit; experts, router, embeddings, head stay bf16.
  const static_estimate q = estimate_static(oss.spec, s, params_basis::exact);
  std::uint64_t linear = 0;
  for (const param_tensor& t : parameter_inventory(m))
    if (t.role == tensor_role::linear_weight && t.nn_linear && t.module != module_name::lm_head)
      linear += t.total().count();
  CHECK(linear == 24ull * (2 * 2880 * 4096 + 2 * 2880 * 512));
  CHECK(q.buckets.weights.count() == nf4_tensor_bytes(2880ull * 4096, s.nf4).count() * 48 +
                                         nf4_tensor_bytes(2880ull * 512, s.nf4).count() * 48 +
                                         (20'914'757'184 - linear) * 2);
  // transformers has no SDPA path for the sinks: eager or a FlashAttention kernel with sinks.
  run_config r;
  r.activations.attention = attention_impl::sdpa;
  test::require_input_error([&] { (void)estimate_training(oss.spec, r); }, "attention", "sinks", "SDPA");
  r.activations.attention = attention_impl::flash;
  CHECK(estimate_training(oss.spec, r).total_bytes().count() > 0);
}

TEST_CASE("DeepSeek-V2, V2-Lite, V3 and Kimi-K2 config.json files load with their published counts",
          "[config_io]") {
  const auto count = [](const char* file) {
    return parameter_count(load_model_config(data_dir / "configs" / file).spec.shape).count();
  };
  // Hand-derived from the shapes (docs/presets.md); the cards' 15.7B, 236B, 671B and 1T.
  CHECK(count("deepseek-v2-lite.json") == 15'706'484'224);
  CHECK(count("deepseek-v2.json") == 235'741'434'880);
  CHECK(count("deepseek-v3.json") == 671'026'404'352);
  CHECK(count("kimi-k2-instruct.json") == 1'026'408'209'408);
  const loaded_model v3 = load_model_config(data_dir / "configs" / "deepseek-v3.json");
  const model_shape& m = v3.spec.shape;
  CHECK((m.q_lora_rank == 1536 && m.kv_lora_rank == 512 && m.head_dim == 192 && m.v_head_dim == 128));
  CHECK((m.dense_layers == 3 && m.shared_expert_intermediate_size == 2048 && m.router_sigmoid));
  CHECK(active_parameter_count(m).count() == 37'552'282'624);   // the paper's 37B activated
  CHECK(test::mentions(v3.notes, "num_nextn_predict_layers"));  // the MTP layer is not in the model
  // V2-Lite: one q_proj (q_lora_rank null), a softmax router, and a note that V2's forward is V3's here.
  const loaded_model lite = load_model_config(data_dir / "configs" / "deepseek-v2-lite.json");
  CHECK((lite.spec.shape.q_lora_rank == 0 && !lite.spec.shape.router_sigmoid));
  CHECK(test::mentions(lite.notes, "DeepSeek-V2"));
  CHECK(active_parameter_count(lite.spec.shape).count() == 2'661'150'208);
}

TEST_CASE("DeepSeek configs the model cannot price are refused with the key named", "[config_io][errors]") {
  const nlohmann::json base = detail::parse_json_file(data_dir / "configs" / "deepseek-v3.json");
  const auto refused = [&](const char* key, const nlohmann::json& value, const char* fragment) {
    nlohmann::json j = base;
    j[key] = value;
    test::require_input_error([&] { (void)model_from_config(j, "d.json"); }, std::string("d.json: /") + key,
                              fragment);
  };
  refused("moe_layer_freq", 2, "every n-th layer");
  refused("scoring_func", "tanh", "valid: sigmoid, softmax");
  refused("n_group", 7, "divide n_routed_experts");
  refused("topk_group", 9, "n_group");
  refused("attention_bias", true, "biased MLA");
  refused("hidden_act", "gelu", "valid: silu");
  refused("kv_lora_rank", 0, "positive integer");
  refused("qk_nope_head_dim", nullptr, "positive integer");
  nlohmann::json j = base;
  j["first_k_dense_replace"] = 61;
  test::require_input_error([&] { (void)model_from_config(j, "d.json"); }, "first_k_dense_replace",
                            "smaller");
  j = base;
  j["first_k_dense_replace"] = 0;  // every layer MoE: 3 more MoE layers in place of the dense ones
  CHECK(parameter_count(model_from_config(j, "d.json").spec.shape).count() ==
        671'026'404'352 + 3 * ((257ull * 3 * 7168 * 2048 + 256 * 7168) - 3ull * 7168 * 18432));
}

TEST_CASE("Qwen2-MoE config.json files load with their published counts", "[config_io]") {
  // Hand-derived from the shapes (docs/presets.md): the cards' 14.3B (A2.7B) and 57.4B (A14B).
  const loaded_model small = load_model_config(data_dir / "configs" / "qwen1.5-moe-a2.7b.json");
  CHECK(parameter_count(small.spec.shape).count() == 14'315'784'192);
  CHECK(active_parameter_count(small.spec.shape).count() == 2'689'173'504);
  const model_shape& m = small.spec.shape;
  CHECK(
      (m.attention_bias && !m.o_proj_bias && m.shared_expert_intermediate_size == 5632 && !m.norm_topk_prob));
  const loaded_model large = load_model_config(data_dir / "configs" / "qwen2-57b-a14b.json");
  CHECK(parameter_count(large.spec.shape).count() == 57'408'658'944);
  CHECK(active_parameter_count(large.spec.shape).count() == 14'249'270'784);
  // Layouts mixing dense and MoE layers are refused with the key named.
  nlohmann::json j = detail::parse_json_file(data_dir / "configs" / "qwen1.5-moe-a2.7b.json");
  j["decoder_sparse_step"] = 2;
  test::require_input_error([&] { (void)model_from_config(j, "q.json"); }, "q.json: /decoder_sparse_step");
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = {0, 1};
  test::require_input_error([&] { (void)model_from_config(j, "q.json"); }, "q.json: /mlp_only_layers");
}

TEST_CASE("Cohere2 (Command-R7B, Command-A) loads as Cohere's block, its sliding window noted",
          "[config_io]") {
  // Hand-derived from the shapes (docs/presets.md): the cards' 8.03B and 111B.
  const loaded_model r7b = load_model_config(data_dir / "configs" / "c4ai-command-r7b-12-2024.json");
  CHECK(parameter_count(r7b.spec.shape).count() == 8'028'033'024);
  CHECK((r7b.spec.shape.norm == norm_kind::cohere && r7b.spec.shape.residual == residual_layout::parallel &&
         r7b.spec.shape.logit_scale));
  CHECK(test::mentions(r7b.notes, "sliding_window 4096"));
  CHECK(parameter_count(load_model_config(data_dir / "configs" / "c4ai-command-a-03-2025.json").spec.shape)
            .count() == 111'057'580'032);
  // Qwen2's use_sliding_window false: no window, no note
  const loaded_model qwen = load_model_config(data_dir / "configs" / "qwen1.5-moe-a2.7b.json");
  CHECK_FALSE(test::mentions(qwen.notes, "sliding_window"));
}

TEST_CASE("Llama-4 Scout and Maverick config.json files load with their published counts", "[config_io]") {
  // Hand-derived from the shapes (docs/presets.md); Meta's model card: 109B total / 17B active (Scout), 400B
  // / 17B (Maverick); Hugging Face's Scout checkpoint lists 108,641,793,536 with the vision tower.
  const loaded_model scout = load_model_config(data_dir / "configs" / "llama-4-scout-17b-16e-instruct.json");
  const model_shape& m = scout.spec.shape;
  CHECK(parameter_count(m).count() == 107'769'861'120);
  CHECK(scout.spec.vision.params == 871'932'416);
  CHECK(parameter_count(m).count() + scout.spec.vision.params == 108'641'793'536);
  CHECK(active_parameter_count(m).count() == 17'172'894'720);
  CHECK(scout.model_type == "llama4");
  CHECK(scout.spec.vision.tokens_per_image == 144);  // (336 / 14)² patches · 0.5² (pixel shuffle)
  CHECK((m.qk_norm == qk_norm_kind::l2 && m.complex_rope && m.attn_temperature_tuning));
  CHECK(m.experts == moe_layout::llama4);
  CHECK((m.moe_layer_step == 1 && m.nope_layer_interval == 4 && m.intermediate_size == 16384));
  CHECK((m.moe_intermediate_size == 8192 && m.shared_expert_intermediate_size == 8192));
  CHECK(test::mentions(scout.notes, "every expert on every token"));
  CHECK(test::mentions(scout.notes, "attention_chunk_size 8192"));
  CHECK(test::mentions(scout.notes, "Llama-4 multimodal"));
  const loaded_model maverick =
      load_model_config(data_dir / "configs" / "llama-4-maverick-17b-128e-instruct.json");
  CHECK(parameter_count(maverick.spec.shape).count() == 400'711'848'960);
  CHECK(parameter_count(maverick.spec.shape).count() + maverick.spec.vision.params == 401'583'781'376);
  CHECK(active_parameter_count(maverick.spec.shape).count() == 17'184'691'200);
  CHECK((moe_layers(maverick.spec.shape) == 24 && maverick.spec.shape.qk_norm == qk_norm_kind::none));
  // The text model alone (model_type llama4_text) has the language model's count.
  const nlohmann::json full =
      detail::parse_json_file(data_dir / "configs" / "llama-4-scout-17b-16e-instruct.json");
  CHECK(parameter_count(model_from_config(full.at("text_config"), "t.json").spec.shape).count() ==
        107'769'861'120);
}

TEST_CASE("Llama-4 configs the model cannot price are refused with the key named", "[config_io][errors]") {
  const nlohmann::json full =
      detail::parse_json_file(data_dir / "configs" / "llama-4-maverick-17b-128e-instruct.json");
  const nlohmann::json base = full.at("text_config");
  const auto refused = [&](const char* key, const nlohmann::json& value, const char* fragment) {
    nlohmann::json j = base;
    j[key] = value;
    test::require_input_error([&] { (void)model_from_config(j, "l.json"); }, std::string("l.json: /") + key,
                              fragment);
  };
  refused("moe_layers", nlohmann::json::array({0, 2, 4}), "every interleave_moe_layer_step-th layer");
  refused("no_rope_layers", nlohmann::json::array({1, 1, 1}), "NoPE every no_rope_layer_interval-th");
  refused("interleave_moe_layer_step", 49, "exceeds num_hidden_layers");
  refused("hidden_act", "gelu", "valid: silu");
  refused("attn_temperature_tuning", "yes", "true, false or a non-negative number");
  refused("num_local_experts", 0, "positive integer");
  // The config's own lists, written out, are the pattern: accepted.
  nlohmann::json j = base;
  j["moe_layers"] = nlohmann::json::array();
  for (int i = 1; i < 48; i += 2) j["moe_layers"].push_back(i);
  j["attn_temperature_tuning"] = 4;
  CHECK(parameter_count(model_from_config(j, "l.json").spec.shape).count() == 400'711'848'960);
  // Forced through the escape hatch as Llama, its experts are named.
  j = base;
  j["_headroom"] = {{"architecture", "llama"}};
  test::require_input_error([&] { (void)model_from_config(j, "l.json"); }, "num_local_experts",
                            "does not read it");
  j = full;
  j["vision_config"]["multi_modal_projector_bias"] = true;
  test::require_input_error([&] { (void)model_from_config(j, "l.json"); }, "multi_modal_projector_bias",
                            "biased projector");
  j = full;
  j["text_config"]["model_type"] = "llama";
  test::require_input_error([&] { (void)model_from_config(j, "l.json"); }, "/text_config/model_type",
                            "must be llama4_text");
  j = full;
  j.erase("vision_config");
  test::require_input_error([&] { (void)model_from_config(j, "l.json"); }, "/vision_config", "missing");
}

TEST_CASE(
    "JSON nested deeper than 256 levels is refused by key before any reader recurses (issue 31, CR-01)") {
  const auto nested = [](const std::string& key, std::size_t n) {
    return "{\"" + key + "\": " + std::string(n, '[') + std::string(n, ']') + "}";
  };
  CHECK_NOTHROW(detail::check_json_depth(nested("hidden_size", 255), "a.json"));  // 256 with the object
  CHECK_THROWS_WITH(detail::check_json_depth(nested("hidden_size", 100000), "a.json"),
                    "a.json: /hidden_size: nested deeper than the limit of 256 levels");
  // The pointer names keys and array positions; brackets inside strings are text.
  std::string inner = "{\"a\": [1, {\"b\": \"[[[\", \"c\": ";
  inner.append(300, '[').append("]}]}");
  CHECK_THROWS_WITH(detail::check_json_depth(inner, "b.json"),
                    "b.json: /a/1/c: nested deeper than the limit of 256 levels");
  CHECK_NOTHROW(detail::check_json_depth("{\"k\": \"\\\"[[[[\"}", "c.json"));  // an escaped quote
  // A long value is quoted shortened: 60 characters at most.
  CHECK(detail::json_excerpt(nlohmann::json(std::string(500, 'x'))).size() == 60);
  CHECK(detail::json_excerpt(nlohmann::json(12)) == "12");
}

TEST_CASE(
    "A number beyond a double and a version past the newest are named by key (issue 31, MI-06, MI-41)") {
  // scan_json gives the pointer of the value where the parser stopped.
  const std::string text = R"({"a": {"b": 1e400}, "c": [1, 2]})";
  CHECK(detail::scan_json(text, "x.json", text.find("1e400")) == "/a/b");
  CHECK(detail::scan_json(text, "x.json", text.find('2')) == "/c");  // array positions are left out
  const nlohmann::json fc{{"fsdp_version", 3}};
  CHECK_THROWS_WITH(detail::read_version_or(fc, "fsdp_version", "t.json: /fsdp_config", 1, 2),
                    "t.json: /fsdp_config: /fsdp_version: unknown '3'; valid: 1, 2");
  CHECK(detail::read_version_or(fc, "missing", "t.json", 1, 2) == 1);
  CHECK(detail::read_version_or(nlohmann::json{{"fsdp_version", 2}}, "fsdp_version", "t.json", 1, 2) == 2);
}

TEST_CASE("The family escape hatch is refused on a model_type headroom reads itself (issue 31)",
          "[config_io]") {
  nlohmann::json olmo = detail::parse_json_file(test::data_dir / "configs" / "olmo-2-1124-7b-instruct.json");
  CHECK(parameter_count(model_from_config(olmo, "o.json").spec.shape).count() == 7'298'617'344);
  olmo["_headroom"] = {{"architecture", "llama"}};  // as llama it would lose the q/k norms: 7,298,355,200
  test::require_input_error([&] { (void)model_from_config(olmo, "o.json"); }, "/_headroom/architecture",
                            "which headroom reads as itself");
}
