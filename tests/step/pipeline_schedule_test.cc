// sim/step/pipeline_schedule: bubble fractions against the analytic (p-1)/(m+p-1) and
// (p-1)/(v m+p-1), hand-worked timelines, send time, in-flight activations, invalid specs.
#include "sim/step/pipeline_schedule.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr PipelineScheduleKind kGpipe = PipelineScheduleKind::kGpipe;
constexpr PipelineScheduleKind kOneFOneB = PipelineScheduleKind::kOneFOneB;
constexpr PipelineScheduleKind kInterleaved = PipelineScheduleKind::kInterleavedOneFOneB;
constexpr PipelineScheduleKind kDualPipe = PipelineScheduleKind::kDualPipe;

PipelineSpec Spec(int64_t p, int64_t m, int64_t v, PipelineScheduleKind kind) {
  return PipelineSpec{.stages = p, .microbatches = m, .virtual_stages = v, .kind = kind};
}

// One expected task: pass, global chunk, micro-batch, start; the end is start + its cost.
struct Expected {
  PipelinePass pass;
  int64_t chunk;
  int64_t microbatch;
  double start_seconds;
  double end_seconds;
};
constexpr PipelinePass kF = PipelinePass::kForward;
constexpr PipelinePass kB = PipelinePass::kBackward;
constexpr PipelinePass kW = PipelinePass::kWeight;

void ExpectTasks(const std::vector<PipelineTask>& tasks, int64_t device,
                 const std::vector<Expected>& expected) {
  ASSERT_EQ(tasks.size(), expected.size()) << "device " << device;
  for (size_t i = 0; i < tasks.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "device " << device << " task " << i);
    EXPECT_EQ(tasks[i].device, device);
    EXPECT_EQ(tasks[i].pass, expected[i].pass);
    EXPECT_EQ(tasks[i].chunk, expected[i].chunk);
    EXPECT_EQ(tasks[i].microbatch, expected[i].microbatch);
    EXPECT_DOUBLE_EQ(tasks[i].start_seconds, expected[i].start_seconds);
    EXPECT_DOUBLE_EQ(tasks[i].end_seconds, expected[i].end_seconds);
  }
}

void ExpectBubbleMatchesAnalytic(const PipelineSpec& spec, double forward_seconds,
                                 double backward_seconds) {
  SCOPED_TRACE(::testing::Message() << PipelineScheduleKindName(spec.kind) << " p=" << spec.stages
                                    << " m=" << spec.microbatches << " v=" << spec.virtual_stages
                                    << " f:b=" << forward_seconds << ":" << backward_seconds);
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      PipelineTimeline t, SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, forward_seconds,
                                                                             backward_seconds, 0)));
  const double analytic = AnalyticBubbleFraction(spec);
  const double tolerance = 1e-12 * analytic;  // exact 0 when p = 1
  for (int64_t d = 0; d < spec.stages; ++d) {
    EXPECT_NEAR(t.bubble_fraction[d], analytic, tolerance) << "device " << d;
  }
  EXPECT_NEAR(t.max_bubble_fraction, analytic, tolerance);
  EXPECT_NEAR(t.mean_bubble_fraction, analytic, tolerance);
  // step = busy / (1 - bubble) with busy = m v (f+b): (m v + p - 1)(f+b) for interleaved,
  // (m + p - 1)(f+b) for the others (v = 1).
  const double expected_step =
      static_cast<double>(spec.microbatches * spec.virtual_stages + spec.stages - 1) *
      (forward_seconds + backward_seconds);
  EXPECT_NEAR(t.step_seconds, expected_step, 1e-12 * expected_step);
}

TEST(PipelineScheduleTest, KindNamesRoundTripAndUnknownNameIsRejected) {
  for (PipelineScheduleKind kind : {kGpipe, kOneFOneB, kInterleaved, kDualPipe}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineScheduleKind parsed,
                                 ParsePipelineScheduleKind(PipelineScheduleKindName(kind)));
    EXPECT_EQ(parsed, kind);
  }
  EXPECT_EQ(PipelineScheduleKindName(kInterleaved), "interleaved_1f1b");
  EXPECT_EQ(PipelineScheduleKindName(kDualPipe), "dualpipe");
  EXPECT_THAT(ParsePipelineScheduleKind("zero_bubble"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("expected one of gpipe, 1f1b, interleaved_1f1b, dualpipe"),
                             HasSubstr("got \"zero_bubble\""))));
}

