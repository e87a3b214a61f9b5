#pragma once
// The bad-input corpus: small valid files of every format we read, generated in memory, and
// every way we break them (truncation at each byte, single-byte changes, hand-crafted hostile
// headers). run_bad_inputs() feeds each case to the public readers and tallies what happened;
// gptoss-badinputs prints the tally as the table in docs/robustness.md, and a test runs a
// reduced corpus and asserts that nothing but FormatError or a valid parse ever comes out.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gptoss {

struct BadInputOptions {
  uint64_t stride = 1;       // try every stride-th byte for truncations and flips (1 = all)
  std::string only_format;   // run only this format ("" = all)
};

struct BadInputTally {
  std::string input_class;   // "truncation at every byte", "single-byte flip", "hostile: ..."
  std::string format;        // "safetensors", "GGUF", ...
  uint64_t cases = 0;
  uint64_t rejected = 0;     // FormatError
  uint64_t accepted = 0;     // parsed as a valid file (e.g. a changed weight byte)
  uint64_t unexpected = 0;   // any other exception: a bug
  uint64_t crashes = 0;      // the row's child process died (a signal, a sanitizer report)
  double max_ms = 0;         // slowest case
  // Peak memory of the child process that ran the row, minus that of an idle child forked at the
  // same moment (child_process.h): the worst case of the row, as the memory is freed between cases.
  int64_t peak_memory_growth_kb = 0;
  std::vector<std::string> unexpected_messages;  // the first few
};

// Each row (input class x format) runs in a child process of its own, so that a crash is counted
// instead of ending the run, and the row's peak memory is measured.
std::vector<BadInputTally> run_bad_inputs(const BadInputOptions& options);

// The tally as a markdown table (one row per class and format, with a total), and below it the
// worst peak memory growth per format.
std::string bad_input_table(const std::vector<BadInputTally>& tallies);

// The hand-crafted hostile files (each about 1 KB), for tests that run each one under limits.
struct HostileCase {
  std::string format;  // as in BadInputTally::format; read it with read_as(format, ...)
  std::string name;    // what is hostile about it
  std::vector<uint8_t> bytes;
};
std::vector<HostileCase> hostile_cases();

// Writes the files that read_as() needs besides the case itself (the sharded checkpoint whose
// index.json the index cases replace) into `scratch_dir`; read_as() makes them when missing.
void prepare_scratch(const std::filesystem::path& scratch_dir);

// Reads `bytes` as `format` through the public reader (writing a file in `scratch_dir` where the
// reader takes a path) and uses what it returns. Throws whatever the reader throws.
void read_as(const std::string& format, const std::vector<uint8_t>& bytes, const std::filesystem::path& scratch_dir);

}  // namespace gptoss
