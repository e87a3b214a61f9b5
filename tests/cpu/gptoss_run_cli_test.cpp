// gptoss-run end to end on preset a: greedy generation from --prompt-tokens, the --dump-logits
// file format, sampling determinism, and errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <regex>

#include "convert/model_io.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/cpu/golden_refs.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

std::string gptoss_run() { return (tools_dir() / "gptoss-run").string(); }

std::string join_ids(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// A --dump-logits file: raw little-endian f32 (this host is little-endian, as the test machines).
std::vector<float> read_logits_file(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  std::vector<float> logits(bytes.size() / sizeof(float));
  std::memcpy(logits.data(), bytes.data(), logits.size() * sizeof(float));
  EXPECT_EQ(bytes.size() % sizeof(float), 0u);
  return logits;
}

nlohmann::json run_json(const std::string& arguments) {
  const auto result = run_command("(" + gptoss_run() + " " + arguments + " --json 2>/dev/null)");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return nlohmann::json::parse(result.output);
}

TEST(GptossRunCli, GreedyFromPromptTokensMatchesGoldenContinuation) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto model = (preset_a_checkpoint() / "hf").string();
  for (const std::string prompt : {"four", "harmony"}) {
    const auto j = run_json(model + " --prompt-tokens " + join_ids(refs.ids(prompt)) + " --max-tokens 12 --no-default-stops");
    const auto golden = refs.i32(prompt + ".greedy12");
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), golden) << prompt;  // all golden margins > 3e-3
    EXPECT_EQ(j["stop_reason"], "max_tokens");
    EXPECT_GT(j["prompt_tokens_per_second"].get<double>(), 0.0);
    EXPECT_GT(j["generation_tokens_per_second"].get<double>(), 0.0);
  }
}

TEST(GptossRunCli, DumpLogitsWritesEveryPromptPositionPositionMajor) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  TempDir dir;
  const auto ids = refs.ids("long");
  const auto path = dir / "logits.f32";
  const auto j = run_json((preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + join_ids(ids) +
                          " --max-tokens 0 --dump-logits " + path.string());
  EXPECT_TRUE(j["tokens"].empty());
  const auto logits = read_logits_file(path);
  const size_t vocab = 201088;
  ASSERT_EQ(logits.size(), ids.size() * vocab);
  const auto probe_ids = refs.i32("probe_ids");
  const auto probe = refs.f32("long.logits_probe");
  double worst = 0;
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t n = 0; n < probe_ids.size(); ++n)
      worst = test::worse(worst, std::abs(logits[t * vocab + static_cast<size_t>(probe_ids[n])] - probe[t * probe_ids.size() + n]));
  EXPECT_LE(worst, 1e-3f);
  const auto last = refs.f32("long.logits_last");
  EXPECT_LE(max_abs_diff(logits.data() + (ids.size() - 1) * vocab, last.data(), vocab), 1e-3f);
}

TEST(GptossRunCli, SeededSamplingRepeatsAndStopsAtStopTokens) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto base = (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + join_ids(refs.ids("four")) +
                    " --max-tokens 8 --temperature 0.8 --top-k 50 --top-p 0.95 --min-p 0.01";
  const auto a = run_json(base + " --seed 7");
  const auto b = run_json(base + " --seed 7");
  EXPECT_EQ(a["tokens"], b["tokens"]);
  ASSERT_EQ(a["tokens"].size(), 8u);
  // Making the third sampled token a stop token ends generation right there, token included.
  const auto third = a["tokens"][2].get<uint32_t>();
  const auto stopped = run_json(base + " --seed 7 --stop-token " + std::to_string(third));
  EXPECT_EQ(stopped["stop_reason"], "stop_token");
  const auto tokens = stopped["tokens"].get<std::vector<uint32_t>>();
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens.back(), third);
  EXPECT_LE(tokens.size(), 3u);
}

TEST(GptossRunCli, TextPromptsGoThroughTheTokenizerAndHarmony) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto model = (preset_a_checkpoint() / "hf").string();
  // The golden "harmony" prompt is exactly a user message rendered for the assistant's turn.
  const auto chat = run_json(model + " -p 'What is 2+2?' --no-system --max-tokens 12 --no-default-stops");
  EXPECT_EQ(chat["prompt_tokens"].get<std::vector<uint32_t>>(), refs.ids("harmony"));
  EXPECT_EQ(chat["tokens"].get<std::vector<int32_t>>(), refs.i32("harmony.greedy12"));
  EXPECT_TRUE(chat.contains("final"));
  // --no-harmony encodes the text as is (refs-a.json tokenize golden).
  const auto plain = run_json(model + " -p 'The capital of France is' --no-harmony --max-tokens 0");
  EXPECT_EQ(plain["prompt_tokens"].get<std::vector<uint32_t>>(), (std::vector<uint32_t>{976, 9029, 328, 10128, 382}));
  // With a system message the prompt starts with <|start|>system<|message|>.
  const auto with_system = run_json(model + " -p Hi --max-tokens 0");
  const auto ids = with_system["prompt_tokens"].get<std::vector<uint32_t>>();
  ASSERT_GT(ids.size(), 3u);
  EXPECT_EQ(ids[0], 200006u);  // <|start|>
  EXPECT_EQ(ids[2], 200008u);  // <|message|>
  EXPECT_EQ(ids.back(), 173781u);  // "assistant" after the last <|start|>
}

