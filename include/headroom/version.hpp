// SPDX-License-Identifier: MIT
// headroom's version: the single place it is defined (CMakeLists.txt parses it).
#pragma once

#define HEADROOM_VERSION_MAJOR 0
#define HEADROOM_VERSION_MINOR 1
#define HEADROOM_VERSION_PATCH 0

namespace headroom {
inline constexpr const char* version_string = "0.1.0";
}  // namespace headroom
