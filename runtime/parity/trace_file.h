#pragma once
// A Trace (activation_trace.h) on disk, so two runs can be compared stage by stage long after and
// far apart (lavapipe against an H100, GGUF against model.bin, today against last month):
// gptoss-run --trace writes one, gptoss-eval --compare-traces compares two.
//
// File: zstd frames one after the other (`zstd -dc FILE` prints it all). Frame 0: the line
// "gptoss trace" and a JSON object: the model (canonical digest, source), the engine, the device,
// the prompt ids and the list of stages (name, rows, cols, first_row). Then one frame per stage,
// in that order: rows x cols little-endian f32 values, row-major, exactly as recorded.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/parity/activation_trace.h"

namespace gptoss::parity {

struct TraceHeader {
  std::string model_digest;  // verify/canonical_digest.h model_digest
  std::string model_source;  // the path the model was loaded from
  std::string engine, device;
  std::vector<uint32_t> prompt_tokens;
};

struct TraceFile {
  TraceHeader header;
  Trace trace;  // label: "ENGINE: SOURCE"
};

// Atomic: the file appears complete or not at all.
void write_trace_file(const std::filesystem::path& path, const TraceHeader& header, const Trace& trace, int level = 3);
// FormatError naming the file, the field and the byte offset for anything malformed.
TraceFile read_trace_file(const std::filesystem::path& path);

// Stage by stage, over the rows and columns both traces hold.
struct StageDifference {
  std::string stage;
  bool in_both = false;
  size_t rows = 0, cols = 0;  // compared
  double largest = 0;         // largest |value| of the stage in A
  double max_abs_diff = 0;
  double relative = 0;        // max_abs_diff / largest (0 when both are 0)
  uint64_t worst_row = 0;     // position of the largest difference (router stages: the first rerouted token)
  size_t worst_col = 0;
  // Router stages (is_router_stage): the tokens sent to other experts; such a stage parts when any
  // was, whatever the tolerance, and its numeric fields stay 0.
  bool routing = false;
  uint64_t rerouted = 0;
  bool parts = false;         // relative > tolerance (or NaN, or missing from one trace), or rerouted
};

struct TraceComparison {
  double tolerance = 0;
  std::vector<StageDifference> stages;  // A's stages in order
  std::optional<size_t> first_parting;  // index into stages
};

// Refuses (std::invalid_argument) traces of different prompts: their stages are not comparable.
TraceComparison compare_traces(const TraceFile& a, const TraceFile& b, double tolerance);
std::string trace_comparison_table(const TraceFile& a, const TraceFile& b, const TraceComparison& comparison);
// The same as one JSON object: each trace's label, engine, device and model digest, the tolerance,
// every stage's difference, and the first stage that parts (null when none).
nlohmann::ordered_json trace_comparison_json(const TraceFile& a, const TraceFile& b, const TraceComparison& comparison);

}  // namespace gptoss::parity
