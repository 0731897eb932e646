// SPDX-License-Identifier: MIT
// Shared by the example programs: strict number parsing for flags, and the exit-code contract
// (0 ok, 1 does not fit the given budget, 2 bad input).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include "../error.hpp"
#include "../io/config.hpp"
#include "../io/gpu.hpp"
#include "../number_text.hpp"
#include "help.hpp"

namespace headroom::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_does_not_fit = 1;
inline constexpr int exit_bad_input = 2;

/// A positive integer flag value, with thousands separators ("1,024"); "-5", "0", "1.5", "abc" and absurd
/// values are errors naming it. `kind` adds the suffixes of lengths (4k) or token counts (2B):
/// number_text.hpp.
inline std::uint64_t parse_count(const std::string& flag, const std::string& text,
                                 std::uint64_t limit = std::uint64_t{1} << 40,
                                 number_kind kind = number_kind::count) {
  return parse_number(flag, text, kind, limit);
}
/// A sequence length: 4096, 32,768, 4k, 32K (k = 1024).
inline std::uint64_t parse_length(const std::string& flag, const std::string& text, std::uint64_t limit) {
  return parse_count(flag, text, limit, number_kind::length);
}

/// The smallest nonzero decimal a flag takes: learning rates, rates and fractions are far above it, and
/// below it lie the denormals that std::stod refused with a bare "stod" (issue 31, MI-01).
inline constexpr double min_nonzero_decimal = 1e-30;

/// A decimal flag value: the integer flags' digits, optionally a "." and digits, optionally an exponent
/// ("0.5", "12", "0", "2e-4", "1.5E3"). Signs, hex, spaces, "inf" and "nan" are errors naming the flag.
inline double parse_decimal(const std::string& flag, const std::string& text) {
  const auto digits = [](const std::string& part) {
    return !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
  };
  const auto e = text.find_first_of("eE");
  const std::string mantissa = text.substr(0, e);
  const auto dot = mantissa.find('.');
  std::string exponent = e == std::string::npos ? "0" : text.substr(e + 1);
  if (!exponent.empty() && (exponent[0] == '-' || exponent[0] == '+')) exponent = exponent.substr(1);
  if (!digits(mantissa.substr(0, dot)) || (dot != std::string::npos && !digits(mantissa.substr(dot + 1))) ||
      !digits(exponent) || exponent.size() > 3)
    throw input_error(flag, "expected a decimal number such as 0.5, 12 or 2e-4, got '" + text + "'");
  const double v = std::strtod(text.c_str(), nullptr);  // no exception: under- and overflow checked here
  if (!std::isfinite(v) || v > 1e15) throw input_error(flag, "is absurdly large ('" + text + "')");
  if (v != 0 && v < min_nonzero_decimal)
    throw input_error(flag, "'" + text + "' is out of range: a nonzero value below 1e-30 means nothing here");
  return v;
}

/// A positive decimal flag value (zero is an error).
inline double parse_positive(const std::string& flag, const std::string& text) {
  const double v = parse_decimal(flag, text);
  if (!(v > 0)) throw input_error(flag, "expected a positive number, got '" + text + "'");
  return v;
}

/// A decimal flag value >= 0.
inline double parse_nonnegative(const std::string& flag, const std::string& text) {
  return parse_decimal(flag, text);
}

/// A probability in [0, 1) (lora_dropout, attention_dropout).
inline double parse_fraction(const std::string& flag, const std::string& text) {
  const double v = parse_nonnegative(flag, text);
  if (v >= 1.0) throw input_error(flag, "must be below 1, got '" + text + "'");
  return v;
}

/// A sweep such as "seq-len=512:32768:x2" (doubling) or "batch=1:64" (step 1, or ":+K").
struct sweep_spec {
  std::string dimension;  ///< "seq-len" or "batch"
  std::vector<std::uint64_t> values;
};
inline sweep_spec parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    throw input_error("--sweep", "expected DIM=FROM:TO[:xK|:+K], e.g. seq-len=512:32768:x2");
  sweep_spec s;
  s.dimension = text.substr(0, eq);
  if (s.dimension != "seq-len" && s.dimension != "batch")
    throw input_error("--sweep", "unknown dimension '" + s.dimension + "'; valid: seq-len, batch");
  std::vector<std::string> parts;
  std::string rest = text.substr(eq + 1);
  for (std::size_t pos; (pos = rest.find(':')) != std::string::npos; rest = rest.substr(pos + 1))
    parts.push_back(rest.substr(0, pos));
  parts.push_back(rest);
  if (parts.size() < 2 || parts.size() > 3) throw input_error("--sweep", "expected FROM:TO or FROM:TO:STEP");
  const number_kind kind = s.dimension == "seq-len" ? number_kind::length : number_kind::count;
  const std::uint64_t from = parse_count("--sweep", parts[0], std::uint64_t{1} << 26, kind);
  const std::uint64_t to = parse_count("--sweep", parts[1], std::uint64_t{1} << 26, kind);
  if (to < from) throw input_error("--sweep", "TO must not be below FROM");
  bool geometric = false;
  std::uint64_t step = 1;
  if (parts.size() == 3) {
    const std::string& st = parts[2];
    if (st.size() < 2 || (st[0] != 'x' && st[0] != '+'))
      throw input_error("--sweep", "STEP must be xK or +K");
    geometric = st[0] == 'x';
    step = parse_count("--sweep", st.substr(1), 1u << 20);
    if (geometric && step < 2) throw input_error("--sweep", "a geometric step must be at least x2");
  }
  for (std::uint64_t v = from; v <= to; v = geometric ? v * step : v + step) {
    s.values.push_back(v);
    if (s.values.size() > 4096) throw input_error("--sweep", "more than 4,096 values");
  }
  return s;
}

