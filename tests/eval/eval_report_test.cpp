// gptoss-eval's report from a hand-made result: every JSON member in its place with its value,
// the table's header and cells, the notes; and the rules that decide whether a reference logits
// file may stand in for this run's reference, each refusing with the field it checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "convert/model_io.h"
#include "formats/core/error.h"
#include "runtime/eval/eval_report.h"
#include "runtime/eval/reference_logits_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/eval/eval_fixture.h"
#include "verify/canonical_digest.h"

namespace gptoss::eval {
namespace {

NllStats nll_of(std::initializer_list<double> values) {
  NllStats s;
  for (double v : values) s.add(v);
  return s;
}

PositionComparison position(double kl, uint32_t ref_top, uint32_t cand_top, double p_ref_top, double q_ref_top) {
  PositionComparison p;
  p.kl = kl;
  p.ref_top = ref_top;
  p.cand_top = cand_top;
  p.p_ref_top = p_ref_top;
  p.q_ref_top = q_ref_top;
  return p;
}

// A reference of 201088 rows, a candidate of the same vocabulary and one of model.bin's 200014.
// KL over 4 positions: 0.001, 0.002, 0.003, 0.010 (mean 0.004, median 0.0025, p99 0.00979,
// p99.9 0.009979); 3 of 4 argmaxes agree; dp = +0.02, +0.01, -0.01, +0.02 (mean +0.01, RMS
// sqrt(0.001/4) = 0.0158114).
EvaluationResult hand_made_result() {
  EvaluationResult result;
  result.reference_vocab = 201088;
  result.reference = nll_of({1.0, 2.0});  // mean 1.5: PPL e^1.5 = 4.4817
  for (uint32_t vocab : {201088u, 200014u}) {
    CandidateResult c;
    c.vocab_size = vocab;
    c.shared_rows = vocab;
    c.nll = nll_of({1.0, 3.0});  // mean 2: PPL e^2 = 7.3891
    c.positions = {position(0.003, 5, 5, 0.50, 0.52), position(0.001, 7, 7, 0.40, 0.41),
                   position(0.010, 9, 2, 0.30, 0.29), position(0.002, 1, 1, 0.60, 0.62)};
    result.candidates.push_back(c);
  }
  result.chunks_per_forward = 2;
  result.seconds = 2.0;
  result.forward_seconds = 1.5;
  result.statistics_seconds = 0.75;
  return result;
}

EvaluationReport hand_made_report() {
  const std::vector<RowSubject> models = {{"ref/hf", "safetensors hf", "cpu-f64"},
                                          {"q8.gguf", "GGUF q8.gguf", "cpu"},
                                          {"model.bin", "model.bin model.bin", "cpu"}};
  const EvaluatedText text{"text.txt", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1000, 90};
  return make_report(text, ChunkPlan{16, 2, 5}, hand_made_result(), models);
}

std::vector<std::string> keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> names;
  for (const auto& [key, value] : j.items()) names.push_back(key);
  return names;
}

TEST(EvalReport, JsonHoldsEveryFieldInItsPlace) {
  const auto j = report_json(hand_made_report());
  using Keys = std::vector<std::string>;
  EXPECT_EQ(keys(j), (Keys{"text", "chunking", "reference", "noise_floor", "candidates", "seconds", "forward_seconds",
                           "statistics_seconds", "tokens_per_second"}));
  EXPECT_TRUE(j["noise_floor"].empty());  // no floor in this run
  EXPECT_EQ(j["text"], nlohmann::ordered_json::parse(R"({"path": "text.txt", "bytes": 1000, "sha256":
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "tokens": 90})"));
  EXPECT_EQ(j["chunking"], nlohmann::ordered_json::parse(R"({"ctx": 16, "chunks": 2, "available_chunks": 5,
      "first_scored": 8, "scored_tokens": 14, "bos": false, "chunks_per_forward": 2})"));

  const auto& ref = j["reference"];
  EXPECT_EQ(keys(ref), (Keys{"model", "engine", "vocab_size", "perplexity", "perplexity_uncertainty", "mean_nll", "tokens"}));
  EXPECT_EQ(ref["model"], "ref/hf");
  EXPECT_EQ(ref["engine"], "cpu-f64");
  EXPECT_EQ(ref["vocab_size"], 201088);
  EXPECT_DOUBLE_EQ(ref["perplexity"].get<double>(), std::exp(1.5));
  EXPECT_DOUBLE_EQ(ref["perplexity_uncertainty"].get<double>(), std::exp(1.5) * 0.5);  // sd 0.5 of 2 values
  EXPECT_DOUBLE_EQ(ref["mean_nll"].get<double>(), 1.5);
  EXPECT_EQ(ref["tokens"], 2);

  ASSERT_EQ(j["candidates"].size(), 2u);
  const auto& c = j["candidates"][0];
  EXPECT_EQ(keys(c), (Keys{"model", "engine", "vocab_size", "shared_rows", "renormalized", "perplexity",
                           "perplexity_uncertainty", "mean_nll", "tokens", "chunks", "kl", "top1_agreement", "dp_mean",
                           "dp_rms", "within_noise_floor"}));
  EXPECT_TRUE(c["within_noise_floor"].is_null());  // no floor to be within
  EXPECT_EQ(keys(c["kl"]), (Keys{"mean", "median", "p99", "p99_9", "max", "max_at"}));
  EXPECT_EQ(c["model"], "q8.gguf");
  EXPECT_EQ(c["engine"], "cpu");
  EXPECT_EQ(c["vocab_size"], 201088);
  EXPECT_EQ(c["shared_rows"], 201088);
  EXPECT_EQ(c["renormalized"], false);
  EXPECT_DOUBLE_EQ(c["perplexity"].get<double>(), std::exp(2.0));
  EXPECT_DOUBLE_EQ(c["mean_nll"].get<double>(), 2.0);
  EXPECT_EQ(c["tokens"], 2);
  EXPECT_NEAR(c["kl"]["mean"].get<double>(), 0.004, 1e-12);
  EXPECT_NEAR(c["kl"]["median"].get<double>(), 0.0025, 1e-12);
  EXPECT_NEAR(c["kl"]["p99"].get<double>(), 0.00979, 1e-12);
  EXPECT_NEAR(c["kl"]["p99_9"].get<double>(), 0.009979, 1e-12);
  EXPECT_DOUBLE_EQ(c["kl"]["max"].get<double>(), 0.010);
  // The third position (index 2) of chunk 0, whose scored positions start at 8.
  EXPECT_EQ(c["kl"]["max_at"], nlohmann::ordered_json::parse(R"({"chunk": 0, "position": 10})"));
  EXPECT_DOUBLE_EQ(c["top1_agreement"].get<double>(), 0.75);
  EXPECT_NEAR(c["dp_mean"].get<double>(), 0.01, 1e-12);
  EXPECT_NEAR(c["dp_rms"].get<double>(), std::sqrt(0.001 / 4), 1e-12);
  // model.bin's vocabulary: compared on the rows both hold.
  EXPECT_EQ(j["candidates"][1]["model"], "model.bin");
  EXPECT_EQ(j["candidates"][1]["shared_rows"], 200014);
  EXPECT_EQ(j["candidates"][1]["renormalized"], true);

  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["forward_seconds"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["statistics_seconds"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["tokens_per_second"].get<double>(), 16.0);  // 2 chunks of 16 tokens in 2 s
}

TEST(EvalReport, SavedLogitsCloseTheJson) {
  auto report = hand_made_report();
  report.saved_logits = EvaluationReport::SavedLogits{"ref.logits", 2800000};
  const auto j = report_json(report);
  EXPECT_EQ(keys(j).back(), "saved_logits");
  EXPECT_EQ(j["saved_logits"], nlohmann::ordered_json::parse(R"({"path": "ref.logits", "bytes": 2800000})"));
}

TEST(EvalReport, TextHasTheTableCellsAndNotes) {
  auto report = hand_made_report();
  EXPECT_EQ(report_text(report),
            "text: text.txt (1000 bytes, sha256 0123456789abcdef...), 90 tokens (no BOS)\n"
            "chunks: 2 of 16 tokens (the text holds 5), each scored on positions 8..14: 14 scored tokens; 2 per forward\n"
            "reference: safetensors hf (cpu-f64): PPL = 4.4817 +/- 2.2408\n"
            "\n"
            "| candidate | engine | PPL | mean KL | median KL | p99 KL | p99.9 KL | max KL | max at | top-1 agree | mean dp | RMS dp |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            "| GGUF q8.gguf | cpu | 7.3891 | 4.000e-03 | 2.500e-03 | 9.790e-03 | 9.979e-03 | 1.000e-02 | 0:10 | 75.00% | +1.000e-02 | 1.581e-02 |\n"
            "| model.bin model.bin | cpu | 7.3891 | 4.000e-03 | 2.500e-03 | 9.790e-03 | 9.979e-03 | 1.000e-02 | 0:10 | 75.00% | +1.000e-02 | 1.581e-02 |\n"
            "\n"
            "KL = KL(reference || candidate) in nats per token; max at = chunk:position of the max KL; dp = P_candidate(t) - "
            "P_reference(t) for the reference's top token t.\n"
            "note: GGUF q8.gguf: one position, 0:10, holds 62% of the KL's sum (KL 1.000e-02 there); gptoss-run MODEL --text "
            "text.txt --ctx 16 --chunk 0 --through 10 with --parity or --engines shows the stages where it begins\n"
            "note: model.bin model.bin: one position, 0:10, holds 62% of the KL's sum (KL 1.000e-02 there); gptoss-run MODEL "
            "--text text.txt --ctx 16 --chunk 0 --through 10 with --parity or --engines shows the stages where it begins\n"
            "note: model.bin model.bin has 200014 vocabulary rows, the reference 201088: compared on rows 0..200013, both "
            "distributions renormalized over them (its PPL is over its own 200014 rows)\n");
  EXPECT_EQ(report_timing(report), "32 tokens in 2.00 s: 16.0 tokens/s (forwards 1.50 s, statistics 0.75 s)\n");

  // The reference read from a file, or saved to one: a note each.
  report.rows.clear();
  report.reference.subject.engine = "file ref.logits";
  report.against_logits = "ref.logits";
  EXPECT_EQ(report_text(report),
            "text: text.txt (1000 bytes, sha256 0123456789abcdef...), 90 tokens (no BOS)\n"
            "chunks: 2 of 16 tokens (the text holds 5), each scored on positions 8..14: 14 scored tokens; 2 per forward\n"
            "reference: safetensors hf (file ref.logits): PPL = 4.4817 +/- 2.2408\n"
            "note: the reference's distributions come from ref.logits (f16 log-probabilities: KL to ~1e-6, see "
            "docs/eval.md)\n");
  report.against_logits.reset();
  report.saved_logits = EvaluationReport::SavedLogits{"ref.logits", 2800000};
  const auto text = report_text(report);
  EXPECT_NE(text.find("\nsaved the reference's distributions to ref.logits (2.8 MB, 200.0 KB per scored token)\n"),
            std::string::npos)
      << text;
}

// One position is called out where it holds a tenth or more of a row's KL sum (the noise floor by
// that name), and not where the KL is spread: 14 positions of equal KL put 7% in each.
TEST(EvalReport, OnePositionThatHoldsMuchOfTheKlIsNamed) {
  EvaluationResult result = hand_made_result();
  result.candidates.pop_back();
  result.floor = result.candidates[0];  // 0.010 of 0.016 at its third position
  result.candidates[0].positions.assign(14, position(0.001, 5, 5, 0.5, 0.5));
  const std::vector<RowSubject> models = {{"ref/hf", "safetensors hf", "cpu-f64"}, {"q8.gguf", "GGUF q8.gguf", "cpu"}};
  const EvaluatedText text{"text.txt", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1000, 90};
  const auto report = make_report(text, ChunkPlan{16, 2, 5}, result, models, RowSubject{"ref/hf", "safetensors hf", "vulkan"});
  const auto out = report_text(report);
  EXPECT_NE(out.find("note: the noise floor: one position, 0:10, holds 62% of the KL's sum (KL 1.000e-02 there); "
                     "gptoss-run MODEL --text text.txt --ctx 16 --chunk 0 --through 10"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("note: GGUF q8.gguf: one position"), std::string::npos) << out;
  EXPECT_EQ(report_json(report)["candidates"][0]["kl"]["max_at"], nlohmann::ordered_json::parse(R"({"chunk": 0, "position": 8})"));
}

// The JSON and the table show the same fields: every column is a JSON member too, but the model's
// label (the JSON names the model by its path).
TEST(EvalReport, EveryColumnIsAJsonMemberButTheLabel) {
  for (const auto& f : report_fields()) {
    if (!f.column.empty() && f.column != "candidate") {
      EXPECT_FALSE(f.json.empty()) << f.column;
    }
  }
}

// ---- the text's tokens: the tokenizer every model agrees on ----

TEST(TextTokens, TheTokenizerEveryModelAgreesOn) {
  const auto model = load_model(test::preset_a_checkpoint() / "hf");
  const TokenizerData& tokenizer = *model.tokenizer;
  const std::string text = "The GNU General Public License <|start|> is a free license.";
  const std::vector<std::string> names = {"a", "b", "c"};
  const std::vector<const TokenizerData*> agreeing = {nullptr, &tokenizer, &tokenizer};
  const auto t = tokenize_text(agreeing, names, text);
  EXPECT_EQ(t.ids, Tokenizer(tokenizer).encode(text, /*allow_special=*/false));
  EXPECT_EQ(t.tokenizer_digest, tokenizer_digest(tokenizer));

  TokenizerData other = tokenizer;
  other.pretokenizer_regex += "|x";
  const std::vector<const TokenizerData*> disagreeing = {nullptr, &tokenizer, &other};
  try {
    tokenize_text(disagreeing, names, text);
    FAIL() << "accepted two tokenizers";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("c: its tokenizer differs from b's", 0), 0u) << e.what();
  }
  const std::vector<const TokenizerData*> none = {nullptr, nullptr, nullptr};
  EXPECT_THROW(tokenize_text(none, names, text), std::invalid_argument);
}

// ---- the reference logits file's compatibility with this run ----

// model digest, source, vocabulary, tokenizer digest, text SHA-256 and size, ctx, chunks, engine,
// device, ids.
ReferenceLogitsHeader run_of_preset_a() {
  return {"digest-of-the-model", "hf", 201088, "digest-of-the-tokenizer", "sha-of-the-text", 1000, 16, 2, "cpu",
          "CPU (f32)", std::vector<uint32_t>(32, 7)};
}

// The field named by require_compatible's refusal ("" when it accepts).
std::string refused_field(const ReferenceLogitsHeader& file, const ReferenceLogitsHeader& run) {
  try {
    require_compatible("ref.logits", file, run);
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), "ref.logits");
    EXPECT_NE(std::string(e.what()).find("ref.logits: " + e.field()), std::string::npos) << e.what();
    return e.field();
  }
  return "";
}

