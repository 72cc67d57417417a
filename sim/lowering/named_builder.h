// Builds IR with logical dimension names, so lowerings read like the math and checks can compare
// names, not only sizes.
//
//   NamedBuilder nb(module_builder, entry, &names);
//   Tensor x  = nb.Parameter(0, "x", F32, "TD", {T, D});
//   Tensor wi = nb.Parameter(2, "wi_0", F32, "EDF", {E, D, F});
//   Tensor h  = nb.Einsum("TD,EDF->TEF", x, wi);      // dot_general + transpose
//   Tensor a  = nb.Mul(h, g);                          // g "TE" broadcasts over F by name
//
// A Tensor is an instruction plus one letter per dimension. The letters (legend):
//   T tokens          D model dim       F expert hidden    E experts (local or global)
//   K top-k slot      M assignment rows (T·K sorted, or a receive / padded buffer)
//   G router groups   C capacity slot   B batch            S sequence
//   H shared-expert hidden              N fused 2F (wi_0|wi_1)                P peer shard
//   X anything else (never matched against another X by the checks)
// Einsum checks that each operand's names are the ones its spec says: writing "TD,EDF->TEF"
// for a weight that is really "EFD" is an error naming both, even when D == F (known_bugs.md
// #1, the silent variant). Elementwise ops broadcast by name: every name of the smaller operand
// must appear in the larger one.
//
// Every named instruction is recorded in a DimNameTable (instruction -> names) that survives
// into the lowered step, where the static checks read it.
#ifndef PERFSIM_SIM_LOWERING_NAMED_BUILDER_H_
#define PERFSIM_SIM_LOWERING_NAMED_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/ir/builder.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

using DimNameTable = absl::flat_hash_map<const Instruction*, std::string>;

// The element type of a model dtype (proto/model.proto DType; f32 when unset), for every
// lowering.
PrimitiveType PrimitiveTypeOfDType(DType dtype);

// A value a forward op consumed and its backward must read again (known_bugs.md #17): the
// forward records it under a role, the VJP records each operand that stands for it. The static
// check (sim/lowering/checks.h) verifies every use reads the recorded instruction itself.
struct ResidualUse {
  const Instruction* consumer = nullptr;
  int64_t operand = 0;
};
struct Residual {
  std::string role;        // "combine.expert_outputs"
  std::string stands_for;  // "the expert outputs the forward combine weighted"
  const Instruction* value = nullptr;
  std::vector<ResidualUse> uses;
};
using ResidualTable = std::vector<Residual>;

struct Tensor {
  Instruction* op = nullptr;
  std::string dims;

  const Shape& shape() const { return op->shape(); }
  PrimitiveType type() const { return op->shape().element_type(); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // Size of the dimension named `name`; -1 when absent.
  int64_t size(char name) const;
  // Index of the dimension named `name`; -1 when absent.
  int64_t index(char name) const;
};

class NamedBuilder {
 public:
  // `residuals` may be null (no residual bookkeeping).
  NamedBuilder(ModuleBuilder& mb, ComputationBuilder& b, DimNameTable* names,
               ResidualTable* residuals = nullptr)
      : mb_(mb), b_(b), names_(names), residuals_(residuals) {}

  ModuleBuilder& module_builder() const { return mb_; }
  ComputationBuilder& raw() const { return b_; }

  // Records `dims` for `op` (checked against its rank).
  Tensor Name(Instruction* op, std::string dims);

  Tensor Parameter(int64_t number, absl::string_view name, PrimitiveType type, std::string dims,
                   absl::Span<const int64_t> sizes);
  Tensor Full(PrimitiveType type, std::string dims, absl::Span<const int64_t> sizes, double value);
  Tensor Scalar(PrimitiveType type, double value);
  Tensor Iota(PrimitiveType type, std::string dims, absl::Span<const int64_t> sizes,
              char along);

  // spec "AB,BC->AC": letters are dimension names, which must equal a.dims and b.dims.
  // Contracts the letters both operands have and the result lacks; batches the letters all
  // three have. Accumulates and returns `out` (default: a's type).
  Tensor Einsum(absl::string_view spec, const Tensor& a, const Tensor& b,
                PrimitiveType out = PrimitiveType::kInvalid);