/// Whether `dir` holds a *.json file (stopping at the first one found).
inline bool holds_json(const std::filesystem::path& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") return true;
  return false;
}
/// --preset-dir names a folder of presets (model files, or GPU files under gpus/): a file, a missing folder
/// or one with no preset in it was searched silently, the built-in presets answering instead (issue 31,
/// SI-41..43).
inline void check_preset_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw input_error("--preset-dir", "'" + dir + "' is not a directory");
  if (!holds_json(dir) && !holds_json(std::filesystem::path(dir) / "gpus"))
    throw input_error("--preset-dir", "'" + dir + "' holds no preset files (*.json, or gpus/*.json)");
}

/// Where the programs look for presets: --preset-dir, $HEADROOM_PRESET_DIR, then the data dir of an
/// installed program (<prefix>/share/headroom/presets beside <prefix>/bin), then the source tree.
inline std::vector<std::filesystem::path> program_search_path(const std::string& preset_dir) {
  std::optional<std::filesystem::path> dir;
  if (!preset_dir.empty()) {
    check_preset_dir(preset_dir);
    dir = preset_dir;
  }
  std::vector<std::filesystem::path> dirs = preset_search_path(dir);
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "headroom" / "presets";
    auto before = dirs.end();  // ahead of the source tree's presets/, when the build knows it
#ifdef HEADROOM_PRESET_SOURCE_DIR
    if (!dirs.empty() && dirs.back() == std::filesystem::path(HEADROOM_PRESET_SOURCE_DIR))
      before = dirs.end() - 1;
#endif
    if (std::filesystem::is_directory(installed, ec)) dirs.insert(before, installed);
  }
  return dirs;
}

/// Writes `text` to the file `path` named by `flag` (an --svg chart), never over a file the run read
/// (`read_files`: --config, --recipe, ...): a regular file is written under a temporary name beside it and
/// renamed, so a failed write leaves the old file whole; a device or FIFO (/dev/stdout) is written in place.
/// Every failure (a full disk, a missing folder) is an input_error naming the flag (issue 31).
inline void write_output_file(const std::string& flag, const std::string& path, const std::string& text,
                              const std::vector<std::string>& read_files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& read : read_files)
    if (!read.empty() && fs::equivalent(path, read, ec))
      throw input_error(flag, "'" + path + "' is a file this run reads; refusing to write over it");
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) throw input_error(flag, "'" + path + "' is a directory");
  const bool in_place = fs::exists(status) && !fs::is_regular_file(status);
  const std::string target = in_place ? path : path + ".headroom-tmp";
  auto fail = [&](int error) {
    if (!in_place) fs::remove(target, ec);
    throw input_error(flag, "cannot write '" + path + "': " + std::strerror(error));
  };
  errno = 0;
  std::FILE* f = std::fopen(target.c_str(), "w");
  if (f == nullptr) fail(errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int error = errno;
  if (std::fclose(f) != 0 || !written) fail(written ? errno : error);
  if (!in_place) {
    fs::rename(target, path, ec);
    if (ec) fail(ec.value());
  }
}

/// The exit code `rc` once standard output is flushed: a full disk or a closed stdout is exit 2 naming the
/// output, never a silent success (issue 31).
inline int checked_stdout(int rc) {
  // errno is left as the failed write set it: a flush after an earlier failure may make no call of its own.
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return rc;
  std::fprintf(stderr, "error: standard output: cannot write (%s)\n",
               errno != 0 ? std::strerror(errno) : "a write failed");
  return exit_bad_input;
}

/// `text` with control characters (ESC and the like, from a config's name or a flag) written as \\xNN, so
/// that printing a file's strings cannot drive the terminal (issue 31, SI-38..40); newlines and tabs stay.
inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
      constexpr std::string_view hex = "0123456789abcdef";
      out.append("\\x").push_back(hex[u >> 4]);
      out.push_back(hex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

/// Parses the command line and runs `body`, mapping every failure to the exit-code contract.
template <class Body>
int run(CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
    // An empty value is an error, not an absent flag: `--zero ""` must not price DDP.
    for (const CLI::Option* opt : app.get_options())
      if (opt->count() > 0 && opt->get_expected_min() > 0)
        for (const std::string& value : opt->results())
          if (value.empty())
            throw input_error(opt->get_name(), "is empty; give a value or leave the flag out");
    return checked_stdout(body());
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return checked_stdout(exit_ok);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\nrun with --help for the options\n", printable(e.what()).c_str());
    return exit_bad_input;
  } catch (const input_error& e) {
    std::fprintf(stderr, "error: %s\n", printable(e.what()).c_str());
    return exit_bad_input;
  } catch (const std::system_error& e) {  // fmt::print's failed write to a full or closed stdout
    if (std::ferror(stdout) != 0)
      std::fprintf(stderr, "error: standard output: cannot write (%s)\n", e.code().message().c_str());
    else
      std::fprintf(stderr, "error: %s\n", e.what());
    return exit_bad_input;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", printable(e.what()).c_str());
    return exit_bad_input;
  }
}

}  // namespace headroom::cli
