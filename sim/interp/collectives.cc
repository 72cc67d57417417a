// Collectives over virtual devices: replica-group resolution, the rendezvous, and the data
// semantics of each collective (see collectives.h). Every member of a group computes its own
// result from all contributions in group order, so results never depend on thread timing.
#include "sim/interp/collectives.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/array_util.h"
#include "sim/interp/evaluator.h"
#include "sim/ir/collective_groups.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// The id space a collective's replica groups / pairs are written in, seen from one device.
struct Scope {
  int64_t my_id = 0;
  int64_t size = 0;
  // Device of id i: base + i * stride.
  int64_t base = 0;
  int64_t stride = 1;
  int64_t ToDevice(int64_t id) const { return base + id * stride; }
};

// The id space of collective-permute's source_target_pairs: partition ids with a channel_id
// (cross-partition), replica ids without (cross-replica); device numbers on a flat grid.
Scope PermuteScope(const Instruction& instruction, const DeviceGrid& grid, int64_t device) {
  Scope scope;
  if (grid.flat) {
    scope.my_id = device;
    scope.size = grid.num_devices();
    return scope;
  }
  const int64_t replica = grid.ReplicaId(device);
  const int64_t partition = grid.PartitionId(device);
  if (instruction.attributes().channel_id.has_value()) {
    scope.my_id = partition;
    scope.size = grid.num_partitions;
    scope.base = replica * grid.num_partitions;
  } else {
    scope.my_id = replica;
    scope.size = grid.num_replicas;
    scope.base = partition;
    scope.stride = grid.num_partitions;
  }
  return scope;
}

absl::StatusOr<int64_t> PositionIn(absl::Span<const int64_t> group, int64_t device) {
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == device) return static_cast<int64_t>(i);
  }
  return absl::InternalError("device missing from its own group");
}

absl::StatusOr<std::vector<Value>> ExchangeOperands(DeviceEvaluator& ev,
                                                    const Instruction& instruction,
                                                    absl::Span<const int64_t> group,
                                                    OperandValues operands) {
  std::vector<Value> mine;
  for (const Value* v : operands) mine.push_back(*v);
  const int64_t sequence = ev.NextSequence(&instruction);
  return ev.run().hub->Exchange(&instruction, sequence, group, ev.device(),
                                Value::Tuple(std::move(mine)));
}

// Copies `block` into `out` at offset `offset` along `dim` (shapes equal elsewhere).
void PlaceBlock(const Literal& block, int64_t dim, int64_t offset, Literal* out) {
  const Shape& bs = block.shape();
  const int64_t bytes = ByteWidth(bs.element_type());
  const std::vector<int64_t> out_strides = RowMajorStrides(out->shape().dimensions());
  StridedCopy(block.data().data(), 0, RowMajorStrides(bs.dimensions()), out->mutable_data().data(),
              offset * out_strides[dim], out_strides, bs.dimensions(), bytes);
}

// The block [offset, offset + size) along `dim` of `in`, as a new buffer.
absl::StatusOr<Value> TakeBlock(DeviceEvaluator& ev, const Literal& in, int64_t dim, int64_t offset,
                                int64_t size) {
  std::vector<int64_t> dims = in.shape().dimensions();
  dims[dim] = size;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           ev.Allocate(Shape::Array(in.shape().element_type(), dims)));
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  StridedCopy(in.data().data(), offset * in_strides[dim], in_strides, out->mutable_data().data(), 0,
              RowMajorStrides(dims), dims, ByteWidth(in.shape().element_type()));
  return Value::Array(std::move(out));
}

absl::StatusOr<int64_t> CollectiveDimension(const Instruction& instruction) {
  const auto& dims = instruction.attributes().dimensions;
  if (!dims.has_value() || dims->size() != 1) {
    return absl::InvalidArgumentError("expected dimensions={d}; got none");
  }
  return (*dims)[0];
}

