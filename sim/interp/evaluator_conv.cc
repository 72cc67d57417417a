// convolution with XLA's general dimension labels, windows (stride, padding, lhs/rhs
// dilation, reversal), feature_group_count and batch_group_count. A direct loop: every
// output element sums over its window and the input features of its group, in the
// accumulation type of the result (dot_util.h). Meant for validation-sized modules.
//
//   out[b, o, s] = sum_{i < C/G} sum_{k in window}
//                    lhs[bg*(N/B) + b, g*(C/G) + i, (s*stride + k*rhs_dilate - pad_low) /
//                    lhs_dilate]
//                    * rhs[reversed ? size-1-k : k, i, o]
// with g = o / (O/G) the feature group and bg = o / (O/B) the batch group; window positions
// that fall in padding or between dilated input elements contribute nothing.
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/array_util.h"
#include "sim/interp/dot_util.h"
#include "sim/interp/evaluator.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

struct Labels {
  int64_t batch = -1;    // lhs/out: b; rhs: i (input feature)
  int64_t feature = -1;  // lhs/out: f; rhs: o (output feature)
  std::vector<int64_t> spatial;
};

// Parses one side of dim_labels ("b01f", "01io"): `first` and `second` are the letters of the
// two non-spatial dimensions.
absl::StatusOr<Labels> ParseLabels(absl::string_view text, char first, char second, int64_t rank) {
  Labels labels;
  labels.spatial.assign(rank - 2, -1);
  if (static_cast<int64_t>(text.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected dim_labels of rank ", rank, "; got '", text, "'"));
  }
  for (int64_t d = 0; d < rank; ++d) {
    const char c = text[d];
    if (c == first) {
      labels.batch = d;
    } else if (c == second) {
      labels.feature = d;
    } else if (c >= '0' && c <= '9' && c - '0' < rank - 2) {
      labels.spatial[c - '0'] = d;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("expected dim_labels letters ", std::string(1, first), ", ",
                       std::string(1, second), " and digits; got '", text, "'"));
    }
  }
  for (int64_t s : labels.spatial) {
    if (s < 0 || labels.batch < 0 || labels.feature < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected every dimension labelled; got '", text, "'"));
    }
  }
  return labels;
}

