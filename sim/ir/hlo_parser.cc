// Module, computation and instruction structure of HLO text: the header, computations,
// instructions and their operands, async sugar, and the name resolution that ends a scope and
// the module. Shapes and layouts are in hlo_parser_shape.cc, attributes in
// hlo_parser_attributes.cc, literals in hlo_parser_literal.cc.
#include "sim/ir/hlo_parser.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/ir/lowering_platform.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The opcode of an instruction's text. `foo-start`, `foo-update` and `foo-done` for an op `foo`
// that has no async form of its own (e.g. custom-call-start) are sugar for the generic
// async-start/-update/-done wrapping `foo`.
struct OpcodeChoice {
  Opcode opcode;
  std::optional<Opcode> wrapped;
};

std::optional<OpcodeChoice> ResolveOpcode(absl::string_view text) {
  if (std::optional<Opcode> opcode = ParseOpcode(text)) return OpcodeChoice{*opcode, {}};
  struct Suffix {
    absl::string_view text;
    Opcode opcode;
  };
  for (const Suffix& suffix :
       {Suffix{"-start", Opcode::kAsyncStart}, Suffix{"-update", Opcode::kAsyncUpdate},
        Suffix{"-done", Opcode::kAsyncDone}}) {
    if (!absl::EndsWith(text, suffix.text)) continue;
    const absl::string_view base = text.substr(0, text.size() - suffix.text.size());
    if (std::optional<Opcode> wrapped = ParseOpcode(base))
      return OpcodeChoice{suffix.opcode, wrapped};
  }
  return std::nullopt;
}

}  // namespace

HloParser::HloParser(absl::string_view text, absl::string_view filename)
    : lexer_(text), filename_(filename) {}

// --- tokens and errors ---

Token HloParser::PeekToken() {
  const HloLexer::State saved = lexer_.state();
  Token next = lexer_.Next();
  lexer_.set_state(saved);
  return next;
}

absl::Status HloParser::ErrorAt(SourceLocation location, absl::string_view message) const {
  if (filename_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(location.line, ":", location.column, ": ", message));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(filename_, ":", location.line, ":", location.column, ": ", message));
}

absl::Status HloParser::Expected(absl::string_view what) const {
  return ErrorAt(LocationOf(tok_), absl::StrCat("expected ", what, "; got ", DescribeToken(tok_)));
}

absl::Status HloParser::Expect(TokenKind kind, absl::string_view what) {
  if (tok_.kind != kind) return Expected(what);
  Advance();
  return absl::OkStatus();
}

absl::Status HloParser::EnterNesting() {
  if (depth_ >= kMaxDepth) {
    return ErrorAt(LocationOf(tok_),
                   absl::StrCat("expected nesting at most ", kMaxDepth, " deep; got deeper"));
  }
  ++depth_;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> HloParser::ParseInt64(absl::string_view what) {
  int64_t value = 0;
  if (tok_.kind != TokenKind::kNumber || !absl::SimpleAtoi(tok_.text, &value)) {
    return Expected(what);
  }
  Advance();
  return value;
}

absl::StatusOr<std::vector<int64_t>> HloParser::ParseIntList(absl::string_view what) {
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, absl::StrCat("'{' to start ", what)));
  std::vector<int64_t> values;
  if (!At(TokenKind::kRbrace)) {
    while (true) {
      PERFSIM_ASSIGN_OR_RETURN(int64_t value, ParseInt64(absl::StrCat("an integer in ", what)));
      values.push_back(value);
      if (!At(TokenKind::kComma)) break;
      Advance();
    }
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, absl::StrCat("',' or '}' in ", what)));
  return values;
}

absl::StatusOr<std::string> HloParser::ParseNameToken(absl::string_view what) {
  if (!AtName()) return Expected(what);
  std::string name(tok_.text);
  Advance();
  return name;
}

absl::StatusOr<bool> HloParser::ParseBool() {
  if (AtKeyword("true")) {
    Advance();
    return true;
  }
  if (AtKeyword("false")) {
    Advance();
    return false;
  }
  return Expected("true or false");
}

absl::StatusOr<std::string> HloParser::ParseRawValue() {
  if (!At(TokenKind::kEqual)) return Expected("'='");
  RawValue raw = lexer_.ScanRawValue();
  if (!raw.ok) return ErrorAt({raw.error_line, raw.error_column}, raw.error);
  Advance();
  return std::move(raw.text);
}

