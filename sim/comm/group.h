// Where a group of devices lies on the topology.
//
//   // 4x4x4 torus, one device per chip: devices (x=1, y=0..3, z=2)
//   AnalyzeGroup(t, {18, 22, 26, 30});
//   // -> regular, spans {dimension 1 ("y"), size 4, stride 1, closed_ring = true}
//
// A group is *regular* when it is the Cartesian product, over the dimensions, of evenly spaced
// positions: along each dimension either one position, or `size` positions `stride` apart that
// are either a closed ring (they go all the way round a wrapped dimension: size * stride equals
// the dimension size) or an open line (consecutive, with no wrap link between its ends inside
// the group). The groups of one mesh axis under the default assignment are always regular, and
// HLO replica groups usually are. Collectives cost regular groups per dimension and irregular
// ones by routing their flows.
//
// Under SPMD every group of a collective runs at once, so a strided group shares each link with
// the `stride` interleaved groups beside it, and the devices of one chip share its ICI links:
// collectives.h divides link bandwidth accordingly.
#ifndef PERFSIM_SIM_COMM_GROUP_H_
#define PERFSIM_SIM_COMM_GROUP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/comm/topology.h"

namespace perfsim {

// How a regular group extends along one dimension it spans (size > 1).
struct DimensionSpan {
  int64_t dimension = 0;     // index into Topology::dimensions()
  int64_t size = 1;          // group members along it
  int64_t stride = 1;        // positions between neighbouring members (kTorus; 1 otherwise)
  bool closed_ring = false;  // kTorus: the members form a ring through wraparound links
  bool operator==(const DimensionSpan&) const = default;
};

struct GroupLayout {
  bool regular = false;
  // Regular groups: one entry per dimension the group spans (size > 1), outermost first.
  std::vector<DimensionSpan> spans;
  int64_t size = 0;  // devices in the group
};

// InvalidArgument for an empty group, a device outside the topology or a repeated device.
absl::StatusOr<GroupLayout> AnalyzeGroup(const Topology& topology,
                                         absl::Span<const int64_t> devices);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_GROUP_H_
