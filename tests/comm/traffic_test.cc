// Routing traffic matrices (sim/comm/traffic.h): hand-derived link loads, agreement with the
// all-to-all closed form, and properties of skewed traffic.
//
// Tolerances: hand-derived times to a relative 1e-12 (a few floating-point operations); the
// router against the closed form to 1e-9, since the router adds thousands of flows one by one;
// the properties to 1e-9 for the same reason.
#include "sim/comm/traffic.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/collectives.h"
#include "sim/comm/mesh.h"
#include "sim/util/status_matchers.h"
#include "tests/comm/comm_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::MustLoadChip;
using ::perfsim::testing::MustTopology;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::SwitchChip;
using ::perfsim::testing::TorusChip;
using ::testing::HasSubstr;

constexpr double kW = 1e11;
constexpr double kHop = 1e-6;

#define EXPECT_SECONDS(actual, expected) \
  EXPECT_NEAR((actual), (expected), 1e-12 * std::fabs(expected))

std::vector<int64_t> AllDevices(const Topology& t) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < t.num_devices(); ++d) out.push_back(d);
  return out;
}

TEST(Traffic, RaggedMatrixOnA4x4Torus) {
  // 4x4 torus, both axes wrap; id = x*4 + y. Three flows:
  //   (0,0) -> (2,1), 1 MB: x distance 2 is half way round, so 0.5 MB goes x+ through
  //     (0,0)->(1,0)->(2,0) and 0.5 MB x- through (0,0)->(3,0)->(2,0); then y+ from (2,0).
  //     3 hops.
  //   (1,0) -> (2,0), 3 MB: x+ from (1,0).
  //   (2,2) -> (2,1), 2 MB: y- from (2,2).
  // Busiest link: x+ from (1,0) with 0.5 + 3 = 3.5 MB. Time = 3.5e6 / 1e11 + 3 hops = 38 us.
  const Topology t = MustTopology(TorusChip({"x", "y"}, 4), "4x4");
  TrafficMatrix m = TrafficMatrix::Zero({0, 9, 4, 8, 10});
  m.set(0, 1, 1e6);  // 0 -> 9
  m.set(2, 3, 3e6);  // 4 -> 8
  m.set(4, 1, 2e6);  // 10 -> 9
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime r, RouteTraffic(m, t));
  EXPECT_DOUBLE_EQ(r.busiest_link_bytes, 3.5e6);
  EXPECT_EQ(r.busiest_link, "x+ from (1,0)");
  EXPECT_EQ(r.max_hops, 3);
  EXPECT_SECONDS(r.seconds, 3.5e-5 + 3e-6);
  // Sends and receives per device; device 9 receives 1 + 2 = 3 MB like device 8, and device 4
  // sends 3 MB; the first of them in matrix order is reported.
  EXPECT_DOUBLE_EQ(r.devices[1].receive_bytes, 3e6);
  EXPECT_DOUBLE_EQ(r.devices[2].send_bytes, 3e6);
  EXPECT_EQ(r.slowest_device, 9);
}

TEST(Traffic, SwitchPortsAndInfinibandNics) {
  // 2 nodes of 8 (test GPU: NVLink port 4e11, NIC 5e10, RTT 10 us). GPU 0 sends 1e6 bytes to
  // each of GPUs 1..7 (NVLink) and 1e6 to GPU 8 (IB: its NIC out, GPU 8's NIC in).
  //   NVLink out of 0: 7e6 / 4e11 = 17.5 us;  IB out of 0: 1e6 / 5e10 = 20 us  <- busiest
  // Latency: the IB route, 10 us. Total 30 us.
  const Topology t = MustTopology(SwitchChip(), "16");
  TrafficMatrix m = TrafficMatrix::Zero(AllDevices(t));
  for (int64_t j = 1; j <= 8; ++j) m.set(0, j, 1e6);
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime r, RouteTraffic(m, t));
  EXPECT_EQ(r.busiest_link, "ib out of device 0");
  EXPECT_SECONDS(r.seconds, 20e-6 + 10e-6);
  // A flow to another node's GPU 9 crosses IB first (0's NIC out, 8's NIC in), then NVLink
  // from 8 to 9: 11 us of latency.
  TrafficMatrix far = TrafficMatrix::Zero({0, 9});
  far.set(0, 1, 5e6);
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime f, RouteTraffic(far, t));
  EXPECT_EQ(f.max_hops, 2);
  EXPECT_SECONDS(f.seconds, 5e6 / 5e10 + 11e-6);
}