// --- module structure ---

absl::StatusOr<std::unique_ptr<Module>> HloParser::ParseModule() {
  Advance();
  std::string module_name;
  std::vector<std::pair<std::string, std::string>> header_attributes;
  if (AtKeyword("HloModule")) {
    PERFSIM_RETURN_IF_ERROR(ParseHeader(&module_name, &header_attributes));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::string stack_frame_index, ParseStackFrameIndex());
  if (At(TokenKind::kEof)) return Expected("a computation");
  while (!At(TokenKind::kEof)) PERFSIM_RETURN_IF_ERROR(ParseComputation());

  Computation* entry = entry_ != nullptr ? entry_ : last_top_level_;
  if (module_name.empty()) module_name = entry->name();
  auto module = std::make_unique<Module>(module_name);
  for (auto& [key, value] : header_attributes) {
    module->AddHeaderAttribute(std::move(key), std::move(value));
  }
  module->set_stack_frame_index(std::move(stack_frame_index));
  PERFSIM_RETURN_IF_ERROR(FinishModule(module.get()));
  module->set_entry(entry);
  return module;
}

absl::Status HloParser::ParseHeader(std::string* module_name,
                                    std::vector<std::pair<std::string, std::string>>* attributes) {
  Advance();  // HloModule
  const Token name_token = tok_;
  PERFSIM_ASSIGN_OR_RETURN(*module_name, ParseNameToken("a module name"));
  // The legacy header `HloModule name:` (XLA lexes `name:` as one token).
  if (At(TokenKind::kColon) && lexer_.OffsetOf(tok_.text) == lexer_.OffsetOf(name_token.text) +
                                                                  name_token.text.size()) {
    Advance();
  }
  while (At(TokenKind::kComma)) {
    Advance();
    PERFSIM_ASSIGN_OR_RETURN(std::string key, ParseNameToken("a module attribute name"));
    PERFSIM_ASSIGN_OR_RETURN(std::string value, ParseRawValue());
    attributes->emplace_back(std::move(key), std::move(value));
  }
  return absl::OkStatus();
}

bool HloParser::AtStackFrameSection() {
  if (!AtKeyword("FileNames") && !AtKeyword("FunctionNames") && !AtKeyword("FileLocations") &&
      !AtKeyword("StackFrames")) {
    return false;
  }
  // A computation of that name would be followed by its body or signature.
  const TokenKind next = PeekToken().kind;
  return next != TokenKind::kLbrace && next != TokenKind::kLparen;
}

absl::StatusOr<std::string> HloParser::ParseStackFrameIndex() {
  // FileNames
  // 1 "model.py"
  // FileLocations
  // 1 {file_name_id=1 function_name_id=1 line=297 ...}
  if (!AtStackFrameSection()) return std::string();
  const size_t start = lexer_.OffsetOf(tok_.text);
  size_t end = start;
  while (AtStackFrameSection()) {
    end = lexer_.OffsetOf(tok_.text) + tok_.text.size();
    Advance();
    while (At(TokenKind::kNumber)) {
      RawValue raw = lexer_.ScanRawValue();
      if (!raw.ok) return ErrorAt({raw.error_line, raw.error_column}, raw.error);
      end = lexer_.position();
      Advance();
    }
  }
  return std::string(lexer_.text().substr(start, end - start));
}

