// gptoss-eval end to end on preset a: a model against itself on every engine, the HF checkpoint
// against its Q8_0 GGUF checked against a direct computation from gptoss-run --dump-logits, and
// the reference logits file (round trip, and refusals naming the field that differs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "convert/model_io.h"
#include "runtime/engine.h"
#include "runtime/eval/evaluation.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/eval/eval_fixture.h"

namespace gptoss::test {
namespace {

std::vector<uint32_t> fixed_ids(size_t n) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<uint32_t>((i * 7919 + 13) % 199998));
  return ids;
}

struct EnginePair {
  std::unique_ptr<runtime::Engine> reference, candidate;
};
// Engines for the two models (the reference's of `reference_kind`, default `kind`), `ctx` positions
// each; nullopt (with the reason) where the Vulkan engine has no usable device. Any other failure
// propagates and fails the test.
// devices: where given, the Vulkan engines share its device (and queue), as gptoss-eval's do.
std::optional<EnginePair> make_engine_pair(runtime::EngineKind kind, const CanonicalModel& reference,
                                           const CanonicalModel& candidate, uint64_t ctx, std::string& why,
                                           std::optional<runtime::EngineKind> reference_kind = std::nullopt,
                                           runtime::SharedDevices* devices = nullptr) {
  runtime::EngineOptions options;
  options.max_context = ctx;  // the Vulkan engine packs sequences up to this many positions in one submit
  try {
    return EnginePair{runtime::make_engine(reference_kind.value_or(kind), reference, options, devices),
                      runtime::make_engine(kind, candidate, options, devices)};
  } catch (const std::runtime_error& e) {
    if (kind != runtime::EngineKind::Vulkan) throw;
    why = std::string("no usable Vulkan device: ") + e.what();
    return std::nullopt;
  }
}
eval::EvaluationResult evaluate_pair(const EnginePair& engines, const std::vector<uint32_t>& ids,
                                     const eval::ChunkPlan& plan, uint32_t chunks_per_forward = 1) {
  eval::EvaluationRequest request;
  request.tokens = ids;
  request.plan = plan;
  request.chunks_per_forward = chunks_per_forward;
  request.reference = engines.reference.get();
  request.candidates = {engines.candidate.get()};
  return eval::evaluate(request);
}

// A model against itself on `kind`: exactly zero divergence, full agreement, equal perplexity.
void expect_same_model_gives_zero(runtime::EngineKind kind) {
  const auto model = load_model(preset_a_checkpoint() / "hf");
  const auto ids = fixed_ids(32);
  const auto plan = eval::plan_chunks(ids.size(), 16, std::nullopt);
  ASSERT_EQ(plan.chunks, 2u);
  std::string why;
  const auto engines = make_engine_pair(kind, model, model, 16, why);
  if (!engines) GTEST_SKIP() << why;
  const auto result = evaluate_pair(*engines, ids, plan);
  ASSERT_EQ(result.candidates.size(), 1u);
  const auto& c = result.candidates[0];
  const auto s = c.summary();
  EXPECT_EQ(s.positions, 14u);  // 2 chunks x (16 - 1 - 8)
  EXPECT_EQ(s.kl_max, 0.0);
  EXPECT_EQ(s.kl_mean, 0.0);
  EXPECT_EQ(s.top1_agreement, 1.0);
  EXPECT_EQ(s.dp_rms, 0.0);
  EXPECT_EQ(c.nll.perplexity(), result.reference.perplexity());
  EXPECT_GT(result.reference.perplexity(), 1.0);
}

TEST(Evaluation, SameModelAgainstItselfIsZeroOnTheCpuEngine) { expect_same_model_gives_zero(runtime::EngineKind::Cpu); }
TEST(Evaluation, SameModelAgainstItselfIsZeroOnTheCpuF64Engine) {
  expect_same_model_gives_zero(runtime::EngineKind::CpuF64);
}
// Named Vulkan*: the sanitizer runs these with leak detection off (Mesa's driver leaks).
TEST(VulkanEvaluation, SameModelAgainstItselfIsZero) { expect_same_model_gives_zero(runtime::EngineKind::Vulkan); }

