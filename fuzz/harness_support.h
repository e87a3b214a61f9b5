#pragma once
// Shared pieces of the fuzz harnesses (fuzz_*.cpp). Each harness is a plain function
//   int gptoss_fuzz_<name>(const uint8_t* data, size_t size)
// that must return 0 for every input: a crash, a leak, an undocumented exception or a broken
// invariant (checked with fuzz_require, which aborts) is a finding. libfuzzer_main.cpp turns one
// of them into a libFuzzer binary; tests/fuzz_regressions replays saved inputs through them.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::fuzz {

// A per-process scratch folder (in /dev/shm when it exists), removed at exit.
const std::filesystem::path& temp_dir();
void write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes);

// Prints a rejected input's error when GPTOSS_FUZZ_VERBOSE is set (to see how far seeds get).
void note_rejected(const std::exception& error);

// Aborts with `what` when `ok` is false: an invariant of our own code that the input broke.
void require(bool ok, std::string_view what);

// Streams every tensor of the model in small chunks and checks that each source yields exactly
// size() bytes: the transforms behind a loaded model must be readable end to end.
void drain_model(const CanonicalModel& model);

// The real o200k_harmony tokenizer.json ($GPTOSS_FUZZ_TOKENIZER, else .cache/tokenizer.json);
// empty when absent.
std::filesystem::path real_tokenizer_path();

}  // namespace gptoss::fuzz

extern "C" {
int gptoss_fuzz_safetensors_header(const uint8_t* data, size_t size);
int gptoss_fuzz_gguf(const uint8_t* data, size_t size);
int gptoss_fuzz_modelbin(const uint8_t* data, size_t size);
int gptoss_fuzz_tokenizer_json(const uint8_t* data, size_t size);
int gptoss_fuzz_config_json(const uint8_t* data, size_t size);
int gptoss_fuzz_harmony_parser(const uint8_t* data, size_t size);
void gptoss_fuzz_harmony_parser_init();  // loads the tokenizer (seconds under ASan)
}
