// The checks runtime::Engine::forward makes once for every engine, run against each engine made by
// make_engine: bad token ids and contexts past the capacity are refused before anything runs (the
// cache keeps its position), an empty forward is a no-op, and rows/observer follow the contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "convert/model_io.h"
#include "runtime/engine.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

using runtime::EngineKind;

const CanonicalModel& preset_a_model() {
  static const CanonicalModel model = load_model(preset_a_checkpoint() / "hf");
  return model;
}

// The engine of `kind` with a KV cache of `capacity` positions, or null when it cannot run here
// (a machine without a Vulkan device).
// prefill_chunk: the Vulkan engine's tokens per submit (the CPU engines take none).
std::unique_ptr<runtime::Engine> engine_or_null(EngineKind kind, uint64_t capacity, std::string* why,
                                                std::optional<uint32_t> prefill_chunk = std::nullopt) {
  runtime::EngineOptions options;
  options.max_context = capacity;
  if (prefill_chunk && kind == EngineKind::Vulkan) options.prefill_chunk = *prefill_chunk;
  try {
    return runtime::make_engine(kind, preset_a_model(), options);
  } catch (const std::runtime_error& e) {
    if (kind != EngineKind::Vulkan) throw;
    *why = e.what();
    return nullptr;
  }
}

#define ENGINE_OR_SKIP(kind, capacity)                                                         \
  std::string skip_reason;                                                                     \
  const auto engine = engine_or_null(kind, capacity, &skip_reason);                            \
  if (!engine) GTEST_SKIP() << "no usable Vulkan device (" << skip_reason                      \
                            << "): install Mesa's lavapipe (mesa-vulkan-drivers) to run these";

class EngineInterface : public ::testing::TestWithParam<EngineKind> {};

TEST_P(EngineInterface, KindNameAndConfigComeFromTheModel) {
  ENGINE_OR_SKIP(GetParam(), 16);
  EXPECT_EQ(engine->kind(), GetParam());
  EXPECT_EQ(runtime::engine_kind_from_name(runtime::engine_kind_name(GetParam())), GetParam());
  EXPECT_EQ(engine->vocab_size(), 201088u);
  EXPECT_EQ(engine->config().num_layers, 4u);
  EXPECT_EQ(engine->position(), 0u);
  EXPECT_FALSE(engine->device_description().empty());
  if (GetParam() == EngineKind::Vulkan) {
    uint64_t stored = 0;  // every weight is resident in its stored encoding, plus caches and scratch
    for (const auto& t : preset_a_model().tensors) stored += t.source->size();
    EXPECT_GE(engine->device_memory_bytes(), stored);
  } else {
    EXPECT_EQ(engine->device_memory_bytes(), 0u);
  }
}

TEST_P(EngineInterface, TokenOutsideTheVocabularyIsRefusedBeforeAnythingRuns) {
  ENGINE_OR_SKIP(GetParam(), 16);
  const uint32_t good[] = {1, 2, 3};
  engine->forward(good, runtime::LogitRows::None);
  ASSERT_EQ(engine->position(), 3u);
  const uint32_t bad[] = {5, 201088, 7};
  try {
    engine->forward(bad);
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("token id 201088 (position 4) is outside the vocabulary of 201088"), std::string::npos)
        << message;
  }
  EXPECT_EQ(engine->position(), 3u) << "a refused forward must not move the cache";
  const uint32_t next[] = {4};
  EXPECT_EQ(engine->forward(next).size(), 201088u);
  EXPECT_EQ(engine->position(), 4u);
}

TEST_P(EngineInterface, ContextPastTheCapacityIsRefused) {
  // Every engine holds at most EngineOptions::max_context positions (clamped to the model's).
  ENGINE_OR_SKIP(GetParam(), 8);
  EXPECT_EQ(engine->capacity(), 8u);  // what EngineOptions::max_context asked for
  const std::vector<uint32_t> six(6, 9u), three(3, 9u);
  engine->forward(six, runtime::LogitRows::None);
  try {
    engine->forward(three);
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string expected = "context of 9 tokens exceeds the 8 positions of the " +
                                 std::string(runtime::engine_kind_name(GetParam())) + " engine's KV cache";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine->position(), 6u);
  EXPECT_EQ(engine->forward(std::span(three).first(2)).size(), 201088u);  // exactly full is fine
  EXPECT_EQ(engine->position(), 8u);
}

