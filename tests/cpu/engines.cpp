#include "tests/cpu/engines.h"

#include "convert/safetensors_model.h"
#include "tests/test_support.h"

namespace gptoss::test {

cpu::CpuEngine& hf_engine() {
  static cpu::CpuEngine engine(load_safetensors_model(preset_a_checkpoint() / "hf"));
  return engine;
}

cpu::CpuEngine& original_engine() {
  static cpu::CpuEngine engine(load_safetensors_model(preset_a_checkpoint() / "original"));
  return engine;
}

}  // namespace gptoss::test
