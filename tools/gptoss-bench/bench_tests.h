#pragma once
// What gptoss-bench measures, as llama.cpp's llama-bench does: a prefill test (pp) runs -p tokens
// in one forward pass, a decode test (tg) runs -n forward passes of one token each; both after
// -d tokens already in the KV cache (prefilled untimed). Each test is run once to warm up, then
// timed `repetitions` times, every run from an empty cache.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace gptoss::bench {

enum class TestKind { Prefill, Decode };

struct BenchTest {
  TestKind kind = TestKind::Prefill;
  uint64_t tokens = 0;  // -p (prefill) or -n (decode)
  uint64_t depth = 0;   // -d: tokens in the cache before the timed part

  // llama-bench's names: "pp512", "tg128", "pp512 @ d4096".
  std::string name() const;
  uint64_t n_prompt() const { return kind == TestKind::Prefill ? tokens : 0; }
  uint64_t n_gen() const { return kind == TestKind::Decode ? tokens : 0; }
  // Positions the KV cache holds at the end of a run.
  uint64_t context() const { return depth + tokens; }
};

// Every combination, in llama-bench's order: for each depth, the prefill tests, then the decode
// tests. A size of 0 (-p 0, -n 0) runs no test of that kind.
std::vector<BenchTest> plan_tests(const std::vector<uint64_t>& prompt_sizes, const std::vector<uint64_t>& gen_sizes,
                                  const std::vector<uint64_t>& depths);

// The KV positions an engine needs to run every test (the largest context).
uint64_t positions_needed(const std::vector<BenchTest>& tests);

// Tokens [first, first + count) of every benchmark context: ids from a fixed-seed generator over
// the whole vocabulary (llama-bench also feeds random ids), the same in every run and every tool
// version, so repetitions route the same experts.
std::vector<uint32_t> bench_tokens(uint64_t first, uint64_t count, uint32_t vocab_size);

// How a decode step returns its result: the last row of logits copied to the host (what
// llama-bench's llama_decode does), or the argmax alone (Engine::forward_greedy, which gptoss-run
// uses for greedy generation; a device engine then moves 4 bytes instead of the vocabulary).
enum class DecodeOutput { Logits, Argmax };
const char* decode_output_name(DecodeOutput output);

// The most warm-up runs of one test, however short it is.
constexpr uint32_t kMaxWarmupRuns = 64;

struct RunOptions {
  uint32_t repetitions = 5;
  bool warmup = true;
  // The warm-up runs the test again until this much time has passed (at least once, at most
  // kMaxWarmupRuns times). A GPU's clock falls while the host loads the model and needs a few
  // hundred milliseconds of work to come back: an H200's SM clock stood at 345 MHz after the load,
  // ran the first 200 ms of work at 585 MHz, then 1980 MHz. One warm-up pp512 (75 ms) did not cover
  // that, and the first timed run of a process was 28% slower than the rest.
  double warmup_seconds = 1.0;
  DecodeOutput decode_output = DecodeOutput::Logits;
};

// Progress of a test, for long runs: "warm-up" or "run 2/5", with that run's seconds.
using ProgressFn = std::function<void(const std::string& what, double seconds, double tokens_per_second)>;

// Runs `test` on `engine`: the warm-up (unless off; reported once) and `repetitions` timed runs. Each run
// empties the cache, prefills the depth (LogitRows::None, untimed), then times the test: one
// forward of the prompt (LogitRows::Last), or one forward per decoded token. Returns each timed
// run's nanoseconds.
std::vector<uint64_t> run_test(runtime::Engine& engine, const BenchTest& test, const RunOptions& options,
                               const ProgressFn& progress = {});

}  // namespace gptoss::bench
