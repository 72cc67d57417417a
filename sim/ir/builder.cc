#include "sim/ir/builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/verifier.h"
#include "sim/util/status.h"

namespace perfsim {

Instruction* ComputationBuilder::Add(Opcode opcode, std::vector<Instruction*> operands,
                                     InstructionAttributes attributes, Shape given,
                                     absl::string_view name, Computation* to_apply) {
  const bool given_shape = given.element_type() != PrimitiveType::kInvalid;
  ModuleBuilder& mb = *parent_;
  // After a failure, keep going with placeholders; only the first error is reported.
  if (!mb.status().ok()) return mb.Fail(absl::OkStatus(), given_shape ? given : Shape());
  for (Instruction* operand : operands) {
    if (mb.IsPlaceholder(operand)) return mb.Fail(absl::OkStatus(), given);
  }
  const std::string unique =
      mb.UniqueName(name.empty() ? OpcodeSpelling(opcode) : name);
  auto instruction = std::make_unique<Instruction>(opcode, unique, given);
  for (Instruction* operand : operands) instruction->AppendOperand(operand);
  if (!mb.op_name_scope().empty() && attributes.metadata.empty()) {
    attributes.metadata = absl::StrCat("{op_name=\"", mb.op_name_scope(), "\"}");
  }
  *instruction->mutable_attributes() = std::move(attributes);
  if (to_apply != nullptr) instruction->set_to_apply(to_apply);
  absl::StatusOr<Shape> inferred = InferShape(*instruction);
  if (!inferred.ok()) {
    return mb.Fail(absl::Status(inferred.status().code(),
                                absl::StrCat("in ", computation_->name(), ": ",
                                             inferred.status().message())),
                   given);
  }
  if (given_shape && !SameShapeIgnoringLayout(*inferred, given)) {
    return mb.Fail(absl::InvalidArgumentError(absl::StrCat(
                       "in ", computation_->name(), ": ", unique, ": expected result shape ",
                       inferred->ToString(false), "; got ", given.ToString(false))),
                   given);
  }
  // Sizes computed by a lowering from its inputs: a result whose element count or bytes
  // overflow int64 is an error here, never a wrapped shape for a later pass to allocate.
  if (absl::Status valid = ValidateShape(*inferred); !valid.ok()) {
    return mb.Fail(absl::Status(valid.code(), absl::StrCat("in ", computation_->name(), ": ",
                                                           unique, ": ", valid.message())),
                   given);
  }
  if (!given_shape) instruction->set_shape(*std::move(inferred));
  return computation_->AddInstruction(std::move(instruction));
}

Instruction* ComputationBuilder::Parameter(int64_t number, Shape shape, absl::string_view name) {
  InstructionAttributes attributes;
  attributes.parameter_number = number;
  return Add(Opcode::kParameter, {}, std::move(attributes), std::move(shape), name);
}

Instruction* ComputationBuilder::Constant(Literal literal, absl::string_view name) {
  Shape shape = literal.shape();
  InstructionAttributes attributes;
  attributes.literal = std::move(literal);
  return Add(Opcode::kConstant, {}, std::move(attributes), std::move(shape),
             name.empty() ? "constant" : name);
}

Instruction* ComputationBuilder::ScalarConstant(PrimitiveType type, double value) {
  Literal literal(Shape::Scalar(type));
  literal.SetFromDouble(0, value);
  return Constant(std::move(literal));
}

Instruction* ComputationBuilder::Full(const Shape& shape, double value) {
  Instruction* scalar = ScalarConstant(shape.element_type(), value);
  return Broadcast(scalar, shape.dimensions(), {});
}

Instruction* ComputationBuilder::Iota(const Shape& shape, int64_t dimension) {
  InstructionAttributes attributes;
  attributes.iota_dimension = dimension;
  return Add(Opcode::kIota, {}, std::move(attributes), shape);
}

Instruction* ComputationBuilder::Unary(Opcode opcode, Instruction* operand) {
  return Add(opcode, {operand});
}

Instruction* ComputationBuilder::Binary(Opcode opcode, Instruction* lhs, Instruction* rhs) {
  return Add(opcode, {lhs, rhs});
}

Instruction* ComputationBuilder::Compare(Instruction* lhs, Instruction* rhs,
                                         ComparisonDirection direction) {
  InstructionAttributes attributes;
  attributes.comparison_direction = direction;
  return Add(Opcode::kCompare, {lhs, rhs}, std::move(attributes));
}

Instruction* ComputationBuilder::Select(Instruction* pred, Instruction* on_true,
                                        Instruction* on_false) {
  return Add(Opcode::kSelect, {pred, on_true, on_false});
}

Instruction* ComputationBuilder::Convert(Instruction* operand, PrimitiveType type) {
  if (operand->shape().element_type() == type) return operand;
  return Add(Opcode::kConvert, {operand}, {}, Shape::Array(type, operand->shape().dimensions()));
}

Instruction* ComputationBuilder::Broadcast(Instruction* operand,
                                           absl::Span<const int64_t> result_dimensions,
                                           absl::Span<const int64_t> dims) {
  InstructionAttributes attributes;
  attributes.dimensions = std::vector<int64_t>(dims.begin(), dims.end());
  return Add(Opcode::kBroadcast, {operand}, std::move(attributes),
             Shape::Array(operand->shape().element_type(), result_dimensions));
}

Instruction* ComputationBuilder::Reshape(Instruction* operand,
                                         absl::Span<const int64_t> dimensions) {
  return Add(Opcode::kReshape, {operand}, {},
             Shape::Array(operand->shape().element_type(), dimensions));
}

Instruction* ComputationBuilder::Transpose(Instruction* operand,
                                           absl::Span<const int64_t> permutation) {
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i) identity &= permutation[i] == int64_t(i);
  if (identity) return operand;
  InstructionAttributes attributes;
  attributes.dimensions = std::vector<int64_t>(permutation.begin(), permutation.end());
  return Add(Opcode::kTranspose, {operand}, std::move(attributes));
}

