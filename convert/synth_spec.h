#pragma once
// Model specs: "synth:NAME" stands for the synthesized preset NAME (convert/synthesize.h) wherever
// a tool takes a model path. The model is generated on the fly as it is read, never written to
// disk: synth:120b (65 GB) runs on a machine whose disk could not hold it. It has no tokenizer
// (the o200k vocabulary exists only as a tokenizer.json file, which the toolkit does not embed).
//
// A path beginning with "synth:" is always a spec; a file of that name is reached as ./synth:NAME.
#include <filesystem>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

bool is_synth_spec(const std::filesystem::path& path);

// Every spec there is, one per preset: "synth:a", "synth:20b", "synth:120b".
std::vector<std::string> synth_spec_names();

// The model `spec` names. Throws std::invalid_argument, listing the specs there are, for a name
// that is no preset.
CanonicalModel load_synth_spec(const std::filesystem::path& spec);

}  // namespace gptoss
