// The synthesizer reproduces shared/goldens/make_fixture.py preset a byte for byte: the sha256
// values published in shared/goldens/README.md (and refs-a.json "inputs") are the test.
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace gptoss::test {
namespace {

TEST(SynthGolden, PresetAMatchesFixtureHashes) {
  GOLDENS_OR_SKIP();
  std::ifstream in(*goldens / "a" / "refs-a.json");
  const auto refs = nlohmann::json::parse(in);
  const auto& ck = preset_a_checkpoint();
  EXPECT_EQ(file_sha256(ck / "hf" / "model.safetensors"), refs["inputs"]["hf"].get<std::string>());
  EXPECT_EQ(file_sha256(ck / "original" / "model.safetensors"), refs["inputs"]["original"].get<std::string>());
  // The README's table states the same numbers.
  EXPECT_EQ(refs["inputs"]["hf"], "c29b4819d0ea9542670d87e03c8b913a4ff7b8bcaf172e04b974f2b89e11df21");
  EXPECT_EQ(refs["inputs"]["original"], "34de9488119407e6550cc979b044fada5b5e6d5093980f977fcd5393a281ab6c");
}

}  // namespace
}  // namespace gptoss::test