  // ragged-dot with explicit dimension numbers; the result is named `out_dims`.
  Tensor RaggedDot(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
                   RaggedDotDimensionNumbers dnums, std::string out_dims,
                   PrimitiveType out = PrimitiveType::kInvalid);
  // The three grouped-matmul forms of backends.md 1b, on rows sorted by group:
  //   GroupedForward  lhs MK × rhs EKN -> MN   (ragged rows, k contracted; forward)
  //   GroupedDlhs     dy MN × rhs EKN -> MK    (contracting n; the data gradient)
  //   GroupedDrhs     lhs MK × dy MN -> EKN    (ragged contraction over rows; weight gradient)
  // where the letters K, N stand for the operands' own names (e.g. D and F).
  // With set_masked_grouped_matmuls(true) they lower to dense dots under a group-membership
  // mask instead of ragged-dot (grouped_masked.cc: same results, runnable by XLA:CPU).
  Tensor GroupedForward(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes);
  Tensor GroupedDlhs(const Tensor& dy, const Tensor& rhs, const Tensor& group_sizes);
  Tensor GroupedDrhs(const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes);
  void set_masked_grouped_matmuls(bool masked) { masked_grouped_ = masked; }
  // The (tm, tk, tn) each ragged-dot runs with, by the projection its weight is (named [E, D, ·]:
  // wi; [E, F, D]: wo): XLA:TPU's ragged_dot_tiling metadata, which MaxText sets to the
  // projection's forward tiles (sim/simulator/routed.h RaggedDotGroupedSpec). Written on the
  // ragged-dot's annotation (kernel KERNEL_RAGGED_DOT, its projection and tiling).
  void set_ragged_dot_tilings(const GmmTiling& wi, const GmmTiling& wo) {
    ragged_dot_wi_ = wi;
    ragged_dot_wo_ = wo;
  }
  bool masked_grouped_matmuls() const { return masked_grouped_; }
  // FP8 GEMMs (the whole step's fp8 / MXFP8 precision, sim/step/block_timer.h): with a type set
  // (f8e4m3fn), every einsum and ragged-dot whose operands are both bf16 or f16 converts them to
  // it first (the quantisation; the simulator fuses such a convert into the dot, as a GEMM's
  // prologue) and keeps its result type, so the dot runs at the chip's fp8 rate. f32 matmuls
  // (the router, the softmax statistics) stay as they are. kInvalid (default): off.
  void set_gemm_type(PrimitiveType type) { gemm_type_ = type; }
  // pred [rows, G] named (rows_name, group_name): row m belongs to group g, i.e.
  // Σ_{i<g} gs[i] ≤ m < Σ_{i≤g} gs[i].
  Tensor GroupMembership(const Tensor& group_sizes, char rows_name, int64_t rows,
                         char group_name);

  Tensor Unary(Opcode opcode, const Tensor& a);
  // Elementwise with broadcasting by name; the result has the names of the larger operand.
  Tensor Binary(Opcode opcode, const Tensor& a, const Tensor& b);
  Tensor Add(const Tensor& a, const Tensor& b) { return Binary(Opcode::kAdd, a, b); }
  Tensor Sub(const Tensor& a, const Tensor& b) { return Binary(Opcode::kSubtract, a, b); }
  Tensor Mul(const Tensor& a, const Tensor& b) { return Binary(Opcode::kMultiply, a, b); }
  Tensor Div(const Tensor& a, const Tensor& b) { return Binary(Opcode::kDivide, a, b); }
  Tensor Max(const Tensor& a, const Tensor& b) { return Binary(Opcode::kMaximum, a, b); }
  Tensor MulScalar(const Tensor& a, double value);
  Tensor AddScalar(const Tensor& a, double value);
  Tensor Compare(const Tensor& a, const Tensor& b, ComparisonDirection direction);
  Tensor Select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false);
  Tensor Convert(const Tensor& a, PrimitiveType type);

