#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal and at most ~10 times
// a second, so logs and pipes stay clean. It shows the rate (MB/s of bytes, or tokens/s) and the
// estimated time left at that rate.
#include <chrono>
#include <cstdint>
#include <string>

namespace gptoss {

class ProgressBar {
 public:
  enum class Unit { Bytes, Tokens };
  explicit ProgressBar(std::string label, bool enabled, Unit unit = Unit::Bytes);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total, const std::string& item = {});
  void finish();

 private:
  std::string label_;
  bool enabled_;
  Unit unit_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

bool stderr_is_terminal();

// "1:05:09", "4:07", "0:03" (hours only when needed).
std::string format_duration(double seconds);

}  // namespace gptoss
