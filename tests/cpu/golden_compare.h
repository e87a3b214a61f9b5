#pragma once
// Runs the CPU engine on a golden prompt and measures how far every observable stage is from the
// transformers goldens.
#include <string>
#include <vector>

#include "runtime/cpu/cpu_engine.h"
#include "tests/cpu/golden_refs.h"

namespace gptoss::test {

struct GoldenErrors {
  float embed = 0;
  std::vector<float> layers;  // residual stream after each decoder layer
  float final_norm = 0;
  float logits_last = 0;
  float logits_probe = 0;  // every position, at probe_ids
  float lse = 0;           // every position; only when the model has the golden's full vocabulary
  bool full_vocabulary = true;  // false for model.bin, which stores 200014 of the 201088 rows
  float top8 = 0;          // every position, our logit at the golden top-8 ids
  int argmax_mismatches = 0;  // positions whose golden top-1 (an id we have) beats top-2 by > 1e-2 yet is not our argmax
  double argmax_agreement = 1;  // fraction of positions whose argmax is the golden top-1
  float worst() const;
};

// Resets the engine, runs the prompt's ids with logits for every position, and compares.
// Probe/top-8 ids at or past the engine's vocabulary are skipped (model.bin may carry fewer rows).
GoldenErrors compare_with_goldens(cpu::CpuEngine& engine, const GoldenRefs& refs, const std::string& prompt);

std::string describe(const std::string& label, const GoldenErrors& errors);

}  // namespace gptoss::test