TEST(LogitsFileCompatibility, EachRuleRefusesWithItsField) {
  const auto run = run_of_preset_a();
  EXPECT_EQ(refused_field(run, run), "");
  auto differs = [&](auto change) {
    auto file = run;
    change(file);
    return refused_field(file, run);
  };
  EXPECT_EQ(differs([](auto& h) { h.text_sha256 = "another text"; }), "text.sha256");
  EXPECT_EQ(differs([](auto& h) { h.tokenizer_digest = "another tokenizer"; }), "tokenizer.digest");
  EXPECT_EQ(differs([](auto& h) { h.ctx = 32; }), "chunking.ctx");
  EXPECT_EQ(differs([](auto& h) { h.chunks = 3; }), "chunking.chunks");
  EXPECT_EQ(differs([](auto& h) { h.vocab_size = 200014; }), "model.vocab_size");
  EXPECT_EQ(differs([](auto& h) { h.tokens[31] = 8; }), "tokens");
  EXPECT_EQ(differs([](auto& h) { h.model_digest = "another model"; }), "model.digest");
  // What computed the distributions, where the model was loaded from and the text's size (its
  // SHA-256 decides) do not make them another reference's.
  EXPECT_EQ(differs([](auto& h) { h.engine = "vulkan"; h.device = "a GPU"; h.model_source = "elsewhere"; h.text_bytes = 1; }),
            "");
  // The first rule that fails names the refusal: the text before the model.
  EXPECT_EQ(differs([](auto& h) { h.text_sha256 = "another text"; h.model_digest = "another model"; }), "text.sha256");
}