absl::Status HloParser::ParseComputation() {
  const bool is_entry = AtKeyword("ENTRY");
  const Token entry_token = tok_;
  if (is_entry) Advance();
  if (!AtName()) return Expected(is_entry ? "a computation name" : "a computation");
  const Token name_token = tok_;
  std::string name(tok_.text);
  if (named_computations_.contains(name)) {
    return ErrorAt(LocationOf(name_token),
                   absl::StrCat("expected a unique computation name; got a second '", name, "'"));
  }
  Advance();
  // Optional signature `(p: f32[], q: s32[]) -> f32[]`: the parameters are declared again
  // inside, so it is checked for balance and skipped.
  if (At(TokenKind::kLparen)) {
    int parens = 0;
    do {
      if (At(TokenKind::kEof) || At(TokenKind::kError))
        return Expected("')' to close the signature");
      if (At(TokenKind::kLparen)) {
        if (++parens > kMaxDepth) return Expected("a shallower signature");
      }
      if (At(TokenKind::kRparen)) --parens;
      Advance();
    } while (parens > 0);
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "'->' after the computation's parameters"));
    PERFSIM_ASSIGN_OR_RETURN(Shape result, ParseShape());
    (void)result;
  }
  auto computation = std::make_unique<Computation>(name);
  computation->set_location(LocationOf(name_token));
  named_computations_.emplace(name, computation.get());
  PERFSIM_ASSIGN_OR_RETURN(Computation * parsed,
                           ParseInstructionList(std::move(computation), false, ""));
  if (At(TokenKind::kComma)) {
    Advance();
    if (!AtKeyword("execution_thread")) return Expected("execution_thread");
    Advance();
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'='"));
    if (!At(TokenKind::kString)) return Expected("a quoted execution thread name");
    parsed->set_execution_thread(UnescapeString(tok_.text));
    Advance();
  }
  if (is_entry) {
    if (entry_ != nullptr) {
      return ErrorAt(LocationOf(entry_token),
                     absl::StrCat("expected one ENTRY computation; got a second one, '", name,
                                  "', after '", entry_->name(), "'"));
    }
    entry_ = parsed;
  }
  last_top_level_ = parsed;
  return absl::OkStatus();
}

absl::StatusOr<Computation*> HloParser::ParseInstructionList(
    std::unique_ptr<Computation> computation, bool anonymous, std::string base_name) {
  PERFSIM_RETURN_IF_ERROR(EnterNesting());
  const std::string what =
      anonymous ? "an inline computation" : "computation '" + computation->name() + "'";
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, absl::StrCat("'{' to start ", what)));
  Scope scope{computation.get(), {}};
  Instruction* root = nullptr;
  while (!At(TokenKind::kRbrace)) {
    if (At(TokenKind::kEof)) return Expected(absl::StrCat("'}' to close ", what));
    PERFSIM_RETURN_IF_ERROR(ParseInstruction(scope, &root));
  }
  if (computation->instruction_count() == 0)
    return Expected(absl::StrCat("an instruction in ", what));
  Advance();  // }
  PERFSIM_RETURN_IF_ERROR(FinishScope(scope));
  computation->set_root(root != nullptr ? root : computation->instructions().back().get());
  Computation* raw = computation.get();
  RecordComputation(std::move(computation), anonymous, std::move(base_name));
  LeaveNesting();
  return raw;
}

void HloParser::RecordComputation(std::unique_ptr<Computation> computation, bool anonymous,
                                  std::string base_name) {
  computations_.push_back({std::move(computation), anonymous, std::move(base_name)});
}

absl::Status HloParser::ParseInstruction(Scope& scope, Instruction** root) {
  const Token first = tok_;
  const bool is_root = AtKeyword("ROOT");
  if (is_root) Advance();
  if (!AtName()) return Expected("an instruction name");
  const Token name_token = tok_;
  if (scope.computation->FindInstruction(name_token.text) != nullptr) {
    return ErrorAt(LocationOf(name_token),
                   absl::StrCat("expected a unique instruction name in ",
                                scope.computation->name().empty()
                                    ? std::string("an inline computation")
                                    : absl::StrCat("computation '", scope.computation->name(), "'"),
                                "; got a second '", name_token.text, "'"));
  }
  Advance();
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'=' after the instruction name"));
  const SourceLocation shape_location = LocationOf(tok_);
  std::optional<Shape> shape;
  if (AtShapeStart()) {
    PERFSIM_ASSIGN_OR_RETURN(shape, ParseShape());
    PERFSIM_RETURN_IF_ERROR(ValidateShapeAt(*shape, shape_location));
  }
  PERFSIM_ASSIGN_OR_RETURN(
      Instruction * added,
      ParseInstructionRhs(scope, std::string(name_token.text), LocationOf(name_token),
                          std::move(shape), shape_location, /*nested=*/false));
  if (is_root) {
    if (*root != nullptr) {
      return ErrorAt(LocationOf(first),
                     absl::StrCat("expected one ROOT instruction; got a second, '", added->name(),
                                  "', after '", (*root)->name(), "'"));
    }
    *root = added;
  }
  return absl::OkStatus();
}

