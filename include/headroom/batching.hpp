// SPDX-License-Identifier: MIT
// Batch arithmetic: effective batch and tokens per optimizer step (W23), and gradient-accumulation
// loss normalisation — the correct global-token mean against the per-micro-batch mean (W22).
#pragma once

#include <cstdint>
#include <vector>

#include "error.hpp"
#include "units.hpp"

namespace headroom {

/// Sequences per optimizer step: micro-batch × accumulation × data-parallel ranks (W23).
[[nodiscard]] constexpr std::uint64_t effective_batch(std::uint64_t micro_batch, std::uint64_t accumulation,
                                                      std::uint64_t ranks = 1) {
  if (micro_batch == 0) detail::fail("per_device_train_batch_size", "must be a positive integer");
  if (accumulation == 0) detail::fail("gradient_accumulation_steps", "must be a positive integer");
  if (ranks == 0) detail::fail("data-parallel ranks", "must be a positive integer");
  return detail::checked_mul(detail::checked_mul(micro_batch, accumulation, "effective batch"), ranks,
                             "effective batch");
}
/// Tokens per optimizer step at full length: the quantity that controls gradient noise for LLMs.
[[nodiscard]] constexpr std::uint64_t tokens_per_step(std::uint64_t micro_batch, std::uint64_t accumulation,
                                                      std::uint64_t ranks, std::uint64_t seq_len) {
  return detail::checked_mul(effective_batch(micro_batch, accumulation, ranks), seq_len, "tokens per step");
}

/// One micro-batch as the loss sees it: trained tokens (labels ≠ −100) and their summed loss.
struct micro_batch_loss {
  std::uint64_t tokens = 0;  ///< n_k
  double loss_sum = 0;       ///< S_k
};

/// The objective accumulation should reproduce: Σ S_k / Σ n_k over every micro-batch of every rank
/// (num_items_in_batch, with average_tokens_across_devices).
[[nodiscard]] inline double global_token_mean(const std::vector<micro_batch_loss>& batches) {
  std::uint64_t n = 0;
  double s = 0;
  for (const micro_batch_loss& b : batches) {
    n += b.tokens;
    s += b.loss_sum;
  }
  if (n == 0) throw input_error("micro-batches", "hold no trained tokens");
  return s / static_cast<double>(n);
}

/// The 2024 bug: each micro-batch's mean, averaged over the K micro-batches: (1/K)·Σ S_k/n_k.
[[nodiscard]] inline double per_micro_batch_mean(const std::vector<micro_batch_loss>& batches) {
  if (batches.empty()) throw input_error("micro-batches", "none given");
  double sum = 0;
  for (const micro_batch_loss& b : batches) {
    if (b.tokens == 0) throw input_error("micro-batches", "a micro-batch has no trained tokens");
    sum += b.loss_sum / static_cast<double>(b.tokens);
  }
  return sum / static_cast<double>(batches.size());
}

/// Weight of one token of micro-batch k under each normalisation: 1/N (correct) and 1/(K·n_k).
struct token_weights {
  double correct;
  double per_micro_batch;
};
[[nodiscard]] inline token_weights token_weight(const std::vector<micro_batch_loss>& batches, std::size_t k) {
  if (k >= batches.size()) throw input_error("micro-batch index", "out of range");
  std::uint64_t n = 0;
  for (const micro_batch_loss& b : batches) n += b.tokens;
  if (batches[k].tokens == 0) throw input_error("micro-batches", "micro-batch k has no trained tokens");
  return {1.0 / static_cast<double>(n),
          1.0 / (static_cast<double>(batches.size()) * static_cast<double>(batches[k].tokens))};
}

/// Across ranks: each rank divides by its own token count, then ranks are averaged (the bug
/// average_tokens_across_devices fixes). `ranks` lists each rank's micro-batches.
[[nodiscard]] inline double per_rank_mean(const std::vector<std::vector<micro_batch_loss>>& ranks) {
  if (ranks.empty()) throw input_error("ranks", "none given");
  double sum = 0;
  for (const auto& r : ranks) sum += global_token_mean(r);
  return sum / static_cast<double>(ranks.size());
}

}  // namespace headroom
