#pragma once
// What the eval tests share: preset a's HF checkpoint (test_support.h) and its Q8_0 GGUF, the
// evaluation text in data/, and the CLIs.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace gptoss::test {

std::filesystem::path eval_text();  // data/eval/gnu-licenses.txt
std::string gptoss_eval();
std::string gptoss_run();
// Runs gptoss-eval ARGS --json; expects exit 0 and returns the JSON.
nlohmann::json eval_json(const std::string& arguments);
std::string join_ids(const std::vector<uint32_t>& ids);

}  // namespace gptoss::test