TEST_P(EngineInterface, EmptyForwardIsANoOp) {
  ENGINE_OR_SKIP(GetParam(), 8);
  bool observed = false;
  EXPECT_TRUE(engine->forward({}, runtime::LogitRows::All, [&](const runtime::ActivationView&) { observed = true; }).empty());
  EXPECT_FALSE(observed);
  EXPECT_EQ(engine->position(), 0u);
}

TEST_P(EngineInterface, RowsAndObserverFollowTheContract) {
  ENGINE_OR_SKIP(GetParam(), 16);
  const uint32_t ids[] = {10, 20, 30, 40};
  int stages = 0;
  std::vector<std::string> names;
  std::map<std::string, std::vector<float>> values;
  auto observer = [&](const runtime::ActivationView& v) {
    ++stages;
    names.push_back(runtime::stage_name(v.stage, v.layer));
    values[names.back()].assign(v.values.begin(), v.values.end());
    const size_t cols = v.stage == runtime::Stage::RouterChoices ? 4u : 64u;  // experts per token, or hidden
    EXPECT_EQ(v.rows, 4u);
    EXPECT_EQ(v.cols, cols);
    EXPECT_EQ(v.first_position, 0u);
    EXPECT_EQ(v.values.size(), 4u * cols);
    if (v.stage != runtime::Stage::RouterChoices) return;
    for (size_t t = 0; t < 4; ++t) {  // four distinct experts of preset a's 8 per token
      std::vector<float> chosen(v.values.begin() + 4 * t, v.values.begin() + 4 * t + 4);
      std::sort(chosen.begin(), chosen.end());
      EXPECT_TRUE(std::adjacent_find(chosen.begin(), chosen.end()) == chosen.end());
      EXPECT_GE(chosen.front(), 0.0f);
      EXPECT_LE(chosen.back(), 7.0f);
      EXPECT_EQ(chosen.back(), std::floor(chosen.back()));
    }
  };
  const auto all = engine->forward(ids, runtime::LogitRows::All, observer);
  EXPECT_EQ(stages, 1 + 3 * 4 + 1);  // embedding, 4 layers each with its attention and routing, final norm
  EXPECT_EQ(names, (std::vector<std::string>{"embedding", "attention 0", "router 0", "layer 0", "attention 1", "router 1",
                                             "layer 1", "attention 2", "router 2", "layer 2", "attention 3", "router 3",
                                             "layer 3", "final norm"}));
  // The residual stream between a layer's two halves: attention added to the layer's input, the
  // experts not yet.
  for (int l = 0; l < 4; ++l) {
    const auto& before = values[l == 0 ? "embedding" : "layer " + std::to_string(l - 1)];
    const auto& mid = values["attention " + std::to_string(l)];
    EXPECT_NE(mid, before) << l;
    EXPECT_NE(mid, values["layer " + std::to_string(l)]) << l;
    EXPECT_TRUE(std::all_of(mid.begin(), mid.end(), [](float f) { return std::isfinite(f); })) << l;
  }
  ASSERT_EQ(all.size(), 4u * 201088u);
  engine->reset();
  EXPECT_EQ(engine->position(), 0u);
  const auto last = engine->forward(ids, runtime::LogitRows::Last);
  ASSERT_EQ(last.size(), 201088u);
  // The last row of All is the Last row (same engine, same tokens).
  double worst = 0;
  for (size_t i = 0; i < last.size(); ++i) worst = test::worse(worst, std::abs(last[i] - all[3 * 201088 + i]));
  EXPECT_LE(worst, 1e-5f);
  engine->reset();
  EXPECT_TRUE(engine->forward(ids, runtime::LogitRows::None).empty());
  EXPECT_EQ(engine->position(), 4u);
}

// Rows r .. r + n - 1 of a forward's All, bit for bit: `all` holds every row of the same forward.
void expect_rows_of_all(const std::vector<float>& range, const std::vector<float>& all, uint64_t first, uint64_t count,
                        const std::string& what) {
  constexpr size_t vocab = 201088;
  ASSERT_EQ(range.size(), count * vocab) << what;
  size_t differing = 0;
  for (size_t i = 0; i < range.size(); ++i) differing += range[i] != all[first * vocab + i];
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << range.size() << " logits differ from All's";
}