absl::StatusOr<Value> Fold(DeviceEvaluator& ev, const Instruction& instruction,
                           const std::vector<Value>& contributions, int64_t k) {
  if (instruction.to_apply() == nullptr) return absl::InvalidArgumentError("expected to_apply");
  const Value& first = contributions[0].element(k);
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> acc, ev.Allocate(first.array_shape()));
  std::memcpy(acc->mutable_data().data(), first.data(), first.array().data().size());
  for (size_t j = 1; j < contributions.size(); ++j) {
    const Value& next = contributions[j].element(k);
    if (next.array_shape().dimensions() != first.array_shape().dimensions()) {
      return absl::InvalidArgumentError(absl::StrCat("expected every device to contribute ",
                                                     first.array_shape().ToString(false), "; got ",
                                                     next.array_shape().ToString(false)));
    }
    PERFSIM_RETURN_IF_ERROR(CombineInto(ev, *instruction.to_apply(), acc.get(), next.array()));
  }
  return Value::Array(std::move(acc));
}

Value Pack(std::vector<Value> results, const Instruction& instruction) {
  if (results.size() == 1 && !instruction.shape().IsTuple()) return std::move(results[0]);
  return Value::Tuple(std::move(results));
}

absl::StatusOr<Value> AllReduce(DeviceEvaluator& ev, const Instruction& instruction,
                                absl::Span<const int64_t> group, OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  std::vector<Value> results;
  const int64_t count = static_cast<int64_t>(operands.size());
  for (int64_t k = 0; k < count; ++k) {
    PERFSIM_ASSIGN_OR_RETURN(Value r, Fold(ev, instruction, all, k));
    results.push_back(std::move(r));
  }
  return Pack(std::move(results), instruction);
}

absl::StatusOr<Value> AllGather(DeviceEvaluator& ev, const Instruction& instruction,
                                absl::Span<const int64_t> group, OperandValues operands,
                                bool is_start) {
  PERFSIM_ASSIGN_OR_RETURN(int64_t dim, CollectiveDimension(instruction));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  const int64_t count = static_cast<int64_t>(operands.size());
  std::vector<Value> results;
  for (int64_t k = 0; k < count; ++k) {
    const Shape& in_shape = operands[k]->array_shape();
    if (dim < 0 || dim >= in_shape.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a dimension of ", in_shape.ToString(false), "; got ", dim));
    }
    std::vector<int64_t> dims = in_shape.dimensions();
    PERFSIM_ASSIGN_OR_RETURN(
        dims[dim], CheckedMul(absl::StrCat("all-gather dimension ", dim, " size * group size"),
                              dims[dim], static_cast<int64_t>(group.size())));
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                             ev.Allocate(Shape::Array(in_shape.element_type(), dims)));
    for (size_t j = 0; j < all.size(); ++j) {
      const Value& part = all[j].element(k);
      if (part.array_shape().dimensions() != in_shape.dimensions()) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected every device to contribute ", in_shape.ToString(false),
                         "; device ", group[j], " gave ", part.array_shape().ToString(false)));
      }
      PlaceBlock(part.array(), dim, static_cast<int64_t>(j) * in_shape.dimensions(dim), out.get());
    }
    results.push_back(Value::Array(std::move(out)));
  }
  if (!is_start) return Pack(std::move(results), instruction);
  // all-gather-start: (operand(s), result(s)).
  std::vector<Value> ins;
  for (const Value* v : operands) ins.push_back(*v);
  Value in_value = count == 1 ? ins[0] : Value::Tuple(std::move(ins));
  Value out_value = count == 1 ? results[0] : Value::Tuple(std::move(results));
  return Value::Tuple({std::move(in_value), std::move(out_value)});
}

absl::StatusOr<Value> ReduceScatter(DeviceEvaluator& ev, const Instruction& instruction,
                                    absl::Span<const int64_t> group, OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(int64_t dim, CollectiveDimension(instruction));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  PERFSIM_ASSIGN_OR_RETURN(int64_t position, PositionIn(group, ev.device()));
  const int64_t count = static_cast<int64_t>(operands.size());
  std::vector<Value> results;
  for (int64_t k = 0; k < count; ++k) {
    PERFSIM_ASSIGN_OR_RETURN(Value full, Fold(ev, instruction, all, k));
    const Shape& shape = full.array_shape();
    const int64_t n = static_cast<int64_t>(group.size());
    if (dim < 0 || dim >= shape.rank() || shape.dimensions(dim) % n != 0) {
      return absl::InvalidArgumentError(absl::StrCat("expected dimension ", dim, " of ",
                                                     shape.ToString(false), " to divide into ", n,
                                                     " blocks"));
    }
    const int64_t block = shape.dimensions(dim) / n;
    PERFSIM_ASSIGN_OR_RETURN(Value mine, TakeBlock(ev, full.array(), dim, position * block, block));
    results.push_back(std::move(mine));
  }
  return Pack(std::move(results), instruction);
}

