// SPDX-License-Identifier: MIT
// A model as a reader returns it: the shapes and nominal size the estimates take, and the provenance and
// notes the reports print. A plain value of standard-library types (the readers that fill it are in io/).
#pragma once

#include <string>
#include <vector>

#include "memory.hpp"

namespace headroom {

/// A loaded model: shapes, optional nominal size, and where it came from.
struct loaded_model {
  model_spec spec{};
  std::string name;                   ///< preset name, or the file name of a raw config.json
  std::string model_type;             ///< config.json model_type
  std::string source;                 ///< provenance text from the preset's "_headroom" block
  std::string origin;                 ///< the file it was read from
  std::vector<std::string> notes;     ///< what the architecture's pricing leaves out or approximates
  std::vector<std::string> checks;    ///< what the checkpoint beside the config says of the count
  std::vector<std::string> warnings;  ///< a checkpoint whose size disagrees with the count
};

}  // namespace headroom