TEST(PipelineScheduleTest, GpipeAndOneFOneBBubbleIsPMinusOneOverMPlusPMinusOne) {
  // Derivation in pipeline_schedule.cc (AnalyticBubbleFraction): step = (m+p-1)(f+b), busy
  // m (f+b) on every device, whatever f/b.
  std::vector<int64_t> microbatches;
  for (int64_t m = 1; m <= 16; ++m) microbatches.push_back(m);
  microbatches.push_back(32);
  for (PipelineScheduleKind kind : {kGpipe, kOneFOneB}) {
    for (int64_t p : {1, 2, 4, 8}) {
      for (int64_t m : microbatches) {
        for (double backward_over_forward : {1.0, 2.0, 3.0}) {
          ExpectBubbleMatchesAnalytic(Spec(p, m, 1, kind), 0.5, 0.5 * backward_over_forward);
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, InterleavedBubbleIsPMinusOneOverVmPlusPMinusOne) {
  // Derivation in pipeline_schedule.cc: chunk-sized fill and drain, step = (v m + p - 1)(f+b)
  // with f, b per chunk; busy v m (f+b).
  for (int64_t p : {2, 4, 8}) {
    for (int64_t v : {1, 2, 3, 4}) {
      for (int64_t groups : {1, 2, 3, 4}) {
        for (double backward_over_forward : {1.0, 2.0, 3.0}) {
          ExpectBubbleMatchesAnalytic(Spec(p, groups * p, v, kInterleaved), 0.25,
                                      0.25 * backward_over_forward);
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, AnalyticBubbleOfInterleavingIsTheOneFOneBBubbleOverV) {
  // p = 4, m = 8: 1F1B 3/11; v = 2: 3/19; v = 4: 3/35.
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(Spec(4, 8, 1, kOneFOneB)), 3.0 / 11);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(Spec(4, 8, 1, kGpipe)), 3.0 / 11);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(Spec(4, 8, 2, kInterleaved)), 3.0 / 19);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(Spec(4, 8, 4, kInterleaved)), 3.0 / 35);
}

TEST(PipelineScheduleTest, OneFOneBTwoStagesTwoMicrobatchesByHand) {
  // f = 1, b = 2, no send. Orders (warm-up p - r - 1): device 0 F0 F1 B0 B1, device 1 F0 B0 F1
  // B1. Device 0: F0 [0,1), F1 [1,2). Device 1: F0 needs F0 on 0 (1): [1,2); B0 needs its own
  // F0 (2): [2,4); F1 needs F1 on 0 (2) but the device is busy until 4: [4,5); B1 [5,7).
  // Device 0: B0 needs B0 on 1 (4): [4,6); B1 needs B1 on 1 (7): [7,9). Step 9 = (2+2-1)(1+2);
  // busy 6 on each, bubble 1/3.
  const PipelineSpec spec = Spec(2, 2, 1, kOneFOneB);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0)));
  ExpectTasks(t.device_tasks[0], 0,
              {{kF, 0, 0, 0, 1}, {kF, 0, 1, 1, 2}, {kB, 0, 0, 4, 6}, {kB, 0, 1, 7, 9}});
  ExpectTasks(t.device_tasks[1], 1,
              {{kF, 1, 0, 1, 2}, {kB, 1, 0, 2, 4}, {kF, 1, 1, 4, 5}, {kB, 1, 1, 5, 7}});
  EXPECT_DOUBLE_EQ(t.step_seconds, 9);
  EXPECT_DOUBLE_EQ(t.busy_seconds[0], 6);
  EXPECT_DOUBLE_EQ(t.busy_seconds[1], 6);
  EXPECT_DOUBLE_EQ(t.bubble_fraction[0], 1.0 / 3);
  EXPECT_DOUBLE_EQ(t.bubble_fraction[1], 1.0 / 3);
}

TEST(PipelineScheduleTest, InterleavedTwoStagesTwoChunksTwoMicrobatchesByHand) {
  // p = 2, v = 2, m = 2, f = b = 1 per chunk, no send. Chunks 0, 2 on device 0; 1, 3 on
  // device 1. Megatron's table (groups of p = 2 micro-batches): k -> (mb, local chunk) =
  // 0:(0,0) 1:(1,0) 2:(0,1) 3:(1,1). Warm-up 2 (p - r - 1) + (v - 1) p: device 0 4 (all its
  // forwards), device 1 2. Backward k runs local chunk v - 1 - table[k].chunk.
  //   device 0: F c0m0, F c0m1, F c2m0, F c2m1, B c2m0, B c2m1, B c0m0, B c0m1
  //   device 1: F c1m0, F c1m1, F c3m0, B c3m0, F c3m1, B c3m1, B c1m0, B c1m1
  // Times: d0 F c0m0 [0,1), F c0m1 [1,2); d1 F c1m0 [1,2), F c1m1 [2,3); d0 F c2m0 [2,3),
  // F c2m1 waits for c1m1 (3): [3,4); d1 F c3m0 [3,4), B c3m0 [4,5), F c3m1 waits for the
  // device: [5,6), B c3m1 [6,7); d0 B c2m0 needs B c3m0 (5): [5,6), B c2m1 needs B c3m1 (7):
  // [7,8); d1 B c1m0 needs B c2m0 (6), device free at 7: [7,8), B c1m1 needs B c2m1 (8): [8,9);
  // d0 B c0m0 needs B c1m0 (8): [8,9), B c0m1 [9,10). Step 10 = (v m + p - 1)(f+b) = 5 * 2;
  // busy 8 on each; bubble 1/5 = (p-1)/(v m+p-1).
  const PipelineSpec spec = Spec(2, 2, 2, kInterleaved);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 1, 0)));
  ExpectTasks(t.device_tasks[0], 0,
              {{kF, 0, 0, 0, 1},
               {kF, 0, 1, 1, 2},
               {kF, 2, 0, 2, 3},
               {kF, 2, 1, 3, 4},
               {kB, 2, 0, 5, 6},
               {kB, 2, 1, 7, 8},
               {kB, 0, 0, 8, 9},
               {kB, 0, 1, 9, 10}});
  ExpectTasks(t.device_tasks[1], 1,
              {{kF, 1, 0, 1, 2},
               {kF, 1, 1, 2, 3},
               {kF, 3, 0, 3, 4},
               {kB, 3, 0, 4, 5},
               {kF, 3, 1, 5, 6},
               {kB, 3, 1, 6, 7},
               {kB, 1, 0, 7, 8},
               {kB, 1, 1, 8, 9}});
  EXPECT_DOUBLE_EQ(t.step_seconds, 10);
  EXPECT_DOUBLE_EQ(t.bubble_fraction[0], 0.2);
  EXPECT_DOUBLE_EQ(t.bubble_fraction[1], 0.2);
  EXPECT_EQ(t.max_in_flight, (std::vector<int64_t>{4, 3}));
}

