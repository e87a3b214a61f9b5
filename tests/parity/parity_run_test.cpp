// The parity run over models x engines (gptoss-run --parity's library): which runs are made, in
// which order and under which labels, that each is the prompt's prefill on its engine, that decode
// steps feed every run the first run's tokens, and what the report prints.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "convert/model_io.h"
#include "runtime/parity/parity_run.h"
#include "runtime/parity/trace_file.h"
#include "runtime/sampler/sampler.h"
#include "tests/test_support.h"

namespace gptoss::parity {
namespace {

using runtime::EngineKind;
const std::vector<uint32_t> kPrompt = {12194, 13225, 11, 2375};

ParityRequest request_for(std::vector<std::filesystem::path> models, std::vector<EngineKind> engines) {
  ParityRequest r;
  r.models = std::move(models);
  r.engines = std::move(engines);
  r.prompt = kPrompt;
  return r;
}

std::vector<std::string> labels(const std::vector<Trace>& traces) {
  std::vector<std::string> all;
  for (const auto& t : traces) all.push_back(t.label);
  return all;
}

// Runs go model by model, each model on every engine in the order given; the first is the
// reference, and decode steps feed every run its greedy tokens.
TEST(ParityRun, EveryModelOnEveryEngineTheFirstRunTheReference) {
  const auto& ck = test::preset_a_checkpoint();
  auto request = request_for({ck / "hf", ck / "original"}, {EngineKind::CpuF64, EngineKind::Cpu});
  request.decode_steps = 2;
  const auto result = run_parity(request);
  EXPECT_EQ(result.prompt_tokens, 4u);
  EXPECT_EQ(result.reference.label, "cpu-f64: safetensors hf");
  EXPECT_EQ(labels(result.runs), (std::vector<std::string>{"cpu: safetensors hf", "cpu-f64: safetensors original",
                                                           "cpu: safetensors original"}));
  // Each run is the prompt's prefill: every position of every stage, the logits' included.
  ASSERT_EQ(result.runs.size(), 3u);
  for (const auto* trace : {&result.reference, &result.runs[0], &result.runs[1], &result.runs[2]}) {
    ASSERT_EQ(trace->stages.size(), 15u) << trace->label;  // embedding, 4 layers with their attention and routing, final norm, logits
    for (const auto& stage : trace->stages) {
      EXPECT_EQ(stage.rows, 4u) << trace->label << " " << stage.name;
      EXPECT_EQ(stage.first_row, 0u) << trace->label << " " << stage.name;
    }
  }
  // The two layouts hold the same weights: the same engine gives the same bits.
  for (size_t i = 0; i < 11; ++i)
    EXPECT_EQ(result.reference.stages[i].values, result.runs[1].stages[i].values) << result.reference.stages[i].name;

  // Decode steps: every run's, the first run's first, each step one row at its position.
  EXPECT_EQ(labels(result.steps), (std::vector<std::string>{"cpu-f64: safetensors hf", "cpu: safetensors hf",
                                                            "cpu-f64: safetensors original", "cpu: safetensors original"}));
  ASSERT_EQ(result.step_tokens.size(), 2u);
  for (const auto& run : result.steps) {
    ASSERT_EQ(run.stages.size(), 2u) << run.label;
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(run.stages[i].first_row, kPrompt.size() + i) << run.label;
  }
  // The tokens fed are the first run's choices: the argmax of its prompt's last logits, then of its step's.
  const auto& logits = *result.reference.find("logits");
  const std::span<const float> last(logits.values.data() + (logits.rows - 1) * logits.cols, logits.cols);
  EXPECT_EQ(result.step_tokens[0], sampling::argmax(last));
  EXPECT_EQ(result.step_tokens[1], sampling::argmax(result.steps[0].stages[0].values));
  // The report: the prompt's table, then the steps under the first run's name.
  EXPECT_EQ(parity_report(result),
            "4 prompt tokens\n" + parity_table(result.reference, result.runs) +
                "\n2 decode steps after the prompt, every run fed cpu-f64: safetensors hf's greedy tokens\n" +
                decode_table(result.steps[0], result.step_tokens, {result.steps[1], result.steps[2], result.steps[3]}));
}

TEST(ParityRun, GoldenReferenceKeepsEveryRunAndTheKvCacheNamesTheEngine) {
  auto request = request_for({test::preset_a_checkpoint() / "hf"}, {EngineKind::Cpu});
  request.reference = Trace{"golden", {}};
  request.options.kv_cache = runtime::KvCacheType::F16;
  // A device index is for the Vulkan runs: the CPU engine, which refuses one, runs without it.
  request.options.device_index = 0;
  const auto result = run_parity(request);
  EXPECT_EQ(result.reference.label, "golden");
  EXPECT_EQ(labels(result.runs), (std::vector<std::string>{"cpu (f16 KV cache): safetensors hf"}));
  // Without decode steps the report is the prompt's table alone.
  EXPECT_EQ(parity_report(result), "4 prompt tokens\n" + parity_table(result.reference, result.runs));
}

TEST(ParityRun, DecodeStepsNeedARunToContinue) {
  auto request = request_for({test::preset_a_checkpoint() / "hf"}, {EngineKind::Cpu});
  request.reference = Trace{"golden", {}};
  request.decode_steps = 2;
  EXPECT_THROW(run_parity(request), std::invalid_argument);
}

// The scripts' tests: python3 and zstd, and preset a's trace over the prompt ids 100..140 (41
// positions) on `engine`, written to `trace` by gptoss-run --trace.
bool have_python_and_zstd() {
  return test::run_command("command -v python3 >/dev/null && command -v zstd >/dev/null").exit_code == 0;
}
test::CommandResult write_preset_a_trace(const std::string& engine, const std::string& trace) {
  std::string ids;
  for (int id = 100; id <= 140; ++id) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return test::run_command((test::tools_dir() / "gptoss-run").string() + " " +
                           (test::preset_a_checkpoint() / "hf").string() + " --engine " + engine +
                           " -n 0 --prompt-tokens " + ids + " --trace " + trace + " 2>&1");
}

// scripts/router_gaps.py recomputes each layer's router logits from a trace's "attention L" stage
// and the checkpoint's router weights: on preset a's f64 engine they pick exactly the experts the
// engine picked, in its order, for every one of 4 layers x 41 positions (--check), and the script
// reports the closest decisions. Skips where python3 or zstd is missing.
TEST(RouterGaps, RecomputedChoicesAreTheTracesOwn) {
  if (!have_python_and_zstd()) GTEST_SKIP() << "python3 or zstd not found";
  test::TempDir dir;
  const auto hf = test::preset_a_checkpoint() / "hf";
  const auto trace = (dir / "f64.trace").string();
  const auto run = write_preset_a_trace("cpu-f64", trace);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto script = test::data_dir().parent_path() / "scripts" / "router_gaps.py";
  const auto r = test::run_command("python3 " + script.string() + " " + trace + " " + (hf / "model.safetensors").string() +
                                   " --check --most 2 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("164 router decisions, the closest 2\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("164 of 164 decisions as the trace's"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("which experts run"), std::string::npos) << r.output;
}

// scripts/expert_tiles.py counts the prefill expert GEMMs' tiles of a trace's routing: on preset a's
// trace (the CPU engine, 41 positions) its totals are those counted here from the trace's own
// `router L` stages, at the engine's tile of 64 rows and at one of 8 (where preset a's few choices
// per expert fill several). Skips where python3 or zstd is missing.
TEST(ExpertTiles, CountsTheTilesOfTheTracesRouting) {
  if (!have_python_and_zstd()) GTEST_SKIP() << "python3 or zstd not found";
  test::TempDir dir;
  const auto trace = (dir / "cpu.trace").string();
  const auto run = write_preset_a_trace("cpu", trace);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto file = read_trace_file(trace);
  const auto script = test::data_dir().parent_path() / "scripts" / "expert_tiles.py";
  for (const size_t tile : {size_t{64}, size_t{8}}) {
    const size_t half = tile / 2;
    size_t layers = 0, tiles = 0, choices = 0, halves = 0, positions = 0, k = 0;
    for (const auto& stage : file.trace.stages) {
      if (stage.name.rfind("router ", 0) != 0) continue;
      ++layers;
      positions = stage.rows;
      k = stage.cols;
      std::map<int, size_t> rows;
      for (const float e : stage.values) ++rows[static_cast<int>(e)];
      for (const auto& [expert, n] : rows) {
        tiles += (n + tile - 1) / tile;
        halves += n % tile != 0 && n % tile <= half;
      }
      choices += stage.values.size();
    }
    ASSERT_GT(layers, 0u);
    const auto r = test::run_command("python3 " + script.string() + " " + trace + " --tile " + std::to_string(tile) +
                                     " --half " + std::to_string(half) + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    char filled[64], full[64];
    std::snprintf(full, sizeof full, "%.1f", static_cast<double>(choices) / static_cast<double>(tile));
    std::snprintf(filled, sizeof filled, "%.1f", 100.0 * static_cast<double>(choices) / static_cast<double>(tiles * tile));
    EXPECT_NE(r.output.find(std::to_string(layers) + " layers x " + std::to_string(positions) + " positions, " +
                            std::to_string(k) + " experts per position\n"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("tiles of " + std::to_string(tile) + " rows: " + std::to_string(tiles) +
                            " where full ones would take " + full + " (" + filled + "% of the row slots filled)\n"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("tiles of at most " + std::to_string(half) + " rows: " + std::to_string(halves) + "\n"),
              std::string::npos)
        << r.output;
  }
}

}  // namespace
}  // namespace gptoss::parity