TEST(Traffic, MalformedMatricesAreErrors) {
  const Topology t = MustTopology(TorusChip({"x", "y"}, 4), "4x4");
  TrafficMatrix bad = TrafficMatrix::Zero({0, 1});
  bad.bytes.pop_back();
  EXPECT_THAT(RouteTraffic(bad, t), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("expected 4 entries for 2 devices; got 3")));
  TrafficMatrix negative = TrafficMatrix::Zero({0, 1});
  negative.set(0, 1, -5);
  EXPECT_THAT(RouteTraffic(negative, t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected finite non-negative bytes; got -5 from 0 to 1")));
  EXPECT_THAT(RouteTraffic(TrafficMatrix::Zero({0, 0}), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 0 twice")));
  EXPECT_THAT(RouteTraffic(TrafficMatrix::Zero({16}), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 16); got 16")));
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime nothing, RouteTraffic(TrafficMatrix::Zero({3}), t));
  EXPECT_EQ(nothing.seconds, 0);
  EXPECT_EQ(nothing.slowest_device, -1);
}

// Every group of `axes` does a uniform all-to-all of `bytes` per device at once, routed.
TrafficTime RouteMeshAllToAll(const Topology& t, const Mesh& mesh, const std::vector<int64_t>& axes,
                              double bytes) {
  TrafficMatrix m = TrafficMatrix::Zero(AllDevices(t));
  for (const std::vector<int64_t>& group : mesh.Groups(axes)) {
    const double per_peer = bytes / static_cast<double>(group.size());
    for (int64_t s : group) {
      for (int64_t d : group) {
        if (s != d) m.set(s, d, per_peer);
      }
    }
  }
  absl::StatusOr<TrafficTime> r = RouteTraffic(m, t);
  PERFSIM_CHECK(r.ok()) << r.status();
  return *std::move(r);
}

struct ClosedFormCase {
  const char* chip;  // built-in, or "torus4" / "switch" test chips
  const char* shape;
  const char* mesh;
  std::vector<const char*> axes;
};

TEST(Traffic, AllToAllClosedFormMatchesRoutingEveryGroup) {
  // The closed form (collectives.h) claims, for regular groups, the busiest link of each
  // dimension; routing the flows of every group at once (SPMD) must find the same bytes and
  // the same longest route. Cases cover closed rings, open lines, strided rings, the v7x core
  // dimension, NVLink and InfiniBand.
  const std::vector<ClosedFormCase> cases = {
      {"torus4", "4x4x8", "a=128", {"a"}},
      {"torus4", "4x4x8", "a=4,b=32", {"b"}},
      {"torus4", "4x4x8", "a=32,b=4", {"b"}},             // z: 4 of 8, an open line
      {"torus4", "4x4x8", "a=4,b=4,c=8", {"a", "c"}},     // x and z rings
      {"tpu_v5p", "2x4x4", "a=*", {"a"}},                 // x open (2)
      {"tpu_v7x", "4x4x8", "data=2,ep=32,tp=4", {"ep"}},  // x line, y ring, z ring at stride 2
      {"tpu_v7x", "4x4x4", "ep=64,tp=2", {"ep"}},         // one core of each chip
      {"tpu_v7x", "4x4x4", "ep=32,tp=4", {"ep", "tp"}},
      {"switch", "16", "a=*", {"a"}},
      {"switch", "32", "dp=2,ep=16", {"ep"}},
  };
  for (const ClosedFormCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.chip << " " << c.shape << " " << c.mesh);
    const std::string chip_name = c.chip;
    const Chip chip = chip_name == "torus4"   ? TorusChip({"x", "y", "z"}, 4)
                      : chip_name == "switch" ? SwitchChip()
                                              : MustLoadChip(chip_name);
    const Topology t = MustTopology(chip, c.shape);
    PERFSIM_ASSERT_OK_AND_ASSIGN(auto axes, ParseMeshAxes(c.mesh));
    PERFSIM_ASSERT_OK_AND_ASSIGN(Mesh mesh, Mesh::Create(t, axes));
    std::vector<int64_t> axis_ids;
    for (const char* a : c.axes) axis_ids.push_back(mesh.FindAxis(a));
    const double bytes = 3.0e6;
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveTime closed,
                                 AllToAllTime(bytes, mesh.GroupOf(axis_ids, 0), t));
    const TrafficTime routed = RouteMeshAllToAll(t, mesh, axis_ids, bytes);
    EXPECT_NEAR(closed.busiest_link_bytes, routed.busiest_link_bytes,
                1e-9 * routed.busiest_link_bytes);
    EXPECT_NEAR(closed.seconds, routed.seconds, 1e-9 * routed.seconds);
  }
}

// Every source sends `bytes` split by the same destination weights q (a hot expert is hot for
// every sender). On a wrapped torus or a switch, where every translation maps the topology and
// its routes onto themselves, the busiest link of such traffic is never lighter than under the
// uniform split: a link's load averaged over all its translates is b * sum_d q_d * C, with C
// the average over destinations of the sources routed through it, which is the uniform load
// of that link; the maximum is at least the average. With every q_d > 0 every pair still
// exchanges bytes, so the longest route (latency) is the same.
TEST(Traffic, SkewedTrafficIsNeverFasterThanUniform) {
  const std::vector<std::pair<std::string, std::string>> setups = {
      {"torus4", "4x4x4"}, {"torus4", "4x8"}, {"switch", "8"}, {"switch", "32"}};
  std::mt19937_64 rng(20260901);
  for (const auto& [chip_name, shape] : setups) {
    const Chip chip = chip_name == "torus4" ? (shape == "4x8" ? TorusChip({"x", "y"}, 4)
                                                              : TorusChip({"x", "y", "z"}, 4))
                                            : SwitchChip();
    const Topology t = MustTopology(chip, shape);
    const int64_t n = t.num_devices();
    const double bytes = 1e6;
    TrafficMatrix uniform = TrafficMatrix::Zero(AllDevices(t));
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t d = 0; d < n; ++d) uniform.set(s, d, bytes / n);
    }
    PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime base, RouteTraffic(uniform, t));
    for (int trial = 0; trial < 20; ++trial) {
      SCOPED_TRACE(::testing::Message() << chip_name << " " << shape << " trial " << trial);
      // Zipf weights over a random ranking of the destinations, exponent 0 (uniform) .. 1.9.
      const double exponent = 0.1 * trial;
      std::vector<int64_t> rank(n);
      for (int64_t i = 0; i < n; ++i) rank[i] = i;
      std::shuffle(rank.begin(), rank.end(), rng);
      std::vector<double> q(n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += q[i] = 1.0 / std::pow(rank[i] + 1, exponent);
      TrafficMatrix skewed = TrafficMatrix::Zero(AllDevices(t));
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t d = 0; d < n; ++d) skewed.set(s, d, bytes * q[d] / sum);
      }
      EXPECT_NEAR(skewed.TotalBytes(), uniform.TotalBytes(), 1e-6 * uniform.TotalBytes());
      PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime r, RouteTraffic(skewed, t));
      EXPECT_GE(r.busiest_link_bytes, base.busiest_link_bytes * (1 - 1e-9));
      EXPECT_GE(r.seconds, base.seconds * (1 - 1e-9));
    }
  }
}

