// SPDX-License-Identifier: MIT
// A model named the way people type it: a Hub id `ORG/NAME[@REVISION]` found in the local Hugging Face
// cache, with the cache's own layout and environment variables (read in huggingface_hub's constants.py and
// file_download.py try_to_load_from_cache, commit ee0a451; docs/presets.md "Pointing at your model").
// Standard library only: the download is io/hub_download.hpp's (libcurl), handed in as a hub_fetcher.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "../error.hpp"

namespace headroom {

/// A Hub model id and the revision asked for (a branch, a tag or a 40-hex commit; "main" when none).
struct hub_model_id {
  std::string repo;               ///< ORG/NAME
  std::string revision = "main";  ///< huggingface_hub's DEFAULT_REVISION
};

namespace detail {
inline bool hub_name_char(char c) {  // \w of REPO_ID_REGEX, ASCII, plus '-' and '.'
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}
/// One part of a repo id as validate_repo_id (utils/_validators.py) accepts it: [\w\-.], the first and last
/// a word character (the regex's \b), at most 96 characters for the name.
inline bool hub_name_part(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (!hub_name_char(c)) return false;
  auto word = [](char c) { return c != '-' && c != '.'; };
  return word(s.front()) && word(s.back());
}
inline bool is_commit_hash(std::string_view s) {  // file_download.py REGEX_COMMIT_HASH: ^[0-9a-f]{40}$
  if (s.size() != 40) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace detail

/// Whether `text` has the shape of a Hub id with an organisation (ORG/NAME, optionally @REVISION), as opposed
/// to a preset name or a torchtune builder; a path that exists on disk is the caller's to test first.
[[nodiscard]] inline bool looks_like_hub_id(std::string_view text) {
  const std::string_view repo = text.substr(0, text.find('@'));
  const auto slash = repo.find('/');
  return slash != std::string_view::npos && repo.find('/', slash + 1) == std::string_view::npos &&
         detail::hub_name_part(repo.substr(0, slash), 96) &&
         detail::hub_name_part(repo.substr(slash + 1), 96);
}

/// Parses ORG/NAME[@REVISION] with validate_repo_id's rules; errors name `where` (a flag or a key).
[[nodiscard]] inline hub_model_id parse_hub_model_id(std::string_view text, const std::string& where) {
  const auto at = text.find('@');
  hub_model_id id;
  id.repo = std::string(text.substr(0, at));
  if (at != std::string_view::npos) id.revision = std::string(text.substr(at + 1));
  const std::string shape = "'" + std::string(text) + "': a Hub model id is ORG/NAME or ORG/NAME@REVISION";
  if (!looks_like_hub_id(id.repo)) throw input_error(where, shape + " (letters, digits, '-', '_', '.')");
  if (id.repo.find("--") != std::string::npos || id.repo.find("..") != std::string::npos)
    throw input_error(where, shape + "; '--' and '..' are not allowed in it");
  if (id.repo.size() >= 4 && id.repo.compare(id.repo.size() - 4, 4, ".git") == 0)
    throw input_error(where, shape + "; it cannot end in .git");
  // A revision is a branch, tag or commit: git's ref names (refs/pr/1 included), never a path out of refs/.
  const bool bad_revision = id.revision.empty() || id.revision.find("..") != std::string::npos ||
                            id.revision.front() == '/' || id.revision.back() == '/' ||
                            id.revision.find_first_of("\\@ \t\n\r") != std::string::npos;
  if (bad_revision)
    throw input_error(where, shape + "; '" + id.revision + "' is no revision (a branch, tag or commit)");
  return id;
}

/// The environment variables huggingface_hub reads for its cache (constants.py), as given; unset is empty.
struct hub_environment {
  std::string hf_hub_cache, huggingface_hub_cache, hf_home, xdg_cache_home, home;
};
[[nodiscard]] inline hub_environment hub_environment_of_process() {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v == nullptr ? "" : v);
  };
  return {get("HF_HUB_CACHE"), get("HUGGINGFACE_HUB_CACHE"), get("HF_HOME"), get("XDG_CACHE_HOME"),
          get("HOME")};
}

namespace detail {
inline std::filesystem::path expand_home(const hub_environment& env, const std::string& p) {
  if (!env.home.empty() && (p == "~" || p.rfind("~/", 0) == 0)) return env.home + p.substr(1);
  return p;
}
}  // namespace detail

/// HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (constants.py HF_HOME).
[[nodiscard]] inline std::filesystem::path hub_home_dir(const hub_environment& env) {
  if (!env.hf_home.empty()) return detail::expand_home(env, env.hf_home);
  const std::filesystem::path cache = !env.xdg_cache_home.empty() ? std::filesystem::path(env.xdg_cache_home)
                                                                  : detail::expand_home(env, "~/.cache");
  return cache / "huggingface";
}

/// The hub cache folder: HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, with HF_HOME
/// defaulting to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (constants.py). A leading `~/` is the
/// home folder, as expanduser makes it.
[[nodiscard]] inline std::filesystem::path hub_cache_dir(const hub_environment& env) {
  if (!env.hf_hub_cache.empty()) return detail::expand_home(env, env.hf_hub_cache);
  if (!env.huggingface_hub_cache.empty()) return detail::expand_home(env, env.huggingface_hub_cache);
  return hub_home_dir(env) / "hub";
}

/// What the cache holds for one file of one revision.
struct hub_cache_lookup {
  enum class status : std::uint8_t {
    found,
    no_repo,
    no_revision,
    known_missing,
    no_file
  } state = status::no_repo;
  std::filesystem::path repo_dir;  ///< <cache>/models--ORG--NAME
  std::string commit;              ///< the snapshot folder the revision resolved to
  std::filesystem::path file;      ///< snapshots/<commit>/<filename> when found
};

/// try_to_load_from_cache (file_download.py): models--ORG--NAME (repo_folder_name), refs/<revision> holding
/// the commit (a revision without a ref is taken as the snapshot's own name), `.no_exist/<commit>/<file>`
/// marking a file the Hub said is absent, then snapshots/<commit>/<file> (a link into blobs/ in a real
/// cache).
[[nodiscard]] inline hub_cache_lookup find_in_hub_cache(const std::filesystem::path& cache,
                                                        const hub_model_id& id, std::string_view filename) {
  hub_cache_lookup out;
  const auto slash = id.repo.find('/');
  out.repo_dir = cache / ("models--" + id.repo.substr(0, slash) + "--" + id.repo.substr(slash + 1));
  std::error_code ec;
  if (!std::filesystem::is_directory(out.repo_dir, ec)) return out;
  out.commit = id.revision;
  if (std::ifstream ref(out.repo_dir / "refs" / id.revision); ref) {
    std::string commit;
    std::getline(ref, commit);  // the writer stores the bare hash, with no newline
    if (!commit.empty()) out.commit = commit;
  }
  if (std::filesystem::is_regular_file(out.repo_dir / ".no_exist" / out.commit / std::string(filename), ec)) {
    out.state = hub_cache_lookup::status::known_missing;
    return out;
  }
  const std::filesystem::path snapshot = out.repo_dir / "snapshots" / out.commit;
  if (!std::filesystem::is_directory(snapshot, ec)) {
    out.state = hub_cache_lookup::status::no_revision;
    return out;
  }
  out.file = snapshot / std::string(filename);
  out.state = std::filesystem::is_regular_file(out.file, ec) ? hub_cache_lookup::status::found
                                                             : hub_cache_lookup::status::no_file;
  return out;
}

/// Fills `cache` with the config.json of a model the cache lacks (io/hub_download.hpp: a download over HTTPS,
/// where the programs were built with libcurl). Returns false when it declined to try (HF_HUB_OFFLINE); a
/// failed try is an input_error naming `where`. An empty fetcher is a cache that is only read.
using hub_fetcher =
    std::function<bool(const hub_model_id& id, const std::filesystem::path& cache, const std::string& where)>;

/// Why a lookup found nothing, in a sentence naming the folder looked in and how to fill it.
[[nodiscard]] inline std::string hub_cache_miss(const hub_model_id& id, const hub_cache_lookup& l,
                                                const std::filesystem::path& cache) {
  using st = hub_cache_lookup::status;
  const std::string fill =
      "; the programs download it when built with libcurl and HF_HUB_OFFLINE is unset, "
      "or fetch it with `huggingface-cli download " +
      id.repo + (id.revision == "main" ? "" : " --revision " + id.revision) +
      " config.json`, or give the config.json's path";
  switch (l.state) {
    case st::no_repo:
      return "not in the Hugging Face cache (looked for " + l.repo_dir.string() +
             "; the cache is HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub: " +
             cache.string() + ")" + fill;
    case st::no_revision:
      return "revision '" + id.revision + "' is not in the cache (" + l.repo_dir.string() + " has no refs/" +
             id.revision + " and no snapshots/" + id.revision + ")" + fill;
    case st::known_missing:
      return "the Hub answered that revision " + l.commit + " has no config.json (" + l.repo_dir.string() +
             "/.no_exist)";
    case st::no_file:
      return "the cached snapshot " + l.file.parent_path().string() + " has no config.json" + fill;
    case st::found:
      break;
  }
  return {};
}

}  // namespace headroom
