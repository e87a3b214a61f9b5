// Traces end to end (the file format alone: tests/eval_formats): gptoss-eval --compare-traces finds
// nothing between two runs of one model and names the right stage when one layer's weights were
// changed, and gptoss-run refuses --trace where it cannot record one run.
#include <gtest/gtest.h>

#include "convert/model_io.h"
#include "formats/core/float16.h"
#include "formats/safetensors/safetensors_file.h"
#include "runtime/parity/trace_file.h"
#include "tests/eval/eval_fixture.h"

namespace gptoss::test {
namespace {

constexpr const char* kPrompt = "200006,1428,200008,4827,382,220,17,10,17,30,200007,200006,173781";

// A copy of preset a's HF checkpoint whose layer-2 attention output bias is 1.0 everywhere.
std::filesystem::path perturbed_checkpoint(const TempDir& dir) {
  const auto source = preset_a_checkpoint() / "hf";
  const auto copy = dir / "perturbed";
  std::filesystem::copy(source, copy);
  const auto file = SafetensorsFile::open(copy / "model.safetensors");
  const auto* t = file.find("model.layers.2.self_attn.o_proj.bias");
  EXPECT_NE(t, nullptr);
  auto bytes = read_file_bytes(copy / "model.safetensors");
  for (uint64_t i = 0; i < t->size(); i += 2) {
    const uint16_t one = f32_to_bf16(1.0f);
    bytes[file.data_offset() + t->begin + i] = static_cast<uint8_t>(one);
    bytes[file.data_offset() + t->begin + i + 1] = static_cast<uint8_t>(one >> 8);
  }
  std::filesystem::remove(copy / "model.safetensors");
  write_file_bytes(copy / "model.safetensors", bytes);
  return copy;
}

TEST(TraceCli, CompareTracesNamesThePerturbedLayer) {
  TempDir dir;
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const auto perturbed = perturbed_checkpoint(dir).string();
  auto trace = [&](const std::string& model, const std::string& name) {
    const auto path = (dir / name).string();
    const auto r = run_command(gptoss_run() + " " + model + " --prompt-tokens " + kPrompt + " -n 0 --trace " + path + " 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return path;
  };
  const auto a = trace(hf, "a.trace");
  const auto again = trace(hf, "again.trace");
  const auto b = trace(perturbed, "b.trace");

  const auto same = run_command(gptoss_eval() + " --compare-traces " + a + " " + again + " 2>&1");
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("every stage within the tolerance"), std::string::npos) << same.output;

  const auto parted = run_command(gptoss_eval() + " --compare-traces " + a + " " + b + " 2>&1");
  EXPECT_EQ(parted.exit_code, 1) << parted.output;
  // Layer 2's attention output is the first stage that parts; it moves its router's input, so
  // some tokens go to other experts there.
  EXPECT_NE(parted.output.find("first stage beyond the tolerance: attention 2\n"), std::string::npos) << parted.output;
  EXPECT_NE(parted.output.find("| router 1 | 13 x 4 | routing | 0 rerouted | - | - | ok |"), std::string::npos) << parted.output;
  EXPECT_NE(parted.output.find("| layer 1 | 13 x 64 |"), std::string::npos) << parted.output;

  const auto j = run_command("(" + gptoss_eval() + " --compare-traces " + a + " " + b + " --json 2>/dev/null)");
  const auto json = nlohmann::json::parse(j.output);
  EXPECT_EQ(json["first_parting"], "attention 2");
  EXPECT_EQ(json["stages"][6]["stage"], "layer 1");
  EXPECT_EQ(json["stages"][6]["max_abs_diff"], 0.0);  // untouched
  EXPECT_EQ(json["stages"][7]["stage"], "attention 2");
  EXPECT_GT(json["stages"][7]["relative"].get<double>(), 1e-3);
  EXPECT_GT(json["stages"][8]["rerouted"].get<uint64_t>(), 0u);  // router 2
  EXPECT_GT(json["stages"][9]["relative"].get<double>(), 1e-3);  // layer 2
  EXPECT_EQ(json["a"]["engine"], "cpu");
}

TEST(TraceCli, GptossRunRefusesTraceWhereItCannotRecordOneRun) {
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const auto r = run_command(gptoss_run() + " " + hf + " --parity " + hf + " --prompt-tokens 1,2 --trace x 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--trace records one run"), std::string::npos) << r.output;
  const auto l = run_command(gptoss_run() + " --list-devices --trace x 2>&1");
  EXPECT_EQ(l.exit_code, 2) << l.output;
}

}  // namespace
}  // namespace gptoss::test
