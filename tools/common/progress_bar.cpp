#include "tools/common/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gptoss {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<uint64_t>(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%llu:%02llu:%02llu", static_cast<unsigned long long>(total / 3600),
                  static_cast<unsigned long long>(total / 60 % 60), static_cast<unsigned long long>(total % 60));
  else
    std::snprintf(text, sizeof text, "%llu:%02llu", static_cast<unsigned long long>(total / 60),
                  static_cast<unsigned long long>(total % 60));
  return text;
}

ProgressBar::ProgressBar(std::string label, bool enabled, Unit unit)
    : label_(std::move(label)), enabled_(enabled), unit_(unit), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done, uint64_t total, const std::string& item) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double per_second = secs > 0 ? static_cast<double>(done) / secs : 0;
  const double left = per_second > 0 ? static_cast<double>(total - std::min(done, total)) / per_second : NAN;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::string shown = item.size() > 40 ? "..." + item.substr(item.size() - 37) : item;
  char rate[48];
  if (unit_ == Unit::Bytes)
    std::snprintf(rate, sizeof rate, "%8.1f MB/s", per_second / 1e6);
  else
    std::snprintf(rate, sizeof rate, "%8.1f tokens/s", per_second);
  std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %s ETA %s %s", label_.c_str(), bar.c_str(), frac * 100, rate,
               format_duration(left).c_str(), shown.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

}  // namespace gptoss
