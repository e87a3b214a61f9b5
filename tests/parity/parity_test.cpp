#include <gtest/gtest.h>

#include <cmath>

#include "convert/model_io.h"
#include "runtime/parity/activation_trace.h"
#include "runtime/parity/parity_run.h"
#include "runtime/parity/trace_file.h"
#include "runtime/sampler/sampler.h"
#include "tests/test_support.h"

namespace gptoss::parity {
namespace {

TEST(Parity, DifferenceUsesOnlySharedRowsAndColumns) {
  Stage full{"logits", 2, 3, 0, {1, 2, 3, 4, 5, 6}};
  Stage last_only{"logits", 1, 2, 1, {4.5f, 5}};  // position 1, two columns (a smaller vocabulary)
  EXPECT_DOUBLE_EQ(max_abs_difference(full, last_only), 0.5);
  EXPECT_EQ(largest_difference(full, last_only).position, 1u);
  Stage first_row_off{"logits", 2, 3, 0, {1, 2, 9, 4, 5, 6.25f}};  // 6 at row 0 beats 0.25 at row 1
  EXPECT_DOUBLE_EQ(largest_difference(full, first_row_off).value, 6.0);
  EXPECT_EQ(largest_difference(full, first_row_off).position, 0u);
  Stage second_row_off{"logits", 2, 3, 0, {1, 2.5f, 3, 4, 5, 16}};
  EXPECT_EQ(largest_difference(full, second_row_off).position, 1u);
  // The table's last column names that position.
  Trace a{"a", {full}}, b{"b", {second_row_off}};
  a.stages[0].name = b.stages[0].name = "layer 0";
  EXPECT_NE(parity_table(a, {b}).find("| layer 0 | 1.00e+01 | 1.67e+00 | 1 |"), std::string::npos) << parity_table(a, {b});
  Stage disjoint{"logits", 1, 3, 5, {0, 0, 0}};
  EXPECT_TRUE(std::isnan(max_abs_difference(full, disjoint)));
  Stage nan{"x", 1, 1, 0, {NAN}};
  EXPECT_TRUE(std::isnan(max_abs_difference(nan, nan)));
}

// Router stages compare as routing: a token whose set of experts differs is named, with its layer
// and position; the same experts in another order are the same routing.
TEST(Parity, RoutingDifferencesAreNamedAsSuch) {
  // Three tokens, two experts each: token 1 in another order (same routing), token 2 rerouted.
  const Stage a{"router 7", 3, 2, 400, {3, 17, 9, 5, 1, 2}};
  const Stage b{"router 7", 3, 2, 400, {3, 17, 5, 9, 1, 22}};
  ASSERT_TRUE(is_router_stage(a));
  EXPECT_FALSE(is_router_stage(Stage{"layer 7", 1, 1, 0, {0}}));
  const auto d = routing_differences(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].position, 402u);
  EXPECT_EQ(d[0].a, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(d[0].b, (std::vector<uint32_t>{1, 22}));
  EXPECT_TRUE(routing_differences(a, a).empty());
  const Stage layer_a{"layer 7", 3, 1, 400, {1, 2, 3}}, layer_b{"layer 7", 3, 1, 400, {1, 2, 30}};
  const Trace reference{"cpu", {a, layer_a}}, other{"vulkan", {b, layer_b}};
  const auto table = parity_table(reference, {other});
  EXPECT_NE(table.find("| router 7 | 1 rerouted | - | 402 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| layer 7 | 2.70e+01 | 9.00e+00 | 402 |"), std::string::npos) << table;
  EXPECT_NE(table.find("routing: vulkan sends 1 token to other experts than cpu: layer 7 at position 402 (experts 1,2 "
                       "against 1,22)"),
            std::string::npos)
      << table;
  EXPECT_EQ(parity_table(reference, {reference}).find("routing:"), std::string::npos);
  // A trace comparison parts at a rerouted token, whatever the tolerance.
  TraceFile fa{{"d", "m", "cpu", "host", {1, 2, 3}}, reference}, fb{{"d", "m", "vulkan", "gpu", {1, 2, 3}}, other};
  const auto c = compare_traces(fa, fb, 1e9);
  ASSERT_EQ(c.stages.size(), 2u);
  EXPECT_TRUE(c.stages[0].routing);
  EXPECT_EQ(c.stages[0].rerouted, 1u);
  EXPECT_TRUE(c.stages[0].parts);
  EXPECT_FALSE(c.stages[1].parts);
  ASSERT_TRUE(c.first_parting.has_value());
  EXPECT_EQ(*c.first_parting, 0u);
  EXPECT_NE(trace_comparison_table(fa, fb, c).find("| router 7 | 3 x 2 | routing | 1 rerouted | - | 402 | PARTS |"),
            std::string::npos);
  EXPECT_EQ(trace_comparison_json(fa, fb, c)["stages"][0]["rerouted"], 1u);
}

TEST(Parity, CpuEngineAgainstTransformersStageByStage) {
  GOLDENS_OR_SKIP();
  const auto refs = SafetensorsFile::open(*goldens / "a" / "refs-a.safetensors");
  std::vector<uint32_t> ids;
  const auto reference = trace_from_refs(refs, "long", &ids);
  ASSERT_EQ(ids.size(), 29u);
  ASSERT_EQ(reference.stages.size(), 7u);  // embedding, 4 layers, final norm, logits (last position)
  const auto trace = trace_model(runtime::EngineKind::Cpu, load_model(test::preset_a_checkpoint() / "hf"), ids, "cpu");
  ASSERT_EQ(trace.stages.size(), 15u);  // and each layer's attention and routing, which the goldens do not hold
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

// Decode steps: the reference's steps feed the argmax of its previous logits (the prompt's last row
// first); another engine fed those tokens computes the same logits within its precision, each step
// a stage of one row at its position; the table names each step, its token and the argmax verdicts.
TEST(Parity, DecodeStepsFeedTheReferencesGreedyTokens) {
  const auto model = load_model(test::preset_a_checkpoint() / "hf");
  const std::vector<uint32_t> prompt = {12194, 13225, 11, 2375};
  runtime::EngineOptions options;
  options.max_context = prompt.size() + 4;
  const auto f64 = runtime::make_engine(runtime::EngineKind::CpuF64, model, options);
  const auto f32 = runtime::make_engine(runtime::EngineKind::Cpu, model, options);
  const auto prompt_f64 = trace_engine(*f64, prompt, "f64"), prompt_f32 = trace_engine(*f32, prompt, "f32");
  const auto& logits = *prompt_f64.find("logits");
  const std::span<const float> last(logits.values.data() + (logits.rows - 1) * logits.cols, logits.cols);
  std::vector<uint32_t> tokens;
  const auto reference = trace_decode_steps(*f64, prompt_f64, 4, tokens, "f64");
  ASSERT_EQ(tokens.size(), 4u);
  ASSERT_EQ(reference.stages.size(), 4u);
  EXPECT_EQ(tokens[0], sampling::argmax(last));
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(tokens[i], sampling::argmax(reference.stages[i - 1].values)) << i;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reference.stages[i].name, "step " + std::to_string(i + 1));
    EXPECT_EQ(reference.stages[i].rows, 1u);
    EXPECT_EQ(reference.stages[i].first_row, prompt.size() + i);
  }
  EXPECT_EQ(f64->position(), prompt.size() + 4);

