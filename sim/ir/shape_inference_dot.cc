// Shape inference for the matmul family: dot (dot_general dimension numbers), ragged-dot in
// its three ragged modes, and convolution (dim_labels, window, feature and batch groups).
//
// The result element type is the declared one (XLA's preferred_element_type: bf16 x bf16 ->
// f32, f8 x f8 -> bf16 are all legal), so only dimensions are derived here.
//
// The contracting-size check is the one that catches an einsum contracting the wrong weight
// axis (known_bugs.md #1): `td,edm->tem` on weights stored [E, F, D] fails with
//   "dot.3: expected lhs contracting dimension 1 (size 7168) to equal rhs contracting
//    dimension 1 (size 2048); got 7168 vs 2048".
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayOperand;
using infer_internal::CheckDimensionList;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::ShapeText;

namespace {

// The result element type: the declared one when the declaration is an array.
PrimitiveType ResultType(const Instruction& instruction, const Shape& lhs) {
  return instruction.shape().IsArray() ? instruction.shape().element_type() : lhs.element_type();
}

bool Contains(absl::Span<const int64_t> list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// Checks dot_general dimension numbers for lhs x rhs: equal counts, valid and disjoint
// dimensions, and equal sizes for each batch and contracting pair.
absl::Status CheckDotDimensions(const Instruction& instruction, const Shape& lhs, const Shape& rhs,
                                const DotDimensionNumbers& dnums) {
  const auto& lb = dnums.lhs_batch_dimensions;
  const auto& rb = dnums.rhs_batch_dimensions;
  const auto& lc = dnums.lhs_contracting_dimensions;
  const auto& rc = dnums.rhs_contracting_dimensions;
  if (lb.size() != rb.size()) {
    return InferError(instruction,
                      absl::StrCat("lhs batch dimensions ", ListText(lb),
                                   " and rhs batch dimensions ", ListText(rb), " of equal count"),
                      absl::StrCat(lb.size(), " vs ", rb.size()));
  }
  if (lc.size() != rc.size()) {
    return InferError(
        instruction,
        absl::StrCat("lhs contracting dimensions ", ListText(lc),
                     " and rhs contracting dimensions ", ListText(rc), " of equal count"),
        absl::StrCat(lc.size(), " vs ", rc.size()));
  }
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, lb, lhs.rank(), "lhs batch dimensions"));
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, rb, rhs.rank(), "rhs batch dimensions"));
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, lc, lhs.rank(), "lhs contracting dimensions"));
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, rc, rhs.rank(), "rhs contracting dimensions"));
  for (int64_t d : lb) {
    if (Contains(lc, d)) {
      return InferError(instruction, "disjoint lhs batch and contracting dimensions",
                        absl::StrCat("dimension ", d, " in both"));
    }
  }
  for (int64_t d : rb) {
    if (Contains(rc, d)) {
      return InferError(instruction, "disjoint rhs batch and contracting dimensions",
                        absl::StrCat("dimension ", d, " in both"));
    }
  }
  for (size_t i = 0; i < lb.size(); ++i) {
    const int64_t l = lhs.dimensions(lb[i]);
    const int64_t r = rhs.dimensions(rb[i]);
    if (l != r) {
      return InferError(instruction,
                        absl::StrCat("lhs batch dimension ", lb[i], " (size ", l,
                                     ") to equal rhs batch dimension ", rb[i], " (size ", r, ")"),
                        absl::StrCat(l, " vs ", r));
    }
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    const int64_t l = lhs.dimensions(lc[i]);
    const int64_t r = rhs.dimensions(rc[i]);
    if (l != r) {
      return InferError(
          instruction,
          absl::StrCat("lhs contracting dimension ", lc[i], " (size ", l,
                       ") to equal rhs contracting dimension ", rc[i], " (size ", r, ")"),
          absl::StrCat(l, " vs ", r));
    }
  }
  return absl::OkStatus();
}

