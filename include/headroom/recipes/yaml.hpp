// SPDX-License-Identifier: MIT
// YAML files as headroom reads them: yaml-cpp parses, the document becomes JSON with the line of every key,
// and typed reads name file, line and key in their errors. Used by recipe.hpp and accelerate.hpp.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "../io/config.hpp"
#include "../io/training_args.hpp"
#include "../request.hpp"

namespace headroom {

namespace detail {

/// A YAML document as JSON, with the line of every key ("a.b.c" → line) for messages.
struct yaml_doc {
  nlohmann::json root;
  std::map<std::string, int> lines;
  std::string file;
  /// "file:LINE: key" for a dotted key (its nearest located parent when it has no line of its own).
  [[nodiscard]] std::string at(const std::string& key) const {
    std::string k = key;
    for (;;) {
      if (const auto it = lines.find(k); it != lines.end())  // line 0: set on the command line
        return it->second == 0 ? "--set " + key : file + ":" + std::to_string(it->second) + ": " + key;
      const auto dot = k.rfind('.');
      if (dot == std::string::npos) return file + ": " + key;
      k.resize(dot);
    }
  }
};

/// A plain YAML scalar typed as YAML 1.2's core schema types it (and YAML 1.1's True/False, which
/// PyYAML and OmegaConf read); a quoted scalar stays a string.
inline nlohmann::json yaml_scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::int64_t i = 0;
  const char* end = s.data() + s.size();
  const char* first = s.data() + (s.front() == '+' ? 1 : 0);
  if (auto [p, ec] = std::from_chars(first, end, i); ec == std::errc() && p == end) return i;
  // 0x800 and 0o17, as the core schema (and PyYAML, for axolotl) read them (issue 31, MI-25)
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    const int base = s[1] == 'x' ? 16 : 8;
    if (auto [p, ec] = std::from_chars(s.data() + 2, end, i, base); ec == std::errc() && p == end) return i;
  }
  const bool numeric = std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == 'e' || c == 'E' || c == '-' ||
           c == '+';
  });
  if (numeric && std::isdigit(static_cast<unsigned char>(s.back())) != 0) {
    try {
      std::size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {  // out of range or not a number: keep the text
    }
  }
  return s;
}

/// Text from the file, refused unless it is UTF-8 (JSON's strings, and every message, need it).
inline const std::string& utf8_text(const YAML::Node& n, const yaml_doc& doc) {
  try {
    (void)nlohmann::json(n.Scalar()).dump();
  } catch (const nlohmann::json::exception&) {
    throw input_error(doc.file + ":" + std::to_string(n.Mark().line + 1), "is not UTF-8 text");
  }
  return n.Scalar();
}

/// Bounds on a YAML document read as JSON (issue 31): an alias is expanded by copying its anchor's value, so
/// a self-reference never ends and nine levels of nine aliases make 9^9 nodes. docs/errors.md "Limits".
inline constexpr std::size_t max_yaml_depth = 256;
inline constexpr std::size_t max_yaml_nodes = 100'000;  // recipes hold hundreds

/// The walk's state: the nodes open above this one (yaml-cpp gives an alias its anchor's very node), the
/// nodes copied so far, and the text (to name an anchor in a message).
struct yaml_walk {
  std::vector<YAML::Node> open;
  std::size_t nodes = 0;
  std::string_view text;
};
/// The anchor written before `n` in the text (`&x`), or "" when it cannot be found.
inline std::string anchor_before(const YAML::Node& n, std::string_view text) {
  const auto pos = static_cast<std::size_t>(std::max(0, n.Mark().pos));
  const std::size_t from = pos > 256 ? pos - 256 : 0;
  const std::size_t amp = text.substr(0, std::min(pos + 1, text.size())).rfind('&');
  if (amp == std::string_view::npos || amp < from) return "";
  std::size_t e = amp + 1;
  while (e < text.size() && std::string_view(" \t\r\n,[]{}").find(text[e]) == std::string_view::npos) ++e;
  return std::string(text.substr(amp + 1, e - amp - 1));
}
/// Where a walk error is: the --set override, else "file:LINE: key".
inline std::string walk_error_at(const yaml_doc& doc, const std::string& path) {
  return doc.file.rfind("--set ", 0) == 0 || path.empty() ? doc.file : doc.at(path);
}