absl::StatusOr<Value> AllToAll(DeviceEvaluator& ev, const Instruction& instruction,
                               absl::Span<const int64_t> group, OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  PERFSIM_ASSIGN_OR_RETURN(int64_t position, PositionIn(group, ev.device()));
  const int64_t n = static_cast<int64_t>(group.size());
  const auto& dims_attr = instruction.attributes().dimensions;
  if (!dims_attr.has_value() || dims_attr->empty()) {
    // Tuple form: operand j goes to member j; result element j comes from member j.
    if (static_cast<int64_t>(operands.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected one operand per group member (", n, "); got ", operands.size()));
    }
    std::vector<Value> results;
    for (int64_t j = 0; j < n; ++j) results.push_back(all[j].element(position));
    return Value::Tuple(std::move(results));
  }
  const int64_t dim = (*dims_attr)[0];
  const Shape& shape = operands[0]->array_shape();
  if (dim < 0 || dim >= shape.rank() || shape.dimensions(dim) % n != 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected split dimension ", dim, " of ",
                                                   shape.ToString(false), " to divide into ", n,
                                                   " blocks"));
  }
  const int64_t block = shape.dimensions(dim) / n;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           ev.Allocate(Shape::Array(shape.element_type(), shape.dimensions())));
  for (int64_t j = 0; j < n; ++j) {
    PERFSIM_ASSIGN_OR_RETURN(
        Value piece, TakeBlock(ev, all[j].element(0).array(), dim, position * block, block));
    PlaceBlock(piece.array(), dim, j * block, out.get());
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> CollectivePermute(DeviceEvaluator& ev, const Instruction& instruction,
                                        OperandValues operands, bool is_start) {
  for (const auto& [key, value] : instruction.attributes().other) {
    if (key == "slice_sizes") {
      return absl::UnimplementedError(
          "expected a collective-permute without slice_sizes (the in-place form that copies "
          "slices between buffers is not interpreted); got slice_sizes=" + value);
    }
  }
  const Scope scope = PermuteScope(instruction, *ev.run().grid, ev.device());
  std::vector<int64_t> group;
  for (int64_t id = 0; id < scope.size; ++id) group.push_back(scope.ToDevice(id));
  const auto& pairs = instruction.attributes().source_target_pairs;
  if (!pairs.has_value()) return absl::InvalidArgumentError("expected source_target_pairs");
  int64_t source = -1;
  for (const auto& [s, t] : *pairs) {
    if (s < 0 || s >= scope.size || t < 0 || t >= scope.size) {
      return absl::InvalidArgumentError(absl::StrCat("expected source-target ids in [0, ",
                                                     scope.size, "); got {", s, ",", t, "}"));
    }
    if (t != scope.my_id) continue;
    if (source >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected at most one source for target ", t, "; got ", source, " and ", s));
    }
    source = s;
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  const int64_t count = static_cast<int64_t>(operands.size());
  std::vector<Value> results;
  for (int64_t k = 0; k < count; ++k) {
    if (source >= 0) {
      results.push_back(all[source].element(k));
    } else {
      PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> zeros,
                               ev.Allocate(operands[k]->array_shape()));
      results.push_back(Value::Array(std::move(zeros)));
    }
  }
  if (!is_start) return Pack(std::move(results), instruction);
  // collective-permute-start: (operand, result, context...).
  const Shape& shape = instruction.shape();
  std::vector<Value> elements = {*operands[0], results[0]};
  for (int64_t i = 2; shape.IsTuple() && i < shape.tuple_size(); ++i) {
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> context, ev.Allocate(shape.tuple_shapes(i)));
    elements.push_back(Value::Array(std::move(context)));
  }
  return Value::Tuple(std::move(elements));
}

