#include "runtime/tokenizer/unicode_class.h"

#include <algorithm>
#include <array>
#include <memory>

namespace gptoss::unicode {

namespace {
PretokenClass search_ranges(uint32_t code_point) {
  const CodePointRange* end = kPretokenRanges + kPretokenRangeCount;
  const CodePointRange* it = std::upper_bound(kPretokenRanges, end, code_point,
                                              [](uint32_t cp, const CodePointRange& r) { return cp < r.first; });
  if (it == kPretokenRanges) return PretokenClass::Other;
  --it;
  return code_point <= it->last ? it->cls : PretokenClass::Other;
}

const std::array<PretokenClass, 0x10000>& bmp_table() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<PretokenClass, 0x10000>>();
    t->fill(PretokenClass::Other);
    for (size_t i = 0; i < kPretokenRangeCount; ++i) {
      const CodePointRange& r = kPretokenRanges[i];
      for (uint32_t cp = r.first; cp <= r.last && cp < 0x10000; ++cp) (*t)[cp] = r.cls;
    }
    return t;
  }();
  return *table;
}
}  // namespace

PretokenClass pretoken_class(uint32_t code_point) {
  if (code_point < 0x10000) return bmp_table()[code_point];
  return search_ranges(code_point);
}

}  // namespace gptoss::unicode
