// `key=value` attributes of HLO instructions: the key table and ParseAttribute, which reads
// dimension numbers, scalars and lists itself and keeps every attribute it does not model
// verbatim. The structured values it hands off live beside it: called computations in
// hlo_parser_called_computations.cc, slices, padding and windows in
// hlo_parser_window_attributes.cc, replica groups and source-target pairs in
// hlo_parser_collective_attributes.cc.
#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/annotation.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

enum class Key {
  kDimensions,
  kLhsBatchDims,
  kRhsBatchDims,
  kLhsContractingDims,
  kRhsContractingDims,
  kLhsRaggedDims,
  kRhsGroupDims,
  kOffsetDims,
  kCollapsedSliceDims,
  kStartIndexMap,
  kOperandBatchingDims,
  kStartIndicesBatchingDims,
  kIndexVectorDim,
  kSliceSizes,
  kUpdateWindowDims,
  kInsertedWindowDims,
  kScatterDimsToOperandDims,
  kInputBatchingDims,
  kScatterIndicesBatchingDims,
  kIndicesAreSorted,
  kUniqueIndices,
  kDynamicSliceSizes,
  kSlice,
  kPadding,
  kWindow,
  kDimLabels,
  kFeatureGroupCount,
  kBatchGroupCount,
  kDirection,
  kType,
  kIndex,
  kIotaDimension,
  kExponentBits,
  kMantissaBits,
  kIsStable,
  kK,
  kLargest,
  kReplicaGroups,
  kSourceTargetPairs,
  kChannelId,
  kUseGlobalDeviceIds,
  kConstrainLayout,
  kCustomCallTarget,
  kKind,
  kBackendConfig,
  kMetadata,
  kSharding,
  kFrontendAttributes,
  kToApply,
  kCalls,
  kCalledComputations,
  kCondition,
  kBody,
  kSelect,
  kScatter,
  kBranchComputations,
  kTrueComputation,
  kFalseComputation,
  kControlPredecessors,
  kFftType,
  kFftLength,
  kLeftSide,
  kLower,
  kUnitDiagonal,
  kTransposeA,
  kEpsilon,
  kFeatureIndex,
  kNumCarries,
  kIsReverse,
  kIsAssociative,
};

const absl::flat_hash_map<absl::string_view, Key>& KeyTable() {
  static const auto* const kTable = new absl::flat_hash_map<absl::string_view, Key>({
      {"dimensions", Key::kDimensions},
      {"lhs_batch_dims", Key::kLhsBatchDims},
      {"rhs_batch_dims", Key::kRhsBatchDims},
      {"lhs_contracting_dims", Key::kLhsContractingDims},
      {"rhs_contracting_dims", Key::kRhsContractingDims},
      {"lhs_ragged_dims", Key::kLhsRaggedDims},
      {"rhs_group_dims", Key::kRhsGroupDims},
      {"offset_dims", Key::kOffsetDims},
      {"collapsed_slice_dims", Key::kCollapsedSliceDims},
      {"start_index_map", Key::kStartIndexMap},
      {"operand_batching_dims", Key::kOperandBatchingDims},
      {"start_indices_batching_dims", Key::kStartIndicesBatchingDims},
      {"index_vector_dim", Key::kIndexVectorDim},
      {"slice_sizes", Key::kSliceSizes},
      {"update_window_dims", Key::kUpdateWindowDims},
      {"inserted_window_dims", Key::kInsertedWindowDims},
      {"scatter_dims_to_operand_dims", Key::kScatterDimsToOperandDims},
      {"input_batching_dims", Key::kInputBatchingDims},
      {"scatter_indices_batching_dims", Key::kScatterIndicesBatchingDims},
      {"indices_are_sorted", Key::kIndicesAreSorted},
      {"unique_indices", Key::kUniqueIndices},
      {"dynamic_slice_sizes", Key::kDynamicSliceSizes},
      {"slice", Key::kSlice},
      {"padding", Key::kPadding},
      {"window", Key::kWindow},
      {"dim_labels", Key::kDimLabels},
      {"feature_group_count", Key::kFeatureGroupCount},
      {"batch_group_count", Key::kBatchGroupCount},
      {"direction", Key::kDirection},
      {"type", Key::kType},
      {"index", Key::kIndex},
      {"iota_dimension", Key::kIotaDimension},
      {"exponent_bits", Key::kExponentBits},
      {"mantissa_bits", Key::kMantissaBits},
      {"is_stable", Key::kIsStable},
      {"k", Key::kK},
      {"largest", Key::kLargest},
      {"replica_groups", Key::kReplicaGroups},
      {"source_target_pairs", Key::kSourceTargetPairs},
      {"channel_id", Key::kChannelId},
      {"use_global_device_ids", Key::kUseGlobalDeviceIds},
      {"constrain_layout", Key::kConstrainLayout},
      {"custom_call_target", Key::kCustomCallTarget},
      {"kind", Key::kKind},
      {"backend_config", Key::kBackendConfig},
      {"metadata", Key::kMetadata},
      {"sharding", Key::kSharding},
      {"frontend_attributes", Key::kFrontendAttributes},
      {"to_apply", Key::kToApply},
      {"calls", Key::kCalls},
      {"called_computations", Key::kCalledComputations},
      {"condition", Key::kCondition},
      {"body", Key::kBody},
      {"select", Key::kSelect},
      {"scatter", Key::kScatter},
      {"branch_computations", Key::kBranchComputations},
      {"true_computation", Key::kTrueComputation},
      {"false_computation", Key::kFalseComputation},
      {"control-predecessors", Key::kControlPredecessors},
      {"fft_type", Key::kFftType},
      {"fft_length", Key::kFftLength},
      {"left_side", Key::kLeftSide},
      {"lower", Key::kLower},
      {"unit_diagonal", Key::kUnitDiagonal},
      {"transpose_a", Key::kTransposeA},
      {"epsilon", Key::kEpsilon},
      {"feature_index", Key::kFeatureIndex},
      {"num_carries", Key::kNumCarries},
      {"is_reverse", Key::kIsReverse},
      {"is_associative", Key::kIsAssociative},
  });
  return *kTable;
}

