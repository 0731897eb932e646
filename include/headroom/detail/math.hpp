// SPDX-License-Identifier: MIT
// The few floating-point functions the schedules and the software bf16/fp16 need. With GCC and Clang
// they are the compiler's builtins, which spares every translation unit <cmath>'s parse time (about
// 0.16 s; docs/performance.md); other compilers get <cmath>.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
namespace headroom::detail::math {
inline double cos(double x) { return __builtin_cos(x); }
inline double sqrt(double x) { return __builtin_sqrt(x); }
inline double pow(double x, double y) { return __builtin_pow(x, y); }
inline double log(double x) { return __builtin_log(x); }
inline double log2(double x) { return __builtin_log2(x); }
inline double fmod(double x, double y) { return __builtin_fmod(x, y); }
inline double fmax(double x, double y) { return __builtin_fmax(x, y); }
inline double fabs(double x) { return __builtin_fabs(x); }
inline double floor(double x) { return __builtin_floor(x); }
inline double ceil(double x) { return __builtin_ceil(x); }
inline double ldexp(double x, int e) { return __builtin_ldexp(x, e); }
inline double frexp(double x, int* e) { return __builtin_frexp(x, e); }
inline double nearbyint(double x) { return __builtin_nearbyint(x); }  // the current mode: ties to even
inline double copysign(double x, double y) { return __builtin_copysign(x, y); }
inline double infinity() { return __builtin_inf(); }
inline bool isfinite(double x) { return __builtin_isfinite(x); }
}  // namespace headroom::detail::math
#else
#include <cmath>
#include <limits>
namespace headroom::detail::math {
using std::ceil;
using std::copysign;
using std::cos;
using std::fabs;
using std::floor;
using std::fmax;
using std::fmod;
using std::frexp;
using std::isfinite;
using std::ldexp;
using std::log;
using std::log2;
using std::nearbyint;
using std::pow;
using std::sqrt;
inline double infinity() { return std::numeric_limits<double>::infinity(); }
}  // namespace headroom::detail::math
#endif
