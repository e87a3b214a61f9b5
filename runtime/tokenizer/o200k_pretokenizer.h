#pragma once
// The o200k pre-tokenizer: splits text into the pieces that BPE encodes one by one, exactly as
// the regex below does under leftmost-first (Oniguruma / Rust regex / PCRE) semantics. No regex
// engine is used: a hand-written matcher for this one pattern, with generated Unicode tables.
#include <functional>
#include <string_view>

namespace gptoss {

// The pattern as tokenizer.json and model.bin spell it (o200k_base / o200k_harmony).
extern const std::string_view kO200kPretokenizerRegex;

// Calls `piece` for each consecutive piece of `text`, in order; the pieces cover the text exactly.
// Bytes that are not valid UTF-8 are treated as characters of no class (like punctuation), so any
// byte string is split without error.
void o200k_split(std::string_view text, const std::function<void(std::string_view)>& piece);

}  // namespace gptoss
