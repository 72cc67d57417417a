// The xla.sdy.* custom-calls of lowered shard_map programs (sdy_custom_calls.h). The Shardy
// attributes are read from the frontend_attributes text with a small scanner: the module keeps
// them verbatim, and only meshes, per-value dimension shardings and manual axes matter here.
#include "sim/interp/sdy_custom_calls.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/array_util.h"
#include "sim/interp/collectives.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// ---- scanning Shardy attribute text ----

struct Cursor {
  absl::string_view text;
  size_t p = 0;

  void Space() {
    while (p < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[p]))) ++p;
  }
  bool Eat(char c) {
    Space();
    if (p < text.size() && text[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool Eat(absl::string_view word) {
    Space();
    if (text.substr(p, word.size()) != word) return false;
    p += word.size();
    return true;
  }
  bool AtEnd() {
    Space();
    return p >= text.size();
  }
  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    const size_t end = text.find('"', p);
    if (end == absl::string_view::npos) return std::nullopt;
    std::string out(text.substr(p, end - p));
    p = end + 1;
    return out;
  }
  std::optional<int64_t> Int() {
    Space();
    const size_t start = p;
    while (p < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[p]))) ++p;
    int64_t v = 0;
    if (p == start || p - start > 15 || !absl::SimpleAtoi(text.substr(start, p - start), &v)) {
      return std::nullopt;
    }
    return v;
  }
  std::string Ident() {
    Space();
    const size_t start = p;
    while (p < text.size() && (absl::ascii_isalnum(static_cast<unsigned char>(text[p])) ||
                               text[p] == '_' || text[p] == '.' || text[p] == '$')) {
      ++p;
    }
    return std::string(text.substr(start, p - start));
  }
};

absl::Status Malformed(absl::string_view what, absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat("expected ", what, "; got '", text, "'"));
}

// The value of `key` in a frontend_attributes text `{k1="v1",k2={...}}`: a quoted value
// unescaped, or a braced one verbatim.
std::optional<std::string> FrontendAttribute(absl::string_view attributes, absl::string_view key) {
  const std::string needle = absl::StrCat(key, "=");
  size_t at = 0;
  while ((at = attributes.find(needle, at)) != absl::string_view::npos) {
    const bool starts = at == 0 || attributes[at - 1] == '{' || attributes[at - 1] == ',' ||
                        absl::ascii_isspace(static_cast<unsigned char>(attributes[at - 1]));
    at += needle.size();
    if (starts) break;
  }
  if (at == absl::string_view::npos || at >= attributes.size()) return std::nullopt;
  std::string out;
  if (attributes[at] == '"') {
    for (size_t i = at + 1; i < attributes.size() && attributes[i] != '"'; ++i) {
      if (attributes[i] == '\\' && i + 1 < attributes.size()) ++i;
      out.push_back(attributes[i]);
    }
    return out;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < attributes.size(); ++i) {
    const char c = attributes[i];
    if (in_string) {
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (depth == 0) break;
      if (--depth == 0) {
        out.push_back(c);
        break;
      }
    } else if (c == ',' && depth == 0) {
      break;
    }
    out.push_back(c);
  }
  return out;
}

struct SdyMesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> device_ids;  // empty: iota
  int64_t devices = 1;
};