template <typename C>
absl::StatusOr<Value> Convolve(DeviceEvaluator& ev, const Instruction& instruction,
                               const Literal& lhs, const Literal& rhs) {
  const InstructionAttributes& attrs = instruction.attributes();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const Shape& os = instruction.shape();
  const int64_t rank = ls.rank();
  if (rank < 2 || rs.rank() != rank || os.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected lhs, rhs and result of one rank >= 2; got ", ls.ToString(false),
                     ", ", rs.ToString(false), ", ", os.ToString(false)));
  }
  std::string dim_labels = attrs.dim_labels;
  if (dim_labels.empty()) {
    // XLA's default: bf01_oi01->bf01.
    std::string spatial;
    for (int64_t d = 0; d < rank - 2; ++d) spatial.push_back(static_cast<char>('0' + d));
    dim_labels = absl::StrCat("bf", spatial, "_oi", spatial, "->bf", spatial);
  }
  const size_t underscore = dim_labels.find('_');
  const size_t arrow = dim_labels.find("->");
  if (underscore == std::string::npos || arrow == std::string::npos || arrow < underscore) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected dim_labels like b01f_01io->b01f; got '", dim_labels, "'"));
  }
  const absl::string_view all(dim_labels);
  PERFSIM_ASSIGN_OR_RETURN(Labels in, ParseLabels(all.substr(0, underscore), 'b', 'f', rank));
  PERFSIM_ASSIGN_OR_RETURN(
      Labels kernel,
      ParseLabels(all.substr(underscore + 1, arrow - underscore - 1), 'i', 'o', rank));
  PERFSIM_ASSIGN_OR_RETURN(Labels out, ParseLabels(all.substr(arrow + 2), 'b', 'f', rank));
  const int64_t spatial = rank - 2;
  std::vector<WindowDimension> window = attrs.window.value_or(std::vector<WindowDimension>{});
  if (window.empty()) window.resize(spatial);
  if (static_cast<int64_t>(window.size()) != spatial) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a window of ", spatial, " dimensions; got ", window.size()));
  }
  const int64_t n = ls.dimensions(in.batch);
  const int64_t c = ls.dimensions(in.feature);
  const int64_t ci = rs.dimensions(kernel.batch);
  const int64_t o_total = rs.dimensions(kernel.feature);
  const int64_t groups = attrs.feature_group_count;
  const int64_t batch_groups = attrs.batch_group_count;
  if (groups < 1 || batch_groups < 1 || c != ci * groups || o_total % groups != 0 ||
      o_total % batch_groups != 0 || n % batch_groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected input features ", c, " = kernel input features ", ci, " * feature_group_count ",
        groups, ", and output features ", o_total, " divisible by both group counts"));
  }
  std::vector<int64_t> kernel_size(spatial);
  for (int64_t k = 0; k < spatial; ++k) {
    kernel_size[k] = rs.dimensions(kernel.spatial[k]);
    const WindowDimension& w = window[k];
    if (w.size != kernel_size[k] || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1) {
      return absl::InvalidArgumentError(absl::StrCat("expected window size ", kernel_size[k],
                                                     " (the kernel's) with positive strides and "
                                                     "dilations in spatial dimension ",
                                                     k, "; got size ", w.size));
    }
  }
  std::vector<C> a, b;
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs, &a));
  PERFSIM_RETURN_IF_ERROR(ToAccumulator(rhs, &b));
  const std::vector<int64_t> ls_strides = RowMajorStrides(ls.dimensions());
  const std::vector<int64_t> rs_strides = RowMajorStrides(rs.dimensions());
  const int64_t out_features_per_group = o_total / groups;
  const int64_t out_features_per_batch_group = o_total / batch_groups;
  const int64_t batch_per_group = n / batch_groups;
  std::vector<C> result(static_cast<size_t>(os.ElementCount()), C(0));
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> kp(spatial, 0);
  const bool empty_kernel = ElementCountOf(kernel_size) == 0;
  for (int64_t linear = 0; linear < os.ElementCount(); ++linear) {
    const int64_t bo = index[out.batch];
    const int64_t o = index[out.feature];
    const int64_t g = o / out_features_per_group;
    const int64_t lhs_b = (o / out_features_per_batch_group) * batch_per_group + bo;
    C acc = C(0);
    for (int64_t i = 0; i < ci && !empty_kernel; ++i) {
      const int64_t lhs_base = lhs_b * ls_strides[in.batch] + (g * ci + i) * ls_strides[in.feature];
      const int64_t rhs_base = i * rs_strides[kernel.batch] + o * rs_strides[kernel.feature];
      std::fill(kp.begin(), kp.end(), 0);
      do {
        int64_t lhs_at = lhs_base;
        int64_t rhs_at = rhs_base;
        bool valid = true;
        for (int64_t k = 0; k < spatial && valid; ++k) {
          const WindowDimension& w = window[k];
          const int64_t dilated =
              index[out.spatial[k]] * w.stride + kp[k] * w.window_dilation - w.padding_low;
          if (dilated < 0 || dilated % w.base_dilation != 0) {
            valid = false;
            break;
          }
          const int64_t pos = dilated / w.base_dilation;
          if (pos >= ls.dimensions(in.spatial[k])) {
            valid = false;
            break;
          }
          lhs_at += pos * ls_strides[in.spatial[k]];
          const int64_t kk = w.window_reversal ? kernel_size[k] - 1 - kp[k] : kp[k];
          rhs_at += kk * rs_strides[kernel.spatial[k]];
        }
        if (valid) {
          if constexpr (std::is_integral_v<C>) {
            // Integers wrap (unsigned arithmetic) rather than overflow.
            acc = static_cast<C>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(a[lhs_at]) *
                                                                  static_cast<uint64_t>(b[rhs_at]));
          } else {
            acc += a[lhs_at] * b[rhs_at];
          }
        }
      } while (NextIndex(kernel_size, &kp));
    }
    result[linear] = acc;
    NextIndex(os.dimensions(), &index);
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer, ev.Allocate(os));
  PERFSIM_RETURN_IF_ERROR(StoreAccumulator(result, buffer.get()));
  return Value::Array(std::move(buffer));
}

}  // namespace

absl::StatusOr<Value> EvalConvolution(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands) {
  // A sparse convolution (sparsity_config, XLA's hlo_evaluator_sparsity_test) takes a tuple
  // (values, metadata) for its sparse operand; shape inference accepts it, the interpreter
  // does not expand it.
  if (!operands[0]->is_array() || !operands[1]->is_array()) {
    return absl::UnimplementedError(absl::StrCat(
        instruction.name(),
        ": expected array operands (a sparse convolution, sparsity_config with a tuple "
        "(values, metadata) operand, is not interpreted); got a tuple"));
  }
  absl::StatusOr<Value> result;
  PERFSIM_RETURN_IF_ERROR(DispatchAccumulator(instruction.shape().element_type(), [&](auto zero) {
    using C = decltype(zero);
    result = Convolve<C>(ev, instruction, operands[0]->array(), operands[1]->array());
    return absl::OkStatus();
  }));
  return result;
}

}  // namespace interp
}  // namespace perfsim
