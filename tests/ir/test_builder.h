// Test-only helpers that build IR programmatically, without the HLO parser.
//
//   TestModule m;
//   HloBuilder entry = m.Entry();
//   Instruction* x = entry.Parameter(0, "f32[8,16]");
//   Instruction* w = entry.Parameter(1, "f32[16,4]");
//   Instruction* dot = entry.Add(Opcode::kDot, "f32[8,4]", {x, w});
//   dot->mutable_attributes()->dot_dimension_numbers = DotDims({}, {}, {1}, {0});
//   EXPECT_THAT(InferShape(*dot), ...);
//
// S("...") reads a shape in HLO notation: "f32[8,<=16]", "(f32[2], s32[])", "token[]",
// "bf16[4,8]{0,1}", "f32[8,128]{1,0:T(8,128)}". Malformed text is a bug in the test and aborts.
#ifndef PERFSIM_TESTS_IR_TEST_BUILDER_H_
#define PERFSIM_TESTS_IR_TEST_BUILDER_H_

#include <cctype>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "sim/ir/instruction.h"
#include "sim/ir/shape.h"
#include "sim/util/status.h"

namespace perfsim {

// Lets gtest print inference results readably. Found by argument-dependent lookup through
// Shape, so it lives in namespace perfsim.
inline void PrintTo(const absl::StatusOr<Shape>& result, std::ostream* os) {
  if (result.ok()) {
    *os << result->ToString();
  } else {
    *os << result.status();
  }
}

namespace testing {

namespace builder_internal {

class ShapeReader {
 public:
  explicit ShapeReader(absl::string_view text) : text_(text) {}

  Shape ReadAll() {
    Shape shape = Read();
    SkipSpaces();
    PERFSIM_CHECK(pos_ == text_.size()) << "trailing text in shape: " << text_;
    return shape;
  }

 private:
  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool Consume(absl::string_view token) {
    SkipSpaces();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  void Expect(absl::string_view token) {
    PERFSIM_CHECK(Consume(token)) << "expected '" << token << "' at " << pos_ << " in " << text_;
  }
  int64_t Int() {
    SkipSpaces();
    bool negative = Consume("-");
    PERFSIM_CHECK(pos_ < text_.size() && std::isdigit(text_[pos_]))
        << "expected a number in " << text_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(text_[pos_]))
      value = value * 10 + (text_[pos_++] - '0');
    return negative ? -value : value;
  }
  std::vector<int64_t> IntList(absl::string_view close) {
    std::vector<int64_t> values;
    if (Consume(close)) return values;
    do {
      values.push_back(Int());
    } while (Consume(","));
    Expect(close);
    return values;
  }

  Shape Read() {
    if (Consume("(")) {
      std::vector<Shape> elements;
      if (!Consume(")")) {
        do {
          elements.push_back(Read());
        } while (Consume(","));
        Expect(")");
      }
      return Shape::Tuple(std::move(elements));
    }
    SkipSpaces();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(text_[pos_])) ++pos_;
    const absl::string_view type_name = text_.substr(start, pos_ - start);
    Expect("[");
    if (type_name == "token") {
      Expect("]");
      return Shape::Token();
    }
    const std::optional<PrimitiveType> type = ParsePrimitiveType(type_name);
    PERFSIM_CHECK(type.has_value()) << "unknown element type in " << text_;
    std::vector<int64_t> dims;
    std::vector<bool> dynamic;
    if (!Consume("]")) {
      do {
        if (Consume("?")) {
          dims.push_back(Shape::kUnboundedSize);
          dynamic.push_back(true);
        } else {
          const bool bounded = Consume("<=");
          dims.push_back(Int());
          dynamic.push_back(bounded);
        }
      } while (Consume(","));
      Expect("]");
    }
    Shape shape = Shape::Array(*type, dims);
    for (size_t i = 0; i < dynamic.size(); ++i) shape.set_dynamic_dimension(i, dynamic[i]);
    if (Consume("{")) {
      Layout layout;
      SkipSpaces();
      while (pos_ < text_.size() && std::isdigit(text_[pos_])) {
        layout.minor_to_major.push_back(Int());
        if (!Consume(",")) break;
      }
      if (Consume(":")) {
        while (true) {
          if (Consume("T")) {
            // One 'T' before all tiles: T(8,128)(2,1).
            while (Consume("(")) layout.tiles.push_back(Tile{IntList(")")});
          } else if (Consume("S(")) {
            layout.memory_space = Int();
            Expect(")");
          } else if (Consume("E(")) {
            layout.element_size_bits = Int();
            Expect(")");
          } else {
            break;
          }
        }
      }
      Expect("}");
      shape.set_layout(std::move(layout));
    }
    return shape;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace builder_internal

inline Shape S(absl::string_view text) { return builder_internal::ShapeReader(text).ReadAll(); }

// Matches an absl::StatusOr<Shape> that is OK and equal to S(text), layouts ignored.
MATCHER_P(InfersShape, text, absl::StrCat("infers ", text)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  *result_listener << "shape is " << arg->ToString();
  return SameShapeIgnoringLayout(*arg, S(text));
}

// Adds instructions to one computation; the last added instruction becomes the root.
class HloBuilder {
 public:
  explicit HloBuilder(Computation* computation) : computation_(computation) {}

