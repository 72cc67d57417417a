// Progress of a sweep on stderr.
//
//   ProgressMeter meter(std::cerr, /*total=*/5000, {.terminal = isatty(2)});
//   meter.Update(done);          // cheap; draws only when its interval has passed
//   meter.Finish(done, interrupted);
//
// The first line comes one interval after the start.
// On a terminal: one line redrawn in place ("\r" ... "\x1b[K"), at most every 0.1 s:
//   [##########..........]  2500/5000  50.0%  12,345 points/s  ETA 0:00:01
// Otherwise (a log file, a CI job): a plain line at most every 5 s, never a control character:
//   sweep: 2500/5000 points (50.0%), 12345 points/s, ETA 1 s
// The clock is injectable for tests.
#ifndef PERFSIM_SIM_SWEEP_PROGRESS_H_
#define PERFSIM_SIM_SWEEP_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace perfsim {

struct ProgressOptions {
  bool terminal = false;
  // Seconds between draws; <= 0: 0.1 on a terminal, 5 otherwise.
  double interval_seconds = 0;
  // Seconds since some fixed origin; default: a steady clock.
  std::function<double()> clock;
};

class ProgressMeter {
 public:
  ProgressMeter(std::ostream& out, int64_t total, ProgressOptions options);
  void Update(int64_t done);
  // The last line: on a terminal, the bar at its final state and a newline.
  void Finish(int64_t done, bool interrupted);

  // The text of one update (without "\r" or the newline).
  static std::string Line(int64_t done, int64_t total, double elapsed_seconds, bool terminal);

 private:
  std::ostream& out_;
  int64_t total_;
  ProgressOptions options_;
  double start_ = 0;
  double last_draw_ = 0;
  bool drew_ = false;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_PROGRESS_H_