  // Sum (or another reduction) over the named dims, e.g. Reduce(t, "F", kAdd).
  Tensor Reduce(const Tensor& a, absl::string_view over, Opcode opcode = Opcode::kAdd);
  // Broadcast to `dims` (a superset of a.dims, any order) with the given sizes of new names.
  Tensor BroadcastTo(const Tensor& a, std::string dims,
                     const absl::flat_hash_map<char, int64_t>& sizes);
  // Broadcast to the names and sizes of `like`.
  Tensor BroadcastLike(const Tensor& a, const Tensor& like);
  // Reorders to `dims` (a permutation of a.dims).
  Tensor Transpose(const Tensor& a, std::string dims);
  // Reshape to new names and sizes (same element count).
  Tensor Reshape(const Tensor& a, std::string dims, absl::Span<const int64_t> sizes);
  // Renames without moving data (same rank).
  Tensor Rename(const Tensor& a, std::string dims);

  Tensor Slice(const Tensor& a, absl::Span<const int64_t> starts,
               absl::Span<const int64_t> limits);
  Tensor Concatenate(const std::vector<Tensor>& parts, char along);

  // (values, s32 indices) of the k largest along the last dim, named a.dims with the last
  // replaced by `k_name`.
  std::pair<Tensor, Tensor> TopK(const Tensor& a, int64_t k, char k_name = 'K');
  // Stable ascending sort of the rank-1 `keys`, permuting `values` alike; returns all sorted.
  std::vector<Tensor> Sort(const std::vector<Tensor>& operands);
  // Rows of `table` ("R?" names: dim 0 indexed) at `indices` (rank 1, name I):
  // result names = indices name + table's remaining names.
  Tensor GatherRows(const Tensor& table, const Tensor& indices);
  // out = zeros-of-`base`; out[indices[i]] += updates[i] (rank-1 indices into dim 0).
  Tensor ScatterAddRows(const Tensor& base, const Tensor& indices, const Tensor& updates);

  Tensor CustomCall(const std::vector<Tensor>& operands, PrimitiveType type, std::string dims,
                    absl::Span<const int64_t> sizes, absl::string_view target,
                    std::string backend_config = "");

  // Fails the build (first error wins) with `message`.
  Tensor Fail(std::string message, const Tensor& like);

  // Residual bookkeeping (the struct above). SaveForBackward records `t` as the value role
  // stands for (a later call for the same role replaces it: the last forward wins).
  // InstructionCount marks where a VJP starts; UseResidual then records every instruction added
  // since `mark` that reads `read` as a use of `role`, and fails the build if none does.
  void SaveForBackward(absl::string_view role, absl::string_view stands_for, const Tensor& t);
  int64_t InstructionCount() const;
  void UseResidual(absl::string_view role, const Tensor& read, int64_t mark);

 private:
  // grouped_masked.cc: lhs [m, a] × rhs [G, b, c] contracting a with b (forward) or with c
  // (contract_rhs_last: dlhs); and the weight gradient [G, k, n].
  Tensor MaskedForward(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes,
                       bool contract_rhs_last);
  Tensor MaskedDrhs(const Tensor& lhs, const Tensor& dy, const Tensor& group_sizes);

  ModuleBuilder& mb_;
  ComputationBuilder& b_;
  DimNameTable* names_;
  ResidualTable* residuals_;
  // Annotates a grouped-matmul ragged-dot whose weight (or weight gradient) is named
  // `weight_dims` with its kernel configuration.
  void AnnotateRaggedDot(const Tensor& ragged_dot, absl::string_view weight_dims) const;

  bool masked_grouped_ = false;
  PrimitiveType gemm_type_ = PrimitiveType::kInvalid;
  // Converts a and b to gemm_type_ when set and both are 16-bit floats; `out` becomes the
  // result type the dot would have had (a's type when kInvalid).
  void QuantizeOperands(Tensor& a, Tensor& b, PrimitiveType& out);
  GmmTiling ragged_dot_wi_{128, 128, 128};
  GmmTiling ragged_dot_wo_{128, 128, 128};
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_NAMED_BUILDER_H_