  Computation* computation() const { return computation_; }

  Instruction* Parameter(int64_t number, absl::string_view shape, std::string name = "") {
    if (name.empty()) name = absl::StrCat("p", number);
    return NumberedParameter(number, shape, std::move(name));
  }

  Instruction* Add(Opcode opcode, absl::string_view shape, std::vector<Instruction*> operands = {},
                   std::string name = "") {
    return AddShape(opcode, S(shape), std::move(operands), std::move(name));
  }

  Instruction* AddShape(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                        std::string name) {
    if (name.empty()) name = absl::StrCat(OpcodeSpelling(opcode), ".", ++counter_);
    auto instruction = std::make_unique<Instruction>(opcode, std::move(name), std::move(shape));
    for (Instruction* operand : operands) instruction->AppendOperand(operand);
    if (opcode == Opcode::kParameter) {
      instruction->mutable_attributes()->parameter_number = pending_parameter_number_;
    }
    Instruction* added = computation_->AddInstruction(std::move(instruction));
    computation_->set_root(added);
    return added;
  }

  // Any parameter number, gaps and duplicates included (the verifier tests need them).
  // AddInstruction reads the number, so it is set before the instruction is added.
  Instruction* NumberedParameter(int64_t number, absl::string_view shape, std::string name) {
    pending_parameter_number_ = number;
    return AddShape(Opcode::kParameter, S(shape), {}, std::move(name));
  }

 private:
  Computation* computation_;
  int counter_ = 0;
  int64_t pending_parameter_number_ = 0;
};

// A module under construction.
class TestModule {
 public:
  explicit TestModule(std::string name = "test")
      : module_(std::make_unique<Module>(std::move(name))) {}

  Module& module() { return *module_; }

  HloBuilder NewComputation(std::string name) {
    return HloBuilder(module_->AddComputation(std::make_unique<Computation>(std::move(name))));
  }

  HloBuilder Entry(std::string name = "main") {
    HloBuilder builder = NewComputation(std::move(name));
    module_->set_entry(builder.computation());
    return builder;
  }

  // `name { a = T[] parameter(0)  b = T[] parameter(1)  ROOT r = T[] op(a, b) }`.
  Computation* ScalarBinary(std::string name, absl::string_view type, Opcode op = Opcode::kAdd) {
    HloBuilder b = NewComputation(std::move(name));
    const std::string scalar = absl::StrCat(type, "[]");
    Instruction* lhs = b.NumberedParameter(0, scalar, "lhs");
    Instruction* rhs = b.NumberedParameter(1, scalar, "rhs");
    const std::string result = op == Opcode::kCompare ? "pred[]" : scalar;
    Instruction* r = b.Add(op, result, {lhs, rhs}, "r");
    if (op == Opcode::kCompare) {
      r->mutable_attributes()->comparison_direction = ComparisonDirection::kLt;
    }
    return b.computation();
  }

 private:
  std::unique_ptr<Module> module_;
};

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_IR_TEST_BUILDER_H_
