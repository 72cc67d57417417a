#include "sim/comm/mesh.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

bool IsAxisName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Replaces "*" by what the other axes leave; the sizes must multiply to the device count.
absl::Status ResolveSizes(const Topology& topology, std::vector<MeshAxis>& axes) {
  int64_t known = 1;
  int64_t stars = 0;
  for (const MeshAxis& a : axes) {
    if (a.size == 0) {
      ++stars;
    } else if (a.size > topology.num_devices()) {
      known = topology.num_devices() + 1;  // too big; also keeps the product from overflowing
      break;
    } else {
      known *= a.size;
    }
    if (known > topology.num_devices()) break;
  }
  if (stars > 1 || topology.num_devices() % known != 0 ||
      (stars == 0 && known != topology.num_devices())) {
    std::vector<std::string> written;
    for (const MeshAxis& a : axes) {
      written.push_back(absl::StrCat(a.name, "=", a.size == 0 ? "*" : absl::StrCat(a.size)));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("mesh: expected axis sizes (at most one '*') whose product is the ",
                     topology.num_devices(), " devices of ", topology.chip_name(), " ",
                     topology.slice_shape(), "; got ", absl::StrJoin(written, ",")));
  }
  for (MeshAxis& a : axes) {
    if (a.size == 0) a.size = topology.num_devices() / known;
  }
  return absl::OkStatus();
}

// Lays the axes onto the dimensions in order (mesh.h, default assignment).
absl::StatusOr<std::vector<std::vector<MeshPart>>> DefaultParts(const Topology& topology,
                                                                const std::vector<MeshAxis>& axes) {
  std::vector<std::vector<MeshPart>> parts(axes.size());
  int64_t dim = 0;
  int64_t left = topology.rank() > 0 ? topology.dimension(0).size : 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    int64_t need = axes[a].size;
    while (need > 1) {
      while (left == 1 && dim + 1 < topology.rank()) left = topology.dimension(++dim).size;
      // ResolveSizes made the sizes multiply to the device count, so dimensions remain.
      PERFSIM_CHECK(left > 1) << "mesh axes outgrow the topology";
      const TopologyDimension& d = topology.dimension(dim);
      const int64_t take = need >= left ? left : need;
      if ((need >= left && need % left != 0) || (need < left && left % need != 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("mesh: axis '", axes[a].name, "' of size ", axes[a].size,
                         " does not split evenly onto the physical dimensions: expected the ", need,
                         " devices it still needs to divide or be divisible by the ", left,
                         " positions left of dimension ", d.name));
      }
      MeshPart part;
      part.dimension = dim;
      part.size = take;
      parts[a].push_back(part);
      need /= take;
      left /= take;
    }
  }
  return parts;
}

}  // namespace

absl::StatusOr<std::vector<MeshAxis>> ParseMeshAxes(absl::string_view text) {
  std::vector<MeshAxis> axes;
  absl::flat_hash_set<std::string> names;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    MeshAxis axis;
    const bool ok_name = kv.size() == 2 && IsAxisName(kv[0]);
    bool ok_size = false;
    if (ok_name) {
      if (kv[1] == "*") {
        ok_size = true;
      } else {
        ok_size = absl::SimpleAtoi(kv[1], &axis.size) && axis.size >= 1;
      }
    }
    if (!ok_name || !ok_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mesh axes: expected NAME=SIZE or NAME=* joined by ',' (e.g. data=*,ep=64,tp=4); got '",
          item, "' in '", text, "'"));
    }
    axis.name = std::string(kv[0]);
    if (!names.insert(axis.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axes: expected distinct names; got '", axis.name, "' twice"));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

absl::StatusOr<Mesh> Mesh::Create(const Topology& topology, std::vector<MeshAxis> axes) {
  Mesh mesh(topology);
  mesh.axes_ = std::move(axes);
  PERFSIM_RETURN_IF_ERROR(ResolveSizes(topology, mesh.axes_));
  PERFSIM_ASSIGN_OR_RETURN(mesh.parts_, DefaultParts(topology, mesh.axes_));
  PERFSIM_RETURN_IF_ERROR(mesh.Finish());
  return mesh;
}

absl::StatusOr<Mesh> Mesh::Create(const Topology& topology, std::vector<MeshAxis> axes,
                                  const std::vector<AxisAssignment>& assignment) {
  Mesh mesh(topology);
  mesh.axes_ = std::move(axes);
  PERFSIM_RETURN_IF_ERROR(ResolveSizes(topology, mesh.axes_));
  mesh.parts_.assign(mesh.axes_.size(), {});
  std::vector<bool> assigned(mesh.axes_.size(), false);
  for (const AxisAssignment& entry : assignment) {
    const int64_t a = mesh.FindAxis(entry.axis);
    if (a < 0 || assigned[a]) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh assignment: expected each mesh axis once; got '", entry.axis, "'",
                       a < 0 ? " which is not an axis" : " twice"));
    }
    assigned[a] = true;
    int64_t product = 1;
    for (const auto& [dim_name, size] : entry.parts) {
      const int64_t dim = topology.FindDimension(dim_name);
      if (dim < 0 || size < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("mesh assignment for '", entry.axis, "': expected a dimension of ",
                         topology.ToString(), " and a positive size; got ", dim_name, ":", size));
      }
      mesh.parts_[a].push_back(MeshPart{dim, size, 1});
      product *= size;
    }
    if (product != mesh.axes_[a].size) {
      return absl::InvalidArgumentError(absl::StrCat("mesh assignment for '", entry.axis,
                                                     "': expected parts multiplying to ",
                                                     mesh.axes_[a].size, "; got ", product));
    }
  }
  for (size_t a = 0; a < mesh.axes_.size(); ++a) {
    if (!assigned[a] && mesh.axes_[a].size != 1) {
      return absl::InvalidArgumentError(absl::StrCat("mesh assignment: expected parts for axis '",
                                                     mesh.axes_[a].name, "'; got none"));
    }
  }
  PERFSIM_RETURN_IF_ERROR(mesh.Finish());
  return mesh;
}

