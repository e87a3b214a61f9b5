#pragma once
// SPIR-V of the test-only shaders (tests/vulkan/shaders/*.comp).
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace gptoss::test {
const std::map<std::string, std::span<const uint32_t>>& test_shader_registry();
}
