#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal and at most ~10 times
// a second, so logs and pipes stay clean.
#include <chrono>
#include <cstdint>
#include <string>

namespace gptoss {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label, bool enabled);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total, const std::string& item = {});
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

bool stderr_is_terminal();

}  // namespace gptoss