Instruction* ComputationBuilder::Slice(Instruction* operand, absl::Span<const int64_t> starts,
                                       absl::Span<const int64_t> limits) {
  InstructionAttributes attributes;
  std::vector<SliceDimension> slice;
  for (size_t i = 0; i < starts.size() && i < limits.size(); ++i) {
    slice.push_back({starts[i], limits[i], 1});
  }
  attributes.slice = std::move(slice);
  return Add(Opcode::kSlice, {operand}, std::move(attributes));
}

Instruction* ComputationBuilder::Concatenate(std::vector<Instruction*> operands,
                                             int64_t dimension) {
  InstructionAttributes attributes;
  attributes.dimensions = std::vector<int64_t>{dimension};
  return Add(Opcode::kConcatenate, std::move(operands), std::move(attributes));
}

Instruction* ComputationBuilder::Pad(Instruction* operand, Instruction* padding_value,
                                     std::vector<PaddingDimension> padding) {
  InstructionAttributes attributes;
  attributes.padding = std::move(padding);
  return Add(Opcode::kPad, {operand, padding_value}, std::move(attributes));
}

Instruction* ComputationBuilder::DynamicSlice(Instruction* operand,
                                              std::vector<Instruction*> starts,
                                              absl::Span<const int64_t> sizes) {
  InstructionAttributes attributes;
  attributes.dynamic_slice_sizes = std::vector<int64_t>(sizes.begin(), sizes.end());
  std::vector<Instruction*> operands = {operand};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Add(Opcode::kDynamicSlice, std::move(operands), std::move(attributes));
}

