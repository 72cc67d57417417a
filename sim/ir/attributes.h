// Op-specific attributes of an Instruction, one plain struct for all opcodes.
//
// Each field is used by the opcodes its comment names; a field an opcode does not use stays
// at its default and is not printed. Attributes perfsim does not model (metadata, sharding,
// frontend_attributes, operand_precision, ...) are kept as text so the printer writes them back.
//
// Example: `dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}` sets
// `dot_dimension_numbers = {.lhs_contracting_dimensions = {1}, .rhs_contracting_dimensions = {0}}`.
#ifndef PERFSIM_SIM_IR_ATTRIBUTES_H_
#define PERFSIM_SIM_IR_ATTRIBUTES_H_

#include "absl/strings/string_view.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/ir/literal.h"

namespace perfsim {

class Annotation;  // proto/annotation.proto

enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
// "EQ", "NE", ...
absl::string_view ComparisonDirectionName(ComparisonDirection direction);
std::optional<ComparisonDirection> ParseComparisonDirection(absl::string_view text);

enum class FusionKind { kLoop, kInput, kOutput, kCustom };
// "kLoop", ...
absl::string_view FusionKindName(FusionKind kind);
std::optional<FusionKind> ParseFusionKind(absl::string_view text);

// fft: fft_type=FFT (complex -> complex), IFFT (its inverse), RFFT (real -> half spectrum),
// IRFFT (half spectrum -> real). Spelled as in XLA's FftType enum.
enum class FftType { kFft, kIfft, kRfft, kIrfft };
absl::string_view FftTypeName(FftType type);
std::optional<FftType> ParseFftType(absl::string_view text);

// triangular-solve: transpose_a=NO_TRANSPOSE | TRANSPOSE | ADJOINT (op(a) = a, a^T, conj(a)^T).
enum class TriangularTranspose { kNoTranspose, kTranspose, kAdjoint };
absl::string_view TriangularTransposeName(TriangularTranspose transpose);
std::optional<TriangularTranspose> ParseTriangularTranspose(absl::string_view text);

// dot and ragged-dot. Output dimension order: batch, lhs free, rhs free.
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

// ragged-dot: the three modes are told apart by where lhs_ragged_dimensions points —
// a free lhs dimension (non-contracting, the MoE case: [M,K] x [G,K,N] -> [M,N] with
// rhs_group_dimensions = {0}), a contracting one ([M,K] x [K,N] -> [G,M,N]) or a batch one.
struct RaggedDotDimensionNumbers {
  DotDimensionNumbers dot;
  std::vector<int64_t> lhs_ragged_dimensions;
  std::vector<int64_t> rhs_group_dimensions;
  bool operator==(const RaggedDotDimensionNumbers&) const = default;
};

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

// slice={[start:limit:stride], ...}
struct SliceDimension {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

// pad: padding=low_high_interior x ...
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

// reduce-window, select-and-scatter, convolution: window={size=.. stride=.. pad=.. ...}
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;  // rhs_dilate
  int64_t base_dilation = 1;    // lhs_dilate
  bool window_reversal = false;
  bool operator==(const WindowDimension&) const = default;
};

// replica_groups: explicit `{{0,1},{2,3}}`, empty `{}` (one group of all devices), the iota
// form `[G,S]<=[d0,d1]T(perm)`, or the mesh-axes form `mesh['a'=2,'b'=2] {'a'}` XLA prints
// after SPMD partitioning. `groups` always holds the expanded groups; `iota` / `mesh_axes`
// remember the written form so the printer gives it back.
struct ReplicaGroups {
  struct Iota {
    int64_t num_groups = 0;
    int64_t group_size = 0;
    std::vector<int64_t> reshape_dimensions;
    std::vector<int64_t> transpose_permutation;  // empty when no T(...) was written
    bool operator==(const Iota&) const = default;
  };
  // mesh['a'=2,'b'=4] {'b','a':(1)2}: the mesh's axes (iota device order) and the axes each
  // group spans, in the order written. `pre_size`/`size` are set for a sub-axis 'a':(pre)size
  // and 0 for a whole axis. Expanded by ExpandMeshAxesReplicaGroups (collective_groups.h).
  struct MeshAxes {
    struct Axis {
      std::string name;
      int64_t size = 0;
      bool operator==(const Axis&) const = default;
    };
    struct AxisRef {
      int64_t axis = 0;  // index into `axes`
      int64_t pre_size = 0;
      int64_t size = 0;
      bool operator==(const AxisRef&) const = default;
    };
    std::vector<Axis> axes;
    std::vector<AxisRef> group_axes;
    bool operator==(const MeshAxes&) const = default;
  };
  std::vector<std::vector<int64_t>> groups;
  std::optional<Iota> iota;
  std::optional<MeshAxes> mesh_axes;
  bool operator==(const ReplicaGroups&) const = default;
};

// Expands an iota replica-group list: iota(prod(reshape)) reshaped to `reshape_dimensions`,
// transposed by `transpose_permutation`, then cut into num_groups rows of group_size.
// Example: [2,4]<=[4,2]T(1,0) gives {{0,2,4,6},{1,3,5,7}}. The caller checks that
// num_groups * group_size == prod(reshape_dimensions).
std::vector<std::vector<int64_t>> ExpandIotaReplicaGroups(const ReplicaGroups::Iota& iota);

struct InstructionAttributes {
  // broadcast, transpose, reduce, reverse, concatenate, sort, all-gather, reduce-scatter,
  // all-to-all (split dim), topk has none.
  std::optional<std::vector<int64_t>> dimensions;

