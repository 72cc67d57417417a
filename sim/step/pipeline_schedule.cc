#include "sim/step/pipeline_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// A step of p*v*m chunk-micro-batches has twice that many 48-byte tasks. The cap (1.5 GiB of
// tasks, e.g. p = 64, v = 8, m = 32768) keeps a mistyped size from allocating without bound.
constexpr int64_t kMaxChunkMicrobatches = int64_t{1} << 24;

constexpr double kNotDone = -1;  // task end times are >= 0

PipelineTask Task(int64_t device, int64_t chunk, int64_t microbatch, PipelinePass pass) {
  return PipelineTask{.device = device, .chunk = chunk, .microbatch = microbatch, .pass = pass};
}

// GPipe: every forward, then every backward, both in micro-batch order, as
// torch/distributed/pipelining/schedules.py ScheduleGPipe runs them (forward_one_chunk for i in
// range(n_microbatches), then FULL_BACKWARD for microbatch in range(n_microbatches)).
std::vector<PipelineTask> GpipeOrder(int64_t rank, int64_t m) {
  std::vector<PipelineTask> order;
  order.reserve(2 * m);
  for (int64_t i = 0; i < m; ++i) order.push_back(Task(rank, rank, i, PipelinePass::kForward));
  for (int64_t i = 0; i < m; ++i) order.push_back(Task(rank, rank, i, PipelinePass::kBackward));
  return order;
}

// Megatron-LM megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving with get_pp_rank_microbatches: rank r runs
// w = min(p - r - 1, m) warm-up forwards, then m - w steady iterations of (forward w + k,
// backward k), then the w remaining backwards. Micro-batches go in order in both directions.
std::vector<PipelineTask> OneFOneBOrder(int64_t rank, int64_t p, int64_t m) {
  const int64_t warmup = std::min(p - rank - 1, m);
  std::vector<PipelineTask> order;
  order.reserve(2 * m);
  for (int64_t i = 0; i < warmup; ++i) {
    order.push_back(Task(rank, rank, i, PipelinePass::kForward));
  }
  for (int64_t k = 0; k < m - warmup; ++k) {
    order.push_back(Task(rank, rank, warmup + k, PipelinePass::kForward));
    order.push_back(Task(rank, rank, k, PipelinePass::kBackward));
  }
  for (int64_t k = m - warmup; k < m; ++k) {
    order.push_back(Task(rank, rank, k, PipelinePass::kBackward));
  }
  return order;
}

// Megatron-LM megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving, with the default
// microbatch_group_size_per_vp_stage = p (model_parallel_config.py: "a depth-first schedule"):
//  - get_schedule_table: micro-batches are taken in groups of N = p (the last group holds the
//    rest); within a group, every local chunk j = 0..v-1 in turn runs the group's micro-batches.
//    Virtual micro-batch k (0 <= k < m*v) is the table's k-th (micro-batch, local chunk).
//  - get_model_chunk_id: forward k runs local chunk table[k].local_chunk; backward k runs
//    local chunk v - 1 - table[k].local_chunk. Backward pops input_tensors[chunk] first-in
//    first-out, so its micro-batch is table[k].microbatch as well.
//  - get_pp_rank_microbatches: warm-up w = min(2 * (p - r - 1) + (v - 1) * N, m * v) forwards;
//    then m*v - w steady iterations of (forward w + k, backward k); then the remaining
//    backwards k = m*v - w .. m*v - 1 (cool-down).
// Local chunk j of rank r is global chunk j * p + r: get_transformer_layer_offset in
// megatron/core/transformer/transformer_layer.py gives vp_stage j of pipeline rank r the layers
// from j * (L / v) + r * (L / (p v)), i.e. the (j * p + r)-th slice of L / (p v) layers.
struct InterleavedSlot {
  int64_t microbatch;
  int64_t local_chunk;
};