/// YAML's merge key (`<<: *base`, yaml.org/type/merge.html, as PyYAML reads it for axolotl and
/// LLaMA-Factory): the mapping's (or each listed mapping's) keys join `out` unless `out` sets them itself.
inline void merge_keys(nlohmann::json& out, const nlohmann::json& value, const std::string& path, int line,
                       yaml_doc& doc) {
  const std::string where =
      doc.file + ":" + std::to_string(line) + ": " + (path.empty() ? "<<" : path + ".<<");
  const auto one = [&](const nlohmann::json& m) {
    if (!m.is_object()) throw input_error(where, "a merge key takes a mapping or a list of mappings");
    for (const auto& [k, v] : m.items())
      if (!out.contains(k)) {
        out[k] = v;
        doc.lines[path.empty() ? k : path + "." + k] = line;
      }
  };
  if (value.is_array())
    for (const auto& m : value) one(m);
  else
    one(value);
}

inline nlohmann::json yaml_to_json(const YAML::Node& n, const std::string& path, yaml_doc& doc,
                                   yaml_walk& walk) {
  for (const YAML::Node& above : walk.open)
    if (above.is(n)) {
      const std::string name = anchor_before(above, walk.text);
      throw input_error(walk_error_at(doc, path),
                        name.empty() ? "an alias refers to its own anchor"
                                     : "alias *" + name + " refers to its own anchor &" + name);
    }
  if (++walk.nodes > max_yaml_nodes)
    throw input_error(walk_error_at(doc, path),
                      "alias expansion exceeds the limit of " + std::to_string(max_yaml_nodes) + " nodes");
  if (walk.open.size() == max_yaml_depth)
    throw input_error(walk_error_at(doc, path),
                      "nested deeper than the limit of " + std::to_string(max_yaml_depth) + " levels");
  nlohmann::json out;
  walk.open.push_back(n);
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      out = nlohmann::json::object();
      std::vector<std::pair<nlohmann::json, int>> merged;  // `<<: *base` values and their lines
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          throw input_error(doc.file + ":" + std::to_string(kv.first.Mark().line + 1),
                            "a mapping key must be a plain name");
        const std::string& name = utf8_text(kv.first, doc);
        const std::string key = path.empty() ? name : path + "." + name;
        const int line = kv.first.Mark().line + 1;
        if (name == "<<" && kv.first.Tag() != "!") {  // a quoted "<<" is a plain key
          merged.emplace_back(yaml_to_json(kv.second, key, doc, walk), line);
          continue;
        }
        if (out.contains(name))  // OmegaConf (torchtune) refuses it; PyYAML keeps the last silently
          throw input_error(
              doc.file + ":" + std::to_string(line) + ": " + key,
              "duplicate key (first at line " + std::to_string(doc.lines[key]) + "); give it once");
        doc.lines[key] = line;
        out[name] = yaml_to_json(kv.second, key, doc, walk);
      }
      for (const auto& [value, line] : merged) merge_keys(out, value, path, line, doc);
      break;
    }
    case YAML::NodeType::Sequence:
      out = nlohmann::json::array();
      for (const auto& item : n) out.push_back(yaml_to_json(item, path, doc, walk));
      break;
    case YAML::NodeType::Scalar:
      (void)utf8_text(n, doc);
      out = yaml_scalar(n);
      break;
    default:
      break;
  }
  walk.open.pop_back();
  return out;
}

