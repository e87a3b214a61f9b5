#pragma once
// One pass over a text's chunks (chunk_plan.h): each group of chunks_per_forward chunks runs
// through the reference (an engine, or records read from a reference logits file) and every
// candidate engine as one forward of independent sequences that returns the logits of each chunk's
// scored positions only (LogitRows::range(ctx/2, ctx - 1 - ctx/2)), then the scored positions are
// reduced on all cores: the reference's perplexity, each candidate's perplexity and its
// per-position comparison with the reference (distribution_math.h). The forwards run meanwhile
// on threads of their own, one per engine on the device and one for the host's (two sets of logit
// buffers, reused from group to group; Vulkan engines made through one runtime::SharedDevices take
// turns on the GPU). Sums are added in position order after each parallel pass, so the results do
// not depend on the thread count or on that overlap.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "runtime/engine.h"
#include "runtime/eval/chunk_plan.h"
#include "runtime/eval/distribution_math.h"
#include "runtime/eval/reference_logits_file.h"
#include "runtime/eval/statistics.h"

namespace gptoss::eval {

struct EvaluationRequest {
  std::span<const uint32_t> tokens;  // the text's ids: at least plan.chunks * plan.ctx
  ChunkPlan plan;
  runtime::Engine* reference = nullptr;             // the reference run live, or
  ReferenceLogitsReader* reference_file = nullptr;  // its distributions read from a file
  std::vector<runtime::Engine*> candidates;
  // The engine's noise floor: the reference model on the candidates' engine, compared with the
  // reference over the first floor_chunks chunks like a candidate. What a candidate's KL holds
  // beyond it is its file's; a KL within it is the engines' difference alone. Null: no floor.
  runtime::Engine* floor = nullptr;
  uint32_t floor_chunks = 1;
  ReferenceLogitsWriter* save = nullptr;  // stores the live reference's records as they are made
  unsigned threads = 0;                   // 0: one per core
  // Chunks each engine runs as one forward (Engine::forward_sequences: llama-perplexity's n_batch /
  // n_ctx, 2048 / 512 by default there), every row the same as with the chunk alone; at least 1.
  uint32_t chunks_per_forward = 1;
  // After every chunk: text tokens run so far and in all (chunks x ctx).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct CandidateResult {
  uint32_t vocab_size = 0;
  uint32_t shared_rows = 0;  // rows compared: min(reference vocab, candidate vocab)
  NllStats nll;
  std::vector<PositionComparison> positions;  // every scored position, in text order
  ComparisonSummary summary() const { return summarize_comparisons(positions); }
};

struct EvaluationResult {
  uint32_t reference_vocab = 0;
  NllStats reference;
  std::vector<CandidateResult> candidates;
  std::optional<CandidateResult> floor;  // with EvaluationRequest::floor: over its chunks only
  uint32_t chunks_per_forward = 1;  // the request's
  double seconds = 0;             // the whole pass
  double forward_seconds = 0;     // while some engine ran a forward (on the lanes' threads)
  double statistics_seconds = 0;  // the parallel reductions (and compressing saved records)
  // The two overlap: forward_seconds + statistics_seconds may exceed seconds.
};

// Throws std::invalid_argument for a request that cannot run (no reference, a scored token
// outside a model's vocabulary, too few tokens), FormatError for a damaged reference file.
EvaluationResult evaluate(const EvaluationRequest& request);

}  // namespace gptoss::eval
