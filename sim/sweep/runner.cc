#include "sim/sweep/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace perfsim {
namespace {

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

// Consecutive runs of points of one block: the units threads take.
std::vector<std::pair<size_t, size_t>> BlockRuns(const SweepEnumeration& e,
                                                 const std::vector<int64_t>& points) {
  std::vector<std::pair<size_t, size_t>> runs;
  const int64_t r = static_cast<int64_t>(e.routings().size());
  size_t begin = 0;
  for (size_t i = 1; i <= points.size(); ++i) {
    if (i == points.size() || points[i] / r != points[begin] / r) {
      runs.emplace_back(begin, i);
      begin = i;
    }
  }
  return runs;
}

}  // namespace

void RequestSweepInterrupt() { g_interrupt.store(true, std::memory_order_relaxed); }
void ClearSweepInterrupt() { g_interrupt.store(false, std::memory_order_relaxed); }
bool SweepInterruptRequested() { return g_interrupt.load(std::memory_order_relaxed); }

SweepRun RunSweep(const SweepEnumeration& e, const SweepRunOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  // An interrupt requested before the run started is honoured: no point is evaluated.
  SweepRun run;
  const std::vector<int64_t> points = e.ShardPoints(options.shard, options.shard_count);
  run.planned = static_cast<int64_t>(points.size());
  const int64_t total = run.planned;
  if (options.jobs <= 1) {
    SweepEvaluator evaluator(e);
    for (int64_t p : points) {
      if (SweepInterruptRequested()) break;
      run.results.push_back(evaluator.Evaluate(p));
      if (options.on_point) options.on_point(run.results.back());
      if (options.progress) options.progress(static_cast<int64_t>(run.results.size()), total);
    }
    run.stats = evaluator.stats();
  } else {
    const std::vector<std::pair<size_t, size_t>> units = BlockRuns(e, points);
    std::atomic<size_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::vector<std::thread> workers;
    auto work = [&] {
      SweepEvaluator evaluator(e);
      std::vector<PointResult> mine;
      for (size_t u = next++; u < units.size(); u = next++) {
        for (size_t k = units[u].first; k < units[u].second; ++k) {
          if (SweepInterruptRequested()) break;
          mine.push_back(evaluator.Evaluate(points[k]));
          done.fetch_add(1, std::memory_order_relaxed);
        }
        if (SweepInterruptRequested()) break;
      }
      std::lock_guard<std::mutex> lock(mu);
      for (PointResult& r : mine) run.results.push_back(std::move(r));
      run.stats.Add(evaluator.stats());
    };
    for (int64_t j = 0; j < options.jobs; ++j) {
      // Workers share one counter, so a thread the system refuses only means fewer of them;
      // with none at all, the calling thread does the work.
      try {
        workers.emplace_back(work);
      } catch (const std::system_error&) {
        break;
      }
    }
    if (workers.empty()) work();
    // The calling thread reports progress until every worker is done.
    while (true) {
      const int64_t now = done.load(std::memory_order_relaxed);
      if (options.progress) options.progress(now, total);
      if (now >= total || SweepInterruptRequested()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (std::thread& w : workers) w.join();
    if (options.progress) options.progress(done.load(), total);
    std::sort(run.results.begin(), run.results.end(),
              [](const PointResult& a, const PointResult& b) { return a.index < b.index; });
  }
  run.interrupted = SweepInterruptRequested() && static_cast<int64_t>(run.results.size()) < total;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}

}  // namespace perfsim