// `{mesh = #sdy.mesh<["x"=2, "y"=2]>, other = #sdy.mesh<[...], device_ids=[...]>}`: mesh `name`.
absl::StatusOr<SdyMesh> FindMesh(absl::string_view meshes, absl::string_view name) {
  Cursor c{meshes};
  if (!c.Eat('{')) return Malformed("xla.sdy.meshes={name = #sdy.mesh<[...]>, ...}", meshes);
  while (!c.AtEnd()) {
    const std::string mesh_name = c.Ident();
    if (mesh_name.empty() || !c.Eat('=') || !c.Eat("#sdy.mesh<") || !c.Eat('[')) break;
    SdyMesh mesh;
    while (!c.Eat(']')) {
      std::optional<std::string> axis = c.String();
      std::optional<int64_t> size;
      if (!axis.has_value() || !c.Eat('=') || !(size = c.Int()).has_value() || *size <= 0 ||
          mesh.devices > (int64_t{1} << 24) / *size) {
        return Malformed("mesh axes \"name\"=size (at most 2^24 devices)", meshes);
      }
      mesh.names.push_back(*axis);
      mesh.sizes.push_back(*size);
      mesh.devices *= *size;
      c.Eat(',');
    }
    if (c.Eat(',') && c.Eat("device_ids") && c.Eat('=') && c.Eat('[')) {
      while (!c.Eat(']')) {
        std::optional<int64_t> id = c.Int();
        if (!id.has_value()) return Malformed("mesh device_ids=[...]", meshes);
        mesh.device_ids.push_back(*id);
        c.Eat(',');
      }
    }
    if (!c.Eat('>')) return Malformed("'>' closing #sdy.mesh<...>", meshes);
    if (mesh_name == name) {
      if (!mesh.device_ids.empty() &&
          static_cast<int64_t>(mesh.device_ids.size()) != mesh.devices) {
        return Malformed(absl::StrCat(mesh.devices, " mesh device_ids"), meshes);
      }
      return mesh;
    }
    c.Eat(',');
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected mesh @", name, " in the module's xla.sdy.meshes; got ", meshes));
}

// One axis (or sub-axis "x":(pre)size) of a dimension sharding.
struct AxisPart {
  int64_t axis = 0;
  int64_t pre_size = 0;  // 0: the whole axis
  int64_t size = 0;
};

struct ValueSharding {
  std::string mesh;
  std::vector<std::vector<std::pair<std::string, AxisPart>>> dims;  // axis name, part
};

// `#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, ...]>`.
absl::StatusOr<std::vector<ValueSharding>> ParseShardingPerValue(absl::string_view text) {
  Cursor c{text};
  if (!c.Eat("#sdy.sharding_per_value<") || !c.Eat('[')) {
    return Malformed("#sdy.sharding_per_value<[...]>", text);
  }
  std::vector<ValueSharding> values;
  while (!c.Eat(']')) {
    ValueSharding v;
    if (!c.Eat('<') || !c.Eat('@')) return Malformed("<@mesh, [dimension shardings]>", text);
    v.mesh = c.Ident();
    if (!c.Eat(',') || !c.Eat('[')) return Malformed("<@mesh, [dimension shardings]>", text);
    while (!c.Eat(']')) {
      if (!c.Eat('{')) return Malformed("a dimension sharding {\"axis\", ...}", text);
      std::vector<std::pair<std::string, AxisPart>>& dim = v.dims.emplace_back();
      while (!c.Eat('}')) {
        if (c.Eat('?')) {
          c.Eat(',');
          continue;
        }
        std::optional<std::string> axis = c.String();
        if (!axis.has_value()) return Malformed("a mesh axis name in a dimension sharding", text);
        AxisPart part;
        if (c.Eat(':')) {
          std::optional<int64_t> pre;
          std::optional<int64_t> size;
          if (!c.Eat('(') || !(pre = c.Int()).has_value() || !c.Eat(')') ||
              !(size = c.Int()).has_value() || *pre < 1 || *size < 1) {
            return Malformed("a sub-axis \"x\":(pre)size", text);
          }
          part.pre_size = *pre;
          part.size = *size;
        }
        dim.emplace_back(*axis, part);
        c.Eat(',');
      }
      if (c.Eat('p')) c.Int();  // priority
      c.Eat(',');
    }
    // replicated={...}, unreduced={...}: axes a value is not split over; nothing to do.
    int depth = 0;
    while (c.p < text.size() && !(depth == 0 && text[c.p] == '>')) {
      if (text[c.p] == '{') ++depth;
      if (text[c.p] == '}') --depth;
      ++c.p;
    }
    if (!c.Eat('>')) return Malformed("'>' closing a value sharding", text);
    values.push_back(std::move(v));
    c.Eat(',');
  }
  return values;
}

// `#sdy<manual_axes{"x", "y"}>`.
absl::StatusOr<std::vector<std::string>> ParseManualAxes(absl::string_view text) {
  Cursor c{text};
  if (!c.Eat("#sdy<manual_axes{")) return Malformed("#sdy<manual_axes{...}>", text);
  std::vector<std::string> axes;
  while (!c.Eat('}')) {
    std::optional<std::string> axis = c.String();
    if (!axis.has_value()) return Malformed("manual axis names", text);
    axes.push_back(*axis);
    c.Eat(',');
  }
  return axes;
}

// ---- where each device's block lies ----

// Per value: for each tensor dimension, the number of blocks and this device's block.
struct Blocks {
  std::vector<int64_t> count;
  std::vector<int64_t> index;
  std::vector<bool> axis_used;  // mesh axes the value is split over
};

struct SdyCall {
  SdyMesh mesh;
  std::vector<ValueSharding> values;
  std::vector<bool> manual;  // per mesh axis
};

absl::StatusOr<SdyCall> ReadCall(DeviceEvaluator& ev, const Instruction& instruction,
                                 absl::string_view shardings_key, int64_t value_count) {
  const std::string& attributes = instruction.attributes().frontend_attributes;
  const std::optional<std::string> shardings = FrontendAttribute(attributes, shardings_key);
  const std::optional<std::string> manual = FrontendAttribute(attributes, "xla.sdy.manual_axes");
  if (!shardings.has_value() || !manual.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected frontend_attributes with ", shardings_key, " and xla.sdy.manual_axes; got ",
        attributes.empty() ? "none" : attributes));
  }
  SdyCall call;
  PERFSIM_ASSIGN_OR_RETURN(call.values, ParseShardingPerValue(*shardings));
  if (static_cast<int64_t>(call.values.size()) != value_count) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", value_count, " shardings in ",
                                                   shardings_key, "; got ",
                                                   call.values.size()));
  }
  const std::string* header = ev.run().module->FindHeaderAttribute("frontend_attributes");
  const std::optional<std::string> meshes =
      header == nullptr ? std::nullopt : FrontendAttribute(*header, "xla.sdy.meshes");
  if (!meshes.has_value()) {
    return absl::InvalidArgumentError(
        "expected the module header's frontend_attributes to hold xla.sdy.meshes; got none");
  }
  const std::string mesh_name = call.values.empty() ? "mesh" : call.values[0].mesh;
  for (const ValueSharding& v : call.values) {
    if (v.mesh != mesh_name) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected every value on one mesh @", mesh_name, "; got @", v.mesh));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(call.mesh, FindMesh(*meshes, mesh_name));
  const DeviceGrid& grid = *ev.run().grid;
  if (!grid.flat || grid.num_devices() != call.mesh.devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected --devices ", call.mesh.devices, " (the devices of mesh @",
                     mesh_name, ") and no replica_count/num_partitions; got ", grid.num_devices(),
                     " devices"));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<std::string> manual_axes, ParseManualAxes(*manual));
  call.manual.assign(call.mesh.names.size(), false);
  for (const std::string& axis : manual_axes) {
    auto it = std::find(call.mesh.names.begin(), call.mesh.names.end(), axis);
    if (it == call.mesh.names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected manual axes of mesh @", mesh_name, "; got \"", axis, "\""));
    }
    call.manual[it - call.mesh.names.begin()] = true;
  }
  return call;
}

