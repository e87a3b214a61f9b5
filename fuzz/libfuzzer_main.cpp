// The libFuzzer entry point of one target; CMake defines GPTOSS_FUZZ_ENTRY as its harness and,
// for a target with expensive set-up (loading the real tokenizer), GPTOSS_FUZZ_INIT, run once
// before the first input so that the set-up does not count against the per-input timeout.
#include "fuzz/harness_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return GPTOSS_FUZZ_ENTRY(data, size); }

#ifdef GPTOSS_FUZZ_INIT
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  GPTOSS_FUZZ_INIT();
  return 0;
}
#endif
