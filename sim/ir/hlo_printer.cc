#include "sim/ir/hlo_printer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/annotation.h"
#include "sim/ir/collective_groups.h"
#include "sim/ir/hlo_lexer.h"
#include "sim/ir/literal.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNameChar(char c) {
  return IsLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Words XLA's lexer (xla/hlo/parser/hlo_lexer.cc) reads as something other than a name when
// they stand bare: its keywords, and the primitive type names, which are reserved words
// (f32, pred, token; also spellings perfsim has no type for, e.g. f4e2m1fn, s1: any letter of
// s/u/f/c followed by a digit is taken as one).
bool IsReservedWord(absl::string_view name) {
  static constexpr absl::string_view kKeywords[] = {
      "true",        "false",      "inf",           "nan",       "HloModule",
      "ENTRY",       "ROOT",       "FileLocations", "FileNames", "FunctionNames",
      "StackFrames", "maximal",    "replicated",    "manual",    "last_tile_dim_replicate",
      "shard_as",    "shard_like", "unknown",       "unreduced", "pred",
      "token",       "opaque",     "bf16"};
  for (absl::string_view keyword : kKeywords) {
    if (name == keyword) return true;
  }
  if (ParsePrimitiveType(name).has_value()) return true;
  return name.size() >= 2 &&
         (name[0] == 's' || name[0] == 'u' || name[0] == 'f' || name[0] == 'c') && name[1] >= '0' &&
         name[1] <= '9';
}

// Names print bare when the lexer reads them back as one identifier that is not a reserved
// word; otherwise (e.g. "0", "ROOT", "replicated") with XLA's '%' prefix.
std::string NameText(absl::string_view name) {
  bool bare = !name.empty() && (IsLetter(name[0]) || name[0] == '_') && !IsReservedWord(name);
  for (size_t i = 0; bare && i < name.size(); ++i) {
    bare = IsNameChar(name[i]) && !(name[i] == '-' && i + 1 < name.size() && name[i + 1] == '>');
  }
  return bare ? std::string(name) : absl::StrCat("%", name);
}

std::string ComputationName(const Computation* computation) {
  return computation == nullptr ? "%null" : NameText(computation->name());
}

std::string IntList(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

class AttributeWriter {
 public:
  explicit AttributeWriter(std::string* out) : out_(out) {}
  void Add(absl::string_view key, absl::string_view value) {
    absl::StrAppend(out_, ", ", key, "=", value);
  }
  void AddList(absl::string_view key, const std::vector<int64_t>& values) {
    Add(key, IntList(values));
  }
  void AddListIfNotEmpty(absl::string_view key, const std::vector<int64_t>& values) {
    if (!values.empty()) AddList(key, values);
  }

 private:
  std::string* out_;
};

std::string WindowText(const std::vector<WindowDimension>& window) {
  if (window.empty()) return "{}";
  auto joined = [&](auto field) {
    std::vector<std::string> parts;
    for (const WindowDimension& d : window) parts.push_back(field(d));
    return absl::StrJoin(parts, "x");
  };
  auto any = [&](auto predicate) { return std::any_of(window.begin(), window.end(), predicate); };
  std::string out =
      absl::StrCat("{size=", joined([](const WindowDimension& d) { return absl::StrCat(d.size); }));
  if (any([](const WindowDimension& d) { return d.stride != 1; })) {
    absl::StrAppend(
        &out, " stride=", joined([](const WindowDimension& d) { return absl::StrCat(d.stride); }));
  }
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; })) {
    absl::StrAppend(&out, " pad=", joined([](const WindowDimension& d) {
      return absl::StrCat(d.padding_low, "_", d.padding_high);
    }));
  }
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; })) {
    absl::StrAppend(&out, " lhs_dilate=", joined([](const WindowDimension& d) {
      return absl::StrCat(d.base_dilation);
    }));
  }
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; })) {
    absl::StrAppend(&out, " rhs_dilate=", joined([](const WindowDimension& d) {
      return absl::StrCat(d.window_dilation);
    }));
  }
  if (any([](const WindowDimension& d) { return d.window_reversal; })) {
    absl::StrAppend(&out, " rhs_reversal=", joined([](const WindowDimension& d) {
      return std::string(d.window_reversal ? "1" : "0");
    }));
  }
  absl::StrAppend(&out, "}");
  return out;
}

