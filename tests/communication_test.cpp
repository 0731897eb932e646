// SPDX-License-Identifier: MIT
// Data-parallel collectives per step (communication.hpp): ring times, what each layout runs, what is hidden.
#include <headroom/communication.hpp>

#include "catch.hpp"

using namespace headroom;

namespace {
// 16 GB of weights and of gradients (8B parameters in bf16), 32 blocks; NVLink 4 at 70% in a node of 8
// (315 GB/s per direction) and 35 GB/s between nodes.
constexpr comm_volume eight_b{16e9, 16e9, 16e9, 32};
constexpr comm_links dgx{315e9, 35e9, 8};
constexpr comm_compute one_second{1.0, 0.6, 1};

parallel_config layout(sharding s, std::uint64_t n) {
  parallel_config p;
  p.shard = s;
  p.data_parallel = n;
  return p;
}
}  // namespace

static_assert(ring_all_reduce_s(1e9, 8, 1e9) == 1.75);  // 2 (n - 1) / n of the buffer through each link
static_assert(ring_all_gather_s(1e9, 8, 1e9) == 0.875);
static_assert(ring_all_reduce_s(1e9, 1, 1e9) == 0);
static_assert(ring_link(dgx, 8) == 315e9 && ring_link(dgx, 16) == 35e9);

TEST_CASE("DDP: one gradient all-reduce per step behind the backward, the last 25 MiB bucket exposed",
          "[communication]") {
  const comm_times t = data_parallel_comm(layout(sharding::none, 8), eight_b, one_second, dgx);
  const double per = 1.75 * 16e9 / 315e9;  // 0.0889 s, under the 0.6 s backward
  CHECK(t.all_reduce == Approx(per));
  CHECK(t.all_gather == 0);
  CHECK(t.exposed == Approx(per * ddp_bucket_bytes / 16e9));
  // Across two nodes the ring runs at the network's 35 GB/s: 0.857 s, 0.257 s more than the backward.
  const comm_times two_nodes = data_parallel_comm(layout(sharding::none, 16), eight_b, one_second, dgx);
  const double slow = 2.0 * 15 / 16 * 16e9 / 35e9;
  CHECK(two_nodes.all_reduce == Approx(slow));
  CHECK(two_nodes.exposed == Approx(slow - 0.6 + slow * ddp_bucket_bytes / 16e9));
  // Accumulation under no_sync reduces once; sync_each_batch reduces every micro-batch.
  comm_compute four = one_second;
  four.accum = 4;
  CHECK(data_parallel_comm(layout(sharding::none, 8), eight_b, four, dgx).all_reduce == Approx(per));
  parallel_config each = layout(sharding::none, 8);
  each.sync_each_batch = true;
  CHECK(data_parallel_comm(each, eight_b, four, dgx).all_reduce == Approx(4 * per));
  CHECK(data_parallel_comm(layout(sharding::none, 1), eight_b, one_second, dgx).total() == 0);
}

TEST_CASE(
    "ZeRO-1/2 reduce-scatter every micro-batch, exposed unless overlap_comm, the weights gathered after",
    "[communication]") {
  const double rs = 0.875 * 16e9 / 315e9;
  comm_compute four = one_second;
  four.accum = 4;
  const comm_times z2 = data_parallel_comm(layout(sharding::zero2, 8), eight_b, four, dgx);
  CHECK(z2.reduce_scatter == Approx(4 * rs));
  CHECK(z2.all_gather == Approx(rs));  // the same bytes: the updated bf16 weights
  CHECK(z2.exposed == Approx(5 * rs));
  // LoRA under ZeRO-2 gathers only the adapters it trained (DeepSpeed partitions trainable parameters only).
  const comm_volume lora{16e9, 80e6, 80e6, 32};
  CHECK(data_parallel_comm(layout(sharding::zero2, 8), lora, four, dgx).all_gather ==
        Approx(0.875 * 80e6 / 315e9));
  parallel_config overlapped = layout(sharding::zero2, 8);
  overlapped.overlap_comm = comm_switch::on;
  CHECK(data_parallel_comm(overlapped, eight_b, four, dgx).exposed == Approx(rs));
}

TEST_CASE("FSDP and ZeRO-3 gather the weights twice a micro-batch, prefetched, one block's gather exposed",
          "[communication]") {
  const double gather = 0.875 * 16e9 / 315e9;
  const comm_times full = data_parallel_comm(layout(sharding::fsdp_full, 8), eight_b, one_second, dgx);
  CHECK(full.all_gather == Approx(2 * gather));
  CHECK(full.reduce_scatter == Approx(gather));
  CHECK(full.exposed == Approx(gather / 32));
  const comm_times grad_op = data_parallel_comm(layout(sharding::fsdp_grad_op, 8), eight_b, one_second, dgx);
  CHECK(grad_op.all_gather == Approx(gather));
  // FSDP over PCIe 4.0 (31.5 GB/s at 70%): the gathers outlast the compute and the difference is the step's.
  const comm_links pcie{0.7 * 31.5e9, 35e9, 8};
  const comm_times slow = data_parallel_comm(layout(sharding::fsdp_full, 8), eight_b, one_second, pcie);
  CHECK(slow.total() == Approx(3 * 0.875 * 16e9 / (0.7 * 31.5e9)));
  CHECK(slow.exposed == Approx(slow.total() - 1.0 + 0.875 * 0.5e9 / (0.7 * 31.5e9)));
  // hybrid_shard over 16: full_shard inside each node of 8, each node's gradient shard all-reduced across 2.
  const comm_times hybrid = data_parallel_comm(layout(sharding::fsdp_hybrid, 16), eight_b, one_second, dgx);
  CHECK(hybrid.all_gather == Approx(2 * gather));
  CHECK(hybrid.all_reduce == Approx(ring_all_reduce_s(16e9 / 8, 2, 35e9)));
}

