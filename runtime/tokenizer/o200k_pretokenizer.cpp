#include "runtime/tokenizer/o200k_pretokenizer.h"

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/tokenizer/unicode_class.h"
#include "runtime/tokenizer/utf8.h"

namespace gptoss {

const std::string_view kO200kPretokenizerRegex =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*"
    "|\\s*[\\r\\n]+"
    "|\\s+(?!\\S)"
    "|\\s+";

namespace {
using unicode::PretokenClass;

// Per-character facts the pattern needs, as bits.
enum : uint8_t {
  kUpperSet = 1 << 0,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  kLowerSet = 1 << 1,  // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
  kLetter = 1 << 2,    // \p{L}
  kNumber = 1 << 3,    // \p{N}
  kSpace = 1 << 4,     // \s
  kNewline = 1 << 5,   // \r or \n
};

uint8_t flags_of(PretokenClass c) {
  switch (c) {
    case PretokenClass::Lu: case PretokenClass::Lt: return kUpperSet | kLetter;
    case PretokenClass::Ll: return kLowerSet | kLetter;
    case PretokenClass::Lm: case PretokenClass::Lo: return kUpperSet | kLowerSet | kLetter;
    case PretokenClass::Mark: return kUpperSet | kLowerSet;
    case PretokenClass::Number: return kNumber;
    case PretokenClass::Space: return kSpace;
    case PretokenClass::Other: return 0;
  }
  return 0;
}

// The text as characters: start byte offset, code point (or a value above U+10FFFF for an
// invalid byte run) and flags.
struct Chars {
  std::vector<uint32_t> offset;  // size n + 1
  std::vector<uint32_t> code_point;
  std::vector<uint8_t> flags;
  size_t size() const { return code_point.size(); }
};

void decode_chars(std::string_view text, Chars& chars) {
  chars.offset.clear();
  chars.code_point.clear();
  chars.flags.clear();
  static const std::array<uint8_t, 128> ascii_flags = [] {
    std::array<uint8_t, 128> t{};
    for (uint32_t c = 0; c < 128; ++c) t[c] = flags_of(unicode::pretoken_class(c));
    t['\r'] |= kNewline;
    t['\n'] |= kNewline;
    return t;
  }();
  size_t pos = 0;
  while (pos < text.size()) {
    chars.offset.push_back(static_cast<uint32_t>(pos));
    const uint8_t b = static_cast<uint8_t>(text[pos]);
    if (b < 0x80) {
      chars.code_point.push_back(b);
      chars.flags.push_back(ascii_flags[b]);
      ++pos;
      continue;
    }
    const utf8::Decoded d = utf8::decode(text, pos);
    if (d.valid) {
      chars.code_point.push_back(d.code_point);
      chars.flags.push_back(flags_of(unicode::pretoken_class(d.code_point)));
    } else {
      chars.code_point.push_back(0xFFFFFFFFu);
      chars.flags.push_back(0);
    }
    pos += d.length;
  }
  chars.offset.push_back(static_cast<uint32_t>(pos));
}

class Matcher {
 public:
  explicit Matcher(const Chars& chars) : c_(chars), n_(chars.size()) {}

  // End (exclusive, in characters) of the match that starts at p, or p when nothing matches.
  size_t match_at(size_t p) const {
    size_t e;
    if ((e = letters_lower_tail(p)) != p) return e;
    if ((e = letters_upper_head(p)) != p) return e;
    if ((e = digits(p)) != p) return e;
    if ((e = punctuation(p)) != p) return e;
    if ((e = spaces_to_newline(p)) != p) return e;
    if ((e = spaces_not_before_text(p)) != p) return e;
    return spaces(p);
  }

