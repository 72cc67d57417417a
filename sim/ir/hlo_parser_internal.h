// The HLO text parser's state, shared by its implementation files (not a public API; use
// sim/ir/hlo_parser.h):
//   hlo_parser.cc                        module, computations, instructions, operands
//   hlo_parser_shape.cc                  shapes and layouts
//   hlo_parser_attributes.cc             `key=value` attributes of instructions
//   hlo_parser_called_computations.cc    attributes naming computations, control-predecessors
//   hlo_parser_window_attributes.cc      slice, padding, window
//   hlo_parser_collective_attributes.cc  replica_groups, source_target_pairs
//   hlo_parser_infer.cc                  shapes left out of the text
//   hlo_parser_literal.cc                constant literals
//
// One token of lookahead (tok_) over HloLexer, with a saved-state peek where HLO needs two.
// Names are resolved late so that text may refer forward: operands at the end of their
// computation, called computations at the end of the module.
#ifndef PERFSIM_SIM_IR_HLO_PARSER_INTERNAL_H_
#define PERFSIM_SIM_IR_HLO_PARSER_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/ir/hlo_lexer.h"
#include "sim/ir/instruction.h"
#include "sim/ir/literal.h"
#include "sim/ir/shape.h"

namespace perfsim {

// Whether XLA's parser infers the result shape of `opcode` when the text leaves it out
// (`n = negate(x)`); false for ops whose text always carries a shape (hlo_parser_infer.cc).
bool ParserInfersShape(Opcode opcode);

class HloParser {
 public:
  // Bound on nesting of tuples, literals, inline computations and brackets.
  static constexpr int kMaxDepth = 256;
  // Constants with more elements must be elided (`{...}`): 2^28 elements.
  static constexpr int64_t kMaxLiteralElements = int64_t{1} << 28;
  // Bound on an array constant written as one scalar, `f32[4096,4096] constant(0)`: 2^24.
  static constexpr int64_t kMaxScalarFilledElements = int64_t{1} << 24;
  // Bound on the devices an iota replica-group list may expand to.
  static constexpr int64_t kMaxReplicaGroupDevices = int64_t{1} << 24;
  // Bound on instructions nested in operand lists, `add(negate(abs(x)), y)` being 2 deep.
  static constexpr int kMaxNestedInstructionDepth = 64;

  HloParser(absl::string_view text, absl::string_view filename);

  absl::StatusOr<std::unique_ptr<Module>> ParseModule();
  absl::StatusOr<Shape> ParseStandaloneShape();

 private:
  enum class CallRole {
    kToApply,
    kCalls,
    kCondition,
    kBody,
    kSelect,
    kScatter,
    kBranches,
    kTrueComputation,
    kFalseComputation,
  };
  // A reference to a computation: by name (resolved at the end of the module) or, for an
  // inline computation, directly.
  struct ComputationRef {
    std::string name;
    Computation* computation = nullptr;
    SourceLocation location;
  };
  struct PendingCalls {
    Instruction* instruction;
    CallRole role;
    std::vector<ComputationRef> refs;
  };
  struct PendingName {
    Instruction* instruction;
    int64_t operand_index;  // -1 for a control predecessor
    std::string name;
    SourceLocation location;
  };
  // The computation being parsed.
  struct Scope {
    Computation* computation;
    std::vector<PendingName> pending;
    // Next suffix for the names of nested instructions, by base name (`constant.anon`).
    absl::flat_hash_map<std::string, int> anonymous_suffix = {};
  };
  // An instruction written without a result shape (`n = negate(x)`): inferred once the whole
  // module is read (FinishModule), since operands and callees may come later in the text.
  struct Unshaped {
    Instruction* instruction;
    SourceLocation opcode_location;
  };
  // What attributes of one instruction go to.
  struct AttributeTarget {
    Instruction* instruction;  // attributes and called computations
    Instruction* outer;        // control-predecessors (differs for async sugar)
    Scope* scope;
    std::vector<std::string> seen_keys;
  };
  struct ParsedComputation {
    std::unique_ptr<Computation> computation;
    bool anonymous = false;
    std::string base_name;  // for anonymous ones: the name to make unique
  };

  // --- tokens and errors (hlo_parser.cc) ---
  void Advance() { tok_ = lexer_.Next(); }
  bool At(TokenKind kind) const { return tok_.kind == kind; }
  bool AtKeyword(absl::string_view word) const {
    return tok_.kind == TokenKind::kIdentifier && tok_.text == word;
  }
  bool AtName() const {
    return tok_.kind == TokenKind::kIdentifier || tok_.kind == TokenKind::kName;
  }
  // The token after tok_, without consuming anything.
  Token PeekToken();
  static SourceLocation LocationOf(const Token& token) { return {token.line, token.column}; }
  absl::Status ErrorAt(SourceLocation location, absl::string_view message) const;
  // "expected <what>; got <tok_>" at tok_.
  absl::Status Expected(absl::string_view what) const;
  // Consumes a token of `kind` or fails with Expected(what).
  absl::Status Expect(TokenKind kind, absl::string_view what);
  absl::Status EnterNesting();
  void LeaveNesting() { --depth_; }

