// SPDX-License-Identifier: MIT
// The dependency-free core: include this when you only need the numbers (standard library only).
#pragma once

#include "activations.hpp"
#include "advisor.hpp"
#include "batching.hpp"
#include "error.hpp"
#include "flops.hpp"
#include "gpu.hpp"
#include "logits.hpp"
#include "lora.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "overhead.hpp"
#include "packing.hpp"
#include "peak.hpp"
#include "precision.hpp"
#include "quantization.hpp"
#include "schedules.hpp"
#include "throughput.hpp"
#include "units.hpp"
#include "version.hpp"
