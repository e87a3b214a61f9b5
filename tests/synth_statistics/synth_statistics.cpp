#include "tests/synth_statistics/synth_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/cpu/cpu_weights.h"
#include "runtime/parity/activation_trace.h"
#include "runtime/parity/parity_run.h"

namespace gptoss::test {
namespace {

// The model cut after layer `last`, whose MoE adds nothing (mlp2 weights and bias zero): its
// last residual stream is the stream after that layer's attention.
CanonicalModel up_to_attention_of(const CanonicalModel& model, uint32_t last) {
  CanonicalModel cut;
  cut.config = model.config;
  cut.config.num_layers = last + 1;
  cut.config.sliding_layers.resize(last + 1);
  cut.source_description = model.source_description + " up to layer " + std::to_string(last) + "'s attention";
  for (const auto& t : model.tensors) {
    if (t.spec.layer > static_cast<int>(last)) continue;
    CanonicalTensor copy = t;
    const bool zero = t.spec.layer == static_cast<int>(last) &&
                      (t.spec.role == TensorRole::Mlp2Blocks || t.spec.role == TensorRole::Mlp2Bias);
    if (zero) copy.source = std::make_shared<OwnedSource>(std::vector<uint8_t>(t.source->size(), 0));
    cut.tensors.push_back(std::move(copy));
  }
  finalize_canonical_tensors(cut.config, cut.tensors, cut.source_description);
  return cut;
}

std::vector<float> decode(const CanonicalModel& model, TensorRole role, int layer) {
  for (const auto& t : model.tensors)
    if (t.spec.role == role && t.spec.layer == layer) return cpu::decode_dense_tensor(t);
  throw std::logic_error("tensor missing");
}

void router_statistics(const CanonicalModel& model, uint32_t layer, const parity::Stage& after_attention,
                       LayerStatistics& out) {
  const auto& c = model.config;
  const size_t H = c.hidden_size, E = c.num_experts, k = c.experts_per_token, T = after_attention.rows;
  const auto norm = decode(model, TensorRole::MlpNorm, static_cast<int>(layer));
  const auto router = decode(model, TensorRole::RouterWeight, static_cast<int>(layer));
  const auto bias = decode(model, TensorRole::RouterBias, static_cast<int>(layer));
  std::vector<double> load(E, 0);
  for (size_t t = 0; t < T; ++t) {
    const float* x = after_attention.values.data() + t * H;
    double ms = 0;
    for (size_t i = 0; i < H; ++i) ms += double{x[i]} * x[i];
    const double inv = 1.0 / std::sqrt(ms / static_cast<double>(H) + c.rms_norm_eps);
    std::vector<double> logits(E);
    for (size_t e = 0; e < E; ++e) {
      double dot = bias[e];
      for (size_t i = 0; i < H; ++i) dot += x[i] * inv * norm[i] * router[e * H + i];
      logits[e] = dot;
    }
    const double m = *std::max_element(logits.begin(), logits.end());
    double z = 0, entropy = 0;
    for (double l : logits) z += std::exp(l - m);
    for (double l : logits) {
      const double p = std::exp(l - m) / z;
      if (p > 0) entropy -= p * std::log(p);
    }
    out.router_entropy += entropy / std::log(static_cast<double>(E)) / static_cast<double>(T);
    std::vector<size_t> order(E);
    for (size_t e = 0; e < E; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    double zk = 0;
    for (size_t s = 0; s < k; ++s) zk += std::exp(logits[order[s]] - logits[order[0]]);
    out.top_weight += 1.0 / zk / static_cast<double>(T);
    for (size_t s = 0; s < k; ++s) load[order[s]] += 1.0 / static_cast<double>(T * k);
  }
  for (double share : load) {
    if (share > 0) {
      out.load_entropy -= share * std::log(share) / std::log(static_cast<double>(E));
      ++out.experts_used;
    }
    out.load_max = std::max(out.load_max, share * static_cast<double>(E));
  }
}

void stream_statistics(const parity::Stage& s, double& rms, double& largest) {
  double ss = 0;
  largest = 0;
  for (float v : s.values) {
    ss += double{v} * v;
    largest = std::max(largest, std::fabs(double{v}));
  }
  rms = std::sqrt(ss / static_cast<double>(s.values.size()));
}

}  // namespace

CanonicalModel with_vocabulary(const CanonicalModel& model, uint32_t rows) {
  CanonicalModel cut;
  cut.config = model.config;
  cut.config.vocab_size = rows;
  cut.config.bos_token_id = cut.config.eos_token_id = cut.config.pad_token_id = std::nullopt;
  cut.source_description = model.source_description + " (first " + std::to_string(rows) + " vocabulary rows)";
  for (const auto& t : model.tensors) {
    CanonicalTensor copy = t;
    if (t.spec.role == TensorRole::Embedding || t.spec.role == TensorRole::Unembedding) {
      copy.spec.shape[0] = rows;
      copy.source = std::make_shared<SliceSource>(t.source, 0, uint64_t{rows} * t.spec.shape[1] * 2);
    }
    cut.tensors.push_back(std::move(copy));
  }
  finalize_canonical_tensors(cut.config, cut.tensors, cut.source_description);
  return cut;
}

std::vector<uint32_t> sample_tokens(size_t n, uint32_t vocab) {
  std::vector<uint32_t> ids;
  uint32_t s = 12345;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    ids.push_back((s >> 8) % vocab);
  }
  return ids;
}

ModelStatistics measure_statistics(const CanonicalModel& model, const std::vector<uint32_t>& tokens, bool routers) {
  ModelStatistics result;
  const auto full = parity::trace_model(runtime::EngineKind::Cpu, model, tokens, "full");
  double unused = 0;
  stream_statistics(*full.find("embedding"), result.embedding_rms, unused);
  for (uint32_t l = 0; l < model.config.num_layers; ++l) {
    LayerStatistics s;
    s.layer = static_cast<int>(l);
    stream_statistics(*full.find("layer " + std::to_string(l)), s.residual_rms, s.residual_max);
    if (routers) {
      const auto cut = up_to_attention_of(model, l);
      const auto trace = parity::trace_model(runtime::EngineKind::Cpu, cut, tokens, "cut");
      router_statistics(model, l, *trace.find("layer " + std::to_string(l)), s);
    }
    result.layers.push_back(s);
  }
  const auto& logits = *full.find("logits");
  for (size_t t = 0; t < logits.rows; ++t) {
    const float* row = logits.values.data() + t * logits.cols;
    double mean = 0, m = -INFINITY;
    for (size_t i = 0; i < logits.cols; ++i) {
      mean += row[i];
      m = std::max(m, double{row[i]});
    }
    mean /= static_cast<double>(logits.cols);
    double var = 0, z = 0;
    for (size_t i = 0; i < logits.cols; ++i) {
      var += (row[i] - mean) * (row[i] - mean);
      z += std::exp(row[i] - m);
    }
    double entropy = 0;
    for (size_t i = 0; i < logits.cols; ++i) {
      const double p = std::exp(row[i] - m) / z;
      if (p > 0) entropy -= p * std::log(p);
    }
    const double n = static_cast<double>(logits.rows);
    result.logits_std += std::sqrt(var / static_cast<double>(logits.cols)) / n;
    result.output_entropy += entropy / n;
    result.top_probability += 1.0 / z / n;
  }
  return result;
}

std::string statistics_table(const ModelStatistics& s) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "embedding RMS %.3f\n\n", s.embedding_rms);
  out << line;
  out << "| layer | residual RMS | residual max abs | router entropy / log E | top expert weight | load entropy / log E | max load x E | experts used |\n"
         "|---|---|---|---|---|---|---|---|\n";
  for (const auto& l : s.layers) {
    if (l.experts_used == 0)  // router statistics not measured
      std::snprintf(line, sizeof line, "| %d | %.3f | %.3f | - | - | - | - | - |\n", l.layer, l.residual_rms, l.residual_max);
    else
      std::snprintf(line, sizeof line, "| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %u |\n", l.layer, l.residual_rms,
                    l.residual_max, l.router_entropy, l.top_weight, l.load_entropy, l.load_max, l.experts_used);
    out << line;
  }
  std::snprintf(line, sizeof line, "\nlogits: std %.3f per position; next-token entropy %.3f nats; top probability %.4f\n",
                s.logits_std, s.output_entropy, s.top_probability);
  out << line;
  return out.str();
}

}  // namespace gptoss::test