// Balanced all-to-all with a fixed send buffer per device: adding chips never takes the
// busiest link below the bisection bound, and never makes the collective faster. Bound for a
// torus cut across dimension i (size n_i even): half the devices send to the other half,
// (N/2) * (N/2) * m bytes each way with m = b/N, over (N/n_i) * (2 if it wraps else 1) links
// per direction. For NVLink + InfiniBand the bound is what one GPU sends through its port
// (to its own domain) and through its NIC (to the others), each over its bandwidth.
TEST(Traffic, MoreChipsNeverBeatTheBisectionBound) {
  const Chip torus = TorusChip({"x", "y", "z"}, 4);
  const double b = 1e6;
  double previous_seconds = 0;
  for (const char* shape : {"2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8"}) {
    SCOPED_TRACE(shape);
    const Topology t = MustTopology(torus, shape);
    const double n_total = static_cast<double>(t.num_devices());
    double bound = 0;
    for (const TopologyDimension& d : t.dimensions()) {
      if (d.size % 2 != 0) continue;
      const double links = n_total / d.size * (d.wraparound ? 2 : 1);
      bound = std::max(bound, n_total / 2 * n_total / 2 * (b / n_total) / links);
    }
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveTime a2a, AllToAllTime(b, AllDevices(t), t));
    EXPECT_GE(a2a.busiest_link_bytes, bound * (1 - 1e-12));
    EXPECT_GE(a2a.seconds, previous_seconds);
    previous_seconds = a2a.seconds;
  }
  previous_seconds = 0;
  for (const char* shape : {"2", "4", "8", "16", "32", "64"}) {
    SCOPED_TRACE(shape);
    const Topology t = MustTopology(SwitchChip(), shape);
    const double n_total = static_cast<double>(t.num_devices());
    const double n_local = static_cast<double>(t.dimensions().back().size);
    // What one GPU must push through its NVLink port and through its NIC.
    const double bound =
        std::max((n_local - 1) * (b / n_total) / 4e11, (n_total - n_local) * (b / n_total) / 5e10);
    PERFSIM_ASSERT_OK_AND_ASSIGN(CollectiveTime a2a, AllToAllTime(b, AllDevices(t), t));
    EXPECT_GE(a2a.transfer_seconds, bound * (1 - 1e-12));
    EXPECT_GE(a2a.seconds, previous_seconds);
    previous_seconds = a2a.seconds;
  }
}