Instruction* ComputationBuilder::DynamicUpdateSlice(Instruction* operand, Instruction* update,
                                                    std::vector<Instruction*> starts) {
  std::vector<Instruction*> operands = {operand, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Add(Opcode::kDynamicUpdateSlice, std::move(operands));
}

Instruction* ComputationBuilder::Reduce(Instruction* operand, Instruction* init,
                                        absl::Span<const int64_t> dims, Opcode opcode) {
  InstructionAttributes attributes;
  attributes.dimensions = std::vector<int64_t>(dims.begin(), dims.end());
  Computation* to_apply =
      parent_->ScalarBinaryComputation(operand->shape().element_type(), opcode);
  return Add(Opcode::kReduce, {operand, init}, std::move(attributes), Shape(), "", to_apply);
}

Instruction* ComputationBuilder::Dot(Instruction* lhs, Instruction* rhs,
                                     DotDimensionNumbers dnums, PrimitiveType result_type) {
  InstructionAttributes attributes;
  attributes.dot_dimension_numbers = std::move(dnums);
  Instruction* dot = Add(Opcode::kDot, {lhs, rhs}, std::move(attributes));
  if (result_type != PrimitiveType::kInvalid && !parent_->IsPlaceholder(dot)) {
    dot->mutable_shape()->set_element_type(result_type);
  }
  return dot;
}

Instruction* ComputationBuilder::RaggedDot(Instruction* lhs, Instruction* rhs,
                                           Instruction* group_sizes,
                                           RaggedDotDimensionNumbers dnums,
                                           PrimitiveType result_type) {
  InstructionAttributes attributes;
  attributes.ragged_dot_dimension_numbers = std::move(dnums);
  Instruction* dot = Add(Opcode::kRaggedDot, {lhs, rhs, group_sizes}, std::move(attributes));
  if (result_type != PrimitiveType::kInvalid && !parent_->IsPlaceholder(dot)) {
    dot->mutable_shape()->set_element_type(result_type);
  }
  return dot;
}

Instruction* ComputationBuilder::Gather(Instruction* operand, Instruction* indices,
                                        GatherDimensionNumbers dnums,
                                        absl::Span<const int64_t> slice_sizes) {
  InstructionAttributes attributes;
  attributes.gather_dimension_numbers = std::move(dnums);
  attributes.gather_slice_sizes.assign(slice_sizes.begin(), slice_sizes.end());
  return Add(Opcode::kGather, {operand, indices}, std::move(attributes));
}

Instruction* ComputationBuilder::Scatter(Instruction* operand, Instruction* indices,
                                         Instruction* updates, ScatterDimensionNumbers dnums,
                                         std::optional<Opcode> combiner) {
  const PrimitiveType type = operand->shape().element_type();
  Computation* to_apply = combiner.has_value()
                              ? parent_->ScalarBinaryComputation(type, *combiner)
                              : parent_->OverwriteComputation(type);
  InstructionAttributes attributes;
  attributes.scatter_dimension_numbers = std::move(dnums);
  return Add(Opcode::kScatter, {operand, indices, updates}, std::move(attributes), Shape(), "",
             to_apply);
}

Instruction* ComputationBuilder::Sort(std::vector<Instruction*> operands, int64_t dimension,
                                      bool descending) {
  std::vector<PrimitiveType> types;
  for (Instruction* operand : operands) types.push_back(operand->shape().element_type());
  Computation* comparator = parent_->SortComparator(types, descending);
  InstructionAttributes attributes;
  attributes.dimensions = std::vector<int64_t>{dimension};
  attributes.is_stable = true;
  return Add(Opcode::kSort, std::move(operands), std::move(attributes), Shape(), "", comparator);
}

Instruction* ComputationBuilder::TopK(Instruction* operand, int64_t k) {
  InstructionAttributes attributes;
  attributes.k = k;
  attributes.largest = true;
  return Add(Opcode::kTopK, {operand}, std::move(attributes));
}

Instruction* ComputationBuilder::Tuple(std::vector<Instruction*> elements) {
  return Add(Opcode::kTuple, std::move(elements));
}

Instruction* ComputationBuilder::GetTupleElement(Instruction* tuple, int64_t index) {
  InstructionAttributes attributes;
  attributes.tuple_index = index;
  return Add(Opcode::kGetTupleElement, {tuple}, std::move(attributes));
}

Instruction* ComputationBuilder::CustomCall(std::vector<Instruction*> operands, Shape shape,
                                            absl::string_view target,
                                            std::string backend_config) {
  InstructionAttributes attributes;
  attributes.custom_call_target = std::string(target);
  if (!backend_config.empty()) attributes.backend_config = std::move(backend_config);
  return Add(Opcode::kCustomCall, std::move(operands), std::move(attributes), std::move(shape),
             "custom-call");
}

void ComputationBuilder::SetRoot(Instruction* root) {
  if (parent_->IsPlaceholder(root)) return;
  computation_->set_root(root);
}

ModuleBuilder::ModuleBuilder(std::string name)
    : module_(std::make_unique<Module>(std::move(name))) {}

ComputationBuilder& ModuleBuilder::Entry(std::string name) {
  ComputationBuilder& builder = NewComputation(std::move(name));
  module_->set_entry(builder.computation());
  return builder;
}

ComputationBuilder& ModuleBuilder::NewComputation(std::string name) {
  Computation* computation =
      module_->AddComputation(std::make_unique<Computation>(UniqueName(name)));
  builders_.push_back(std::make_unique<ComputationBuilder>(this, computation));
  return *builders_.back();
}

Computation* ModuleBuilder::ScalarBinaryComputation(PrimitiveType type, Opcode opcode) {
  const std::string key = absl::StrCat(OpcodeSpelling(opcode), "_", PrimitiveTypeName(type));
  auto it = scalar_computations_.find(key);
  if (it != scalar_computations_.end()) return it->second;
  // The scope does not apply inside helper computations.
  std::string scope = std::move(op_name_scope_);
  op_name_scope_.clear();
  ComputationBuilder& c = NewComputation(key);
  Instruction* lhs = c.Parameter(0, Shape::Scalar(type), "lhs");
  Instruction* rhs = c.Parameter(1, Shape::Scalar(type), "rhs");
  c.SetRoot(c.Binary(opcode, lhs, rhs));
  op_name_scope_ = std::move(scope);
  scalar_computations_[key] = c.computation();
  return c.computation();
}

Computation* ModuleBuilder::OverwriteComputation(PrimitiveType type) {
  const std::string key = absl::StrCat("overwrite_", PrimitiveTypeName(type));
  auto it = scalar_computations_.find(key);
  if (it != scalar_computations_.end()) return it->second;
  std::string scope = std::move(op_name_scope_);
  op_name_scope_.clear();
  ComputationBuilder& c = NewComputation(key);
  c.Parameter(0, Shape::Scalar(type), "old");
  c.SetRoot(c.Parameter(1, Shape::Scalar(type), "new"));
  op_name_scope_ = std::move(scope);
  scalar_computations_[key] = c.computation();
  return c.computation();
}

Computation* ModuleBuilder::SortComparator(const std::vector<PrimitiveType>& types,
                                           bool descending) {
  std::string key = descending ? "compare_gt" : "compare_lt";
  for (PrimitiveType type : types) absl::StrAppend(&key, "_", PrimitiveTypeName(type));
  auto it = scalar_computations_.find(key);
  if (it != scalar_computations_.end()) return it->second;
  std::string scope = std::move(op_name_scope_);
  op_name_scope_.clear();
  ComputationBuilder& c = NewComputation(key);
  std::vector<Instruction*> params;
  for (size_t i = 0; i < types.size(); ++i) {
    params.push_back(c.Parameter(2 * i, Shape::Scalar(types[i]), absl::StrCat("p", i, ".lhs")));
    params.push_back(
        c.Parameter(2 * i + 1, Shape::Scalar(types[i]), absl::StrCat("p", i, ".rhs")));
  }
  c.SetRoot(c.Compare(params[0], params[1],
                      descending ? ComparisonDirection::kGt : ComparisonDirection::kLt));
  op_name_scope_ = std::move(scope);
  scalar_computations_[key] = c.computation();
  return c.computation();
}

std::string ModuleBuilder::UniqueName(absl::string_view base) {
  int64_t& count = name_counts_[std::string(base)];
  std::string name = count == 0 ? std::string(base) : absl::StrCat(base, ".", count);
  ++count;
  // A generated "x.1" could collide with a base literally named "x.1"; probe until free.
  while (name_counts_.contains(name) && name != base) {
    name = absl::StrCat(base, ".", count++);
  }
  if (name != base) name_counts_[name] += 1;
  return name;
}

Instruction* ModuleBuilder::Fail(absl::Status status, const Shape& shape) {
  if (status_.ok() && !status.ok()) status_ = std::move(status);
  Shape placeholder_shape = shape.element_type() == PrimitiveType::kInvalid
                                ? Shape::Scalar(PrimitiveType::kF32)
                                : shape;
  placeholders_.push_back(
      std::make_unique<Instruction>(Opcode::kConstant, "placeholder", placeholder_shape));
  return placeholders_.back().get();
}

bool ModuleBuilder::IsPlaceholder(const Instruction* instruction) const {
  if (instruction == nullptr) return true;
  for (const auto& p : placeholders_) {
    if (p.get() == instruction) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Module>> ModuleBuilder::Build() {
  if (!status_.ok()) return status_;
  PERFSIM_RETURN_IF_ERROR(VerifyModule(*module_));
  return std::move(module_);
}

}  // namespace perfsim
