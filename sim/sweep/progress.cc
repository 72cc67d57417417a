#include "sim/sweep/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace perfsim {
namespace {

constexpr int kBarWidth = 20;

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 12345 -> "12,345".
std::string Grouped(int64_t v) {
  std::string digits = absl::StrCat(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Clock(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace

ProgressMeter::ProgressMeter(std::ostream& out, int64_t total, ProgressOptions options)
    : out_(out), total_(total), options_(std::move(options)) {
  if (!options_.clock) options_.clock = SteadySeconds;
  if (options_.interval_seconds <= 0) options_.interval_seconds = options_.terminal ? 0.1 : 5.0;
  start_ = options_.clock();
  // The first draw comes one interval in: a rate over the first microseconds means nothing.
  last_draw_ = start_;
}

std::string ProgressMeter::Line(int64_t done, int64_t total, double elapsed, bool terminal) {
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1;
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const bool known = rate > 0;
  const double eta = known ? static_cast<double>(total - done) / rate : 0;
  if (terminal) {
    const int filled = static_cast<int>(std::floor(fraction * kBarWidth));
    return absl::StrFormat(
        "[%s%s] %*d/%d %5.1f%%  %s points/s  ETA %s", std::string(filled, '#'),
        std::string(kBarWidth - filled, '.'), static_cast<int>(absl::StrCat(total).size()), done,
        total, 100 * fraction, Grouped(std::llround(rate)), known ? Clock(eta) : "-:--:--");
  }
  return absl::StrFormat("sweep: %d/%d points (%.1f%%), %d points/s, ETA %s", done, total,
                         100 * fraction, std::llround(rate),
                         known ? absl::StrCat(std::llround(eta), " s") : "unknown");
}

void ProgressMeter::Update(int64_t done) {
  const double now = options_.clock();
  if (now - last_draw_ < options_.interval_seconds) return;
  last_draw_ = now;
  drew_ = true;
  const std::string line = Line(done, total_, now - start_, options_.terminal);
  if (options_.terminal) {
    out_ << "\r" << line << "\x1b[K" << std::flush;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

void ProgressMeter::Finish(int64_t done, bool interrupted) {
  const double now = options_.clock();
  const std::string line = Line(done, total_, now - start_, options_.terminal);
  const char* note = interrupted ? "  (interrupted)" : "";
  if (options_.terminal) {
    out_ << "\r" << line << note << "\x1b[K\n" << std::flush;
  } else if (drew_ || interrupted) {
    out_ << line << note << "\n" << std::flush;
  }
}

}  // namespace perfsim
