#pragma once
// The real o200k_harmony tokenizer, loaded once per test binary (parsing the 27 MB json takes
// a second or two), and the tokenizer goldens of refs-a.json.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/tokenizer_data.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/test_support.h"

namespace gptoss::test {

// nullptr when tokenizer.json is not cached.
std::shared_ptr<const TokenizerData> real_tokenizer_data();
const Tokenizer* real_tokenizer();
// refs-a.json, or null json when the goldens are absent.
const nlohmann::json& refs_a();

// Deterministic text of about `bytes` bytes that mixes what the pre-tokenizer must get right:
// words in several scripts and cases, contractions in any case, digits, punctuation runs, runs of
// spaces, tabs and newlines, emoji with joiners and modifiers, combining marks, CJK, and scattered
// code points from the whole Unicode range (valid UTF-8 only).
std::string mixed_text(size_t bytes, uint64_t seed);

}  // namespace gptoss::test

#define REAL_TOKENIZER_OR_SKIP()                                                             \
  const ::gptoss::Tokenizer* tokenizer = ::gptoss::test::real_tokenizer();                   \
  if (!tokenizer) {                                                                          \
    if (::gptoss::test::in_ci())                                                             \
      FAIL() << "CI=true but " << (::gptoss::test::cache_dir() / "tokenizer.json").string()   \
             << " is missing: scripts/setup.sh fetches it in CI, and CI must not skip what needs it"; \
    GTEST_SKIP() << "tokenizer.json is not cached: run scripts/setup.sh";                    \
  }