TEST(PipelineScheduleTest, InterleavedForwardOrderIsMegatronsDocumentedDepthFirstOrder) {
  // Megatron-LM model_parallel_config.py, microbatch_group_size_per_vp_stage: "for PP=2 VP=2,
  // when microbatch_group_size_per_vp_stage=2, num_microbatches = 4, we have
  // rank 0 | 0 1 0 1 2 3 2 3": the forward micro-batches of rank 0, over local chunks
  // 0 0 1 1 0 0 1 1 (global chunks 0 0 2 2 0 0 2 2).
  const std::vector<std::vector<PipelineTask>> order = PipelineOrder(Spec(2, 4, 2, kInterleaved));
  std::vector<int64_t> microbatches;
  std::vector<int64_t> chunks;
  for (const PipelineTask& task : order[0]) {
    if (task.pass != PipelinePass::kForward) continue;
    microbatches.push_back(task.microbatch);
    chunks.push_back(task.chunk);
  }
  EXPECT_EQ(microbatches, (std::vector<int64_t>{0, 1, 0, 1, 2, 3, 2, 3}));
  EXPECT_EQ(chunks, (std::vector<int64_t>{0, 0, 2, 2, 0, 0, 2, 2}));
}

TEST(PipelineScheduleTest, EveryChunkRunsOnDeviceChunkModPOncePerMicrobatchEachWay) {
  for (const PipelineSpec& spec :
       {Spec(4, 8, 1, kGpipe), Spec(4, 8, 1, kOneFOneB), Spec(4, 8, 3, kInterleaved)}) {
    const std::vector<std::vector<PipelineTask>> order = PipelineOrder(spec);
    std::vector<int> seen(2 * spec.num_chunks() * spec.microbatches, 0);
    for (int64_t d = 0; d < spec.stages; ++d) {
      for (const PipelineTask& task : order[d]) {
        EXPECT_EQ(task.chunk % spec.stages, d);
        const int64_t pass = task.pass == PipelinePass::kForward ? 0 : 1;
        ++seen[(pass * spec.num_chunks() + task.chunk) * spec.microbatches + task.microbatch];
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<int64_t>(seen.size()));
  }
}

TEST(PipelineScheduleTest, SendTimeDelaysEachHandOffByExactlyTheSendTime) {
  // The 1F1B hand case above with send s = 0.5. Device 0: F0 [0,1), F1 [1,2). Device 1: F0
  // needs 1 + s: [1.5,2.5); B0 [2.5,4.5); F1 needs 2 + s = 2.5 but waits for the device:
  // [4.5,5.5); B1 [5.5,7.5). Device 0: B0 needs 4.5 + s: [5,7); B1 needs 7.5 + s: [8,10).
  // Step 10 = 9 + 2 s: the critical path crosses the device boundary twice.
  const PipelineSpec spec = Spec(2, 2, 1, kOneFOneB);
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      PipelineTimeline t, SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0.5)));
  ExpectTasks(t.device_tasks[0], 0,
              {{kF, 0, 0, 0, 1}, {kF, 0, 1, 1, 2}, {kB, 0, 0, 5, 7}, {kB, 0, 1, 8, 10}});
  ExpectTasks(
      t.device_tasks[1], 1,
      {{kF, 1, 0, 1.5, 2.5}, {kB, 1, 0, 2.5, 4.5}, {kF, 1, 1, 4.5, 5.5}, {kB, 1, 1, 5.5, 7.5}});
  EXPECT_DOUBLE_EQ(t.step_seconds, 10);
}

TEST(PipelineScheduleTest, OneMicrobatchPaysTwoSendsPerStageBoundary) {
  // m = 1: the micro-batch goes forward through p stages and back, serially, crossing p - 1
  // boundaries each way: step = p (f + b) + 2 (p - 1) s = 8 * 3 + 14 * 0.25 = 27.5.
  for (PipelineScheduleKind kind : {kGpipe, kOneFOneB}) {
    const PipelineSpec spec = Spec(8, 1, 1, kind);
    PERFSIM_ASSERT_OK_AND_ASSIGN(
        PipelineTimeline t, SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0.25)));
    EXPECT_DOUBLE_EQ(t.step_seconds, 27.5);
  }
}

TEST(PipelineScheduleTest, NonUniformStepLiesBetweenSlowestDeviceAndSerialSum) {
  // Any schedule: step >= the busiest device's busy time (it runs its tasks one at a time) and
  // step <= the sum of every task and every send on the critical path, bounded by the sum of
  // all tasks plus one send per task (the whole step run serially).
  for (const PipelineSpec& spec :
       {Spec(4, 6, 1, kGpipe), Spec(4, 6, 1, kOneFOneB), Spec(4, 8, 3, kInterleaved)}) {
    PipelineStageCosts costs;
    for (int64_t c = 0; c < spec.num_chunks(); ++c) {
      costs.forward_seconds.push_back(0.5 + 0.25 * static_cast<double>((c * 7) % 5));
      costs.backward_seconds.push_back(1.0 + 0.5 * static_cast<double>((c * 3) % 4));
    }
    costs.send_seconds = 0.125;
    PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t, SimulatePipeline(spec, costs));
    double serial_seconds = 0;
    for (int64_t c = 0; c < spec.num_chunks(); ++c) {
      serial_seconds +=
          static_cast<double>(spec.microbatches) *
          (costs.forward_seconds[c] + costs.backward_seconds[c] + 2 * costs.send_seconds);
    }
    const double busiest = *std::max_element(t.busy_seconds.begin(), t.busy_seconds.end());
    EXPECT_GE(t.step_seconds, busiest) << PipelineScheduleKindName(spec.kind);
    EXPECT_LE(t.step_seconds, serial_seconds) << PipelineScheduleKindName(spec.kind);
    EXPECT_GT(t.max_bubble_fraction, 0);
  }
}

