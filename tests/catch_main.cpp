// SPDX-License-Identifier: MIT
// Only for a Catch2 v2 install without the Catch2WithMain library.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
