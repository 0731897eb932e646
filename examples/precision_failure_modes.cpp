// SPDX-License-Identifier: MIT
// The course's check 3.5 in C++, with software bf16/fp16: small updates vanish without an fp32 master
// copy (W28, W29), long bf16 sums stall (W30), fp16 overflows and underflows while loss scaling
// rescues small gradients (W31), and global-norm clipping keeps direction (W32).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <headroom/precision.hpp>

using namespace headroom;

namespace {
int failures = 0;
void check(bool ok, const char* id, const char* what) {
  std::printf("%s %s %s\n", ok ? "ok  " : "FAIL", id, what);
  if (!ok) ++failures;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::string arg = argv[1];
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: precision_failure_modes\nChecks the course's precision failure modes (W28-W32) in "
          "software bf16/fp16; exit 1 on a miss.\n");
      return 0;
    }
    std::fprintf(stderr, "error: unexpected argument '%s'; usage: precision_failure_modes [--help]\n",
                 argv[1]);
    return 2;
  }
  // 1. bf16 weight updates vanish without an fp32 master copy.
  check(spacing_below(1.0, bf16_format) == 0.00390625, "W28", "bf16 spacing just below 1.0 is 2^-8");
  check(smallest_surviving_update(1.0, bf16_format) == 0.001953125, "W28", "updates under ~0.002 round away");
  double w_bf16 = 1.0;
  float w_master = 1.0f;  // the fp32 master copy
  for (int i = 0; i < 100; ++i) {
    w_bf16 = to_bf16(w_bf16 - to_bf16(1e-3));
    w_master = w_master - 1e-3f;
  }
  check(w_bf16 == 1.0, "W29", "100 bf16 updates of -1e-3 leave 1.0 unchanged");
  check(w_master > 0.9f - 1e-5f && w_master < 0.9f + 1e-5f, "W29", "the fp32 master reaches 0.9");

  // 2. Long accumulations in bf16 stagnate: sum 1,000 copies of 0.01.
  double acc_bf16 = 0;
  float acc_fp32 = 0;
  for (int i = 0; i < 1000; ++i) {
    acc_bf16 = to_bf16(acc_bf16 + to_bf16(0.01));
    acc_fp32 += 0.01f;
  }
  check(acc_fp32 > 10.0f - 1e-3f && acc_fp32 < 10.0f + 1e-3f, "W30", "fp32 sums to 10");
  check(acc_bf16 <= 4.0, "W30", "bf16 stalls at 4.0");

  // 3. fp16 overflows and underflows; bf16 does not; loss scaling rescues fp16 gradients.
  check(std::isinf(to_fp16(to_fp16(60000.0) * 2)), "W31", "60000 * 2 overflows fp16 (max 65,504)");
  check(std::isfinite(to_bf16(to_bf16(60000.0) * 2)), "W31", "bf16 keeps 120000 finite");
  check(to_fp16(1e-8) == 0.0, "W31", "1e-8 underflows fp16");
  check(to_fp16(1e-8 * 65536) > 0.0, "W31", "1e-8 * 2^16 survives");

  // 4. Global-norm clipping rescales a norm-5 gradient to norm 1 and keeps its direction.
  std::vector<double> grad{3.0, 4.0};
  const double pre = clip_grad_norm(grad, 1.0);
  check(pre == 5.0, "W32", "clip_grad_norm returns the pre-clip norm 5");
  check(std::fabs(grad[0] - 0.6) < 1e-6 && std::fabs(grad[1] - 0.8) < 1e-6, "W32",
        "the gradient becomes (0.6, 0.8)");
  std::printf(failures == 0 ? "precision failure modes verified\n" : "%d checks failed\n", failures);
  return failures == 0 ? 0 : 1;
}