// dot and ragged-dot share the four dimension lists.
DotDimensionNumbers* DotNumbers(Instruction* instruction) {
  InstructionAttributes* a = instruction->mutable_attributes();
  if (instruction->opcode() == Opcode::kRaggedDot) {
    if (!a->ragged_dot_dimension_numbers.has_value()) a->ragged_dot_dimension_numbers.emplace();
    return &a->ragged_dot_dimension_numbers->dot;
  }
  if (!a->dot_dimension_numbers.has_value()) a->dot_dimension_numbers.emplace();
  return &*a->dot_dimension_numbers;
}

RaggedDotDimensionNumbers* RaggedNumbers(InstructionAttributes* a) {
  if (!a->ragged_dot_dimension_numbers.has_value()) a->ragged_dot_dimension_numbers.emplace();
  return &*a->ragged_dot_dimension_numbers;
}

GatherDimensionNumbers* GatherNumbers(InstructionAttributes* a) {
  if (!a->gather_dimension_numbers.has_value()) a->gather_dimension_numbers.emplace();
  return &*a->gather_dimension_numbers;
}

ScatterDimensionNumbers* ScatterNumbers(InstructionAttributes* a) {
  if (!a->scatter_dimension_numbers.has_value()) a->scatter_dimension_numbers.emplace();
  return &*a->scatter_dimension_numbers;
}

// The keys of fft, triangular-solve, cholesky, batch-norm and scan are modelled only on those
// opcodes (a custom-call may carry a `lower=` of its own; it stays verbatim).
bool LinalgKeyModelled(Key key, Opcode opcode) {
  switch (key) {
    case Key::kFftType:
    case Key::kFftLength:
      return opcode == Opcode::kFft;
    case Key::kLower:
      return opcode == Opcode::kTriangularSolve || opcode == Opcode::kCholesky;
    case Key::kLeftSide:
    case Key::kUnitDiagonal:
    case Key::kTransposeA:
      return opcode == Opcode::kTriangularSolve;
    case Key::kEpsilon:
    case Key::kFeatureIndex:
      return opcode == Opcode::kBatchNormTraining || opcode == Opcode::kBatchNormInference ||
             opcode == Opcode::kBatchNormGrad;
    case Key::kNumCarries:
    case Key::kIsReverse:
    case Key::kIsAssociative:
      return opcode == Opcode::kScan;
    default:
      return true;
  }
}

}  // namespace

