// Peak memory of a real conversion does not grow with the model or the threads beyond the chunks
// in flight: gptoss-convert of a synthesized model with 2 layers of gpt-oss-20b width (2880 wide,
// 32 experts; ~1 GB of weights) to a Q8_0 GGUF, with -j 1 and -j 8, measured as the process's
// peak resident set (mapped input pages count while mapped: the writers release them behind the
// cursor). Two layers are enough: the input then exceeds four times the -j 8 bound (checked
// below), so holding it, or a 265 MB expert tensor per thread, fails the test; more layers only
// repeat the same tensors at more cost.
#include <gtest/gtest.h>

#include <regex>

#include "formats/core/chunk_pipeline.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

// What the process needs besides the chunks: the program and its libraries, the canonical model,
// the writer's 8 MiB buffer, a tile of f32 values and up to 256 KiB of copied input per worker.
constexpr uint64_t kBaseBytes = 80ull << 20;
constexpr uint64_t kPerWorkerBytes = 1ull << 20;

uint64_t peak_rss_bytes(const std::string& command) {
  const auto result = run_command(std::string(GPTOSS_PEAK_RSS) + " " + command);
  EXPECT_EQ(result.exit_code, 0) << command << "\n" << result.output;
  std::smatch m;
  static const std::regex line(R"(peak_rss_kb (\d+))");
  if (!std::regex_search(result.output, m, line)) {
    ADD_FAILURE() << "no peak_rss_kb line in: " << result.output;
    return 0;
  }
  return std::stoull(m[1].str()) * 1024;
}

TEST(PeakMemory, ConversionStaysWithinTheChunksInFlight) {
  TempDir dir;
  const std::string tools = tools_dir().string();
  const auto synth = run_command(tools + "/gptoss-synth " + (dir / "m").string() +
                                 " --preset 20b --layers 2 --vocab 8192 --layouts hf");
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const uint64_t input = fs::file_size(dir / "m" / "hf" / "model.safetensors");
  for (unsigned threads : {1u, 8u}) {
    const uint64_t peak = peak_rss_bytes(tools + "/gptoss-convert " + (dir / "m" / "hf").string() + " " +
                                         (dir / "out.gguf").string() + " --dense q8_0 -q -j " + std::to_string(threads));
    fs::remove(dir / "out.gguf");
    // A chunk in flight holds a buffer, or the mapped pages of a view; a slot's buffer stays allocated.
    const uint64_t chunks = 2 * OrderedChunkPipeline::chunks_in_flight(threads) * PipelineOptions().chunk_bytes;
    const uint64_t bound = kBaseBytes + chunks + threads * kPerWorkerBytes;
    EXPECT_LT(peak, bound) << "-j " << threads << ": peak " << (peak >> 20) << " MiB, bound " << (bound >> 20) << " MiB";
    // The bound means something: holding the input, or one of its 265 MB expert tensors per
    // thread, would exceed it several times.
    EXPECT_GT(input, 4 * bound);
    std::cout << "-j " << threads << ": peak RSS " << (peak >> 20) << " MiB (bound " << (bound >> 20) << " MiB, input "
              << (input >> 20) << " MiB)\n";
  }
}

}  // namespace
}  // namespace gptoss::test