TEST_CASE("Exposed communication is never negative nor more than the collectives",
          "[communication][property]") {
  for (sharding s : {sharding::none, sharding::zero1, sharding::zero2, sharding::zero3, sharding::fsdp_full,
                     sharding::fsdp_grad_op, sharding::fsdp_hybrid})
    for (std::uint64_t n : {2u, 8u, 9u, 64u})
      for (double micro : {1e-3, 0.1, 10.0}) {
        const comm_times t = data_parallel_comm(layout(s, n), eight_b, {micro, micro / 2, 2}, dgx);
        CHECK(t.exposed >= 0);
        CHECK(t.exposed <= t.total() * (1 + 1e-12));
      }
}

// Ranks placed as Megatron orders them: two tensor-parallel groups of 8 need the network for their
// data-parallel ring; four groups of 2 stay inside the node.
static_assert(ring_link(dgx, 2, 8) == 35e9 && ring_link(dgx, 4, 2) == 315e9);

TEST_CASE("Tensor parallelism: four all-reduces of b·s·h per layer and micro-batch, all exposed",
          "[communication]") {
  // Llama-3.1-8B's width at 4 × 4096 tokens in bf16: 134 MB of hidden states, 32 layers.
  const double hidden = 4.0 * 4096 * 4096 * 2, tokens = 4.0 * 4096;
  const model_parallel_volume v{hidden, tokens, 32, false};
  parallel_config tp8;
  tp8.tensor_parallel = 8;
  const double per = 1.75 * hidden / 315e9;
  const double loss = 1.75 * tokens * 12 / 315e9;  // three fp32 values per token
  CHECK(tensor_parallel_comm_s(tp8, v, dgx) == Approx(per * (32 * 4 + 2) + loss));
  // Full recomputation repeats the forward's two; sequence parallelism moves the same ring volume.
  const model_parallel_volume again{hidden, tokens, 32, true};
  CHECK(tensor_parallel_comm_s(tp8, again, dgx) == Approx(per * (32 * 6 + 2) + loss));
  parallel_config sp = tp8;
  sp.sequence_parallel = true;
  CHECK(tensor_parallel_comm_s(sp, v, dgx) == tensor_parallel_comm_s(tp8, v, dgx));
  // Sixteen ranks leave the node; one rank communicates nothing.
  parallel_config tp16;
  tp16.tensor_parallel = 16;
  CHECK(tensor_parallel_comm_s(tp16, v, dgx) == Approx(2.0 * 15 / 16 * (hidden * 130 + tokens * 12) / 35e9));
  CHECK(tensor_parallel_comm_s(parallel_config{}, v, dgx) == 0);
  // With pipeline stages the embedding and the head sit on different stages: one of them per stage.
  parallel_config tp_pp = tp8;
  tp_pp.pipeline_parallel = 2;
  const model_parallel_volume stage{hidden, tokens, 16, false};
  CHECK(tensor_parallel_comm_s(tp_pp, stage, dgx) == Approx(per * (16 * 4 + 1) + loss));
}

TEST_CASE("Pipeline: each stage receives activations and gradients, m + p - 1 stage times",
          "[communication]") {
  const double hidden = 4.0 * 4096 * 4096 * 2;
  const model_parallel_volume v{hidden, 4.0 * 4096, 8, false};
  parallel_config pp4;
  pp4.pipeline_parallel = 4;
  CHECK(pipeline_send_s(pp4, v, dgx) == Approx(2 * hidden / 315e9));
  // Sequence parallelism sends a t-th; stages t·N = 16 ranks apart cross nodes.
  parallel_config sp = pp4;
  sp.tensor_parallel = 2;
  sp.sequence_parallel = true;
  CHECK(pipeline_send_s(sp, v, dgx) == Approx(hidden / 315e9));
  parallel_config wide = pp4;
  wide.data_parallel = 4;
  CHECK(pipeline_send_s(wide, v, dgx) == Approx(2 * hidden / 35e9));
  CHECK(pipeline_send_s(parallel_config{}, v, dgx) == 0);
  CHECK(pipeline_bubble_s(4, 0.5) == 1.5);  // (p - 1) stage times
  CHECK(pipeline_bubble_s(1, 0.5) == 0);
}