TEST_P(EngineInterface, RowRangeIsExactlyThoseRowsOfAll) {
  // The Vulkan engine submits 5 tokens at a time here, so ranges start, end and span submits.
  ENGINE_OR_SKIP(GetParam(), 32);
  std::string unused;
  const auto chunked = engine_or_null(GetParam(), 32, &unused, 5);
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 12; ++i) ids.push_back(1000 + 7919 * i % 190000);
  for (auto* e : {engine.get(), chunked.get()}) {
    const auto all = e->forward(ids, runtime::LogitRows::All);
    ASSERT_EQ(all.size(), 12u * 201088u);
    std::vector<float> logits;  // one buffer for every range, as gptoss-eval reuses its own
    const std::pair<uint64_t, uint64_t> ranges[] = {{0, 12}, {6, 5}, {0, 1}, {11, 1}, {3, 4}, {4, 7}, {5, 1}, {2, 9}};
    for (const auto& [first, count] : ranges) {
      e->reset();
      e->forward(ids, runtime::LogitRows::range(first, count), logits);
      EXPECT_EQ(e->position(), 12u);
      expect_rows_of_all(logits, all, first, count, "rows " + std::to_string(first) + "+" + std::to_string(count));
    }
    // Observed (the Vulkan engine then normalizes every row and multiplies from the range's start).
    e->reset();
    int stages = 0;
    e->forward(ids, runtime::LogitRows::range(6, 5), logits, [&](const runtime::ActivationView&) { ++stages; });
    EXPECT_EQ(stages, 14);
    expect_rows_of_all(logits, all, 6, 5, "observed rows 6+5");
    // A one-token forward (a decode step): its range is its All.
    const uint32_t next[] = {4242};
    const auto step_all = e->forward(next, runtime::LogitRows::All);
    e->reset();
    e->forward(ids, runtime::LogitRows::None);
    e->forward(next, runtime::LogitRows::range(0, 1), logits);
    expect_rows_of_all(logits, step_all, 0, 1, "decode step");
    // An empty range: nothing, and the tokens still run.
    e->reset();
    e->forward(ids, runtime::LogitRows::range(12, 0), logits);
    EXPECT_TRUE(logits.empty());
    EXPECT_EQ(e->position(), 12u);
  }
}

// A row's logits do not depend on the Vulkan engine's prefill chunk (tokens per submit) where no
// chunk holds one token (a decode step): 12 tokens in one submit, in chunks of 4, and of 5 (5, 5,
// 2) give the same bits. Chunks of 5 start query tiles at positions that are no multiple of the
// tile's queries, and the sliding layers' windows (8 keys in preset a) then begin inside a key block:
// the prefill attention's key blocks lie at whole multiples of its block whatever the tile.
// (The Vulkan engine's alone: the CPU engines take no prefill chunk.)
TEST(VulkanEngineInterface, PrefillChunkDoesNotChangeARowsLogits) {
  ENGINE_OR_SKIP(EngineKind::Vulkan, 32);
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 12; ++i) ids.push_back(3000 + 6007 * i % 190000);
  const auto all = engine->forward(ids, runtime::LogitRows::All);
  for (uint32_t chunk : {4u, 5u}) {
    std::string why;
    const auto chunked = engine_or_null(EngineKind::Vulkan, 32, &why, chunk);
    ASSERT_TRUE(chunked) << why;
    expect_rows_of_all(chunked->forward(ids, runtime::LogitRows::All), all, 0, 12,
                       "chunks of " + std::to_string(chunk));
  }
}

