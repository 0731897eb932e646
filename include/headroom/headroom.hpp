// SPDX-License-Identifier: MIT
// Umbrella header: the core plus the config.json reader (nlohmann_json) and printers (fmt).
// Include <headroom/core.hpp> instead to depend on the standard library only.
#pragma once

#include "core.hpp"
#include "io/config.hpp"
#include "io/deepspeed.hpp"
#include "io/gpu.hpp"
#include "io/training_args.hpp"
#include "report/json.hpp"
#include "report/svg.hpp"
#include "report/text.hpp"
#include "request.hpp"
