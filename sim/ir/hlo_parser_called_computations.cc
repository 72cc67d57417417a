// Attributes that name computations (hlo_parser_internal.h): to_apply, calls, condition, body,
// select, scatter, branch_computations, true/false_computation, by name or written inline as
// `{ ROOT ... }`, resolved when the module ends; and control-predecessors, resolved when their
// computation ends. Split from hlo_parser_attributes.cc, whose ParseAttribute calls these.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {

bool HloParser::InlineComputationFollows() {
  // `{ ROOT ...` or `{ name = ...` starts an inline computation; `{a, b}` is a list of names.
  if (!At(TokenKind::kLbrace)) return false;
  const HloLexer::State saved = lexer_.state();
  const Token first = lexer_.Next();
  const Token second = lexer_.Next();
  lexer_.set_state(saved);
  if (first.kind == TokenKind::kIdentifier && first.text == "ROOT") return true;
  return (first.kind == TokenKind::kIdentifier || first.kind == TokenKind::kName) &&
         second.kind == TokenKind::kEqual;
}

absl::StatusOr<HloParser::ComputationRef> HloParser::ParseComputationRef(
    AttributeTarget& target, absl::string_view role_name) {
  ComputationRef ref;
  ref.location = LocationOf(tok_);
  if (InlineComputationFollows()) {
    auto computation = std::make_unique<Computation>("");
    computation->set_location(ref.location);
    PERFSIM_ASSIGN_OR_RETURN(
        ref.computation,
        ParseInstructionList(std::move(computation), true,
                             absl::StrCat(target.instruction->name(), ".", role_name)));
    return ref;
  }
  PERFSIM_ASSIGN_OR_RETURN(ref.name, ParseNameToken("a computation name"));
  return ref;
}

absl::Status HloParser::ParseComputationRefs(AttributeTarget& target, CallRole role, bool list) {
  absl::string_view role_name = "calls";
  switch (role) {
    case CallRole::kToApply:
      role_name = "to_apply";
      break;
    case CallRole::kCalls:
      role_name = "calls";
      break;
    case CallRole::kCondition:
      role_name = "condition";
      break;
    case CallRole::kBody:
      role_name = "body";
      break;
    case CallRole::kSelect:
      role_name = "select";
      break;
    case CallRole::kScatter:
      role_name = "scatter";
      break;
    case CallRole::kBranches:
      role_name = "branch";
      break;
    case CallRole::kTrueComputation:
      role_name = "true_computation";
      break;
    case CallRole::kFalseComputation:
      role_name = "false_computation";
      break;
  }
  PendingCalls pending{target.instruction, role, {}};
  // `calls={a, b}` is a list too; `calls={ x = ... }` an inline computation.
  if (list || (role == CallRole::kCalls && At(TokenKind::kLbrace) && !InlineComputationFollows())) {
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, "'{' to start a list of computations"));
    while (!At(TokenKind::kRbrace)) {
      PERFSIM_ASSIGN_OR_RETURN(ComputationRef ref, ParseComputationRef(target, role_name));
      pending.refs.push_back(std::move(ref));
      if (!At(TokenKind::kComma)) break;
      Advance();
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "',' or '}' in a list of computations"));
  } else {
    PERFSIM_ASSIGN_OR_RETURN(ComputationRef ref, ParseComputationRef(target, role_name));
    pending.refs.push_back(std::move(ref));
  }
  if (pending.refs.empty()) return absl::OkStatus();
  pending_calls_.push_back(std::move(pending));
  return absl::OkStatus();
}

absl::Status HloParser::ParseControlPredecessors(AttributeTarget& target) {
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, "'{' to start control-predecessors"));
  while (!At(TokenKind::kRbrace)) {
    if (!AtName()) return Expected("an instruction name");
    target.scope->pending.push_back({target.outer, -1, std::string(tok_.text), LocationOf(tok_)});
    Advance();
    if (!At(TokenKind::kComma)) break;
    Advance();
  }
  return Expect(TokenKind::kRbrace, "',' or '}' in control-predecessors");
}

}  // namespace perfsim