// Each model needs its own engine: the reference's forward may run beside the candidates'.
TEST(Evaluation, RefusesOneEngineInTwoRoles) {
  const auto model = load_model(preset_a_checkpoint() / "hf");
  const auto ids = fixed_ids(32);
  runtime::EngineOptions options;
  options.max_context = 16;
  const auto engine = runtime::make_engine(runtime::EngineKind::Cpu, model, options);
  eval::EvaluationRequest request;
  request.tokens = ids;
  request.plan = eval::plan_chunks(ids.size(), 16, std::nullopt);
  request.reference = engine.get();
  request.candidates = {engine.get()};
  try {
    eval::evaluate(request);
    ADD_FAILURE() << "one engine as reference and candidate was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("one engine given twice"));
  }
}

// evaluate() asks each forward for the scored rows only and runs each engine on the device, and
// the engines on the host together, on a thread of its own, beside the statistics of the group
// before; the numbers must be those of the statistics taken on every row of LogitRows::All, chunk
// after chunk (what evaluate() did before): equal, not close. With chunks_per_forward 2 (ctx 32,
// which the Vulkan engine packs), the three chunks run as a forward of two sequences and one of
// one: the same numbers. shared: both Vulkan engines on one queue (runtime::SharedDevices).
void expect_same_as_all_rows(runtime::EngineKind kind, std::optional<runtime::EngineKind> reference_kind = std::nullopt,
                             uint32_t chunks_per_forward = 1, bool shared = false) {
  const auto reference_model = load_model(preset_a_checkpoint() / "hf");
  const auto candidate_model = load_model(preset_a_q8_gguf());
  const uint32_t ctx = chunks_per_forward > 1 ? 32 : 24, last_scored = ctx - 2;
  const auto ids = fixed_ids(3 * ctx);  // 3 chunks: both buffers, and one of them twice
  const auto plan = eval::plan_chunks(ids.size(), ctx, std::nullopt);
  ASSERT_EQ(plan.chunks, 3u);
  std::string why;
  runtime::SharedDevices devices;
  const auto engines = make_engine_pair(kind, reference_model, candidate_model, ctx * chunks_per_forward, why,
                                        reference_kind, shared ? &devices : nullptr);
  if (!engines) GTEST_SKIP() << why;
  const auto result = evaluate_pair(*engines, ids, plan, chunks_per_forward);
  EXPECT_EQ(result.chunks_per_forward, chunks_per_forward);
  auto& reference = engines->reference;
  auto& candidate = engines->candidate;
  ASSERT_EQ(result.candidates.size(), 1u);
  const auto& c = result.candidates[0];
  ASSERT_EQ(c.positions.size(), 3u * plan.scored_per_chunk());

  eval::NllStats ref_nll, cand_nll;
  size_t global = 0;
  for (uint32_t chunk = 0; chunk < plan.chunks; ++chunk) {
    const auto chunk_ids = std::span(ids).subspan(chunk * ctx, ctx);
    reference->reset();
    candidate->reset();
    const auto x_all = reference->forward(chunk_ids, runtime::LogitRows::All);
    const auto y_all = candidate->forward(chunk_ids, runtime::LogitRows::All);
    const size_t vocab = reference->vocab_size();
    for (size_t row = plan.first_scored(); row <= last_scored; ++row, ++global) {
      const auto x = std::span<const float>(x_all).subspan(row * vocab, vocab);
      const auto y = std::span<const float>(y_all).subspan(row * vocab, vocab);
      const auto expected = eval::compare_position(x, y);
      const auto& got = c.positions[global];
      EXPECT_EQ(got.kl, expected.kl) << "position " << global;
      EXPECT_EQ(got.ref_top, expected.ref_top) << "position " << global;
      EXPECT_EQ(got.cand_top, expected.cand_top) << "position " << global;
      EXPECT_EQ(got.p_ref_top, expected.p_ref_top) << "position " << global;
      EXPECT_EQ(got.q_ref_top, expected.q_ref_top) << "position " << global;
      EXPECT_EQ(got.ref_log_norm, expected.ref_log_norm) << "position " << global;
      EXPECT_EQ(got.cand_log_norm, expected.cand_log_norm) << "position " << global;
      ref_nll.add(expected.ref_log_norm - x[chunk_ids[row + 1]]);
      cand_nll.add(expected.cand_log_norm - y[chunk_ids[row + 1]]);
    }
  }
  EXPECT_EQ(global, c.positions.size());
  EXPECT_GT(c.summary().kl_mean, 0.0);  // Q8_0 against BF16: the comparison is not trivially zero
  EXPECT_EQ(result.reference.sum, ref_nll.sum);
  EXPECT_EQ(result.reference.sum_squares, ref_nll.sum_squares);
  EXPECT_EQ(c.nll.sum, cand_nll.sum);
  EXPECT_EQ(c.nll.sum_squares, cand_nll.sum_squares);
  EXPECT_EQ(c.nll.count, cand_nll.count);
}

