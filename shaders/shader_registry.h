#pragma once
// SPIR-V of every shaders/*.comp, compiled at build time and embedded in the binary (the
// cooperative GEMMs twice: NAME and NAME_khr, their VK_KHR_cooperative_matrix form).
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace gptoss {
const std::map<std::string, std::span<const uint32_t>>& shader_registry();
}
