// SPDX-License-Identifier: MIT
// Moved to <headroom/io/training_args.hpp> (issue 27: folders say what including costs). This forwarding
// header is kept for one release and goes in 0.3.
#pragma once

#include "io/training_args.hpp"