// Mesh coordinates of `device` (row-major over the axes of the mesh's device order).
absl::StatusOr<std::vector<int64_t>> Coordinates(const SdyMesh& mesh, int64_t device) {
  int64_t index = device;
  if (!mesh.device_ids.empty()) {
    auto it = std::find(mesh.device_ids.begin(), mesh.device_ids.end(), device);
    if (it == mesh.device_ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected device ", device, " in the mesh's device_ids; got none"));
    }
    index = it - mesh.device_ids.begin();
  }
  std::vector<int64_t> coords(mesh.sizes.size());
  for (int64_t a = static_cast<int64_t>(mesh.sizes.size()) - 1; a >= 0; --a) {
    coords[a] = index % mesh.sizes[a];
    index /= mesh.sizes[a];
  }
  return coords;
}

absl::StatusOr<Blocks> BlocksOf(const SdyCall& call, const ValueSharding& value, int64_t rank,
                                const std::vector<int64_t>& coords) {
  Blocks blocks;
  blocks.count.assign(rank, 1);
  blocks.index.assign(rank, 0);
  blocks.axis_used.assign(call.mesh.names.size(), false);
  if (static_cast<int64_t>(value.dims.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat("expected a sharding of ", rank,
                                                   " dimensions; got ", value.dims.size()));
  }
  for (int64_t d = 0; d < rank; ++d) {
    for (const auto& [name, part] : value.dims[d]) {
      auto it = std::find(call.mesh.names.begin(), call.mesh.names.end(), name);
      if (it == call.mesh.names.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected axes of mesh @", value.mesh, "; got \"", name, "\""));
      }
      const int64_t a = it - call.mesh.names.begin();
      if (!call.manual[a]) continue;  // an automatic axis: the body sees the dimension whole
      const int64_t full = call.mesh.sizes[a];
      int64_t size = full;
      int64_t coord = coords[a];
      if (part.size != 0) {
        if (full % (part.pre_size * part.size) != 0) {
          return absl::InvalidArgumentError(absl::StrCat("expected a sub-axis of \"", name,
                                                         "\" (size ", full, "); got (",
                                                         part.pre_size, ")", part.size));
        }
        size = part.size;
        coord = (coord / (full / (part.pre_size * part.size))) % part.size;
      }
      blocks.axis_used[a] = true;
      blocks.index[d] = blocks.index[d] * size + coord;
      blocks.count[d] *= size;
    }
  }
  return blocks;
}

