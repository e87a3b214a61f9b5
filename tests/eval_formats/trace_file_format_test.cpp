// The trace file on its own: a trace round-trips bit for bit with its header, comparing a trace
// with itself finds nothing, different prompts are refused, and damaged files are FormatErrors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "formats/core/error.h"
#include "formats/core/zstd_frames.h"
#include "runtime/parity/trace_file.h"
#include "tests/test_support.h"

namespace gptoss::parity {
namespace {

Trace fabricated() {
  Trace t;
  t.label = "cpu: model";
  uint32_t s = 7;
  auto stage = [&](std::string name, size_t rows, size_t cols, uint64_t first_row) {
    Stage st{std::move(name), rows, cols, first_row, {}};
    for (size_t i = 0; i < rows * cols; ++i) {
      s = s * 1664525u + 1013904223u;
      st.values.push_back(static_cast<float>(static_cast<int32_t>(s)) * 1e-7f);
    }
    st.values[0] = -0.0f;  // signs and specials survive
    st.values[1] = INFINITY;
    t.stages.push_back(std::move(st));
  };
  stage("embedding", 3, 8, 0);
  stage("layer 0", 3, 8, 0);
  stage("final norm", 3, 8, 0);
  stage("logits", 1, 40, 2);
  return t;
}

TEST(TraceFileFormat, RoundTripsBitForBit) {
  test::TempDir dir;
  const auto trace = fabricated();
  const TraceHeader header{"digest", "model", "cpu", "CPU (f32)", {5, 6, 7}};
  write_trace_file(dir / "t.trace", header, trace);
  const auto read = read_trace_file(dir / "t.trace");
  EXPECT_EQ(read.header.model_digest, "digest");
  EXPECT_EQ(read.header.model_source, "model");
  EXPECT_EQ(read.header.engine, "cpu");
  EXPECT_EQ(read.header.device, "CPU (f32)");
  EXPECT_EQ(read.header.prompt_tokens, (std::vector<uint32_t>{5, 6, 7}));
  EXPECT_EQ(read.trace.label, "cpu: model");
  ASSERT_EQ(read.trace.stages.size(), trace.stages.size());
  for (size_t i = 0; i < trace.stages.size(); ++i) {
    const auto& a = trace.stages[i];
    const auto& b = read.trace.stages[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(a.cols, b.cols);
    EXPECT_EQ(a.first_row, b.first_row);
    ASSERT_EQ(a.values.size(), b.values.size());
    EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), a.values.size() * 4), 0) << a.name;
  }
  const auto same = compare_traces(read, read, 0);
  EXPECT_FALSE(same.first_parting);
  auto other = read;
  other.header.prompt_tokens.pop_back();
  EXPECT_THROW(compare_traces(read, other, 1e-3), std::invalid_argument);
}

TEST(TraceFileFormat, ComparisonNamesTheFirstStageBeyondTheTolerance) {
  TraceFile a{{"d", "m", "cpu", "x", {1, 2, 3}}, fabricated()};
  a.trace.stages[1].values[1] = 1.0f;  // keep every value finite here
  a.trace.stages[0].values[1] = 1.0f;
  a.trace.stages[2].values[1] = 1.0f;
  a.trace.stages[3].values[1] = 1.0f;
  auto b = a;
  b.trace.stages[2].values[5] += 0.5f;  // "final norm"
  const auto c = compare_traces(a, b, 1e-3);
  ASSERT_TRUE(c.first_parting);
  EXPECT_EQ(c.stages[*c.first_parting].stage, "final norm");
  EXPECT_EQ(c.stages[1].max_abs_diff, 0.0);
  EXPECT_EQ(c.stages[2].worst_row, 0u);
  EXPECT_EQ(c.stages[2].worst_col, 5u);
  EXPECT_NEAR(c.stages[2].relative, 0.5 / c.stages[2].largest, 1e-6);
}

