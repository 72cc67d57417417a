// Building modules of the op IR from code, the way lowerings do.
//
//   ModuleBuilder mb("moe_dense");
//   ComputationBuilder& b = mb.Entry("main");
//   Instruction* x = b.Parameter(0, Shape::Array(PrimitiveType::kF32, {64, 40}), "x");
//   Instruction* w = b.Parameter(1, Shape::Array(PrimitiveType::kF32, {40, 12}), "router");
//   Instruction* logits = b.Dot(x, w, /*lhs_contracting=*/{1}, /*rhs_contracting=*/{0});
//   b.SetRoot(logits);
//   PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, mb.Build());
//
// Result shapes come from shape inference (shape_inference.h); ops whose result is given rather
// than derived (reshape, broadcast, iota, convert, custom-call, ...) take it as an argument and
// inference checks it. Errors are deferred, as in XLA's XlaBuilder: the first failing op is
// recorded (with the computation and the op it would have been) and every later call returns a
// placeholder, so lowering code reads straight through; Build() returns the recorded error or
// the verified module. Instruction names are unique in the module (`dot.3`), which XLA's parser
// requires.
//
// An op-name scope (SetOpNameScope("moe/router")) is written into each new instruction's
// metadata as XLA's op_name, so the cost report can attribute instructions to MoE phases.
#ifndef PERFSIM_SIM_IR_BUILDER_H_
#define PERFSIM_SIM_IR_BUILDER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/ir/attributes.h"
#include "sim/ir/instruction.h"
#include "sim/ir/literal.h"
#include "sim/ir/opcode.h"
#include "sim/ir/shape.h"

namespace perfsim {

class ModuleBuilder;

class ComputationBuilder {
 public:
  ComputationBuilder(ModuleBuilder* parent, Computation* computation)
      : parent_(parent), computation_(computation) {}
  ComputationBuilder(const ComputationBuilder&) = delete;
  ComputationBuilder& operator=(const ComputationBuilder&) = delete;

  Computation* computation() const { return computation_; }
  ModuleBuilder& module_builder() const { return *parent_; }

  // The general form. `given` is the result shape for ops whose result is not derived from the
  // operands (leave it default for the others; when set for a derived op it must agree).
  Instruction* Add(Opcode opcode, std::vector<Instruction*> operands,
                   InstructionAttributes attributes = {}, Shape given = Shape(),
                   absl::string_view name = "", Computation* to_apply = nullptr);

  Instruction* Parameter(int64_t number, Shape shape, absl::string_view name);
  Instruction* Constant(Literal literal, absl::string_view name = "");
  Instruction* ScalarConstant(PrimitiveType type, double value);
  // A constant of `shape` filled with `value` (a broadcast scalar, as XLA writes it).
  Instruction* Full(const Shape& shape, double value);
  Instruction* Iota(const Shape& shape, int64_t dimension);

  Instruction* Unary(Opcode opcode, Instruction* operand);
  Instruction* Binary(Opcode opcode, Instruction* lhs, Instruction* rhs);
  Instruction* Compare(Instruction* lhs, Instruction* rhs, ComparisonDirection direction);
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);
  Instruction* Convert(Instruction* operand, PrimitiveType type);

  // broadcast: operand dimension i becomes result dimension dims[i].
  Instruction* Broadcast(Instruction* operand, absl::Span<const int64_t> result_dimensions,
                         absl::Span<const int64_t> dims);
  Instruction* Reshape(Instruction* operand, absl::Span<const int64_t> dimensions);
  Instruction* Transpose(Instruction* operand, absl::Span<const int64_t> permutation);
  Instruction* Slice(Instruction* operand, absl::Span<const int64_t> starts,
                     absl::Span<const int64_t> limits);
  Instruction* Concatenate(std::vector<Instruction*> operands, int64_t dimension);
  Instruction* Pad(Instruction* operand, Instruction* padding_value,
                   std::vector<PaddingDimension> padding);
  Instruction* DynamicSlice(Instruction* operand, std::vector<Instruction*> starts,
                            absl::Span<const int64_t> sizes);
  Instruction* DynamicUpdateSlice(Instruction* operand, Instruction* update,
                                  std::vector<Instruction*> starts);