// Two Vulkan engines made through one SharedDevices (gptoss-eval's models) share the device's queue
// and its memory: driven by threads of their own at once, each gives the bits it gave run alone
// before, forward after forward (packed sequences, a prefill, decode steps). The models differ
// (BF16 and Q8_0 dense weights, so their memory differs), so an engine reading the other's buffers
// or recordings would show.
TEST(VulkanEngineInterface, EnginesSharingADeviceRunSideBySideAsAlone) {
  runtime::EngineOptions options;
  options.max_context = 64;
  const CanonicalModel q8 = load_model(preset_a_q8_gguf());
  std::vector<std::unique_ptr<runtime::Engine>> engines;
  runtime::SharedDevices devices;
  try {
    for (const auto* m : {&preset_a_model(), &q8})
      engines.push_back(runtime::make_engine(EngineKind::Vulkan, *m, options, &devices));
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no usable Vulkan device (" << e.what() << ")";
  }
  // Both engines' memory is the one device's.
  EXPECT_EQ(engines[0]->device_memory_bytes(), engines[1]->device_memory_bytes());
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 64; ++i) ids.push_back(700 + 7919u * i % 190000);
  // One round: two packed sequences of 32, then a 20-token prefill and three decode steps.
  const auto round = [&ids](runtime::Engine& e) {
    std::vector<float> out, logits;
    e.forward_sequences(ids, 2, runtime::LogitRows::All, out);
    e.reset();
    e.forward(std::span(ids).first(20), runtime::LogitRows::Last, logits);
    out.insert(out.end(), logits.begin(), logits.end());
    for (uint32_t step = 0; step < 3; ++step) {
      e.forward(std::span(ids).subspan(20 + step, 1), runtime::LogitRows::Last, logits);
      out.insert(out.end(), logits.begin(), logits.end());
    }
    e.reset();
    return out;
  };
  std::vector<std::vector<float>> alone;
  for (auto& e : engines) alone.push_back(round(*e));
  ASSERT_NE(alone[0], alone[1]);
  constexpr int kRounds = 3;
  std::vector<std::vector<std::vector<float>>> side_by_side(2);
  {
    std::vector<std::thread> threads;
    for (size_t m = 0; m < 2; ++m)
      threads.emplace_back([&, m] {
        for (int i = 0; i < kRounds; ++i) side_by_side[m].push_back(round(*engines[m]));
      });
    for (auto& t : threads) t.join();
  }
  for (size_t m = 0; m < 2; ++m)
    for (int i = 0; i < kRounds; ++i)
      EXPECT_TRUE(side_by_side[m][i] == alone[m]) << "model " << m << ", round " << i << " differs from its run alone";
}

TEST_P(EngineInterface, PackedSequencesGiveEachSequenceItsOwnRows) {
  // forward_sequences as gptoss-eval runs a text's chunks (llama-perplexity's batches): each
  // sequence's rows are bit for bit those of the sequence run alone. The Vulkan engine packs the
  // 32-token sequences (whole key blocks and query tiles) two to a submit of its 64-token chunks,
  // or all of them in one 2048-token chunk, with a sliding window of 8 and full layers; at 12
  // tokens, or with Last, it runs them one at a time.
  ENGINE_OR_SKIP(GetParam(), 128);
  std::string unused;
  const auto chunked = engine_or_null(GetParam(), 128, &unused, 64);
  for (const uint32_t length : {32u, 12u}) {
    constexpr uint32_t kSequences = 3;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < kSequences * length; ++i) ids.push_back(500 + 104729u * i % 200000);
    const uint64_t first = length / 2, count = length / 2 - 1;
    for (const auto rows : {runtime::LogitRows::All, runtime::LogitRows::range(first, count), runtime::LogitRows::Last}) {
      // Each sequence alone (Last's row may differ from All's in its last bits: the engines' docs).
      std::vector<std::vector<float>> alone;
      for (uint32_t s = 0; s < kSequences; ++s) {
        engine->reset();
        alone.push_back(engine->forward(std::span(ids).subspan(s * length, length), rows));
      }
      ASSERT_NE(alone[0], alone[1]);
      const uint64_t n = rows.row_count(length);
      for (auto* e : {engine.get(), chunked.get()}) {
        std::vector<float> packed(7, 1.0f);
        e->forward(std::span(ids).subspan(0, 2), runtime::LogitRows::None);  // something in the cache
        e->forward_sequences(ids, kSequences, rows, packed);
        EXPECT_EQ(e->position(), 0u);
        ASSERT_EQ(packed.size(), kSequences * n * 201088u);
        for (uint32_t s = 0; s < kSequences; ++s)
          expect_rows_of_all(std::vector<float>(packed.begin() + s * n * 201088, packed.begin() + (s + 1) * n * 201088),
                             alone[s], 0, n,
                             "sequence " + std::to_string(s) + " of " + std::to_string(length) + " tokens, rows " +
                                 std::to_string(rows.first_row(length)) + "+" + std::to_string(n));
      }
    }
  }
  std::vector<float> logits;
  const std::vector<uint32_t> ten(10, 5u);
  EXPECT_THROW(engine->forward_sequences(ten, 3, runtime::LogitRows::All, logits), std::invalid_argument);
  EXPECT_THROW(engine->forward_sequences(ten, 0, runtime::LogitRows::All, logits), std::invalid_argument);
  const std::vector<uint32_t> long_ones(2 * 129, 5u);  // each past the 128 positions
  EXPECT_THROW(engine->forward_sequences(long_ones, 2, runtime::LogitRows::All, logits), std::out_of_range);
  EXPECT_THROW(engine->forward_sequences(ten, 2, runtime::LogitRows::range(4, 2), logits), std::out_of_range);
  std::vector<float> room(2 * 201088 - 1);  // the caller's memory holds the logits exactly, or nothing runs
  EXPECT_THROW(engine->forward_sequences(ten, 2, runtime::LogitRows::range(3, 1), std::span<float>(room)),
               std::invalid_argument);
  room.push_back(0.0f);
  engine->forward_sequences(ten, 2, runtime::LogitRows::range(3, 1), std::span<float>(room));
  EXPECT_EQ(std::count(room.begin(), room.end(), 0.0f), 0) << "every logit written";
}