// A group whose size does not give the declared result: the module says one group size, the
// run another (typically replica_groups={} with no device count in the header, run on fewer
// devices than the module was written for). A usage error, not an interpreter fault.
absl::Status CheckGroupGivesDeclaredShape(const Instruction& instruction, const Value& result,
                                          size_t group_size, int64_t num_devices) {
  const Shape& declared = instruction.shape();
  const bool tuple = result.is_tuple() && declared.IsTuple();
  const int64_t count = tuple ? declared.tuple_size() : 1;
  for (int64_t k = 0; k < count; ++k) {
    const Value& got = tuple ? result.element(k) : result;
    const Shape& want = tuple ? declared.tuple_shapes(k) : declared;
    if (!got.is_array() || !want.IsArray() ||
        got.array_shape().dimensions() == want.dimensions()) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a replica group that gives the declared ", want.ToString(false), "; got ",
        got.array_shape().ToString(false), " from a group of ", group_size, " of the ",
        num_devices, " devices (run with the device count the module was written for: "
        "--devices, or replica_count/num_partitions in its header)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> CollectiveBroadcast(DeviceEvaluator& ev, const Instruction& instruction,
                                          absl::Span<const int64_t> group, OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  std::vector<Value> results;
  for (size_t k = 0; k < operands.size(); ++k) results.push_back(all[0].element(k));
  return Pack(std::move(results), instruction);
}

absl::StatusOr<Value> RaggedAllToAll(DeviceEvaluator& ev, const Instruction& instruction,
                                     absl::Span<const int64_t> group, OperandValues operands) {
  if (operands.size() != 6) {
    return absl::InvalidArgumentError(absl::StrCat("expected 6 operands; got ", operands.size()));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> all,
                           ExchangeOperands(ev, instruction, group, operands));
  PERFSIM_ASSIGN_OR_RETURN(int64_t me, PositionIn(group, ev.device()));
  const int64_t n = static_cast<int64_t>(group.size());
  const Literal& output = operands[1]->array();
  const Shape& out_shape = output.shape();
  if (out_shape.rank() < 1) return absl::InvalidArgumentError("expected an output of rank >= 1");
  const int64_t metadata_count = operands[2]->array().element_count();
  if (metadata_count % n != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected offsets and sizes with a multiple of the group size ", n,
                     " elements; got ", metadata_count));
  }
  for (int64_t k = 3; k < 6; ++k) {
    if (operands[k]->array().element_count() != metadata_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected offsets and sizes of ", metadata_count, " elements each; got operand ", k, " ",
          operands[k]->array_shape().ToString(false)));
    }
  }
  const int64_t updates = metadata_count / n;
  const int64_t out_rows = out_shape.dimensions(0);
  const int64_t out_row_bytes =
      out_rows == 0 ? 0 : static_cast<int64_t>(output.data().size()) / out_rows;

  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> result, ev.Allocate(out_shape));
  uint8_t* dst = result->mutable_data().data();
  std::memcpy(dst, output.data().data(), output.data().size());
  const Literal& my_recv_sizes = operands[5]->array();
  for (int64_t s = 0; s < n; ++s) {
    const Value& sender = all[s];
    const Literal& input = sender.element(0).array();
    const Literal& input_offsets = sender.element(2).array();
    const Literal& send_sizes = sender.element(3).array();
    const Literal& output_offsets = sender.element(4).array();
    if (input.shape().element_type() != out_shape.element_type() ||
        input.shape().rank() != out_shape.rank() ||
        !std::equal(input.shape().dimensions().begin() + 1, input.shape().dimensions().end(),
                    out_shape.dimensions().begin() + 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected device ", group[s], "'s input rows to match the output rows of ",
                       out_shape.ToString(false), "; got ", input.shape().ToString(false)));
    }
    const int64_t in_rows = input.shape().dimensions(0);
    for (int64_t u = 0; u < updates; ++u) {
      const int64_t index = me * updates + u;
      const int64_t in_offset = input_offsets.GetAsInt64(index);
      const int64_t size = send_sizes.GetAsInt64(index);
      const int64_t out_offset = output_offsets.GetAsInt64(index);
      const int64_t expected = my_recv_sizes.GetAsInt64(s * updates + u);
      const std::string which = absl::StrCat("device ", group[s], " -> device ", group[me],
                                             (updates > 1 ? absl::StrCat(" update ", u) : ""));
      if (size != expected) {
        return absl::InvalidArgumentError(
            absl::StrCat(which, ": expected recv_sizes[", s * updates + u, "] = ", expected,
                         " to equal the sender's send_sizes[", index, "]; got ", size));
      }
      // Offsets and sizes are data (s32 or s64): their sum is checked without overflow, or an
      // s64 offset near the int64 limit would wrap past the bound and copy outside the buffers.
      PERFSIM_RETURN_IF_ERROR(CheckRange(
          absl::StrCat(which, ": input rows input_offsets[", index, "] + send_sizes[", index, "]"),
          in_offset, size, in_rows));
      PERFSIM_RETURN_IF_ERROR(CheckRange(absl::StrCat(which, ": output rows output_offsets[", index,
                                                      "] + send_sizes[", index, "]"),
                                         out_offset, size, out_rows));
      std::memcpy(dst + out_offset * out_row_bytes, input.data().data() + in_offset * out_row_bytes,
                  size * out_row_bytes);
    }
  }
  return Value::Array(std::move(result));
}

}  // namespace

