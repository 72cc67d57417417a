// A scanned layer stack against its unrolled twin (issue 12), on the JAX modules of
// tests/testdata/hlo/scan (tools/jax/scan_goldens.py): N residual MLP layers
// h <- h + tanh(h @ w1) @ w2 (D = 256, F = 1024, batch B = 64, f32) with the gradient of
// 0.5·sum(h_N²) w.r.t. every weight, as `lax.scan` over stacked weights [N, D, F] / [N, F, D]
// and as a Python loop over 2N weight arrays, N = 4 and 8, each as JAX lowers it (no
// known_trip_count) and as XLA:CPU compiles it (known_trip_count, every slice of the stacks a
// separate copy kernel); and the scan under a data-parallel shard_map on 8 devices.
//
// What the true-mode cost must get right (and what it got wrong before, issue 12):
//   - a lowered scan's while loops carry no known_trip_count: the trip count comes from the
//     counted-loop pattern (trip_count.h); before, the body was counted once and N = 8 cost
//     1.25x N = 4;
//   - the slices a scan takes out of its stacked operands (one layer [1, D, F] of [N, D, F])
//     and the slices it writes back (per-layer gradients and saved activations) are address
//     offsets on an accelerator, not copies (op_counts.h); XLA:CPU makes each a copy kernel
//     (and JAX's lowered text a separate op), and counting those made the scan cost 2.5x
//     (lowered) to 2.9x (compiled) its unrolled twin.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/comm/collectives.h"
#include "sim/cost/module_cost.h"
#include "sim/cost/op_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/roofline.h"
#include "sim/cost/trip_count.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

const std::string kDir = std::string(PERFSIM_TESTDATA_DIR) + "/hlo/scan/";

// The model of tools/jax/scan_goldens.py (also in the directory's MANIFEST.json).
constexpr int64_t kD = 256;
constexpr int64_t kF = 1024;
constexpr int64_t kB = 64;
constexpr int64_t kF32 = 4;

std::unique_ptr<Module> Load(const std::string& file) {
  std::ifstream in(kDir + file);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text.str(), file);
  EXPECT_TRUE(module.ok()) << file << ": " << module.status();
  if (!module.ok()) return nullptr;
  EXPECT_TRUE(VerifyModule(**module).ok()) << file;
  return *std::move(module);
}

