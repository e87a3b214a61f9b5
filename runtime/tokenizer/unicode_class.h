#pragma once
// The Unicode classes the o200k pre-tokenizer regex asks about, per code point. The tables are
// generated at development time by tools/unicode/gen_pretokenizer_tables.py (unicode_tables.cpp).
#include <cstddef>
#include <cstdint>

namespace gptoss::unicode {

// One class per code point. Everything not listed (punctuation, symbols, controls that are not
// white space, unassigned code points) is Other.
enum class PretokenClass : uint8_t { Other, Lu, Ll, Lt, Lm, Lo, Mark, Number, Space };

struct CodePointRange {
  uint32_t first;
  uint32_t last;  // inclusive
  PretokenClass cls;
};

extern const char* const kUnicodeVersion;      // version of the Unicode Character Database used
extern const CodePointRange kPretokenRanges[];  // sorted, disjoint
extern const size_t kPretokenRangeCount;

// O(1) for the BMP (a 64 KiB table built on first use), binary search above it.
PretokenClass pretoken_class(uint32_t code_point);

}  // namespace gptoss::unicode
