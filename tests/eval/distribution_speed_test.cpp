// Benchmark (disabled: timings are not pass/fail): the host cost of one scored position at the
// real vocabulary, single-threaded. docs/eval.md quotes it. Run by hand:
//   build/tests/eval/eval_tests --gtest_also_run_disabled_tests --gtest_filter='*Throughput*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "runtime/eval/distribution_math.h"
#include "runtime/eval/reference_logits_file.h"

namespace gptoss::eval {
namespace {

TEST(DistributionSpeed, DISABLED_Throughput) {
  const size_t vocab = 201088;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> x(vocab), y(vocab);
  for (size_t i = 0; i < vocab; ++i) {
    x[i] = normal(rng);
    y[i] = x[i] + 0.01f * normal(rng);
  }
  auto per_call_ms = [](int n, auto&& fn) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) fn();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / n;
  };
  double sink = 0;
  const double compare = per_call_ms(200, [&] { sink += compare_position(x, y).kl; });
  const double summarize = per_call_ms(200, [&] { sink += summarize_row(x).log_norm; });
  const double encode = per_call_ms(50, [&] { sink += encode_reference_record(x, summarize_row(x), 7)[5]; });
  std::printf("vocabulary %zu, one thread: compare_position %.3f ms, summarize_row %.3f ms, "
              "encode_reference_record %.3f ms (%g)\n",
              vocab, compare, summarize, encode, sink);
}

}  // namespace
}  // namespace gptoss::eval