  std::optional<DotDimensionNumbers> dot_dimension_numbers;               // dot
  std::optional<RaggedDotDimensionNumbers> ragged_dot_dimension_numbers;  // ragged-dot
  std::optional<GatherDimensionNumbers> gather_dimension_numbers;         // gather
  std::vector<int64_t> gather_slice_sizes;                                // gather
  std::optional<ScatterDimensionNumbers> scatter_dimension_numbers;       // scatter
  std::optional<bool> indices_are_sorted;                                 // gather, scatter
  std::optional<bool> unique_indices;                                     // scatter
  std::optional<std::vector<int64_t>> dynamic_slice_sizes;                // dynamic-slice

  std::optional<std::vector<SliceDimension>> slice;      // slice
  std::optional<std::vector<PaddingDimension>> padding;  // pad
  std::optional<std::vector<WindowDimension>> window;    // reduce-window, select-and-scatter, convolution
  std::string dim_labels;                                // convolution, e.g. "b01f_01io->b01f"
  int64_t feature_group_count = 1;                       // convolution
  int64_t batch_group_count = 1;                         // convolution

  std::optional<ComparisonDirection> comparison_direction;  // compare
  std::string comparison_type;                              // compare: TOTALORDER, FLOAT, ...

  std::optional<int64_t> tuple_index;       // get-tuple-element: index=
  std::optional<int64_t> iota_dimension;    // iota
  std::optional<int64_t> parameter_number;  // parameter(N)
  std::optional<Literal> literal;           // constant
  std::optional<int64_t> exponent_bits;     // reduce-precision
  std::optional<int64_t> mantissa_bits;     // reduce-precision

  bool is_stable = false;       // sort
  std::optional<int64_t> k;     // topk
  bool largest = true;          // topk

  std::optional<ReplicaGroups> replica_groups;                                 // collectives
  std::optional<std::vector<std::pair<int64_t, int64_t>>> source_target_pairs;  // collective-permute
  std::optional<int64_t> channel_id;
  bool use_global_device_ids = false;
  bool constrain_layout = false;

  // fft: fft_type=RFFT, fft_length={64,32} (the transformed minor dimensions, real lengths).
  std::optional<FftType> fft_type;
  std::optional<std::vector<int64_t>> fft_length;
  // triangular-solve (all four) and cholesky (lower): as written; XLA's defaults when absent
  // are false and NO_TRANSPOSE.
  std::optional<bool> left_side;
  std::optional<bool> lower;
  std::optional<bool> unit_diagonal;
  std::optional<TriangularTranspose> transpose_a;
  // batch-norm-training, -inference, -grad: epsilon=0.001, feature_index=1.
  std::optional<float> epsilon;
  std::optional<int64_t> feature_index;
  // scan (with `dimensions` and to_apply): num_carries=1, is_reverse=false, is_associative=true.
  std::optional<int64_t> num_carries;
  std::optional<bool> is_reverse;
  std::optional<bool> is_associative;

  std::string custom_call_target;         // custom-call
  std::optional<FusionKind> fusion_kind;  // fusion

  // Kept as written (including braces or quotes), e.g. `{"known_trip_count":{"n":"8"}}` or
  // `"tm=512"`. Cost and fit read kernel tilings from here.
  std::optional<std::string> backend_config;
  // Kept as written, including the outer braces.
  std::string metadata;
  std::string sharding;
  // Without the perfsim_annotation entry, which is parsed into `annotation` (the printer puts
  // it back: sim/ir/annotation.h).
  std::string frontend_attributes;
  // What the lowering knows about the instruction (proto/annotation.proto); null when nothing.
  // Shared and immutable: copies of the attributes share it; Instruction::set_annotation
  // replaces it.
  std::shared_ptr<const Annotation> annotation;
  // Every other `key=value` attribute, value kept verbatim in text order. perfsim does not model
  // these (operand_precision, algorithm, api_version, output_to_operand_aliasing, ...).
  std::vector<std::pair<std::string, std::string>> other;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_ATTRIBUTES_H_