// The i-th element of the custom-call's result shape (the shape itself when not a tuple).
const Shape& ResultElement(const Instruction& instruction, int64_t i) {
  const Shape& shape = instruction.shape();
  return shape.IsTuple() ? shape.tuple_shapes(i) : shape;
}

absl::Status CheckDeclared(const Instruction& instruction, int64_t i,
                           const std::vector<int64_t>& dims) {
  const Shape& declared = ResultElement(instruction, i);
  if (!declared.IsArray() || declared.dimensions() != dims) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected result ", i, " to have dimensions [", absl::StrJoin(dims, ","),
        "] as its sharding gives; got ", declared.ToString(false)));
  }
  return absl::OkStatus();
}

Value Pack(std::vector<Value> results, const Instruction& instruction) {
  if (!instruction.shape().IsTuple() && results.size() == 1) return std::move(results[0]);
  return Value::Tuple(std::move(results));
}

}  // namespace

absl::StatusOr<Value> SdyGlobalToLocalShape(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands) {
  const int64_t n = static_cast<int64_t>(operands.size());
  PERFSIM_ASSIGN_OR_RETURN(SdyCall call,
                           ReadCall(ev, instruction, "xla.sdy.in_shardings", n));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> coords, Coordinates(call.mesh, ev.device()));
  std::vector<Value> results;
  for (int64_t k = 0; k < n; ++k) {
    const Literal& global = operands[k]->array();
    const std::vector<int64_t>& global_dims = global.shape().dimensions();
    const int64_t rank = static_cast<int64_t>(global_dims.size());
    PERFSIM_ASSIGN_OR_RETURN(Blocks blocks, BlocksOf(call, call.values[k], rank, coords));
    std::vector<int64_t> local = global_dims;
    int64_t offset = 0;
    const std::vector<int64_t> strides = RowMajorStrides(global_dims);
    for (int64_t d = 0; d < rank; ++d) {
      if (global_dims[d] % blocks.count[d] != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "expected dimension ", d, " of operand ", k, " ", global.shape().ToString(false),
            " to divide into ", blocks.count[d], " blocks"));
      }
      local[d] = global_dims[d] / blocks.count[d];
      offset += blocks.index[d] * local[d] * strides[d];
    }
    PERFSIM_RETURN_IF_ERROR(CheckDeclared(instruction, k, local));
    const PrimitiveType type = global.shape().element_type();
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(Shape::Array(type, local)));
    StridedCopy(global.data().data(), offset, strides, out->mutable_data().data(), 0,
                RowMajorStrides(local), local, ByteWidth(type));
    results.push_back(Value::Array(std::move(out)));
  }
  return Pack(std::move(results), instruction);
}

