#include "absl/strings/string_view.h"
#include "sim/ir/attributes.h"

#include <numeric>

namespace perfsim {

absl::string_view ComparisonDirectionName(ComparisonDirection direction) {
  switch (direction) {
    case ComparisonDirection::kEq:
      return "EQ";
    case ComparisonDirection::kNe:
      return "NE";
    case ComparisonDirection::kGe:
      return "GE";
    case ComparisonDirection::kGt:
      return "GT";
    case ComparisonDirection::kLe:
      return "LE";
    case ComparisonDirection::kLt:
      return "LT";
  }
  return "?";
}

std::optional<ComparisonDirection> ParseComparisonDirection(absl::string_view text) {
  for (ComparisonDirection d : {ComparisonDirection::kEq, ComparisonDirection::kNe,
                                ComparisonDirection::kGe, ComparisonDirection::kGt,
                                ComparisonDirection::kLe, ComparisonDirection::kLt}) {
    if (ComparisonDirectionName(d) == text) return d;
  }
  return std::nullopt;
}

absl::string_view FusionKindName(FusionKind kind) {
  switch (kind) {
    case FusionKind::kLoop:
      return "kLoop";
    case FusionKind::kInput:
      return "kInput";
    case FusionKind::kOutput:
      return "kOutput";
    case FusionKind::kCustom:
      return "kCustom";
  }
  return "?";
}

std::optional<FusionKind> ParseFusionKind(absl::string_view text) {
  for (FusionKind k : {FusionKind::kLoop, FusionKind::kInput, FusionKind::kOutput,
                       FusionKind::kCustom}) {
    if (FusionKindName(k) == text) return k;
  }
  return std::nullopt;
}

std::vector<std::vector<int64_t>> ExpandIotaReplicaGroups(const ReplicaGroups::Iota& iota) {
  const std::vector<int64_t>& dims = iota.reshape_dimensions;
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> perm = iota.transpose_permutation;
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.begin(), perm.end(), 0);
  }
  // Row-major strides of the reshaped iota array.
  std::vector<int64_t> strides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  // Walk the transposed array in row-major order; its dimension j is source dimension perm[j].
  std::vector<int64_t> flat;
  flat.reserve(total);
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t value = 0;
    for (int64_t j = 0; j < rank; ++j) value += index[j] * strides[perm[j]];
    flat.push_back(value);
    for (int64_t j = rank - 1; j >= 0; --j) {
      if (++index[j] < dims[perm[j]]) break;
      index[j] = 0;
    }
  }
  std::vector<std::vector<int64_t>> groups(iota.num_groups);
  for (int64_t g = 0; g < iota.num_groups; ++g) {
    for (int64_t s = 0; s < iota.group_size; ++s) {
      const int64_t n = g * iota.group_size + s;
      if (n < static_cast<int64_t>(flat.size())) groups[g].push_back(flat[n]);
    }
  }
  return groups;
}

}  // namespace perfsim
