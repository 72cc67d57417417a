// sim/step/pipeline_schedule: bubble fractions against the analytic (p-1)/(m+p-1) and
// (p-1)/(v m+p-1), hand-worked timelines, send time, in-flight activations, invalid specs.
#include "sim/step/pipeline_schedule.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
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
  for (PipelineScheduleKind kind : {kGpipe, kOneFOneB, kInterleaved}) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(PipelineScheduleKind parsed,
                                 ParsePipelineScheduleKind(PipelineScheduleKindName(kind)));
    EXPECT_EQ(parsed, kind);
  }
  EXPECT_EQ(PipelineScheduleKindName(kInterleaved), "interleaved_1f1b");
  EXPECT_THAT(ParsePipelineScheduleKind("dualpipe"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("expected one of gpipe, 1f1b, interleaved_1f1b"),
                             HasSubstr("got \"dualpipe\""))));
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

}  // namespace
}  // namespace perfsim
