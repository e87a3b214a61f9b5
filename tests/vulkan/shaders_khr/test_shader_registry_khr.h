#pragma once
// SPIR-V of the test-only shaders in VK_KHR_cooperative_matrix's form (tests/vulkan/shaders_khr/*.comp),
// built where GPTOSS_GLSLANG_KHR names a glslang that compiles them.
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace gptoss::test {
const std::map<std::string, std::span<const uint32_t>>& test_shader_registry_khr();
}
