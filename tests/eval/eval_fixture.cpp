#include "tests/eval/eval_fixture.h"

#include <mutex>

#include "convert/model_io.h"

namespace gptoss::test {

const std::filesystem::path& preset_a_q8_gguf() {
  // The goldens' llama.cpp Q8_0 GGUF holds exactly these Q8_0 tensors
  // (CpuGoldenParity.GoldenQ8_0GgufIsOurQ8_0OfTheCheckpoint) and gives the same evaluation; taking
  // it saves each test process a conversion of preset a.
  if (const auto goldens = goldens_dir()) {
    static const std::filesystem::path golden = *goldens / "a" / "model-q8_0.gguf";
    if (std::filesystem::exists(golden)) return golden;
  }
  static TempDir dir;
  static const std::filesystem::path path = dir / "model-q8_0.gguf";
  static std::once_flag once;
  std::call_once(once, [] {
    WriteOptions options;
    options.dense_dtype = DType::Q8_0;
    write_model(load_model(preset_a_checkpoint() / "hf"), path, options);
  });
  return path;
}

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
