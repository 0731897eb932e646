#!/usr/bin/env bash
# The README's C++ example is examples/03_embed.cpp (which the build compiles and ctest runs), line for line
# after the file's header comment. Usage: readme_example.sh REPO_ROOT
set -euo pipefail
root=$1
readme=$(awk '/^```cpp$/{on=1; next} /^```$/{on=0} on' "$root/README.md")
example=$(sed '1,/^#include <cstdio>$/{/^#include <cstdio>$/!d}' "$root/examples/03_embed.cpp")
if [[ "$readme" == "$example" ]]; then echo "the README's example is examples/03_embed.cpp"; else
  diff <(echo "$readme") <(echo "$example"); echo "README's C++ example differs from examples/03_embed.cpp"; exit 1; fi
