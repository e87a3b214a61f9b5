#include "tools/gptoss-bench/bench_tests.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace gptoss::bench {

std::string BenchTest::name() const {
  std::string name = (kind == TestKind::Prefill ? "pp" : "tg") + std::to_string(tokens);
  if (depth > 0) name += " @ d" + std::to_string(depth);
  return name;
}

std::vector<BenchTest> plan_tests(const std::vector<uint64_t>& prompt_sizes, const std::vector<uint64_t>& gen_sizes,
                                  const std::vector<uint64_t>& depths) {
  std::vector<BenchTest> tests;
  for (uint64_t depth : depths) {
    for (uint64_t p : prompt_sizes)
      if (p > 0) tests.push_back({TestKind::Prefill, p, depth});
    for (uint64_t n : gen_sizes)
      if (n > 0) tests.push_back({TestKind::Decode, n, depth});
  }
  return tests;
}

uint64_t positions_needed(const std::vector<BenchTest>& tests) {
  uint64_t most = 0;
  for (const auto& t : tests) most = std::max(most, t.context());
  return most;
}

std::vector<uint32_t> bench_tokens(uint64_t first, uint64_t count, uint32_t vocab_size) {
  if (vocab_size == 0) throw std::invalid_argument("the model has an empty vocabulary");
  std::vector<uint32_t> ids(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t z = (first + i) * 0x9E3779B97F4A7C15ull + 0x6770746F73732D62ull;  // splitmix64, seed "gptoss-b"
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    ids[i] = static_cast<uint32_t>((z ^ (z >> 31)) % vocab_size);
  }
  return ids;
}

const char* decode_output_name(DecodeOutput output) { return output == DecodeOutput::Logits ? "logits" : "argmax"; }

namespace {
// One run: the untimed depth prefill, then the timed test. Returns nanoseconds.
uint64_t timed_run(runtime::Engine& engine, const BenchTest& test, DecodeOutput decode_output,
                   std::span<const uint32_t> depth_tokens, std::span<const uint32_t> test_tokens) {
  engine.reset();
  if (!depth_tokens.empty()) engine.forward(depth_tokens, runtime::LogitRows::None);
  // The prefill's logits into one vector; a decode step's stay where the engine put them
  // (Engine::forward_last: the mapped readback of a device engine, as llama-bench's decode leaves
  // them in llama.cpp's output buffer), every step's on the host before the next step starts.
  std::vector<float> logits(engine.vocab_size());
  const auto start = std::chrono::steady_clock::now();
  if (test.kind == TestKind::Prefill) {
    engine.forward(test_tokens, runtime::LogitRows::Last, logits);
  } else {
    for (size_t i = 0; i < test_tokens.size(); ++i) {
      const auto token = test_tokens.subspan(i, 1);
      if (decode_output == DecodeOutput::Logits) engine.forward_last(token);
      else engine.forward_greedy(token);
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}
}  // namespace

std::vector<uint64_t> run_test(runtime::Engine& engine, const BenchTest& test, const RunOptions& options,
                               const ProgressFn& progress) {
  if (test.tokens == 0) throw std::invalid_argument("a test of 0 tokens measures nothing");
  if (test.context() > engine.capacity())
    throw std::out_of_range(test.name() + " needs " + std::to_string(test.context()) + " positions and the engine's KV cache holds " +
                            std::to_string(engine.capacity()));
  const auto depth_tokens = bench_tokens(0, test.depth, engine.vocab_size());
  const auto test_tokens = bench_tokens(test.depth, test.tokens, engine.vocab_size());
  auto report = [&](const std::string& what, uint64_t ns) {
    if (!progress) return;
    const double seconds = static_cast<double>(std::max<uint64_t>(ns, 1)) / 1e9;
    progress(what, seconds, static_cast<double>(test.tokens) / seconds);
  };
  if (options.warmup) {
    const auto begin = std::chrono::steady_clock::now();
    uint64_t last = 0;
    for (uint32_t n = 0; n < kMaxWarmupRuns; ++n) {
      last = timed_run(engine, test, options.decode_output, depth_tokens, test_tokens);
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() >= options.warmup_seconds) break;
    }
    report("warm-up", last);
  }
  std::vector<uint64_t> samples;
  for (uint32_t r = 0; r < options.repetitions; ++r) {
    samples.push_back(timed_run(engine, test, options.decode_output, depth_tokens, test_tokens));
    report("run " + std::to_string(r + 1) + "/" + std::to_string(options.repetitions), samples.back());
  }
  return samples;
}

}  // namespace gptoss::bench