TEST(Evaluation, ScoredRowsGiveTheNumbersOfEveryRowOnTheCpuEngine) {
  expect_same_as_all_rows(runtime::EngineKind::Cpu);
}
TEST(Evaluation, ScoredRowsGiveTheNumbersOfEveryRowOnTheCpuF64Engine) {
  expect_same_as_all_rows(runtime::EngineKind::CpuF64);
}
TEST(VulkanEvaluation, ScoredRowsGiveTheNumbersOfEveryRow) { expect_same_as_all_rows(runtime::EngineKind::Vulkan); }
TEST(VulkanEvaluation, ACpuReferenceBesideTheDeviceGivesTheNumbersOfEveryRow) {
  expect_same_as_all_rows(runtime::EngineKind::Vulkan, runtime::EngineKind::Cpu);
}
TEST(Evaluation, ChunksRunTogetherGiveTheNumbersOfEveryRowOnTheCpuEngine) {
  expect_same_as_all_rows(runtime::EngineKind::Cpu, std::nullopt, 2);
}
TEST(VulkanEvaluation, ChunksPackedInOneForwardGiveTheNumbersOfEveryRow) {
  expect_same_as_all_rows(runtime::EngineKind::Vulkan, std::nullopt, 2);
}
TEST(VulkanEvaluation, ChunksPackedBesideACpuReferenceGiveTheNumbersOfEveryRow) {
  expect_same_as_all_rows(runtime::EngineKind::Vulkan, runtime::EngineKind::Cpu, 2);
}
TEST(VulkanEvaluation, EnginesTakingTurnsOnOneQueueGiveTheNumbersOfEveryRow) {
  expect_same_as_all_rows(runtime::EngineKind::Vulkan, std::nullopt, 2, true);
}

