// SPDX-License-Identifier: MIT
// Fills the local Hugging Face cache from the Hub over HTTPS with libcurl (target headroom::hub, Debian
// libcurl4-openssl-dev): the resolve URL, token, offline switch, timeout and cache layout of
// huggingface_hub's hf_hub_download (constants.py, file_download.py _hf_hub_download_to_cache_dir,
// utils/_http.py hf_raise_for_status), so that transformers reuses what is written. docs/presets.md "Pointing
// at your model".
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <curl/curl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "hub_cache.hpp"

namespace headroom {

/// What a download reads from the environment (constants.py), as given.
struct hub_endpoint {
  std::string endpoint = "https://huggingface.co";  ///< HF_ENDPOINT, trailing '/' removed
  std::string token;     ///< HF_TOKEN, HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH / $HF_HOME/token
  bool offline = false;  ///< HF_HUB_OFFLINE (else TRANSFORMERS_OFFLINE): 1, ON, YES or TRUE in any case
  long timeout_s = 10;   ///< HF_HUB_DOWNLOAD_TIMEOUT (seconds without data)
  std::uint64_t max_bytes = 16u << 20;  ///< a config or index larger than this is refused
};

namespace detail {
inline std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}
inline bool env_true(const std::string& v) {  // constants.py _is_true: value.upper() in ENV_VARS_TRUE_VALUES
  std::string u;
  for (char c : v) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u == "1" || u == "ON" || u == "YES" || u == "TRUE";
}
/// quote(x, safe="") of hf_hub_url for a revision, quote(x) for a filename (its '/' kept).
inline std::string url_quote(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
      out += static_cast<char>(c);
    else
      out += {'%', hex[c >> 4], hex[c & 15]};
  }
  return out;
}
/// _normalize_etag: W/ and the quotes removed; refused unless it is a plain name (it becomes a file name).
inline std::string blob_name(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
  const bool plain = !etag.empty() && etag.size() <= 128 && std::all_of(etag.begin(), etag.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
  return plain ? etag : std::string();
}

/// One response: its status, the headers huggingface_hub reads (the last response's, after redirects) and
/// body.
struct hub_response {
  long status = 0;
  std::string commit, etag, linked_etag, error_code, error_message, body;
  bool too_large = false;
  std::uint64_t limit = 0;
};
inline std::size_t hub_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& r = *static_cast<hub_response*>(user);
  if (r.body.size() + size * n > r.limit) {
    r.too_large = true;
    return 0;  // curl stops with CURLE_WRITE_ERROR
  }
  r.body.append(data, size * n);
  return size * n;
}
inline std::size_t hub_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& r = *static_cast<hub_response*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect): forget the last one's headers
    r = hub_response{0, {}, {}, {}, {}, {}, r.body, r.too_large, r.limit};
    return size * n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string key = line.substr(0, colon), value = line.substr(colon + 1);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  value.erase(0, value.find_first_not_of(" \t"));
  if (key == "x-repo-commit") r.commit = value;
  if (key == "etag") r.etag = value;
  if (key == "x-linked-etag") r.linked_etag = value;
  if (key == "x-error-code") r.error_code = value;
  if (key == "x-error-message") r.error_message = value;
  return size * n;
}

/// Writes `data` to `path` under `<path>.incomplete` and renames it, as the download does.
inline void write_cache_file(const std::filesystem::path& path, const std::string& data) {
  std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path temp = path.string() + ".incomplete";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << data;
    out.close();
    if (!out) throw input_error(path.string(), "cannot write the Hugging Face cache here");
  }
  std::filesystem::rename(temp, path);
}
}  // namespace detail

/// The download settings of this process's environment (constants.py).
[[nodiscard]] inline hub_endpoint hub_endpoint_of_process() {
  hub_endpoint e;
  if (std::string v = detail::env_text("HF_ENDPOINT"); !v.empty()) {
    while (!v.empty() && v.back() == '/') v.pop_back();
    e.endpoint = v;
  }
  std::string offline = detail::env_text("HF_HUB_OFFLINE");  // os.environ.get(A) or os.environ.get(B)
  e.offline = detail::env_true(offline.empty() ? detail::env_text("TRANSFORMERS_OFFLINE") : offline);
  if (const std::string t = detail::env_text("HF_HUB_DOWNLOAD_TIMEOUT"); !t.empty()) {
    char* end = nullptr;
    const double s = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !(s > 0) || s > 3600)
      throw input_error("HF_HUB_DOWNLOAD_TIMEOUT", "'" + t + "' is not a number of seconds in (0, 3600]");
    e.timeout_s = std::max(1L, static_cast<long>(s));
  }
  e.token = detail::env_text("HF_TOKEN");  // utils/_auth.py _get_token_from_environment, then the file
  if (e.token.empty()) e.token = detail::env_text("HUGGING_FACE_HUB_TOKEN");
  if (e.token.empty()) {
    std::filesystem::path file = detail::env_text("HF_TOKEN_PATH");
    if (file.empty()) file = hub_home_dir(hub_environment_of_process()) / "token";
    if (std::ifstream in(file); in) std::getline(in, e.token);
    while (!e.token.empty() && std::isspace(static_cast<unsigned char>(e.token.back()))) e.token.pop_back();
  }
  return e;
}

