// SPDX-License-Identifier: MIT
// Moved to <headroom/io/deepspeed.hpp> (issue 27: folders say what including costs). This forwarding header
// is kept for one release and goes in 0.3.
#pragma once

#include "io/deepspeed.hpp"
