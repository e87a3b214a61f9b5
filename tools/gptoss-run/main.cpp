// gptoss-run: generate with a GPT-OSS model in any format, on the CPU reference engine.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/sampler/sampler.h"
#include "tools/gptoss-run/generation.h"

namespace {

constexpr const char* kDescription =
    "Run a GPT-OSS model (safetensors folder, .gguf or model.bin) on the CPU reference engine.\n"
    "Generated tokens stream to stdout; prompt and generation tokens/s go to stderr at the end.\n"
    "\n"
    "--dump-logits FILE writes the logits of every PROMPT position as raw little-endian f32,\n"
    "position-major: prompt_tokens x vocab values, row t holding the logits that predict token\n"
    "t + 1 (no header; vocab is the model's vocab_size, printed on stderr).";

// The raw bytes of a token for display: the tokenizer data's bytes when the model carries a
// tokenizer, else the id in brackets.
std::string token_text(const gptoss::TokenizerData* tokenizer, uint32_t id) {
  if (tokenizer && id < tokenizer->size()) return tokenizer->tokens[id];
  return "[" + std::to_string(id) + "]";
}

void write_logits(const std::filesystem::path& path, const std::vector<float>& logits) {
  gptoss::AtomicFileWriter out(path);
  for (float v : logits) out.write_f32(v);  // little-endian whatever the host
  out.commit();
}

const char* stop_reason_name(gptoss::sampling::StopReason reason) {
  switch (reason) {
    case gptoss::sampling::StopReason::StopToken: return "stop_token";
    case gptoss::sampling::StopReason::MaxTokens: return "max_tokens";
    case gptoss::sampling::StopReason::None: break;
  }
  return "none";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  std::string model_path, prompt_text, prompt_tokens, dump_logits, engine_name = "cpu";
  uint64_t max_tokens = 128;
  gptoss::sampling::SamplingParams sampling;
  std::vector<uint32_t> extra_stops;
  bool json_output = false, no_default_stops = false, no_harmony = false;
  app.add_option("model", model_path, "checkpoint folder, .safetensors, .gguf or model.bin")->required();
  auto* text_option = app.add_option("-p,--prompt", prompt_text, "prompt text (needs the tokenizer)");
  app.add_option("--prompt-tokens", prompt_tokens, "prompt as token ids: ID,ID,...")->excludes(text_option);
  app.add_option("--max-tokens", max_tokens, "tokens to generate at most (0: prompt only)")->capture_default_str();
  app.add_option("--temperature", sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", sampling.top_k, "keep the K most likely tokens (0 = off)")->capture_default_str();
  app.add_option("--top-p", sampling.top_p, "nucleus: smallest set with probability mass >= P (1 = off)")->capture_default_str();
  app.add_option("--min-p", sampling.min_p, "keep tokens with p >= M * p_max (0 = off)")->capture_default_str();
  app.add_option("--seed", sampling.seed, "seed of the sampling generator")->capture_default_str();
  app.add_option("--stop-token", extra_stops, "extra stop token id (repeatable)");
  app.add_flag("--no-default-stops", no_default_stops, "do not stop at EOS, <|return|> or <|call|>");
  app.add_option("--dump-logits", dump_logits, "write every prompt position's logits (see above)");
  app.add_flag("--json", json_output, "print one JSON object at the end instead of streaming text");
  app.add_flag("--no-harmony", no_harmony, "plain completion: do not wrap -p text in the harmony chat format");
  app.add_option("--engine", engine_name, "cpu (the Vulkan engine is not built yet)")
      ->check(CLI::IsMember({"cpu"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    if (prompt_tokens.empty()) {
      // Text prompts need the BPE tokenizer (and harmony rendering unless --no-harmony); neither
      // has landed in this build yet.
      std::cerr << "gptoss-run: "
                << (prompt_text.empty() ? "give a prompt with --prompt-tokens ID,ID,..."
                                        : "text prompts (-p) need the tokenizer, which is not in this build yet; "
                                          "use --prompt-tokens ID,ID,...")
                << "\n";
      return 2;
    }
    const auto prompt = gptoss::run::parse_token_list(prompt_tokens);
    const auto model = gptoss::load_model(model_path);
    const gptoss::TokenizerData* tokenizer = model.tokenizer.get();
    gptoss::cpu::CpuEngine engine(model);
    for (uint32_t id : prompt)
      if (id >= engine.vocab_size())
        throw std::invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary of " +
                                    std::to_string(engine.vocab_size()));

    gptoss::run::GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = max_tokens;
    request.stop.stop_tokens = extra_stops;
    if (!no_default_stops) {
      if (model.config.eos_token_id) request.stop.stop_tokens.push_back(*model.config.eos_token_id);
      if (tokenizer) {
        if (tokenizer->eos_id) request.stop.stop_tokens.push_back(*tokenizer->eos_id);
        for (const char* special : {"<|return|>", "<|call|>"})
          if (auto id = tokenizer->find_special(special)) request.stop.stop_tokens.push_back(*id);
      }
    }
    std::vector<float> prompt_logits;
    if (!dump_logits.empty()) request.prompt_logits = &prompt_logits;
    if (!json_output) {
      request.on_token = [&](uint32_t id) {
        const auto text = token_text(tokenizer, id);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      };
    }
    gptoss::sampling::Sampler sampler(sampling);
    const auto result = gptoss::run::generate(engine, sampler, request);
    if (!dump_logits.empty()) write_logits(dump_logits, prompt_logits);

    const double prompt_rate = static_cast<double>(prompt.size()) / result.prompt_seconds;
    const double generation_rate =
        result.tokens.empty() ? 0.0 : static_cast<double>(result.tokens.size()) / result.generation_seconds;
    if (json_output) {
      std::string text;
      for (uint32_t id : result.tokens) text += token_text(tokenizer, id);
      nlohmann::ordered_json j;
      j["engine"] = engine_name;
      j["vocab_size"] = engine.vocab_size();
      j["prompt_tokens"] = prompt;
      j["tokens"] = result.tokens;
      j["text"] = text;
      j["stop_reason"] = stop_reason_name(result.stop);
      j["prompt_seconds"] = result.prompt_seconds;
      j["generation_seconds"] = result.generation_seconds;
      j["prompt_tokens_per_second"] = prompt_rate;
      j["generation_tokens_per_second"] = generation_rate;
      if (!dump_logits.empty()) j["dump_logits"] = dump_logits;
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::printf("\n");
      std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s; generation: %zu tokens, %.1f tokens/s (stop: %s)\n",
                   prompt.size(), prompt_rate, result.tokens.size(), generation_rate, stop_reason_name(result.stop));
      if (!dump_logits.empty())
        std::fprintf(stderr, "wrote %zu x %u logits to %s\n", prompt.size(), engine.vocab_size(), dump_logits.c_str());
    }
  } catch (const std::exception& e) {
    std::cerr << "gptoss-run: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