// get_schedule_table with group size N = p; the same on every rank.
std::vector<InterleavedSlot> InterleavedTable(int64_t p, int64_t m, int64_t v) {
  const int64_t group = p;
  std::vector<InterleavedSlot> table;
  table.reserve(m * v);
  for (int64_t first = 0; first < m; first += group) {
    const int64_t last = first + group >= m ? m : first + group;
    for (int64_t j = 0; j < v; ++j) {
      for (int64_t i = first; i < last; ++i) table.push_back(InterleavedSlot{i, j});
    }
  }
  return table;
}

std::vector<PipelineTask> InterleavedOrder(int64_t rank, int64_t p, int64_t m, int64_t v,
                                           const std::vector<InterleavedSlot>& table) {
  const int64_t group = p;
  const int64_t total = m * v;
  const int64_t warmup = std::min(2 * (p - rank - 1) + (v - 1) * group, total);
  auto forward = [&](int64_t k) {
    return Task(rank, table[k].local_chunk * p + rank, table[k].microbatch, PipelinePass::kForward);
  };
  auto backward = [&](int64_t k) {
    return Task(rank, (v - 1 - table[k].local_chunk) * p + rank, table[k].microbatch,
                PipelinePass::kBackward);
  };
  std::vector<PipelineTask> order;
  order.reserve(2 * total);
  for (int64_t k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(forward(warmup + k));
    order.push_back(backward(k));
  }
  for (int64_t k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

// DeepSeek-V3's DualPipe, from deepseek-ai/DualPipe dualpipe/dualpipe.py DualPipe.step()
// (the order only; the code here is our own). p ranks (even), m micro-batches (even, >= 2p),
// n = m/2 per direction. Rank r holds chunk r (direction 0: micro-batches enter at rank 0) and
// chunk p-1-r (direction 1: they enter at rank p-1); examples/example_dualpipe.py builds rank r
// from full_modules[r] and full_modules[p-1-r] and gives rank 0 the batch's first half.
//
// The source names a rank's two directions by "phase": phase 0 is the direction in which the
// rank sits in the first half of the pipeline (direction 0 for r < p/2, direction 1 otherwise),
// phase 1 the other. With h = min(r, p-1-r) (distance to the nearer end) and half = p/2, the
// compute order is, phase by phase (F forward, B backward, B' input-gradient-only backward,
// W the weight gradient of the oldest B' not yet followed by one, first in first out):
//   1. 2(half-h-1) x  F0
//   2. (h+1)       x  F0 F1
//   3. (half-h-1)  x  B'1 W F1                ("nB1W1F1 (Use zero bubble)")
//   4. (n-p+h+1)   x  F0 B1 F1 B0             (main step; the source overlaps F0&B1, F1&B0)
//   5. (half-h-1)  x  B1 F1 B0
//   6. (h+1)       x  B1 B0, the second half of them B' ("the second half of the chunks use zero
//                     bubble": from iteration (h+1)/2 on, starting at its B1 when h is odd and
//                     at its B0 when h is even, so h+1 of the 2(h+1) backwards are B')
//   7. (half-h-1)  x  W B'0
//   8. (h+1)       x  W
// Each direction runs its forwards and its backwards in micro-batch order (the source's
// current_f_chunk_id / current_b_chunk_id counters). Counted over the steps each direction runs
// n forwards and n backwards, and every B' is followed by exactly one W.
//
// Not modelled: dualpipe.py starts an overlapped F&B pair after one wait for both of its inputs
// (_forward_backward_chunk) and runs the two at once; here each task waits for its own input and
// the device runs them one after the other, so the simulated bubble is at most the published
// (PP/2-1)(F&B+B-3W) rather than equal to it (the DualPipe bubble test in
// tests/step/pipeline_schedule_test.cc).
class DualPipeRankOrder {
 public:
  DualPipeRankOrder(int64_t rank, int64_t p, int64_t m)
      : rank_(rank), p_(p), n_(m / 2), second_half_(rank >= p / 2) {
    order_.reserve(3 * m);  // m forwards, m backwards, at most m weights
  }

  void Forward(int phase) {
    const int direction = Direction(phase);
    order_.push_back(Task(rank_, Chunk(direction), Microbatch(direction, forwards_[direction]++),
                          PipelinePass::kForward));
  }
  void Backward(int phase, bool defer_weight) {
    const int direction = Direction(phase);
    PipelineTask task =
        Task(rank_, Chunk(direction), Microbatch(direction, backwards_[direction]++),
             PipelinePass::kBackward);
    task.weight_deferred = defer_weight;
    if (defer_weight) deferred_.push_back(task);
    order_.push_back(task);
  }
  void Weight() {
    PERFSIM_CHECK(next_weight_ < deferred_.size()) << "DualPipe rank " << rank_ << ": W with no B'";
    const PipelineTask& backward = deferred_[next_weight_++];
    order_.push_back(Task(rank_, backward.chunk, backward.microbatch, PipelinePass::kWeight));
  }
  std::vector<PipelineTask> Take() {
    PERFSIM_CHECK(next_weight_ == deferred_.size()) << "DualPipe rank " << rank_ << ": B' left";
    return std::move(order_);
  }

 private:
  int Direction(int phase) const { return phase ^ (second_half_ ? 1 : 0); }
  int64_t Chunk(int direction) const { return direction == 0 ? rank_ : p_ - 1 - rank_; }
  int64_t Microbatch(int direction, int64_t k) const { return direction == 0 ? k : n_ + k; }

  int64_t rank_;
  int64_t p_;
  int64_t n_;
  bool second_half_;
  int64_t forwards_[2] = {0, 0};
  int64_t backwards_[2] = {0, 0};
  std::vector<PipelineTask> deferred_;
  size_t next_weight_ = 0;
  std::vector<PipelineTask> order_;
};

std::vector<PipelineTask> DualPipeOrder(int64_t rank, int64_t p, int64_t m) {
  const int64_t half = p / 2;
  const int64_t h = std::min(rank, p - 1 - rank);
  const int64_t n = m / 2;
  DualPipeRankOrder o(rank, p, m);
  for (int64_t i = 0; i < 2 * (half - h - 1); ++i) o.Forward(0);
  for (int64_t i = 0; i < h + 1; ++i) {
    o.Forward(0);
    o.Forward(1);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    o.Backward(1, /*defer_weight=*/true);
    o.Weight();
    o.Forward(1);
  }
  for (int64_t i = 0; i < n - p + h + 1; ++i) {
    o.Forward(0);
    o.Backward(1, /*defer_weight=*/false);
    o.Forward(1);
    o.Backward(0, /*defer_weight=*/false);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    o.Backward(1, /*defer_weight=*/false);
    o.Forward(1);
    o.Backward(0, /*defer_weight=*/false);
  }
  const int64_t step_6 = h + 1;
  for (int64_t i = 0; i < step_6; ++i) {
    const bool odd = h % 2 == 1;
    o.Backward(1, /*defer_weight=*/i > step_6 / 2 || (i == step_6 / 2 && odd));
    o.Backward(0, /*defer_weight=*/i >= step_6 / 2);
  }
  for (int64_t i = 0; i < half - h - 1; ++i) {
    o.Weight();
    o.Backward(0, /*defer_weight=*/true);
  }
  for (int64_t i = 0; i < h + 1; ++i) o.Weight();
  return o.Take();
}

void CheckCostVector(absl::string_view name, const std::vector<double>& seconds,
                     int64_t expected_size, const PipelineSpec& spec,
                     std::vector<std::string>& problems) {
  if (expected_size >= 0 && static_cast<int64_t>(seconds.size()) != expected_size) {
    problems.push_back(absl::StrCat(
        "pipeline costs ", name, ": expected ", expected_size, " entries (one per chunk: stages ",
        spec.stages, " x virtual_stages ", spec.virtual_stages, "); got ", seconds.size()));
  }
  for (size_t c = 0; c < seconds.size(); ++c) {
    if (!std::isfinite(seconds[c]) || seconds[c] < 0) {
      problems.push_back(absl::StrCat("pipeline costs ", name, "[", c,
                                      "]: expected a finite number of seconds >= 0; got ",
                                      seconds[c]));
    }
  }
}

absl::Status InvalidIfAny(const std::vector<std::string>& problems) {
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

std::vector<std::string> SpecProblems(const PipelineSpec& spec) {
  std::vector<std::string> problems;
  if (spec.stages < 1) {
    problems.push_back(absl::StrCat("pipeline stages: expected >= 1; got ", spec.stages));
  }
  if (spec.microbatches < 1) {
    problems.push_back(
        absl::StrCat("pipeline microbatches: expected >= 1; got ", spec.microbatches));
  }
  if (spec.virtual_stages < 1) {
    problems.push_back(
        absl::StrCat("pipeline virtual_stages: expected >= 1; got ", spec.virtual_stages));
  }
  switch (spec.kind) {
    case PipelineScheduleKind::kGpipe:
    case PipelineScheduleKind::kOneFOneB:
      if (spec.virtual_stages > 1) {
        problems.push_back(absl::StrCat(
            "pipeline virtual_stages with ", PipelineScheduleKindName(spec.kind),
            ": expected 1 (model chunks need interleaved_1f1b); got ", spec.virtual_stages));
      }
      break;
    case PipelineScheduleKind::kInterleavedOneFOneB:
      // Megatron runs one stage without pipelining (get_forward_backward_func uses the
      // interleaved schedule only when pp_size > 1).
      if (spec.stages == 1) {
        problems.push_back("pipeline stages with interleaved_1f1b: expected >= 2; got 1");
      }
      // schedules.py forward_backward_pipelining_with_interleaving rejects a group size N
      // (default p) above m ("should range in [PP, M]") and a last group of 0 < m % N < p
      // micro-batches ("dependency bubbles"); with N = p both say m must be a multiple of p.
      if (spec.stages >= 1 && spec.microbatches >= 1 && spec.microbatches % spec.stages != 0) {
        problems.push_back(absl::StrCat(
            "pipeline microbatches with interleaved_1f1b: expected a multiple of stages (",
            spec.stages, "), as Megatron's interleaved schedule requires; got ",
            spec.microbatches));
      }
      break;
    case PipelineScheduleKind::kDualPipe:
      if (spec.virtual_stages > 1) {
        problems.push_back(absl::StrCat(
            "pipeline virtual_stages with dualpipe: expected 1 (each device already holds chunk "
            "r and its mirror p-1-r); got ",
            spec.virtual_stages));
      }
      // dualpipe.py DualPipe.step(): assert num_ranks % 2 == 0; assert num_chunks > 0 and
      // num_chunks % 2 == 0 and num_chunks >= num_ranks * 2.
      if (spec.stages >= 1 && spec.stages % 2 != 0) {
        problems.push_back(absl::StrCat(
            "pipeline stages with dualpipe: expected an even number (two directions); got ",
            spec.stages));
      }
      if (spec.microbatches >= 1 && spec.microbatches % 2 != 0) {
        problems.push_back(absl::StrCat(
            "pipeline microbatches with dualpipe: expected an even number (half enter at each "
            "end); got ",
            spec.microbatches));
      }
      if (spec.stages >= 1 && spec.microbatches >= 1 && spec.microbatches < 2 * spec.stages) {
        problems.push_back(
            absl::StrCat("pipeline microbatches with dualpipe: expected >= 2 x "
                         "stages (",
                         2 * spec.stages, "), as dualpipe.py requires; got ", spec.microbatches));
      }
      break;
  }
  if (spec.stages >= 1 && spec.microbatches >= 1 && spec.virtual_stages >= 1) {
    const bool too_big =
        spec.stages > kMaxChunkMicrobatches ||
        spec.virtual_stages > kMaxChunkMicrobatches / spec.stages ||
        spec.microbatches > kMaxChunkMicrobatches / (spec.stages * spec.virtual_stages);
    if (too_big) {
      problems.push_back(
          absl::StrCat("pipeline size: expected stages x virtual_stages x microbatches <= ",
                       kMaxChunkMicrobatches, "; got ", spec.stages, " x ", spec.virtual_stages,
                       " x ", spec.microbatches));
    }
  }
  return problems;
}

}  // namespace

absl::string_view PipelineScheduleKindName(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::kGpipe:
      return "gpipe";
    case PipelineScheduleKind::kOneFOneB:
      return "1f1b";
    case PipelineScheduleKind::kInterleavedOneFOneB:
      return "interleaved_1f1b";
    case PipelineScheduleKind::kDualPipe:
      return "dualpipe";
  }
  return "unknown";
}

absl::StatusOr<PipelineScheduleKind> ParsePipelineScheduleKind(absl::string_view name) {
  for (PipelineScheduleKind kind :
       {PipelineScheduleKind::kGpipe, PipelineScheduleKind::kOneFOneB,
        PipelineScheduleKind::kInterleavedOneFOneB, PipelineScheduleKind::kDualPipe}) {
    if (name == PipelineScheduleKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("pipeline schedule: expected one of gpipe, 1f1b, interleaved_1f1b, dualpipe; "
                   "got \"",
                   name, "\""));
}

absl::Status PipelineSpec::Validate() const { return InvalidIfAny(SpecProblems(*this)); }

PipelineStageCosts PipelineStageCosts::Uniform(const PipelineSpec& spec, double forward_seconds,
                                               double backward_seconds, double send_seconds) {
  const size_t chunks = static_cast<size_t>(std::max<int64_t>(spec.num_chunks(), 0));
  return PipelineStageCosts{.forward_seconds = std::vector<double>(chunks, forward_seconds),
                            .backward_seconds = std::vector<double>(chunks, backward_seconds),
                            .send_seconds = send_seconds};
}

std::vector<std::vector<PipelineTask>> PipelineOrder(const PipelineSpec& spec) {
  PERFSIM_CHECK(spec.Validate().ok()) << spec.Validate();
  std::vector<std::vector<PipelineTask>> orders;
  orders.reserve(spec.stages);
  const std::vector<InterleavedSlot> interleaved_table =
      spec.kind == PipelineScheduleKind::kInterleavedOneFOneB
          ? InterleavedTable(spec.stages, spec.microbatches, spec.virtual_stages)
          : std::vector<InterleavedSlot>();
  for (int64_t rank = 0; rank < spec.stages; ++rank) {
    switch (spec.kind) {
      case PipelineScheduleKind::kGpipe:
        orders.push_back(GpipeOrder(rank, spec.microbatches));
        break;
      case PipelineScheduleKind::kOneFOneB:
        orders.push_back(OneFOneBOrder(rank, spec.stages, spec.microbatches));
        break;
      case PipelineScheduleKind::kInterleavedOneFOneB:
        orders.push_back(InterleavedOrder(rank, spec.stages, spec.microbatches, spec.virtual_stages,
                                          interleaved_table));
        break;
      case PipelineScheduleKind::kDualPipe:
        orders.push_back(DualPipeOrder(rank, spec.stages, spec.microbatches));
        break;
    }
  }
  return orders;
}

absl::StatusOr<PipelineTimeline> SimulatePipeline(const PipelineSpec& spec,
                                                  const PipelineStageCosts& costs) {
  std::vector<std::string> problems = SpecProblems(spec);
  const int64_t expected_chunks = problems.empty() ? spec.num_chunks() : -1;
  CheckCostVector("forward_seconds", costs.forward_seconds, expected_chunks, spec, problems);
  CheckCostVector("backward_seconds", costs.backward_seconds, expected_chunks, spec, problems);
  if (!costs.weight_seconds.empty()) {
    CheckCostVector("weight_seconds", costs.weight_seconds, expected_chunks, spec, problems);
    const size_t both = std::min(costs.weight_seconds.size(), costs.backward_seconds.size());
    for (size_t c = 0; c < both; ++c) {
      if (costs.weight_seconds[c] > costs.backward_seconds[c]) {
        problems.push_back(
            absl::StrCat("pipeline costs weight_seconds[", c, "]: expected <= backward_seconds[", c,
                         "] (", costs.backward_seconds[c], "); got ", costs.weight_seconds[c]));
      }
    }
  }
  if (!std::isfinite(costs.send_seconds) || costs.send_seconds < 0) {
    problems.push_back(
        absl::StrCat("pipeline costs send_seconds: expected a finite number of seconds >= 0; got ",
                     costs.send_seconds));
  }
  PERFSIM_RETURN_IF_ERROR(InvalidIfAny(problems));

  const int64_t p = spec.stages;
  const int64_t m = spec.microbatches;
  const int64_t chunks = spec.num_chunks();
  PipelineTimeline timeline;
  timeline.device_tasks = PipelineOrder(spec);

  // End times per (chunk, micro-batch), kNotDone until simulated. A weight_deferred backward's
  // end is its input gradient's, which is what the previous chunk's backward waits for.
  std::vector<double> forward_end(chunks * m, kNotDone);
  std::vector<double> backward_end(chunks * m, kNotDone);
  auto weight = [&costs](int64_t chunk) {
    return costs.weight_seconds.empty() ? 0.0 : costs.weight_seconds[chunk];
  };
  auto duration = [&](const PipelineTask& task) {
    switch (task.pass) {
      case PipelinePass::kForward:
        return costs.forward_seconds[task.chunk];
      case PipelinePass::kBackward:
        return costs.backward_seconds[task.chunk] -
               (task.weight_deferred ? weight(task.chunk) : 0.0);
      case PipelinePass::kWeight:
        return weight(task.chunk);
    }
    return 0.0;
  };
  auto at = [m](int64_t chunk, int64_t microbatch) { return chunk * m + microbatch; };

  // When the task's input is there, or false if a task it needs has not run yet.
  auto input_ready = [&](const PipelineTask& task, double& ready_seconds) {
    switch (task.pass) {
      case PipelinePass::kForward: {
        if (task.chunk == 0) {
          ready_seconds = 0;
          return true;
        }
        const double previous = forward_end[at(task.chunk - 1, task.microbatch)];
        if (previous == kNotDone) return false;
        ready_seconds = previous + costs.send_seconds;
        return true;
      }
      case PipelinePass::kBackward: {
        const double own_forward = forward_end[at(task.chunk, task.microbatch)];
        if (own_forward == kNotDone) return false;
        ready_seconds = own_forward;
        if (task.chunk == chunks - 1) return true;
        const double next = backward_end[at(task.chunk + 1, task.microbatch)];
        if (next == kNotDone) return false;
        ready_seconds = std::max(ready_seconds, next + costs.send_seconds);
        return true;
      }
      case PipelinePass::kWeight: {
        const double own_backward = backward_end[at(task.chunk, task.microbatch)];
        if (own_backward == kNotDone) return false;
        ready_seconds = own_backward;
        return true;
      }
    }
    return false;
  };

  // Each device advances through its order as far as its inputs allow; a sweep over the
  // devices repeats until every task has run. An order whose sweep makes no progress would
  // deadlock: every schedule here is deadlock-free, so that is a perfsim bug.
  std::vector<size_t> next(p, 0);
  std::vector<double> device_free_seconds(p, 0);
  int64_t remaining = 0;
  for (const std::vector<PipelineTask>& tasks : timeline.device_tasks) {
    remaining += static_cast<int64_t>(tasks.size());
  }
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t d = 0; d < p; ++d) {
      std::vector<PipelineTask>& tasks = timeline.device_tasks[d];
      while (next[d] < tasks.size()) {
        PipelineTask& task = tasks[next[d]];
        double ready_seconds = 0;
        if (!input_ready(task, ready_seconds)) break;
        task.start_seconds = std::max(device_free_seconds[d], ready_seconds);
        task.end_seconds = task.start_seconds + duration(task);
        device_free_seconds[d] = task.end_seconds;
        if (task.pass == PipelinePass::kForward) {
          forward_end[at(task.chunk, task.microbatch)] = task.end_seconds;
        } else if (task.pass == PipelinePass::kBackward) {
          backward_end[at(task.chunk, task.microbatch)] = task.end_seconds;
        }
        ++next[d];
        --remaining;
        progressed = true;
      }
    }
    PERFSIM_CHECK(progressed) << "pipeline order of " << PipelineScheduleKindName(spec.kind)
                              << " deadlocks (p " << p << ", m " << m << ", v "
                              << spec.virtual_stages << ")";
  }

  timeline.busy_seconds.assign(p, 0);
  timeline.max_in_flight.assign(p, 0);
  for (int64_t d = 0; d < p; ++d) {
    int64_t in_flight = 0;
    for (const PipelineTask& task : timeline.device_tasks[d]) {
      timeline.busy_seconds[d] += task.end_seconds - task.start_seconds;
      timeline.step_seconds = std::max(timeline.step_seconds, task.end_seconds);
      if (task.pass == PipelinePass::kForward) ++in_flight;
      if (task.pass == PipelinePass::kBackward) --in_flight;
      timeline.max_in_flight[d] = std::max(timeline.max_in_flight[d], in_flight);
    }
  }
  timeline.bubble_fraction.assign(p, 0);
  double sum = 0;
  for (int64_t d = 0; d < p; ++d) {
    if (timeline.step_seconds > 0) {
      timeline.bubble_fraction[d] = 1 - timeline.busy_seconds[d] / timeline.step_seconds;
    }
    timeline.max_bubble_fraction =
        std::max(timeline.max_bubble_fraction, timeline.bubble_fraction[d]);
    sum += timeline.bubble_fraction[d];
  }
  timeline.mean_bubble_fraction = sum / static_cast<double>(p);
  return timeline;
}