/// Downloads `filename` of `id` into `cache` in huggingface_hub's layout: blobs/<etag>, a relative link
/// snapshots/<commit>/<filename> to it, refs/<revision> holding the commit; a file the Hub says is absent is
/// recorded under .no_exist/<commit>/ and returns false. Every failure is an input_error naming `where`.
inline bool download_to_hub_cache(const hub_model_id& id, std::string_view filename,
                                  const std::filesystem::path& cache, const hub_endpoint& hub,
                                  const std::string& where) {
  const std::string name = id.repo + (id.revision == "main" ? "" : "@" + id.revision);
  if (hub.offline)
    throw input_error(where, name + ": not in the Hugging Face cache (" + cache.string() +
                                 ") and HF_HUB_OFFLINE is set, so nothing is downloaded");
  // hf_hub_url: {endpoint}/{repo_id}/resolve/{quote(revision, safe="")}/{quote(filename)}
  const std::string url = hub.endpoint + "/" + id.repo + "/resolve/" + detail::url_quote(id.revision, false) +
                          "/" + detail::url_quote(filename, true);
  static const bool curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  CURL* curl = curl_ready ? curl_easy_init() : nullptr;
  if (curl == nullptr) throw input_error(where, "libcurl could not start");
  detail::hub_response r;
  r.limit = hub.max_bytes;
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + hub.token;
  if (!hub.token.empty()) headers = curl_slist_append(headers, auth.c_str());
  char curl_error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "headroom (libcurl)");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);  // renamed repositories redirect; the token is kept
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);       // on the same host only (curl drops it elsewhere)
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, hub.timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // no byte for timeout_s seconds: given up
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, hub.timeout_s);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, detail::hub_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, detail::hub_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  const std::string at = " (" + url + ")";
  if (r.too_large)
    throw input_error(where, name + ": " + std::string(filename) + " is larger than " +
                                 std::to_string(hub.max_bytes) + " bytes" + at);
  if (rc == CURLE_PARTIAL_FILE)
    throw input_error(where, name + ": the download of " + std::string(filename) + " was cut short after " +
                                 std::to_string(r.body.size()) + " bytes" + at + "; nothing was cached");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw input_error(where, name + ": no data for " + std::to_string(hub.timeout_s) +
                                 " s (HF_HUB_DOWNLOAD_TIMEOUT)" + at + "; nothing was cached");
  if (rc != CURLE_OK)
    throw input_error(where, name + ": cannot reach the Hub at " + hub.endpoint + " (HF_ENDPOINT): " +
                                 (*curl_error != '\0' ? std::string(curl_error) : curl_easy_strerror(rc)) +
                                 "; with HF_HUB_OFFLINE=1 only the cache is read");
  // hf_raise_for_status: the error code header decides, then the status.
  const std::string said = r.error_message.empty() ? "" : " (the Hub: " + r.error_message + ")";
  if (r.error_code == "GatedRepo" || (r.status == 403 && r.error_code.empty()))
    throw input_error(
        where, name + " is gated: accept its licence on the Hub, then set HF_TOKEN" +
                   std::string(hub.token.empty() ? " (no token was sent)" : " (the token was refused)") +
                   said);
  if (r.error_code == "RepoNotFound" || (r.status == 401 && r.error_code.empty()))
    throw input_error(where, name + ": no such repository on " + hub.endpoint +
                                 std::string(hub.token.empty() ? " (or it is private: set HF_TOKEN)" : "") +
                                 said);
  if (r.error_code == "RevisionNotFound")
    throw input_error(where, name + ": the repository has no revision '" + id.revision + "'" + said);
  if (r.error_code == "EntryNotFound" || r.status == 404) {  // _hf_hub_download_to_cache_dir: .no_exist
    if (detail::is_commit_hash(r.commit))
      detail::write_cache_file(
          find_in_hub_cache(cache, id, filename).repo_dir / ".no_exist" / r.commit / std::string(filename),
          "");
    return false;
  }
  if (r.status != 200)
    throw input_error(where, name + ": the Hub answered HTTP " + std::to_string(r.status) + at + said);
  const std::string commit =
      detail::is_commit_hash(r.commit) ? r.commit : (detail::is_commit_hash(id.revision) ? id.revision : "");
  const std::string blob = detail::blob_name(r.linked_etag.empty() ? r.etag : r.linked_etag);
  if (commit.empty() || blob.empty())
    throw input_error(where, name + ": the answer has no commit (X-Repo-Commit) or no ETag" + at);
  const std::filesystem::path repo = find_in_hub_cache(cache, id, filename).repo_dir;
  detail::write_cache_file(repo / "blobs" / blob, r.body);
  const std::filesystem::path pointer = repo / "snapshots" / commit / std::string(filename);
  std::filesystem::create_directories(pointer.parent_path());
  std::error_code ec;
  std::filesystem::remove(pointer, ec);
  // _create_symlink: a relative link into blobs/, a copy where links cannot be made.
  std::filesystem::create_symlink(std::filesystem::relative(repo / "blobs" / blob, pointer.parent_path()),
                                  pointer, ec);
  if (ec) std::filesystem::copy_file(repo / "blobs" / blob, pointer);
  if (id.revision != commit) detail::write_cache_file(repo / "refs" / id.revision, commit);
  return true;
}

/// The fetcher the programs hand to load_model_named: config.json, then the safetensors index beside it (for
/// the parameter count's cross-check; a failure there only leaves the check out), into the cache, with the
/// process's settings. Declines (false) under HF_HUB_OFFLINE, as huggingface_hub does.
[[nodiscard]] inline hub_fetcher hub_downloader() {
  return [](const hub_model_id& id, const std::filesystem::path& cache, const std::string& where) {
    const hub_endpoint hub = hub_endpoint_of_process();
    if (hub.offline) return false;
    if (!download_to_hub_cache(id, "config.json", cache, hub, where))
      throw input_error(where, id.repo + ": the repository has no config.json at revision " + id.revision);
    try {
      (void)download_to_hub_cache(id, "model.safetensors.index.json", cache, hub, where);
    } catch (const input_error&) {  // the count is the shapes' either way; only its cross-check is lost
    }
    return true;
  };
}

}  // namespace headroom