absl::StatusOr<Instruction*> HloParser::ParseInstructionRhs(Scope& scope, std::string name,
                                                            SourceLocation name_location,
                                                            std::optional<Shape> shape,
                                                            SourceLocation shape_location,
                                                            bool nested) {
  const absl::string_view what = shape.has_value() ? "an opcode" : "a shape or an opcode";
  if (!At(TokenKind::kIdentifier)) return Expected(what);
  const Token opcode_token = tok_;
  const std::optional<OpcodeChoice> choice = ResolveOpcode(tok_.text);
  if (!choice.has_value()) return Expected(what);
  // As in XLA's parser, only ops whose result follows from operands and attributes may leave
  // their shape out; for the others (parameter, constant, reshape, broadcast, iota, custom-call,
  // collectives, async pairs, ...) XLA always writes it.
  if (!shape.has_value() && !ParserInfersShape(choice->opcode)) {
    return ErrorAt(LocationOf(opcode_token),
                   absl::StrCat("expected a result shape before '", opcode_token.text,
                                "', whose shape is never inferred; got none"));
  }
  Advance();

  auto instruction = std::make_unique<Instruction>(choice->opcode, std::move(name),
                                                   shape.has_value() ? *shape : Shape());
  instruction->set_location(name_location);
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLparen, "'(' after the opcode"));
  if (choice->opcode == Opcode::kParameter) {
    PERFSIM_ASSIGN_OR_RETURN(int64_t number, ParseInt64("a parameter number"));
    if (number < 0) {
      return ErrorAt(LocationOf(opcode_token),
                     absl::StrCat("expected a non-negative parameter number; got ", number));
    }
    instruction->mutable_attributes()->parameter_number = number;
  } else if (choice->opcode == Opcode::kConstant) {
    PERFSIM_ASSIGN_OR_RETURN(Literal literal, ParseLiteral(instruction->shape()));
    instruction->mutable_attributes()->literal = std::move(literal);
  } else {
    PERFSIM_RETURN_IF_ERROR(ParseOperands(scope, instruction.get()));
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "',' or ')' after an operand"));

  const bool sugar_start = choice->wrapped.has_value() && choice->opcode == Opcode::kAsyncStart;
  const Opcode arity_opcode = sugar_start ? *choice->wrapped : choice->opcode;
  const int arity = OpcodeArity(arity_opcode);
  if (arity != kVariadic && instruction->operand_count() != arity) {
    return ErrorAt(
        LocationOf(opcode_token),
        absl::StrCat("expected ", arity, arity == 1 ? " operand" : " operands", " for ",
                     OpcodeSpelling(arity_opcode), "; got ", instruction->operand_count()));
  }

  AttributeTarget target{instruction.get(), instruction.get(), &scope, {}};
  if (sugar_start) {
    PERFSIM_ASSIGN_OR_RETURN(target.instruction,
                             WrapAsyncSugar(instruction.get(), *choice->wrapped, shape_location));
  }
  // A nested instruction has no attributes: the comma after it separates operands.
  while (!nested && At(TokenKind::kComma)) {
    Advance();
    PERFSIM_RETURN_IF_ERROR(ParseAttribute(target));
  }

  Instruction* added = scope.computation->AddInstruction(std::move(instruction));
  if (!shape.has_value()) unshaped_.push_back({added, LocationOf(opcode_token)});
  return added;
}

absl::Status HloParser::ParseOperands(Scope& scope, Instruction* instruction) {
  if (At(TokenKind::kRparen)) return absl::OkStatus();
  while (true) {
    // A typed operand, `f32[10]{0} %p0`: the shape is informative only; the verifier checks
    // the operand's own shape. Before a nested instruction it is that instruction's shape.
    std::optional<Shape> written;
    const SourceLocation shape_location = LocationOf(tok_);
    if (AtShapeStart()) {
      PERFSIM_ASSIGN_OR_RETURN(written, ParseShape());
      PERFSIM_RETURN_IF_ERROR(ValidateShapeAt(*written, shape_location));
    }
    if (written.has_value() && (At(TokenKind::kComma) || At(TokenKind::kRparen))) {
      // A shape with no name, `add(f32[] %x, f32[], %y)`: XLA's module parser drops it (it
      // records an error that surfaces only if the module fails elsewhere, and goes on), so
      // the instruction has the operands that remain (a wrong count is refused as any other).
      if (!At(TokenKind::kComma)) return absl::OkStatus();
      Advance();
      continue;
    }
    if (NestedInstructionFollows()) {
      PERFSIM_ASSIGN_OR_RETURN(Instruction * nested,
                               ParseNestedInstruction(scope, std::move(written), shape_location));
      instruction->AppendOperand(nested);
    } else {
      if (!AtName()) return Expected("an operand name");
      Instruction* operand = scope.computation->FindInstruction(tok_.text);
      if (operand == nullptr) {
        scope.pending.push_back(
            {instruction, instruction->operand_count(), std::string(tok_.text), LocationOf(tok_)});
      }
      instruction->AppendOperand(operand);
      Advance();
    }
    if (!At(TokenKind::kComma)) return absl::OkStatus();
    Advance();
  }
}

