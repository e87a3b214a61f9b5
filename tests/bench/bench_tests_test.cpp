// gptoss-bench's test plan, benchmark tokens and timing loop, on an engine that records its calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "convert/synthesize.h"
#include "tools/gptoss-bench/bench_tests.h"

namespace gptoss::bench {
namespace {

std::vector<std::string> names(const std::vector<BenchTest>& tests) {
  std::vector<std::string> all;
  for (const auto& t : tests) all.push_back(t.name());
  return all;
}

TEST(BenchPlan, LlamaBenchOrderAndNames) {
  const auto tests = plan_tests({512, 1024}, {128}, {0, 4096});
  EXPECT_EQ(names(tests), (std::vector<std::string>{"pp512", "pp1024", "tg128", "pp512 @ d4096", "pp1024 @ d4096",
                                                    "tg128 @ d4096"}));
  EXPECT_EQ(positions_needed(tests), 4096u + 1024u);
  EXPECT_EQ(tests[2].n_gen(), 128u);
  EXPECT_EQ(tests[2].n_prompt(), 0u);
  EXPECT_EQ(tests[4].n_prompt(), 1024u);
  EXPECT_EQ(tests[4].depth, 4096u);
}

TEST(BenchPlan, ZeroSkipsAKind) {
  EXPECT_EQ(names(plan_tests({0}, {128}, {4096})), (std::vector<std::string>{"tg128 @ d4096"}));
  EXPECT_EQ(names(plan_tests({512}, {0}, {0})), (std::vector<std::string>{"pp512"}));
  EXPECT_TRUE(plan_tests({0}, {0}, {0, 8}).empty());
}

TEST(BenchTokens, FixedSeedOverTheVocabularyAndOneSequence) {
  const auto ids = bench_tokens(0, 10000, 201088);
  ASSERT_EQ(ids.size(), 10000u);
  for (uint32_t id : ids) ASSERT_LT(id, 201088u);
  EXPECT_GT(std::set<uint32_t>(ids.begin(), ids.end()).size(), 9700u);  // ~9755 distinct expected
  // The test's tokens continue the depth's: one context, whatever the split.
  const auto tail = bench_tokens(4000, 6000, 201088);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), ids.begin() + 4000));
  // Pinned (splitmix64 recomputed in Python): the same tokens in every version, so results stay
  // comparable across versions.
  EXPECT_EQ(std::vector<uint32_t>(ids.begin(), ids.begin() + 4), (std::vector<uint32_t>{155349, 196325, 194873, 9324}));
  EXPECT_THROW(bench_tokens(0, 1, 0), std::invalid_argument);
}

// Records every call the timing loop makes.
class RecordingEngine final : public runtime::Engine {
 public:
  explicit RecordingEngine(uint64_t capacity) : config_(synth_config(synth_preset("a"))), capacity_(capacity) {}
  runtime::EngineKind kind() const override { return runtime::EngineKind::Cpu; }
  std::string device_description() const override { return "recording"; }
  const GptOssConfig& config() const override { return config_; }
  uint64_t position() const override { return position_; }
  uint64_t capacity() const override { return capacity_; }
  void reset() override {
    position_ = 0;
    calls.push_back("reset");
  }
  std::vector<std::string> calls;
  std::vector<uint32_t> fed;  // every token, in order
  bool fail = false;

 protected:
  void run_forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                   const runtime::ActivationObserver&) override {
    record(tokens, rows == runtime::LogitRows::None ? "none" : rows == runtime::LogitRows::Last ? "last" : "all");
    std::fill(logits.begin(), logits.end(), 0.0f);
  }
  uint32_t run_forward_greedy(std::span<const uint32_t> tokens) override {
    record(tokens, "greedy");
    return 0;
  }

 private:
  void record(std::span<const uint32_t> tokens, const std::string& how) {
    if (fail) throw std::runtime_error("device lost");
    calls.push_back(std::to_string(tokens.size()) + " " + how);
    fed.insert(fed.end(), tokens.begin(), tokens.end());
    position_ += tokens.size();
  }
  GptOssConfig config_;
  uint64_t capacity_, position_ = 0;
};

TEST(BenchRun, PrefillAtDepthIsOneForwardAfterAnUntimedDepthPrefill) {
  RecordingEngine engine(64);
  RunOptions options;
  options.repetitions = 3;
  options.warmup_seconds = 0;  // one warm-up run
  std::vector<std::string> progress;
  const auto samples = run_test(engine, {TestKind::Prefill, 16, 5}, options,
                                [&](const std::string& what, double, double) { progress.push_back(what); });
  EXPECT_EQ(samples.size(), 3u);
  std::vector<std::string> one_run = {"reset", "5 none", "16 last"};
  std::vector<std::string> expected;
  for (int run = 0; run < 4; ++run) expected.insert(expected.end(), one_run.begin(), one_run.end());  // warm-up + 3
  EXPECT_EQ(engine.calls, expected);
  EXPECT_EQ(progress, (std::vector<std::string>{"warm-up", "run 1/3", "run 2/3", "run 3/3"}));
  const auto context = bench_tokens(0, 21, engine.vocab_size());
  EXPECT_TRUE(std::equal(context.begin(), context.end(), engine.fed.begin()));
}

// The warm-up repeats the test until warmup_seconds have passed, and stops at kMaxWarmupRuns
// however fast the test is (this engine takes microseconds, far below a day); it is reported once.
TEST(BenchRun, WarmupRepeatsUntilItsTimeAndStopsAtItsMostRuns) {
  RecordingEngine engine(64);
  RunOptions options;
  options.repetitions = 2;
  options.warmup_seconds = 86400;
  std::vector<std::string> progress;
  const auto samples = run_test(engine, {TestKind::Prefill, 4, 0}, options,
                                [&](const std::string& what, double, double) { progress.push_back(what); });
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_EQ(std::count(engine.calls.begin(), engine.calls.end(), "reset"), kMaxWarmupRuns + 2);
  EXPECT_EQ(progress, (std::vector<std::string>{"warm-up", "run 1/2", "run 2/2"}));
}

TEST(BenchRun, DecodeIsOneForwardPerTokenWithLogitsOrArgmax) {
  for (const auto output : {DecodeOutput::Logits, DecodeOutput::Argmax}) {
    RecordingEngine engine(8);
    RunOptions options;
    options.repetitions = 2;
    options.warmup = false;
    options.decode_output = output;
    const auto samples = run_test(engine, {TestKind::Decode, 3, 0}, options);
    EXPECT_EQ(samples.size(), 2u);
    const std::string step = output == DecodeOutput::Logits ? "1 last" : "1 greedy";
    EXPECT_EQ(engine.calls, (std::vector<std::string>{"reset", step, step, step, "reset", step, step, step}));
  }
  EXPECT_STREQ(decode_output_name(DecodeOutput::Argmax), "argmax");
}

TEST(BenchRun, ContextBeyondTheCacheOrAFailingEngineIsAnError) {
  RecordingEngine small(20);
  EXPECT_THROW(run_test(small, {TestKind::Prefill, 16, 5}, {}), std::out_of_range);
  EXPECT_TRUE(small.calls.empty());  // refused before anything ran
  RecordingEngine failing(64);
  failing.fail = true;
  EXPECT_THROW(run_test(failing, {TestKind::Decode, 2, 0}, {}), std::runtime_error);
}

}  // namespace
}  // namespace gptoss::bench
