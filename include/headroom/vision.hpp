// SPDX-License-Identifier: MIT
// A multimodal batch (Gemma-3's and Llama-4's *ForConditionalGeneration): the image tokens each image adds to
// the language model's sequence, and what a trained vision tower keeps for its images (docs/activations.md).
#pragma once

#include <cstdint>

#include "activations/config.hpp"
#include "activations/estimate.hpp"
#include "memory.hpp"

namespace headroom {

/// A sequence holds at most this many images (Llama-4: tiles); more is an input error.
inline constexpr std::uint64_t max_images_per_sequence = 1u << 12;

/// The language model's micro-batch: seq_len plus images · tokens_per_image (the processor's image tokens:
/// Gemma-3's mm_tokens_per_image, Llama-4's tokens per tile), images cleared. A text model takes no images.
[[nodiscard]] constexpr activation_config with_image_tokens(const model_spec& spec, activation_config c) {
  if (c.images == 0) return c;
  if (spec.vision.tokens_per_image == 0)
    detail::fail("images", "the model has no vision tower: a text model takes no images");
  if (c.images > max_images_per_sequence) detail::fail("images", "is absurdly large");
  c.seq_len =
      detail::checked_add(c.seq_len, detail::checked_mul(c.images, spec.vision.tokens_per_image), "seq_len");
  c.images = 0;
  return c;
}

/// What a trained tower keeps for a micro-batch of b·images images of patches_per_image tokens: the patch
/// embedding's input (the pixel values, in the weight dtype) and its encoder's blocks under the run's
/// checkpointing — LayerNorm blocks with biased q/k/v/o, bidirectional attention and a GELU MLP (measured as
/// SiglipEncoderLayer on the CPU: validation/torch); no RoPE tables. A frozen tower keeps nothing: neither
/// its weights nor the pixel values require grad.
[[nodiscard]] constexpr activation_estimate vision_activations(const model_spec& spec,
                                                               const training_setup& s,
                                                               const activation_config& c) {
  activation_estimate e;
  if (!s.train_vision_tower) return e;
  if (c.images == 0)
    detail::fail("train_vision_tower", "the tower gets gradients only from images: give images per sequence");
  if (spec.vision.patches_per_image == 0) detail::fail("train_vision_tower", "the model has no vision tower");
  activation_config v = c;
  v.batch = detail::checked_mul(c.batch, c.images, "images");
  v.seq_len = spec.vision.patches_per_image;
  v.images = 0;
  const model_shape& m = spec.vision.encoder;
  e = detail::activations_of_valid_shape(m, s, v);
  const std::uint64_t wb = detail::weight_bytes(s.precision);
  const bytes rope = detail::rope_table_bytes(m, v.seq_len, detail::dtypes_of(s).stream);  // a ViT has none
  const bytes pixels =
      detail::act(detail::checked_mul(v.batch, v.seq_len, "patches"), spec.vision.patch_values, wb);
  e.model_level = e.model_level - rope + pixels;
  e.kept = e.kept - rope + pixels;
  e.gpu = e.gpu - rope + pixels;
  return e;
}

}  // namespace headroom