TEST(PipelineScheduleTest, OneFOneBHoldsMinOfPMinusRankAndMActivationsGpipeHoldsM) {
  // 1F1B: warm-up p - r - 1 forwards, then each steady forward is followed by a backward, so
  // the count peaks at min(p - r - 1, m) + 1 capped at m. GPipe runs all m forwards first.
  for (int64_t p : {1, 2, 4, 8}) {
    for (int64_t m : {1, 2, 3, 5, 8, 16}) {
      PERFSIM_ASSERT_OK_AND_ASSIGN(
          PipelineTimeline one_f_one_b,
          SimulatePipeline(Spec(p, m, 1, kOneFOneB),
                           PipelineStageCosts::Uniform(Spec(p, m, 1, kOneFOneB), 1, 2, 0)));
      PERFSIM_ASSERT_OK_AND_ASSIGN(
          PipelineTimeline gpipe,
          SimulatePipeline(Spec(p, m, 1, kGpipe),
                           PipelineStageCosts::Uniform(Spec(p, m, 1, kGpipe), 1, 2, 0)));
      for (int64_t r = 0; r < p; ++r) {
        EXPECT_EQ(one_f_one_b.max_in_flight[r], std::min(p - r, m)) << p << " " << m << " " << r;
        EXPECT_EQ(gpipe.max_in_flight[r], m) << p << " " << m << " " << r;
      }
    }
  }
}

TEST(PipelineScheduleTest, InterleavedHoldsWarmupPlusOneChunkActivations) {
  // Warm-up w = 2 (p - r - 1) + (v - 1) p forwards, then forward-backward pairs: the peak is
  // min(w + 1, v m) chunk activations. p = 4, v = 2, m = 8: ranks 0..3 hold 11, 9, 7, 5.
  const PipelineSpec spec = Spec(4, 8, 2, kInterleaved);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0)));
  EXPECT_EQ(t.max_in_flight, (std::vector<int64_t>{11, 9, 7, 5}));
}

TEST(PipelineScheduleTest, InvalidSpecReportsEveryProblemWithItsNumbers) {
  EXPECT_THAT(Spec(0, 0, 0, kOneFOneB).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("pipeline stages: expected >= 1; got 0"),
                             HasSubstr("pipeline microbatches: expected >= 1; got 0"),
                             HasSubstr("pipeline virtual_stages: expected >= 1; got 0"))));
  EXPECT_THAT(Spec(-3, 4, 1, kGpipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline stages: expected >= 1; got -3")));
  EXPECT_THAT(Spec(4, 8, 2, kOneFOneB).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("virtual_stages with 1f1b: expected 1 (model chunks need "
                                 "interleaved_1f1b); got 2")));
  EXPECT_THAT(Spec(4, 8, 3, kGpipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("virtual_stages with gpipe: expected 1")));
  EXPECT_THAT(
      Spec(4, 6, 2, kInterleaved).Validate(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("microbatches with interleaved_1f1b: expected a multiple of "
                         "stages (4), as Megatron's interleaved schedule requires; got 6")));
  EXPECT_THAT(Spec(4, 2, 2, kInterleaved).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 2")));
  EXPECT_THAT(Spec(1, 4, 2, kInterleaved).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages with interleaved_1f1b: expected >= 2; got 1")));
  EXPECT_THAT(Spec(int64_t{1} << 20, int64_t{1} << 10, 1 << 10, kInterleaved).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected stages x virtual_stages x microbatches <= 16777216; "
                                 "got 1048576 x 1024 x 1024")));
  // Two problems at once.
  EXPECT_THAT(Spec(1, 0, 2, kGpipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("microbatches: expected >= 1; got 0"),
                             HasSubstr("virtual_stages with gpipe: expected 1"))));
  PERFSIM_EXPECT_OK(Spec(1, 1, 1, kGpipe).Validate());
  PERFSIM_EXPECT_OK(Spec(8, 16, 4, kInterleaved).Validate());
  PERFSIM_EXPECT_OK(Spec(8, 3, 1, kOneFOneB).Validate());  // m < p is fine without interleaving
}

TEST(PipelineScheduleTest, InvalidCostsAreRejectedWithTheirIndexAndValue) {
  const PipelineSpec spec = Spec(2, 4, 2, kInterleaved);
  PipelineStageCosts costs = PipelineStageCosts::Uniform(spec, 1, 2, 0);
  costs.forward_seconds.pop_back();
  costs.backward_seconds[1] = -2;
  costs.send_seconds = -0.5;
  EXPECT_THAT(SimulatePipeline(spec, costs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("pipeline costs forward_seconds: expected 4 entries (one "
                                       "per chunk: stages 2 x virtual_stages 2); got 3"),
                             HasSubstr("backward_seconds[1]: expected a finite number of "
                                       "seconds >= 0; got -2"),
                             HasSubstr("send_seconds: expected a finite number of seconds >= 0; "
                                       "got -0.5"))));
  costs = PipelineStageCosts::Uniform(spec, 1, 2, 0);
  costs.forward_seconds[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(SimulatePipeline(spec, costs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("forward_seconds[3]: expected a finite number")));
  // An invalid spec is reported together with the cost problems.
  EXPECT_THAT(SimulatePipeline(Spec(0, 4, 1, kOneFOneB), PipelineStageCosts{.send_seconds = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("stages: expected >= 1; got 0"),
                             HasSubstr("send_seconds: expected a finite"))));
}

