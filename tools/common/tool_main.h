#pragma once
// The end of every tool's main: the tool's work runs inside report_errors, and an exception that
// escapes it is one line on stderr, "gptoss-run: <what>", and exit status 2.
#include <exception>
#include <iostream>

namespace gptoss {

template <typename Body>
int report_errors(const char* tool, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gptoss