TEST_P(EngineInterface, LogitMemoryTakesTheRowsWithoutACopy) {
  // Engine::logit_memory: packed sequences' rows written there are the bits written into the
  // caller's own memory, through the GEMM itself on the Vulkan engine (its readback does not grow,
  // where rows into other memory make it grow to hold them for the copy), for sequences it packs
  // (32 tokens, two to a 64-token submit) and those it runs one at a time (12); the memory stays
  // readable after the engine is gone.
  std::string skip_reason;
  auto engine = engine_or_null(GetParam(), 128, &skip_reason, 64);
  if (!engine) GTEST_SKIP() << "no usable Vulkan device (" << skip_reason << ")";
  EXPECT_THROW(engine->logit_memory(0), std::invalid_argument);
  constexpr uint32_t kSequences = 3;
  std::vector<runtime::LogitMemory> memories;
  std::vector<std::vector<float>> expected;
  for (const uint32_t length : {32u, 12u}) {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < kSequences * length; ++i) ids.push_back(700 + 7919u * i % 200000);
    const auto rows = runtime::LogitRows::range(length / 2, length / 2 - 1);
    const size_t floats = kSequences * rows.row_count(length) * size_t{201088};
    memories.push_back(engine->logit_memory(floats));
    const auto memory = memories.back().values();
    ASSERT_EQ(memory.size(), floats);
    std::fill(memory.begin(), memory.end(), std::nanf(""));
    const uint64_t held = engine->device_memory_bytes();
    engine->forward_sequences(ids, kSequences, rows, memory);
    if (GetParam() == EngineKind::Vulkan) {
      EXPECT_EQ(engine->device_memory_bytes(), held) << "the readback grew: the rows were copied, " << length;
    }
    expected.emplace_back();
    engine->forward_sequences(ids, kSequences, rows, expected.back());
    if (GetParam() == EngineKind::Vulkan && length == 32) {
      EXPECT_GT(engine->device_memory_bytes(), held) << "rows into the caller's memory come through the readback";
    }
    ASSERT_EQ(expected.back().size(), floats);
    EXPECT_EQ(std::memcmp(memory.data(), expected.back().data(), floats * sizeof(float)), 0)
        << length << "-token sequences, rows from " << rows.first_row(length);
  }
  engine.reset();
  for (size_t i = 0; i < memories.size(); ++i)
    EXPECT_EQ(std::memcmp(memories[i].values().data(), expected[i].data(), expected[i].size() * sizeof(float)), 0) << i;
}