/// Checks YAML text in one pass over its lines before yaml-cpp parses it (issue 31):
/// · nesting deeper than max_yaml_depth is refused by line and the key it starts with (yaml-cpp's recursive
///   parser gave up with "bad file" on 100,000 '[' or 2,000 indented levels: MI-21..23): per line, the open
///   block levels (a stack of indentations) and the flow brackets still open, outside quotes and comments;
/// · a second document is refused at its "---" marker, a line starting "---" at column 0 after content (a
///   block scalar's lines are indented; markers before any content open the first). YAML::Load drops the
///   rest (SI-27), and YAML::LoadAll never returns on some malformed text (yaml-cpp 0.7, the recipe fuzzer).
/// A deep line anywhere is named before a second document.
inline void check_yaml_text(std::string_view text, const std::string& file) {
  std::vector<std::size_t> indents;
  std::size_t flow = 0, line_no = 0, second = 0;
  char quote = 0;
  bool content = false;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const bool marker = line.substr(0, 3) == "---" && (line.size() == 3 || line[3] == ' ' || line[3] == '\r');
    if (marker && content && second == 0) second = line_no;
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (!marker && first != std::string_view::npos && line[first] != '#' && line[0] != '%') content = true;
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos || line[indent] == '#') continue;
    if (flow == 0 && quote == 0) {
      while (!indents.empty() && indents.back() >= indent) indents.pop_back();
      indents.push_back(indent);
    }
    for (std::size_t i = indent; i < line.size(); ++i) {
      const char c = line[i];
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
        break;
      } else if (c == '[' || c == '{') {
        ++flow;
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
      if (flow + indents.size() > max_yaml_depth) {
        const std::string_view head = line.substr(indent, line.find(':', indent) - indent);
        const bool named = head.find_first_of("[]{}\"' ") == std::string_view::npos && !head.empty();
        throw input_error(
            file + ":" + std::to_string(line_no) + (named ? ": " + std::string(head.substr(0, 40)) : ""),
            "nested deeper than the limit of " + std::to_string(max_yaml_depth) + " levels");
      }
    }
  }
  if (second != 0)
    throw input_error(file + ":" + std::to_string(second),
                      "a second YAML document; a config is one document");
}

/// Parses YAML text (`file` names it in errors); a syntax error names the line.
inline yaml_doc parse_yaml_text(const std::string& text, const std::string& file) {
  yaml_doc doc;
  doc.file = file;
  check_yaml_text(text, file);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw input_error(doc.file + ":" + std::to_string(e.mark.line + 1), "malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) throw input_error(doc.file, "expected a YAML mapping of config keys at the top level");
  yaml_walk walk;
  walk.text = text;
  doc.root = yaml_to_json(root, "", doc, walk);
  return doc;
}
/// Applies `key.path=value` overrides, as `tune run ... compile=True` and `llamafactory-cli train x.yaml
/// key=value` do: the value is read as a YAML scalar or flow collection; errors name the override.
inline void apply_overrides(yaml_doc& doc, const std::vector<std::string>& overrides) {
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0 || o.find("..") != std::string::npos || o.front() == '.' ||
        o[eq - 1] == '.')
      throw input_error("--set", "expected key.path=value, got '" + o + "'");
    const std::string key = o.substr(0, eq);
    if (o.find_first_not_of(" \t", eq + 1) == std::string::npos)  // as every other empty flag (SI-13)
      throw input_error("--set " + key, "is empty; give a value or leave the flag out");
    yaml_doc value;
    value.file = "--set " + key;
    YAML::Node node;
    try {
      node = YAML::Load(o.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw input_error("--set " + key, "malformed value: " + e.msg);
    }
    nlohmann::json* at = &doc.root;
    std::string path;
    for (std::size_t start = 0;;) {
      const auto dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      path += (path.empty() ? "" : ".") + part;
      if (at->is_null()) *at = nlohmann::json::object();
      if (!at->is_object()) throw input_error("--set " + key, "a part of it is not a mapping in " + doc.file);
      at = &(*at)[part];
      doc.lines[path] = doc.lines.count(path) != 0 ? doc.lines[path] : 0;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    yaml_walk walk;
    walk.text = std::string_view(o).substr(eq + 1);
    *at = yaml_to_json(node, key, value, walk);
    for (const auto& [k, line] : value.lines) doc.lines[k] = 0;
    doc.lines[key] = 0;
  }
}

/// Reads a YAML file; a syntax error names the file and its line.
inline yaml_doc parse_yaml_file(const std::filesystem::path& file) {
  return parse_yaml_text(read_config_text(file), file.string());
}

/// A key of a YAML document, typed; errors name file, line and key.
inline const nlohmann::json* yaml_find(const nlohmann::json& j, std::string_view key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}
inline std::uint64_t yaml_count(const yaml_doc& d, const nlohmann::json& j, const std::string& key,
                                std::string_view name, std::uint64_t fallback, std::uint64_t limit) {
  const auto* v = yaml_find(j, name);
  if (v == nullptr) return fallback;
  nlohmann::json wrap{{std::string(name), *v}};
  try {
    return read_count(wrap, name, d.file, limit);
  } catch (const input_error& e) {
    throw input_error(d.at(key), std::string(e.what()).substr(e.field().size() + 2));
  }
}
/// A version key (fsdp_version): a positive integer up to `newest`, else "unknown" with the valid ones.
inline std::uint64_t yaml_version(const yaml_doc& d, const nlohmann::json& j, const std::string& key,
                                  std::string_view name, std::uint64_t fallback, std::uint64_t newest) {
  const std::uint64_t v = yaml_count(d, j, key, name, fallback, std::numeric_limits<std::uint64_t>::max());
  if (v > newest) throw input_error(d.at(key), unknown_version(v, newest));
  return v;
}
inline bool yaml_bool(const yaml_doc& d, const nlohmann::json& j, const std::string& key,
                      std::string_view name, bool fallback) {
  const auto* v = yaml_find(j, name);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw input_error(d.at(key), "must be true or false, got " + v->dump());
  return v->get<bool>();
}
inline std::string yaml_string(const yaml_doc& d, const nlohmann::json& j, const std::string& key,
                               std::string_view name, std::string fallback) {
  const auto* v = yaml_find(j, name);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw input_error(d.at(key), "must be a string, got " + v->dump());
  return v->get<std::string>();
}
/// A module list: one string (comma-separated) or a sequence of strings.
inline std::vector<std::string> yaml_names(const yaml_doc& d, const nlohmann::json& v,
                                           const std::string& key) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    std::string item;
    for (char c : s + ",") {
      if (c != ',' && c != ' ') {
        item += c;
      } else if (!item.empty()) {
        out.push_back(item);
        item.clear();
      }
    }
  };
  if (v.is_string()) {
    add(v.get<std::string>());
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (!item.is_string()) throw input_error(d.at(key), "must be a list of module names");
      add(item.get<std::string>());
    }
  } else {
    throw input_error(d.at(key), "must be a module name or a list of them, got " + detail::json_excerpt(v));
  }
  return out;
}

