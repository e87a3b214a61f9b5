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

namespace gptoss::test {

std::string mixed_text(size_t bytes, uint64_t seed) {
  uint64_t state = seed;
  const auto next = [&state]() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  static const char* const kPieces[] = {
      "the", "The", "THE", "quick", "Brown", "fOX", "jumps", "over", "lazy", "dog", "don't", "DON'T", "we'll",
      "They'Ve", "I'm", "she'S", "it'd", "you're", "x'LL", "'s", "'", "''", "CamelCase", "HTTPServer", "iPhone",
      "naïve", "café", "résumé", "Ünïcödé", "straße", "Ωμέγα", "ΣΊΣΥΦΟΣ", "Привет", "мир", "日本語", "のテキスト",
      "中文", "한국어", "مرحبا", "بالعالم", "שלום", "हिन्दी", "ภาษาไทย", "e\u0301", "a\u0308\u0323", "\u0301\u0302",
      "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "😀", "✨", "ǅungla", "ǈ", "ʰʲ", "ſt", "'ſ", "ℌ", "ⅷ", "①②", "٣٤٥",
      "0", "12", "123", "1234567", "3.14159", "1,000,000", "10.5%", "$42", "#1", "@user", "https://a.b/c?d=1&e=2",
      "/path/to/file", "a/b/c", "--", "...", "!!!", "?!", "(x)", "[y]", "{z}", "<|start|>", "<|end|>", "<tag>", "==",
      "->", "::", ";", ",", ".", "\\", "\"quoted\"", "`code`", "~", "^", "*", "&&", "||", " ", "  ", "   ",
      "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", "  \n  ", "\u00a0", "\u2003",
      "\u3000", "\u200b", "\x07", "\x1b[0m", "\f", "\v", "\u0085", "\u2028",
  };
  constexpr size_t kPieceCount = sizeof(kPieces) / sizeof(kPieces[0]);
  std::string out;
  out.reserve(bytes + 64);
  while (out.size() < bytes) {
    const uint64_t r = next();
    if (r % 16 == 0) {
      // A scattered code point: anywhere in the planes in use, skipping surrogates.
      uint32_t cp = static_cast<uint32_t>((r >> 8) % 0x32000);
      if (cp >= 0xD800 && cp < 0xE000) cp -= 0x800;
      if (cp == 0) cp = 1;
      if (cp < 0x80) out += static_cast<char>(cp);
      else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
      else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        out += static_cast<char>(0xF0 | (cp >> 18)); out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); out += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else {
      out += kPieces[(r >> 8) % kPieceCount];
      if (r % 3 == 0) out += ' ';
    }
  }
  return out;
}

}  // namespace gptoss::test
