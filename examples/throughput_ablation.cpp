// SPDX-License-Identifier: MIT
// The course's throughput ablation (lab L3.2) predicted before running it: Qwen3-1.7B LoRA SFT on a
// 24 GB card under (a) no checkpointing, (b) checkpointing, (c) packing with FlashAttention-2 and
// (d) fused kernels, with the padding of a length histogram. Prints peak memory, trained tokens/s and MFU.
#include <string>

#include <fmt/format.h>

#include <headroom/cli/parse.hpp>
#include <headroom/headroom.hpp>

using namespace headroom;

int main(int argc, char** argv) {
  CLI::App app{"headroom throughput_ablation: the course's L3.2 ablation, predicted"};
  std::string preset = "qwen3-1.7b", gpu_name = "rtx-4090",
              lengths_file = HEADROOM_EXAMPLE_DATA_DIR "/chat_lengths.csv";
  std::string batch = "4", max_length = "2048";
  app.add_option("--preset", preset, "model preset")->capture_default_str();
  app.add_option("--gpu", gpu_name, "a 24 GB card by default (the course's T1)")->capture_default_str();
  app.add_option("--lengths", lengths_file, "token lengths of the training data (CSV or JSON)")
      ->capture_default_str();
  app.add_option("--batch", batch, "micro-batch")->capture_default_str();
  app.add_option("--max-length", max_length, "max_length")->capture_default_str();
  return cli::run(app, argc, argv, [&]() {
    const auto dirs = cli::program_search_path("");
    const loaded_model model = load_preset(preset, dirs);
    const gpu_info gpu = load_gpu(gpu_name, dirs);
    if (!gpu.bf16)  // refused before the table starts, with this program's own terms (issue 31, MI-31)
      throw input_error("--gpu",
                        gpu.name + " has no bf16 support, and throughput_ablation prices bf16 runs only");
    run_config base;
    base.setup.method = training_method::lora;
    base.activations.batch = cli::parse_count("--batch", batch, 4096);
    base.activations.seq_len = cli::parse_count("--max-length", max_length, 1u << 20);
    base.overhead = overhead_for(gpu);
    const padding_summary pad =
        summarize_lengths(load_lengths(lengths_file), base.activations.batch, base.activations.seq_len);
    struct row {
      const char* name;
      run_config run;
      double waste;
    };
    row rows[4] = {{"(a) no checkpointing", base, pad.padding_waste()},
                   {"(b) gradient checkpointing", base, pad.padding_waste()},
                   {"(c) + packing, FlashAttention-2", base, 0.0},
                   {"(d) + fused kernels (Liger FLCE)", base, 0.0}};
    rows[0].run.activations.ckpt = checkpointing::none;
    rows[3].run.loss.impl = loss_impl::fused_liger;
    fmt::print("{} LoRA r16 on {} ({} GB), micro-batch {}, max_length {}\n", model.name, gpu.name,
               gpu.memory_gb, base.activations.batch, base.activations.seq_len);
    fmt::print(
        "lengths: {} sequences, {:.1f}% of computed tokens are padding when batches pad to their longest\n\n",
        pad.sequences, 100 * pad.padding_waste());
    fmt::print("{:<34} {:>10} {:>6} {:>14} {:>7}\n", "configuration", "peak GB", "fits", "tokens/s", "MFU");
    for (const row& r : rows) {
      const training_estimate mem = estimate_training(model.spec, r.run);
      roofline_config rc;
      rc.padding_waste = r.waste;
      const throughput_estimate t = predict_throughput(model.spec, r.run, gpu, rc);
      fmt::print("{:<34} {:>10.2f} {:>6} {:>14.0f} {:>6.1f}%\n", r.name, in_gb(mem.total_bytes()),
                 fits(mem, gpu.memory()) ? "yes" : "no", t.tokens_per_second, 100 * t.mfu);
    }
    fmt::print(
        "\nMFU credits 4N + 6 per adapter parameter (LoRA); tokens/s counts trained (non-padding) tokens.\n");
    return cli::exit_ok;
  });
}
