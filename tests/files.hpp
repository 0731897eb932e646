// SPDX-License-Identifier: MIT
// The test files and presets the suites read (one definition, so the suites also build as one unity TU).
#pragma once

#include <filesystem>

#include <headroom/io/config.hpp>

namespace headroom::test {
/// tests/data: configs, training args, recipes, DeepSpeed and accelerate files.
inline const std::filesystem::path data_dir = HEADROOM_TEST_DATA_DIR;
/// A preset from the source tree's presets/.
inline loaded_model preset(const char* name) { return load_preset(name, {HEADROOM_PRESET_SOURCE_DIR}); }
}  // namespace headroom::test