std::vector<float> read_f32(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

struct DirectRow {
  std::vector<double> log_p;
  uint32_t top = 0;
};
DirectRow log_softmax(const float* x, size_t n) {
  DirectRow r;
  double m = -INFINITY;
  for (size_t i = 0; i < n; ++i)
    if (x[i] > m) m = x[r.top = static_cast<uint32_t>(i)];
  double z = 0;
  for (size_t i = 0; i < n; ++i) z += std::exp(x[i] - m);
  for (size_t i = 0; i < n; ++i) r.log_p.push_back(x[i] - m - std::log(z));
  return r;
}

TEST(EvaluationCli, Q8GgufAgainstHfMatchesTheDumpedLogits) {
  TOKENIZER_OR_SKIP();
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const auto q8 = preset_a_q8_gguf().string();
  const auto j = eval_json(hf + " " + q8 + " --text " + eval_text().string() + " --ctx 16 --chunks 2 --engine cpu-f64");
  ASSERT_TRUE(j.contains("candidates"));
  const auto& c = j["candidates"][0];

  // The same chunks through gptoss-run --dump-logits, and the statistics written out here.
  std::ifstream in(eval_text(), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto ids = Tokenizer(*load_model(hf).tokenizer).encode(text, false);
  TempDir dir;
  double kl_sum = 0, kl_max = 0, dp_sum = 0, nll_ref = 0, nll_cand = 0;
  int same = 0, n = 0, max_chunk = -1, max_row = -1;
  for (int chunk = 0; chunk < 2; ++chunk) {
    const std::vector<uint32_t> chunk_ids(ids.begin() + chunk * 16, ids.begin() + (chunk + 1) * 16);
    std::vector<std::vector<float>> logits;
    for (const auto& model : {hf, q8}) {
      const auto path = dir / ("logits-" + std::to_string(logits.size()));
      const auto r = run_command(gptoss_run() + " " + model + " --prompt-tokens " + join_ids(chunk_ids) +
                                 " -n 0 --engine cpu-f64 --dump-logits " + path.string() + " 2>&1");
      ASSERT_EQ(r.exit_code, 0) << r.output;
      logits.push_back(read_f32(path));
    }
    const size_t vocab = logits[0].size() / 16;
    ASSERT_EQ(logits[1].size(), logits[0].size());
    for (size_t row = 8; row <= 14; ++row) {
      const auto p = log_softmax(logits[0].data() + row * vocab, vocab);
      const auto q = log_softmax(logits[1].data() + row * vocab, vocab);
      double kl = 0;
      for (size_t i = 0; i < vocab; ++i) kl += std::exp(p.log_p[i]) * (p.log_p[i] - q.log_p[i]);
      kl_sum += kl;
      if (kl > kl_max) {
        kl_max = kl;
        max_chunk = chunk;
        max_row = static_cast<int>(row);
      }
      dp_sum += std::exp(q.log_p[p.top]) - std::exp(p.log_p[p.top]);
      same += p.top == q.top;
      nll_ref -= p.log_p[chunk_ids[row + 1]];
      nll_cand -= q.log_p[chunk_ids[row + 1]];
      ++n;
    }
  }
  ASSERT_EQ(n, 14);
  ASSERT_EQ(c["tokens"], 14);
  const double kl_mean = kl_sum / n;
  EXPECT_GT(kl_mean, 1e-4);  // Q8_0 is lossy: a small positive divergence
  EXPECT_LT(kl_mean, 0.1);
  EXPECT_NEAR(c["kl"]["mean"].get<double>(), kl_mean, 1e-5 * kl_mean);
  EXPECT_NEAR(c["kl"]["max"].get<double>(), kl_max, 1e-5 * kl_max);
  EXPECT_EQ(c["kl"]["max_at"]["chunk"], max_chunk);
  EXPECT_EQ(c["kl"]["max_at"]["position"], max_row);
  EXPECT_DOUBLE_EQ(c["top1_agreement"].get<double>(), same / 14.0);
  EXPECT_NEAR(c["dp_mean"].get<double>(), dp_sum / n, 1e-9);
  EXPECT_NEAR(j["reference"]["perplexity"].get<double>(), std::exp(nll_ref / n), 1e-6 * std::exp(nll_ref / n));
  EXPECT_NEAR(c["perplexity"].get<double>(), std::exp(nll_cand / n), 1e-6 * std::exp(nll_cand / n));
}

// gptoss-run --text FILE --ctx N --chunk C --through P feeds the tokens gptoss-eval scores there:
// chunk C of the text as gptoss-eval tokenizes and cuts it, through position P (the "max at" a
// report names), the same logits as those ids given with --prompt-tokens; --parity takes it too,
// and a chunk or position outside the text is refused naming what it holds.
TEST(EvaluationCli, RunTextChunkIsTheEvaluatedTokens) {
  TOKENIZER_OR_SKIP();
  const auto hf = (preset_a_checkpoint() / "hf").string();
  std::ifstream in(eval_text(), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto ids = Tokenizer(*load_model(hf).tokenizer).encode(text, false);
  ASSERT_GT(ids.size(), 32u);
  TempDir dir;
  const auto from_text = dir / "text.f32", from_ids = dir / "ids.f32";
  auto r = run_command(gptoss_run() + " " + hf + " --text " + eval_text().string() +
                       " --ctx 16 --chunk 1 --through 9 -n 0 --dump-logits " + from_text.string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(gptoss_run() + " " + hf + " --prompt-tokens " +
                  join_ids(std::vector<uint32_t>(ids.begin() + 16, ids.begin() + 26)) + " -n 0 --dump-logits " +
                  from_ids.string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = read_f32(from_text), b = read_f32(from_ids);
  EXPECT_EQ(a.size(), 10u * load_model(hf).config.vocab_size);  // positions 0..9 of the chunk
  EXPECT_EQ(a, b);

  r = run_command(gptoss_run() + " " + hf + " --text " + eval_text().string() +
                  " --ctx 16 --chunk 1 --through 5 --parity " + preset_a_q8_gguf().string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("| logits |"), std::string::npos) << r.output;

  const size_t chunks = ids.size() / 16;
  r = run_command(gptoss_run() + " " + hf + " --text " + eval_text().string() + " --ctx 16 --chunk " +
                  std::to_string(chunks) + " -n 0 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("holds " + std::to_string(chunks) + " chunks of 16 tokens"), std::string::npos) << r.output;
  r = run_command(gptoss_run() + " " + hf + " --text " + eval_text().string() + " --ctx 16 --through 16 -n 0 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--through 16 is past a chunk's last position, 15"), std::string::npos) << r.output;
  r = run_command(gptoss_run() + " " + hf + " -p hi --chunk 2 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("give --text"), std::string::npos) << r.output;
}

// A synth: spec carries no tokenizer: refused by name without --tokenizer; with it, the numbers of
// the same model read from its checkpoint (which carries that tokenizer.json).
TEST(EvaluationCli, TokenizerOptionServesAModelThatCarriesNone) {
  TOKENIZER_OR_SKIP();
  const auto hf = preset_a_checkpoint() / "hf";
  const std::string text = " --text " + eval_text().string() + " --ctx 16 --chunks 1";
  const auto refused = run_command(gptoss_eval() + " synth:a" + text + " 2>&1");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("no model has a tokenizer"), std::string::npos) << refused.output;
  const auto synth = eval_json("synth:a --tokenizer " + (hf / "tokenizer.json").string() + text);
  const auto file = eval_json(hf.string() + text);
  ASSERT_TRUE(synth.contains("reference") && file.contains("reference"));
  EXPECT_EQ(synth["text"]["tokens"], file["text"]["tokens"]);
  EXPECT_EQ(synth["reference"]["perplexity"], file["reference"]["perplexity"]);
}

TEST(EvaluationCli, LogitsFileGivesTheLiveNumbersAndRefusesAnotherModelTextOrChunking) {
  TOKENIZER_OR_SKIP();
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const auto q8 = preset_a_q8_gguf().string();
  const std::string text = " --text " + eval_text().string();
  TempDir dir;
  const auto saved = (dir / "ref.logits").string();
  const auto live = eval_json(hf + " " + q8 + text + " --ctx 16 --chunks 2 --save-logits " + saved);
  ASSERT_TRUE(live.contains("saved_logits"));
  const auto file = eval_json(hf + " " + q8 + text + " --ctx 16 --chunks 2 --against-logits " + saved);
  ASSERT_TRUE(file.contains("candidates"));
  // nll is stored exactly; KL comes from f16 log-probabilities (docs/eval.md: ~1e-6 at most).
  EXPECT_NEAR(file["reference"]["perplexity"].get<double>(), live["reference"]["perplexity"].get<double>(),
              1e-6 * live["reference"]["perplexity"].get<double>());
  EXPECT_NEAR(file["candidates"][0]["kl"]["mean"].get<double>(), live["candidates"][0]["kl"]["mean"].get<double>(), 2e-6);
  EXPECT_EQ(file["candidates"][0]["top1_agreement"], live["candidates"][0]["top1_agreement"]);
  EXPECT_EQ(file["candidates"][0]["perplexity"], live["candidates"][0]["perplexity"]);

  auto refused = [&](const std::string& arguments, const std::string& field) {
    const auto r = run_command(gptoss_eval() + " " + arguments + " --against-logits " + saved + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(saved + ": " + field), std::string::npos) << field << "\n" << r.output;
  };
  refused(q8 + " " + hf + text + " --ctx 16 --chunks 2", "model.digest");
  refused(hf + " " + q8 + text + " --ctx 32 --chunks 2", "chunking.ctx");
  refused(hf + " " + q8 + text + " --ctx 16 --chunks 3", "chunking.chunks");
  const auto other_text = dir / "other.txt";
  {
    std::ofstream out(other_text);
    for (int i = 0; i < 40; ++i) out << "A different text, long enough for two chunks of sixteen tokens. ";
  }
  refused(hf + " " + q8 + " --text " + other_text.string() + " --ctx 16 --chunks 2", "text.sha256");

  // A damaged file: its last record cut short.
  auto bytes = read_file_bytes(saved);
  bytes.resize(bytes.size() - 100);
  const auto cut = dir / "cut.logits";
  write_file_bytes(cut, bytes);
  const auto r = run_command(gptoss_eval() + " " + hf + " " + q8 + text + " --ctx 16 --chunks 2 --against-logits " +
                             cut.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(cut.string() + ": chunk 1 position 6 at byte"), std::string::npos) << r.output;
}

TEST(EvaluationCli, RefusesWhatAModeCannotHonour) {
  const auto hf = (preset_a_checkpoint() / "hf").string();
  auto refused = [&](const std::string& arguments, const std::string& message) {
    const auto r = run_command(gptoss_eval() + " " + arguments + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  };
  refused(hf + " --text x --save-logits a --against-logits b", "exclude each other");
  refused(hf + " --text x --device 0", "--device picks a Vulkan device");
  refused(hf + " --text x --tolerance 1", "--tolerance applies to --compare-traces");
  refused(hf + " --compare-traces a b", "does not apply to --compare-traces");
  refused(hf + " --text x --level 5", "--level sets the zstd level of --save-logits");
  refused(hf, "--text FILE");
}

// The Vulkan devices: the index of the first usable one (none where there is none, or no Vulkan)
// and how many the loader offers.
struct VulkanDevices {
  std::optional<uint32_t> usable;
  size_t count = 0;
};
VulkanDevices vulkan_devices() {
  VulkanDevices found;
  try {
    const auto all = runtime::list_vulkan_devices();
    found.count = all.size();
    for (const auto& d : all)
      if (d.usable && !found.usable) found.usable = d.index;
  } catch (const std::runtime_error&) {
  }
  return found;
}

// --device goes to the Vulkan engine alone: a Vulkan reference with CPU candidates runs (the CPU
// engine would refuse a device index). Named Vulkan*: see above.
TEST(VulkanEvaluationCli, DeviceGoesToTheVulkanEngineOnly) {
  TOKENIZER_OR_SKIP();
  const auto device = vulkan_devices().usable;
  if (!device) GTEST_SKIP() << "no usable Vulkan device";
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const auto j = eval_json(hf + " " + hf + " --text " + eval_text().string() + " --ctx 16 --chunks 1 --engine cpu" +
                           " --reference-engine vulkan --device " + std::to_string(*device));
  ASSERT_EQ(j["candidates"].size(), 1u);
  EXPECT_EQ(j["reference"]["engine"], "vulkan");
  EXPECT_EQ(j["candidates"][0]["engine"], "cpu");
}

// --device D,D (a list: the models' Vulkan engines go to its devices in turn) runs the pair on one
// device as --device D does, with the same numbers; an index that is no device is refused by
// name before anything loads onto a device. Named Vulkan*: see above.
TEST(VulkanEvaluationCli, DeviceListPlacesTheModelsInTurn) {
  TOKENIZER_OR_SKIP();
  const auto [device, count] = vulkan_devices();
  if (!device) GTEST_SKIP() << "no usable Vulkan device";
  const auto hf = (preset_a_checkpoint() / "hf").string(), q8 = preset_a_q8_gguf().string();
  const std::string common =
      hf + " " + q8 + " --text " + eval_text().string() + " --ctx 16 --chunks 2 --engine vulkan --device ";
  const std::string d = std::to_string(*device);
  const auto one = eval_json(common + d);
  const auto list = eval_json(common + d + "," + d);
  ASSERT_EQ(one["candidates"].size(), 1u) << one.dump();
  EXPECT_EQ(list["reference"], one["reference"]);
  EXPECT_EQ(list["candidates"], one["candidates"]);
  const auto r = run_command(gptoss_eval() + " " + common + d + "," + std::to_string(count) + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("Vulkan: no device " + std::to_string(count) + " (there are " + std::to_string(count)),
            std::string::npos)
      << r.output;
}

// --batch: llama-perplexity's 2048 tokens per forward by default where an engine is the Vulkan one
// (here every chunk of the run in one forward), one chunk where only CPU engines run; the numbers
// are the same at any batch, to the last digit of the JSON. Named Vulkan*: see above.
TEST(VulkanEvaluationCli, BatchRunsChunksTogetherAndChangesNoNumber) {
  TOKENIZER_OR_SKIP();
  const auto hf = (preset_a_checkpoint() / "hf").string(), q8 = preset_a_q8_gguf().string();
  const std::string common = hf + " " + q8 + " --text " + eval_text().string() + " --ctx 32 --chunks 3";
  const auto cpu = eval_json(common);
  ASSERT_TRUE(cpu.contains("chunking")) << cpu.dump();
  EXPECT_EQ(cpu["chunking"]["chunks_per_forward"], 1);
  const auto packed = eval_json(common + " --engine vulkan");
  if (!packed.contains("chunking")) GTEST_SKIP() << "no usable Vulkan device";
  EXPECT_EQ(packed["chunking"]["chunks_per_forward"], 3);
  for (const char* batch : {"32", "64"}) {
    const auto j = eval_json(common + " --engine vulkan --batch " + batch);
    EXPECT_EQ(j["chunking"]["chunks_per_forward"], std::string(batch) == "32" ? 1 : 2);
    EXPECT_EQ(j["reference"], packed["reference"]) << batch;
    EXPECT_EQ(j["candidates"], packed["candidates"]) << batch;
  }
  EXPECT_GT(packed["candidates"][0]["kl"]["mean"].get<double>(), 0.0);
}

}  // namespace
}  // namespace gptoss::test

namespace gptoss::test {
namespace {

// The noise floor: the reference model on the candidates' engine, compared with the reference
// over its first chunks like a candidate; a candidate whose mean KL is within it is flagged.
TEST(EvaluationNoiseFloor, TheReferenceModelOnTheCandidatesEngineOverItsChunks) {
  const auto hf = load_model(preset_a_checkpoint() / "hf");
  const auto q8 = load_model(preset_a_q8_gguf());
  const auto ids = fixed_ids(3 * 16);
  const auto plan = eval::plan_chunks(ids.size(), 16, std::nullopt);
  ASSERT_EQ(plan.chunks, 3u);
  runtime::EngineOptions options;
  options.max_context = 16;
  const auto reference = runtime::make_engine(runtime::EngineKind::CpuF64, hf, options);
  const auto floor = runtime::make_engine(runtime::EngineKind::Cpu, hf, options);
  const auto same = runtime::make_engine(runtime::EngineKind::Cpu, hf, options);
  const auto quantized = runtime::make_engine(runtime::EngineKind::Cpu, q8, options);
  eval::EvaluationRequest request;
  request.tokens = ids;
  request.plan = plan;
  request.reference = reference.get();
  request.candidates = {quantized.get(), same.get()};
  request.floor = floor.get();
  request.floor_chunks = 2;
  const auto result = eval::evaluate(request);
  ASSERT_TRUE(result.floor.has_value());
  ASSERT_EQ(result.floor->positions.size(), 2u * plan.scored_per_chunk());  // its chunks only
  ASSERT_EQ(result.candidates.size(), 2u);
  // Over the floor's chunks the same model on the same engine compares exactly as the floor does.
  for (size_t i = 0; i < result.floor->positions.size(); ++i)
    EXPECT_EQ(result.candidates[1].positions[i].kl, result.floor->positions[i].kl) << i;
  // The three chunks as one forward: the floor runs the first two of them, every number the same.
  request.chunks_per_forward = 3;
  const auto together = eval::evaluate(request);
  request.chunks_per_forward = 1;
  ASSERT_TRUE(together.floor.has_value());
  ASSERT_EQ(together.floor->positions.size(), result.floor->positions.size());
  for (size_t i = 0; i < result.floor->positions.size(); ++i)
    EXPECT_EQ(together.floor->positions[i].kl, result.floor->positions[i].kl) << i;
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(together.candidates[k].positions.size(), result.candidates[k].positions.size());
    for (size_t i = 0; i < result.candidates[k].positions.size(); ++i)
      EXPECT_EQ(together.candidates[k].positions[i].kl, result.candidates[k].positions[i].kl) << k << " " << i;
    EXPECT_EQ(together.candidates[k].nll.sum, result.candidates[k].nll.sum) << k;
  }
  EXPECT_EQ(together.reference.sum, result.reference.sum);
  const double floor_kl = result.floor->summary().kl_mean;
  EXPECT_GT(floor_kl, 0.0);     // f32 against f64: not trivially zero
  EXPECT_LT(floor_kl, 1e-8);    // and tiny
  EXPECT_GT(result.candidates[0].summary().kl_mean, 1000 * floor_kl);  // Q8_0's own loss

  const std::vector<eval::RowSubject> subjects = {{"hf", "hf", "cpu-f64"}, {"q8", "q8", "cpu"}, {"hf", "hf", "cpu"}};
  const auto report = eval::make_report({"text", "sha", 1, ids.size()}, plan, result, subjects,
                                        eval::RowSubject{"hf", "noise floor: hf", "cpu"});
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.rows[0].kind, eval::RowKind::NoiseFloor);
  EXPECT_EQ(report.rows[0].chunks, 2u);
  EXPECT_EQ(report.rows[1].chunks, 3u);
  EXPECT_EQ(report.rows[1].within_floor, false);
  const auto j = eval::report_json(report);
  ASSERT_EQ(j["noise_floor"].size(), 1u);
  EXPECT_EQ(j["noise_floor"][0]["engine"], "cpu");
  EXPECT_EQ(j["noise_floor"][0]["chunks"], 2u);
  EXPECT_EQ(j["candidates"][0]["within_noise_floor"], false);
  EXPECT_TRUE(j["noise_floor"][0]["within_noise_floor"].is_null());
  const auto text = eval::report_text(report);
  EXPECT_NE(text.find("| noise floor: hf | cpu |"), std::string::npos) << text;
  EXPECT_NE(text.find("over 2 chunks: what the engines alone differ by"), std::string::npos) << text;
  // The floor over every chunk: the same model on the same engine is within it (equal KL).
  request.floor_chunks = 3;
  const auto whole = eval::evaluate(request);
  const auto whole_report = eval::make_report({"text", "sha", 1, ids.size()}, plan, whole, subjects,
                                              eval::RowSubject{"hf", "noise floor: hf", "cpu"});
  EXPECT_EQ(whole_report.rows[2].within_floor, true);
  EXPECT_EQ(whole_report.rows[1].within_floor, false);
  EXPECT_NE(eval::report_text(whole_report).find("note: hf is within the engine's noise floor"), std::string::npos);
  // Without a floor, no row and no flag.
  request.floor = nullptr;
  const auto plain = eval::evaluate(request);
  EXPECT_FALSE(plain.floor.has_value());
  const auto plain_report = eval::make_report({"text", "sha", 1, ids.size()}, plan, plain, subjects);
  EXPECT_FALSE(plain_report.rows[0].within_floor.has_value());
  EXPECT_TRUE(eval::report_json(plain_report)["noise_floor"].empty());
}

TEST(EvaluationNoiseFloor, CliRunsItWhereTheEnginesDiffer) {
  TOKENIZER_OR_SKIP();
  const auto hf = (preset_a_checkpoint() / "hf").string();
  const std::string common = hf + " " + preset_a_q8_gguf().string() + " --text " + eval_text().string() + " --ctx 16 --chunks 2";
  const auto differ = eval_json(common + " --engine cpu --reference-engine cpu-f64");
  ASSERT_EQ(differ["noise_floor"].size(), 1u) << differ.dump(1);
  EXPECT_EQ(differ["noise_floor"][0]["model"], hf);
  EXPECT_EQ(differ["noise_floor"][0]["chunks"], 1u);  // --floor-chunks' default
  EXPECT_EQ(differ["candidates"][0]["within_noise_floor"], false);
  EXPECT_TRUE(eval_json(common + " --engine cpu")["noise_floor"].empty());  // one engine: nothing to measure
  EXPECT_TRUE(eval_json(common + " --engine cpu --reference-engine cpu-f64 --floor-chunks 0")["noise_floor"].empty());
  EXPECT_EQ(eval_json(common + " --engine cpu --reference-engine cpu-f64 --floor-chunks 2")["noise_floor"][0]["chunks"], 2u);
}

}  // namespace
}  // namespace gptoss::test