 private:
  bool has(size_t i, uint8_t f) const { return i < n_ && (c_.flags[i] & f) != 0; }
  // [^\r\n\p{L}\p{N}]
  bool is_prefix(size_t i) const { return i < n_ && (c_.flags[i] & (kNewline | kLetter | kNumber)) == 0; }
  // [^\s\p{L}\p{N}]
  bool is_punct(size_t i) const { return i < n_ && (c_.flags[i] & (kSpace | kLetter | kNumber)) == 0; }
  size_t run(size_t i, uint8_t f) const {
    while (has(i, f)) ++i;
    return i;
  }
  uint32_t lower_ascii(size_t i) const {
    if (i >= n_) return 0;
    const uint32_t cp = c_.code_point[i];
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp == 0x17F) return 's';  // LATIN SMALL LETTER LONG S case-folds to 's'
    return cp;
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)? at e: where it ends (e when absent).
  size_t contraction(size_t e) const {
    if (e >= n_ || c_.code_point[e] != '\'') return e;
    const uint32_t a = lower_ascii(e + 1), b = lower_ascii(e + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return e + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return e + 3;
    return e;
  }

  // [^\r\n\p{L}\p{N}]?[Upper]*[Lower]+(contraction)?
  size_t letters_lower_tail(size_t p) const {
    for (int take_prefix = is_prefix(p) ? 1 : 0; take_prefix >= 0; --take_prefix) {
      const size_t q = p + static_cast<size_t>(take_prefix);
      const size_t upper_end = run(q, kUpperSet);
      // Backtrack [Upper]* from its longest until [Lower]+ can start.
      for (size_t j = upper_end + 1; j-- > q;)
        if (has(j, kLowerSet)) return contraction(run(j, kLowerSet));
    }
    return p;
  }

  // [^\r\n\p{L}\p{N}]?[Upper]+[Lower]*(contraction)?
  size_t letters_upper_head(size_t p) const {
    for (int take_prefix = is_prefix(p) ? 1 : 0; take_prefix >= 0; --take_prefix) {
      const size_t q = p + static_cast<size_t>(take_prefix);
      const size_t upper_end = run(q, kUpperSet);
      if (upper_end > q) return contraction(run(upper_end, kLowerSet));
    }
    return p;
  }

  // \p{N}{1,3}
  size_t digits(size_t p) const {
    size_t e = p;
    while (e < p + 3 && has(e, kNumber)) ++e;
    return e;
  }

  // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'  (a space is never punctuation, so the optional space only
  // matters when punctuation follows it)
  size_t punctuation(size_t p) const {
    size_t q = p;
    if (q < n_ && c_.code_point[q] == ' ') ++q;
    if (!is_punct(q)) return p;
    size_t e = q;
    while (is_punct(e)) ++e;
    while (e < n_ && (c_.code_point[e] == '\r' || c_.code_point[e] == '\n' || c_.code_point[e] == '/')) ++e;
    return e;
  }

  // \s*[\r\n]+ : backtracking \s* leaves the last newline of the space run to [\r\n]+, and the
  // space characters after it are not newlines, so the match ends right after that newline.
  size_t spaces_to_newline(size_t p) const {
    const size_t end = run(p, kSpace);
    for (size_t i = end; i > p; --i)
      if (has(i - 1, kNewline)) return i;
    return p;
  }

  // \s+(?!\S) : the whole run at the end of the text, else the run less its last character.
  size_t spaces_not_before_text(size_t p) const {
    const size_t end = run(p, kSpace);
    if (end == n_ && end > p) return end;
    return end >= p + 2 ? end - 1 : p;
  }

  // \s+
  size_t spaces(size_t p) const { return run(p, kSpace); }

  const Chars& c_;
  size_t n_;
};
}  // namespace

void o200k_split(std::string_view text, const std::function<void(std::string_view)>& piece) {
  thread_local Chars chars;
  decode_chars(text, chars);
  const Matcher matcher(chars);
  const size_t n = chars.size();
  size_t p = 0, unmatched_from = 0;
  const auto bytes = [&](size_t from, size_t to) {
    return text.substr(chars.offset[from], chars.offset[to] - chars.offset[from]);
  };
  while (p < n) {
    const size_t e = matcher.match_at(p);
    if (e == p) {  // cannot happen for this pattern, but a gap is a piece of its own (Isolated)
      ++p;
      continue;
    }
    if (unmatched_from < p) piece(bytes(unmatched_from, p));
    piece(bytes(p, e));
    p = unmatched_from = e;
  }
  if (unmatched_from < n) piece(bytes(unmatched_from, n));
}

}  // namespace gptoss