TEST_P(EngineInterface, RowRangePastTheTokensIsRefusedBeforeAnythingRuns) {
  ENGINE_OR_SKIP(GetParam(), 16);
  const uint32_t ids[] = {10, 20, 30, 40};
  std::vector<float> logits(3, 1.0f);
  for (const auto rows : {runtime::LogitRows::range(3, 2), runtime::LogitRows::range(5, 0),
                          runtime::LogitRows::range(1, UINT64_MAX)}) {
    try {
      engine->forward(ids, rows, logits);
      FAIL() << "no exception";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("past the 4 new tokens of the forward"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(engine->position(), 0u);
  EXPECT_EQ(logits.size(), 3u) << "a refused forward leaves the caller's buffer alone";
}

TEST_P(EngineInterface, GreedyForwardIsTheArgmaxOfTheLastRow) {
  ENGINE_OR_SKIP(GetParam(), 32);
  const uint32_t ids[] = {10, 20, 30, 40, 50};
  const auto logits = engine->forward(ids, runtime::LogitRows::Last);
  const auto expected = static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  engine->reset();
  EXPECT_EQ(engine->forward_greedy(ids), expected);  // a prompt
  EXPECT_EQ(engine->position(), 5u);
  const uint32_t next[] = {expected};
  const uint32_t greedy_step = engine->forward_greedy(next);  // a decode step
  engine->reset();
  engine->forward(ids, runtime::LogitRows::None);
  const auto step_logits = engine->forward(next);
  EXPECT_EQ(greedy_step, static_cast<uint32_t>(std::max_element(step_logits.begin(), step_logits.end()) - step_logits.begin()));
  const uint32_t bad[] = {201088};
  EXPECT_THROW(engine->forward_greedy(bad), std::out_of_range);
  EXPECT_THROW(engine->forward_greedy({}), std::invalid_argument);
  EXPECT_EQ(engine->position(), 6u);
}

TEST_P(EngineInterface, ForwardLastIsTheLastRowInTheEnginesMemory) {
  ENGINE_OR_SKIP(GetParam(), 32);
  const uint32_t ids[] = {10, 20, 30, 40, 50}, next[] = {60};
  const auto prompt = engine->forward(ids, runtime::LogitRows::Last);
  const auto step = engine->forward(next, runtime::LogitRows::Last);
  engine->reset();
  const auto prompt_view = engine->forward_last(ids);  // a prompt
  ASSERT_EQ(prompt_view.size(), engine->vocab_size());
  EXPECT_TRUE(std::equal(prompt_view.begin(), prompt_view.end(), prompt.begin()));
  const auto step_view = engine->forward_last(next);  // a decode step
  EXPECT_EQ(engine->position(), 6u);
  ASSERT_EQ(step_view.size(), engine->vocab_size());
  EXPECT_TRUE(std::equal(step_view.begin(), step_view.end(), step.begin()));
  EXPECT_EQ(step_view.data(), prompt_view.data()) << "one place for every step's logits, no copy per step";
  const uint32_t bad[] = {201088};
  EXPECT_THROW(engine->forward_last(bad), std::out_of_range);
  EXPECT_THROW(engine->forward_last({}), std::invalid_argument);
  EXPECT_EQ(engine->position(), 6u);
}

// The largest |a - b| over a row, relative to the row's largest |b|.
double relative_difference(const float* a, const float* b, size_t n) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    diff = test::worse(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = test::worse(scale, std::abs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<uint32_t> spread_ids(size_t n) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(3 + 104729u * i % 200000u);
  return ids;
}

// A checker's numbers must not depend on how work is batched: a position's logits are the same
// bits whatever else the forward holds.
TEST_P(EngineInterface, APrefillsRowsAreThoseOfALongerPrefill) {
  // 45 tokens cross preset a's sliding window (8) and every tile boundary of 4 and 32.
  ENGINE_OR_SKIP(GetParam(), 64);
  const auto ids = spread_ids(45);
  constexpr size_t vocab = 201088;
  const auto all = engine->forward(ids, runtime::LogitRows::All);
  // One token is a decode step, which the Vulkan engine computes through other kernels
  // (TokenByTokenEqualsThePrefill); from two tokens on every engine runs its prefill.
  for (size_t n : {1u, 2u, 4u, 5u, 33u, 40u}) {
    if (n == 1 && GetParam() == EngineKind::Vulkan) continue;
    engine->reset();
    const auto some = engine->forward(std::span(ids).first(n), runtime::LogitRows::All);
    expect_rows_of_all(some, all, 0, n, "a prefill of " + std::to_string(n) + " against 45");
  }
  // The same forward again: the same bits.
  engine->reset();
  const auto again = engine->forward(ids, runtime::LogitRows::All);
  ASSERT_EQ(again.size(), 45 * vocab);
  EXPECT_EQ(std::memcmp(again.data(), all.data(), all.size() * sizeof(float)), 0) << "the same forward twice";
}

TEST_P(EngineInterface, TokenByTokenEqualsThePrefill) {
  // Bit for bit on the CPU engines (a decode step is the prefill's row of the same products); the
  // Vulkan engine decodes through matrix-vector kernels, not the prefill's GEMMs: two f32
  // computations summing in other orders.
  ENGINE_OR_SKIP(GetParam(), 64);
  const auto ids = spread_ids(20);
  constexpr size_t vocab = 201088;
  const auto all = engine->forward(ids, runtime::LogitRows::All);
  engine->reset();
  double worst = 0;
  size_t differing = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto step = engine->forward(std::span(ids).subspan(t, 1), runtime::LogitRows::All);
    ASSERT_EQ(step.size(), vocab);
    worst = test::worse(worst, relative_difference(step.data(), all.data() + t * vocab, vocab));
    differing += std::memcmp(step.data(), all.data() + t * vocab, vocab * sizeof(float)) != 0;
  }
  if (GetParam() == EngineKind::Vulkan) {
    // No further apart than twice the prefill's own f32 error against the f64 engine on the same
    // tokens (preset a's random layers amplify rounding: a few 1e-6 here; the real shapes are
    // measured on a GPU against 1e-6).
    std::string unused;
    const auto f64 = engine_or_null(EngineKind::CpuF64, 64, &unused)->forward(ids, runtime::LogitRows::All);
    double prefill_error = 0;
    for (size_t t = 0; t < ids.size(); ++t)
      prefill_error = test::worse(prefill_error, relative_difference(all.data() + t * vocab, f64.data() + t * vocab, vocab));
    EXPECT_LE(worst, 2 * prefill_error);
    EXPECT_GT(worst, 0.0) << "decode steps equal to the prefill's GEMM rows: the test's premise changed";
  } else {
    EXPECT_EQ(differing, 0u) << "decode steps differ from the prefill's rows (largest " << worst << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryEngine, EngineInterface,
                         ::testing::Values(EngineKind::Cpu, EngineKind::CpuF64, EngineKind::Vulkan),
                         [](const ::testing::TestParamInfo<EngineKind>& param) {
                           std::string name(runtime::engine_kind_name(param.param));
                           std::erase(name, '-');
                           return name;
                         });

TEST(EngineKinds, NamesRoundTripAndUnknownNamesAreNone) {
  EXPECT_EQ(runtime::engine_kind_names(), (std::vector<std::string>{"cpu", "cpu-f64", "vulkan"}));
  for (const auto& name : runtime::engine_kind_names())
    EXPECT_EQ(runtime::engine_kind_name(*runtime::engine_kind_from_name(name)), name);
  EXPECT_FALSE(runtime::engine_kind_from_name("metal").has_value());
}

TEST(KvCacheTypes, NamesRoundTripAndUnknownNamesAreNone) {
  EXPECT_EQ(runtime::kv_cache_type_names(), (std::vector<std::string>{"f32", "f16"}));
  for (const auto& name : runtime::kv_cache_type_names())
    EXPECT_EQ(runtime::kv_cache_type_name(*runtime::kv_cache_type_from_name(name)), name);
  EXPECT_FALSE(runtime::kv_cache_type_from_name("q8_0").has_value());
  EXPECT_EQ(runtime::EngineOptions{}.kv_cache, runtime::KvCacheType::F32);
}

// The CPU engines with an f16 KV cache: what they cache is rounded, so their logits move away from
// the f32 cache's by about f16's precision (not 0, not more), the same in f32 and f64 arithmetic,
// and the rounding does not depend on how the tokens arrive: a prefill equals token-by-token decoding
// as closely as with an f32 cache.
TEST(KvCacheTypes, CpuEnginesRoundWhatTheyCacheToF16) {
  const std::vector<uint32_t> ids = {0, 1, 500, 65000, 200000, 12, 7, 3000, 99, 1234, 42, 17};
  runtime::EngineOptions f16;
  f16.max_context = 16;
  f16.kv_cache = runtime::KvCacheType::F16;
  runtime::EngineOptions f32 = f16;
  f32.kv_cache = runtime::KvCacheType::F32;
  const auto rounded = runtime::make_engine(EngineKind::Cpu, preset_a_model(), f16)->forward(ids, runtime::LogitRows::All);
  const auto exact = runtime::make_engine(EngineKind::Cpu, preset_a_model(), f32)->forward(ids, runtime::LogitRows::All);
  const auto rounded_f64 =
      runtime::make_engine(EngineKind::CpuF64, preset_a_model(), f16)->forward(ids, runtime::LogitRows::All);
  double largest = 0, moved = 0, f64_apart = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    largest = test::worse(largest, std::abs(exact[i]));
    moved = test::worse(moved, std::abs(rounded[i] - exact[i]));
    f64_apart = test::worse(f64_apart, std::abs(rounded_f64[i] - rounded[i]));
  }
  std::printf("f16 KV cache: logits moved by %.2e (largest |logit| %.2e); f32 vs f64 arithmetic %.2e\n", moved, largest,
              f64_apart);
  EXPECT_GT(moved, 1e-4 * largest);
  EXPECT_LT(moved, 2e-2 * largest);
  EXPECT_LT(f64_apart, moved / 4);
  auto stepwise = runtime::make_engine(EngineKind::Cpu, preset_a_model(), f16);
  double decode_apart = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto row = stepwise->forward(std::span(ids).subspan(t, 1));
    for (size_t v = 0; v < row.size(); ++v)
      decode_apart = test::worse(decode_apart, std::abs(row[v] - rounded[t * row.size() + v]));
  }
  EXPECT_LT(decode_apart, moved / 4);
}

// The Vulkan engine's options are refused for a CPU engine, before anything is built, instead of
// being ignored.
TEST(EngineKinds, CpuEnginesRefuseTheVulkanEnginesOptions) {
  for (const auto kind : {EngineKind::Cpu, EngineKind::CpuF64}) {
    const std::string name(runtime::engine_kind_name(kind));
    runtime::EngineOptions device;
    device.device_index = 1;
    try {
      runtime::make_engine(kind, preset_a_model(), device);
      FAIL() << name << " accepted a device index";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "EngineOptions::device_index 1 picks a Vulkan device, and the " + name + " engine runs on the CPU");
    }
    runtime::EngineOptions chunk;
    chunk.prefill_chunk = 64;
    try {
      runtime::make_engine(kind, preset_a_model(), chunk);
      FAIL() << name << " accepted a prefill chunk";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "EngineOptions::prefill_chunk 64 sets the Vulkan engine's prefill batches; the " +
                                           name + " engine has none");
    }
    runtime::EngineOptions defaults;
    defaults.max_context = 4;
    EXPECT_EQ(runtime::make_engine(kind, preset_a_model(), defaults)->kind(), kind);  // the defaults are fine
  }
}

