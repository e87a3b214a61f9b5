#include "formats/core/string_printf.h"

#include <cstdarg>
#include <cstdio>

namespace gptoss {
namespace {

void append_vprintf(std::string& out, const char* format, va_list args) {
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n) + 1);  // vsnprintf writes the terminating NUL too
    std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, again);
    out.resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

}  // namespace

void append_printf(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  append_vprintf(out, format, args);
  va_end(args);
}

std::string string_printf(const char* format, ...) {
  std::string out;
  va_list args;
  va_start(args, format);
  append_vprintf(out, format, args);
  va_end(args);
  return out;
}

}  // namespace gptoss