std::string PaddingText(const std::vector<PaddingDimension>& padding) {
  const bool interior = std::any_of(padding.begin(), padding.end(),
                                    [](const PaddingDimension& d) { return d.interior != 0; });
  std::vector<std::string> parts;
  for (const PaddingDimension& d : padding) {
    parts.push_back(interior ? absl::StrCat(d.low, "_", d.high, "_", d.interior)
                             : absl::StrCat(d.low, "_", d.high));
  }
  return absl::StrJoin(parts, "x");
}

std::string SliceText(const std::vector<SliceDimension>& slice) {
  std::vector<std::string> parts;
  for (const SliceDimension& d : slice) {
    parts.push_back(d.stride == 1 ? absl::StrCat("[", d.start, ":", d.limit, "]")
                                  : absl::StrCat("[", d.start, ":", d.limit, ":", d.stride, "]"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

std::string ReplicaGroupsText(const ReplicaGroups& groups) {
  if (groups.mesh_axes.has_value()) return MeshAxesReplicaGroupsText(*groups.mesh_axes);
  if (groups.iota.has_value()) {
    const ReplicaGroups::Iota& iota = *groups.iota;
    std::string out = absl::StrCat("[", iota.num_groups, ",", iota.group_size, "]<=[",
                                   absl::StrJoin(iota.reshape_dimensions, ","), "]");
    if (!iota.transpose_permutation.empty()) {
      absl::StrAppend(&out, "T(", absl::StrJoin(iota.transpose_permutation, ","), ")");
    }
    return out;
  }
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& group : groups.groups) parts.push_back(IntList(group));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

void AppendDotNumbers(const DotDimensionNumbers& dot, AttributeWriter& w) {
  w.AddListIfNotEmpty("lhs_batch_dims", dot.lhs_batch_dimensions);
  w.AddList("lhs_contracting_dims", dot.lhs_contracting_dimensions);
  w.AddListIfNotEmpty("rhs_batch_dims", dot.rhs_batch_dimensions);
  w.AddList("rhs_contracting_dims", dot.rhs_contracting_dimensions);
}

// Opcode-specific attributes, in the order XLA prints them where it has one.
void AppendStructuredAttributes(const Instruction& instruction, AttributeWriter& w) {
  const InstructionAttributes& a = instruction.attributes();
  if (a.dimensions.has_value()) w.AddList("dimensions", *a.dimensions);
  // One set of dot dimension numbers prints, so no key appears twice: ragged-dot's own, or the
  // plain ones.
  const bool print_ragged =
      a.ragged_dot_dimension_numbers.has_value() &&
      (instruction.opcode() == Opcode::kRaggedDot || !a.dot_dimension_numbers.has_value());
  if (print_ragged) {
    const RaggedDotDimensionNumbers& ragged = *a.ragged_dot_dimension_numbers;
    AppendDotNumbers(ragged.dot, w);
    w.AddListIfNotEmpty("lhs_ragged_dims", ragged.lhs_ragged_dimensions);
    w.AddListIfNotEmpty("rhs_group_dims", ragged.rhs_group_dimensions);
  } else if (a.dot_dimension_numbers.has_value()) {
    AppendDotNumbers(*a.dot_dimension_numbers, w);
  }
  if (a.gather_dimension_numbers.has_value()) {
    const GatherDimensionNumbers& g = *a.gather_dimension_numbers;
    w.AddList("offset_dims", g.offset_dims);
    w.AddList("collapsed_slice_dims", g.collapsed_slice_dims);
    w.AddList("start_index_map", g.start_index_map);
    w.AddListIfNotEmpty("operand_batching_dims", g.operand_batching_dims);
    w.AddListIfNotEmpty("start_indices_batching_dims", g.start_indices_batching_dims);
    // Only gather models index_vector_dim with these numbers (the parser keeps it verbatim
    // elsewhere), so it prints once.
    if (instruction.opcode() == Opcode::kGather) {
      w.Add("index_vector_dim", absl::StrCat(g.index_vector_dim));
    }
  }
  if (instruction.opcode() == Opcode::kGather || !a.gather_slice_sizes.empty()) {
    w.AddList("slice_sizes", a.gather_slice_sizes);
  }
  if (a.scatter_dimension_numbers.has_value()) {
    const ScatterDimensionNumbers& s = *a.scatter_dimension_numbers;
    w.AddList("update_window_dims", s.update_window_dims);
    w.AddList("inserted_window_dims", s.inserted_window_dims);
    w.AddList("scatter_dims_to_operand_dims", s.scatter_dims_to_operand_dims);
    w.AddListIfNotEmpty("input_batching_dims", s.input_batching_dims);
    w.AddListIfNotEmpty("scatter_indices_batching_dims", s.scatter_indices_batching_dims);
    if (instruction.opcode() == Opcode::kScatter) {
      w.Add("index_vector_dim", absl::StrCat(s.index_vector_dim));
    }
  }
  if (a.indices_are_sorted.has_value()) {
    w.Add("indices_are_sorted", *a.indices_are_sorted ? "true" : "false");
  }
  if (a.unique_indices.has_value()) w.Add("unique_indices", *a.unique_indices ? "true" : "false");
  if (a.dynamic_slice_sizes.has_value()) w.AddList("dynamic_slice_sizes", *a.dynamic_slice_sizes);
  if (a.slice.has_value()) w.Add("slice", SliceText(*a.slice));
  if (a.padding.has_value() && !a.padding->empty()) w.Add("padding", PaddingText(*a.padding));
  if (a.window.has_value()) w.Add("window", WindowText(*a.window));
  if (!a.dim_labels.empty()) w.Add("dim_labels", a.dim_labels);
  if (a.feature_group_count != 1) w.Add("feature_group_count", absl::StrCat(a.feature_group_count));
  if (a.batch_group_count != 1) w.Add("batch_group_count", absl::StrCat(a.batch_group_count));
  if (a.comparison_direction.has_value()) {
    w.Add("direction", ComparisonDirectionName(*a.comparison_direction));
  }
  if (!a.comparison_type.empty()) w.Add("type", a.comparison_type);
  if (a.tuple_index.has_value()) w.Add("index", absl::StrCat(*a.tuple_index));
  if (a.iota_dimension.has_value()) w.Add("iota_dimension", absl::StrCat(*a.iota_dimension));
  if (a.exponent_bits.has_value()) w.Add("exponent_bits", absl::StrCat(*a.exponent_bits));
  if (a.mantissa_bits.has_value()) w.Add("mantissa_bits", absl::StrCat(*a.mantissa_bits));
  if (a.is_stable) w.Add("is_stable", "true");
  if (a.k.has_value()) w.Add("k", absl::StrCat(*a.k));
  if (instruction.opcode() == Opcode::kTopK || !a.largest) {
    w.Add("largest", a.largest ? "true" : "false");
  }
  if (a.replica_groups.has_value()) w.Add("replica_groups", ReplicaGroupsText(*a.replica_groups));
  if (a.source_target_pairs.has_value()) {
    std::vector<std::string> pairs;
    for (const auto& [source, target] : *a.source_target_pairs) {
      pairs.push_back(absl::StrCat("{", source, ",", target, "}"));
    }
    w.Add("source_target_pairs", absl::StrCat("{", absl::StrJoin(pairs, ","), "}"));
  }
  if (a.channel_id.has_value()) w.Add("channel_id", absl::StrCat(*a.channel_id));
  if (a.use_global_device_ids) w.Add("use_global_device_ids", "true");
  if (a.constrain_layout) w.Add("constrain_layout", "true");
  // XLA requires the target on a custom-call, even an empty one.
  if (instruction.opcode() == Opcode::kCustomCall || !a.custom_call_target.empty()) {
    w.Add("custom_call_target", EscapeString(a.custom_call_target));
  }
  if (a.fusion_kind.has_value()) w.Add("kind", FusionKindName(*a.fusion_kind));
  // fft, triangular-solve, cholesky, batch-norm-*, scan: as written (XLA reads each one).
  const auto bool_text = [](bool value) { return value ? "true" : "false"; };
  if (a.fft_type.has_value()) w.Add("fft_type", FftTypeName(*a.fft_type));
  if (a.fft_length.has_value()) w.AddList("fft_length", *a.fft_length);
  if (a.left_side.has_value()) w.Add("left_side", bool_text(*a.left_side));
  if (a.lower.has_value()) w.Add("lower", bool_text(*a.lower));
  if (a.unit_diagonal.has_value()) w.Add("unit_diagonal", bool_text(*a.unit_diagonal));
  if (a.transpose_a.has_value()) w.Add("transpose_a", TriangularTransposeName(*a.transpose_a));
  if (a.epsilon.has_value()) w.Add("epsilon", absl::StrCat(*a.epsilon));
  if (a.feature_index.has_value()) w.Add("feature_index", absl::StrCat(*a.feature_index));
  if (a.num_carries.has_value()) w.Add("num_carries", absl::StrCat(*a.num_carries));
  if (a.is_reverse.has_value()) w.Add("is_reverse", bool_text(*a.is_reverse));
  if (a.is_associative.has_value()) w.Add("is_associative", bool_text(*a.is_associative));
}

std::string ComputationList(const std::vector<Computation*>& computations) {
  std::vector<std::string> names;
  for (const Computation* c : computations) names.push_back(ComputationName(c));
  return absl::StrCat("{", absl::StrJoin(names, ", "), "}");
}

void AppendCalledComputations(const Instruction& instruction, AttributeWriter& w) {
  if (instruction.to_apply() != nullptr) w.Add("to_apply", ComputationName(instruction.to_apply()));
  const std::vector<Computation*>& calls = instruction.calls();
  if (!calls.empty()) {
    if (instruction.opcode() == Opcode::kCustomCall) {
      w.Add("called_computations", ComputationList(calls));
    } else if (calls.size() == 1) {
      w.Add("calls", ComputationName(calls.front()));
    } else {
      w.Add("calls", ComputationList(calls));
    }
  }
  if (instruction.condition() != nullptr) {
    w.Add("condition", ComputationName(instruction.condition()));
  }
  if (instruction.body() != nullptr) w.Add("body", ComputationName(instruction.body()));
  if (instruction.select() != nullptr) w.Add("select", ComputationName(instruction.select()));
  if (instruction.scatter() != nullptr) w.Add("scatter", ComputationName(instruction.scatter()));
  const std::vector<Computation*>& branches = instruction.branch_computations();
  if (!branches.empty()) {
    if (instruction.branches_are_true_false() && branches.size() == 2) {
      w.Add("true_computation", ComputationName(branches[0]));
      w.Add("false_computation", ComputationName(branches[1]));
    } else {
      w.Add("branch_computations", ComputationList(branches));
    }
  }
}

// Instructions in an order where operands come first (text order when it already is one), so
// that XLA, which wants definitions before uses, reads the output.
std::vector<const Instruction*> PrintOrder(const Computation& computation) {
  std::vector<const Instruction*> order;
  absl::StatusOr<std::vector<Instruction*>> post_order = computation.PostOrder();
  if (post_order.ok()) {
    order.assign(post_order->begin(), post_order->end());
  } else {
    for (const auto& instruction : computation.instructions()) order.push_back(instruction.get());
  }
  return order;
}

// How many instructions of a module call each computation, in any role.
using CallCounts = absl::flat_hash_map<const Computation*, int>;

CallCounts CountCalls(const Module* module) {
  CallCounts counts;
  if (module == nullptr) return counts;
  for (const auto& computation : module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      for (const Computation* called : instruction->called_computations()) ++counts[called];
    }
  }
  return counts;
}

// Everything an instruction prints after its operand list, except control-predecessors.
std::string AttributesText(const Instruction& instruction) {
  std::string out;
  AttributeWriter w(&out);
  const InstructionAttributes& a = instruction.attributes();
  AppendStructuredAttributes(instruction, w);
  for (const auto& [key, value] : a.other) w.Add(key, value);
  AppendCalledComputations(instruction, w);
  return out;
}

std::string CommonAttributesText(const Instruction& instruction) {
  std::string out;
  AttributeWriter w(&out);
  const InstructionAttributes& a = instruction.attributes();
  if (!a.sharding.empty()) w.Add("sharding", a.sharding);
  const std::string frontend = FrontendAttributesText(a);
  if (!frontend.empty()) w.Add("frontend_attributes", frontend);
  if (!a.metadata.empty()) w.Add("metadata", a.metadata);
  if (a.backend_config.has_value()) w.Add("backend_config", *a.backend_config);
  return out;
}

std::string ControlPredecessorsText(const Instruction& instruction) {
  if (instruction.control_predecessors().empty()) return "";
  std::vector<std::string> names;
  for (const Instruction* p : instruction.control_predecessors()) {
    names.push_back(p == nullptr ? "%null" : NameText(p->name()));
  }
  return absl::StrCat(", control-predecessors={", absl::StrJoin(names, ", "), "}");
}

bool SameShape(const Shape& a, const Shape& b) { return a.ToString() == b.ToString(); }

// The op an async-start wraps when the start prints in XLA's sugared form, `ag =
// ((f32[8]), f32[32]) all-to-all-start(x), dimensions={0}` for `async-start(x), calls=w` with
// `w { p = f32[8] parameter(0)  ROOT a = f32[32] all-to-all(p), dimensions={0} }`; nullptr when
// it prints as async-start. The parser reads `foo-start` back into the same wrapper, with the
// attributes written on the line on the wrapped op (so they print on the line again), and XLA
// reads them as it reads its own sugar: async_execution_thread, backend_config,
// frontend_attributes, ... where it put them when it printed the module. The wrapper must be
// what the parser would build: called by this start alone, parameters in order straight into
// one op whose shapes are the start's ((operands), result), no thread of its own, and the start
// must carry no attribute of its own (it would move onto the wrapped op). `foo-start` must not
// be an op of its own (all-gather-start is one).
const Instruction* SugarWrappedOp(const Instruction& start, const CallCounts& calls) {
  if (start.opcode() != Opcode::kAsyncStart || start.calls().size() != 1) return nullptr;
  const Computation* wrapper = start.calls().front();
  if (wrapper == nullptr || wrapper->is_entry() || !wrapper->execution_thread().empty()) {
    return nullptr;
  }
  const auto count = calls.find(wrapper);
  if (count == calls.end() || count->second != 1) return nullptr;
  const Instruction* op = wrapper->root();
  if (op == nullptr || op->opcode() == Opcode::kParameter || op->opcode() == Opcode::kConstant ||
      ParseOpcode(absl::StrCat(OpcodeSpelling(op->opcode()), "-start")).has_value() ||
      !op->control_predecessors().empty() || op->operand_count() != start.operand_count() ||
      wrapper->instruction_count() != op->operand_count() + 1 ||
      wrapper->parameter_count() != op->operand_count()) {
    return nullptr;
  }
  const Shape& shape = start.shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2 || !shape.tuple_shapes(0).IsTuple() ||
      shape.tuple_shapes(0).tuple_size() != op->operand_count() ||
      !SameShape(op->shape(), shape.tuple_shapes(1))) {
    return nullptr;
  }
  for (int64_t i = 0; i < op->operand_count(); ++i) {
    if (op->operand(i) == nullptr || op->operand(i) != wrapper->parameter(i) ||
        !SameShape(op->operand(i)->shape(), shape.tuple_shapes(0).tuple_shapes(i))) {
      return nullptr;
    }
  }
  // The start's one attribute is its `calls=`: any other would move onto the wrapped op.
  std::string structured;
  AttributeWriter w(&structured);
  AppendStructuredAttributes(start, w);
  if (!structured.empty() || !start.attributes().other.empty() ||
      start.called_computations().size() != 1 || !CommonAttributesText(start).empty()) {
    return nullptr;
  }
  return op;
}

// The opcode text: `foo-start` for a sugared async-start, `foo-update` / `foo-done` for the
// async-update / async-done of one (unless that spelling is an op of its own, e.g. send-done),
// the opcode's spelling otherwise.
std::string OpcodeText(const Instruction& instruction, const CallCounts& calls) {
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kAsyncStart) {
    if (const Instruction* op = SugarWrappedOp(instruction, calls)) {
      return absl::StrCat(OpcodeSpelling(op->opcode()), "-start");
    }
  }
  if ((opcode == Opcode::kAsyncUpdate || opcode == Opcode::kAsyncDone) &&
      instruction.calls().empty()) {
    const Instruction* start = instruction.operand_count() == 1 ? instruction.operand(0) : nullptr;
    // Back along the updates to the start; a cycle (which the verifier rejects) stops after as
    // many steps as the computation has instructions.
    const int64_t limit =
        instruction.parent() == nullptr ? 0 : instruction.parent()->instruction_count();
    for (int64_t steps = 0; start != nullptr && start->opcode() == Opcode::kAsyncUpdate &&
                            start->operand_count() == 1 && steps < limit;
         ++steps) {
      start = start->operand(0);
    }
    const Instruction* op = start == nullptr ? nullptr : SugarWrappedOp(*start, calls);
    if (op != nullptr) {
      std::string sugar = absl::StrCat(OpcodeSpelling(op->opcode()),
                                       opcode == Opcode::kAsyncUpdate ? "-update" : "-done");
      if (!ParseOpcode(sugar).has_value()) return sugar;
    }
  }
  return std::string(OpcodeSpelling(opcode));
}

// A constant's literal text. An array whose elements after the first are all zero prints as
// its first element alone, `f32[4096,4096] constant(1)`: XLA's parser reads one scalar for an
// array that way (element 0 set, the rest zero), and so does perfsim's, up to 2^24 elements
// (HloParser::kMaxScalarFilledElements). Only arrays of more than 1024 elements take the short
// form, where the long one is mostly zeros (64 MiB of text for XLA's own f32[4096,4096]
// constant(0)); smaller ones print every element, which reads plainer.
std::string LiteralText(const Literal& literal) {
  constexpr int64_t kShortFormMinElements = 1024;
  constexpr int64_t kShortFormMaxElements = int64_t{1} << 24;
  const Shape& shape = literal.shape();
  const int64_t count = literal.element_count();
  if (!shape.IsArray() || literal.elided() || IsComplex(shape.element_type()) ||
      count <= kShortFormMinElements || count > kShortFormMaxElements) {
    return literal.ToString();
  }
  const absl::Span<const uint8_t> data = literal.data();
  const size_t first = static_cast<size_t>(ByteWidth(shape.element_type()));
  if (data.size() != static_cast<size_t>(count) * first ||
      !std::all_of(data.begin() + first, data.end(), [](uint8_t b) { return b == 0; })) {
    return literal.ToString();
  }
  return FormatLiteralElement(shape.element_type(), literal.GetBits(0));
}

std::string InstructionText(const Instruction& instruction, const CallCounts& calls) {
  std::string out;
  const Computation* parent = instruction.parent();
  if (parent != nullptr && parent->root() == &instruction) out.append("ROOT ");
  absl::StrAppend(&out, NameText(instruction.name()), " = ", instruction.shape().ToString(), " ",
                  OpcodeText(instruction, calls), "(");
  const InstructionAttributes& a = instruction.attributes();
  if (instruction.opcode() == Opcode::kParameter) {
    absl::StrAppend(&out, a.parameter_number.value_or(0));
  } else if (instruction.opcode() == Opcode::kConstant) {
    if (a.literal.has_value()) absl::StrAppend(&out, LiteralText(*a.literal));
  } else {
    std::vector<std::string> operands;
    operands.reserve(instruction.operands().size());
    for (const Instruction* operand : instruction.operands()) {
      operands.push_back(operand == nullptr ? "%null" : NameText(operand->name()));
    }
    absl::StrAppend(&out, absl::StrJoin(operands, ", "));
  }
  out.append(")");
  // A sugared async-start prints the wrapped op's attributes and its own control predecessors.
  const Instruction* wrapped = SugarWrappedOp(instruction, calls);
  const Instruction& attributes = wrapped != nullptr ? *wrapped : instruction;
  absl::StrAppend(&out, AttributesText(attributes), ControlPredecessorsText(instruction),
                  CommonAttributesText(attributes));
  return out;
}

std::string ComputationText(const Computation& computation, const CallCounts& calls) {
  std::string out;
  if (computation.is_entry()) out.append("ENTRY ");
  absl::StrAppend(&out, NameText(computation.name()), " {\n");
  for (const Instruction* instruction : PrintOrder(computation)) {
    absl::StrAppend(&out, "  ", InstructionText(*instruction, calls), "\n");
  }
  out.append("}");
  if (!computation.execution_thread().empty()) {
    absl::StrAppend(&out, ", execution_thread=", EscapeString(computation.execution_thread()));
  }
  out.append("\n");
  return out;
}

const Module* ModuleOf(const Computation* computation) {
  return computation == nullptr ? nullptr : computation->parent();
}

}  // namespace

