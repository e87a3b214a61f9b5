// gptoss-bench end to end on synth:a: every output format parses and holds the tests and
// repetitions asked for, on the CPU engine and on the Vulkan engine (lavapipe in CI); failures are
// clear errors. No timing is asserted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/engine.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// One warm-up run per test (--warmup-seconds 0): these tests check what runs and what is printed,
// not the speed, and the default second of warm-up per test would only add time.
std::string bench() { return (tools_dir() / "gptoss-bench").string() + " --warmup-seconds 0"; }

// stdout alone (progress goes to stderr).
CommandResult run_stdout(const std::string& arguments) { return run_command("(" + bench() + " " + arguments + " 2>/dev/null)"); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> all;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) all.push_back(line);
  return all;
}

std::string read_text(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  return {bytes.begin(), bytes.end()};
}

bool vulkan_usable() {
  try {
    for (const auto& d : runtime::list_vulkan_devices())
      if (d.usable) return true;
  } catch (const std::exception&) {
  }
  return false;
}

// Each (arguments, message): gptoss-bench refuses the arguments with exit status 2 and the message.
void expect_refusals(const std::vector<std::pair<std::string, std::string>>& refusals) {
  for (const auto& [arguments, message] : refusals) {
    const auto r = run_command("(" + bench() + " " + arguments + " -q 2>&1 >/dev/null)");
    EXPECT_EQ(r.exit_code, 2) << arguments;
    EXPECT_NE(r.output.find(message), std::string::npos) << arguments << ": " << r.output;
  }
}

// The samples of every test, the counts asked for, the model's counts.
void expect_json_results(const nlohmann::json& results, const std::vector<std::string>& tests, size_t repetitions,
                         const std::string& engine) {
  ASSERT_TRUE(results.is_array());
  ASSERT_EQ(results.size(), tests.size()) << results.dump(1);
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& r = results[i];
    EXPECT_EQ(r["test"], tests[i]);
    EXPECT_EQ(r["samples_ns"].size(), repetitions) << tests[i];
    EXPECT_EQ(r["samples_ts"].size(), repetitions) << tests[i];
    EXPECT_EQ(r["repetitions"], repetitions);
    double sum = 0;
    for (const auto& ts : r["samples_ts"]) {
      EXPECT_GT(ts.get<double>(), 0.0);
      sum += ts.get<double>();
    }
    EXPECT_NEAR(r["avg_ts"].get<double>(), sum / static_cast<double>(repetitions), 1e-9 * sum);
    EXPECT_EQ(r["model_filename"], "synth:a");
    EXPECT_EQ(r["model_format"], "synthesized");
    EXPECT_EQ(r["model_n_params"], 26736544u);
    EXPECT_EQ(r["model_size"], 52895552u);
    EXPECT_EQ(r["engine"], engine);
    EXPECT_EQ(r["backends"], engine == "vulkan" ? "Vulkan" : "CPU");
  }
}

TEST(GptossBenchCli, CpuJsonHasEveryTestAndRepetition) {
  const auto r = run_stdout("synth:a --engine cpu -p 8 -n 3 -d 0,5 -r 2 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto results = nlohmann::json::parse(r.output);
  expect_json_results(results, {"pp8", "tg3", "pp8 @ d5", "tg3 @ d5"}, 2, "cpu");
  EXPECT_EQ(results[0]["n_prompt"], 8);
  EXPECT_EQ(results[1]["n_gen"], 3);
  EXPECT_EQ(results[3]["n_depth"], 5);
  EXPECT_EQ(results[0]["device"], "CPU (f32)");
  EXPECT_EQ(results[1]["decode_output"], "logits");
  EXPECT_EQ(results[0]["device_memory_bytes"], 0);
}

TEST(GptossBenchCli, CsvHasAHeaderAndOneRowPerTest) {
  const auto r = run_stdout("synth:a --engine cpu-f64 -p 4 -n 2 -r 3 -o csv");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = lines(r.output);
  ASSERT_EQ(rows.size(), 3u) << r.output;
  EXPECT_TRUE(rows[0].starts_with("\"model_filename\",\"model_type\",")) << rows[0];
  const auto fields = [](const std::string& row) { return std::count(row.begin(), row.end(), ',') + 1; };
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(fields(rows[i]), fields(rows[0])) << rows[i];  // no comma inside these values
    EXPECT_NE(rows[i].find("\"CPU (f64)\""), std::string::npos) << rows[i];
    EXPECT_NE(rows[i].find(i == 1 ? "\"pp4\"" : "\"tg2\""), std::string::npos) << rows[i];
    EXPECT_NE(rows[i].find(",\"3\","), std::string::npos) << rows[i];  // repetitions
  }
}

