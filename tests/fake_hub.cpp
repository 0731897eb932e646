// SPDX-License-Identifier: MIT
// A fake Hugging Face Hub on 127.0.0.1 for the download tests (issue 32): never the real network. It answers
// GET /ORG/NAME/resolve/REVISION/FILE as the Hub's resolve endpoint does, with the headers huggingface_hub
// reads (X-Repo-Commit, X-Linked-Etag / ETag, X-Error-Code), and misbehaves on purpose for some repositories:
// a redirect, 401s, 404s, a 500, a stall and a truncated body. It prints its port, serves each connection on
// its own thread (a stall holds up no other test), and exits after `idle` seconds without one (default 60) so
// that a test that dies never leaves it behind. Usage: fake_hub [IDLE_SECONDS]
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

const char* const commit = "0123456789abcdef0123456789abcdef01234567";
const char* const token = "hf_headroom_test_token";
const char* const config =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 512, "
    "\"intermediate_size\": 1376, \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
    "\"num_key_value_heads\": "
    "4, \"vocab_size\": 32000, \"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-05, "
    "\"tie_word_embeddings\": "
    "false, \"torch_dtype\": \"bfloat16\"}\n";

void send_all(int fd, const std::string& s) {
  std::size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

std::string response(int status, const std::string& reason, const std::string& headers,
                     const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" + headers +
         "\r\n" + body;
}

std::string error(int status, const std::string& reason, const std::string& code, const std::string& message,
                  const std::string& more = "") {
  return response(status, reason, "X-Error-Code: " + code + "\r\nX-Error-Message: " + message + "\r\n" + more,
                  "{\"error\": \"" + message + "\"}");
}

std::string found(const std::string& body) {
  return response(200, "OK",
                  std::string("Content-Type: application/json\r\nX-Repo-Commit: ") + commit +
                      "\r\nETag: \"a1b2c3d4e5f60718293a4b5c6d7e8f9012345678\"\r\n",
                  body);
}

// The answer to one request line and its headers.
std::string answer(int fd, const std::string& path, const std::string& headers) {
  const bool authorised = headers.find(std::string("Authorization: Bearer ") + token) != std::string::npos;
  const std::string resolve = "/resolve/";
  const auto at = path.find(resolve);
  if (at == std::string::npos) return error(404, "Not Found", "EntryNotFound", "no such route");
  const std::string repo = path.substr(1, at - 1), rest = path.substr(at + resolve.size());
  const std::string revision = rest.substr(0, rest.find('/')), file = rest.substr(rest.find('/') + 1);
  const bool known_revision = revision == "main" || revision == commit;
  if (repo == "headroom-tests/tiny-llama" || (repo == "headroom-tests/gated" && authorised)) {
    if (!known_revision) return error(404, "Not Found", "RevisionNotFound", "Invalid rev id: " + revision);
    if (file == "config.json") return found(config);
    return error(404, "Not Found", "EntryNotFound", "Entry not found",  // the Hub names the commit
                 "X-Repo-Commit: " + std::string(commit) + "\r\n");
  }
  if (repo == "headroom-tests/gated")
    return error(401, "Unauthorized", "GatedRepo",
                 "Access to model headroom-tests/gated is restricted. You must have access to it and be "
                 "authenticated to access it. Please log in.");
  if (repo == "headroom-tests/renamed")  // a relative redirect, as the Hub sends for a renamed repository
    return response(307, "Temporary Redirect",
                    "Location: /headroom-tests/tiny-llama/resolve/" + rest + "\r\n", "");
  if (repo == "headroom-tests/broken") return response(500, "Internal Server Error", "", "{}");
  if (repo == "headroom-tests/truncated") {  // promises 4,000 bytes, sends 40 and hangs up
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\nX-Repo-Commit: " + std::string(commit) +
                     "\r\nETag: \"feed\"\r\nConnection: close\r\n\r\n" + std::string(config).substr(0, 40));
    return "";
  }
  if (repo == "headroom-tests/slow") {  // headers, then nothing for longer than the client's timeout
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\nConnection: close\r\n\r\n{");
    std::this_thread::sleep_for(std::chrono::seconds(4));
    return "";
  }
  // A missing or private repository: the Hub answers 401 RepoNotFound to a request without a token.
  return error(401, "Unauthorized", "RepoNotFound", "Repository Not Found for url: " + path);
}

void serve(int client) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return;
    const ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<std::size_t>(n));
  }
  const auto sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return;
  const std::string method = request.substr(0, sp1), path = request.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string out = answer(client, path, request);
  if (method == "HEAD" && !out.empty()) out = out.substr(0, out.find("\r\n\r\n") + 4);
  send_all(client, out);
}

}  // namespace

int main(int argc, char** argv) {
  const int idle = argc > 1 ? std::atoi(argv[1]) : 60;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // any free port, printed below
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("fake_hub");
    return 2;
  }
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, idle * 1000) <= 0) return 0;  // idle: the tests are done (or gone)
    const int client = ::accept(fd, nullptr, nullptr);
    if (client < 0) continue;
    std::thread([client] {
      serve(client);
      ::close(client);
    }).detach();
  }
}
