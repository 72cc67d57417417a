// Regression pins of `perfsim predict`: a few scenarios' step time, exposed communication,
// compute busy time, slowest device and activation peak, bit for bit.
//
// These are NOT correctness goldens: the values were printed by Predict itself (tree of
// 2025-11-25, before sim/predict took over sim/sweep's evaluation, issue 8) and pinned so that
// a change meant to be a pure speed-up (caches, device classes, the no-detail path) cannot
// move a single bit. The physics tests (predict_physics_test.cc) check what the numbers mean.
//
// What they depend on: the lowering (sim/lowering), the cost model (sim/cost, sim/comm), the
// schedule (sim/schedule), routing (sim/moe/routing) and the models in models/. The chips are
// frozen copies in tests/predict/testdata/ (hardware/*.textproto is being calibrated), so a
// recalibration does not move them. When the model changes ON PURPOSE, re-print the pins with
//   PERFSIM_PRINT_PINS=1 build/tests/predict_tests --gtest_filter='PredictPins.*'
// and paste the lines it prints, saying in the change why they moved.
// Last re-printed for issue 14 (physics): multi-axis torus collectives run their axes at once,
// routing is exact in expectation per source, GPU grouped GEMMs take the kernel's tile and L2
// reuse, Pallas grid steps cost max(compute, DMA, overhead) and XLA's ragged-dot none (the
// frozen chips have no link-class factors or NCCL launch cost, so those do not move them).
// Re-printed for issue 12, item 4: element-wise producers (converts, selects, broadcasts) fuse
// into the dot or reduce that reads them (sim/simulator/fusion.h), so they write nothing; and
// the cotangent dy waits for the forward's output, so the backward no longer overlaps it.
// Re-printed for issue 12, item 3 (predict = lowering + sim/simulator): step times, exposed
// communication, busy time and slowest device did not move a bit; the activation peak is now
// the simulator's, the interpreter's memory plan over the module's own evaluation order (one
// liveness analysis for predict, predict --hlo and run) plus the inputs x and dy, instead of
// predict's own count over the schedule's issue order: +0.07% for DeepSeek-V3, -8% to +6% for
// the nano scenarios, whose buffers are small enough for the order of a few ops to matter.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/predict.h"

namespace perfsim {
namespace {

const std::string kChips = std::string(PERFSIM_SOURCE_DIR) + "/tests/predict/testdata/";

struct Pin {
  double step_seconds;
  double exposed_communication;
  double compute_busy;
  int64_t slowest_device;
  double activations;  // memory.activations: the live-buffer peak over the issue order
};

PredictOptions Options(const std::string& model, const std::string& chip, const std::string& mesh,
                       const std::string& backend, Parallelism parallelism, Phase phase,
                       int64_t batch, int64_t seq, const std::string& routing) {
  absl::StatusOr<ModelConfig> m = ResolveModel(model);
  EXPECT_TRUE(m.ok()) << m.status();
  PredictOptions o{.spec = StepSpec::Defaults(*m)};
  o.spec.batch = batch;
  o.spec.seq = seq;
  o.spec.phase = phase;
  o.spec.backend = backend;
  o.spec.parallelism = parallelism;
  o.hw = kChips + chip + ".textproto";
  o.mesh = mesh;
  absl::StatusOr<RoutingSpec> r = ParseRoutingSpec(routing);
  EXPECT_TRUE(r.ok()) << r.status();
  o.routing = *r;
  return o;
}

// A routing file with one row per token shard: shard s sends 40 extra assignments to each of
// the 8 experts starting at (37·s) mod E, 1 to every other expert (scaled by BuildRoutingMatrix
// to each shard's T·K).
std::string PerShardFile(const std::string& name, int64_t shards, int64_t experts) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream file(path);
  for (int64_t s = 0; s < shards; ++s) {
    const int64_t hot = (37 * s) % experts;
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t offset = (e - hot + experts) % experts;
      file << (offset < 8 ? 41 : 1) << (e + 1 < experts ? " " : "\n");
    }
  }
  return "file:" + path;
}

struct Scenario {
  std::string name;
  PredictOptions options;
  Pin pin;
};

