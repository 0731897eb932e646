// SPDX-License-Identifier: MIT
// A model named as people type it (io/hub_cache.hpp, load_model_named): Hub ids and revisions checked as
// huggingface_hub checks them, its cache folder from the environment, and the cache layout of tests/data/hub
// (refs, snapshots linked into blobs, .no_exist).
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <headroom/io/config.hpp>
#include <headroom/io/hub_cache.hpp>
#include <headroom/memory.hpp>

#include "catch.hpp"
#include "files.hpp"

using namespace headroom;

namespace hub_test {
const std::filesystem::path cache = test::data_dir / "hub";
const std::vector<std::filesystem::path> presets{HEADROOM_PRESET_SOURCE_DIR};
const std::string main_commit = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b";
const std::string pr_commit = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b";
std::string error_of(const std::string& id) {
  try {
    (void)load_model_named(id, "--model", presets, cache);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace hub_test

TEST_CASE("Hub ids: ORG/NAME[@REVISION] with validate_repo_id's rules") {
  const hub_model_id plain = parse_hub_model_id("Qwen/Qwen3-4B", "--model");
  CHECK(plain.repo == "Qwen/Qwen3-4B");
  CHECK(plain.revision == "main");
  CHECK(parse_hub_model_id("meta-llama/Llama-3.1-8B@refs/pr/12", "--model").revision == "refs/pr/12");
  CHECK(looks_like_hub_id("unsloth/Llama-3.2-1B-Instruct-bnb-4bit"));
  CHECK_FALSE(looks_like_hub_id("qwen3-4b"));  // a preset name: no organisation
  CHECK_FALSE(looks_like_hub_id("torchtune.models.llama3_2.lora_llama3_2_3b"));
  CHECK_FALSE(looks_like_hub_id("a/b/c"));
  CHECK_FALSE(
      looks_like_hub_id("org/-name"));  // the regex's \b: a name starts and ends with a word character
  for (const char* bad :
       {"org/na--me", "org/a..b", "org/model.git", "org/name@", "org/name@../../x", "org/na me"})
    CHECK_THROWS_WITH(parse_hub_model_id(bad, "--model"), Catch::Contains("--model: '"));
  CHECK_THROWS_WITH(parse_hub_model_id(std::string("org/") + std::string(97, 'a'), "--model"),
                    Catch::Contains("ORG/NAME"));  // a name of at most 96 characters
}

TEST_CASE(
    "The cache folder: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, ~ (constants.py)") {
  hub_environment env;
  env.home = "/home/u";
  CHECK(hub_cache_dir(env) == "/home/u/.cache/huggingface/hub");
  env.xdg_cache_home = "/xdg";
  CHECK(hub_cache_dir(env) == "/xdg/huggingface/hub");
  env.hf_home = "~/hf";
  CHECK(hub_cache_dir(env) == "/home/u/hf/hub");
  env.huggingface_hub_cache = "/legacy";
  CHECK(hub_cache_dir(env) == "/legacy");
  env.hf_hub_cache = "/fast/hub";
  CHECK(hub_cache_dir(env) == "/fast/hub");
}

TEST_CASE(
    "The cache's layout: refs name the snapshot, a commit names it itself, .no_exist marks an absent file") {
  using st = hub_cache_lookup::status;
  const hub_cache_lookup main =
      find_in_hub_cache(hub_test::cache, {"headroom-tests/Qwen3-4B", "main"}, "config.json");
  REQUIRE(main.state == st::found);
  CHECK(main.commit == hub_test::main_commit);
  CHECK(main.file == hub_test::cache / "models--headroom-tests--Qwen3-4B" / "snapshots" /
                         hub_test::main_commit / "config.json");
  // A pull request's ref is stored under refs/refs/pr/1, as hf_hub_download writes it.
  CHECK(find_in_hub_cache(hub_test::cache, {"headroom-tests/Qwen3-4B", "refs/pr/1"}, "config.json").commit ==
        hub_test::pr_commit);
  CHECK(find_in_hub_cache(hub_test::cache, {"headroom-tests/Qwen3-4B", hub_test::pr_commit}, "config.json")
            .state == st::found);
  CHECK(find_in_hub_cache(hub_test::cache, {"headroom-tests/Qwen3-4B", "v2"}, "config.json").state ==
        st::no_revision);
  CHECK(find_in_hub_cache(hub_test::cache, {"headroom-tests/Qwen3-4B", "main"}, "tokenizer.json").state ==
        st::no_file);
  CHECK(find_in_hub_cache(hub_test::cache, {"headroom-tests/no-config", "main"}, "config.json").state ==
        st::known_missing);
  CHECK(find_in_hub_cache(hub_test::cache, {"nobody/nothing", "main"}, "config.json").state == st::no_repo);
}

TEST_CASE(
    "load_model_named: the cached config.json, a model directory, a preset for a known id, or an error") {
  const loaded_model cached =
      load_model_named("headroom-tests/Qwen3-4B", "--model", hub_test::presets, hub_test::cache);
  CHECK(cached.name == "headroom-tests/Qwen3-4B");
  CHECK(cached.source == "the Hugging Face cache, snapshot " + hub_test::main_commit);
  CHECK(parameter_count(cached.spec.shape).count() == 4'022'468'096);  // Qwen3-4B's, as W-preset qwen3-4b
  const loaded_model pr =
      load_model_named("headroom-tests/Qwen3-4B@refs/pr/1", "--model", hub_test::presets, hub_test::cache);
  CHECK(pr.name == "headroom-tests/Qwen3-4B@refs/pr/1");
  CHECK(pr.spec.shape.hidden_size == 64);
  // A model directory is its config.json, named by the folder; a cache snapshot by its Hub id.
  const auto dir = hub_test::cache / "models--headroom-tests--Qwen3-4B" / "snapshots" / hub_test::pr_commit;
  CHECK(load_model_config(dir).name == "headroom-tests/Qwen3-4B");
  CHECK(load_model_config(dir).source == "the Hugging Face cache, snapshot " + hub_test::pr_commit);
  CHECK(load_model_config(test::data_dir / "checkpoints" / "olmo2-index").name == "olmo2-index");
  CHECK(load_model_named(dir.string() + "/", "--model", hub_test::presets, hub_test::cache)
            .spec.shape.hidden_size == 64);
  CHECK_THROWS_WITH(load_model_config(hub_test::cache), Catch::Contains("must hold a config.json"));
  // A known id outside the cache is priced with its preset, and says so.
  const loaded_model preset =
      load_model_named("Qwen/Qwen3-4B", "--model", hub_test::presets, hub_test::cache);
  CHECK(preset.name == "qwen3-4b");
  REQUIRE_FALSE(preset.notes.empty());
  CHECK(preset.notes.back().find("not in the Hugging Face cache") != std::string::npos);
  // Errors name the flag, the folder looked in and how to fill it.
  const std::string missing = hub_test::error_of("nobody/nothing");
  CHECK(missing.find("--model: unknown model 'nobody/nothing'") == 0);
  CHECK(missing.find("models--nobody--nothing") != std::string::npos);
  CHECK(missing.find("huggingface-cli download nobody/nothing config.json") != std::string::npos);
  CHECK(hub_test::error_of("headroom-tests/Qwen3-4B@v2").find("revision 'v2' is not in the cache") !=
        std::string::npos);
  CHECK(hub_test::error_of("headroom-tests/no-config").find("has no config.json") != std::string::npos);
  CHECK(hub_test::error_of("org/na--me").find("'--' and '..' are not allowed") != std::string::npos);
}

TEST_CASE("HF_HOME, where huggingface-cli login keeps the token: HF_HOME, XDG_CACHE_HOME, ~ (constants.py)") {
  hub_environment env;
  env.home = "/home/u";
  CHECK(hub_home_dir(env) == "/home/u/.cache/huggingface");
  env.xdg_cache_home = "/xdg";
  CHECK(hub_home_dir(env) == "/xdg/huggingface");
  env.hf_hub_cache = "/fast/hub";  // the cache moved; the home (and its token) did not
  CHECK(hub_home_dir(env) == "/xdg/huggingface");
  env.hf_home = "~/hf";
  CHECK(hub_home_dir(env) == "/home/u/hf");
}

TEST_CASE(
    "load_model_named with a fetcher: a miss is fetched into the cache, a failure falls back or names it") {
  const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                      ("headroom-hub-fetch-" + std::to_string(std::random_device{}()));
  int calls = 0;
  // A fetcher that writes what the Hub would: a snapshot config.json and the ref naming it.
  const hub_fetcher writes = [&](const hub_model_id& id, const std::filesystem::path& into,
                                 const std::string&) {
    ++calls;
    const std::filesystem::path repo = find_in_hub_cache(into, id, "config.json").repo_dir;
    const std::filesystem::path snap = repo / "snapshots" / hub_test::main_commit;
    std::filesystem::create_directories(snap);
    std::filesystem::copy_file(hub_test::cache / "models--headroom-tests--Qwen3-4B" / "snapshots" /
                                   hub_test::pr_commit / "config.json",
                               snap / "config.json");
    std::filesystem::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / id.revision) << hub_test::main_commit;
    return true;
  };
  const loaded_model fetched = load_model_named("someone/tiny", "--model", hub_test::presets, cache, writes);
  CHECK(calls == 1);
  CHECK(fetched.name == "someone/tiny");
  CHECK(fetched.spec.shape.hidden_size == 64);
  CHECK(load_model_named("someone/tiny", "--model", hub_test::presets, cache, writes).name == "someone/tiny");
  CHECK(calls == 1);  // cached now: not fetched again
  const hub_fetcher declines = [](const hub_model_id&, const std::filesystem::path&, const std::string&) {
    return false;
  };
  CHECK_THROWS_WITH(load_model_named("nobody/nothing", "--model", hub_test::presets, cache, declines),
                    Catch::Contains("unknown model 'nobody/nothing'"));
  const hub_fetcher fails = [](const hub_model_id&, const std::filesystem::path&,
                               const std::string& where) -> bool {
    throw input_error(where, "the Hub answered HTTP 500");
  };
  const loaded_model preset = load_model_named("Qwen/Qwen3-4B", "--model", hub_test::presets, cache, fails);
  CHECK(preset.name == "qwen3-4b");
  REQUIRE_FALSE(preset.notes.empty());
  CHECK(preset.notes.back().find("could not be downloaded (the Hub answered HTTP 500)") != std::string::npos);
  // An explicit revision, or an id no preset holds, reports the failure itself.
  CHECK_THROWS_WITH(load_model_named("Qwen/Qwen3-4B@main", "--model", hub_test::presets, cache, fails),
                    Catch::Contains("HTTP 500"));
  CHECK_THROWS_WITH(load_model_named("nobody/nothing", "--model", hub_test::presets, cache, fails),
                    Catch::Contains("HTTP 500"));
  std::filesystem::remove_all(cache);
}
