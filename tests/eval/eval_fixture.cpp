#include "tests/eval/eval_fixture.h"

namespace gptoss::test {

std::filesystem::path eval_text() { return std::filesystem::path(GPTOSS_DATA_DIR) / "eval" / "gnu-licenses.txt"; }
std::string gptoss_eval() { return (tools_dir() / "gptoss-eval").string(); }
std::string gptoss_run() { return (tools_dir() / "gptoss-run").string(); }

nlohmann::json eval_json(const std::string& arguments) {
  const auto r = run_command("(" + gptoss_eval() + " " + arguments + " --json 2>/dev/null)");
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(r.output);
}

std::string join_ids(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace gptoss::test