std::vector<Scenario> Scenarios() {
  const Phase fb = Phase::kForwardBackward;
  std::vector<Scenario> s;
  // `perfsim predict`'s default: DeepSeek-V3, fwd_bwd, v7x 4x8x8 (512 devices), ep=256, dp=2.
  s.push_back(
      {"deepseek_v7x_default_uniform",
       Options("deepseek_v3", "tpu_v7x", "4x8x8", "ep_ragged_a2a", {.dp = 2, .ep = 256}, fb, 512,
               4096, "uniform"),
       {0x1.b9bab61f158ep-4, 0x1.01226b02163e7p-5, 0x1.3929809e0a6ecp-4, 0, 0x1.4b68450bep+36}});
  s.push_back(
      {"deepseek_v7x_default_zipf:1.0",
       Options("deepseek_v3", "tpu_v7x", "4x8x8", "ep_ragged_a2a", {.dp = 2, .ep = 256}, fb, 512,
               4096, "zipf:1.0"),
       {0x1.a2e7b4657010ap-1, 0x1.004cfa9cb28d2p-1, 0x1.453573917b07p-2, 0, 0x1.4b68450bep+36}});
  // 8192 chips (16384 devices), ep=256, dp=64: the large case.
  s.push_back(
      {"deepseek_v7x_8192_chips",
       Options("deepseek_v3", "tpu_v7x", "16x16x32", "ep_ragged_a2a", {.dp = 64, .ep = 256}, fb,
               16384, 4096, "uniform"),
       {0x1.c4d0b90ddba02p-3, 0x1.283bf8bed6692p-3, 0x1.3929809e0a6ep-4, 0, 0x1.4b68450bep+36}});
  // Per-shard routing rows with fsdp = 2: every device is simulated.
  s.push_back(
      {"deepseek_v5p_fsdp_per_shard_file",
       Options("deepseek_v3", "tpu_v5p", "4x4x4", "ep_ragged_a2a", {.ep = 32, .fsdp = 2}, fb, 64,
               256, PerShardFile("pin_v5p.txt", 64, 256)),
       {0x1.56d9dc3f6740bp-6, 0x1.51d17cb7757f4p-7, 0x1.5be23bc759022p-7, 10, 0x1.4b6846dap+32}});
  s.push_back(
      {"nano_v5p_ring_of_experts_hot",
       Options("nano", "tpu_v5p", "2x2x2", "ring_of_experts", {.dp = 2, .ep = 4}, fb, 16, 8,
               "hot:0.5"),
       {0x1.8daa365b9078cp-15, 0x1.3b4796e230137p-15, 0x1.498a7de581954p-17, 0, 0x1.451bp+18}});
  s.push_back(
      {"nano_h100_sparse_ragged_dot_zipf",
       Options("nano", "gpu_h100", "8", "sparse_ragged_dot", {.dp = 8}, fb, 16, 8, "zipf:1.2"),
       {0x1.1aa3f73629bf7p-8, 0x1.171f2b9edcd68p-8, 0x1.c265cba6747b3p-15, 0, 0x1.ba7ep+18}});
  s.push_back(
      {"nano_v5p_megablox_fsdp_zipf",
       Options("nano", "tpu_v5p", "2x2x2", "megablox_gmm", {.dp = 4, .fsdp = 2}, fb, 16, 8,
               "zipf:1.2"),
       {0x1.424534766b1ccp-14, 0x1.4629f8833a5bap-15, 0x1.3e6070699bdddp-15, 0, 0x1.850ep+18}});
  s.push_back(
      {"nano_h100_grouped_gemm_aligned_zipf",
       Options("nano", "gpu_h100", "8", "grouped_gemm_aligned", {.dp = 2, .ep = 4}, fb, 16, 8,
               "zipf:1.2"),
       {0x1.546025a48e234p-7, 0x1.5176a311b404fp-7, 0x1.74c1496d0f26fp-14, 0, 0x1.5985p+18}});
  s.push_back(
      {"nano_h100_ep_tp_per_shard_file",
       Options("nano", "gpu_h100", "8", "ep_ragged_a2a", {.ep = 4, .tp = 2}, fb, 16, 8,
               PerShardFile("pin_nano.txt", 4, 12)),
       {0x1.a42a5c5517daep-7, 0x1.a18377cdcc728p-7, 0x1.537243a5b432p-14, 2, 0x1.5c6ap+18}});
  return s;
}

TEST(PredictPins, StepTimesAreBitForBitThoseOfTheTreeTheyWerePinnedOn) {
  const bool print = std::getenv("PERFSIM_PRINT_PINS") != nullptr;
  for (const Scenario& c : Scenarios()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Prediction> p = Predict(c.options);
    ASSERT_TRUE(p.ok()) << p.status();
    if (print) {
      std::printf("      {%a, %a, %a, %lld, %a},  // %s\n", p->step_seconds,
                  p->exposed_communication, p->compute_busy,
                  static_cast<long long>(p->slowest_device), p->memory.activations, c.name.c_str());
      continue;
    }
    // Hex in the messages, so a failure shows the bits.
    EXPECT_EQ(absl::StrFormat("%a", p->step_seconds), absl::StrFormat("%a", c.pin.step_seconds));
    EXPECT_EQ(absl::StrFormat("%a", p->exposed_communication),
              absl::StrFormat("%a", c.pin.exposed_communication));
    EXPECT_EQ(absl::StrFormat("%a", p->compute_busy), absl::StrFormat("%a", c.pin.compute_busy));
    EXPECT_EQ(p->slowest_device, c.pin.slowest_device);
    EXPECT_EQ(absl::StrFormat("%a", p->memory.activations),
              absl::StrFormat("%a", c.pin.activations));
  }
}

}  // namespace
}  // namespace perfsim
