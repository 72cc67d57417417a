// Every committed JAX module (tests/testdata/hlo/jax, compiled and lowered, the 8-device
// expert-parallel ones included, and tests/testdata/hlo/shard_map) is simulated without error
// on a TPU and a GPU, with the invariants any schedule has: the step is at least each stream's
// busy time and at most the serial sum, the exposed communication at most the communication
// busy time; and the same bits twice.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

std::vector<std::string> Modules() {
  std::vector<std::string> paths;
  for (const char* dir : {"/hlo/jax", "/hlo/shard_map"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(PERFSIM_TESTDATA_DIR) + dir)) {
      if (entry.path().extension() == ".hlo") paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(SimulatorJaxModules, EveryModuleIsPredicted) {
  const std::vector<std::string> paths = Modules();
  ASSERT_GE(paths.size(), 70u);
  int64_t with_collectives = 0, eight_devices = 0;
  for (const char* hw : {"tpu_v5p", "gpu_h100"}) {
    absl::StatusOr<Chip> chip = ResolveChip(hw);
    ASSERT_TRUE(chip.ok()) << chip.status();
    for (const std::string& path : paths) {
      SCOPED_TRACE(absl::StrCat(hw, " ", path));
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text.str(), path);
      ASSERT_TRUE(m.ok()) << m.status();
      ASSERT_TRUE(VerifyModule(**m).ok());
      absl::StatusOr<Topology> topology = TopologyForModule(**m, *chip, "");
      ASSERT_TRUE(topology.ok()) << topology.status();
      absl::StatusOr<Timeline> t = SimulateModule(**m, *chip, *topology);
      ASSERT_TRUE(t.ok()) << t.status();
      const double slack = 1e-12 * t->serial_seconds;
      EXPECT_GE(t->step_seconds, t->compute_busy - slack);
      EXPECT_GE(t->step_seconds, t->communication_busy - slack);
      EXPECT_LE(t->step_seconds, t->serial_seconds + slack);
      EXPECT_LE(t->exposed_communication, t->communication_busy + slack);
      EXPECT_GE(t->peak_buffer_bytes, 0);
      // One op per entry instruction, and one per instruction of each inlined call.
      EXPECT_GE(t->ops.size(), (*m)->entry()->instructions().size());
      if (t->communication_busy > 0) ++with_collectives;
      if (t->num_devices == 8) ++eight_devices;
      absl::StatusOr<Timeline> again = SimulateModule(**m, *chip, *topology);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(again->step_seconds, t->step_seconds);
      EXPECT_EQ(again->schedule.device(t->slowest_device).start,
                t->schedule.device(t->slowest_device).start);
    }
  }
  // The collective and expert-parallel modules were timed on a slice, not skipped.
  EXPECT_GT(with_collectives, 0);
  EXPECT_GT(eight_devices, 0);
}

}  // namespace
}  // namespace perfsim
