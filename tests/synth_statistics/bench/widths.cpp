// Prints the statistics of a synthesized model's forward pass (tests/synth_statistics) at the 20b
// widths (hidden 2880, 64/8 heads of 64, top-4 routing) with fewer layers and a 32768-row
// vocabulary, so the CPU engine's f32 weights fit in ~11 GB: docs/eval.md's table.
//   build/tests/synth_statistics/bench/synth_statistics_widths [--layers 3] [--experts 32] [--no-routers]
// --layers and --experts trade the shape for depth; --no-routers leaves out the router statistics
// (one forward instead of one per layer).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "convert/synthesize.h"
#include "tests/synth_statistics/synth_statistics.h"

int main(int argc, char** argv) {
  CLI::App app{"The statistics of a synthesized model's forward pass at the 20b widths (docs/eval.md)."};
  uint32_t layers = 3, experts = 32, vocab = 32768, tokens = 64;
  bool no_routers = false;
  app.add_option("--layers", layers, "decoder layers")->check(CLI::Range(1u, 36u))->capture_default_str();
  app.add_option("--experts", experts, "experts per layer (at least the 4 a token is routed to)")
      ->check(CLI::Range(4u, 128u))
      ->capture_default_str();
  app.add_option("--vocab", vocab, "vocabulary rows kept")->check(CLI::Range(1024u, 201088u))->capture_default_str();
  app.add_option("--tokens", tokens, "tokens run through the model")->check(CLI::Range(2u, 4096u))->capture_default_str();
  app.add_flag("--no-routers", no_routers, "leave out the router statistics: one forward instead of one per layer");
  CLI11_PARSE(app, argc, argv);

  gptoss::SynthPreset p = gptoss::synth_preset("20b");
  p.name = "20b widths";
  p.layers = layers;
  p.experts = experts;
  const auto model = gptoss::test::with_vocabulary(gptoss::synthesize_model(p), vocab);
  const auto s = gptoss::test::measure_statistics(model, gptoss::test::sample_tokens(tokens, vocab), !no_routers);
  std::printf("%u layers, %u experts, vocabulary %u\n%s", p.layers, p.experts, vocab, gptoss::test::statistics_table(s).c_str());
  return 0;
}