// dot_general's result: batch dimensions (in lhs batch order), lhs free dimensions, then rhs
// free dimensions, each in increasing order. `rhs_excluded` (if >= 0) is left out of the rhs
// free dimensions.
Shape DotResult(PrimitiveType type, const Shape& lhs, const Shape& rhs,
                const DotDimensionNumbers& dnums, int64_t rhs_excluded) {
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  for (int64_t d : dnums.lhs_batch_dimensions) {
    dims.push_back(lhs.dimensions(d));
    dynamic.push_back(lhs.is_dynamic_dimension(d));
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (Contains(dnums.lhs_batch_dimensions, d) || Contains(dnums.lhs_contracting_dimensions, d)) {
      continue;
    }
    dims.push_back(lhs.dimensions(d));
    dynamic.push_back(lhs.is_dynamic_dimension(d));
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (d == rhs_excluded || Contains(dnums.rhs_batch_dimensions, d) ||
        Contains(dnums.rhs_contracting_dimensions, d)) {
      continue;
    }
    dims.push_back(rhs.dimensions(d));
    dynamic.push_back(rhs.is_dynamic_dimension(d));
  }
  Shape result = Shape::Array(type, dims);
  for (size_t i = 0; i < dynamic.size(); ++i) result.set_dynamic_dimension(i, dynamic[i]);
  return result;
}

}  // namespace

absl::StatusOr<Shape> InferDotShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(instruction, 0, "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(instruction, 1, "rhs"));
  // No dimension numbers at all is an outer product.
  const DotDimensionNumbers dnums =
      instruction.attributes().dot_dimension_numbers.value_or(DotDimensionNumbers{});
  PERFSIM_RETURN_IF_ERROR(CheckDotDimensions(instruction, *lhs, *rhs, dnums));
  return DotResult(ResultType(instruction, *lhs), *lhs, *rhs, dnums, /*rhs_excluded=*/-1);
}

// ragged-dot(lhs, rhs, group_sizes). The mode is where lhs_ragged_dimensions points:
//   non-contracting (MoE forward): [M,K] x [G,K,N] -> [M,N], one rhs group dimension of size G;
//   contracting (weight gradient): [M,K] x [K,N] with K ragged -> [G,M,N] (G prepended);
//   batch: the ragged dimension is a batch dimension; the result is dot_general's.
// group_sizes is an integer array [G], or [batch.., lhs free dims before the ragged one.., G].
absl::StatusOr<Shape> InferRaggedDotShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(instruction, 0, "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(instruction, 1, "rhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* group_sizes, ArrayOperand(instruction, 2, "group_sizes"));
  const std::optional<RaggedDotDimensionNumbers>& maybe_rdnums =
      instruction.attributes().ragged_dot_dimension_numbers;
  if (!maybe_rdnums.has_value()) {
    return InferError(instruction, "ragged-dot dimension numbers", "none");
  }
  const RaggedDotDimensionNumbers& rdnums = *maybe_rdnums;
  const DotDimensionNumbers& dnums = rdnums.dot;
  if (rdnums.lhs_ragged_dimensions.size() != 1) {
    return InferError(instruction, "exactly one lhs ragged dimension",
                      ListText(rdnums.lhs_ragged_dimensions));
  }
  const int64_t ragged = rdnums.lhs_ragged_dimensions[0];
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, rdnums.lhs_ragged_dimensions, lhs->rank(),
                                             "lhs ragged dimensions"));
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, rdnums.rhs_group_dimensions, rhs->rank(),
                                             "rhs group dimensions"));
  const bool contracting_mode = Contains(dnums.lhs_contracting_dimensions, ragged);
  const bool batch_mode = Contains(dnums.lhs_batch_dimensions, ragged);
  const bool non_contracting_mode = !contracting_mode && !batch_mode;
  int64_t group_dim = -1;
  if (non_contracting_mode) {
    if (rdnums.rhs_group_dimensions.size() != 1) {
      return InferError(
          instruction, "exactly one rhs group dimension for a ragged non-contracting lhs dimension",
          ListText(rdnums.rhs_group_dimensions));
    }
    group_dim = rdnums.rhs_group_dimensions[0];
    if (Contains(dnums.rhs_batch_dimensions, group_dim) ||
        Contains(dnums.rhs_contracting_dimensions, group_dim)) {
      return InferError(instruction, "an rhs group dimension that is neither batch nor contracting",
                        absl::StrCat("dimension ", group_dim));
    }
  } else if (!rdnums.rhs_group_dimensions.empty()) {
    return InferError(instruction,
                      absl::StrCat("no rhs group dimensions when the ragged dimension is a ",
                                   contracting_mode ? "contracting" : "batch", " dimension"),
                      ListText(rdnums.rhs_group_dimensions));
  }
  PERFSIM_RETURN_IF_ERROR(CheckDotDimensions(instruction, *lhs, *rhs, dnums));

  // group_sizes: integers, [G] or [batch.., (free dims before the ragged dim..), G].
  if (!IsInteger(group_sizes->element_type()) || group_sizes->rank() < 1) {
    return InferError(instruction, "integer group_sizes of rank >= 1", ShapeText(*group_sizes));
  }
  const int64_t groups = group_sizes->dimensions().back();
  if (group_sizes->rank() > 1) {
    std::vector<int64_t> batch_prefix;
    for (int64_t d : dnums.lhs_batch_dimensions) batch_prefix.push_back(lhs->dimensions(d));
    std::vector<int64_t> full_prefix = batch_prefix;
    for (int64_t d = 0; d < ragged; ++d) {
      if (!Contains(dnums.lhs_batch_dimensions, d) &&
          !Contains(dnums.lhs_contracting_dimensions, d)) {
        full_prefix.push_back(lhs->dimensions(d));
      }
    }
    const std::vector<int64_t> leading(group_sizes->dimensions().begin(),
                                       group_sizes->dimensions().end() - 1);
    if (leading != batch_prefix && leading != full_prefix) {
      return InferError(instruction,
                        absl::StrCat("group_sizes of shape [G] or with leading dimensions ",
                                     ListText(full_prefix),
                                     " (lhs batch and free dimensions "
                                     "before the ragged dimension)"),
                        ShapeText(*group_sizes));
    }
  }
  if (non_contracting_mode && rhs->dimensions(group_dim) != groups) {
    return InferError(instruction,
                      absl::StrCat("rhs group dimension ", group_dim, " (size ",
                                   rhs->dimensions(group_dim), ") to equal the group count ",
                                   groups, " of group_sizes ", ShapeText(*group_sizes)),
                      absl::StrCat(rhs->dimensions(group_dim), " vs ", groups));
  }
  Shape result = DotResult(ResultType(instruction, *lhs), *lhs, *rhs, dnums, group_dim);
  if (!contracting_mode) return result;
  std::vector<int64_t> dims = {groups};
  dims.insert(dims.end(), result.dimensions().begin(), result.dimensions().end());
  return Shape::Array(result.element_type(), dims);
}