absl::Status Mesh::Finish() {
  // Within a dimension, parts in axis order then list order go from major to minor.
  for (int64_t dim = 0; dim < topology_.rank(); ++dim) {
    int64_t stride = 1;
    for (int64_t a = static_cast<int64_t>(parts_.size()) - 1; a >= 0; --a) {
      for (auto it = parts_[a].rbegin(); it != parts_[a].rend(); ++it) {
        if (it->dimension != dim) continue;
        it->stride = stride;
        stride *= it->size;
      }
    }
    if (stride != topology_.dimension(dim).size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mesh: expected the parts of dimension ", topology_.dimension(dim).name,
          " to multiply to its size ", topology_.dimension(dim).size, "; got ", stride));
    }
  }
  return absl::OkStatus();
}

int64_t Mesh::FindAxis(absl::string_view name) const {
  for (size_t a = 0; a < axes_.size(); ++a) {
    if (axes_[a].name == name) return static_cast<int64_t>(a);
  }
  return -1;
}

int64_t Mesh::DeviceAt(absl::Span<const int64_t> mesh_coordinates) const {
  std::vector<int64_t> physical(topology_.rank(), 0);
  for (size_t a = 0; a < axes_.size(); ++a) {
    int64_t value = mesh_coordinates[a];
    // Minor parts take the low digits.
    for (auto it = parts_[a].rbegin(); it != parts_[a].rend(); ++it) {
      physical[it->dimension] += (value % it->size) * it->stride;
      value /= it->size;
    }
  }
  return topology_.DeviceId(physical);
}

std::vector<int64_t> Mesh::MeshCoordinates(int64_t device) const {
  const std::vector<int64_t> physical = topology_.Coordinates(device);
  std::vector<int64_t> coordinates(axes_.size(), 0);
  for (size_t a = 0; a < axes_.size(); ++a) {
    int64_t value = 0;
    for (const MeshPart& part : parts_[a]) {
      value = value * part.size + (physical[part.dimension] / part.stride) % part.size;
    }
    coordinates[a] = value;
  }
  return coordinates;
}

std::vector<int64_t> Mesh::GroupOf(absl::Span<const int64_t> axes, int64_t device) const {
  std::vector<int64_t> coordinates = MeshCoordinates(device);
  int64_t count = 1;
  for (int64_t a : axes) count *= axes_[a].size;
  std::vector<int64_t> group;
  group.reserve(count);
  for (int64_t index = 0; index < count; ++index) {
    int64_t rest = index;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      coordinates[*it] = rest % axes_[*it].size;
      rest /= axes_[*it].size;
    }
    group.push_back(DeviceAt(coordinates));
  }
  return group;
}

std::vector<std::vector<int64_t>> Mesh::Groups(absl::Span<const int64_t> axes) const {
  std::vector<std::vector<int64_t>> groups;
  for (int64_t device = 0; device < topology_.num_devices(); ++device) {
    const std::vector<int64_t> coordinates = MeshCoordinates(device);
    bool leader = true;
    for (int64_t a : axes) leader = leader && coordinates[a] == 0;
    if (leader) groups.push_back(GroupOf(axes, device));
  }
  return groups;
}

GroupLayout Mesh::AxisLayout(absl::Span<const int64_t> axes) const {
  absl::StatusOr<GroupLayout> layout = AnalyzeGroup(topology_, GroupOf(axes, 0));
  PERFSIM_CHECK(layout.ok()) << layout.status().message();
  return *std::move(layout);
}

std::string Mesh::ToString() const {
  std::vector<std::string> out;
  for (size_t a = 0; a < axes_.size(); ++a) {
    std::vector<std::string> parts;
    for (const MeshPart& p : parts_[a]) {
      std::string part = absl::StrCat(topology_.dimension(p.dimension).name, ":", p.size);
      if (p.stride > 1) absl::StrAppend(&part, "/", p.stride);
      parts.push_back(std::move(part));
    }
    out.push_back(
        absl::StrCat(axes_[a].name, "=", axes_[a].size, " [", absl::StrJoin(parts, " "), "]"));
  }
  return absl::StrJoin(out, " ");
}

}  // namespace perfsim