TEST(PipelineScheduleTest, SameInputsGiveTheSameBits) {
  const PipelineSpec spec = Spec(4, 12, 3, kInterleaved);
  PipelineStageCosts costs;
  for (int64_t c = 0; c < spec.num_chunks(); ++c) {
    costs.forward_seconds.push_back(1e-3 * (1 + 0.1 * static_cast<double>(c % 3)));
    costs.backward_seconds.push_back(2.1e-3 * (1 + 0.07 * static_cast<double>(c % 5)));
  }
  costs.send_seconds = 3.3e-5;
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline a, SimulatePipeline(spec, costs));
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline b, SimulatePipeline(spec, costs));
  auto same_bits = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  EXPECT_TRUE(same_bits(a.step_seconds, b.step_seconds));
  for (int64_t d = 0; d < spec.stages; ++d) {
    ASSERT_EQ(a.device_tasks[d].size(), b.device_tasks[d].size());
    for (size_t i = 0; i < a.device_tasks[d].size(); ++i) {
      EXPECT_TRUE(
          same_bits(a.device_tasks[d][i].start_seconds, b.device_tasks[d][i].start_seconds));
      EXPECT_TRUE(same_bits(a.device_tasks[d][i].end_seconds, b.device_tasks[d][i].end_seconds));
    }
    EXPECT_TRUE(same_bits(a.bubble_fraction[d], b.bubble_fraction[d]));
  }
}

TEST(PipelineScheduleTest, ZeroCostsGiveZeroStepAndZeroBubble) {
  const PipelineSpec spec = Spec(2, 2, 1, kOneFOneB);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 0, 0, 0)));
  EXPECT_EQ(t.step_seconds, 0);
  EXPECT_EQ(t.max_bubble_fraction, 0);
}

// ----- DualPipe (dualpipe.py DualPipe.step(); the step table is in pipeline_schedule.cc) -----

PipelineStageCosts DualPipeCosts(const PipelineSpec& spec, double forward_seconds,
                                 double backward_seconds, double weight_seconds) {
  PipelineStageCosts costs =
      PipelineStageCosts::Uniform(spec, forward_seconds, backward_seconds, 0);
  costs.weight_seconds.assign(static_cast<size_t>(spec.num_chunks()), weight_seconds);
  return costs;
}

// (pass, chunk, micro-batch, weight_deferred) of every task, for order-only comparisons.
struct OrderEntry {
  PipelinePass pass;
  int64_t chunk;
  int64_t microbatch;
  bool deferred;
  bool operator==(const OrderEntry&) const = default;
};
std::ostream& operator<<(std::ostream& os, const OrderEntry& e) {
  return os << "FBW"[static_cast<int>(e.pass)] << (e.deferred ? "'" : "") << " c" << e.chunk << " m"
            << e.microbatch;
}
std::vector<OrderEntry> Entries(const std::vector<PipelineTask>& tasks) {
  std::vector<OrderEntry> entries;
  for (const PipelineTask& t : tasks) {
    entries.push_back({t.pass, t.chunk, t.microbatch, t.weight_deferred});
  }
  return entries;
}