absl::StatusOr<DeviceGrid> MakeDeviceGrid(const Module& module, int64_t num_devices) {
  if (num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices: expected at least 1; got ", num_devices));
  }
  DeviceGrid grid;
  const int64_t replicas = module.replica_count();
  const int64_t partitions = module.num_partitions();
  if (replicas == 1 && partitions == 1) {
    grid.num_replicas = 1;
    grid.num_partitions = num_devices;
    grid.flat = true;
    return grid;
  }
  if (replicas * partitions != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "devices: expected replica_count * num_partitions = ", replicas, " * ", partitions, " = ",
        replicas * partitions, " devices, as the module header says; got ", num_devices));
  }
  grid.num_replicas = replicas;
  grid.num_partitions = partitions;
  grid.flat = false;
  return grid;
}

absl::StatusOr<std::vector<int64_t>> CollectiveGroup(const Instruction& instruction,
                                                     const DeviceGrid& grid, int64_t device) {
  const auto& replica_groups = instruction.attributes().replica_groups;
  const absl::Span<const std::vector<int64_t>> listed =
      replica_groups.has_value() ? absl::MakeConstSpan(replica_groups->groups)
                                 : absl::Span<const std::vector<int64_t>>();
  absl::StatusOr<std::vector<std::vector<int64_t>>> groups;
  if (grid.flat) {
    // No header counts: every id is a device number, whatever the mode.
    groups = ParticipatingDeviceGroups(listed, CollectiveOpGroupMode::kCrossReplica,
                                       grid.num_devices(), 1);
  } else {
    PERFSIM_ASSIGN_OR_RETURN(CollectiveOpGroupMode mode, GroupModeOf(instruction));
    groups = ParticipatingDeviceGroups(listed, mode, grid.num_replicas, grid.num_partitions);
  }
  if (!groups.ok()) return absl::InvalidArgumentError(groups.status().message());
  for (std::vector<int64_t>& group : *groups) {
    if (std::find(group.begin(), group.end(), device) != group.end()) return std::move(group);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected device ", device, " (replica ", grid.ReplicaId(device),
                   ", partition ", grid.PartitionId(device), ") in a replica group; got none"));
}

CollectiveHub::CollectiveHub(int64_t num_devices, int64_t num_threads)
    : finished_(num_devices, false),
      free_run_slots_(num_threads <= 0 ? num_devices : std::min(num_threads, num_devices)) {}

