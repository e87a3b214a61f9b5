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

}  // namespace gptoss