absl::StatusOr<Value> SdyLocalToGlobalShape(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands) {
  const int64_t n = static_cast<int64_t>(operands.size());
  PERFSIM_ASSIGN_OR_RETURN(SdyCall call,
                           ReadCall(ev, instruction, "xla.sdy.out_shardings", n));
  std::vector<std::vector<int64_t>> coords(call.mesh.devices);
  std::vector<int64_t> everyone(call.mesh.devices);
  for (int64_t d = 0; d < call.mesh.devices; ++d) {
    everyone[d] = d;
    PERFSIM_ASSIGN_OR_RETURN(coords[d], Coordinates(call.mesh, d));
  }
  std::vector<Value> mine;
  for (const Value* v : operands) mine.push_back(*v);
  PERFSIM_ASSIGN_OR_RETURN(
      std::vector<Value> all,
      ev.run().hub->Exchange(&instruction, ev.NextSequence(&instruction), everyone, ev.device(),
                             Value::Tuple(std::move(mine))));
  const std::vector<int64_t>& my_coords = coords[ev.device()];
  std::vector<Value> results;
  for (int64_t k = 0; k < n; ++k) {
    const Shape& local_shape = operands[k]->array_shape();
    const std::vector<int64_t>& local = local_shape.dimensions();
    const int64_t rank = static_cast<int64_t>(local.size());
    PERFSIM_ASSIGN_OR_RETURN(Blocks mine_blocks, BlocksOf(call, call.values[k], rank, my_coords));
    std::vector<int64_t> global = local;
    for (int64_t d = 0; d < rank; ++d) global[d] = local[d] * mine_blocks.count[d];
    PERFSIM_RETURN_IF_ERROR(CheckDeclared(instruction, k, global));
    const PrimitiveType type = local_shape.element_type();
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(Shape::Array(type, global)));
    const std::vector<int64_t> strides = RowMajorStrides(global);
    for (int64_t s = 0; s < call.mesh.devices; ++s) {
      bool same_replica = true;
      for (size_t a = 0; a < my_coords.size(); ++a) {
        if (!mine_blocks.axis_used[a] && coords[s][a] != my_coords[a]) same_replica = false;
      }
      if (!same_replica) continue;
      PERFSIM_ASSIGN_OR_RETURN(Blocks theirs, BlocksOf(call, call.values[k], rank, coords[s]));
      const Value& block = all[s].element(k);
      if (block.array_shape().dimensions() != local) {
        return absl::InvalidArgumentError(absl::StrCat(
            "expected every device to give ", local_shape.ToString(false), "; device ", s,
            " gave ", block.array_shape().ToString(false)));
      }
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d) offset += theirs.index[d] * local[d] * strides[d];
      StridedCopy(block.data(), 0, RowMajorStrides(local), out->mutable_data().data(), offset,
                  strides, local, ByteWidth(type));
    }
    results.push_back(Value::Array(std::move(out)));
  }
  return Pack(std::move(results), instruction);
}

absl::StatusOr<Value> SdyFuncResultSharding(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands) {
  if (operands.size() != 1 || !instruction.shape().IsArray() ||
      operands[0]->array_shape().dimensions() != instruction.shape().dimensions()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected one operand of the result's dimensions ", instruction.shape().ToString(false),
        "; got ", operands.size(), " operands"));
  }
  return *operands[0];
}

}  // namespace interp
}  // namespace perfsim
