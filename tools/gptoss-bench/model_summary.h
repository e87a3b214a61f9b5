#pragma once
// What gptoss-bench says about a model, counted from the canonical model the way llama-bench
// counts a GGUF's tensors, so the size and params columns of both tools agree on the same weights:
//   size:   bytes of every tensor in the encoding the model holds it in (BF16, Q8_0 blocks with
//           their scales, MXFP4 blocks and scales);
//   params: elements of every tensor, where an MXFP4 expert tensor counts 2 parameters per byte
//           of blocks (two 4-bit values) and its scales none (a scale is part of the encoding, as
//           in ggml's block_mxfp4).
#include <cstdint>
#include <string>

#include "convert/canonical_model.h"

namespace gptoss::bench {

struct ModelSummary {
  uint64_t size_bytes = 0;
  uint64_t parameters = 0;
  std::string dense_encoding;  // the matrices' encodings, largest share first: "BF16", "Q8_0+F32"
  std::string type;            // llama-bench's model column, with the largest share: "gpt-oss 21B Q8_0 + MXFP4"
};

ModelSummary summarize_model(const CanonicalModel& model);

}  // namespace gptoss::bench
