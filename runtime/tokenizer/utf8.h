#pragma once
// Strict UTF-8 decoding with the Unicode "maximal subpart" rule for invalid input: each maximal
// prefix of a well-formed sequence that cannot be completed counts as one error. This is what
// Rust's String::from_utf8_lossy (and so Hugging Face decode) replaces with one U+FFFD.
#include <cstdint>
#include <string>
#include <string_view>

namespace gptoss::utf8 {

struct Decoded {
  uint32_t code_point;  // valid only when valid is true
  uint32_t length;      // bytes consumed: the sequence, or the maximal invalid subpart (>= 1)
  bool valid;
  bool truncated;       // invalid only because the input ended inside a well-formed prefix
};

// Decodes the sequence starting at text[pos] (pos < text.size()).
Decoded decode(std::string_view text, size_t pos);

// Every invalid maximal subpart replaced by U+FFFD.
std::string to_valid_lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end inside an incomplete (but so far
// well-formed) sequence: what a streaming decoder may emit now.
size_t complete_prefix_length(std::string_view bytes);

void append(std::string& out, uint32_t code_point);

}  // namespace gptoss::utf8
