#pragma once
// gptoss-verify --values: one multi-threaded pass over every tensor's data, flagging what a real
// checkpoint never has. Thresholds (docs/verify.md explains each):
//   dense values      NaN or Inf (error); a tensor that is all zeros (warning); |x| > 65504
//                     outside the norms or a norm gain > 1000 (warning)
//   MXFP4 scales      byte 255 (NaN in MX, error); >= 242 (model.bin cannot store it) or < 90
//                     (weights below 2^-37) (warnings)
//   Q8_0 block scales NaN/Inf (error); sign bit set, -0 included (quantizers write amax/127 >= 0);
//                     0 while the block's quants are not all 0 (the block decodes to zeros);
//                     a quant of -128 (quantizers round into -127..127); |scale| > 65504/127
//                     (the block holds values beyond the f16 range) (warnings)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "verify/findings.h"

namespace gptoss {

// The f16 block scales of a Q8_0 tensor.
struct Q8_0ScaleStats {
  uint64_t blocks = 0;
  uint64_t non_finite = 0;       // NaN or Inf
  uint64_t negative = 0;         // sign bit set, -0 included
  uint64_t zero_with_data = 0;   // scale 0 while some quant of the block is not 0
  uint64_t minus_128 = 0;        // blocks holding the quant -128
  double min = 0, max = 0;       // range of the finite non-zero |scale|s (0, 0 when there is none)
  uint64_t first_max_block = 0;  // block holding `max`
  std::optional<uint64_t> first_bad_block;  // first block counted by the four counters above
};

struct TensorValueStats {
  std::string name;
  std::string dtype;
  uint64_t elements = 0;
  uint64_t nan = 0, inf = 0, zeros = 0;
  uint64_t first_nan = 0, first_inf = 0;  // element index (canonical order) of the first, when counted
  double abs_max = 0;
  uint64_t abs_max_at = 0;                // element index of the first value with |x| = abs_max
  int scale_min = -1, scale_max = -1;     // MXFP4 scale bytes (-1: not an MXFP4 scale tensor)
  uint64_t scale_min_at = 0, scale_max_at = 0;  // index of the first byte holding each
  std::optional<Q8_0ScaleStats> q8_0;     // Q8_0 tensors
  std::optional<Finding> read_failure;    // the data could not be decoded (a model.bin scale byte < 14)
};

// `file` is the model path given to verify; findings name the byte offset of the tensor in its
// file and, where the canonical bytes are the stored bytes, of the first offending element.
std::vector<TensorValueStats> check_values(const CanonicalModel& model, const std::string& file, Report& report,
                                           unsigned threads);

}  // namespace gptoss
