#include "sim/comm/group.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

// How sorted distinct positions `c` (at least two) lie along a torus dimension; nullopt-like
// `regular = false` when they are not evenly spaced.
struct TorusFit {
  bool regular = false;
  int64_t stride = 1;
  bool closed_ring = false;
};

TorusFit FitTorusPositions(const std::vector<int64_t>& c, const TopologyDimension& dim) {
  const int64_t k = static_cast<int64_t>(c.size());
  std::vector<int64_t> gaps;
  for (int64_t i = 0; i + 1 < k; ++i) gaps.push_back(c[i + 1] - c[i]);
  const int64_t wrap_gap = c[0] + dim.size - c[k - 1];
  // The stride is the smallest gap; a regular group has at most one larger gap (where the
  // line ends), and on an open dimension that gap must be the wrap gap.
  const int64_t stride = *std::min_element(gaps.begin(), gaps.end());
  int64_t larger = 0;
  for (int64_t g : gaps) {
    if (g != stride) ++larger;
  }
  TorusFit fit;
  fit.stride = stride;
  if (larger == 0) {
    fit.regular = true;
    fit.closed_ring = dim.wraparound && wrap_gap == stride;
    return fit;
  }
  // A line that crosses the wrap link: exactly one interior gap is larger and the wrap gap is
  // the stride (e.g. {0, 1, 6, 7} on a ring of 8).
  fit.regular = dim.wraparound && larger == 1 && wrap_gap == stride;
  return fit;
}

}  // namespace

absl::StatusOr<GroupLayout> AnalyzeGroup(const Topology& topology,
                                         absl::Span<const int64_t> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("device group: expected at least one device; got none");
  }
  const int64_t rank = topology.rank();
  for (int64_t d : devices) {
    if (d < 0 || d >= topology.num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device group: expected device ids in [0, ", topology.num_devices(), ") of ",
                       topology.chip_name(), " ", topology.slice_shape(), "; got ", d));
    }
  }
  std::vector<int64_t> p(devices.begin(), devices.end());
  std::sort(p.begin(), p.end());
  const auto repeated = std::adjacent_find(p.begin(), p.end());
  if (repeated != p.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device group: expected distinct devices; got ", *repeated, " twice"));
  }

  GroupLayout layout;
  layout.size = static_cast<int64_t>(devices.size());
  std::vector<char> present;
  int64_t product = 1;
  bool evenly_spaced = true;
  for (int64_t i = 0; i < rank; ++i) {
    // The distinct positions of the group along dimension i, ascending.
    const TopologyDimension& dim = topology.dimension(i);
    present.assign(dim.size, 0);
    for (int64_t d : devices) present[topology.Position(d, i)] = 1;
    p.clear();
    for (int64_t position = 0; position < dim.size; ++position) {
      if (present[position]) p.push_back(position);
    }
    const int64_t k = static_cast<int64_t>(p.size());
    product *= k;
    if (k == 1) continue;
    DimensionSpan span;
    span.dimension = i;
    span.size = k;
    if (dim.kind == LinkKind::kTorus) {
      const TorusFit fit = FitTorusPositions(p, dim);
      evenly_spaced = evenly_spaced && fit.regular;
      span.stride = fit.stride;
      span.closed_ring = fit.closed_ring;
    }
    layout.spans.push_back(span);
  }
  // Distinct devices inside the product of their positions fill it exactly when the counts
  // agree.
  layout.regular = evenly_spaced && product == layout.size;
  if (!layout.regular) layout.spans.clear();
  return layout;
}

}  // namespace perfsim