bool HloParser::NestedInstructionFollows() {
  // An operand name is followed by ',' or ')'; an opcode by its operand list.
  return At(TokenKind::kIdentifier) && PeekToken().kind == TokenKind::kLparen;
}

absl::StatusOr<Instruction*> HloParser::ParseNestedInstruction(Scope& scope,
                                                               std::optional<Shape> shape,
                                                               SourceLocation shape_location) {
  const SourceLocation location = LocationOf(tok_);
  if (nested_instruction_depth_ >= kMaxNestedInstructionDepth) {
    return ErrorAt(location, absl::StrCat("expected instructions nested at most ",
                                          kMaxNestedInstructionDepth,
                                          " deep in operand lists; got deeper"));
  }
  // Named as XLA names them, `<opcode>.anon`, made unique in the computation.
  const std::optional<OpcodeChoice> choice = ResolveOpcode(tok_.text);
  const std::string base =
      absl::StrCat(choice.has_value() ? OpcodeSpelling(choice->opcode) : tok_.text, ".anon");
  int& suffix = scope.anonymous_suffix[base];
  std::string name = suffix == 0 ? base : absl::StrCat(base, ".", suffix);
  while (scope.computation->FindInstruction(name) != nullptr) {
    name = absl::StrCat(base, ".", ++suffix);
  }
  ++suffix;
  ++nested_instruction_depth_;
  absl::StatusOr<Instruction*> nested = ParseInstructionRhs(
      scope, std::move(name), location, std::move(shape), shape_location, /*nested=*/true);
  --nested_instruction_depth_;
  return nested;
}

absl::StatusOr<Instruction*> HloParser::WrapAsyncSugar(Instruction* start, Opcode wrapped,
                                                       SourceLocation shape_location) {
  // XLA's async-start shape is ((operand shapes...), result shape, scratch...): the wrapped op
  // takes the operands and gives the result.
  const Shape& shape = start->shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2 || !shape.tuple_shapes(0).IsTuple() ||
      shape.tuple_shapes(0).tuple_size() != start->operand_count()) {
    return ErrorAt(shape_location,
                   absl::StrCat("expected an async start shape ((", start->operand_count(),
                                " operand shapes), result, ...); got ", shape.ToString()));
  }
  auto computation = std::make_unique<Computation>("");
  computation->set_location(start->location());
  std::vector<Instruction*> parameters;
  for (int64_t i = 0; i < start->operand_count(); ++i) {
    auto parameter = std::make_unique<Instruction>(Opcode::kParameter, absl::StrCat("param_", i),
                                                   shape.tuple_shapes(0).tuple_shapes(i));
    parameter->mutable_attributes()->parameter_number = i;
    parameter->set_location(start->location());
    parameters.push_back(computation->AddInstruction(std::move(parameter)));
  }
  auto op = std::make_unique<Instruction>(wrapped, std::string(OpcodeSpelling(wrapped)),
                                          shape.tuple_shapes(1));
  op->set_location(start->location());
  for (Instruction* parameter : parameters) op->AppendOperand(parameter);
  Instruction* raw = computation->AddInstruction(std::move(op));
  computation->set_root(raw);
  Computation* wrapper = computation.get();
  RecordComputation(std::move(computation), true, absl::StrCat(start->name(), ".wrapped"));
  ComputationRef ref;
  ref.computation = wrapper;
  ref.location = start->location();
  pending_calls_.push_back({start, CallRole::kCalls, {ref}});
  return raw;
}

