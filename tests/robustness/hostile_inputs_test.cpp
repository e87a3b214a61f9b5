// Every hand-crafted 1 KB hostile file, per format, read through the public readers in a child
// process limited to 64 MB of address space beyond its size at fork and one second: each must
// end in a FormatError, never in an allocation failure, a timeout or a crash.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "formats/core/error.h"
#include "tests/robustness/child_process.h"
#include "tests/test_support.h"
#include "tools/gptoss-badinputs/badinputs.h"

namespace gptoss::test {
namespace {

// Hostile for a later stage but valid for the reader that sees them (the container does not
// know GPT-OSS; unknown or odd optional tokenizer.json fields are ignored).
const std::set<std::string> kValidAtThisLevel = {
    "GGUF / alignment 2^31 (huge padding)",  // no tensors, so no padding is ever read
    "model.bin / num_active_experts 2^32-1",  // the model loader refuses it
    "model.bin / num_active_experts 0",
    "tokenizer.json / merges not an array",
    "tokenizer.json / pattern not an object",
    "tokenizer.json / pretokenizers 60 deep",
    "tokenizer.json / pretokenizers not an array",
};

TEST(HostileInputs, EveryCraftedFileIsRejectedWithinLimits) {
  TempDir dir;
  const auto cases = hostile_cases();
  ASSERT_GT(cases.size(), 100u);
  std::map<std::string, int> per_format;
  for (const auto& c : cases) {
    ++per_format[c.format];
    const ChildResult r = run_in_child([&] { read_as(c.format, c.bytes, dir.path()); });
    const bool may_be_accepted = kValidAtThisLevel.count(c.format + " / " + c.name) > 0;
    if (may_be_accepted && r.outcome == ChildOutcome::Accepted) continue;
    EXPECT_EQ(r.outcome, ChildOutcome::FormatError)
        << c.format << " / " << c.name << ": " << outcome_name(r.outcome) << ": " << r.message;
  }
  for (const char* format : {"safetensors", "safetensors index.json", "GGUF", "GGUF model (load_model)", "model.bin",
                             "model.bin model (load_model)", "tokenizer.json", "config.json"})
    EXPECT_GE(per_format[format], 5) << format;
}

TEST(HostileInputs, ChildLimitsCatchRunawayCode) {
  // The harness itself: a runaway allocation and an endless loop are reported, not survived silently.
  if (!built_with_asan()) {
    const ChildResult big = run_in_child([] {
      std::vector<uint8_t> v(256u << 20, 1);
      if (v[12345] != 1) throw std::runtime_error("unreachable");
    });
    EXPECT_EQ(big.outcome, ChildOutcome::OutOfMemory) << big.message;
  }
  const ChildResult loop = run_in_child([] {
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  });
  EXPECT_EQ(loop.outcome, ChildOutcome::TimedOut) << loop.message;
  const ChildResult format = run_in_child([] { throw ::gptoss::FormatError("f", "x", 1, "bad"); });
  EXPECT_EQ(format.outcome, ChildOutcome::FormatError);
  EXPECT_NE(format.message.find("bad"), std::string::npos);
}

}  // namespace
}  // namespace gptoss::test
