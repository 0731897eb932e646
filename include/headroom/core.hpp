// SPDX-License-Identifier: MIT
// The dependency-free core: include this when you only need the numbers (standard library only).
#pragma once

#include "error.hpp"
#include "lora.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "quantization.hpp"
#include "units.hpp"
#include "version.hpp"
