#include <gtest/gtest.h>

#include <cmath>

#include "convert/model_io.h"
#include "runtime/parity/activation_trace.h"
#include "tests/test_support.h"

namespace gptoss::parity {
namespace {

TEST(Parity, DifferenceUsesOnlySharedRowsAndColumns) {
  Stage full{"logits", 2, 3, 0, {1, 2, 3, 4, 5, 6}};
  Stage last_only{"logits", 1, 2, 1, {4.5f, 5}};  // position 1, two columns (a smaller vocabulary)
  EXPECT_DOUBLE_EQ(max_abs_difference(full, last_only), 0.5);
  Stage disjoint{"logits", 1, 3, 5, {0, 0, 0}};
  EXPECT_TRUE(std::isnan(max_abs_difference(full, disjoint)));
  Stage nan{"x", 1, 1, 0, {NAN}};
  EXPECT_TRUE(std::isnan(max_abs_difference(nan, nan)));
}

TEST(Parity, CpuEngineAgainstTransformersStageByStage) {
  GOLDENS_OR_SKIP();
  const auto refs = SafetensorsFile::open(*goldens / "a" / "refs-a.safetensors");
  std::vector<uint32_t> ids;
  const auto reference = trace_from_refs(refs, "long", &ids);
  ASSERT_EQ(ids.size(), 29u);
  ASSERT_EQ(reference.stages.size(), 7u);  // embedding, 4 layers, final norm, logits (last position)
  const auto trace = trace_model(runtime::EngineKind::Cpu, load_model(test::preset_a_checkpoint() / "hf"), ids, "cpu");
  ASSERT_EQ(trace.stages.size(), 7u);
  for (const auto& stage : reference.stages) {
    const Stage* mine = trace.find(stage.name);
    ASSERT_NE(mine, nullptr) << stage.name;
    EXPECT_LT(max_abs_difference(stage, *mine), 1e-3) << stage.name;
  }
  EXPECT_EQ(trace.find("embedding")->rows, 29u);
  EXPECT_EQ(max_abs_difference(*reference.find("embedding"), *trace.find("embedding")), 0.0);
  const auto table = parity_table(reference, {trace});
  EXPECT_NE(table.find("| layer 3 |"), std::string::npos) << table;
}

TEST(Parity, CliTableAcrossFormats) {
  GOLDENS_OR_SKIP();
  const auto& ck = test::preset_a_checkpoint();
  const auto r = test::run_command((test::tools_dir() / "gptoss-run").string() + " " + (ck / "hf").string() +
                                   " --parity " + (ck / "original").string() + " " + (*goldens / "a" / "model.bin").string() +
                                   " --prompt-tokens 12194,13225,11,2375");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Every format computes the same numbers: every cell of both columns is exactly zero.
  EXPECT_NE(r.output.find("| logits | 0.00e+00 | 0.00e+00 |"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| layer 3 | 0.00e+00 | 0.00e+00 |"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gptoss::parity
