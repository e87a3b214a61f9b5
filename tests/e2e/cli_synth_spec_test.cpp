// Model specs through the CLIs: synth:a is read wherever a model path is taken.
#include <gtest/gtest.h>

#include "convert/model_io.h"
#include "tests/test_support.h"
#include "verify/canonical_digest.h"

namespace gptoss::test {
namespace {


// The line gptoss-verify --digest ends its digest list with.
std::string model_digest_line(const std::string& output) {
  const auto end = output.find("  (model digest)");
  if (end == std::string::npos || end < 64) return "";
  return output.substr(end - 64, 64);
}

TEST(CliSynthSpec, VerifyDigestEqualsTheWrittenCheckpoints) {
  const auto spec = run_command(tool_path("gptoss-verify") + " --digest synth:a");
  ASSERT_EQ(spec.exit_code, 0) << spec.output;
  const auto written = run_command(tool_path("gptoss-verify") + " --digest " + (preset_a_checkpoint() / "hf").string());
  ASSERT_EQ(written.exit_code, 0) << written.output;
  EXPECT_FALSE(model_digest_line(spec.output).empty()) << spec.output;
  EXPECT_EQ(model_digest_line(spec.output), model_digest_line(written.output));
  EXPECT_NE(spec.output.find("synth:a (synthesized)"), std::string::npos) << spec.output;
}

TEST(CliSynthSpec, ConvertWritesTheSpecAsGguf) {
  TempDir dir;
  const auto out = dir / "a.gguf";
  const auto r = run_command(tool_path("gptoss-convert") + " -q synth:a " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("read synth:a"), std::string::npos) << r.output;
  EXPECT_EQ(model_digest(canonical_digests(load_model(out))), model_digest(canonical_digests(load_model("synth:a"))));
}

TEST(CliSynthSpec, UnknownSpecAndSpecAsOutputAreClearErrors) {
  TempDir dir;
  for (const auto& command : {tool_path("gptoss-verify") + " synth:7b", tool_path("gptoss-convert") + " synth:7b " + (dir / "x.gguf").string()}) {
    const auto r = run_command(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.output.find("unknown model spec \"synth:7b\": the synthesized models are synth:a, synth:20b and synth:120b"),
              std::string::npos)
        << r.output;
  }
  const auto as_output = run_command(tool_path("gptoss-convert") + " synth:a synth:b");
  EXPECT_EQ(as_output.exit_code, 2);
  EXPECT_NE(as_output.output.find("cannot be written to"), std::string::npos) << as_output.output;
  const auto manifest = run_command(tool_path("gptoss-verify") + " synth:a --write-manifest " + (dir / "m.txt").string());
  EXPECT_EQ(manifest.exit_code, 2);
  EXPECT_NE(manifest.output.find("synth:a is generated as it is read"), std::string::npos) << manifest.output;
}

}  // namespace
}  // namespace gptoss::test