TEST(PipelineScheduleTest, DualPipeFourRanksOrderFollowsDualPipePyStepTable) {
  // p = 4 (half 2), m = 8 (n = 4 per direction: micro-batches 0-3 enter at rank 0 and run
  // chunk c on rank c; 4-7 enter at rank 3 and run chunk c on rank 3-c). The step table of
  // pipeline_schedule.cc with h = min(r, p-1-r):
  // Rank 0 (h 0; phase 0 = direction 0 on chunk 0, phase 1 = direction 1 on chunk 3):
  //   1. 2(half-h-1) = 2 x F0 .......... F c0m0, F c0m1
  //   2. h+1 = 1 x F0 F1 .............. F c0m2, F c3m4
  //   3. 1 x B'1 W F1 ................. B' c3m4, W c3m4, F c3m5
  //   4. n-p+h+1 = 1 x F0 B1 F1 B0 .... F c0m3, B c3m5, F c3m6, B c0m0
  //   5. 1 x B1 F1 B0 ................. B c3m6, F c3m7, B c0m1
  //   6. 1 x B1 B0 (h even: B' from iteration 0's B0) ... B c3m7, B' c0m2
  //   7. 1 x W B'0 .................... W c0m2, B' c0m3
  //   8. 1 x W ........................ W c0m3
  // Rank 1 (h 1; phase 0 = direction 0 on chunk 1, phase 1 = direction 1 on chunk 2):
  //   1. none; 2. 2 x F0 F1: F c1m0, F c2m4, F c1m1, F c2m5; 3. none;
  //   4. 2 x F0 B1 F1 B0: F c1m2, B c2m4, F c2m6, B c1m0, F c1m3, B c2m5, F c2m7, B c1m1;
  //   5. none; 6. 2 x B1 B0 (h odd: B' from iteration 1's B1): B c2m6, B c1m2, B' c2m7, B' c1m3;
  //   7. none; 8. 2 x W: W c2m7, W c1m3.
  const std::vector<std::vector<PipelineTask>> order = PipelineOrder(Spec(4, 8, 1, kDualPipe));
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(Entries(order[0]), (std::vector<OrderEntry>{{kF, 0, 0, false},
                                                        {kF, 0, 1, false},
                                                        {kF, 0, 2, false},
                                                        {kF, 3, 4, false},
                                                        {kB, 3, 4, true},
                                                        {kW, 3, 4, false},
                                                        {kF, 3, 5, false},
                                                        {kF, 0, 3, false},
                                                        {kB, 3, 5, false},
                                                        {kF, 3, 6, false},
                                                        {kB, 0, 0, false},
                                                        {kB, 3, 6, false},
                                                        {kF, 3, 7, false},
                                                        {kB, 0, 1, false},
                                                        {kB, 3, 7, false},
                                                        {kB, 0, 2, true},
                                                        {kW, 0, 2, false},
                                                        {kB, 0, 3, true},
                                                        {kW, 0, 3, false}}));
  EXPECT_EQ(Entries(order[1]), (std::vector<OrderEntry>{{kF, 1, 0, false},
                                                        {kF, 2, 4, false},
                                                        {kF, 1, 1, false},
                                                        {kF, 2, 5, false},
                                                        {kF, 1, 2, false},
                                                        {kB, 2, 4, false},
                                                        {kF, 2, 6, false},
                                                        {kB, 1, 0, false},
                                                        {kF, 1, 3, false},
                                                        {kB, 2, 5, false},
                                                        {kF, 2, 7, false},
                                                        {kB, 1, 1, false},
                                                        {kB, 2, 6, false},
                                                        {kB, 1, 2, false},
                                                        {kB, 2, 7, true},
                                                        {kB, 1, 3, true},
                                                        {kW, 2, 7, false},
                                                        {kW, 1, 3, false}}));
}

TEST(PipelineScheduleTest, DualPipeRankAndItsMirrorRunTheSameOrderWithDirectionsSwapped) {
  // Rank p-1-r is rank r with the directions exchanged (dualpipe.py's phase ^= is_in_second_half):
  // the same chunks (r's chunk r is p-1-r's mirror chunk), micro-batch k <-> (k + n) mod m.
  for (int64_t p : {2, 4, 6, 8}) {
    for (int64_t m : {2 * p, 2 * p + 2, 4 * p}) {
      const std::vector<std::vector<PipelineTask>> order = PipelineOrder(Spec(p, m, 1, kDualPipe));
      for (int64_t r = 0; r < p; ++r) {
        std::vector<OrderEntry> mirrored = Entries(order[p - 1 - r]);
        for (OrderEntry& e : mirrored) e.microbatch = (e.microbatch + m / 2) % m;
        EXPECT_EQ(Entries(order[r]), mirrored) << "p " << p << " m " << m << " rank " << r;
      }
    }
  }
}

TEST(PipelineScheduleTest, DualPipeRunsEachChunkOnItsDeviceAndMirrorOnceEachWay) {
  // Direction 0 (micro-batches < m/2) runs chunk c on device c, direction 1 on device p-1-c;
  // every (chunk, micro-batch) is one forward and one backward; a kWeight task follows exactly
  // the weight_deferred backwards, on the same device, after them.
  for (int64_t p : {2, 4, 6, 8}) {
    for (int64_t m : {2 * p, 2 * p + 2, 4 * p}) {
      const std::vector<std::vector<PipelineTask>> order = PipelineOrder(Spec(p, m, 1, kDualPipe));
      std::vector<int> forwards(p * m, 0), backwards(p * m, 0), weights(p * m, 0);
      std::vector<int> deferred(p * m, 0);
      for (int64_t d = 0; d < p; ++d) {
        for (const PipelineTask& t : order[d]) {
          const int64_t expected_device = t.microbatch < m / 2 ? t.chunk : p - 1 - t.chunk;
          EXPECT_EQ(t.device, d);
          EXPECT_EQ(expected_device, d)
              << "p " << p << " m " << m << " c" << t.chunk << " m" << t.microbatch;
          const int64_t i = t.chunk * m + t.microbatch;
          switch (t.pass) {
            case PipelinePass::kForward:
              ++forwards[i];
              break;
            case PipelinePass::kBackward:
              ++backwards[i];
              if (t.weight_deferred) ++deferred[i];
              break;
            case PipelinePass::kWeight:
              EXPECT_EQ(deferred[i], 1) << "W before its B' c" << t.chunk << " m" << t.microbatch;
              ++weights[i];
              break;
          }
        }
      }
      EXPECT_EQ(std::count(forwards.begin(), forwards.end(), 1), p * m);
      EXPECT_EQ(std::count(backwards.begin(), backwards.end(), 1), p * m);
      EXPECT_EQ(weights, deferred);
    }
  }
}