// gptoss-eval --device 0,1: a list of devices whose every index is a usable device of one name and
// driver (an index may repeat); the error names the index, or both devices that differ.
TEST(DeviceList, TakesDevicesOfOneKindAndNamesWhatItRefuses) {
  const auto device = [](uint32_t index, std::string name, std::string driver, bool usable) {
    runtime::DeviceDescription d;
    d.index = index;
    d.name = std::move(name);
    d.driver = std::move(driver);
    d.usable = usable;
    return d;
  };
  const std::vector<runtime::DeviceDescription> devices{
      device(0, "GPU A", "1.0", true), device(1, "GPU A", "1.0", true), device(2, "GPU A", "2.0", true),
      device(3, "GPU B", "1.0", true), device(4, "GPU A", "1.0", false)};
  const auto refusal = [&](std::vector<uint32_t> list) -> std::string {
    try {
      runtime::check_device_list(list, devices);
      return "";
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
  EXPECT_EQ(refusal({0, 1}), "");
  EXPECT_EQ(refusal({1, 0, 1}), "");
  EXPECT_EQ(refusal({0, 0}), "");
  EXPECT_EQ(refusal({0, 5}), "Vulkan: no device 5 (there are 5; gptoss-run --list-devices)");
  EXPECT_EQ(refusal({4, 0}), "Vulkan: device 4 has no compute queue");
  EXPECT_EQ(refusal({1, 2}),
            "device 1 (GPU A, driver 1.0) and device 2 (GPU A, driver 2.0) differ: engines on different devices may "
            "differ in their last bits, which a comparison would count as the models' difference");
  const std::string first_other = "device 0 (GPU A, driver 1.0) and device 3 (GPU B, driver 1.0) differ";
  EXPECT_EQ(refusal({0, 1, 3}).substr(0, first_other.size()), first_other);
}

}  // namespace
}  // namespace gptoss::test
