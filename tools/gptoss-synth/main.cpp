// gptoss-synth: writes a deterministic GPT-OSS checkpoint (the recipe of
// shared/goldens/make_fixture.py) in the Hugging Face layout (OUT/hf) and the OpenAI layout
// (OUT/original).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "formats/core/atomic_file.h"
#include "tools/common/progress_bar.h"
#include "tools/common/tool_main.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a deterministic synthetic GPT-OSS checkpoint (HF and original layouts)"};
  std::string out;
  std::string preset = "a";
  std::string tokenizer;
  std::string layouts = "both";
  uint64_t max_shard = 0;
  app.add_option("out", out, "output folder; gets hf/ and original/")->required();
  app.add_option("--preset", preset, "a (the golden fixture), 20b or 120b")->check(CLI::IsMember({"a", "20b", "120b"}));
  app.add_option("--tokenizer", tokenizer, "tokenizer.json to copy into hf/");
  app.add_option("--layouts", layouts, "hf, original or both")->check(CLI::IsMember({"hf", "original", "both"}));
  app.add_option("--max-shard-size", max_shard, "shard the safetensors at this many bytes (0 = one file)");
  uint32_t layers = 0, vocab = 0;
  app.add_option("--layers", layers, "override the preset's number of layers (e.g. 4 layers of 20b width)")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--vocab", vocab, "override the preset's vocabulary size (below 200003 the config has no special ids)")
      ->check(CLI::Range(1u, 1u << 24));
  // The widths, for shapes no preset has (e.g. rows of 256, which every ggml block type divides).
  uint32_t hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0, experts = 0, experts_per_token = 0;
  app.add_option("--hidden", hidden, "override hidden_size (a multiple of 32)")->check(CLI::Range(32u, 1u << 16));
  app.add_option("--intermediate", intermediate, "override intermediate_size (a multiple of 32)")->check(CLI::Range(32u, 1u << 16));
  app.add_option("--heads", heads, "override num_attention_heads")->check(CLI::Range(1u, 1024u));
  app.add_option("--kv-heads", kv_heads, "override num_key_value_heads")->check(CLI::Range(1u, 1024u));
  app.add_option("--head-dim", head_dim, "override head_dim (even)")->check(CLI::Range(2u, 1024u));
  app.add_option("--experts", experts, "override num_local_experts")->check(CLI::Range(1u, 1024u));
  app.add_option("--experts-per-token", experts_per_token, "override num_experts_per_tok")->check(CLI::Range(1u, 1024u));
  unsigned threads = 0;
  app.add_option("-j,--threads", threads, "threads generating the tensors (default: one per core); any -j writes the same bytes");
  CLI11_PARSE(app, argc, argv);
  gptoss::remove_temp_files_on_signals();  // Ctrl-C leaves no temp file beside the outputs
  return gptoss::report_errors("gptoss-synth", [&] {
    namespace fs = std::filesystem;
    if (!tokenizer.empty() && layouts == "original")
      throw std::invalid_argument("--tokenizer goes into hf/, and --layouts original writes no hf/ folder");
    gptoss::SynthPreset shape = gptoss::synth_preset(preset);
    for (auto [value, field] : {std::pair{layers, &shape.layers}, {vocab, &shape.vocab}, {hidden, &shape.hidden},
                                {intermediate, &shape.inter}, {heads, &shape.heads}, {kv_heads, &shape.kv},
                                {head_dim, &shape.head_dim}, {experts, &shape.experts}, {experts_per_token, &shape.topk}})
      if (value) *field = value;
    const auto model = gptoss::synthesize_model(shape);
    for (auto layout : {gptoss::CheckpointLayout::HuggingFace, gptoss::CheckpointLayout::Original}) {
      const bool hf = layout == gptoss::CheckpointLayout::HuggingFace;
      if (layouts != "both" && layouts != (hf ? "hf" : "original")) continue;
      const fs::path dir = fs::path(out) / (hf ? "hf" : "original");
      gptoss::ProgressBar bar(hf ? "hf      " : "original", gptoss::stderr_is_terminal());
      uint64_t total = 0, finished = 0, current_done = 0;
      std::string current;
      for (const auto& t : model.tensors) total += t.source->size();
      gptoss::SafetensorsWriteOptions options;
      options.layout = layout;
      options.max_shard_bytes = max_shard;
      options.threads = threads;
      options.progress = [&](const std::string& item, uint64_t done, uint64_t) {
        if (item != current) {
          finished += current_done;
          current = item;
        }
        current_done = done;
        bar.update(finished + done, total, item);
      };
      gptoss::write_safetensors_model(model, dir, options);
      bar.finish();
      if (hf && !tokenizer.empty()) fs::copy_file(tokenizer, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
      std::cout << "wrote " << dir.string() << "\n";
    }
    return 0;
  });
}