TEST(PipelineScheduleTest, DualPipeTwoRanksFourMicrobatchesByHand) {
  // p = 2 (half 1, h 0 on both ranks), m = 4 (n = 2), f = 1, b = 2, w = 0.5, no send.
  // Rank 0 holds chunk 0 (micro-batches 0, 1) and chunk 1 (2, 3); rank 1 chunk 1 (0, 1) and
  // chunk 0 (2, 3). Steps 1, 3, 5, 7 are empty; 2: F0 F1; 4: n-p+h+1 = 1 x F0 B1 F1 B0;
  // 6: B1 B'0 (h even); 8: W:
  //   rank 0: F c0m0, F c1m2, F c0m1, B c1m2, F c1m3, B c0m0, B c1m3, B' c0m1, W c0m1
  //   rank 1: the same with micro-batches 0, 1 <-> 2, 3.
  // Rank 0: F c0m0 [0,1); F c1m2 needs F c0m2 (rank 1, ends 1): [1,2); F c0m1 [2,3);
  // B c1m2 (last chunk) needs its forward (2), device free at 3: [3,5); F c1m3 needs F c0m3
  // (rank 1's third task, ends 3): [5,6); B c0m0 needs B c1m0 (rank 1, [3,5)): [6,8);
  // B c1m3 [8,10); B' c0m1 needs B c1m1 (rank 1, [8,10)): b - w = 1.5, [10,11.5);
  // W c0m1 [11.5,12). Rank 1 the same by symmetry. Step 12 = the busy m (f+b) = 4 * 3: no
  // bubble, as the published (p/2-1)(F&B+B-3W) = 0 says for p = 2.
  const PipelineSpec spec = Spec(2, 4, 1, kDualPipe);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, DualPipeCosts(spec, 1, 2, 0.5)));
  for (int64_t d = 0; d < 2; ++d) {
    const int64_t own = d == 0 ? 0 : 2;    // the micro-batches entering at this rank
    const int64_t other = d == 0 ? 2 : 0;  // those entering at the other end
    ExpectTasks(t.device_tasks[d], d,
                {{kF, 0, own, 0, 1},
                 {kF, 1, other, 1, 2},
                 {kF, 0, own + 1, 2, 3},
                 {kB, 1, other, 3, 5},
                 {kF, 1, other + 1, 5, 6},
                 {kB, 0, own, 6, 8},
                 {kB, 1, other + 1, 8, 10},
                 {kB, 0, own + 1, 10, 11.5},
                 {kW, 0, own + 1, 11.5, 12}});
    EXPECT_TRUE(t.device_tasks[d][7].weight_deferred);
  }
  EXPECT_DOUBLE_EQ(t.step_seconds, 12);
  EXPECT_DOUBLE_EQ(t.max_bubble_fraction, 0);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(spec, 1, 2, 0.5), 0);
  // p + 1 = 3 activations: F c0, F c1, F c0 before the first backward.
  EXPECT_EQ(t.max_in_flight, (std::vector<int64_t>{3, 3}));
}

TEST(PipelineScheduleTest, DualPipeWithoutWeightCostsRunsWholeBackwards) {
  // No weight_seconds: the split is not modelled, B' takes the whole b and W takes 0. With
  // p = 2 the W has nothing to fill, so the hand timeline above keeps its step 12; B' c0m1
  // becomes [10,12) and W [12,12).
  const PipelineSpec spec = Spec(2, 4, 1, kDualPipe);
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                               SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0)));
  EXPECT_DOUBLE_EQ(t.device_tasks[0][7].start_seconds, 10);
  EXPECT_DOUBLE_EQ(t.device_tasks[0][7].end_seconds, 12);
  EXPECT_DOUBLE_EQ(t.device_tasks[0][8].end_seconds, 12);
  EXPECT_DOUBLE_EQ(t.step_seconds, 12);
}

TEST(PipelineScheduleTest, DualPipeHoldsPPlusOneActivationsOnEveryDevice) {
  // The DualPipe README's "Activation PP+1". Steps 1-2 run 2(half-h-1) + 2(h+1) = p forwards;
  // step 3 is backward-then-forward (stays at p); step 4 opens with a forward (p + 1) and then
  // alternates backward/forward between p and p + 1; steps 5-8 only lower it. Step 4 always
  // runs: n - p + h + 1 >= 1 because m >= 2p.
  for (int64_t p : {2, 4, 6, 8}) {
    for (int64_t m : {2 * p, 2 * p + 2, 4 * p}) {
      const PipelineSpec spec = Spec(p, m, 1, kDualPipe);
      PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                                   SimulatePipeline(spec, DualPipeCosts(spec, 1, 2, 0.5)));
      EXPECT_EQ(t.max_in_flight, std::vector<int64_t>(p, p + 1)) << "p " << p << " m " << m;
    }
  }
}