absl::StatusOr<std::vector<Value>> CollectiveHub::Exchange(const Instruction* instruction,
                                                           int64_t sequence,
                                                           absl::Span<const int64_t> group,
                                                           int64_t device, Value contribution) {
  std::unique_lock<std::mutex> lock(mutex_);
  const int64_t n = static_cast<int64_t>(group.size());
  const int64_t position = std::find(group.begin(), group.end(), device) - group.begin();
  Slot& slot = slots_[Key{instruction, sequence, group.empty() ? -1 : group[0]}];
  if (slot.contributions.empty()) {
    slot.contributions.resize(n);
    slot.arrived.assign(n, false);
  }
  slot.contributions[position] = std::move(contribution);
  slot.arrived[position] = true;
  ++slot.arrived_count;
  // Give up the run slot while waiting so another device can compute.
  ++free_run_slots_;
  changed_.notify_all();
  int64_t missing = -1;
  changed_.wait(lock, [&] {
    if (slot.arrived_count == n) return true;
    for (int64_t i = 0; i < n; ++i) {
      if (!slot.arrived[i] && finished_[group[i]]) {
        missing = group[i];
        return true;
      }
    }
    return false;
  });
  absl::StatusOr<std::vector<Value>> result;
  if (slot.arrived_count == n) {
    result = slot.contributions;
  } else {
    result = absl::AbortedError(absl::StrCat("expected devices ", absl::StrJoin(group, ","),
                                             " to reach this collective; device ", missing,
                                             " finished without reaching it"));
  }
  if (++slot.departed_count == slot.arrived_count && (slot.arrived_count == n || !result.ok())) {
    slots_.erase(Key{instruction, sequence, group.empty() ? -1 : group[0]});
  }
  changed_.wait(lock, [&] { return free_run_slots_ > 0; });
  --free_run_slots_;
  return result;
}

void CollectiveHub::DeviceFinished(int64_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_[device] = true;
  changed_.notify_all();
}

void CollectiveHub::AcquireRunSlot() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return free_run_slots_ > 0; });
  --free_run_slots_;
}

void CollectiveHub::ReleaseRunSlot() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++free_run_slots_;
  changed_.notify_all();
}

absl::StatusOr<Value> EvalReplicaId(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  return MakeScalar(ev, PrimitiveType::kU32,
                    static_cast<double>(ev.run().grid->ReplicaId(ev.device())));
}

absl::StatusOr<Value> EvalPartitionId(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands) {
  return MakeScalar(ev, PrimitiveType::kU32,
                    static_cast<double>(ev.run().grid->PartitionId(ev.device())));
}

absl::StatusOr<Value> EvalCollective(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands) {
  const Opcode op = instruction.opcode();
  if (op == Opcode::kCollectivePermute || op == Opcode::kCollectivePermuteStart) {
    return CollectivePermute(ev, instruction, operands, op == Opcode::kCollectivePermuteStart);
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> group,
                           CollectiveGroup(instruction, *ev.run().grid, ev.device()));
  for (const Value* v : operands) {
    if (!v->is_array()) return absl::InvalidArgumentError("expected array operands");
  }
  if (op == Opcode::kAllReduce || op == Opcode::kAllReduceStart) {
    return AllReduce(ev, instruction, group, operands);
  }
  if (op == Opcode::kAllGatherStart) return AllGather(ev, instruction, group, operands, true);
  if (op == Opcode::kAllGather || op == Opcode::kReduceScatter || op == Opcode::kAllToAll) {
    absl::StatusOr<Value> result =
        op == Opcode::kAllGather       ? AllGather(ev, instruction, group, operands, false)
        : op == Opcode::kReduceScatter ? ReduceScatter(ev, instruction, group, operands)
                                       : AllToAll(ev, instruction, group, operands);
    if (result.ok()) {
      PERFSIM_RETURN_IF_ERROR(CheckGroupGivesDeclaredShape(instruction, *result, group.size(),
                                                           ev.run().grid->num_devices()));
    }
    return result;
  }
  if (op == Opcode::kRaggedAllToAll) return RaggedAllToAll(ev, instruction, group, operands);
  if (op == Opcode::kCollectiveBroadcast) {
    return CollectiveBroadcast(ev, instruction, group, operands);
  }
  return absl::InternalError(absl::StrCat("not a collective: ", OpcodeSpelling(op)));
}

}  // namespace interp
}  // namespace perfsim