Chip LoadChip(const std::string& name) {
  absl::StatusOr<Chip> chip = ResolveChip(name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  return *std::move(chip);
}

std::string Name(const std::string& form, int64_t n, const std::string& shape) {
  return absl::StrCat("mlp_", form, "_n", n, ".", shape, ".hlo");
}

TEST(ScanTripCount, LoweredScanFromTheCountedLoopCompiledFromKnownTripCount) {
  for (int64_t n : {4, 8}) {
    for (const std::string shape : {"lowered", "compiled"}) {
      std::unique_ptr<Module> module = Load(Name("scan", n, shape));
      ASSERT_NE(module, nullptr);
      int loops = 0;
      for (const auto& instruction : module->entry()->instructions()) {
        if (instruction->opcode() != Opcode::kWhile) continue;
        ++loops;
        EXPECT_EQ(StaticTripCount(*instruction), n) << shape << " " << instruction->name();
        if (shape == "lowered") {
          // JAX writes no backend_config: only the induction variable tells the count.
          EXPECT_EQ(KnownTripCount(*instruction), std::nullopt) << instruction->name();
          EXPECT_EQ(CountedLoopTrips(*instruction), n) << instruction->name();
        } else {
          EXPECT_EQ(KnownTripCount(*instruction), n) << instruction->name();
        }
      }
      EXPECT_EQ(loops, 2) << "forward and backward scan in " << Name("scan", n, shape);
    }
  }
}

// The true cost of one module on `chip`.
ModuleCost CostOf(const Module& module, const Chip& chip) {
  absl::StatusOr<ModuleCost> cost = CostModule(module, chip, {.mode = CostMode::kTrue});
  EXPECT_TRUE(cost.ok()) << module.name() << ": " << cost.status();
  return cost.ok() ? *std::move(cost) : ModuleCost{};
}

double Seconds(const std::string& file, const Chip& chip) {
  std::unique_ptr<Module> module = Load(file);
  return module == nullptr ? 0.0 : CostOf(*module, chip).seconds;
}

// Twice the layers, twice the time: seconds = f + N·p, where p is one layer's forward and
// backward work (a loop iteration each, the layer's share of the stacked buffers' set-up)
// and f what does not grow with N (the loss, the input, the loops' set-up), so
// seconds(8) / seconds(4) = 2 - f / (f + 4p). f is a few percent of four layers on the TPU
// and about 12% on the H100, whose 1 us kernel launch is paid by every small kernel outside
// the loops: the ratio is within 10% of 2 (the tolerance) on both. Before the counted
// loop was recognised, a lowered scan's body was counted once: ratio 1.25 (TPU v5p).
TEST(ScanCost, EightLayersCostTwiceFour) {
  for (const std::string chip_name : {"tpu_v5p", "gpu_h100"}) {
    const Chip chip = LoadChip(chip_name);
    for (const std::string form : {"scan", "unrolled"}) {
      for (const std::string shape : {"lowered", "compiled"}) {
        const double ratio =
            Seconds(Name(form, 8, shape), chip) / Seconds(Name(form, 4, shape), chip);
        std::printf("%s %s %s: seconds(N=8) / seconds(N=4) = %.3f\n", chip_name.c_str(),
                    form.c_str(), shape.c_str(), ratio);
        EXPECT_NEAR(ratio, 2.0, 0.2) << chip_name << " " << form << " " << shape;
      }
    }
  }
}

bool IsStackedArray(const Shape& shape, int64_t n) {
  return shape.IsArray() && shape.rank() == 3 && shape.dimensions(0) == n;
}

// What a scan does that its unrolled twin does not, on top of the same layers:
//   - it sets up its stacked outputs before the loops: JAX initialises every stacked output of
//     a scan (the activations the forward saves for the backward, the per-layer weight
//     gradients) with a broadcast of zeros (jax/_src/lax/control_flow/loops.py _empty_array:
//     lax.empty2 lowers to a constant 0 where an AllocateBuffer would do). XLA writes them:
//     N·(B·D + B·F + 2·D·F)·4 B = 9.7 MB for N = 4, and XLA:CPU copies one of the two
//     [N, B, F] buffers that share one broadcast (2 MB). An entry instruction that produces a
//     [N, ., .] array by a broadcast or a copy;
//   - XLA:CPU copies the carried activation h [B, D] at the top of every iteration of both
//     loops (copy instructions in the loop bodies, 2·B·D·4 B each).
// Both are real memory traffic of these programs, not counting errors: with them, the scan
// costs 1.23x (lowered) and 1.46x (compiled) its unrolled twin on a TPU v5p, where every
// kernel here is HBM-bound. Without them it is within 15% (the tolerance): the same
// dots, tanh and adds per layer, with small differences in where the residual 1 - tanh is
// formed (in the forward and saved, or in the backward) — 5% (lowered) and 13% (compiled).
// Before the slices of the stacks were counted as views (with the trip counts already
// found), the scan cost 2.47x (lowered) and 2.9x (compiled) its unrolled twin at N = 4: the
// issue's "2.6x".
struct Extra {
  double stack_setup = 0;
  double loop_copies = 0;
};

Extra ScanExtra(const ModuleCost& cost, const Chip& chip, int64_t n) {
  Extra extra;
  for (const InstructionCost& row : cost.instructions) {
    const Instruction& instruction = *row.instruction;
    if (instruction.opcode() == Opcode::kWhile) {
      const std::optional<int64_t> trips = StaticTripCount(instruction);
      for (const auto& inner : instruction.body()->instructions()) {
        if (inner->opcode() != Opcode::kCopy) continue;
        absl::StatusOr<OpCost> copy = CostInstruction(*inner, chip, {.mode = CostMode::kTrue});
        EXPECT_TRUE(copy.ok()) << copy.status();
        extra.loop_copies += copy.ok() ? copy->seconds.value_or(0) * trips.value_or(1) : 0.0;
      }
      continue;
    }
    if (!IsStackedArray(instruction.shape(), n)) continue;
    const Instruction* producer = &instruction;
    if (instruction.opcode() == Opcode::kFusion) producer = instruction.calls()[0]->root();
    if (producer->opcode() == Opcode::kBroadcast || producer->opcode() == Opcode::kCopy) {
      extra.stack_setup += row.cost.seconds.value_or(0);
    }
  }
  return extra;
}

TEST(ScanCost, ScanCostsItsUnrolledTwinPlusTheStackSetUp) {
  const Chip chip = LoadChip("tpu_v5p");
  for (const std::string shape : {"lowered", "compiled"}) {
    for (int64_t n : {4, 8}) {
      std::unique_ptr<Module> scan = Load(Name("scan", n, shape));
      std::unique_ptr<Module> unrolled = Load(Name("unrolled", n, shape));
      ASSERT_NE(scan, nullptr);
      ASSERT_NE(unrolled, nullptr);
      const ModuleCost scan_cost = CostOf(*scan, chip);
      const double twin = CostOf(*unrolled, chip).seconds;
      const Extra extra = ScanExtra(scan_cost, chip, n);
      // The stacks' set-up is at least the zeros JAX asks for (per layer B·D + B·F + 2·D·F
      // f32), at the chip's HBM rate: it is found, not something else.
      const double zeros_bytes = static_cast<double>(n * (kB * kD + kB * kF + 2 * kD * kF) * kF32);
      const double bandwidth = DeviceHbmBytesPerSecond(chip) *
                               chip.proto().efficiency().hbm_fraction_of_peak();
      EXPECT_GE(extra.stack_setup, 0.99 * zeros_bytes / bandwidth) << shape << " N=" << n;
      const double raw = scan_cost.seconds / twin;
      const double net = (scan_cost.seconds - extra.stack_setup - extra.loop_copies) / twin;
      std::printf("tpu_v5p %s N=%lld: scan / unrolled = %.3f; without the stack set-up (%.3g s) "
                  "and the loop copies (%.3g s): %.3f\n",
                  shape.c_str(), static_cast<long long>(n), raw, extra.stack_setup,
                  extra.loop_copies, net);
      EXPECT_NEAR(net, 1.0, 0.15) << shape << " N=" << n;
    }
  }
}

// The data-parallel scan on 8 devices: the gradients (and the loss) are averaged by
// all-reduces over all 8 devices — one tuple all-reduce in XLA:CPU's module, three in JAX's —
// of N·2·D·F·4 = 8 MiB of gradients plus the 4-byte loss, timed on the chip's 8-device slice
// exactly as sim/comm times an all-reduce of those bytes over devices 0..7.
TEST(ScanCost, DataParallelGradientAllReduceOnTheSlice) {
  constexpr int64_t kLayers = 4;
  const double gradient_bytes = static_cast<double>(kLayers * 2 * kD * kF * kF32 + kF32);
  for (const std::string chip_name : {"tpu_v5p", "gpu_h100"}) {
    const Chip chip = LoadChip(chip_name);
    absl::StatusOr<Topology> topology = TopologyForDevices(chip, 8);
    ASSERT_TRUE(topology.ok()) << topology.status();
    for (const std::string shape : {"lowered", "compiled"}) {
      std::unique_ptr<Module> module = Load(absl::StrCat("mlp_scan_dp8_n4.", shape, ".hlo"));
      ASSERT_NE(module, nullptr);
      const ModuleCost cost = CostOf(*module, chip);
      EXPECT_EQ(cost.num_devices, 8);
      EXPECT_EQ(cost.topology, topology->ToString());
      // XLA:CPU's all-reduce is an entry row; JAX's are inside the shard_map body, a called
      // computation whose row includes them.
      const CostOptions options{.mode = CostMode::kTrue, .num_devices = 8,
                                .topology = &*topology};
      double bytes = 0;
      int all_reduces = 0;
      for (const auto& computation : module->computations()) {
        for (const auto& instruction : computation->instructions()) {
          if (instruction->opcode() != Opcode::kAllReduce) continue;
          ++all_reduces;
          absl::StatusOr<OpCost> row = CostInstruction(*instruction, chip, options);
          ASSERT_TRUE(row.ok()) << row.status();
          const double operands = std::accumulate(row->counts.operand_bytes.begin(),
                                                  row->counts.operand_bytes.end(), 0.0);
          bytes += operands;
          EXPECT_EQ(row->bound, Bound::kCommunication) << instruction->name();
          absl::StatusOr<CollectiveTime> want =
              AllReduceTime(operands, {0, 1, 2, 3, 4, 5, 6, 7}, *topology);
          ASSERT_TRUE(want.ok()) << want.status();
          ASSERT_TRUE(row->seconds.has_value()) << instruction->name();
          EXPECT_NEAR(*row->seconds, want->seconds, 1e-9 * want->seconds)
              << chip_name << " " << shape << " " << instruction->name();
          std::printf("%s %s: %s all-reduce of %.0f B on %s: %.3g s\n", chip_name.c_str(),
                      shape.c_str(), instruction->name().c_str(), operands,
                      cost.topology.c_str(), *row->seconds);
        }
      }
      EXPECT_EQ(all_reduces, shape == "lowered" ? 3 : 1) << chip_name << " " << shape;
      EXPECT_EQ(bytes, gradient_bytes) << chip_name << " " << shape;
    }
  }
}

}  // namespace
}  // namespace perfsim