TEST(GptossBenchCli, MarkdownTableAndSavedFilesInEveryFormat) {
  TempDir dir;
  const auto r = run_stdout("-m synth:a --engine cpu -p 4,6 -n 0 -r 2 --greedy -n 2 --save " + (dir / "r.json").string() +
                            " --save " + (dir / "r.csv").string() + " --save " + (dir / "r.md").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto table = lines(r.output);
  ASSERT_EQ(table.size(), 5u) << r.output;  // header, rule, pp4, pp6, tg2
  EXPECT_TRUE(table[0].starts_with("| model ")) << table[0];
  EXPECT_TRUE(table[1].starts_with("| ---")) << table[1];
  const std::vector<std::string> tests = {" pp4 |", " pp6 |", " tg2 |"};
  for (size_t i = 0; i < tests.size(); ++i) {
    EXPECT_NE(table[2 + i].find(tests[i]), std::string::npos) << table[2 + i];
    EXPECT_NE(table[2 + i].find(" ± "), std::string::npos) << table[2 + i];
    EXPECT_NE(table[2 + i].find("| gpt-oss 27M BF16 + MXFP4 "), std::string::npos) << table[2 + i];
  }
  EXPECT_EQ(read_text(dir / "r.md"), r.output);
  const auto saved = nlohmann::json::parse(read_text(dir / "r.json"));
  expect_json_results(saved, {"pp4", "pp6", "tg2"}, 2, "cpu");
  EXPECT_EQ(saved[2]["decode_output"], "argmax");
  EXPECT_EQ(lines(read_text(dir / "r.csv")).size(), 4u);
}

// A run stopped from outside keeps what it finished: the --save file holds a whole document from
// the first result on, while later tests still run (a depth of 100000 on the CPU engine takes
// minutes; the run is killed as soon as the file is there).
TEST(GptossBenchCli, ASavedFileHoldsEachResultAsItFinishes) {
  TempDir dir;
  const std::string file = (dir / "r.json").string();
  const auto r = run_command("(" + bench() + " synth:a --engine cpu -p 4 -n 0 -d 0,100000 -r 1 -q -o json --save " + file +
                             " >/dev/null 2>&1 & pid=$!; for i in $(seq 1200); do [ -s " + file +
                             " ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done; "
                             "if kill -0 $pid 2>/dev/null; then echo running; kill -9 $pid; fi; wait $pid 2>/dev/null; cat " +
                             file + ")");
  ASSERT_TRUE(r.output.starts_with("running\n")) << "the file did not appear while the run went on: " << r.output;
  const auto saved = nlohmann::json::parse(r.output.substr(std::string("running\n").size()));
  expect_json_results(saved, {"pp4"}, 1, "cpu");
  EXPECT_EQ(saved[0]["n_depth"], 0);
}

TEST(GptossBenchCli, VulkanOnTheDevice) {
  if (!vulkan_usable()) GTEST_SKIP() << "no usable Vulkan device: install Mesa's lavapipe (mesa-vulkan-drivers)";
  const auto r = run_stdout("synth:a -p 5 -n 2 -d 0,3 -r 1 -o json");  // vulkan is the default engine
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto results = nlohmann::json::parse(r.output);
  expect_json_results(results, {"pp5", "tg2", "pp5 @ d3", "tg2 @ d3"}, 1, "vulkan");
  for (const auto& result : results) {
    EXPECT_GT(result["device_memory_bytes"].get<uint64_t>(), 52895552u);  // the weights and more
    EXPECT_FALSE(result["device"].get<std::string>().empty());
  }
}

// Models x KV cache types x variants in one process, each result naming its kv, variant and tuning.
TEST(GptossBenchCli, EveryCombinationOfCachesAndVariantsIsOneNamedResult) {
  if (!vulkan_usable()) GTEST_SKIP() << "no usable Vulkan device: install Mesa's lavapipe (mesa-vulkan-drivers)";
  const auto r = run_stdout("synth:a -p 4 -n 0 -r 1 -o json --kv-cache f32,f16 --no-coopmat --variant base: "
                            "--variant ranges:attention_splits=4,int_dot=off");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto results = nlohmann::json::parse(r.output);
  ASSERT_EQ(results.size(), 4u) << r.output;
  const std::pair<const char*, const char*> expected[] = {{"f32", "base"}, {"f32", "ranges"}, {"f16", "base"}, {"f16", "ranges"}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i]["type_k"], expected[i].first);
    EXPECT_EQ(results[i]["variant"], expected[i].second);
    // The options' tuning under every variant, the variant's keys on top.
    EXPECT_EQ(results[i]["tuning"], i % 2 == 0 ? "coopmat=off" : "coopmat=off,int_dot=off,attention_splits=4");
  }
  expect_refusals({{"synth:a --variant nameless -p 4 -n 0 -r 1", "--variant nameless: expected NAME:KEYS"},
                   {"synth:a --variant a:x=1 -p 4 -n 0 -r 1", "unknown key x"},
                   {"synth:a --variant a: --variant a: -p 4 -n 0 -r 1", "--variant a is given twice"},
                   {"synth:a --engine cpu --variant a:", "--variant sets how the Vulkan engine computes"}});
}

TEST(GptossBenchCli, AFailingEngineIsAClearErrorAndTheDocumentStillParses) {
  // No Vulkan driver at all: the engine cannot be made.
  const auto no_driver = run_command("(VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json " + bench() +
                                     " synth:a -p 4 -n 0 -r 1 -o json 2>&1 >/dev/null)");
  EXPECT_EQ(no_driver.exit_code, 2);
  EXPECT_NE(no_driver.output.find("gptoss-bench: the vulkan engine cannot run synth:a: "), std::string::npos)
      << no_driver.output;
  const auto document = run_stdout("synth:a --engine cpu -p 4 -n 0 -r 1 -o json -m synth:7b");
  EXPECT_EQ(document.exit_code, 2);
  EXPECT_EQ(nlohmann::json::parse(document.output).size(), 1u) << document.output;  // synth:a's result, then the error
  expect_refusals({{"synth:7b", "unknown model spec \"synth:7b\""},
           {"synth:a --engine cpu --device 0", "--device picks a Vulkan device"},
           {"synth:a --engine cpu -d 131000", "the largest test needs 131512 positions"},
           {"synth:a --engine cpu -p 0 -n 0", "no test to run"},
           {"synth:a --engine cpu -r 0", "-r 0 runs no repetition"},
           {"synth:a --engine cpu -n 0 --greedy", "--greedy changes decode tests"},
           {"synth:a --engine cpu --save out.txt", "--save out.txt: the file name must end in .md, .json or .csv"},
           {"--engine cpu", "give a model"}});
}

}  // namespace
}  // namespace gptoss::test
