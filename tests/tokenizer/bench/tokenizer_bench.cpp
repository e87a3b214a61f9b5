// tokenizer_bench: the speed of the real o200k_harmony tokenizer (scripts/setup.sh caches it) on
// 1 MiB of mixed text (tests/tokenizer/tokenizer_fixture.h: many scripts, digits, punctuation,
// whitespace runs, emoji, scattered code points). A measuring tool, not a test: ctest does not
// run it, and the numbers decide nothing. Each benchmark first checks that decoding gives the
// text back and stops with an error when it does not.
//   build/tests/tokenizer/bench/tokenizer_bench [--benchmark_repetitions=5 ...]
// Encode/cold builds a new Tokenizer for each pass (outside the timed region), so its piece
// cache starts empty; Encode/warm and Decode reuse one.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/tokenizer/tokenizer_fixture.h"

namespace {

const std::string& text() {
  static const std::string text = gptoss::test::mixed_text(1 << 20, 11);
  return text;
}

// The cached tokenizer, or null after marking `state` as skipped.
const gptoss::Tokenizer* tokenizer_or_skip(benchmark::State& state) {
  const gptoss::Tokenizer* tokenizer = gptoss::test::real_tokenizer();
  if (!tokenizer) state.SkipWithError("tokenizer.json is not cached: run scripts/setup.sh");
  return tokenizer;
}

bool round_trips(benchmark::State& state, const gptoss::Tokenizer& tokenizer) {
  if (tokenizer.decode(tokenizer.encode(text())) == text()) return true;
  state.SkipWithError("decode(encode(text)) is not the text");
  return false;
}

void report(benchmark::State& state, size_t tokens) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void EncodeCold(benchmark::State& state) {
  const gptoss::Tokenizer* shared = tokenizer_or_skip(state);
  if (!shared || !round_trips(state, *shared)) return;
  size_t tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = std::make_unique<gptoss::Tokenizer>(*gptoss::test::real_tokenizer_data());
    state.ResumeTiming();
    tokens = fresh->encode(text()).size();
    state.PauseTiming();
    fresh.reset();
    state.ResumeTiming();
  }
  report(state, tokens);
}

void EncodeWarm(benchmark::State& state) {
  const gptoss::Tokenizer* tokenizer = tokenizer_or_skip(state);
  if (!tokenizer || !round_trips(state, *tokenizer)) return;
  size_t tokens = 0;
  for (auto _ : state) tokens = tokenizer->encode(text()).size();
  report(state, tokens);
}

void Decode(benchmark::State& state) {
  const gptoss::Tokenizer* tokenizer = tokenizer_or_skip(state);
  if (!tokenizer || !round_trips(state, *tokenizer)) return;
  const std::vector<uint32_t> ids = tokenizer->encode(text());
  for (auto _ : state) benchmark::DoNotOptimize(tokenizer->decode(ids));
  report(state, ids.size());
}

BENCHMARK(EncodeCold)->Name("Encode/cold")->Unit(benchmark::kMillisecond);
BENCHMARK(EncodeWarm)->Name("Encode/warm")->Unit(benchmark::kMillisecond);
BENCHMARK(Decode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
