// Logical mesh axes (data, ep, tp, ...) laid onto the physical dimensions of a topology.
//
//   // TPU v7x 4x8x8 = 512 devices (x 4, y 8, z 8, core 2)
//   PERFSIM_ASSIGN_OR_RETURN(auto axes, ParseMeshAxes("data=*,ep=64,tp=4"));  // data = 2
//   PERFSIM_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Create(topology, axes));
//   mesh.ToString();   // "data=2 [x:2/2] ep=64 [x:2 y:8 z:4/2] tp=4 [z:2 core:2]"
//   mesh.Groups(mesh.FindAxis("tp"));   // 128 groups of 4 devices: {0,1,2,3}, {4,5,6,7}, ...
//
// Default assignment rule: the axes, in the order written (major to minor), take the physical
// dimensions in topology order (outermost first), each axis splitting off as much of the
// current dimension as it needs. Equivalently, the row-major index over the mesh axes IS the
// device id (topology.h). An axis may cover part of one dimension (tp=4 of z=8), all of one, or
// several (ep over x, y and part of z). A size that does not split evenly is an error.
//
// Explicit assignment: each axis lists its parts as (dimension name, size), major to minor. Within
// one physical dimension, parts listed earlier (by axis order, then list order) are the more
// major ones: ep=[("x",4)], tp=[("y",2),("x",2)] on x=8 gives ep the x positions 0,2,4,.. (stride
// 2) and tp the low bit of x. The parts of each dimension must multiply to its size.
//
// A part of size k at stride s of a dimension of size n is a closed ring when k * s == n and the
// dimension wraps (the group goes all the way round); otherwise an open line. AxisLayout()
// reports it, as group.h defines.
#ifndef PERFSIM_SIM_COMM_MESH_H_
#define PERFSIM_SIM_COMM_MESH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/comm/group.h"
#include "sim/comm/topology.h"

namespace perfsim {

struct MeshAxis {
  std::string name;
  int64_t size = 0;  // 0 = "*": whatever the other axes leave (at most one axis)
};

// "data=*,ep=64,tp=4" -> {{"data", 0}, {"ep", 64}, {"tp", 4}}. Names are [A-Za-z0-9_], unique.
absl::StatusOr<std::vector<MeshAxis>> ParseMeshAxes(absl::string_view text);

// One piece of a physical dimension given to an axis.
struct MeshPart {
  int64_t dimension = 0;  // topology dimension index
  int64_t size = 1;       // positions of the dimension this part covers
  int64_t stride = 1;     // positions between its consecutive values
  bool operator==(const MeshPart&) const = default;
};

struct AxisAssignment {
  std::string axis;
  std::vector<std::pair<std::string, int64_t>> parts;  // (dimension name, size), major to minor
};

class Mesh {
 public:
  // Default assignment (file comment). The axis sizes must multiply to topology.num_devices().
  static absl::StatusOr<Mesh> Create(const Topology& topology, std::vector<MeshAxis> axes);
  // Explicit assignment: one entry per axis of size > 1, in any order.
  static absl::StatusOr<Mesh> Create(const Topology& topology, std::vector<MeshAxis> axes,
                                     const std::vector<AxisAssignment>& assignment);

  const std::vector<MeshAxis>& axes() const { return axes_; }
  // Index of the axis called `name`, or -1.
  int64_t FindAxis(absl::string_view name) const;
  // Parts of `axis`, major to minor; empty for an axis of size 1.
  const std::vector<MeshPart>& parts(int64_t axis) const { return parts_[axis]; }

  // Device at mesh coordinates (one per axis, each in [0, size)).
  int64_t DeviceAt(absl::Span<const int64_t> mesh_coordinates) const;
  // Mesh coordinates of `device`.
  std::vector<int64_t> MeshCoordinates(int64_t device) const;

  // The devices that differ from `device` only along `axes`, ordered row-major over those axes.
  std::vector<int64_t> GroupOf(absl::Span<const int64_t> axes, int64_t device) const;
  // Every such group, ordered by their first device.
  std::vector<std::vector<int64_t>> Groups(absl::Span<const int64_t> axes) const;
  std::vector<std::vector<int64_t>> Groups(int64_t axis) const {
    return Groups(absl::Span<const int64_t>(&axis, 1));
  }
  // How the groups of `axes` lie on the topology (the same for every group).
  GroupLayout AxisLayout(absl::Span<const int64_t> axes) const;

  // Each axis with its parts, "dimension:size" and "/stride" when the stride is not 1:
  // "data=2 [x:2/2] ep=64 [x:2 y:8 z:4/2] tp=4 [z:2 core:2]".
  std::string ToString() const;

 private:
  explicit Mesh(const Topology& topology) : topology_(topology) {}
  // Resolves "*", checks the sizes and derives the strides of every part.
  absl::Status Finish();

  Topology topology_;  // a copy: a Mesh outlives the topology it was made from
  std::vector<MeshAxis> axes_;
  std::vector<std::vector<MeshPart>> parts_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_COMM_MESH_H_
