#pragma once
// The reference's per-position distributions, stored once (gptoss-eval --save-logits) and compared
// against later (--against-logits), for a reference too large to hold beside the candidate or run
// on another machine.
//
// File: a sequence of zstd frames (`zstd -dc FILE` prints it all). Frame 0 holds the header: the
// line "gptoss-eval reference distributions" and one JSON object naming the model (canonical
// digest), the tokenizer (tokenizer_digest), the text (SHA-256, bytes), the chunking (ctx, chunks,
// first scored position, tokens scored per chunk), the record encoding and the ids of every chunk.
// Then one frame per scored position, chunk by chunk, each holding one record:
//   f32 nll         -log P(next token), computed in f64 from the f32 logits
//   u32 top         argmax of the logits (the lowest index of equal values)
//   f32 log_p_top   log P(top)
//   vocab x f16     log P(i) + H(P) for every row i, H(P) = -E_P[log P] the entropy: the tokens
//                   that carry the mass sit near 0, where f16's 11 significant bits are finest
//                   (the distribution is softmax of these values: any offset would do, this one
//                   puts the precision where KL needs it). Stored as two byte planes (every low
//                   byte, then every high byte): the high bytes compress better on their own.
// nll, top and log_p_top are what the reference's perplexity, top-1 agreement and P(top) need,
// kept exact; the f16 row is what KL divergence needs (the full distribution). docs/eval.md gives
// the measured size per token and the error the f16 rows introduce.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/core/atomic_file.h"
#include "convert/canonical_model.h"
#include "formats/core/zstd_frames.h"
#include "runtime/eval/chunk_plan.h"
#include "runtime/eval/distribution_math.h"

namespace gptoss::eval {

struct ReferenceLogitsHeader {
  std::string model_digest;  // verify/canonical_digest.h model_digest of the reference
  std::string model_source;  // the path it was loaded from (for messages only)
  uint32_t vocab_size = 0;   // rows per record
  std::string tokenizer_digest;
  std::string text_sha256;
  uint64_t text_bytes = 0;
  uint32_t ctx = 0, chunks = 0;
  std::string engine, device;   // what computed the distributions (for the record)
  std::vector<uint32_t> tokens;  // chunks * ctx ids, chunk after chunk

  uint64_t scored_positions() const;
  size_t record_bytes() const;  // 12 + 2 * vocab_size
};

// One record: the reference's distribution at one scored position.
struct ReferenceRecord {
  double nll = 0;
  uint32_t top = 0;
  double log_p_top = 0;
  // log P(i) + H(P) decoded to f32: a row of logits for the distribution (softmax gives P).
  std::span<const float> relative_log_probs;
};

// The record of one position's logits (uncompressed); `summary` is summarize_row(logits).
std::vector<uint8_t> encode_reference_record(std::span<const float> logits, const RowSummary& summary, uint32_t next_token);

// This run's header: the reference model (its canonical digest and vocabulary, and `source`, the
// path it was loaded from), the tokenizer, the text and its chunking, and the ids evaluated. What
// --save-logits writes (with the engine and device that compute it) and what a file compared
// against must hold.
ReferenceLogitsHeader run_header(const CanonicalModel& reference, const std::string& source,
                                 const std::string& tokenizer_digest, std::string_view text, const ChunkPlan& plan,
                                 std::vector<uint32_t> tokens);

// FormatError naming `path` and the field unless the file at `path`, of header `file`, holds the
// distributions of `run`: the same text, tokenizer, chunking, vocabulary size, ids and model,
// checked in that order (the first that differs is named, with both values). What computed the
// distributions (engine, device) and where the model was loaded from do not matter.
void require_compatible(const std::string& path, const ReferenceLogitsHeader& file, const ReferenceLogitsHeader& run);

class ReferenceLogitsWriter {
 public:
  // Writes the header now; the file appears at commit() only (AtomicFileWriter).
  ReferenceLogitsWriter(const std::filesystem::path& path, const ReferenceLogitsHeader& header, int level = 1);
  int level() const { return level_; }
  // The next position's record, compressed with zstd_compress_frame(record, level()).
  void write_frame(std::span<const uint8_t> frame);
  uint64_t bytes_written() const { return out_.position(); }
  // Refuses a file with fewer records than the header promises.
  void commit();

 private:
  AtomicFileWriter out_;
  uint64_t expected_ = 0, written_ = 0;
  int level_;
};

class ReferenceLogitsReader {
 public:
  explicit ReferenceLogitsReader(const std::filesystem::path& path);
  const ReferenceLogitsHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const;

  // The frames of the next chunk's scored positions (FormatError when the file ends early).
  std::vector<ZstdFrameReader::Frame> next_chunk();
  // Decodes a frame into `raw` (scratch, resized) and `values` (vocab_size floats); thread-safe.
  ReferenceRecord decode(const ZstdFrameReader::Frame& frame, std::vector<uint8_t>& raw, std::span<float> values) const;
  // FormatError when bytes follow the last record.
  void expect_end() const;

  // FormatError unless this file holds the distributions `run` would compute (require_compatible).
  void require_compatible(const ReferenceLogitsHeader& run) const;

 private:
  std::string path_;
  std::unique_ptr<ZstdFrameReader> frames_;
  ReferenceLogitsHeader header_;
  uint64_t chunks_read_ = 0;
};

}  // namespace gptoss::eval