std::string PrintInstruction(const Instruction& instruction) {
  // Only an async-start needs the module's call counts (to know whether it prints sugared).
  const CallCounts calls = instruction.opcode() == Opcode::kAsyncStart ||
                                   instruction.opcode() == Opcode::kAsyncUpdate ||
                                   instruction.opcode() == Opcode::kAsyncDone
                               ? CountCalls(ModuleOf(instruction.parent()))
                               : CallCounts();
  return InstructionText(instruction, calls);
}

std::string PrintComputation(const Computation& computation) {
  return ComputationText(computation, CountCalls(ModuleOf(&computation)));
}

std::string PrintModule(const Module& module) {
  std::string out = absl::StrCat("HloModule ", NameText(module.name()));
  for (const auto& [key, value] : module.header_attributes()) {
    absl::StrAppend(&out, ", ", key, "=", value);
  }
  out.append("\n");
  if (!module.stack_frame_index().empty())
    absl::StrAppend(&out, "\n", module.stack_frame_index(), "\n");
  const CallCounts calls = CountCalls(&module);
  // The wrappers of sugared async-starts print inside their start's line.
  absl::flat_hash_set<const Computation*> sugared;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (SugarWrappedOp(*instruction, calls) != nullptr) {
        sugared.insert(instruction->calls().front());
      }
    }
  }
  // Callees before callers; a recursive call graph (which the verifier rejects) prints in text
  // order.
  std::vector<const Computation*> order;
  absl::StatusOr<std::vector<Computation*>> post_order = module.ComputationPostOrder();
  if (post_order.ok()) {
    order.assign(post_order->begin(), post_order->end());
  } else {
    for (const auto& computation : module.computations()) order.push_back(computation.get());
  }
  for (const Computation* computation : order) {
    if (sugared.contains(computation)) continue;
    absl::StrAppend(&out, "\n", ComputationText(*computation, calls));
  }
  return out;
}

}  // namespace perfsim
