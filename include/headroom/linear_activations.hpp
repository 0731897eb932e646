// SPDX-License-Identifier: MIT
// Moved to <headroom/activations/linear.hpp> (issue 27: folders say what including costs). This forwarding
// header is kept for one release and goes in 0.3.
#pragma once

#include "activations/linear.hpp"
