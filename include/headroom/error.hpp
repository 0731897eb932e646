// SPDX-License-Identifier: MIT
// The one exception type headroom throws for bad input: it names the field that was wrong.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

// HEADROOM_INLINE: a visitor inlined into its caller keeps a sum over tensors in registers.
// HEADROOM_NOINLINE: a rarely taken loop keeps its stack frame out of the hot caller's.
// HEADROOM_COLD: the throwing paths stay out of line, so every checked product inlines to a few
// instructions (the estimators make a few hundred of them).
// Unoptimized and AddressSanitizer builds (debug, CI, fuzzing) force nothing inline: there it only
// multiplies each visitor's code (3 MB per visitor at -O0 under ASan) and the compile time (8x).
#if defined(__SANITIZE_ADDRESS__)
#define HEADROOM_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEADROOM_ASAN_BUILD 1
#endif
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__OPTIMIZE__) && !defined(HEADROOM_ASAN_BUILD) && \
    !defined(HEADROOM_NO_FORCED_INLINE)
#define HEADROOM_INLINE __attribute__((always_inline))
#else
#define HEADROOM_INLINE
#endif
#if defined(__GNUC__) || defined(__clang__)
#define HEADROOM_NOINLINE __attribute__((noinline))
#define HEADROOM_COLD __attribute__((noinline, cold))
#else
#define HEADROOM_NOINLINE
#define HEADROOM_COLD
#endif

namespace headroom {

/// Thrown for any invalid input (shape, size, option name, file). `field()` names the culprit.
class input_error : public std::invalid_argument {
 public:
  input_error(std::string field, const std::string& reason)
      : std::invalid_argument(field + ": " + reason), field_(std::move(field)) {}
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

/// `read()`, with `where` (the key or file that led to it) put in front of any input_error it throws:
/// "etc.yaml:2: base_model: notjson.txt: malformed JSON ...".
template <class Read>
auto named_by(const std::string& where, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const input_error& e) {
    throw input_error(where, e.what());
  }
}

/// A product or sum too large for 64 bits: the input is absurd, and no budget can hold the result.
class overflow_error : public input_error {
 public:
  using input_error::input_error;
};

namespace detail {
// Not constexpr on purpose: reaching it during constant evaluation is a compile error naming the
// call, and at run time it throws input_error (the fmt/mp-units trick).
[[noreturn]] HEADROOM_COLD inline void fail(const char* field, const char* reason) {
  throw input_error(field, reason);
}

/// Appends `item` to a separated list (for "valid: a, b, c" messages and comma lists).
inline void append_listed(std::string& list, std::string_view item, std::string_view separator = ", ") {
  if (!list.empty()) list += separator;
  list += item;
}
}  // namespace detail

}  // namespace headroom
