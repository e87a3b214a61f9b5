#pragma once
// Layer-by-layer parity: the activations of one forward pass (embedding, the residual stream
// after every decoder layer, final norm, logits), recorded from an engine or read from golden
// references, and the table comparing several of them stage by stage.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "formats/safetensors/safetensors_file.h"
#include "runtime/engine.h"

namespace gptoss::parity {

struct Stage {
  std::string name;      // "embedding", "layer 0", ..., "final norm", "logits"
  size_t rows = 0;       // positions
  size_t cols = 0;
  uint64_t first_row = 0;  // position of rows[0] (refs hold only the last position's logits)
  std::vector<float> values;  // row-major [rows, cols]
};

struct Trace {
  std::string label;
  std::vector<Stage> stages;
  const Stage* find(const std::string& name) const;
};

// Records the stages an engine's forward shows its observer (embedding, layers, final norm) and
// then its logits: what trace_engine and gptoss-run --trace build a Trace from.
class TraceRecorder {
 public:
  explicit TraceRecorder(std::string label) { trace_.label = std::move(label); }
  // Valid while the recorder lives.
  runtime::ActivationObserver observer();
  // `rows` rows of logits starting at position `first_row`, row-major [rows, cols].
  void add_logits(std::vector<float> values, size_t rows, size_t cols, uint64_t first_row);
  Trace take() { return std::move(trace_); }

 private:
  Trace trace_;
};

// Runs `tokens` as one prefill on `engine` (from an empty cache) and records every stage.
Trace trace_engine(runtime::Engine& engine, std::span<const uint32_t> tokens, std::string label);

// Golden references (shared/goldens/a/refs-a.safetensors): `prompt`.embed, .layerN, .final_norm
// and .logits_last; also returns the prompt ids (`prompt`.ids).
Trace trace_from_refs(const SafetensorsFile& refs, const std::string& prompt, std::vector<uint32_t>* ids);

// Max |a - b| over the rows and columns both stages hold (a model.bin has fewer vocabulary
// columns; references hold only the last position's logits). NaN if they share nothing.
double max_abs_difference(const Stage& a, const Stage& b);
// The same, with the position (row) where it is largest: a difference at one position of one
// layer (a token routed to other experts) reads differently from one spread over all of them.
struct LargestDifference {
  double value;
  uint64_t position;
};
LargestDifference largest_difference(const Stage& a, const Stage& b);

// Router stages ("router L", runtime::Stage::RouterChoices) hold per token the ids of its experts:
// they are compared as routing, not as numbers. A token whose set of experts differs between two
// traces was routed differently (a near tie of two router logits, decided otherwise by two
// engines' rounding): every later stage differs at that position by the experts' outputs.
bool is_router_stage(const Stage& stage);
struct RoutingDifference {
  uint64_t position;
  std::vector<uint32_t> a, b;  // the experts, each in its trace's order
};
// The positions both stages hold whose sets of experts differ, in position order.
std::vector<RoutingDifference> routing_differences(const Stage& a, const Stage& b);

// The largest |value| of a stage over the rows and columns it shares with `other` (0 if none).
double max_abs_value(const Stage& stage, const Stage& other);

// Markdown table: one row per stage of `reference`, one column per other trace with the max abs
// difference against the reference, then one per other trace with that difference relative to
// the reference stage's largest |value| (max_abs_value), then one per other trace with the
// position where the difference is largest. Router stages show the tokens routed differently
// (and the first one's position); below the table, each trace's routing differences are named.
std::string parity_table(const Trace& reference, const std::vector<Trace>& others);

// Decode steps after a prompt, one token per forward as generation runs them (the kernels of a
// device engine's decode, which a prefill's parity does not reach). `engine` stands after the
// prompt that `prompt` traced (trace_engine); its last position's logits choose the first token.
// Step i feeds tokens[i] where `tokens`
// has it (the reference engine's choices, so every engine sees the same context), else the argmax
// of the previous logits, appended to `tokens`. Each step's logits become a stage "step i" (1 row,
// at its position).
Trace trace_decode_steps(runtime::Engine& engine, const Trace& prompt, size_t steps, std::vector<uint32_t>& tokens,
                         std::string label);

// Markdown table of decode steps: per step the token fed, the reference's margin between its two
// largest logits (how near a tie its choice was), then per other trace the max abs difference
// relative to the reference's largest |logit| and whether its argmax is the reference's.
std::string decode_table(const Trace& reference, const std::vector<uint32_t>& tokens, const std::vector<Trace>& others);

}  // namespace gptoss::parity