// Uniform costs: every stage's forward takes f and backward b per micro-batch, no send time.
//
// GPipe and 1F1B (v = 1). The last device runs its m forward-backward pairs (GPipe: m forwards
// then m backwards) back to back from the moment micro-batch 0 reaches it, (p-1) f; after its
// last backward the gradient still crosses p-1 devices, (p-1) b. So
//   step = (p-1) f + m (f+b) + (p-1) b = (m+p-1)(f+b),
// every device is busy m (f+b), and the bubble fraction is
//   1 - m (f+b) / ((m+p-1)(f+b)) = (p-1)/(m+p-1),
// independent of f/b. (That the last device never waits in 1F1B's steady state, and the
// device's order never delays it, is checked by the simulation in the tests.)
//
// Interleaved 1F1B (v chunks per device, each chunk's forward f and backward b). A device is
// busy m v (f+b). Filling the pipeline still takes p-1 chunk forwards before the last device
// starts and draining it p-1 chunk backwards after the last device ends, but these are chunk
// slots, v times shorter than a stage's (Narayanan et al. 2021, "Efficient Large-Scale Language
// Model Training on GPU Clusters Using Megatron-LM", section 2.2.2):
//   step = (m v + p - 1)(f+b),  bubble fraction = (p-1)/(v m + p - 1).
// With v = 1 this is the 1F1B value.
double AnalyticBubbleFraction(const PipelineSpec& spec) {
  return AnalyticBubbleFraction(spec, 1, 2, 0);
}

double AnalyticBubbleFraction(const PipelineSpec& spec, double forward_seconds,
                              double backward_seconds, double weight_seconds) {
  PERFSIM_CHECK(spec.Validate().ok()) << spec.Validate();
  const double p = static_cast<double>(spec.stages);
  const double m = static_cast<double>(spec.microbatches);
  const double v = static_cast<double>(spec.virtual_stages);
  switch (spec.kind) {
    case PipelineScheduleKind::kGpipe:
    case PipelineScheduleKind::kOneFOneB:
      return (p - 1) / (m + p - 1);
    case PipelineScheduleKind::kInterleavedOneFOneB:
      return (p - 1) / (v * m + p - 1);
    case PipelineScheduleKind::kDualPipe: {
      const double idle =
          (p / 2 - 1) * (forward_seconds + 2 * backward_seconds - 3 * weight_seconds);
      const double busy = m * (forward_seconds + backward_seconds);
      return idle + busy > 0 ? idle / (idle + busy) : 0;
    }
  }
  return 0;
}

}  // namespace perfsim