absl::Status HloParser::FinishScope(Scope& scope) {
  for (const PendingName& pending : scope.pending) {
    Instruction* found = scope.computation->FindInstruction(pending.name);
    if (found == nullptr) {
      return ErrorAt(
          pending.location,
          absl::StrCat("expected the name of an instruction in ",
                       scope.computation->name().empty()
                           ? std::string("this inline computation")
                           : absl::StrCat("computation '", scope.computation->name(), "'"),
                       "; got undefined '", pending.name, "'"));
    }
    if (pending.operand_index >= 0) {
      pending.instruction->set_operand(pending.operand_index, found);
    } else {
      pending.instruction->AddControlPredecessor(found);
    }
  }
  return absl::OkStatus();
}

absl::Status HloParser::FinishModule(Module* module) {
  // Inline computations get names made unique against every named computation.
  absl::flat_hash_set<std::string> used;
  for (const auto& [name, computation] : named_computations_) used.insert(name);
  for (ParsedComputation& parsed : computations_) {
    if (!parsed.anonymous) continue;
    std::string name = parsed.base_name;
    for (int suffix = 1; used.contains(name); ++suffix) {
      name = absl::StrCat(parsed.base_name, ".", suffix);
    }
    used.insert(name);
    parsed.computation->set_name(std::move(name));
  }
  for (ParsedComputation& parsed : computations_) {
    module->AddComputation(std::move(parsed.computation));
  }

  struct TrueFalse {
    Computation* on_true = nullptr;
    Computation* on_false = nullptr;
    SourceLocation location;
  };
  absl::flat_hash_map<Instruction*, TrueFalse> true_false;
  std::vector<Instruction*> true_false_order;
  for (const PendingCalls& pending : pending_calls_) {
    std::vector<Computation*> callees;
    for (const ComputationRef& ref : pending.refs) {
      Computation* callee = ref.computation;
      if (callee == nullptr) {
        auto it = named_computations_.find(ref.name);
        if (it == named_computations_.end()) {
          return ErrorAt(ref.location, absl::StrCat("expected the name of a computation; got "
                                                    "undefined '",
                                                    ref.name, "'"));
        }
        callee = it->second;
      }
      callees.push_back(callee);
    }
    Instruction* instruction = pending.instruction;
    switch (pending.role) {
      case CallRole::kToApply:
        instruction->set_to_apply(callees.front());
        break;
      case CallRole::kCalls: {
        std::vector<Computation*> calls = instruction->calls();
        calls.insert(calls.end(), callees.begin(), callees.end());
        instruction->set_calls(std::move(calls));
        break;
      }
      case CallRole::kCondition:
        instruction->set_condition(callees.front());
        break;
      case CallRole::kBody:
        instruction->set_body(callees.front());
        break;
      case CallRole::kSelect:
        instruction->set_select(callees.front());
        break;
      case CallRole::kScatter:
        instruction->set_scatter(callees.front());
        break;
      case CallRole::kBranches:
        instruction->set_branch_computations(std::move(callees), false);
        break;
      case CallRole::kTrueComputation:
      case CallRole::kFalseComputation: {
        auto [it, inserted] = true_false.try_emplace(instruction);
        if (inserted) true_false_order.push_back(instruction);
        (pending.role == CallRole::kTrueComputation ? it->second.on_true : it->second.on_false) =
            callees.front();
        it->second.location = pending.refs.front().location;
        break;
      }
    }
  }
  for (Instruction* instruction : true_false_order) {
    const TrueFalse& branches = true_false[instruction];
    if (branches.on_true == nullptr || branches.on_false == nullptr) {
      return ErrorAt(
          branches.location,
          absl::StrCat(instruction->name(),
                       ": expected both true_computation and "
                       "false_computation; got only ",
                       branches.on_true != nullptr ? "true_computation" : "false_computation"));
    }
    instruction->set_branch_computations({branches.on_true, branches.on_false}, true);
  }
  return InferMissingShapes();
}

// --- public entry points ---

absl::StatusOr<std::unique_ptr<Module>> ParseHloModule(absl::string_view text,
                                                       absl::string_view filename) {
  PERFSIM_RETURN_IF_ERROR(CheckNotStableHlo(text, filename));
  HloParser parser(text, filename);
  return parser.ParseModule();
}

}  // namespace perfsim
