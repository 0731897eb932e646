// SPDX-License-Identifier: MIT
// Numbers for reading a run: the loss of a uniform prediction (ln V, W37) and NEFTune's noise
// scale (W36).
#pragma once

#include <cstdint>

#include "detail/math.hpp"
#include "error.hpp"

namespace headroom {

/// Cross-entropy of predicting uniformly over V tokens: ln V (Qwen3: ln 151,936 ≈ 11.9). A loss that
/// starts and stays there means broken labels, a wrong tokenizer or fresh embeddings.
[[nodiscard]] inline double uniform_prediction_loss(std::uint64_t vocab_size) {
  if (vocab_size < 2) throw input_error("vocab_size", "must be at least 2");
  return detail::math::log(static_cast<double>(vocab_size));
}

/// NEFTune (Jain et al. 2023): uniform noise in [−1, 1] scaled by α/√(T·d) on the input embeddings,
/// which keeps the expected noise norm constant across length and width. Typical α: 5 (5–15).
[[nodiscard]] inline double neftune_noise_scale(double alpha, std::uint64_t seq_len,
                                                std::uint64_t hidden_size) {
  if (!(alpha > 0) || !detail::math::isfinite(alpha))
    throw input_error("neftune_noise_alpha", "must be a positive number");
  if (seq_len == 0 || hidden_size == 0)
    throw input_error("neftune", "sequence length and hidden size must be positive");
  return alpha / detail::math::sqrt(static_cast<double>(seq_len) * static_cast<double>(hidden_size));
}

}  // namespace headroom
