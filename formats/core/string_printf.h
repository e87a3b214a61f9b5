#pragma once
// printf's formatting into a std::string, for the tables and lines the reports print (the
// numbers' formats, %.3e, %+.3e, %.2f%%, are printf's).
#include <string>

namespace gptoss {

// Appends the formatted text to `out`.
[[gnu::format(printf, 2, 3)]] void append_printf(std::string& out, const char* format, ...);
[[gnu::format(printf, 1, 2)]] std::string string_printf(const char* format, ...);

}  // namespace gptoss