  // reduce over `dims` with the scalar computation `opcode` (add, maximum, minimum, ...).
  Instruction* Reduce(Instruction* operand, Instruction* init, absl::Span<const int64_t> dims,
                      Opcode opcode);
  Instruction* Dot(Instruction* lhs, Instruction* rhs, DotDimensionNumbers dnums,
                   PrimitiveType result_type = PrimitiveType::kInvalid);
  Instruction* RaggedDot(Instruction* lhs, Instruction* rhs, Instruction* group_sizes,
                         RaggedDotDimensionNumbers dnums,
                         PrimitiveType result_type = PrimitiveType::kInvalid);
  Instruction* Gather(Instruction* operand, Instruction* indices, GatherDimensionNumbers dnums,
                      absl::Span<const int64_t> slice_sizes);
  // scatter combining with `combiner` (e.g. add); nullopt overwrites.
  Instruction* Scatter(Instruction* operand, Instruction* indices, Instruction* updates,
                       ScatterDimensionNumbers dnums, std::optional<Opcode> combiner);
  // Stable sort along `dimension`, ascending by operands[0] (ties keep order); returns the tuple
  // when there are several operands.
  Instruction* Sort(std::vector<Instruction*> operands, int64_t dimension, bool descending);
  // (values, s32 indices) of the k largest along the last dimension.
  Instruction* TopK(Instruction* operand, int64_t k);
  Instruction* Tuple(std::vector<Instruction*> elements);
  Instruction* GetTupleElement(Instruction* tuple, int64_t index);
  Instruction* CustomCall(std::vector<Instruction*> operands, Shape shape,
                          absl::string_view target, std::string backend_config = "");

  void SetRoot(Instruction* root);

 private:
  friend class ModuleBuilder;
  ModuleBuilder* parent_;
  Computation* computation_;
};

class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name);
  ModuleBuilder(const ModuleBuilder&) = delete;
  ModuleBuilder& operator=(const ModuleBuilder&) = delete;

  ComputationBuilder& Entry(std::string name);
  ComputationBuilder& NewComputation(std::string name);

  // `name(a: T[], b: T[]) -> T[] { ROOT r = opcode(a, b) }`, made once per (type, opcode).
  Computation* ScalarBinaryComputation(PrimitiveType type, Opcode opcode);
  // `name(old: T[], new: T[]) -> T[] { ROOT new }`: a scatter that overwrites.
  Computation* OverwriteComputation(PrimitiveType type);
  // The comparator of a sort ascending (or descending) by the first of `types`.
  Computation* SortComparator(const std::vector<PrimitiveType>& types, bool descending);

  void SetOpNameScope(std::string scope) { op_name_scope_ = std::move(scope); }
  const std::string& op_name_scope() const { return op_name_scope_; }

  // A module-unique name from `base` ("dot" -> "dot", "dot.1", ...).
  std::string UniqueName(absl::string_view base);

  // Records a failure (the first one wins) and returns a placeholder of `shape` that later ops
  // can take as an operand.
  Instruction* Fail(absl::Status status, const Shape& shape);
  bool IsPlaceholder(const Instruction* instruction) const;
  const absl::Status& status() const { return status_; }

  // The module, verified; or the first recorded error. Call once.
  absl::StatusOr<std::unique_ptr<Module>> Build();

  Module* module() const { return module_.get(); }

 private:
  std::unique_ptr<Module> module_;
  std::vector<std::unique_ptr<ComputationBuilder>> builders_;
  std::vector<std::unique_ptr<Instruction>> placeholders_;
  absl::flat_hash_map<std::string, int64_t> name_counts_;
  absl::flat_hash_map<std::string, Computation*> scalar_computations_;
  std::string op_name_scope_;
  absl::Status status_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_BUILDER_H_