  const std::vector<uint32_t> fed = tokens;
  const auto other = trace_decode_steps(*f32, prompt_f32, 4, tokens, "f32");
  EXPECT_EQ(tokens, fed);
  // Given tokens are fed, not chosen again: another second token changes the second step only.
  std::vector<uint32_t> altered = fed;
  altered[1] = (fed[1] + 1) % model.config.vocab_size;
  const auto other_f32 = runtime::make_engine(runtime::EngineKind::Cpu, model, options);
  const auto prompt_other = trace_engine(*other_f32, prompt, "f32");
  const auto forced = trace_decode_steps(*other_f32, prompt_other, 2, altered, "altered");
  EXPECT_LT(max_abs_difference(reference.stages[0], forced.stages[0]) / max_abs_value(reference.stages[0], forced.stages[0]), 1e-5);
  EXPECT_GT(max_abs_difference(reference.stages[1], forced.stages[1]) / max_abs_value(reference.stages[1], forced.stages[1]), 1e-3);
  for (size_t i = 0; i < 4; ++i) {
    const double relative = max_abs_difference(reference.stages[i], other.stages[i]) /
                            max_abs_value(reference.stages[i], other.stages[i]);
    EXPECT_LT(relative, 1e-5) << i;
    EXPECT_GT(relative, 0.0) << i;  // f32 against f64: not the same numbers
  }
  const auto table = decode_table(reference, tokens, {other});
  EXPECT_NE(table.find("| step 1 | " + std::to_string(tokens[0]) + " | "), std::string::npos) << table;
  EXPECT_NE(table.find("| step 4 | " + std::to_string(tokens[3]) + " | "), std::string::npos) << table;
  size_t same = 0;
  for (size_t at = table.find("| same |"); at != std::string::npos; at = table.find("| same |", at + 1)) ++same;
  EXPECT_EQ(same, 4u) << table;

  // A run whose tokens differ from the reference's: its argmax column names its own choice.
  Trace shifted = other;
  shifted.label = "shifted";
  auto& row = shifted.stages[0].values;
  const uint32_t chosen = sampling::argmax(row), rival = chosen == 0 ? 1 : 0;
  row[rival] = row[chosen] + 1.0f;
  const auto marked = decode_table(reference, tokens, {shifted});
  EXPECT_NE(marked.find("| " + std::to_string(rival) + " |"), std::string::npos) << marked;
}

TEST(Parity, CliDecodeStepsAndWhereTheyDoNotApply) {
  const auto& ck = test::preset_a_checkpoint();
  const std::string run = test::tool_path("gptoss-run") + " " + (ck / "hf").string();
  const auto r = test::run_command(run + " --engines cpu-f64,cpu --prompt-tokens 12194,13225,11,2375 --decode-steps 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 decode steps after the prompt, every run fed cpu-f64: safetensors hf's greedy tokens"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("| step 3 |"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("| step 4 |"), std::string::npos) << r.output;
  const auto outside = test::run_command(run + " --prompt-tokens 1,2 --decode-steps 3");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_NE(outside.output.find("--decode-steps"), std::string::npos) << outside.output;
  const auto refs = test::run_command(run + " --refs x.safetensors --refs-prompt long --decode-steps 3");
  EXPECT_NE(refs.exit_code, 0);
  EXPECT_NE(refs.output.find("--decode-steps continues the first run's greedy choices"), std::string::npos) << refs.output;
}

}  // namespace
}  // namespace gptoss::parity
