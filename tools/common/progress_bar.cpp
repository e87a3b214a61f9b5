#include "tools/common/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace gptoss {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(uint64_t done, uint64_t total, const std::string& item) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double mbps = secs > 0 ? static_cast<double>(done) / secs / 1e6 : 0;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::string shown = item.size() > 40 ? "..." + item.substr(item.size() - 37) : item;
  std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %8.1f MB/s %s", label_.c_str(), bar.c_str(), frac * 100, mbps,
               shown.c_str());
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
