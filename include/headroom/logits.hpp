// SPDX-License-Identifier: MIT
// The logits and loss bucket as a timeline: every tensor the loss head allocates and releases, in
// the order the library's code does it, for a naive loss, TRL's chunked NLL, torchtune's chunked
// output, Liger's fused linear cross-entropy and Cut Cross-Entropy. Replaying the timeline gives the
// forward peak, what is kept for backward, and the backward peak (docs/logits.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "activations/estimate.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "units.hpp"

namespace headroom {

enum class loss_impl : std::uint8_t {
  naive,           ///< lm_head on all tokens, logits.float(), cross_entropy (transformers ForCausalLMLoss)
  chunked,         ///< TRL chunked_nll: fp32 logits of `chunk_tokens` tokens at a time, under checkpoint
  fused_liger,     ///< Liger fused linear cross-entropy: bf16 logits tiles, gradients made in forward
  fused_cce,       ///< Cut Cross-Entropy: logits tiles stay on chip; only log-sum-exp is stored
  chunked_output,  ///< torchtune CEWithChunkedOutputLoss: the head applied per chunk, each chunk upcast alone
  linear_ce,       ///< torchtune LinearCrossEntropyLoss: ignored rows dropped, head and loss per token chunk
};
inline constexpr std::array<named<loss_impl>, 6> loss_names{{{"naive", loss_impl::naive},
                                                             {"chunked", loss_impl::chunked},
                                                             {"liger", loss_impl::fused_liger},
                                                             {"cce", loss_impl::fused_cce},
                                                             {"chunked-output", loss_impl::chunked_output},
                                                             {"linear-ce", loss_impl::linear_ce}}};

struct loss_config {
  loss_impl impl = loss_impl::naive;
  std::uint64_t chunk_tokens = 256;  ///< TRL _CHUNKED_LM_HEAD_CHUNK_SIZE
  std::uint64_t output_chunks =
      8;  ///< torchtune num_output_chunks (CEWithChunkedOutputLoss, LinearCrossEntropyLoss)
};

/// What the loss head holds, relative to the moment before it runs (the final hidden states and the
/// head weight already exist). The events: logits_inventory.
struct logits_estimate {
  bytes forward{0};   ///< the peak during the loss forward
  bytes backward{0};  ///< the peak during the loss backward (what forward kept, released as it goes)
  bytes kept{0};      ///< alive between forward and backward: saved tensors, labels, the loss
  bytes after{0};     ///< alive when its backward is done: the hidden-state gradient (and the head's)
  bytes hidden_kept{
      0};  ///< the final hidden states, when the head keeps them for backward (on top of all four)
  [[nodiscard]] constexpr bytes forward_peak() const { return forward; }
  [[nodiscard]] constexpr bytes backward_peak() const { return backward; }
  [[nodiscard]] constexpr bytes peak() const {
    return forward_peak() > backward_peak() ? forward_peak() : backward_peak();
  }
};

/// One allocation or release of the loss head.
struct loss_event {
  std::string_view name;
  bytes amount{0};
  bool release = false;
  bool backward = false;  ///< happens during the backward pass
  std::string_view reason;
};

/// The events in order (for --explain and the JSON report). Chunked losses list one chunk of each
/// kind in full and the others as one line each.
struct loss_timeline {
  static constexpr std::size_t capacity = 160;
  std::array<loss_event, capacity> items{};
  std::size_t size = 0;
  bool in_backward = false;
  bool listing = true;

  constexpr void alloc(std::string_view name, bytes amount, std::string_view reason) {
    push({name, amount, false, in_backward, reason});
  }
  constexpr void release(std::string_view name, bytes amount) { push({name, amount, true, in_backward, ""}); }
  constexpr void begin_backward() { in_backward = true; }
  constexpr void list(bool on) { listing = on; }
  [[nodiscard]] constexpr const loss_event* begin() const { return items.data(); }
  [[nodiscard]] constexpr const loss_event* end() const { return items.data() + size; }

 private:
  constexpr void push(const loss_event& e) {
    if (!listing || e.amount.count() == 0) return;
    if (size == capacity) detail::fail("loss_timeline", "capacity exceeded");
    items[size++] = e;
  }
};

/// The same events replayed into the four numbers of a logits_estimate (the estimates' sink).
struct loss_replay {
  std::uint64_t live = 0;
  std::uint64_t peak = 0;  ///< of the pass being replayed
  logits_estimate out{};