absl::Status HloParser::ParseAttribute(AttributeTarget& target) {
  if (!AtName()) return Expected("an attribute name");
  const Token key_token = tok_;
  std::string key(tok_.text);
  for (const std::string& seen : target.seen_keys) {
    if (seen == key) {
      return ErrorAt(LocationOf(key_token),
                     absl::StrCat("expected attribute '", key, "' at most once; got it again"));
    }
  }
  target.seen_keys.push_back(key);
  Advance();
  const auto& table = KeyTable();
  const auto it = table.find(key);
  // Keys whose meaning depends on the opcode are modelled only where they mean something, so
  // that no key is ever printed twice (e.g. index_vector_dim from both gather and scatter
  // numbers). Elsewhere they are kept verbatim like any unknown attribute.
  const Opcode opcode = target.instruction->opcode();
  const bool opcode_specific_elsewhere =
      it != table.end() &&
      ((it->second == Key::kIndexVectorDim && opcode != Opcode::kGather &&
        opcode != Opcode::kScatter) ||
       ((it->second == Key::kLhsRaggedDims || it->second == Key::kRhsGroupDims) &&
        opcode != Opcode::kRaggedDot) ||
       // collective-permute's per-buffer slice_sizes={{1,8,128},{2,8,128}}, kept verbatim.
       (it->second == Key::kSliceSizes && opcode != Opcode::kGather));
  const bool linalg_key_elsewhere = it != table.end() && !LinalgKeyModelled(it->second, opcode);
  if (it == table.end() && key == "literal" && opcode == Opcode::kCustomCall) {
    // custom-call's `literal=s32[2]{0} {1, 2}` has a space inside: read as shape and literal.
    PERFSIM_ASSIGN_OR_RETURN(std::string value, ParseLiteralAttributeValue());
    target.instruction->mutable_attributes()->other.emplace_back(std::move(key), std::move(value));
    return absl::OkStatus();
  }
  if (it == table.end() || opcode_specific_elsewhere || linalg_key_elsewhere) {
    // An attribute perfsim does not model: kept verbatim for the printer.
    PERFSIM_ASSIGN_OR_RETURN(std::string value, ParseRawValue());
    target.instruction->mutable_attributes()->other.emplace_back(std::move(key), std::move(value));
    return absl::OkStatus();
  }
  if (it->second == Key::kBackendConfig || it->second == Key::kMetadata ||
      it->second == Key::kSharding || it->second == Key::kFrontendAttributes ||
      it->second == Key::kDimLabels) {
    const SourceLocation equal = LocationOf(tok_);
    PERFSIM_ASSIGN_OR_RETURN(std::string value, ParseRawValue());
    InstructionAttributes* a = target.instruction->mutable_attributes();
    if (it->second == Key::kFrontendAttributes) {
      // perfsim_annotation goes into the typed field (sim/ir/annotation.h).
      size_t offset = 0;
      const std::string written = value;
      absl::Status taken = TakeAnnotation(value, &a->annotation, &offset);
      if (!taken.ok()) {
        // Line and column of the value: the raw text starts right after the '='.
        SourceLocation at = {equal.line, equal.column + 1};
        for (size_t c = 0; c < offset && c < written.size(); ++c) {
          if (written[c] == '\n') {
            ++at.line;
            at.column = 1;
          } else {
            ++at.column;
          }
        }
        return ErrorAt(at, absl::StrCat(target.instruction->name(), ": ", taken.message()));
      }
    }
    if (it->second == Key::kBackendConfig) {
      a->backend_config = std::move(value);
    } else if (it->second == Key::kMetadata) {
      a->metadata = std::move(value);
    } else if (it->second == Key::kSharding) {
      a->sharding = std::move(value);
    } else if (it->second == Key::kFrontendAttributes) {
      a->frontend_attributes = std::move(value);
    } else {
      a->dim_labels = std::move(value);
    }
    return absl::OkStatus();
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("'=' after '", key, "'")));
  Instruction* instruction = target.instruction;
  InstructionAttributes* a = instruction->mutable_attributes();
  const std::string list_name = absl::StrCat("'", key, "'");
  switch (it->second) {
    case Key::kDimensions: {
      PERFSIM_ASSIGN_OR_RETURN(a->dimensions, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kLhsBatchDims: {
      PERFSIM_ASSIGN_OR_RETURN(DotNumbers(instruction)->lhs_batch_dimensions,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kRhsBatchDims: {
      PERFSIM_ASSIGN_OR_RETURN(DotNumbers(instruction)->rhs_batch_dimensions,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kLhsContractingDims: {
      PERFSIM_ASSIGN_OR_RETURN(DotNumbers(instruction)->lhs_contracting_dimensions,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kRhsContractingDims: {
      PERFSIM_ASSIGN_OR_RETURN(DotNumbers(instruction)->rhs_contracting_dimensions,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kLhsRaggedDims: {
      PERFSIM_ASSIGN_OR_RETURN(RaggedNumbers(a)->lhs_ragged_dimensions, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kRhsGroupDims: {
      PERFSIM_ASSIGN_OR_RETURN(RaggedNumbers(a)->rhs_group_dimensions, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kOffsetDims: {
      PERFSIM_ASSIGN_OR_RETURN(GatherNumbers(a)->offset_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kCollapsedSliceDims: {
      PERFSIM_ASSIGN_OR_RETURN(GatherNumbers(a)->collapsed_slice_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kStartIndexMap: {
      PERFSIM_ASSIGN_OR_RETURN(GatherNumbers(a)->start_index_map, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kOperandBatchingDims: {
      PERFSIM_ASSIGN_OR_RETURN(GatherNumbers(a)->operand_batching_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kStartIndicesBatchingDims: {
      PERFSIM_ASSIGN_OR_RETURN(GatherNumbers(a)->start_indices_batching_dims,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kIndexVectorDim: {
      PERFSIM_ASSIGN_OR_RETURN(int64_t value, ParseInt64("an integer"));
      if (instruction->opcode() == Opcode::kScatter) {
        ScatterNumbers(a)->index_vector_dim = value;
      } else {  // gather; other opcodes keep it verbatim above
        GatherNumbers(a)->index_vector_dim = value;
      }
      return absl::OkStatus();
    }
    case Key::kSliceSizes: {
      PERFSIM_ASSIGN_OR_RETURN(a->gather_slice_sizes, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kUpdateWindowDims: {
      PERFSIM_ASSIGN_OR_RETURN(ScatterNumbers(a)->update_window_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kInsertedWindowDims: {
      PERFSIM_ASSIGN_OR_RETURN(ScatterNumbers(a)->inserted_window_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kScatterDimsToOperandDims: {
      PERFSIM_ASSIGN_OR_RETURN(ScatterNumbers(a)->scatter_dims_to_operand_dims,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kInputBatchingDims: {
      PERFSIM_ASSIGN_OR_RETURN(ScatterNumbers(a)->input_batching_dims, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kScatterIndicesBatchingDims: {
      PERFSIM_ASSIGN_OR_RETURN(ScatterNumbers(a)->scatter_indices_batching_dims,
                               ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kIndicesAreSorted: {
      PERFSIM_ASSIGN_OR_RETURN(a->indices_are_sorted, ParseBool());
      return absl::OkStatus();
    }
    case Key::kUniqueIndices: {
      PERFSIM_ASSIGN_OR_RETURN(a->unique_indices, ParseBool());
      return absl::OkStatus();
    }
    case Key::kDynamicSliceSizes: {
      PERFSIM_ASSIGN_OR_RETURN(a->dynamic_slice_sizes, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kSlice:
      return ParseSlice(a);
    case Key::kPadding:
      return ParsePadding(a);
    case Key::kWindow:
      return ParseWindow(a);
    case Key::kFeatureGroupCount: {
      PERFSIM_ASSIGN_OR_RETURN(a->feature_group_count, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kBatchGroupCount: {
      PERFSIM_ASSIGN_OR_RETURN(a->batch_group_count, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kDirection: {
      const std::optional<ComparisonDirection> direction =
          At(TokenKind::kIdentifier) ? ParseComparisonDirection(tok_.text) : std::nullopt;
      if (!direction.has_value())
        return Expected("a comparison direction (EQ, NE, GE, GT, LE, LT)");
      a->comparison_direction = direction;
      Advance();
      return absl::OkStatus();
    }
    case Key::kType: {
      PERFSIM_ASSIGN_OR_RETURN(a->comparison_type, ParseNameToken("a comparison type"));
      return absl::OkStatus();
    }
    case Key::kIndex: {
      PERFSIM_ASSIGN_OR_RETURN(a->tuple_index, ParseInt64("a tuple index"));
      return absl::OkStatus();
    }
    case Key::kIotaDimension: {
      PERFSIM_ASSIGN_OR_RETURN(a->iota_dimension, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kExponentBits: {
      PERFSIM_ASSIGN_OR_RETURN(a->exponent_bits, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kMantissaBits: {
      PERFSIM_ASSIGN_OR_RETURN(a->mantissa_bits, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kIsStable: {
      PERFSIM_ASSIGN_OR_RETURN(a->is_stable, ParseBool());
      return absl::OkStatus();
    }
    case Key::kK: {
      PERFSIM_ASSIGN_OR_RETURN(a->k, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kLargest: {
      PERFSIM_ASSIGN_OR_RETURN(a->largest, ParseBool());
      return absl::OkStatus();
    }
    case Key::kReplicaGroups:
      return ParseReplicaGroups(a);
    case Key::kSourceTargetPairs:
      return ParseSourceTargetPairs(a);
    case Key::kChannelId: {
      PERFSIM_ASSIGN_OR_RETURN(a->channel_id, ParseInt64("a channel id"));
      return absl::OkStatus();
    }
    case Key::kUseGlobalDeviceIds: {
      PERFSIM_ASSIGN_OR_RETURN(a->use_global_device_ids, ParseBool());
      return absl::OkStatus();
    }
    case Key::kConstrainLayout: {
      PERFSIM_ASSIGN_OR_RETURN(a->constrain_layout, ParseBool());
      return absl::OkStatus();
    }
    case Key::kCustomCallTarget: {
      if (!At(TokenKind::kString)) return Expected("a quoted custom-call target");
      a->custom_call_target = UnescapeString(tok_.text);
      Advance();
      return absl::OkStatus();
    }
    case Key::kKind: {
      const std::optional<FusionKind> kind =
          At(TokenKind::kIdentifier) ? ParseFusionKind(tok_.text) : std::nullopt;
      if (!kind.has_value()) return Expected("a fusion kind (kLoop, kInput, kOutput, kCustom)");
      a->fusion_kind = kind;
      Advance();
      return absl::OkStatus();
    }
    case Key::kToApply:
      return ParseComputationRefs(target, CallRole::kToApply, false);
    case Key::kCalls:
      return ParseComputationRefs(target, CallRole::kCalls, false);
    case Key::kCalledComputations:
      return ParseComputationRefs(target, CallRole::kCalls, true);
    case Key::kCondition:
      return ParseComputationRefs(target, CallRole::kCondition, false);
    case Key::kBody:
      return ParseComputationRefs(target, CallRole::kBody, false);
    case Key::kSelect:
      return ParseComputationRefs(target, CallRole::kSelect, false);
    case Key::kScatter:
      return ParseComputationRefs(target, CallRole::kScatter, false);
    case Key::kBranchComputations:
      return ParseComputationRefs(target, CallRole::kBranches, true);
    case Key::kTrueComputation:
      return ParseComputationRefs(target, CallRole::kTrueComputation, false);
    case Key::kFalseComputation:
      return ParseComputationRefs(target, CallRole::kFalseComputation, false);
    case Key::kControlPredecessors:
      return ParseControlPredecessors(target);
    case Key::kFftType: {
      const std::optional<FftType> type =
          At(TokenKind::kIdentifier) ? ParseFftType(tok_.text) : std::nullopt;
      if (!type.has_value()) return Expected("an fft type (FFT, IFFT, RFFT, IRFFT)");
      a->fft_type = type;
      Advance();
      return absl::OkStatus();
    }
    case Key::kFftLength: {
      PERFSIM_ASSIGN_OR_RETURN(a->fft_length, ParseIntList(list_name));
      return absl::OkStatus();
    }
    case Key::kLeftSide: {
      PERFSIM_ASSIGN_OR_RETURN(a->left_side, ParseBool());
      return absl::OkStatus();
    }
    case Key::kLower: {
      PERFSIM_ASSIGN_OR_RETURN(a->lower, ParseBool());
      return absl::OkStatus();
    }
    case Key::kUnitDiagonal: {
      PERFSIM_ASSIGN_OR_RETURN(a->unit_diagonal, ParseBool());
      return absl::OkStatus();
    }
    case Key::kTransposeA: {
      const std::optional<TriangularTranspose> transpose =
          At(TokenKind::kIdentifier) ? ParseTriangularTranspose(tok_.text) : std::nullopt;
      if (!transpose.has_value()) return Expected("NO_TRANSPOSE, TRANSPOSE or ADJOINT");
      a->transpose_a = transpose;
      Advance();
      return absl::OkStatus();
    }
    case Key::kEpsilon: {
      float epsilon = 0;
      if (!At(TokenKind::kNumber) || !absl::SimpleAtof(tok_.text, &epsilon)) {
        return Expected("a floating-point epsilon");
      }
      a->epsilon = epsilon;
      Advance();
      return absl::OkStatus();
    }
    case Key::kFeatureIndex: {
      PERFSIM_ASSIGN_OR_RETURN(a->feature_index, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kNumCarries: {
      PERFSIM_ASSIGN_OR_RETURN(a->num_carries, ParseInt64("an integer"));
      return absl::OkStatus();
    }
    case Key::kIsReverse: {
      PERFSIM_ASSIGN_OR_RETURN(a->is_reverse, ParseBool());
      return absl::OkStatus();
    }
    case Key::kIsAssociative: {
      PERFSIM_ASSIGN_OR_RETURN(a->is_associative, ParseBool());
      return absl::OkStatus();
    }
    case Key::kBackendConfig:
    case Key::kMetadata:
    case Key::kSharding:
    case Key::kFrontendAttributes:
    case Key::kDimLabels:
      break;  // handled above, before the '='
  }
  return absl::OkStatus();
}

}  // namespace perfsim