  absl::StatusOr<int64_t> ParseInt64(absl::string_view what);
  absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view what);  // {1,2}
  absl::StatusOr<std::string> ParseNameToken(absl::string_view what);
  absl::StatusOr<bool> ParseBool();
  // An attribute value scanned verbatim (tok_ must be the '=' before it).
  absl::StatusOr<std::string> ParseRawValue();

  // --- module structure (hlo_parser.cc) ---
  absl::Status ParseHeader(std::string* module_name,
                           std::vector<std::pair<std::string, std::string>>* attributes);
  bool AtStackFrameSection();
  absl::StatusOr<std::string> ParseStackFrameIndex();
  absl::Status ParseComputation();
  // Parses `{ instructions }` into `computation` and records it.
  absl::StatusOr<Computation*> ParseInstructionList(std::unique_ptr<Computation> computation,
                                                    bool anonymous, std::string base_name);
  absl::Status ParseInstruction(Scope& scope, Instruction** root);
  // The part after `name =`: `shape? opcode(operands)` and, unless `nested`, `, attributes`.
  // `shape` was parsed by the caller when present. Adds the instruction to the scope.
  absl::StatusOr<Instruction*> ParseInstructionRhs(Scope& scope, std::string name,
                                                   SourceLocation name_location,
                                                   std::optional<Shape> shape,
                                                   SourceLocation shape_location, bool nested);
  absl::Status ParseOperands(Scope& scope, Instruction* instruction);
  // `shape? opcode(...)` in an operand list (XLA's nested instruction): tok_ is the opcode.
  bool NestedInstructionFollows();
  absl::StatusOr<Instruction*> ParseNestedInstruction(Scope& scope, std::optional<Shape> shape,
                                                      SourceLocation shape_location);
  // Wraps the op of a `foo-start(...)` sugar in a new computation; returns the wrapped op.
  absl::StatusOr<Instruction*> WrapAsyncSugar(Instruction* start, Opcode wrapped,
                                              SourceLocation shape_location);
  absl::Status FinishScope(Scope& scope);
  absl::Status FinishModule(Module* module);
  // --- shapes left out (hlo_parser_infer.cc) ---
  // Gives every Unshaped instruction its inferred shape, operands and callee roots first.
  absl::Status InferMissingShapes();
  void RecordComputation(std::unique_ptr<Computation> computation, bool anonymous,
                         std::string base_name);

  // --- shapes (hlo_parser_shape.cc) ---
  bool AtShapeStart();
  bool AtBufferShapeStart();
  absl::StatusOr<Shape> ParseShape();
  absl::Status ParseLayout(Shape* shape);
  bool LayoutFollows();
  absl::Status ValidateShapeAt(const Shape& shape, SourceLocation location) const;

  // --- attributes (hlo_parser_attributes.cc) ---
  absl::Status ParseAttribute(AttributeTarget& target);
  // (hlo_parser_called_computations.cc)
  absl::Status ParseComputationRefs(AttributeTarget& target, CallRole role, bool list);
  absl::StatusOr<ComputationRef> ParseComputationRef(AttributeTarget& target,
                                                     absl::string_view role_name);
  bool InlineComputationFollows();
  absl::Status ParseControlPredecessors(AttributeTarget& target);
  // (hlo_parser_window_attributes.cc)
  absl::Status ParseSlice(InstructionAttributes* attributes);
  absl::Status ParsePadding(InstructionAttributes* attributes);
  absl::Status ParseWindow(InstructionAttributes* attributes);
  // (hlo_parser_collective_attributes.cc)
  absl::Status ParseReplicaGroups(InstructionAttributes* attributes);
  absl::Status ParseSourceTargetPairs(InstructionAttributes* attributes);

  // --- literals (hlo_parser_literal.cc) ---
  absl::StatusOr<Literal> ParseLiteral(const Shape& shape);
  absl::Status ParseArrayLiteralLevel(const Shape& shape, int64_t dimension,
                                      std::vector<uint8_t>* data);
  absl::Status ParseLiteralScalar(PrimitiveType type, std::vector<uint8_t>* data);
  // custom-call's `literal=s32[2]{0} {1, 2}` (tok_ is the '='): shape and literal, returned as
  // the printer writes them back. A tuple gives each element its own shape, as XLA's
  // ParseLiteral(Literal*) reads it: `literal=( s32[2]{0} {1, 2}, pred[] true )`.
  absl::StatusOr<std::string> ParseLiteralAttributeValue();
  // One such self-shaped literal, or a parenthesised tuple of them, after the '='.
  absl::StatusOr<std::string> ParseShapedLiteral();

  HloLexer lexer_;
  std::string filename_;
  Token tok_;
  int depth_ = 0;

  std::vector<ParsedComputation> computations_;  // in completion order: callees inline first
  absl::flat_hash_map<std::string, Computation*> named_computations_;
  std::vector<PendingCalls> pending_calls_;
  std::vector<Unshaped> unshaped_;
  int nested_instruction_depth_ = 0;
  Computation* entry_ = nullptr;
  Computation* last_top_level_ = nullptr;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_HLO_PARSER_INTERNAL_H_
