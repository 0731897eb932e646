// SPDX-License-Identifier: MIT
// Umbrella header: the core plus the config.json reader (nlohmann_json) and printers (fmt).
// Include <headroom/core.hpp> instead to depend on the standard library only.
#pragma once

#include "config_io.hpp"
#include "core.hpp"
#include "deepspeed_config.hpp"
#include "gpu_io.hpp"
#include "report_json.hpp"
#include "report_text.hpp"
#include "svg.hpp"
#include "training_args.hpp"