TEST(LogitsFileCompatibility, RefusalSaysBothValues) {
  auto file = run_of_preset_a();
  file.ctx = 32;
  try {
    require_compatible("ref.logits", file, run_of_preset_a());
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.message(), "the file holds the reference's distributions for --ctx 32, this run has 16: refusing to "
                           "compare against it");
  }
}

TEST(LogitsFileCompatibility, RunHeaderDescribesTheReferenceTextAndChunks) {
  const auto model = load_model(test::preset_a_checkpoint() / "hf");
  const std::string text = "some text";
  const ChunkPlan plan{16, 2, 3};
  const std::vector<uint32_t> tokens(32, 5);
  const auto h = run_header(model, "path/hf", "tok", text, plan, tokens);
  EXPECT_EQ(h.model_digest, model_digest(canonical_digests(model)));
  EXPECT_EQ(h.model_source, "path/hf");
  EXPECT_EQ(h.vocab_size, model.config.vocab_size);
  EXPECT_EQ(h.tokenizer_digest, "tok");
  EXPECT_EQ(h.text_sha256, sha256_of({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  EXPECT_EQ(h.text_bytes, text.size());
  EXPECT_EQ(h.ctx, 16u);
  EXPECT_EQ(h.chunks, 2u);
  EXPECT_EQ(h.tokens, tokens);
  EXPECT_EQ(h.engine, "");  // what computed the distributions is the saving run's to say
}

}  // namespace
}  // namespace gptoss::eval
