#pragma once
// SPIR-V of every shaders/*.comp, compiled at build time and embedded in the binary.
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace gptoss {
const std::map<std::string, std::span<const uint32_t>>& shader_registry();
}

#ifdef GPTOSS_KHR_SHADERS
namespace gptoss {
// The cooperative GEMMs in VK_KHR_cooperative_matrix's form (gemm_coop_khr ...), where the build
// has them (GPTOSS_GLSLANG_KHR).
const std::map<std::string, std::span<const uint32_t>>& shader_registry_khr();
}
#endif