// The box method (a group that is a product of positions, in row-major order) must give what
// routing every flow gives: the same devices listed in another order are not a box, so
// RouteTraffic routes them flow by flow. Integer byte counts make both exact, so the results
// agree to the bit.
void ExpectSameRouting(const TrafficTime& a, const TrafficTime& b) {
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.busiest_link_bytes, b.busiest_link_bytes);
  EXPECT_EQ(a.busiest_link, b.busiest_link);
  EXPECT_EQ(a.latency_seconds, b.latency_seconds);
  EXPECT_EQ(a.max_hops, b.max_hops);
  EXPECT_EQ(a.slowest_device, b.slowest_device);
}

TEST(Traffic, BoxRoutingMatchesFlowByFlow) {
  std::mt19937_64 random(11);
  struct Case {
    const char* chip;
    const char* shape;
    std::vector<int64_t> devices;
  };
  const Chip v7x = MustLoadChip("tpu_v7x");
  const Chip v5e = MustLoadChip("tpu_v5e");
  const Chip h100 = MustLoadChip("gpu_h100");
  std::vector<std::pair<const Chip*, Case>> cases;
  // v7x 4x4x4 (x2 cores): the first 64 devices (x = 0, 1), a strided box (every other core and
  // every other z) and all 128.
  std::vector<int64_t> first, strided, all;
  for (int64_t d = 0; d < 128; ++d) {
    if (d < 64) first.push_back(d);
    if (d % 2 == 0 && (d / 2) % 2 == 1) strided.push_back(d);
    all.push_back(d);
  }
  cases.push_back({&v7x, {"tpu_v7x", "4x4x4", first}});
  cases.push_back({&v7x, {"tpu_v7x", "4x4x4", strided}});
  cases.push_back({&v7x, {"tpu_v7x", "4x4x4", all}});
  // v5e 4x4: an open 2D mesh.
  cases.push_back({&v5e, {"tpu_v5e", "4x4", std::vector<int64_t>(all.begin(), all.begin() + 16)}});
  // H100 x32: 4 NVLink domains of 8 over InfiniBand.
  cases.push_back({&h100, {"gpu_h100", "32", std::vector<int64_t>(all.begin(), all.begin() + 32)}});
  for (const auto& [chip, c] : cases) {
    SCOPED_TRACE(absl::StrCat(c.chip, " ", c.shape, " ", c.devices.size(), " devices"));
    const Topology t = MustTopology(*chip, c.shape);
    const int64_t n = static_cast<int64_t>(c.devices.size());
    for (int trial = 0; trial < 3; ++trial) {
      TrafficMatrix box = TrafficMatrix::Zero(c.devices);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          // Some flows empty (trial 1), the rest integer byte counts.
          const bool empty = trial == 1 && random() % 7 == 0;
          box.set(i, j, empty ? 0.0 : static_cast<double>(random() % 100000) * 7168);
        }
      }
      // The same traffic with the device list reversed: not row-major, so flow by flow.
      std::vector<int64_t> reversed(c.devices.rbegin(), c.devices.rend());
      TrafficMatrix flows = TrafficMatrix::Zero(reversed);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) flows.set(n - 1 - i, n - 1 - j, box.get(i, j));
      }
      PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime a, RouteTraffic(box, t));
      PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime b, RouteTraffic(flows, t));
      ExpectSameRouting(a, b);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(a.devices[i].send_bytes, b.devices[n - 1 - i].send_bytes);
        EXPECT_EQ(a.devices[i].receive_bytes, b.devices[n - 1 - i].receive_bytes);
      }
    }
  }
}