// Runs gptoss-run without --json: stdout (the streamed text) and stderr apart.
struct StreamedRun {
  int exit_code;
  std::string out, err;
};
StreamedRun run_streamed(const std::string& arguments) {
  TempDir dir;
  const auto out = dir / "stdout", err = dir / "stderr";
  const auto result = run_command("(" + gptoss_run() + " " + arguments + " >" + out.string() + " 2>" + err.string() + ")");
  const auto text = [](const std::filesystem::path& path) {
    const auto bytes = read_file_bytes(path);
    return std::string(bytes.begin(), bytes.end());
  };
  return {result.exit_code, text(out), text(err)};
}

TEST(GptossRunCli, StreamsTheDecodedTokensToStdoutAndTheSpeedsToStderr) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto base = (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + join_ids(refs.ids("four")) +
                    " --max-tokens 12 --no-default-stops";
  const auto j = run_json(base);
  const auto streamed = run_streamed(base);
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out, j["text"].get<std::string>() + "\n");
  EXPECT_TRUE(std::regex_search(streamed.err, std::regex(R"(prompt: 4 tokens, [0-9.]+ tokens/s; generation: 12 tokens, )"
                                                         R"([0-9.]+ tokens/s \(stop: max_tokens\))")))
      << streamed.err;
}

TEST(GptossRunCli, RawShowsEveryTokenHarmonyTheFinalChannel) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const auto base = (preset_a_checkpoint() / "hf").string() + " -p 'What is 2+2?' --no-system --max-tokens 12 --no-default-stops";
  const auto j = run_json(base);
  const auto raw = run_streamed(base + " --raw");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(raw.out, j["text"].get<std::string>() + "\n");
  // preset a's random weights do not speak harmony: the parser places nothing in a channel, says
  // so on stderr, and the final-channel view stays empty (the channel logic itself is tested in
  // token_display_test.cpp).
  const auto harmony = run_streamed(base);
  ASSERT_EQ(harmony.exit_code, 0) << harmony.err;
  EXPECT_EQ(harmony.out, j["final"].get<std::string>() + "\n");
  EXPECT_NE(harmony.err.find("harmony: 1 problems parsing the output"), std::string::npos) << harmony.err;
  const auto reasoning = run_streamed(base + " --show-reasoning");
  ASSERT_EQ(reasoning.exit_code, 0) << reasoning.err;
  EXPECT_NE(reasoning.out.find(j["analysis"].get<std::string>()), std::string::npos);
}

TEST(GptossRunCli, HarmonyOptionsShapeTheSystemAndDeveloperMessages) {
  TOKENIZER_OR_SKIP();
  const auto model_path = (preset_a_checkpoint() / "hf").string();
  const auto j = run_json(model_path +
                          " -p Hi --reasoning-effort high --date 2026-11-22 --developer 'Answer briefly.' --max-tokens 0");
  const auto model = load_model(model_path);
  ASSERT_TRUE(model.tokenizer);
  const Tokenizer tokenizer(*model.tokenizer);
  const auto text = tokenizer.decode(j["prompt_tokens"].get<std::vector<uint32_t>>());
  EXPECT_TRUE(text.starts_with("<|start|>system<|message|>")) << text;
  EXPECT_NE(text.find("Current date: 2026-11-22"), std::string::npos) << text;
  EXPECT_NE(text.find("Reasoning: high"), std::string::npos) << text;
  EXPECT_NE(text.find("<|start|>developer<|message|># Instructions\n\nAnswer briefly.<|end|>"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant")) << text;
  const auto low = run_json(model_path + " -p Hi --reasoning-effort low --max-tokens 0");
  EXPECT_NE(tokenizer.decode(low["prompt_tokens"].get<std::vector<uint32_t>>()).find("Reasoning: low"), std::string::npos);
}

TEST(GptossRunCli, HelpDocumentsTheLogitsFileAndEngines) {
  const auto result = run_command(gptoss_run() + " --help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* text : {"--dump-logits", "little-endian f32", "position-major", "prompt_tokens x vocab", "cpu-f64"})
    EXPECT_NE(result.output.find(text), std::string::npos) << text;
}

// The f64 engine through the CLI: its prompt logits are the goldens' within 1e-3 too.
TEST(GptossRunCli, CpuF64EngineDumpsGoldenLogits) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  TempDir dir;
  const auto ids = refs.ids("long");
  const auto path = dir / "logits.f32";
  const auto j = run_json((preset_a_checkpoint() / "hf").string() + " --engine cpu-f64 --prompt-tokens " +
                          join_ids(ids) + " --max-tokens 1 --dump-logits " + path.string());
  EXPECT_EQ(j["engine"], "cpu-f64");
  const auto logits = read_logits_file(path);
  const size_t vocab = 201088;
  ASSERT_EQ(logits.size(), ids.size() * vocab);
  EXPECT_LE(max_abs_diff(logits.data() + (ids.size() - 1) * vocab, refs.f32("long.logits_last").data(), vocab), 1e-3f);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), std::vector<int32_t>{refs.i32("long.greedy12")[0]});
}