/// What a reader produced: training-args JSON, where each of its keys came from, and the sorting of the
/// file's own keys into read, warned and ignored.
struct translation {
  nlohmann::json args = nlohmann::json::object();
  run_request request;  ///< what the framework decides beyond the training-args keys (its optimizer, loss)
  trainer_behaviour trainer;  ///< what its trainer does that no training-args key says (io/training_args.hpp)
  std::map<std::string, std::string> from;  ///< translated key ("peft_config/r") → "file:LINE: yaml key"
  std::vector<std::string> notes;
  std::vector<std::string> warnings;
  std::vector<std::string> ignored;
  void set(const std::string& key, nlohmann::json value, const std::string& where) {
    nlohmann::json* at = &args;
    std::string rest = key;
    for (auto slash = rest.find('/'); slash != std::string::npos; slash = rest.find('/')) {
      at = &(*at)[rest.substr(0, slash)];
      rest = rest.substr(slash + 1);
    }
    (*at)[rest] = std::move(value);
    from[key] = where;
  }
};

/// Sorts a mapping's keys: `read` were used, `warn` change memory but are not modelled (a warning each),
/// the rest are listed as ignored.
inline void sort_keys(const yaml_doc& d, const nlohmann::json& j, const std::string& prefix,
                      const std::set<std::string>& read, const std::set<std::string>& warn, translation& t) {
  for (const auto& item : j.items()) {
    const std::string key = prefix.empty() ? item.key() : prefix + "." + item.key();
    if (read.count(item.key()) != 0) continue;
    if (warn.count(item.key()) != 0 && !item.value().is_null() && item.value() != false)
      t.warnings.push_back(d.at(key) + " changes memory but is not modelled");
    else if (warn.count(item.key()) == 0)
      t.ignored.push_back(key);
  }
}

/// A path a file names: beside the file when it is there, else from the working directory (where the
/// framework's launcher runs); absolute either way.
inline std::string path_beside(const std::string& file, const std::string& path) {
  std::filesystem::path p = path;
  std::error_code ec;
  if (p.is_relative()) {
    const auto beside = std::filesystem::path(file).parent_path() / p;
    if (std::filesystem::exists(beside, ec)) p = beside;
  }
  return std::filesystem::absolute(p, ec).string();
}
}  // namespace detail

}  // namespace headroom
