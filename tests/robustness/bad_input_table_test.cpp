// The bad-input corpus of docs/robustness.md on a reduced sample (every 7th byte): every case
// ends in a FormatError or a valid parse, never another exception or a crash.
#include <gtest/gtest.h>

#include <set>

#include "tests/test_support.h"
#include "tools/gptoss-badinputs/badinputs.h"

namespace gptoss::test {
namespace {

TEST(BadInputTable, ReducedCorpusHasOnlyFormatErrorsAndValidParses) {
  BadInputOptions options;
  options.stride = 7;
  const auto tallies = run_bad_inputs(options);
  std::set<std::string> formats;
  uint64_t cases = 0;
  for (const auto& t : tallies) {
    formats.insert(t.format);
    cases += t.cases;
    EXPECT_EQ(t.crashes, 0u) << t.format << " / " << t.input_class << ": "
                             << (t.unexpected_messages.empty() ? "" : t.unexpected_messages.back());
    EXPECT_EQ(t.rejected + t.accepted + t.unexpected, t.cases);
    EXPECT_GT(t.cases, 0u) << t.format << " / " << t.input_class;
    EXPECT_EQ(t.unexpected, 0u) << t.format << " / " << t.input_class << ": "
                                << (t.unexpected_messages.empty() ? "" : t.unexpected_messages.front());
  }
  EXPECT_EQ(formats.size(), 9u);
  EXPECT_TRUE(formats.count("harmony output (token ids)"));
  EXPECT_GT(cases, 1000u);
  const std::string table = bad_input_table(tallies);
  EXPECT_NE(table.find("| **total** |"), std::string::npos);
  EXPECT_NE(table.find("| format | worst peak memory growth (KB) | in |"), std::string::npos);
}

TEST(BadInputTable, UnknownFormatIsRefused) {
  TempDir dir;
  EXPECT_THROW(read_as("no such format", {}, dir.path()), std::invalid_argument);
}

}  // namespace
}  // namespace gptoss::test
