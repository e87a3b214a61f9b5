#!/usr/bin/env bash
# seed_ctest_costs.sh BUILD_DIR: gives a build folder that has never run ctest the tests' costs
# (seconds per test, tests/ctest_costs.txt) so that ctest -j starts the longest tests first.
# Without them a fresh clone's ctest starts tests in the order they are declared, and the slowest
# ones (the Vulkan engine's on lavapipe, declared last) end the run with one core idle. ctest
# keeps its own measured costs in the same file from then on; a stale or partial seed only
# changes the order, never a result. Refresh the seed from a full run with:
#   awk '/^---/{exit} {print}' build/Testing/Temporary/CTestCostData.txt > tests/ctest_costs.txt
set -euo pipefail
cd "$(dirname "$0")/.."
target="$1/Testing/Temporary/CTestCostData.txt"
[ -f "$target" ] && exit 0
mkdir -p "$(dirname "$target")"
cp tests/ctest_costs.txt "$target"