// ----------------------------------------------------------------------------- convolution

namespace {

// One side of dim_labels: the positions of its two named dimensions and of each spatial one.
struct ConvolutionLabels {
  int64_t first = -1;   // b (lhs, output) or i (rhs)
  int64_t second = -1;  // f (lhs, output) or o (rhs)
  std::vector<int64_t> spatial;
};

absl::StatusOr<ConvolutionLabels> ParseLabels(const Instruction& instruction,
                                              absl::string_view text, char first, char second,
                                              absl::string_view side) {
  ConvolutionLabels labels;
  std::vector<int64_t> spatial_by_index(text.size(), -1);
  int64_t spatial_count = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    const int64_t p = static_cast<int64_t>(pos);
    if (c == first && labels.first < 0) {
      labels.first = p;
    } else if (c == second && labels.second < 0) {
      labels.second = p;
    } else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < text.size() &&
               spatial_by_index[c - '0'] < 0) {
      spatial_by_index[c - '0'] = p;
      ++spatial_count;
    } else {
      return InferError(instruction,
                        absl::StrCat(side, " dim_labels made of ", std::string(1, first),
                                     std::string(1, second), " and distinct spatial digits"),
                        std::string(text));
    }
  }
  for (int64_t i = 0; i < spatial_count; ++i) {
    if (spatial_by_index[i] < 0) {
      return InferError(instruction,
                        absl::StrCat(side, " spatial dimensions numbered 0..", spatial_count - 1),
                        std::string(text));
    }
    labels.spatial.push_back(spatial_by_index[i]);
  }
  if (labels.first < 0 || labels.second < 0) {
    return InferError(instruction,
                      absl::StrCat(side, " dim_labels naming ", std::string(1, first), " and ",
                                   std::string(1, second)),
                      std::string(text));
  }
  return labels;
}

// The text of `side={...}` inside a convolution's sparsity_config, or "" when it has none.
absl::string_view SparsityDescriptor(const Instruction& instruction, absl::string_view side) {
  for (const auto& [key, value] : instruction.attributes().other) {
    if (key != "sparsity_config") continue;
    const absl::string_view config(value);
    for (size_t at = config.find(side); at != absl::string_view::npos;
         at = config.find(side, at + 1)) {
      // `side` as a whole word followed by `={`.
      if (at > 0 &&
          (std::isalnum(static_cast<unsigned char>(config[at - 1])) || config[at - 1] == '_')) {
        continue;
      }
      size_t open = at + side.size();
      while (open < config.size() && config[open] == ' ') ++open;
      if (open >= config.size() || config[open] != '=') continue;
      open = config.find('{', open);
      const size_t close = config.find('}', open);
      if (open == absl::string_view::npos || close == absl::string_view::npos) return "";
      return config.substr(open + 1, close - open - 1);
    }
  }
  return "";
}

