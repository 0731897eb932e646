// SPDX-License-Identifier: MIT
// Communication per optimizer step: the collectives each data-parallel layout runs (DDP's gradient
// all-reduce, ZeRO's and FSDP's all-gathers and reduce-scatters), tensor parallelism's all-reduces per layer
// and the pipeline's stage-to-stage sends, timed on NCCL's ring, and the part the step's compute does not
// hide (docs/throughput.md "Several GPUs").
#pragma once

#include <algorithm>
#include <cstdint>

#include "error.hpp"
#include "parallel.hpp"
#include "units.hpp"

namespace headroom {

/// The links a collective runs over, per GPU and per direction (what nccl-tests' bus bandwidth measures).
struct comm_links {
  double intra_node_bytes_s = 0;  ///< NVLink or PCIe, bytes/s per direction
  double inter_node_bytes_s = 0;  ///< the node's network per GPU (one 400 Gb/s NIC each: 50e9)
  std::uint64_t node_gpus = 8;    ///< GPUs that share the intra-node links
};

/// Ring times (NVIDIA nccl-tests doc/PERFORMANCE.md: an all-reduce moves 2(n-1)/n of the buffer through each
/// GPU's link, an all-gather or reduce-scatter (n-1)/n), the buffer being the whole (unsharded) tensor.
[[nodiscard]] constexpr double ring_all_reduce_s(double buffer_bytes, std::uint64_t n, double link_bytes_s) {
  return n < 2 ? 0 : 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * buffer_bytes / link_bytes_s;
}
[[nodiscard]] constexpr double ring_all_gather_s(double buffer_bytes, std::uint64_t n, double link_bytes_s) {
  return n < 2 ? 0 : static_cast<double>(n - 1) / static_cast<double>(n) * buffer_bytes / link_bytes_s;
}

/// A ring over n ranks `stride` apart is as fast as its slowest hop: the network once it spans more GPUs
/// than a node holds. Ranks are placed as Megatron orders them (parallel_state.py: tensor innermost, then
/// data, then pipeline), so a data-parallel ring has stride t and a pipeline's stages t·N.
[[nodiscard]] constexpr double ring_link(const comm_links& l, std::uint64_t n, std::uint64_t stride = 1) {
  return n * stride > l.node_gpus ? std::min(l.intra_node_bytes_s, l.inter_node_bytes_s)
                                  : l.intra_node_bytes_s;
}

/// The bytes a layout moves: the weights as stored (gathered by ZeRO-3 and FSDP) and the trainable gradients.
struct comm_volume {
  double weight_bytes = 0;   ///< every weight, in its storage dtype (frozen base and adapters)
  double grad_bytes = 0;     ///< the trainable parameters' gradients, in their dtype
  double trained_bytes = 0;  ///< the trainable weights alone (what ZeRO-1/2 gather after the step)
  double layers = 1;         ///< the transformer blocks: one block's gather waits before the first compute
};

/// What one micro-batch's compute offers to hide communication behind.
struct comm_compute {
  double micro_s = 0;     ///< a micro-batch's forward, backward and recomputation
  double backward_s = 0;  ///< its backward alone (where the gradients appear)
  std::uint64_t accum = 1;
};

/// Collective seconds per optimizer step, by kind, and the part the compute does not hide.
struct comm_times {
  double all_reduce = 0;       ///< data parallelism's (DDP; hybrid_shard across nodes)
  double all_gather = 0;       ///< ZeRO's and FSDP's
  double reduce_scatter = 0;   ///< ZeRO's and FSDP's
  double tensor_parallel = 0;  ///< tensor parallelism's all-reduces (or sequence parallelism's pairs)
  double pipeline_send = 0;    ///< the pipeline stages' activation and gradient transfers
  double exposed = 0;          ///< added to the step: what the framework does not overlap
  [[nodiscard]] double total() const {
    return all_reduce + all_gather + reduce_scatter + tensor_parallel + pipeline_send;
  }
};

/// DDP's bucket (torch/nn/parallel/distributed.py: bucket_cap_mb 25, in MiB): the last one to fill is reduced
/// after the backward ends, so at least that much is never hidden.
inline constexpr double ddp_bucket_bytes = 25.0 * 1024 * 1024;

namespace detail {
/// Communication that overlaps `compute` seconds, of which `tail` can only start after it.
constexpr double exposed_after(double comm, double compute, double tail) {
  return std::min(comm, std::max(0.0, comm - compute) + tail);
}
}  // namespace detail

/// The step's collectives under `p` (one data-parallel group of p.data_parallel ranks):
/// · DDP: one all-reduce of the gradients per step (the Trainer's no_sync until the last micro-batch;
///   sync_each_batch: every one), overlapped with the backward, the last bucket exposed (reducer.cpp).
/// · ZeRO-1/2 (deepspeed/runtime/zero/stage_1_and_2.py): the gradients reduce-scattered every micro-batch,
///   hidden behind the backward only with overlap_comm, then the updated trainable weights all-gathered.
/// · ZeRO-3 and FSDP full_shard: every micro-batch gathers the weights for the forward and again for the
///   backward and reduce-scatters the gradients (FSDP: once per step under no_sync), prefetched behind the
///   compute, one block's gather exposed. shard_grad_op gathers once per micro-batch and keeps them.
/// · hybrid_shard: full_shard inside a node, the gradient shards all-reduced across nodes.
[[nodiscard]] constexpr comm_times data_parallel_comm(const parallel_config& p, const comm_volume& v,
                                                      const comm_compute& c, const comm_links& links) {
  comm_times t;
  const std::uint64_t n = p.data_parallel, stride = p.tensor_parallel;
  if (n < 2) return t;
  const double A = static_cast<double>(c.accum);
  switch (p.shard) {
    case sharding::none: {
      const double per = ring_all_reduce_s(v.grad_bytes, n, ring_link(links, n, stride));
      const double times = p.sync_each_batch ? A : 1;
      t.all_reduce = per * times;
      const double tail = per * std::min(1.0, ddp_bucket_bytes / std::max(v.grad_bytes, 1.0));
      t.exposed = times * detail::exposed_after(per, c.backward_s, tail);
      return t;
    }
    case sharding::zero1:
    case sharding::zero2: {
      const double link = ring_link(links, n, stride);
      const double per = ring_all_gather_s(v.grad_bytes, n, link);
      t.reduce_scatter = per * A;
      t.all_gather = ring_all_gather_s(v.trained_bytes, n, link);  // only the partitioned, trained weights
      const bool overlap = p.overlap_comm == comm_switch::on;      // DeepSpeed's default for stages 1-2: off
      t.exposed =
          (overlap ? A * detail::exposed_after(per, c.backward_s, 0) : t.reduce_scatter) + t.all_gather;
      return t;
    }
    case sharding::zero3:
    case sharding::fsdp_full:
    case sharding::fsdp_grad_op:
    case sharding::fsdp_hybrid: {
      const bool fsdp = p.shard != sharding::zero3;
      const double reductions = fsdp && !p.sync_each_batch ? 1 : A;  // FSDP's no_sync reduces at the last
      const double block = v.weight_bytes / v.layers;
      const std::uint64_t node_replicas = std::max<std::uint64_t>(1, links.node_gpus / stride);
      const std::uint64_t group = p.shard == sharding::fsdp_hybrid ? std::min(n, node_replicas) : n;
      const double link = ring_link(links, group, stride);
      const double gathers = p.shard == sharding::fsdp_grad_op ? 1 : 2;
      const double gather = ring_all_gather_s(v.weight_bytes, group, link);
      const double scatter = ring_all_gather_s(v.grad_bytes, group, link);
      t.all_gather = gathers * gather * A;
      t.reduce_scatter = scatter * reductions;
      if (p.shard == sharding::fsdp_hybrid && n > group)  // each shard all-reduced across the nodes
        t.all_reduce = reductions * ring_all_reduce_s(v.grad_bytes / static_cast<double>(group), n / group,
                                                      links.inter_node_bytes_s);
      const double per_micro = t.total() / A;
      t.exposed = A * detail::exposed_after(per_micro, c.micro_s, ring_all_gather_s(block, group, link));
      return t;
    }
  }
  return t;
}

/// What one micro-batch moves between the GPUs of one model replica (tensor and pipeline parallelism).
struct model_parallel_volume {
  double hidden_bytes = 0;         ///< the micro-batch's hidden states, b·s·h in the 16-bit compute dtype
  double tokens = 0;               ///< b·s
  double stage_layers = 0;         ///< decoder layers on the slowest pipeline stage (all of them with one)
  bool recompute_forward = false;  ///< full checkpointing runs each layer's forward again
};

/// Megatron tensor parallelism over t ranks, per micro-batch (Shoeybi et al. 2019, §3, the f and g
/// operators): each layer all-reduces its b·s·h output twice in the forward (after the row-parallel attention
/// output and MLP down projection) and twice in the backward (the column-parallel inputs' gradients), and
/// again in a recomputed forward; the vocabulary-parallel embedding's output and the head's input gradient
/// once each (one with pipeline stages: they sit on different ones), and the parallel cross-entropy three
/// fp32 values per token (max, target logit, sum of exponentials: megatron/core/tensor_parallel/
/// cross_entropy.py). Sequence parallelism makes each all-reduce an all-gather and a reduce-scatter of the
/// same ring volume (Korthikanti et al. 2022, §4.2.2). Megatron does not overlap them by default: all
/// exposed.
[[nodiscard]] constexpr double tensor_parallel_comm_s(const parallel_config& p,
                                                      const model_parallel_volume& v,
                                                      const comm_links& links) {
  const std::uint64_t t = p.tensor_parallel;
  if (t < 2) return 0;
  const double link = ring_link(links, t);
  const double per_layer = 4 + (v.recompute_forward ? 2 : 0);
  const double outside = p.pipeline_parallel > 1 ? 1 : 2;
  constexpr double loss_values = 3 * 4;  // three fp32 values per token
  return ring_all_reduce_s(v.hidden_bytes, t, link) * (v.stage_layers * per_layer + outside) +
         ring_all_reduce_s(v.tokens * loss_values, t, link);
}

/// One pipeline stage's transfers per micro-batch (1F1B, Narayanan et al. 2021, §2.2): it receives the
/// previous stage's activations and the next stage's gradient, b·s·h each, a t-th of it when sequence
/// parallelism keeps them sharded; at the pace of the slowest hop between stages.
[[nodiscard]] constexpr double pipeline_send_s(const parallel_config& p, const model_parallel_volume& v,
                                               const comm_links& links) {
  if (p.pipeline_parallel < 2) return 0;
  const double sent = v.hidden_bytes / static_cast<double>(p.sequence_parallel ? p.tensor_parallel : 1);
  return 2 * sent / ring_link(links, p.pipeline_parallel, p.tensor_parallel * p.data_parallel);
}

/// 1F1B and GPipe run m micro-batches through p stages in m + p − 1 stage times, p − 1 of them idle: the
/// bubble (Narayanan et al. 2021, §2.2: fraction (p − 1)/m of the ideal time).
[[nodiscard]] constexpr double pipeline_bubble_s(std::uint64_t stages, double stage_micro_s) {
  return stages < 2 ? 0 : static_cast<double>(stages - 1) * stage_micro_s;
}

}  // namespace headroom
