#pragma once
// What a synthesized model's forward pass looks like, measured with the CPU engine: the residual
// stream after every layer and what every router does with it. For the scales of the TrainedLike
// statistics (convert/synthesize.h): the CI test checks them on a small shape, the tool
// bench/synth_statistics_widths prints docs/eval.md's table at the 20b widths.
#include <cstdint>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::test {

struct LayerStatistics {
  int layer = 0;
  double residual_rms = 0, residual_max = 0;  // of the stream after the layer, over tokens and dims
  // The router of this layer on its true input (the normalized stream after the layer's
  // attention, recovered by running the model up to this layer with its MoE output zeroed):
  double router_entropy = 0;  // mean over tokens of the entropy of softmax(all router logits) / log E
  double top_weight = 0;      // mean over tokens of the largest of the k expert weights
  double load_entropy = 0;    // entropy of the share of (token, slot) assignments per expert / log E
  double load_max = 0;        // the largest share times E (1: perfectly even)
  uint32_t experts_used = 0;
};

struct ModelStatistics {
  double embedding_rms = 0;
  std::vector<LayerStatistics> layers;
  double logits_std = 0;       // per position, averaged
  double output_entropy = 0;   // of the next-token distribution, nats, averaged over positions
  double top_probability = 0;  // mean largest next-token probability
};

// The model with only the first `rows` vocabulary rows (embedding and unembedding sliced, no
// special token ids): the layers are untouched, and a model at the 20b widths fits in memory.
CanonicalModel with_vocabulary(const CanonicalModel& model, uint32_t rows);

// Runs `tokens` through the model on the CPU engine (f32); with `routers`, once more per layer
// (up to that layer's attention) for the router statistics.
// `n` ids below `vocab`, the same on every run (a fixed linear congruential sequence).
std::vector<uint32_t> sample_tokens(size_t n, uint32_t vocab);

ModelStatistics measure_statistics(const CanonicalModel& model, const std::vector<uint32_t>& tokens, bool routers = true);
std::string statistics_table(const ModelStatistics& s);

}  // namespace gptoss::test
