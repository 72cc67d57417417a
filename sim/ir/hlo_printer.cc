#include "sim/ir/hlo_printer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/hlo_lexer.h"

namespace perfsim {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNameChar(char c) {
  return IsLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Names print bare when the lexer reads them back as one identifier that is not a keyword;
// otherwise (e.g. "0", "ROOT") with XLA's '%' prefix.
std::string NameText(absl::string_view name) {
  bool bare = !name.empty() && (IsLetter(name[0]) || name[0] == '_') && name != "ROOT" &&
              name != "ENTRY" && name != "HloModule";
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
  if (!a.custom_call_target.empty()) {
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

}  // namespace

std::string PrintInstruction(const Instruction& instruction) {
  std::string out;
  const Computation* parent = instruction.parent();
  if (parent != nullptr && parent->root() == &instruction) out.append("ROOT ");
  absl::StrAppend(&out, NameText(instruction.name()), " = ", instruction.shape().ToString(), " ",
                  OpcodeSpelling(instruction.opcode()), "(");
  const InstructionAttributes& a = instruction.attributes();
  if (instruction.opcode() == Opcode::kParameter) {
    absl::StrAppend(&out, a.parameter_number.value_or(0));
  } else if (instruction.opcode() == Opcode::kConstant) {
    if (a.literal.has_value()) absl::StrAppend(&out, a.literal->ToString());
  } else {
    std::vector<std::string> operands;
    operands.reserve(instruction.operands().size());
    for (const Instruction* operand : instruction.operands()) {
      operands.push_back(operand == nullptr ? "%null" : NameText(operand->name()));
    }
    absl::StrAppend(&out, absl::StrJoin(operands, ", "));
  }
  out.append(")");

  AttributeWriter w(&out);
  AppendStructuredAttributes(instruction, w);
  for (const auto& [key, value] : a.other) w.Add(key, value);
  AppendCalledComputations(instruction, w);
  if (!instruction.control_predecessors().empty()) {
    std::vector<std::string> names;
    for (const Instruction* p : instruction.control_predecessors()) {
      names.push_back(p == nullptr ? "%null" : NameText(p->name()));
    }
    w.Add("control-predecessors", absl::StrCat("{", absl::StrJoin(names, ", "), "}"));
  }
  if (!a.sharding.empty()) w.Add("sharding", a.sharding);
  if (!a.frontend_attributes.empty()) w.Add("frontend_attributes", a.frontend_attributes);
  if (!a.metadata.empty()) w.Add("metadata", a.metadata);
  if (a.backend_config.has_value()) w.Add("backend_config", *a.backend_config);
  return out;
}

std::string PrintComputation(const Computation& computation) {
  std::string out;
  if (computation.is_entry()) out.append("ENTRY ");
  absl::StrAppend(&out, NameText(computation.name()), " {\n");
  for (const Instruction* instruction : PrintOrder(computation)) {
    absl::StrAppend(&out, "  ", PrintInstruction(*instruction), "\n");
  }
  out.append("}");
  if (!computation.execution_thread().empty()) {
    absl::StrAppend(&out, ", execution_thread=", EscapeString(computation.execution_thread()));
  }
  out.append("\n");
  return out;
}

std::string PrintModule(const Module& module) {
  std::string out = absl::StrCat("HloModule ", NameText(module.name()));
  for (const auto& [key, value] : module.header_attributes()) {
    absl::StrAppend(&out, ", ", key, "=", value);
  }
  out.append("\n");
  if (!module.stack_frame_index().empty())
    absl::StrAppend(&out, "\n", module.stack_frame_index(), "\n");
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
    absl::StrAppend(&out, "\n", PrintComputation(*computation));
  }
  return out;
}

}  // namespace perfsim
