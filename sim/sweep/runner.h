// Running a sweep (or one shard of it) on J threads, interruptibly.
//
//   SweepRun run = RunSweep(enumeration, {.shard = 0, .shard_count = 1, .jobs = 2});
//   run.results;        // one PointResult per evaluated point, ascending index
//   run.interrupted;    // RequestSweepInterrupt() was called (Ctrl-C): results are partial
//
// Threads take whole blocks (the points sharing a lowered module) from a shared counter and
// evaluate them with their own SweepEvaluator; results are gathered and sorted by point
// index, so the output does not depend on J or on timing (except which points an interrupted
// run reached).
//
// Interruption: RequestSweepInterrupt only stores to a lock-free std::atomic<bool>, so a
// SIGINT handler may call it; every thread checks the flag before each point, stops, and the
// run returns what was evaluated. The flag stays set until ClearSweepInterrupt: a caller
// clears it when it starts listening for Ctrl-C (perfsim sweep: before it reads its flags),
// so that an interrupt that came while the space was being read or enumerated stops the run
// before its first point (interrupted, no results) instead of being forgotten.
//
// --jobs: at most kMaxSweepJobs threads; a thread the system refuses means fewer workers (the
// calling thread works when none starts), never an abort.
#ifndef PERFSIM_SIM_SWEEP_RUNNER_H_
#define PERFSIM_SIM_SWEEP_RUNNER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/sweep/evaluator.h"
#include "sim/sweep/space.h"

namespace perfsim {

// The most threads a sweep runs (--jobs); a point's evaluation is CPU-bound, so more threads
// than cores only add memory (each keeps its own cache of lowered modules).
inline constexpr int64_t kMaxSweepJobs = 256;

void RequestSweepInterrupt();
void ClearSweepInterrupt();
bool SweepInterruptRequested();

struct SweepRunOptions {
  int64_t shard = 0;
  int64_t shard_count = 1;
  int64_t jobs = 1;
  // Called on the calling thread with the points evaluated so far (after every point with one
  // job; about ten times a second with more).
  std::function<void(int64_t done, int64_t total)> progress;
  // Called on the calling thread after each point with one job (tests use it to interrupt a
  // run at a chosen point).
  std::function<void(const PointResult&)> on_point;
};

struct SweepRun {
  std::vector<PointResult> results;  // evaluated points, ascending index
  int64_t planned = 0;               // points of this shard
  bool interrupted = false;
  SweepCacheStats stats;
  double seconds = 0;  // wall time
};

SweepRun RunSweep(const SweepEnumeration& enumeration, const SweepRunOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_RUNNER_H_
