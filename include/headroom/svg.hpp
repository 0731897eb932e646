// SPDX-License-Identifier: MIT
// Moved to <headroom/report/svg.hpp> (issue 27: folders say what including costs). This forwarding header
// is kept for one release and goes in 0.3.
#pragma once

#include "report/svg.hpp"
