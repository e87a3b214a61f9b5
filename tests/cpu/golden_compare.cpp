#include "tests/cpu/golden_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gptoss::test {

float GoldenErrors::worst() const {
  float w = std::max({embed, final_norm, logits_last, logits_probe, lse, top8});
  for (float l : layers) w = std::max(w, l);
  return w;
}

GoldenErrors compare_with_goldens(cpu::CpuEngine& engine, const GoldenRefs& refs, const std::string& prompt) {
  const auto ids = refs.ids(prompt);
  const size_t count = ids.size();
  const size_t vocab = engine.vocab_size();
  GoldenErrors errors;
  errors.layers.assign(engine.config().num_layers, 0.0f);

  engine.reset();
  auto observer = [&](const runtime::ActivationView& view) {
    auto check = [&](const std::string& name) {
      const auto golden = refs.f32(prompt + "." + name);
      EXPECT_EQ(golden.size(), view.rows * view.cols) << name;
      return max_abs_diff(view.values.data(), golden.data(), std::min(golden.size(), view.values.size()));
    };
    switch (view.stage) {
      case runtime::Stage::Embedding: errors.embed = check("embed"); break;
      case runtime::Stage::LayerOutput: errors.layers[static_cast<size_t>(view.layer)] = check("layer" + std::to_string(view.layer)); break;
      case runtime::Stage::FinalNorm: errors.final_norm = check("final_norm"); break;
      case runtime::Stage::RouterChoices: break;  // routing: the goldens hold activations only
      case runtime::Stage::AttentionOutput: break;  // the goldens hold whole layers only
    }
  };
  const auto logits = engine.forward(ids, runtime::LogitRows::All, observer);

  const auto golden_last = refs.f32(prompt + ".logits_last");
  errors.full_vocabulary = vocab == golden_last.size();
  errors.logits_last = max_abs_diff(logits.data() + (count - 1) * vocab, golden_last.data(), std::min(vocab, golden_last.size()));

  const auto probe_ids = refs.i32("probe_ids");
  const auto probe = refs.f32(prompt + ".logits_probe");
  const auto lse = refs.f32(prompt + ".lse");
  const auto top8_ids = refs.i32(prompt + ".top8_ids");
  const auto top8_logits = refs.f32(prompt + ".top8_logits");
  size_t agreeing = 0;
  for (size_t t = 0; t < count; ++t) {
    const float* row = logits.data() + t * vocab;
    for (size_t n = 0; n < probe_ids.size(); ++n) {
      const auto id = static_cast<size_t>(probe_ids[n]);
      if (id < vocab) errors.logits_probe = std::max(errors.logits_probe, std::abs(row[id] - probe[t * probe_ids.size() + n]));
    }
    if (errors.full_vocabulary) {
      const float row_max = *std::max_element(row, row + vocab);
      double sum = 0;
      for (size_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - row_max);
      const double row_lse = row_max + std::log(sum);
      errors.lse = std::max(errors.lse, static_cast<float>(std::abs(row_lse - lse[t])));
    }
    for (size_t i = 0; i < 8; ++i) {
      const auto id = static_cast<size_t>(top8_ids[t * 8 + i]);
      if (id < vocab) errors.top8 = std::max(errors.top8, std::abs(row[id] - top8_logits[t * 8 + i]));
    }
    const auto argmax = static_cast<size_t>(std::max_element(row, row + vocab) - row);
    const auto golden_top = static_cast<size_t>(top8_ids[t * 8]);
    agreeing += argmax == golden_top;
    if (golden_top < vocab && top8_logits[t * 8] - top8_logits[t * 8 + 1] > 1e-2f && argmax != golden_top)
      ++errors.argmax_mismatches;
  }
  errors.argmax_agreement = static_cast<double>(agreeing) / static_cast<double>(count);
  return errors;
}

std::string describe(const std::string& label, const GoldenErrors& e) {
  char buffer[512];
  std::string layers;
  for (float l : e.layers) {
    std::snprintf(buffer, sizeof buffer, " %.2e", static_cast<double>(l));
    layers += buffer;
  }
  std::snprintf(buffer, sizeof buffer,
                "%-24s embed %.2e layers%s final_norm %.2e logits_last %.2e probe %.2e lse %.2e%s top8 %.2e argmax %.0f%%",
                label.c_str(), static_cast<double>(e.embed), layers.c_str(), static_cast<double>(e.final_norm),
                static_cast<double>(e.logits_last), static_cast<double>(e.logits_probe), static_cast<double>(e.lse),
                e.full_vocabulary ? "" : " (not compared: fewer vocabulary rows)", static_cast<double>(e.top8), 100 * e.argmax_agreement);
  return buffer;
}

}  // namespace gptoss::test
