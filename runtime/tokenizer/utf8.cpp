#include "runtime/tokenizer/utf8.h"

namespace gptoss::utf8 {

Decoded decode(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return {lead, 1, true, false};
  uint32_t needed;  // continuation bytes
  uint8_t second_lo = 0x80, second_hi = 0xBF;
  uint32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    needed = 1; cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    needed = 2; cp = lead & 0x0Fu;
    if (lead == 0xE0) second_lo = 0xA0;  // no overlong forms
    if (lead == 0xED) second_hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    needed = 3; cp = lead & 0x07u;
    if (lead == 0xF0) second_lo = 0x90;
    if (lead == 0xF4) second_hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {0, 1, false, false};  // continuation byte or a byte never used in UTF-8
  }
  for (uint32_t k = 1; k <= needed; ++k) {
    if (pos + k >= text.size()) return {0, k, false, true};
    const uint8_t b = byte(pos + k);
    const uint8_t lo = k == 1 ? second_lo : 0x80, hi = k == 1 ? second_hi : 0xBF;
    if (b < lo || b > hi) return {0, k, false, false};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {cp, needed + 1, true, false};
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string to_valid_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    // Copy runs of ASCII at once: the common case.
    size_t run = pos;
    while (run < bytes.size() && static_cast<uint8_t>(bytes[run]) < 0x80) ++run;
    out.append(bytes.substr(pos, run - pos));
    pos = run;
    if (pos >= bytes.size()) break;
    const Decoded d = decode(bytes, pos);
    if (d.valid) out.append(bytes.substr(pos, d.length));
    else out.append("\xEF\xBF\xBD");
    pos += d.length;
  }
  return out;
}

size_t complete_prefix_length(std::string_view bytes) {
  // An incomplete sequence is a lead byte and at most two continuation bytes. Decoding from any
  // byte reaches every lead byte (a unit only ever swallows continuation bytes), so starting three
  // bytes from the end finds the unit that the input ends in.
  size_t pos = bytes.size() > 3 ? bytes.size() - 3 : 0;
  while (pos < bytes.size()) {
    const Decoded d = decode(bytes, pos);
    if (d.truncated) return pos;
    pos += d.length;
  }
  return bytes.size();
}

}  // namespace gptoss::utf8
