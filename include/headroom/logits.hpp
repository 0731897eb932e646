// SPDX-License-Identifier: MIT
// The logits and loss bucket: which (tokens × vocab) tensors are alive together in forward and in
// backward, for a naive loss, a chunked loss and fused linear cross-entropy (docs/logits.md).
#pragma once

#include <array>
#include <cstdint>

#include "activations.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "units.hpp"

namespace headroom {

enum class loss_impl : std::uint8_t {
  naive,        ///< lm_head on all tokens, logits.float(), cross_entropy (transformers ForCausalLMLoss)
  chunked,      ///< TRL chunked_nll: fp32 logits of `chunk_tokens` tokens at a time, under checkpoint
  fused_liger,  ///< Liger fused linear cross-entropy: bf16 logits tiles, gradients made in forward
  fused_cce,    ///< Cut Cross-Entropy: logits tiles stay on chip; only log-sum-exp is stored
};
inline constexpr std::array<named<loss_impl>, 4> loss_names{{{"naive", loss_impl::naive},
                                                             {"chunked", loss_impl::chunked},
                                                             {"liger", loss_impl::fused_liger},
                                                             {"cce", loss_impl::fused_cce}}};

struct loss_config {
  loss_impl impl = loss_impl::naive;
  std::uint64_t chunk_tokens = 256;  ///< TRL _CHUNKED_LM_HEAD_CHUNK_SIZE
};

/// What the loss head holds: the largest forward set, the largest backward set, and what is kept
/// from forward to backward (already inside both peaks). The terms: logits_inventory.
struct logits_estimate {
  bytes forward{0};   ///< alive together at the forward peak of the loss
  bytes backward{0};  ///< alive together at the backward peak of the loss
  bytes kept{0};      ///< saved from forward for backward
  [[nodiscard]] constexpr bytes forward_peak() const { return forward; }
  [[nodiscard]] constexpr bytes backward_peak() const { return backward; }
  [[nodiscard]] constexpr bytes peak() const {
    return forward_peak() > backward_peak() ? forward_peak() : backward_peak();
  }
};

namespace detail {
constexpr std::uint64_t next_pow2(std::uint64_t v) {
  std::uint64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
}  // namespace detail

/// Rows of the logits tile Liger's fused linear cross-entropy processes at once:
/// next_power_of_2(ceil(BT / ceil(V / H))) (fused_linear_cross_entropy.py), at most BT.
[[nodiscard]] constexpr std::uint64_t liger_chunk_rows(std::uint64_t tokens, std::uint64_t vocab,
                                                       std::uint64_t hidden) {
  const std::uint64_t inc_factor = detail::ceil_div(vocab, hidden);
  const std::uint64_t rows = detail::next_pow2(detail::ceil_div(tokens, inc_factor));
  return rows < tokens ? rows : tokens;
}

/// W21: the largest logits tile a chunked loss keeps alive, in values: min(chunk, T)·V.
[[nodiscard]] constexpr std::uint64_t chunk_tile_values(std::uint64_t tokens, std::uint64_t chunk,
                                                        std::uint64_t vocab) {
  return detail::checked_mul(chunk < tokens ? chunk : tokens, vocab, "logits tile");
}

namespace detail {
/// The loss head's tensors for t = b·s tokens into `forward` and `backward`; returns what is kept.
/// The head weight trains only in full fine-tuning (or when LoRA targets lm_head, whose adapters
/// are small and left out here).
template <class Out>
constexpr bytes logits_terms(const model_shape& m, const training_setup& s, const activation_config& c,
                             const loss_config& l, Out& forward, Out& backward) {
  if (l.chunk_tokens == 0) fail("ce_chunk", "must be a positive integer");
  const std::uint64_t t = checked_mul(c.batch, c.seq_len, "tokens");
  const std::uint64_t V = m.vocab_size, d = m.hidden_size;
  const std::uint64_t ab = activation_bytes(s.precision), wb = weight_bytes(s.precision);
  const std::uint64_t f32 = fp32_bytes;
  const bool head_trains = s.method == training_method::full;
  bytes kept{0};
  switch (l.impl) {
    case loss_impl::naive: {
      const bytes fp32_logits = act(t, V, f32);
      forward.add("logits", act(t, V, ab), "lm_head output (b, s, V) in the compute dtype");
      if (ab < f32)
        forward.add("fp32 logits", fp32_logits, "logits.float() before the loss (ForCausalLMLoss)");
      forward.add("log-softmax", fp32_logits, "cross_entropy's log_softmax output, saved for backward");
      kept = fp32_logits;
      backward.add("log-softmax", fp32_logits, "saved from forward");
      backward.add("grad of log-softmax", fp32_logits, "nll_loss backward: a dense fp32 tensor");
      backward.add("grad of logits", fp32_logits, "log_softmax backward, alive with its input gradient");
      break;
    }
    case loss_impl::chunked: {
      const std::uint64_t rows = l.chunk_tokens < t ? l.chunk_tokens : t;
      const bytes tile = act(rows, V, f32);
      auto common = [&](auto& terms) {
        if (wb < f32)
          terms.add("fp32 head copy", act(V, d, f32), "w.float(): the head weight upcast per chunk");
        terms.add("fp32 hidden chunk", act(rows, d, f32), "h.float() of the chunk's hidden states");
      };
      common(forward);
      forward.add("fp32 logits tile", tile, "chunk × V logits, freed after the chunk (checkpointed)");
      forward.add("fp32 log-softmax tile", tile, "chunk × V log-probabilities");
      common(backward);
      backward.add("fp32 log-softmax tile", tile, "recomputed chunk, saved for its backward");
      backward.add("grad of log-softmax tile", tile, "nll_loss backward for the chunk");
      backward.add("grad of logits tile", tile, "log_softmax backward for the chunk");
      if (head_trains) backward.add("fp32 head gradient", act(V, d, f32), "gradient of w.float() per chunk");
      break;
    }
    case loss_impl::fused_liger: {
      const std::uint64_t rows = liger_chunk_rows(t, V, d);
      const bytes grad_input = act(t, d, ab), loss = act(t, 1, f32);
      kept = grad_input + loss;
      auto keep = [&](auto& terms) {
        terms.add("grad_input", grad_input, "(BT, H) input gradient, computed during forward");
        terms.add("loss_1d", loss, "fp32 per-token loss");
        if (head_trains)
          terms.add("grad_weight", act(V, d, wb), "(V, H) head gradient, computed during forward");
      };
      keep(forward);
      forward.add("logits tile", act(rows, V, ab),
                  "chunk × V logits, overwritten in place by their gradient");
      if (head_trains) {  // grad_weight += mm(...).float() when the head gradient is not fp32
        forward.add("head gradient product", act(V, d, wb), "mm(grad_logitsᵀ, input) for the chunk");
        if (wb < f32) forward.add("fp32 head gradient product", act(V, d, f32), ".float() of that product");
      }
      keep(backward);
      if (head_trains) kept += act(V, d, wb);
      break;
    }
    case loss_impl::fused_cce: {
      const bytes lse = act(t, 1, f32);
      kept = lse;
      forward.add("log-sum-exp", lse, "fp32 per token; logits tiles never leave on-chip memory");
      backward.add("log-sum-exp", lse, "saved from forward");
      backward.add("grad_input", act(t, d, ab), "(BT, H) input gradient");
      if (head_trains) backward.add("grad_weight", act(V, d, wb), "(V, H) head gradient");
      break;
    }
  }
  return kept;
}

/// estimate_logits for a shape already validated (the step estimate validates it once).
constexpr logits_estimate logits_of_valid_shape(const model_shape& m, const training_setup& s,
                                                const activation_config& c, const loss_config& l) {
  bytes_sum forward, backward;
  const bytes kept = logits_terms(m, s, c, l, forward, backward);
  return logits_estimate{forward.total(), backward.total(), kept};
}
}  // namespace detail

/// The loss head's memory (docs/logits.md): each peak's total, without the names.
[[nodiscard]] constexpr logits_estimate estimate_logits(const model_shape& m, const training_setup& s,
                                                        const activation_config& c, const loss_config& l) {
  detail::validate_inputs(m, c);
  return detail::logits_of_valid_shape(m, s, c, l);
}

/// The terms behind a logits_estimate (for --explain, the JSON report and the W20/W21 checks).
struct logits_breakdown {
  activation_terms forward;   ///< alive together at the forward peak of the loss
  activation_terms backward;  ///< alive together at the backward peak of the loss
};
[[nodiscard]] constexpr logits_breakdown logits_inventory(const model_shape& m, const training_setup& s,
                                                          const activation_config& c, const loss_config& l) {
  detail::validate_inputs(m, c);
  logits_breakdown out;
  detail::logits_terms(m, s, c, l, out.forward, out.backward);
  return out;
}

}  // namespace headroom
