#pragma once
// GptOssConfig <-> the model.bin model header. The header stores YaRN as the Metal kernels use
// it (interpolation_scale = 1/factor, yarn_offset = -low/(high-low), yarn_scale = 1/(high-low),
// yarn_multiplier = 0.1 ln(factor) + 1, all computed in double and stored as f32); reading
// inverts those formulas and checks that the config found reproduces every stored bit.
#include <string>
#include <vector>

#include "convert/gptoss_config.h"
#include "formats/modelbin/modelbin_format.h"

namespace gptoss {

// Throws std::invalid_argument for what the format cannot hold (head_dim != 64, a layer pattern
// other than "even layers slide", experts_per_token != 4). Appends notes for approximations.
modelbin::ModelHeader modelbin_header_from_config(const GptOssConfig& config, std::vector<std::string>& notes);

// The inverse; vocab_size is the file's vocabulary. Differences go to `notes`.
GptOssConfig config_from_modelbin_header(const modelbin::ModelHeader& header, uint64_t vocabulary_size,
                                         const std::string& file, std::vector<std::string>& notes);

// A header field whose stored value no GPT-OSS config produces.
struct ModelBinHeaderInconsistency {
  std::string field;   // e.g. "model_header.yarn_multiplier"
  uint64_t offset;     // of the field in the file
  std::string found, expected;
};
// Checks the header against the config config_from_modelbin_header read from it: context_length
// must be int(original context x factor); yarn_offset/yarn_scale must come from a beta_fast/
// beta_slow with at most 3 decimals, or from integer bounds (what a truncating config writes);
// yarn_multiplier must be 0.1 ln(factor) + 1 as f32.
std::vector<ModelBinHeaderInconsistency> modelbin_header_inconsistencies(const modelbin::ModelHeader& header,
                                                                         const GptOssConfig& config);

}  // namespace gptoss
