// gptoss-convert: any-to-any conversion between safetensors (HF or original layout), GGUF and
// model.bin, through the canonical GPT-OSS model.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "formats/core/dtype.h"
#include "tools/common/progress_bar.h"
#include "tools/common/tool_main.h"

int main(int argc, char** argv) {
  CLI::App app{"Convert GPT-OSS models between safetensors (HF / original), GGUF and model.bin.\n"
               "The output format follows the output name: *.gguf, *.bin (Metal model.bin), else a\n"
               "safetensors checkpoint folder. Outputs appear only when complete."};
  std::string input, output, layout, dense;
  uint64_t max_shard = 0;
  bool quiet = false, verbose = false;
  app.add_option("input", input, "checkpoint folder, .safetensors, .gguf or model.bin")->required();
  app.add_option("output", output, "output folder, .gguf or .bin")->required();
  app.add_option("--layout", layout, "safetensors output layout: hf (default) or original")->check(CLI::IsMember({"hf", "original"}));
  app.add_option("--dense", dense, "dense tensor type: bf16 (default), f16, f32 or q8_0 (GGUF); bf16, f16 or f32 (safetensors); model.bin is bf16")
      ->check(CLI::IsMember({"bf16", "f16", "f32", "q8_0"}));
  std::string mix;
  app.add_option("--mix", mix,
                 "GGUF: write llama-quantize's mix (no imatrix) of the GGUF --dense gives, in one pass: "
                 "q4_k_m, q5_k_m, q6_k, q8_0 or mxfp4 (llama-quantize's MXFP4_MOE)")
      ->check(CLI::IsMember(gptoss::gguf_mix_names(), CLI::ignore_case));
  // Sizes as llama.cpp's gguf-split and Hugging Face take them: 5G / 5GB = 5e9 bytes, 500M = 5e8,
  // 2GiB = 2^31; a bare number is bytes.
  app.add_option("--max-shard-size,--split-max-size", max_shard,
                 "split the output at this many bytes of tensor data per file (e.g. 5G, 500M, 2GiB)")
      ->transform(CLI::AsSizeValue(true));
  unsigned threads = 0;
  app.add_option("-j,--threads", threads, "threads producing the output (default: one per core); any -j writes the same bytes");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  app.add_flag("-v,--verbose", verbose, "print every lossy-step note (default: the first few and a count)");
  CLI11_PARSE(app, argc, argv);
  gptoss::remove_temp_files_on_signals();  // Ctrl-C leaves no temp file beside the outputs
  return gptoss::report_errors("gptoss-convert", [&] {
    gptoss::WriteOptions options;
    if (!layout.empty())
      options.layout = layout == "original" ? gptoss::CheckpointLayout::Original : gptoss::CheckpointLayout::HuggingFace;
    if (!dense.empty()) options.dense_dtype = gptoss::dtype_from_name(dense);
    if (!mix.empty()) options.mix = gptoss::gguf_mix_from_name(mix);
    options.max_shard_bytes = max_shard;
    options.threads = threads;
    gptoss::check_write_options(gptoss::output_format_for(output), options);  // before reading anything
    const auto model = gptoss::load_model(input);
    std::cerr << "read " << model.source_description << ": " << model.tensors.size() << " tensors, "
              << model.config.num_layers << " layers, " << model.config.num_experts << " experts\n";
    for (const auto& n : model.notes) std::cerr << "note: " << n << "\n";
    gptoss::ProgressBar bar("converting", !quiet && gptoss::stderr_is_terminal());
    options.progress = [&](const gptoss::ProgressEvent& e) { bar.update(e.done_bytes, e.total_bytes, e.item); };
    const auto notes = gptoss::write_model(model, output, options);
    bar.finish();
    // A Q8_0 conversion has a note per quantized tensor: show a few and the count unless -v.
    const size_t shown = verbose ? notes.size() : std::min<size_t>(notes.size(), 4);
    for (size_t i = 0; i < shown; ++i) std::cerr << "lossy: " << notes[i] << "\n";
    if (shown < notes.size())
      std::cerr << "lossy: ... and " << notes.size() - shown << " more tensors (-v lists them all)\n";
    std::cerr << "wrote " << output << " (" << gptoss::format_name(gptoss::output_format_for(output)) << ")\n";
    return 0;
  });
}
