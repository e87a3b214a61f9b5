#pragma once
// CPU engines on preset a, built once per test binary (decoding the weights takes a moment).
#include "runtime/cpu/cpu_engine.h"

namespace gptoss::test {

cpu::CpuEngine& hf_engine();        // preset_a_checkpoint()/hf
cpu::CpuEngine& original_engine();  // preset_a_checkpoint()/original

}  // namespace gptoss::test
