// SPDX-License-Identifier: MIT
// libFuzzer target: newline-separated command-line arguments for the shared run flags. Parsing must
// end in a run, a CLI11 parse error or an input_error. Paths are refused so the fuzzer never reads
// arbitrary files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <headroom/cli/run_options.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('/') != std::string::npos || text.find('\0') != std::string::npos) return 0;
  std::vector<std::string> args{"memory_calculator"};
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    args.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (args.size() > 64) return 0;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  CLI::App app{"fuzz"};
  headroom::cli::run_options o;
  headroom::cli::add_run_options(app, o);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    headroom::cli::note_given(app, o);
    if (!o.config.empty() || !o.args_file.empty() || !o.preset_dir.empty()) return 0;  // files: not here
    const auto dirs = headroom::preset_search_path();
    std::optional<headroom::gpu_info> gpu;
    if (!o.gpu.empty()) gpu = headroom::load_gpu(o.gpu, dirs);
    const headroom::loaded_model model = o.load_model(dirs);
    (void)headroom::estimate_training(
        model.spec, headroom::cli::run_under(o, model.spec.shape, gpu, headroom::cli::framework_flag(o)));
  } catch (const CLI::Error&) {
  } catch (const headroom::input_error&) {
  }
  return 0;
}