// The comparison as JSON (gptoss-eval --compare-traces --json): both traces named, every stage's
// difference with its position, the first stage that parts (null when none).
TEST(TraceFileFormat, ComparisonJsonNamesBothTracesAndEveryStage) {
  TraceFile a{{"digest-a", "m", "cpu", "CPU (f32)", {1, 2, 3}}, fabricated()};
  for (auto& stage : a.trace.stages) stage.values[1] = 1.0f;
  auto b = a;
  b.header = {"digest-b", "m", "vulkan", "a GPU", {1, 2, 3}};
  b.trace.label = "vulkan: model";
  b.trace.stages[2].values[5] += 0.5f;
  const auto c = compare_traces(a, b, 1e-3);
  const auto j = trace_comparison_json(a, b, c);
  EXPECT_EQ(j["a"], nlohmann::ordered_json::parse(
                        R"j({"label": "cpu: model", "engine": "cpu", "device": "CPU (f32)", "model_digest": "digest-a"})j"));
  EXPECT_EQ(j["b"], nlohmann::ordered_json::parse(
                        R"j({"label": "vulkan: model", "engine": "vulkan", "device": "a GPU", "model_digest": "digest-b"})j"));
  EXPECT_EQ(j["tolerance"], 1e-3);
  ASSERT_EQ(j["stages"].size(), 4u);
  const auto& parted = j["stages"][2];
  EXPECT_EQ(parted["stage"], "final norm");
  EXPECT_EQ(parted["in_both"], true);
  EXPECT_EQ(parted["rows"], 3);
  EXPECT_EQ(parted["cols"], 8);
  EXPECT_EQ(parted["largest"], c.stages[2].largest);
  EXPECT_EQ(parted["max_abs_diff"], c.stages[2].max_abs_diff);
  EXPECT_EQ(parted["relative"], c.stages[2].relative);
  EXPECT_EQ(parted["worst_position"], 0);
  EXPECT_EQ(parted["worst_column"], 5);
  EXPECT_EQ(parted["parts"], true);
  EXPECT_EQ(j["stages"][1]["parts"], false);
  EXPECT_EQ(j["first_parting"], "final norm");
  EXPECT_TRUE(trace_comparison_json(a, a, compare_traces(a, a, 1e-3))["first_parting"].is_null());
}

TEST(TraceFileFormat, RefusesDamagedFiles) {
  test::TempDir dir;
  write_trace_file(dir / "t.trace", {"d", "m", "cpu", "x", {1}}, fabricated());
  auto bytes = test::read_file_bytes(dir / "t.trace");
  auto expect_error = [&](const std::vector<uint8_t>& content, const std::string& field) {
    test::write_file_bytes(dir / "bad.trace", content);
    try {
      read_trace_file(dir / "bad.trace");
      FAIL() << "accepted a damaged trace (" << field << ")";
    } catch (const FormatError& e) {
      EXPECT_NE(e.field().find(field), std::string::npos) << e.what();
    }
  };
  expect_error(std::vector<uint8_t>(bytes.begin(), bytes.end() - 10), "logits");  // cut in the last stage
  auto extra = bytes;
  extra.push_back(0);
  expect_error(extra, "after the last stage");
  expect_error({1, 2, 3, 4, 5, 6, 7, 8}, "header");
}

// A header field of the wrong type is a FormatError naming the file and the field's path, in
// JsonValue's words, not nlohmann's type_error text under "header".
TEST(TraceFileFormat, WrongTypeInTheHeaderNamesTheFieldPath) {
  test::TempDir dir;
  const auto path = dir / "typed.trace";
  auto header_only = [&](const std::string& json) {
    const std::string text = "gptoss trace\n" + json + "\n";
    test::write_file_bytes(path, zstd_compress_frame({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, 1));
  };
  auto message = [&]() -> std::string {
    try {
      read_trace_file(path);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string good_start =
      R"({"format": "gptoss trace", "version": 1, "model": {"digest": "d", "source": "m"}, "engine": "cpu",)"
      R"( "device": "x", "label": "l",)";
  header_only(good_start + R"( "prompt_tokens": [1, 2], "stages": [{"name": "a", "rows": 1, "cols": 1, "first_row": 0},)"
                           R"( {"name": "b", "rows": "x", "cols": 1, "first_row": 0}]})");
  EXPECT_EQ(message(), path.string() +
                           ": header.stages[1].rows at byte 0: expected a non-negative integer below 2^64, found the "
                           "string \"x\"");
  header_only(R"({"version": 1, "model": {"digest": 5}})");
  EXPECT_EQ(message(), path.string() + ": header.model.digest at byte 0: expected a string, found the number 5");
  header_only(good_start + R"( "prompt_tokens": [1, -2], "stages": []})");
  EXPECT_EQ(message(), path.string() +
                           ": header.prompt_tokens[1] at byte 0: expected a non-negative integer below 2^32, found the "
                           "number -2");
  header_only(R"({"version": 1, "model": {"digest": "d", "source": "m"}})");
  EXPECT_EQ(message(), path.string() + ": header.engine at byte 0: required field is missing");
  header_only(R"({"version": 2})");
  EXPECT_EQ(message(), path.string() + ": header.version at byte 0: version 2; this build reads 1");
}

}  // namespace
}  // namespace gptoss::parity
