// distribution_bench: the host cost of one scored position at the real vocabulary (201088),
// single-threaded: comparing a candidate's row with the reference's, summarizing a row, and
// encoding the reference logits file's record. A measuring tool, not a test: ctest does not run
// it, and the numbers decide nothing (docs/eval.md quotes them).
//   build/tests/eval/bench/distribution_bench [--benchmark_repetitions=5 ...]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/eval/distribution_math.h"
#include "runtime/eval/reference_logits_file.h"

namespace {

constexpr size_t kVocab = 201088;

// A reference row x (normal, sigma 3) and a candidate y a little off it, the same on every run.
struct Rows {
  std::vector<float> x, y;
};
const Rows& rows() {
  static const Rows r = [] {
    Rows out{std::vector<float>(kVocab), std::vector<float>(kVocab)};
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0, 3);
    for (size_t i = 0; i < kVocab; ++i) {
      out.x[i] = normal(rng);
      out.y[i] = out.x[i] + 0.01f * normal(rng);
    }
    return out;
  }();
  return r;
}

void ComparePosition(benchmark::State& state) {
  const Rows& r = rows();
  for (auto _ : state) {
    double kl = gptoss::eval::compare_position(r.x, r.y).kl;
    benchmark::DoNotOptimize(kl);
  }
}

void SummarizeRow(benchmark::State& state) {
  const Rows& r = rows();
  for (auto _ : state) {
    double log_norm = gptoss::eval::summarize_row(r.x).log_norm;
    benchmark::DoNotOptimize(log_norm);
  }
}

void EncodeReferenceRecord(benchmark::State& state) {
  const Rows& r = rows();
  for (auto _ : state) {
    std::vector<uint8_t> record = gptoss::eval::encode_reference_record(r.x, gptoss::eval::summarize_row(r.x), 7);
    benchmark::DoNotOptimize(record.data());
  }
}

BENCHMARK(ComparePosition)->Unit(benchmark::kMillisecond);
BENCHMARK(SummarizeRow)->Unit(benchmark::kMillisecond);
BENCHMARK(EncodeReferenceRecord)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
