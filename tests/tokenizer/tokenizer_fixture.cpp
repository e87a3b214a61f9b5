#include "tests/tokenizer/tokenizer_fixture.h"

#include <fstream>

#include "convert/tokenizer_json.h"
#include "tests/test_support.h"

namespace gptoss::test {

std::shared_ptr<const TokenizerData> real_tokenizer_data() {
  static const std::shared_ptr<const TokenizerData> data = []() -> std::shared_ptr<const TokenizerData> {
    const auto path = tokenizer_json_path();
    if (!path) return nullptr;
    return load_tokenizer_json(*path);
  }();
  return data;
}

const Tokenizer* real_tokenizer() {
  static const std::unique_ptr<Tokenizer> tokenizer = []() -> std::unique_ptr<Tokenizer> {
    const auto data = real_tokenizer_data();
    if (!data) return nullptr;
    return std::make_unique<Tokenizer>(*data);
  }();
  return tokenizer.get();
}

const nlohmann::json& refs_a() {
  static const nlohmann::json refs = [] {
    const auto dir = goldens_dir();
    if (!dir) return nlohmann::json();
    std::ifstream in(*dir / "a" / "refs-a.json");
    return nlohmann::json::parse(in);
  }();
  return refs;
}

}  // namespace gptoss::test