TEST(PipelineScheduleTest, DualPipeBubbleIsUniformIndependentOfMAndAtMostThePublishedOne) {
  // What is compared: each device's idle seconds (step - busy, busy = m (f+b)) against the
  // DualPipe README's bubble (PP/2-1)(F&B+B-3W) with F&B = f + b, as AnalyticBubbleFraction
  // takes it. The published figure has no m and is the same for every rank; both hold here.
  // It is an upper bound here, not an equality (except p = 2, both 0), because dualpipe.py runs
  // an overlapped F&B pair after ONE wait for both of its inputs (_forward_backward_chunk), so
  // its forward also waits for the gradient its paired backward needs, while perfsim starts
  // a forward as soon as its own activation is there (the task model of this file). A variant
  // that adds that wait (tried while writing this, not kept; p = 4..10, m = 4p, f = 1) gives
  // the published value exactly at b = 1, w = 0, 1 s under it at b = 2, w = 0, and over it at
  // b = 1, w > 0 (its idle falls by 2w per p/2-1, the published by 3w).
  for (int64_t p : {2, 4, 6, 8}) {
    for (double backward : {1.0, 2.0}) {
      for (double weight : {0.0, 0.25, 0.5}) {
        double idle_at_2p = -1;
        for (int64_t m : {2 * p, 2 * p + 2, 4 * p}) {
          SCOPED_TRACE(::testing::Message()
                       << "p " << p << " m " << m << " b " << backward << " w " << weight);
          const PipelineSpec spec = Spec(p, m, 1, kDualPipe);
          PERFSIM_ASSERT_OK_AND_ASSIGN(
              PipelineTimeline t, SimulatePipeline(spec, DualPipeCosts(spec, 1, backward, weight)));
          const double busy = static_cast<double>(m) * (1 + backward);
          const double idle = t.step_seconds - busy;
          const double published =
              (static_cast<double>(p) / 2 - 1) * (1 + 2 * backward - 3 * weight);
          for (int64_t d = 0; d < p; ++d) EXPECT_DOUBLE_EQ(t.busy_seconds[d], busy);
          EXPECT_NEAR(t.max_bubble_fraction, t.mean_bubble_fraction, 1e-12);
          EXPECT_LE(idle, published + 1e-12);
          EXPECT_LE(t.max_bubble_fraction,
                    AnalyticBubbleFraction(spec, 1, backward, weight) + 1e-12);
          if (p == 2) {
            EXPECT_DOUBLE_EQ(idle, 0);
          } else {
            EXPECT_GT(idle, 0);
          }
          if (idle_at_2p < 0) idle_at_2p = idle;
          EXPECT_NEAR(idle, idle_at_2p, 1e-9);
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, DualPipeWeightSplitFillsBubbles) {
  // The zero-bubble split only moves work (busy stays m (f+b)), so splitting more of b into W
  // may only shrink the step: W tasks run where the device would otherwise wait.
  const PipelineSpec spec = Spec(8, 20, 1, kDualPipe);
  double previous = std::numeric_limits<double>::infinity();
  for (double weight : {0.0, 0.25, 0.5, 1.0}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline t,
                                 SimulatePipeline(spec, DualPipeCosts(spec, 1, 2, weight)));
    EXPECT_LE(t.step_seconds, previous) << "w " << weight;
    previous = t.step_seconds;
  }
  PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineTimeline none,
                               SimulatePipeline(spec, DualPipeCosts(spec, 1, 2, 0)));
  EXPECT_LT(previous, none.step_seconds);
}

TEST(PipelineScheduleTest, DualPipeAnalyticBubbleIsThePublishedFormula) {
  // p = 8, m = 20 (the README's example): (8/2-1)(F&B+B-3W) with F&B = f+b = 3, b = 2, w = 0:
  // idle 3 * 5 = 15 s next to busy 20 * 3 = 60 s: 15/75. With w = 1: 3 * 2 = 6, 6/66. The
  // spec-only overload takes b = 2f, w = 0.
  const PipelineSpec spec = Spec(8, 20, 1, kDualPipe);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(spec, 1, 2, 0), 15.0 / 75);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(spec, 1, 2, 1), 6.0 / 66);
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(spec), 15.0 / 75);
  // Other schedules ignore the costs.
  EXPECT_DOUBLE_EQ(AnalyticBubbleFraction(Spec(4, 8, 1, kOneFOneB), 1, 5, 2), 3.0 / 11);
}

TEST(PipelineScheduleTest, DualPipeInvalidSpecsNameTheirNumbers) {
  EXPECT_THAT(Spec(3, 6, 1, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline stages with dualpipe: expected an even number (two "
                                 "directions); got 3")));
  EXPECT_THAT(Spec(4, 9, 1, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline microbatches with dualpipe: expected an even number "
                                 "(half enter at each end); got 9")));
  EXPECT_THAT(Spec(4, 6, 1, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline microbatches with dualpipe: expected >= 2 x stages "
                                 "(8), as dualpipe.py requires; got 6")));
  EXPECT_THAT(Spec(4, 8, 2, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline virtual_stages with dualpipe: expected 1")));
  // Every problem at once: odd p, odd m below 2p.
  EXPECT_THAT(Spec(5, 7, 1, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("expected an even number (two directions); got 5"),
                             HasSubstr("(half enter at each end); got 7"),
                             HasSubstr("expected >= 2 x stages (10), as dualpipe.py requires; "
                                       "got 7"))));
  EXPECT_THAT(Spec(1, 2, 1, kDualPipe).Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 1")));
  PERFSIM_EXPECT_OK(Spec(2, 4, 1, kDualPipe).Validate());
  PERFSIM_EXPECT_OK(Spec(8, 20, 1, kDualPipe).Validate());
  PERFSIM_EXPECT_OK(Spec(8, 16, 1, kDualPipe).Validate());
}

TEST(PipelineScheduleTest, WeightCostsAboveTheBackwardAreRejected) {
  const PipelineSpec spec = Spec(2, 4, 1, kDualPipe);
  PipelineStageCosts costs = DualPipeCosts(spec, 1, 2, 0.5);
  costs.weight_seconds[1] = 2.5;
  EXPECT_THAT(SimulatePipeline(spec, costs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pipeline costs weight_seconds[1]: expected <= "
                                 "backward_seconds[1] (2); got 2.5")));
  costs = DualPipeCosts(spec, 1, 2, 0.5);
  costs.weight_seconds.push_back(0);
  EXPECT_THAT(SimulatePipeline(spec, costs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("weight_seconds: expected 2 entries")));
}

}  // namespace
}  // namespace perfsim