TEST(Traffic, UniformSourcesMatchTheFullMatrix) {
  // RouteTrafficToEach / FromEach against RouteTraffic of the matrix they stand for, on a box
  // (v7x 4x4x4, 64 devices) and on a set that is not one (every third device).
  std::mt19937_64 random(5);
  const Topology t = MustTopology(MustLoadChip("tpu_v7x"), "4x4x4");
  std::vector<int64_t> box, scattered;
  for (int64_t d = 0; d < 64; ++d) box.push_back(d);
  for (int64_t d = 0; d < 128; d += 3) scattered.push_back(d);
  for (const std::vector<int64_t>& devices : {box, scattered}) {
    const int64_t n = static_cast<int64_t>(devices.size());
    std::vector<double> values(n);
    for (double& v : values) v = static_cast<double>(random() % 5000 + 1) * 14336;
    for (bool to_each : {true, false}) {
      SCOPED_TRACE(absl::StrCat(n, " devices, ", to_each ? "to each" : "from each"));
      TrafficMatrix m = TrafficMatrix::Zero(devices);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) m.set(i, j, values[to_each ? j : i]);
      }
      PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime full, RouteTraffic(m, t));
      PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime fast, to_each
                                                         ? RouteTrafficToEach(devices, values, t)
                                                         : RouteTrafficFromEach(devices, values, t));
      ExpectSameRouting(full, fast);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(full.devices[i].send_bytes, fast.devices[i].send_bytes);
        EXPECT_EQ(full.devices[i].receive_bytes, fast.devices[i].receive_bytes);
      }
    }
  }
  EXPECT_THAT(RouteTrafficToEach({0, 1}, {1.0}, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 2 byte counts")));
  EXPECT_THAT(RouteTrafficFromEach({0, 1}, {1.0, -2.0}, t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected finite non-negative bytes; got -2 from 1")));
}


// Link classes (issue 14): each link is timed at its own class's efficiency fraction, so the
// link that bounds the exchange is found with the fractions applied.
Chip SwitchChipWithClasses(double nvlink, double infiniband) {
  HardwareSpec spec = SwitchChip().proto();
  spec.mutable_efficiency()->set_nvlink_fraction_of_peak(nvlink);
  spec.mutable_efficiency()->set_infiniband_fraction_of_peak(infiniband);
  absl::StatusOr<Chip> chip = Chip::FromProto(spec);
  PERFSIM_CHECK(chip.ok()) << chip.status();
  return *std::move(chip);
}

TEST(Traffic, EachLinkIsTimedAtItsOwnClassFraction) {
  // SwitchPortsAndInfinibandNics' traffic: GPU 0 sends 1e6 to each of GPUs 1..7 (NVLink,
  // 7e6 on its port of 4e11) and 1e6 to GPU 8 (IB, its NIC of 5e10); IB latency 10 us.
  std::vector<int64_t> devices;
  for (int64_t d = 0; d < 16; ++d) devices.push_back(d);
  TrafficMatrix m = TrafficMatrix::Zero(devices);
  for (int64_t j = 1; j <= 8; ++j) m.set(0, j, 1e6);
  // NVLink at 0.5: 7e6 / 2e11 = 35 us; IB at 0.8: 1e6 / 4e10 = 25 us. NVLink bounds: 45 us.
  const Topology a = MustTopology(SwitchChipWithClasses(0.5, 0.8), "16");
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime r, RouteTraffic(m, a));
  EXPECT_EQ(r.busiest_link, "nvlink out of device 0");
  EXPECT_EQ(r.busiest_link_fabric, LinkFabric::kNvlink);
  EXPECT_SECONDS(r.seconds, 35e-6 + 10e-6);
  // NVLink at 1: 17.5 us; IB at 0.4: 1e6 / 2e10 = 50 us. IB bounds: 60 us.
  const Topology b = MustTopology(SwitchChipWithClasses(1.0, 0.4), "16");
  PERFSIM_ASSERT_OK_AND_ASSIGN(TrafficTime q, RouteTraffic(m, b));
  EXPECT_EQ(q.busiest_link, "ib out of device 0");
  EXPECT_EQ(q.busiest_link_fabric, LinkFabric::kInfiniband);
  EXPECT_SECONDS(q.seconds, 50e-6 + 10e-6);
}

TEST(Traffic, TopologyDerivesEveryDimensionByItsClass) {
  const Topology t = MustTopology(SwitchChipWithClasses(0.5, 0.8), "16");
  ASSERT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dimension(0).fabric, LinkFabric::kInfiniband);
  EXPECT_DOUBLE_EQ(t.dimension(0).peak_bytes_per_second_per_direction, 5e10);
  EXPECT_DOUBLE_EQ(t.dimension(0).bytes_per_second_per_direction, 4e10);
  EXPECT_EQ(t.dimension(1).fabric, LinkFabric::kNvlink);
  EXPECT_DOUBLE_EQ(t.dimension(1).bytes_per_second_per_direction, 2e11);
  EXPECT_THAT(t.ToString(), HasSubstr("ib scale_out 2 50 GB/s/dir x 0.8"));
  // A TPU torus axis is ICI.
  HardwareSpec spec = TorusChip({"x"}, 4).proto();
  spec.mutable_efficiency()->set_ici_fraction_of_peak(0.25);
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip torus, Chip::FromProto(spec));
  const Topology u = MustTopology(torus, "4");
  EXPECT_EQ(u.dimension(0).fabric, LinkFabric::kIci);
  // 2 links per chip: one of 1e11 to each neighbour, at 0.25.
  EXPECT_DOUBLE_EQ(u.dimension(0).bytes_per_second_per_direction, 2.5e10);
}

}  // namespace
}  // namespace perfsim
