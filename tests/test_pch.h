// The test targets' precompiled header (tests/CMakeLists.txt, gptoss_test_pch): the large headers
// most test files include. A test file still includes what it uses; this only makes it cheap.
#pragma once
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>
