// SPDX-License-Identifier: MIT
// Moved to <headroom/activations/config.hpp> (issue 27: folders say what including costs). This forwarding
// header is kept for one release and goes in 0.3.
#pragma once

#include "activations/config.hpp"