TEST(GptossRunCli, RejectsMalformedPromptTokens) {
  const auto model = (preset_a_checkpoint() / "hf").string();
  auto result = run_command(gptoss_run() + " " + model + " --prompt-tokens 1,x,3");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("\"x\" is not a token id"), std::string::npos) << result.output;
  result = run_command(gptoss_run() + " " + model + " --prompt-tokens 1,999999999");
  EXPECT_EQ(result.exit_code, 2);
  // Engine::forward's check, which names the id and its position.
  EXPECT_NE(result.output.find("gptoss-run: token id 999999999 (position 1) is outside the vocabulary of 201088"),
            std::string::npos)
      << result.output;
}

// llama.cpp's spellings (-m, -n, --temp, -s) are the same options as ours.
TEST(GptossRunCli, LlamaCppSpellingsAreAliases) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto model = (preset_a_checkpoint() / "hf").string();
  const auto ids = join_ids(refs.ids("four"));
  const auto ours = run_json(model + " --prompt-tokens " + ids + " --max-tokens 5 --temperature 0.9 --seed 11 --top-k 40 --no-default-stops");
  const auto theirs = run_json("-m " + model + " --prompt-tokens " + ids + " -n 5 --temp 0.9 -s 11 --top-k 40 --no-default-stops");
  EXPECT_EQ(ours["tokens"].size(), 5u);
  EXPECT_EQ(ours["tokens"], theirs["tokens"]);
}

// Every option the chosen mode would ignore is an error (exit 2) naming the option and why, and
// nothing runs.
TEST(GptossRunCli, OptionsTheModeCannotHonourAreRefused) {
  const auto model = (preset_a_checkpoint() / "hf").string();
  struct Case {
    std::string arguments, option, reason;
  };
  const std::vector<Case> cases = {
      {" --prompt-tokens 1,2 --top-k 5", "--top-k", "has no effect under greedy decoding"},
      {" --prompt-tokens 1,2 --seed 3", "--seed", "has no effect under greedy decoding"},
      {" --prompt-tokens 1,2 --max-tokens 0 --temperature 0.5", "--temperature", "has no effect with --max-tokens 0"},
      {" --prompt-tokens 1,2 --show-reasoning", "--show-reasoning", "applies to -p TEXT"},
      {" --prompt-tokens 1,2 --reasoning-effort high", "--reasoning-effort", "not to --prompt-tokens"},
      {" -p Hi --no-harmony --developer x", "--developer", "--no-harmony encodes -p TEXT as is"},
      {" -p Hi --raw --show-reasoning", "--show-reasoning", "is implied by --raw"},
      {" --prompt-tokens 1,2 --device 0", "--device", "the cpu engine runs on the CPU"},
      {" --prompt-tokens 1,2 --parity " + model + " --max-tokens 3", "--max-tokens", "does not apply to --parity"},
      {" --prompt-tokens 1,2 --parity " + model + " --engine vulkan", "--engine", "does not apply to --parity"},
      {" --prompt-tokens 1,2 --parity " + model + " --device 0", "--device", "add vulkan to --engines"},
      {" --prompt-tokens 1,2 --refs-prompt hi", "--refs-prompt", "needs --refs"},
      {" --list-devices", "model", "cannot be combined with --list-devices"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.arguments);
    const auto result = run_command(gptoss_run() + " " + model + c.arguments);
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find(c.option), std::string::npos) << result.output;
    EXPECT_NE(result.output.find(c.reason), std::string::npos) << result.output;
  }
  const auto no_model = run_command(gptoss_run() + " --prompt-tokens 1");
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.output.find("give a model"), std::string::npos) << no_model.output;
}

}  // namespace
}  // namespace gptoss::test