// The integers of `key=AxB` (two) or `key=A` (one) in a descriptor; empty when absent.
std::vector<int64_t> DescriptorField(absl::string_view descriptor, absl::string_view key) {
  std::vector<int64_t> values;
  const std::string pattern = absl::StrCat(key, "=");
  size_t at = descriptor.find(pattern);
  while (
      at != absl::string_view::npos && at > 0 &&
      (std::isalnum(static_cast<unsigned char>(descriptor[at - 1])) || descriptor[at - 1] == '_')) {
    at = descriptor.find(pattern, at + 1);
  }
  if (at == absl::string_view::npos) return values;
  size_t pos = at + pattern.size();
  while (true) {
    int64_t value = 0;
    const size_t start = pos;
    while (pos < descriptor.size() && std::isdigit(static_cast<unsigned char>(descriptor[pos])) &&
           value < (int64_t{1} << 40)) {
      value = value * 10 + (descriptor[pos] - '0');
      ++pos;
    }
    if (pos == start) return {};
    values.push_back(value);
    if (pos >= descriptor.size() || descriptor[pos] != 'x') return values;
    ++pos;
  }
}

// A convolution operand as the dense array it stands for. With XLA's structured sparsity
// (`sparsity_config={rhs={sparsity=1x4 dimension=0 stride=1}}`, hlo_evaluator_sparsity_test)
// the operand is a tuple (values, metadata): `values` keeps N of every M elements along
// `dimension`, so the dense operand is M/N times larger there (values f32[2,1] with 1x4 on
// dimension 0 stand for f32[8,1]); `metadata` holds the kept elements' integer positions.
absl::StatusOr<Shape> ConvolutionOperand(const Instruction& instruction, int64_t index,
                                         absl::string_view role) {
  const absl::string_view descriptor = SparsityDescriptor(instruction, role);
  if (descriptor.empty() || index >= instruction.operand_count() ||
      instruction.operand(index) == nullptr || !instruction.operand(index)->shape().IsTuple()) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* dense, ArrayOperand(instruction, index, role));
    return *dense;
  }
  const Shape& tuple = instruction.operand(index)->shape();
  const std::string sparse_role = absl::StrCat("sparse ", role);
  if (tuple.tuple_size() != 2 || !tuple.tuple_shapes(0).IsArray() ||
      !tuple.tuple_shapes(1).IsArray() || !IsInteger(tuple.tuple_shapes(1).element_type()) ||
      tuple.tuple_shapes(1).rank() != tuple.tuple_shapes(0).rank()) {
    return InferError(
        instruction,
        absl::StrCat(sparse_role, " to be a tuple (values, integer metadata of the same rank)"),
        ShapeText(tuple));
  }
  const Shape& values = tuple.tuple_shapes(0);
  const std::vector<int64_t> n_of_m = DescriptorField(descriptor, "sparsity");
  const std::vector<int64_t> dimension = DescriptorField(descriptor, "dimension");
  if (n_of_m.size() != 2 || n_of_m[0] < 1 || n_of_m[1] < n_of_m[0] || dimension.size() != 1 ||
      dimension[0] >= values.rank()) {
    return InferError(instruction,
                      absl::StrCat(sparse_role, " sparsity NxM (1 <= N <= M) on a dimension of ",
                                   ShapeText(values)),
                      std::string(descriptor));
  }
  const int64_t d = dimension[0];
  const int64_t stored = values.dimensions(d);
  if (stored % n_of_m[0] != 0) {
    return InferError(instruction,
                      absl::StrCat(sparse_role, " dimension ", d, " (size ", stored,
                                   ") divisible by N = ", n_of_m[0]),
                      std::string(descriptor));
  }
  std::vector<int64_t> dims = values.dimensions();
  if (!TryMul(stored / n_of_m[0], n_of_m[1], &dims[d])) {
    return InferError(instruction, absl::StrCat(sparse_role, " dense dimension ", d, " below 2^63"),
                      absl::StrCat(stored, " / ", n_of_m[0], " * ", n_of_m[1]));
  }
  return Shape::Array(values.element_type(), dims);
}

}  // namespace