  constexpr void alloc(std::string_view /*name*/, bytes amount, std::string_view /*reason*/) {
    live = detail::checked_add(live, amount.count(), "loss head bytes");
    peak = live > peak ? live : peak;
  }
  constexpr void release(std::string_view /*name*/, bytes amount) {
    if (amount.count() > live) detail::fail("loss timeline", "releases more than it allocated");
    live -= amount.count();
  }
  constexpr void begin_backward() {
    out.forward = bytes(peak);
    out.kept = bytes(live);
    peak = live;
  }
  constexpr void list(bool /*on*/) {}
  [[nodiscard]] constexpr logits_estimate result() const {
    logits_estimate e = out;
    e.backward = bytes(peak);
    e.after = bytes(live);
    return e;
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
inline constexpr std::uint64_t index_bytes = 8;   // int64 labels and indices
inline constexpr std::uint64_t scalar_bytes = 4;  // a 0-dim fp32 loss value

/// What every loss head needs, computed once.
struct loss_context {
  std::uint64_t t, b, s, V, d;
  std::uint64_t ab;  ///< logits dtype (the matmul's): 2 under bf16 or autocast, 4 in fp32
  std::uint64_t hb;  ///< hidden-state dtype (the stream's): 4 under autocast
  std::uint64_t wb;  ///< head weight dtype
  bool autocast, head_trains, softcap;
  bool scaled;    ///< Granite's logits / logits_scaling, Cohere's logits · logit_scale: a new logits-sized
                  ///< tensor
  bool compiled;  ///< torch.compile: transformers' loss runs inside the compiled forward
  std::uint64_t rng;  ///< a checkpoint's stashed RNG state, when it is device memory (CPU only)
  std::uint64_t py;   ///< a saved Python-float operand (CPU only)
};
constexpr loss_context loss_context_of(const model_shape& m, const training_setup& s,
                                       const activation_config& c) {
  const block_dtypes dt = dtypes_of(s);
  const bool cpu = s.runtime.device == device_kind::cpu;
  return {checked_mul(c.batch, c.seq_len, "tokens"),
          c.batch,
          c.seq_len,
          m.vocab_size,
          m.hidden_size,
          dt.compute,
          dt.stream,
          dt.stream,
          dt.autocast,
          s.method == training_method::full || s.lora.modules_to_save.contains(module_name::lm_head),
          m.final_logit_softcapping,
          m.scalar_multipliers || m.logit_scale,
          c.compiled,
          cpu ? cpu_rng_state_bytes : 0,
          saved_scalar_bytes(s.runtime)};
}

/// One F.cross_entropy(reduction="sum") on `rows` × V logits: log_softmax then nll_loss (torch 1.13
/// cross_entropy_loss: _log_softmax, nll_loss_nd). `upcast` adds `.float()` of ab-sized logits first.
template <class Out>
constexpr void cross_entropy_forward(Out& out, const loss_context& k, std::uint64_t rows, bool upcast) {
  const bytes tile = act(rows, k.V, fp32_bytes);
  if (upcast) out.alloc("fp32 logits", tile, "logits.float() for a stable log-softmax");
  out.alloc("log-probabilities", tile, "log_softmax's output, saved by it and by nll_loss");
  out.alloc("loss scalars", bytes(2 * scalar_bytes), "nll_loss's sum and total_weight");
}
/// Its backward: nll_loss's dense gradient (after which nll_loss releases its labels and total_weight),
/// then log_softmax's; `downcast` casts the result back to the logits dtype.
template <class Out>
constexpr void cross_entropy_backward(Out& out, const loss_context& k, std::uint64_t rows, bool downcast,
                                      bytes labels) {
  const bytes tile = act(rows, k.V, fp32_bytes);
  out.alloc("grad of log-probabilities", tile, "nll_loss backward: zeros with -1 at each label");
  out.release("loss scalars", bytes(2 * scalar_bytes));
  out.release("labels", labels);
  out.alloc("grad of logits (fp32)", tile, "log_softmax backward");
  out.release("grad of log-probabilities", tile);
  out.release("log-probabilities", tile);
  if (downcast) {
    out.alloc("grad of logits", act(rows, k.V, k.ab), "ToCopyBackward: the gradient in the logits dtype");
    out.release("grad of logits (fp32)", tile);
  }
}

/// The head matmul's backward for `rows` rows whose logits gradient (in `grad_bytes`) is alive: the head
/// gradient (if the head trains), then the input gradient.
template <class Out>
constexpr void head_backward(Out& out, const loss_context& k, std::uint64_t rows, std::uint64_t grad_bytes,
                             std::uint64_t in_bytes, bool first, bytes saved_input = bytes(0)) {
  const bytes head = act(k.V, k.d, k.autocast ? bf16_bytes : k.wb);
  if (k.head_trains) out.alloc("head gradient", head, "mm(grad_logitsᵀ, hidden)");
  out.alloc("grad of hidden states", act(rows, k.d, in_bytes), "mm(grad_logits, head)");
  out.release("grad of logits", act(rows, k.V, grad_bytes));
  out.release("saved hidden chunk", saved_input);
  if (k.head_trains && !first) {  // another use of the weight: the engine adds the gradients out of place
    out.alloc("head gradient sum", head, "InputBuffer accumulation of the weight's gradients");
    out.release("head gradient", head * 2);
  }
}

/// transformers: lm_head on all tokens, [Gemma-2 soft-capping], ForCausalLMLoss.
template <class Out>
constexpr void naive_loss(Out& out, const loss_context& k) {
  const std::uint64_t t = k.t;
  const bytes logits = act(t, k.V, k.ab), hidden_cast = act(t, k.d, bf16_bytes);
  const bytes weight_cast = act(k.V, k.d, bf16_bytes);
  if (k.autocast) {  // autocast casts the fp32 head (not cached unless it trains) and the hidden states
    out.alloc("lm_head weight (bf16 cast)", weight_cast, "saved by the matmul for the input gradient");
    out.alloc("hidden states (bf16 cast)", hidden_cast, "saved by the matmul when the head trains");
  }
  out.alloc("logits", logits, "lm_head output (b, s, V), held by the model output until forward ends");
  if (k.autocast && !k.head_trains) out.release("hidden states (bf16 cast)", hidden_cast);
  if (k.scaled) {  // GraniteForCausalLM / CohereForCausalLM: the scaled logits replace the matmul output
    out.alloc("scaled logits", logits,
              "logits / logits_scaling (Granite) or · logit_scale (Cohere), a new tensor");
    out.release("logits", logits);
    out.alloc("logits_scaling scalar", bytes(k.py), "the Python float, saved by the division or product");
  }
  if (k.softcap) {  // Gemma2ForCausalLM: logits / cap, tanh, · cap
    out.alloc("soft-capping: logits / cap", logits, "a new tensor; the matmul output is dropped");
    out.release("logits", logits);
    out.alloc("soft-capping: tanh", logits, "saved by tanh for its backward");
    out.release("soft-capping: logits / cap", logits);
    out.alloc("logits", logits, "tanh · cap: the soft-capped logits the loss reads");
    out.alloc("soft-capping scalars", bytes(2 * k.py), "the Python floats of / cap and · cap");
  }
  // One sequence: labels[..., 1:] is already contiguous, so the shifted labels are a view of the padded ones.
  const bytes padded = act(k.b, k.s + 1, index_bytes);
  const bytes shifted = k.b == 1 ? padded : act(t, 1, index_bytes);
  out.alloc("padded labels", padded, "nn.functional.pad(labels, (0, 1), -100)");
  if (k.b > 1) out.alloc("shifted labels", shifted, "labels[..., 1:].contiguous(), saved by nll_loss");
  cross_entropy_forward(out, k, t, k.ab != fp32_bytes);
  out.alloc("loss scalars", bytes(2 * scalar_bytes), "num_items_in_batch as float and the divided loss");
  out.release("loss scalars", bytes(2 * scalar_bytes));  // the nll_loss sum and the float count go
  if (k.ab != fp32_bytes) out.release("fp32 logits", act(t, k.V, fp32_bytes));  // not saved by log_softmax
  if (k.b > 1) out.release("padded labels", padded);
  out.release("logits", logits);  // Trainer.compute_loss drops the model output
  out.begin_backward();
  out.alloc("gradient scalars", bytes(2 * scalar_bytes), "the seed gradient and the division's");
  cross_entropy_backward(out, k, t, k.ab != fp32_bytes, shifted);
  if (k.scaled) {  // DivBackward: one new gradient
    out.alloc("grad through logits_scaling", logits, "the scaling's backward: one new gradient");
    out.release("grad of logits", logits);
    out.release("logits_scaling scalar", bytes(k.py));
  }
  if (k.softcap) {  // MulBackward, TanhBackward, DivBackward: one new gradient each
    for (int step = 0; step < 3; ++step) {
      out.alloc("grad through soft-capping", logits, "·cap, tanh' and /cap backward, one at a time");
      out.release("grad of logits", logits);
    }
    out.release("soft-capping: tanh", logits);
    out.release("soft-capping scalars", bytes(2 * k.py));
  }
  head_backward(out, k, t, k.ab, k.autocast ? bf16_bytes : k.hb, true);
  if (k.autocast) {  // the casts' backward: gradients back to the fp32 hidden states and weight
    if (k.head_trains) out.release("hidden states (bf16 cast)", hidden_cast);
    out.release("lm_head weight (bf16 cast)", weight_cast);
    out.alloc("grad of hidden states (fp32)", act(t, k.d, fp32_bytes),
              "ToCopyBackward to fp32 hidden states");
    out.release("grad of hidden states", hidden_cast);
    if (k.head_trains) {
      out.alloc("head gradient (fp32)", act(k.V, k.d, fp32_bytes), "ToCopyBackward to the fp32 weight");
      out.release("head gradient", weight_cast);
    }
  }
  out.alloc("slice backward", act(t, k.d, k.hb), "hidden_states[:, slice(0, None)]: zeros, then a copy");
  out.release("grad of hidden states", act(t, k.d, k.hb));
  out.release("gradient scalars", bytes(scalar_bytes));  // the division's gradient; the seed stays
}
}  // namespace detail

namespace detail {
/// transformers' loss inside a torch.compile'd forward: the partitioner keeps the lm_head output (a matmul
/// output, also returned) and per-row statistics, and recomputes the upcast, soft-capping and log-softmax in
/// backward, whose kernel writes the logits' gradient in fp32 and casts it to the logits dtype. Cut
/// Cross-Entropy's README measures this (torch_compile rows): 2tV forward, 6tV more in backward.
template <class Out>
constexpr void compiled_naive_loss(Out& out, const loss_context& k) {
  const std::uint64_t t = k.t;
  const bytes logits = act(t, k.V, k.ab), hidden_cast = act(t, k.d, bf16_bytes);
  const bytes weight_cast = act(k.V, k.d, bf16_bytes), stats = act(t, 2, fp32_bytes);
  const bytes labels = act(t, 1, index_bytes);
  if (k.autocast) {  // the matmul's bf16 operands, recomputed from the fp32 tensors in backward
    out.alloc("lm_head weight (bf16 cast)", weight_cast, "compiled: the matmul's operand, not saved");
    out.alloc("hidden states (bf16 cast)", hidden_cast, "compiled: the matmul's operand, not saved");
  }
  out.alloc("logits", logits, "compiled: the lm_head output, saved (a matmul output) and returned");
  if (k.autocast) {
    out.release("lm_head weight (bf16 cast)", weight_cast);
    out.release("hidden states (bf16 cast)", hidden_cast);
  }
  out.alloc("shifted labels", labels, "compiled: the padded, shifted labels, saved for the one-hot");
  out.alloc("row statistics", stats,
            "compiled: each row's max and log-sum-exp in fp32 (no fp32 logits stored)");
  out.alloc("loss scalars", bytes(scalar_bytes), "the loss");
  out.begin_backward();
  out.alloc("gradient scalars", bytes(2 * scalar_bytes), "the seed gradient and the division's");
  out.alloc("grad of logits (fp32)", act(t, k.V, fp32_bytes),
            "compiled: softmax − one-hot, recomputed, in fp32");
  out.alloc("grad of logits", logits, "compiled: cast to the logits dtype for the matmul's backward");
  out.release("grad of logits (fp32)", act(t, k.V, fp32_bytes));
  out.release("logits", logits);
  out.release("row statistics", stats);
  out.release("shifted labels", labels);
  if (k.autocast) {
    out.alloc("lm_head weight (bf16 cast)", weight_cast, "compiled: recomputed for the input gradient");
    if (k.head_trains)
      out.alloc("hidden states (bf16 cast)", hidden_cast, "compiled: recomputed for the head's");
  }
  head_backward(out, k, t, k.ab, k.autocast ? bf16_bytes : k.hb, true);
  if (k.autocast) {
    if (k.head_trains) out.release("hidden states (bf16 cast)", hidden_cast);
    out.release("lm_head weight (bf16 cast)", weight_cast);
    out.alloc("grad of hidden states (fp32)", act(t, k.d, fp32_bytes), "the cast's backward to fp32");
    out.release("grad of hidden states", hidden_cast);
    if (k.head_trains) {
      out.alloc("head gradient (fp32)", act(k.V, k.d, fp32_bytes), "the cast's backward to the fp32 weight");
      out.release("head gradient", weight_cast);
    }
  }
  out.release("gradient scalars", bytes(scalar_bytes));  // the division's gradient; the seed stays
}

/// What every TRL chunk works on: the shifted rows, the packed hidden states and labels, the fp32 head copy.
struct trl_chunk_context {
  std::uint64_t rows;  ///< b·(s − 1): the tokens predicted
  bytes hidden;        ///< the packed (shifted) hidden states
  bytes w32;           ///< w.float(): the head upcast (none when it is fp32 already)
  bool h_copies;       ///< h.float() copies 16-bit hidden states
};

/// _chunk itself: h.float(), w.float(), the logits, log_softmax and the entropy tiles. Under the checkpoint's
/// forward nothing is saved; when backward recomputes it, w.float() and log_p stay (and h.float() for a
/// trained head).
template <class Out>
constexpr void trl_run_chunk(Out& out, const loss_context& k, const trl_chunk_context& x, std::uint64_t n,
                             bool recomputing) {
  const bytes w32 = x.w32;
  const bytes tile = act(n, k.V, fp32_bytes), h32 = x.h_copies ? act(n, k.d, fp32_bytes) : bytes(0);
  out.alloc("fp32 hidden chunk", h32, "h.float()");
  out.alloc("fp32 head copy", w32, "w.float(): the whole head upcast for every chunk");
  out.alloc("fp32 logits tile", tile, "h.float() @ w.float().t()");
  if (!(recomputing && k.head_trains)) out.release("fp32 hidden chunk", h32);
  if (!recomputing) out.release("fp32 head copy", w32);
  out.alloc("log-probabilities tile", tile, "log_softmax, saved by nll_loss");
  out.alloc("exp tile", tile, "log_p.exp() for the entropy statistic");
  out.alloc("exp · log-p tile", tile, "the entropy product");
  out.release("exp · log-p tile", tile);
  out.release("exp tile", tile);
  if (!recomputing) out.release("log-probabilities tile", tile);
  out.release("fp32 logits tile", tile);
}

/// One chunk's backward: the recomputation, then nll_loss and log_softmax backward, the matmul's, and the
/// packed-hidden gradient.
template <class Out>
constexpr void trl_chunk_backward(Out& out, const loss_context& k, const trl_chunk_context& x,
                                  std::uint64_t n, bool first) {
  const bytes hidden = x.hidden, w32 = x.w32;
  const std::uint64_t rows = x.rows;
  const bytes tile = act(n, k.V, fp32_bytes), h32 = x.h_copies ? act(n, k.d, fp32_bytes) : bytes(0);
  const bytes grad_h = act(n, k.d, fp32_bytes);
  out.alloc("RNG state fork", bytes(k.rng), "torch.random.fork_rng around the recomputation (CPU)");
  trl_run_chunk(out, k, x, n, true);
  out.release("RNG state fork", bytes(k.rng));
  out.alloc("grad of log-probabilities", tile, "nll_loss backward");
  out.alloc("grad of logits (fp32)", tile, "log_softmax backward");
  out.release("grad of log-probabilities", tile);
  out.release("log-probabilities tile", tile);
  const bytes head32 = act(k.V, k.d, fp32_bytes);
  if (k.head_trains) {
    out.alloc("fp32 head gradient", head32, "grad of w.float()");
    out.alloc("grad of fp32 hidden chunk", grad_h, "mm backward");
    out.release("grad of logits (fp32)", tile);
    out.release("checkpoint RNG state", bytes(k.rng));  // the checkpoint's saved state is done
    out.release("fp32 head copy", w32);
    out.release("fp32 hidden chunk", h32);
    if (k.wb != fp32_bytes) {
      out.alloc("head gradient", act(k.V, k.d, k.wb), "ToCopyBackward to the head dtype");
      out.release("fp32 head gradient", head32);
    }
    if (!first) {  // every chunk's head gradient is summed out of place before .grad is set
      out.alloc("head gradient sum", act(k.V, k.d, k.wb), "InputBuffer accumulation across chunks");
      out.release("head gradient", act(k.V, k.d, 2 * k.wb));
    }
  } else {
    out.alloc("grad of fp32 hidden chunk", grad_h, "mm backward");
    out.release("grad of logits (fp32)", tile);
    out.release("checkpoint RNG state", bytes(k.rng));
    out.release("fp32 head copy", w32);
  }
  if (x.h_copies) {
    out.alloc("grad of hidden chunk", act(n, k.d, k.hb), "ToCopyBackward to the hidden dtype");
    out.release("grad of fp32 hidden chunk", grad_h);
  }
  out.alloc("grad of packed hidden states", hidden, "the chunk slice's backward: zeros of the packed shape");
  out.release("grad of hidden chunk", act(n, k.d, k.hb));
  if (!first) {  // the engine adds each chunk's full-size gradient out of place
    out.alloc("gradient sum", hidden, "InputBuffer accumulation of the chunk gradients");
    out.release("grad of packed hidden states", act(rows, k.d, 2 * k.hb));
  }
}

/// TRL _chunked_cross_entropy_loss: shift, pack the valid tokens to the front (argsort), then each chunk of
/// `chunk` rows through _chunk under a non-reentrant checkpoint: h.float() @ w.float().t(), log_softmax,
/// nll_loss, and the accuracy and entropy statistics (log_p.exp() · log_p), all recomputed in backward.
template <class Out>
constexpr void trl_chunked_loss(Out& out, const loss_context& k, std::uint64_t chunk) {
  const std::uint64_t rows = k.b * (k.s - 1);  // hidden_states[..., :-1, :]
  if (rows == 0) {  // nothing to predict: TRL returns (h.sum() + w.sum()) · 0, scalars only
    out.begin_backward();
    return;
  }
  const std::uint64_t c = chunk < rows ? chunk : rows;
  const std::uint64_t full = rows / c, tail = rows % c;
  const bytes hidden = act(rows, k.d, k.hb), labels = act(rows, 1, index_bytes);
  const bool copies = k.b > 1;  // the shifted slice is contiguous only for one sequence
  if (copies) {
    out.alloc("shifted hidden states", hidden, "reshape of a non-contiguous slice copies");
    out.alloc("shifted labels", labels, "labels[..., 1:].reshape(-1)");
  }
  out.alloc("valid mask", act(rows, 1, 1), "labels != -100 (bool)");
  out.alloc("argsort order", labels, "valid.to(int8).argsort(stable=True), saved by the index");
  out.alloc("packed hidden states", hidden, "hidden[order]: the chunks are views of it");
  out.alloc("packed labels", labels, "labels[order]");
  if (copies) {
    out.release("shifted hidden states", hidden);
    out.release("shifted labels", labels);
  }
  out.alloc("loss scalars", bytes(index_bytes + 3 * scalar_bytes),
            "the valid count; correct, entropy, loss zeros");
  // .float() copies 16-bit tensors and returns fp32 ones as they are.
  const bytes w32 = k.wb == fp32_bytes ? bytes(0) : act(k.V, k.d, fp32_bytes);
  const bool h_copies = k.hb != fp32_bytes;
  const trl_chunk_context x{rows, hidden, w32, h_copies};
  auto chunk_forward = [&](std::uint64_t n) {
    out.alloc("checkpoint RNG state", bytes(k.rng), "torch.get_rng_state() stashed per checkpoint (CPU)");
    trl_run_chunk(out, k, x, n, false);
  };
  // Forward: the full chunks (each keeps its RNG state), then the tail; the last full chunk peaks.
  if (full > 1) {
    out.list(false);
    out.alloc("checkpoint RNG states", bytes(checked_mul(full - 1, k.rng)),
              "the earlier chunks' stashed states");
    out.list(true);
  }
  chunk_forward(c);
  if (tail != 0) chunk_forward(tail);
  out.alloc("loss scalars", bytes(scalar_bytes), "the loss: the summed chunk losses over num_items_in_batch");
  out.release("valid mask", act(rows, 1, 1));  // the function's locals go when it returns
  out.release("loss scalars", bytes(index_bytes + 3 * scalar_bytes));
  out.begin_backward();
  out.alloc("gradient scalars", bytes(2 * scalar_bytes), "the seed gradient and the division's");
  // Backward runs the chunks in reverse: the tail first, then the full ones; the first two of those
  // hold the most (later ones have released more stashed states).
  bool first = true;
  if (tail != 0) {
    trl_chunk_backward(out, k, x, tail, first);
    first = false;
  }
  const std::uint64_t listed = full < 2 ? full : 2;
  for (std::uint64_t i = 0; i < listed; ++i) {
    trl_chunk_backward(out, k, x, c, first);
    first = false;
  }
  if (full > listed) {
    out.list(false);
    out.release("checkpoint RNG states", bytes(checked_mul(full - listed, k.rng)));
    out.list(true);
  }
  // hidden[order] and hidden_states[..., :-1, :] backward: the gradient unpacked, then un-shifted.
  out.alloc("grad of shifted hidden states", hidden, "index backward: zeros, then index_put");
  out.release("grad of packed hidden states", hidden);
  out.alloc("grad of hidden states", act(k.t, k.d, k.hb), "slice backward: zeros of (b, s, d), then a copy");
  out.release("grad of shifted hidden states", hidden);
  out.release("packed hidden states", hidden);
  out.release("packed labels", labels);
  out.release("argsort order", labels);
  out.release("gradient scalars", bytes(scalar_bytes));
}

/// torchtune: TransformerDecoder.chunked_output (the head on each of n sequence chunks, kept as a list)
/// and CEWithChunkedOutputLoss (each chunk upcast and cross-entropied alone).
template <class Out>
constexpr void torchtune_chunked_loss(Out& out, const loss_context& k, std::uint64_t chunks) {
  const std::uint64_t n = chunks < k.s ? chunks : k.s;
  // tensor_split(n, dim=1): the first s % n chunks are one token longer; the last chunk is a short one.
  const std::uint64_t last = k.b * (k.s / n);
  const bytes logits = act(k.t, k.V, k.ab), labels = act(k.t, 1, index_bytes);
  const bytes tile = act(last, k.V, fp32_bytes), all_logp = act(k.t, k.V, fp32_bytes);
  const bool strided = k.b > 1;  // a chunk of several sequences is not contiguous: copies are made
  out.alloc("shifted labels", labels, "hstack((labels[..., 1:], ignore column))");
  if (strided && !k.head_trains) {  // each chunk's contiguous copy lives only through its matmul
    out.alloc("hidden chunk copy", act(k.b * ceil_div(k.s, n), k.d, k.hb), "the chunk made contiguous");
    out.release("hidden chunk copy", act(k.b * ceil_div(k.s, n), k.d, k.hb));
  }
  out.alloc("logits chunks", logits, "the n lm_head outputs, held by the recipe until the loss is done");
  if (strided && k.head_trains)
    out.alloc("hidden chunks", act(k.t, k.d, k.hb),
              "contiguous copies of the chunks, saved for the head gradient");
  if (strided) out.alloc("label chunks", labels, "each chunk's labels reshaped (copied), saved by nll_loss");
  out.alloc("loss scalars", bytes(index_bytes), "total_elements, the count of trained tokens");
  // Cross-entropy per chunk: the fp32 copy is one chunk at a time; each chunk's log-probabilities stay.
  if (k.ab != fp32_bytes) {
    out.list(false);
    out.alloc("log-probabilities", all_logp - tile, "the other chunks' log-softmax outputs");
    out.list(true);
    out.alloc("fp32 logits chunk", tile, "logits_chunk.float(), one chunk at a time");
    out.alloc("log-probabilities", tile, "the last chunk's log-softmax output");
    out.alloc("loss scalars", bytes(checked_mul(n + 2, scalar_bytes)),
              "per chunk total_weight; the last sum; the total");
    out.release("fp32 logits chunk", tile);
  } else {
    out.alloc("log-probabilities", all_logp, "every chunk's log-softmax output");
    out.alloc("loss scalars", bytes(checked_mul(n + 2, scalar_bytes)),
              "per chunk total_weight; the last sum; the total");
  }
  out.release("loss scalars", bytes(scalar_bytes));  // the running total, replaced by the division
  out.release("loss scalars", bytes(scalar_bytes));  // the last sum, added into the total
  out.alloc("loss scalars", bytes(scalar_bytes), "the divided loss");
  if (strided) out.release("shifted labels", labels);  // the recipe's labels die with _loss_step
  out.release("logits chunks", logits);                // `del outputs` in the recipe, before backward
  out.begin_backward();
  out.alloc("gradient scalars", bytes(scalar_bytes), "the seed gradient");
  // Every chunk's cross-entropy backward runs before any head backward (they were recorded later): the
  // last chunk first, with every chunk's log-probabilities still alive.
  const bytes chunk_labels = act(last, 1, index_bytes);
  out.alloc("grad of log-probabilities", tile, "nll_loss backward of one chunk");
  out.release("loss scalars", bytes(scalar_bytes));  // nll_loss releases its total_weight and labels
  out.release("label chunks", chunk_labels);
  out.alloc("grad of logits (fp32)", tile, "log_softmax backward of one chunk");
  out.release("grad of log-probabilities", tile);
  out.release("log-probabilities", all_logp);
  out.release("loss scalars", bytes(checked_mul(n - 1, scalar_bytes)));
  out.release("label chunks", labels - chunk_labels);
  if (k.ab != fp32_bytes) {
    out.alloc("grad of logits", logits, "every chunk's gradient, cast back, waiting for the head backward");
    out.release("grad of logits (fp32)", tile);
  } else {
    out.alloc("grad of logits (fp32)", all_logp - tile, "the other chunks' gradients");
  }
  // The head backward per chunk, the last chunk first; the weight's gradients are summed out of place.
  const bytes chunk_in = act(last, k.d, k.hb);
  const bytes saved = strided && k.head_trains ? chunk_in : bytes(0);
  head_backward(out, k, last, k.ab, k.hb, true, saved);
  if (n > 1) head_backward(out, k, last, k.ab, k.hb, false, saved);
  out.list(false);
  if (n > 2) {  // the other chunks: their input gradients replace their logits gradients
    out.alloc("grad of hidden chunks", act(k.t - 2 * last, k.d, k.hb), "the other chunks' input gradients");
    out.release("grad of logits", act(k.t - 2 * last, k.V, k.ab));
    if (strided && k.head_trains) out.release("hidden chunks", act(k.t - 2 * last, k.d, k.hb));
  }
  out.list(true);
  out.alloc("grad of hidden states", act(k.t, k.d, k.hb),
            "the split's backward: zeros, then each chunk added");
  out.release("grad of hidden chunks", act(k.t, k.d, k.hb));
  out.release("gradient scalars", bytes(scalar_bytes));
  out.release("loss scalars", bytes(index_bytes));
}

/// What every phase of torchtune's LinearCrossEntropyLoss shares: its kept rows, their chunks, the tensors
/// that live across phases.
struct tt_ce_context {
  std::uint64_t rows = 0;       ///< kept rows: every position but each sequence's last
  std::uint64_t chunks = 0;     ///< tensor_split(n)
  std::uint64_t small = 0;      ///< rows of a short chunk
  std::uint64_t big_count = 0;  ///< the first rows % n chunks are one row longer
  bool upcast = false;          ///< the logits are upcast to fp32 (a 16-bit logits dtype)
  std::uint64_t gb = 0;         ///< the hidden-state gradient's bytes per value
  bytes labels{0}, kept_rows{0}, masked{0}, head_cast{0}, head_grad{0};
  [[nodiscard]] constexpr std::uint64_t rows_of(std::uint64_t i) const {
    return i < big_count ? small + 1 : small;
  }
};
constexpr tt_ce_context make_tt_ce_context(const loss_context& k, std::uint64_t chunks) {
  tt_ce_context x;
  x.rows = k.b * (k.s - 1);
  x.chunks = chunks;
  x.small = x.rows / chunks;  // past `rows` chunks are empty
  x.big_count = x.rows % chunks;
  x.upcast = k.ab != fp32_bytes;
  x.gb = k.autocast ? fp32_bytes : k.hb;
  x.labels = act(k.t, 1, index_bytes);
  x.kept_rows = act(x.rows, 1, index_bytes);
  x.masked = act(x.rows, k.d, k.hb);
  x.head_cast = act(k.V, k.d, bf16_bytes);
  x.head_grad = act(k.V, k.d, k.autocast ? bf16_bytes : k.wb);
  return x;
}

/// The recipe's shift (hstack((labels[..., 1:], an ignore column))), the valid-token count and index_select.
template <class Out>
constexpr void tt_ce_prepare(Out& out, const loss_context& k, const tt_ce_context& x) {
  out.alloc("ignore column", act(k.b, 1, index_bytes), "torch.full((b, 1), ignore_index)");
  out.alloc("shifted labels", x.labels, "hstack((labels[..., 1:], ignore column))");
  out.release("ignore column", act(k.b, 1, index_bytes));
  // total_valid_tokens: torch.where(targets != ignore)[0].numel() (two index columns of a 2-D nonzero).
  auto valid_mask = [&](std::uint64_t columns, std::string_view name, std::string_view why) {
    out.alloc("ignore index scalar", bytes(k.py), "-100 wrapped as a 0-dim tensor (CPU)");
    out.alloc("valid mask", act(k.t, 1, 1), "targets != ignore_index (bool)");
    out.release("ignore index scalar", bytes(k.py));
    out.alloc(name, act(x.rows, columns, index_bytes), why);
    out.release("valid mask", act(k.t, 1, 1));
  };
  valid_mask(2, "nonzero", "torch.where(...)[0].numel(): counted, then dropped");
  out.release("nonzero", act(x.rows, 2, index_bytes));
  valid_mask(1, "kept indices", "torch.where(targets != ignore_index)[0], saved by index_select");
  out.alloc("masked hidden states", x.masked, "hidden.index_select(0, indices): the chunks are views of it");
  out.alloc("masked labels", x.kept_rows, "target.index_select(0, indices): the chunks are views of it");
  out.alloc("loss scalars", bytes(scalar_bytes), "total_loss = torch.tensor(0.0)");
}

/// Forward chunk i: its logits die when compute_cross_entropy returns.
template <class Out>
constexpr void tt_ce_forward_chunk(Out& out, const loss_context& k, const tt_ce_context& x, std::uint64_t i) {
  const std::uint64_t c = x.rows_of(i);
  out.list(i + 1 == x.chunks || i == 0);
  const bytes tile = act(c, k.V, fp32_bytes), logits = act(c, k.V, k.ab),
              hidden_cast = act(c, k.d, bf16_bytes);
  if (k.autocast) {  // a trained head's cast is cached once; a frozen head is re-cast (and kept) per chunk
    if (i == 0 || !k.head_trains)
      out.alloc("head weight (bf16 cast)", x.head_cast, "autocast's cast, saved for the input gradient");
    out.alloc("hidden chunk (bf16 cast)", hidden_cast, "autocast's cast, saved when the head trains");
  }
  out.alloc("logits chunk", logits, "linear_projection(hidden_chunk)");
  if (k.autocast && !k.head_trains) out.release("hidden chunk (bf16 cast)", hidden_cast);
  if (x.upcast) out.alloc("fp32 logits chunk", tile, "logits.float()");
  out.alloc("log-probabilities", tile, "log_softmax's output, saved for backward");
  out.alloc("loss scalars", bytes(2 * scalar_bytes), "nll_loss's sum and total_weight");
  if (x.upcast) out.release("fp32 logits chunk", tile);
  out.release("logits chunk", logits);
  if (i != 0) out.release("loss scalars", bytes(scalar_bytes));  // the previous chunk's loss, rebound
}

/// The division by the valid count, the end of forward, and backward's seed.
template <class Out>
constexpr void tt_ce_divide(Out& out, const loss_context& k, const tt_ce_context& x) {
  out.list(true);
  out.alloc("valid count scalar", bytes(k.py),
            "total_valid_tokens wrapped as a 0-dim tensor (CPU), saved by /");
  out.alloc("loss scalars", bytes(2 * scalar_bytes), "the count as float and the divided loss");
  out.release("loss scalars", bytes(scalar_bytes));
  out.release("shifted labels", x.labels);           // the recipe's labels die with _loss_step
  out.release("loss scalars", bytes(scalar_bytes));  // the last chunk's loss
  if (!k.head_trains || k.autocast) out.release("masked hidden states", x.masked);  // saved only by the head
  out.release("loss scalars", bytes(scalar_bytes));  // total_loss, summed into the division
  out.begin_backward();
  out.alloc("gradient scalars", bytes(2 * scalar_bytes), "the seed gradient and the division's");
  out.alloc("valid count as float", bytes(scalar_bytes), "DivBackward's operand");
  out.release("valid count as float", bytes(scalar_bytes));
  out.release("valid count scalar", bytes(k.py));
}

/// Backward of chunk i (the last chunk first): its cross-entropy and head backward before the previous one's.
template <class Out>
constexpr void tt_ce_backward_chunk(Out& out, const loss_context& k, const tt_ce_context& x,
                                    std::uint64_t j) {
  const std::uint64_t i = x.chunks - 1 - j, c = x.rows_of(i);
  const bool first = j == 0, last = i == 0;
  out.list(j < 2);
  const bytes tile = act(c, k.V, fp32_bytes), logits = act(c, k.V, k.ab),
              hidden_cast = act(c, k.d, bf16_bytes);
  out.alloc("grad of log-probabilities", tile, "nll_loss backward: zeros with -1 at each label");
  out.release("loss scalars", bytes(scalar_bytes));  // nll_loss's total_weight
  if (last) {  // the first chunk's: its labels (the base of every label chunk) and its loss, which the
               // in-place `total_loss += loss` kept
    out.release("masked labels", x.kept_rows);
    out.release("loss scalars", bytes(scalar_bytes));
  }
  out.alloc("grad of logits (fp32)", tile, "log_softmax backward");
  out.release("grad of log-probabilities", tile);
  out.release("log-probabilities", tile);
  if (x.upcast) {
    out.alloc("grad of logits", logits, "ToCopyBackward: the gradient in the logits dtype");
    out.release("grad of logits (fp32)", tile);
  }
  if (k.head_trains) out.alloc("head gradient", x.head_grad, "mm(grad_logitsᵀ, hidden chunk)");
  out.alloc("grad of hidden chunk", act(c, k.d, k.autocast ? bf16_bytes : k.hb), "mm(grad_logits, head)");
  out.release("grad of logits", logits);
  if (k.autocast && k.head_trains) out.release("hidden chunk (bf16 cast)", hidden_cast);
  if (k.autocast && (last || !k.head_trains)) out.release("head weight (bf16 cast)", x.head_cast);
  if (!k.autocast && k.head_trains && last) out.release("masked hidden states", x.masked);
  if (k.head_trains && !first) {  // every chunk's head gradient is summed out of place
    out.alloc("head gradient sum", x.head_grad, "InputBuffer accumulation across chunks");
    out.release("head gradient", x.head_grad * 2);
  }
  if (k.autocast) {
    out.alloc("grad of hidden chunk (fp32)", act(c, k.d, fp32_bytes), "ToCopyBackward to the fp32 stream");
    out.release("grad of hidden chunk", hidden_cast);
  }
}

/// tensor_split's slices, last first: each a zero tensor of all kept rows with the chunk copied in, summed;
/// then index_select's backward.
template <class Out>
constexpr void tt_ce_gather_gradients(Out& out, const loss_context& k, const tt_ce_context& x) {
  out.list(true);
  if (k.autocast && k.head_trains) {
    out.alloc("head gradient (fp32)", act(k.V, k.d, fp32_bytes), "ToCopyBackward to the fp32 weight");
    out.release("head gradient", x.head_grad);
  }
  const bytes masked_grad = act(x.rows, k.d, x.gb);
  for (std::uint64_t j = 0; j < x.chunks; ++j) {
    out.list(j < 2);
    out.alloc("grad of masked hidden states", masked_grad, "slice backward: zeros, then the chunk copied in");
    out.release("grad of hidden chunk", act(x.rows_of(x.chunks - 1 - j), k.d, x.gb));
    if (j != 0) {
      out.alloc("gradient sum", masked_grad, "InputBuffer accumulation of the chunk gradients");
      out.release("grad of masked hidden states", masked_grad * 2);
    }
  }
  out.list(true);
  out.alloc("grad of hidden states", act(k.t, k.d, x.gb), "index_select backward: zeros, then index_add");
  out.release("grad of masked hidden states", masked_grad);
  out.release("kept indices", x.kept_rows);
  out.release("gradient scalars", bytes(scalar_bytes));
}
/// torchtune LinearCrossEntropyLoss (torchtune/modules/loss/cross_entropy_loss.py, not compiled): the model
/// skips its output layer; the loss drops ignored positions (index_select), splits the kept rows into n
/// chunks and, per chunk, applies the head, upcasts and cross-entropies (compute_cross_entropy). Every
/// position but each sequence's last is assumed trained (the recipe's shift ignores the last).
template <class Out>
constexpr void torchtune_linear_ce_loss(Out& out, const loss_context& k, std::uint64_t chunks) {
  const tt_ce_context x = make_tt_ce_context(k, chunks);
  tt_ce_prepare(out, k, x);
  for (std::uint64_t i = 0; i < chunks; ++i) tt_ce_forward_chunk(out, k, x, i);
  tt_ce_divide(out, k, x);
  for (std::uint64_t j = 0; j < chunks; ++j) tt_ce_backward_chunk(out, k, x, j);
  tt_ce_gather_gradients(out, k, x);
}

/// Liger fused linear cross-entropy (fused_linear_cross_entropy.py, 0.8.2): gradients made in forward.
template <class Out>
constexpr void liger_loss(Out& out, const loss_context& k) {
  const std::uint64_t rows = liger_chunk_rows(k.t, k.V, k.d);
  const bytes grad_input = act(k.t, k.d, k.ab), loss = act(k.t, 1, fp32_bytes), head = act(k.V, k.d, k.wb);
  out.alloc("grad_input", grad_input, "(BT, H) input gradient, computed during forward");
  out.alloc("loss_1d", loss, "fp32 per-token loss");
  if (k.head_trains) out.alloc("grad_weight", head, "(V, H) head gradient, computed during forward");
  out.alloc("logits tile", act(rows, k.V, k.ab), "chunk × V logits, overwritten in place by their gradient");
  if (k.head_trains) {  // grad_weight += mm(...).float() when the head gradient is not fp32
    out.alloc("head gradient product", head, "mm(grad_logitsᵀ, input) for the chunk");
    if (k.wb < fp32_bytes)
      out.alloc("fp32 head gradient product", act(k.V, k.d, fp32_bytes), ".float() of it");
    if (k.wb < fp32_bytes) out.release("fp32 head gradient product", act(k.V, k.d, fp32_bytes));
    out.release("head gradient product", head);
  }
  out.release("logits tile", act(rows, k.V, k.ab));
  out.begin_backward();
}

/// Cut Cross-Entropy: logits tiles live on chip; only the log-sum-exp is stored.
template <class Out>
constexpr void cce_loss(Out& out, const loss_context& k) {
  out.alloc("log-sum-exp", act(k.t, 1, fp32_bytes),
            "fp32 per token; logits tiles never leave on-chip memory");
  out.begin_backward();
  out.alloc("grad_input", act(k.t, k.d, k.ab), "(BT, H) input gradient");
  if (k.head_trains) out.alloc("grad_weight", act(k.V, k.d, k.wb), "(V, H) head gradient");
}

template <class Out>
constexpr void checked_loss_events(const loss_context& k, const loss_config& l, Out& out) {
  if (l.chunk_tokens == 0) fail("ce_chunk", "must be a positive integer");
  if (l.output_chunks == 0) fail("output_chunks", "must be a positive integer");
  switch (l.impl) {
    case loss_impl::naive:
      if (k.compiled)
        compiled_naive_loss(out, k);
      else
        naive_loss(out, k);
      return;
    case loss_impl::chunked:
      trl_chunked_loss(out, k, l.chunk_tokens);
      return;
    case loss_impl::chunked_output:
      torchtune_chunked_loss(out, k, l.output_chunks);
      return;
    case loss_impl::linear_ce:
      torchtune_linear_ce_loss(out, k, l.output_chunks);
      return;
    case loss_impl::fused_liger:
      liger_loss(out, k);
      return;
    case loss_impl::fused_cce:
      cce_loss(out, k);
      return;
  }
}

/// estimate_logits for a shape already validated (the step estimate validates it once).
constexpr logits_estimate logits_of_valid_shape(const model_shape& m, const training_setup& s,
                                                const activation_config& c, const loss_config& l) {
  const loss_context k = loss_context_of(m, s, c);
  loss_replay replay;
  checked_loss_events(k, l, replay);
  logits_estimate e = replay.result();
  // The head matmul keeps its input (the final norm output) for a trained head, unless autocast keeps a
  // bf16 cast instead (in the timeline) or a chunked loss keeps copies (in the timeline); CCE keeps it to
  // recompute its tiles in backward.
  const bool keeps = (l.impl == loss_impl::naive && k.head_trains && !k.autocast) ||
                     l.impl == loss_impl::fused_cce ||
                     (l.impl == loss_impl::chunked_output && k.head_trains && k.b == 1);
  if (keeps) e.hidden_kept = act(k.t, k.d, k.hb);
  return e;
}
}  // namespace detail

/// The loss head's memory (docs/logits.md): the timeline replayed into its peaks.
[[nodiscard]] constexpr logits_estimate estimate_logits(const model_shape& m, const training_setup& s,
                                                        const activation_config& dataset,
                                                        const loss_config& l) {
  const activation_config c = positions_seen(dataset, s);  // + prompt tuning's virtual tokens
  detail::validate_inputs(m, c);
  return detail::logits_of_valid_shape(m, s, c, l);
}

/// The events behind a logits_estimate (for --explain, the JSON report and the W20/W21 checks).
[[nodiscard]] constexpr loss_timeline logits_inventory(const model_shape& m, const training_setup& s,
                                                       const activation_config& dataset,
                                                       const loss_config& l) {
  const activation_config c = positions_seen(dataset, s);
  detail::validate_inputs(m, c);
  loss_timeline out;
  detail::checked_loss_events(detail::loss_context_of(m, s, c), l, out);
  return out;
}

}  // namespace headroom
