#pragma once
// The tiny model.bin of tools/gptoss-badinputs/tiny_modelbin.h (one file for the tool's seed and
// these tests), as bytes, with the offsets the crafted-corruption and truncation tests poke at.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "formats/modelbin/modelbin_writer.h"
#include "tests/test_support.h"
#include "tools/gptoss-badinputs/tiny_modelbin.h"

namespace gptoss::test {

// Offsets of interesting bytes in the tiny file.
inline constexpr uint64_t kTinyRegexOffset = modelbin::kSpecialTableOffset + 2 * 16;
inline constexpr const char* kTinyRegex = kTinyModelBinRegex;
inline constexpr uint64_t kTinyTokensOffset = kTinyRegexOffset + 4;

inline std::vector<uint8_t> tiny_modelbin_bytes(const std::filesystem::path& dir) {
  const auto path = dir / "tiny.bin";
  write_tiny_modelbin(path);
  return read_file_bytes(path);
}

}  // namespace gptoss::test