absl::StatusOr<Shape> InferConvolutionShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape lhs_shape, ConvolutionOperand(instruction, 0, "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape rhs_shape, ConvolutionOperand(instruction, 1, "rhs"));
  const Shape* lhs = &lhs_shape;
  const Shape* rhs = &rhs_shape;
  const InstructionAttributes& attrs = instruction.attributes();
  const std::string& text = attrs.dim_labels;
  const size_t underscore = text.find('_');
  const size_t arrow = text.find("->");
  if (underscore == std::string::npos || arrow == std::string::npos || arrow < underscore) {
    return InferError(instruction, "dim_labels like b01f_01io->b01f", text.empty() ? "none" : text);
  }
  const absl::string_view all(text);
  PERFSIM_ASSIGN_OR_RETURN(ConvolutionLabels in,
                           ParseLabels(instruction, all.substr(0, underscore), 'b', 'f', "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(
      ConvolutionLabels kernel,
      ParseLabels(instruction, all.substr(underscore + 1, arrow - underscore - 1), 'i', 'o',
                  "rhs"));
  PERFSIM_ASSIGN_OR_RETURN(ConvolutionLabels out,
                           ParseLabels(instruction, all.substr(arrow + 2), 'b', 'f', "output"));
  const int64_t spatial = static_cast<int64_t>(in.spatial.size());
  if (static_cast<int64_t>(kernel.spatial.size()) != spatial ||
      static_cast<int64_t>(out.spatial.size()) != spatial) {
    return InferError(instruction, "the same number of spatial dimensions on every side", text);
  }
  if (lhs->rank() != spatial + 2 || rhs->rank() != spatial + 2) {
    return InferError(instruction,
                      absl::StrCat("lhs and rhs of rank ", spatial + 2, " for dim_labels ", text),
                      absl::StrCat(ShapeText(*lhs), " and ", ShapeText(*rhs)));
  }
  const std::vector<WindowDimension> window = attrs.window.value_or(std::vector<WindowDimension>{});
  if (static_cast<int64_t>(window.size()) != spatial) {
    return InferError(instruction, absl::StrCat("a window of ", spatial, " dimensions"),
                      absl::StrCat(window.size()));
  }
  const int64_t fgc = attrs.feature_group_count;
  const int64_t bgc = attrs.batch_group_count;
  if (fgc < 1 || bgc < 1 || (fgc > 1 && bgc > 1)) {
    return InferError(instruction,
                      "feature_group_count and batch_group_count >= 1, not both above 1",
                      absl::StrCat(fgc, " and ", bgc));
  }
  const int64_t input_batch = lhs->dimensions(in.first);
  const int64_t input_features = lhs->dimensions(in.second);
  const int64_t kernel_input_features = rhs->dimensions(kernel.first);
  const int64_t kernel_output_features = rhs->dimensions(kernel.second);
  if (input_features % fgc != 0 || input_features / fgc != kernel_input_features) {
    return InferError(
        instruction,
        absl::StrCat("lhs feature dimension (size ", input_features, ") / feature_group_count ",
                     fgc, " to equal rhs input feature dimension (size ", kernel_input_features,
                     ")"),
        absl::StrCat(input_features, "/", fgc, " vs ", kernel_input_features));
  }
  if (kernel_output_features % fgc != 0 || kernel_output_features % bgc != 0) {
    return InferError(
        instruction,
        absl::StrCat("rhs output features divisible by the group counts ", fgc, " and ", bgc),
        absl::StrCat(kernel_output_features));
  }
  if (input_batch % bgc != 0) {
    return InferError(instruction, absl::StrCat("lhs batch divisible by batch_group_count ", bgc),
                      absl::StrCat(input_batch));
  }
  std::vector<int64_t> dims(spatial + 2, 0);
  dims[out.first] = input_batch / bgc;
  dims[out.second] = kernel_output_features;
  for (int64_t i = 0; i < spatial; ++i) {
    const WindowDimension& w = window[i];
    PERFSIM_RETURN_IF_ERROR(infer_internal::CheckWindowDimension(
        instruction, i, w.size, w.stride, w.base_dilation, w.window_dilation));
    const int64_t kernel_size = rhs->dimensions(kernel.spatial[i]);
    if (w.size != kernel_size) {
      return InferError(
          instruction,
          absl::StrCat("window size of spatial dimension ", i,
                       " to equal the rhs spatial dimension (size ", kernel_size, ")"),
          absl::StrCat(w.size));
    }
    dims[out.spatial[i]] = infer_internal::WindowedOutputSize(
        lhs->dimensions(in.spatial[i]), w.size, w.stride, w.padding_low, w.padding_high,
        w.base_dilation, w.window_dilation);
  }
  return Shape::Array(ResultType(instruction, *lhs), dims);
}

}  // namespace perfsim
