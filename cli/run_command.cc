// `perfsim run FILE.hlo`: interprets a module on CPU and summarises its outputs.
//
// The summary is meant to be compared across runs, machines and with NumPy, so every figure in
// it is defined bit-exactly (see the checksum in kRunUsage), the memory need included: it comes
// from a static liveness pass over the program, not from watching the threads run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "sim/interp/compute_plan.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/interp/output_stats.h"
#include "sim/interp/random_inputs.h"
#include "sim/ir/attributes.h"
#include "sim/ir/instruction.h"
#include "sim/util/file_io.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kRunUsage[] =
    R"(usage: perfsim run FILE.hlo [--devices N] [--seed S] [--inputs A.npy,B.npy,...]
                   [--save-outputs DIR] [--memory-budget BYTES] [--threads N]
                   [--max-loop-iterations N] [--max-flops N] [--format table|json]

Runs the entry computation of an HLO module in perfsim's CPU reference interpreter and prints,
for every output on every device: its index, shape, checksum, NaN and Inf counts and first
values. FILE may be '-' for standard input.

  --devices N        virtual devices running the SPMD program (collectives exchange real
                     data). Default: replica_count * num_partitions from the module header;
                     when the header gives neither (XLA's dumps usually do not), the fewest
                     devices that every replica group and source-target pair of the module's
                     collectives fits in; 1 for a module without collectives. At most
                     4096: a module with collectives runs each device on a thread of its
                     own (a device waits for its group inside its own evaluation); a thread
                     the system refuses ends the run with exit 2, naming the device.
  --seed S           seeds the random inputs and the module's `rng` ops. Default 0.
  --inputs LIST      one .npy per entry parameter, comma-separated, in parameter order,
                     instead of random inputs. Each file must hold exactly the parameter's
                     dtype and dimensions (bf16 and f8 may be stored as their bit patterns,
                     <u2 / |u1, as tests/testdata/hlo/jax does). '{d}' in a path is replaced
                     by the device number, giving each device its own file
                     (x_{d}.npy -> x_0.npy, x_1.npy, ...); a path without '{d}' is given to
                     every device. Paths cannot contain commas.
  --save-outputs DIR writes output i of device d to DIR/out_<d>_<i>.npy (DIR is created).
                     Tuple outputs are flattened depth-first, as the indices below are.
  --memory-budget B  the most bytes of buffers alive at once, all devices together; a run
                     needing more is refused before it starts (inputs are not even made).
                     Plain bytes or with a unit: 512MiB, 8GiB, 1.5GB (KiB MiB GiB TiB are
                     powers of 1024, KB MB GB TB of 1000). Default 4GiB; at most the
                     machine's physical memory.
  --threads N        devices computing at once; 0 (default) is the machine's cores. A module
                     without collectives runs on this many threads whatever --devices is.
                     Outputs do not depend on it.
  --max-loop-iterations N
                     the most while-loop iterations a device runs, all loops together,
                     nested ones included; a run that needs more ends with exit 2 naming
                     the loop (a loop that never ends is bad input, not a hang). Default
                     1000000.
  --max-flops N      the most FLOP of matrix ops (dot, ragged-dot, convolution, fft,
                     cholesky, triangular-solve, the perfsim grouped-matmul calls; 2 per
                     multiply-add, as `perfsim cost` counts them) a run may need, all devices
                     together: 1e12 or 1000000000000. A run needing more is refused before
                     it starts, counting each while loop's known or counted trip count (a
                     loop the count cannot see stops when a device passes its equal share).
                     Default 5e10, one to three seconds of the interpreter's dot kernel: a
                     module written for an accelerator (11 TFLOP of matmuls) is refused in
                     milliseconds instead of running for hours.
  --format json      machine-readable output (same fields; RunReport in proto/report.proto).

Random inputs (without --inputs), independent per device and parameter, from a SplitMix64
stream of (seed, device, parameter):
  floating point   uniform in [-1, 1), rounded to nearest even into the type
  complex          real and imaginary parts each uniform in [-1, 1)
  pred             true with probability 1/2
  integers         uniform in [0, 8), except values the module uses as indices:
                   ragged-dot / perfsim.gmm / perfsim.tgmm / perfsim.fused_ffn group sizes:
                     every row of the ragged dimension joins a uniformly drawn group (the
                     sizes sum to the rows);
                   dynamic-slice / dynamic-update-slice starts: uniform over valid starts;
                   gather / scatter indices: uniform in [0, smallest indexed dimension);
                   ragged-all-to-all offsets and sizes: 0 (no rows move).

Checksum: FNV-1a 64 over the output's bytes as stored: row-major, little-endian, ByteWidth
bytes per element, bf16 and f8 as their bit patterns, pred as one byte 0/1 -- exactly the data
bytes of the .npy that --save-outputs writes. From NumPy (on a little-endian machine):
  h = 0xcbf29ce484222325
  for b in np.load('out_0_0.npy').tobytes(): h = ((h ^ b) * 0x100000001b3) % 2**64
NaN / Inf: elements that are NaN / +-infinity (0 for integer types; a complex element counts
when either part is). First values: the first 4 elements in row-major order, with 6
significant digits, complex ones as (re,im) (JSON, report.RunReport in proto/report.proto:
exactly, a decimal that reads back as the same value, complex ones as [re, im]; NaN and
infinities as strings). Rows are sorted by output, then device: every device gets its line,
since SPMD devices compute different data.

Memory: the header's "memory" line gives what --memory-budget is compared with, the bytes of
buffers the run holds at its peak: the interpreter's copy of the inputs plus, for each device,
its constants and the most bytes of instruction results alive at once, each result counted
from the instruction that makes it to its last use in program order, and the instruction
running at that peak. It is computed from the program before the run (a static liveness pass
over the schedule the interpreter follows), so it is the same for every run of the same
module, devices and inputs, whatever --threads says.

Exit codes: 0 the run finished; 2 bad input: an unreadable or invalid module, a missing .npy,
one of the wrong dtype or shape, the wrong number of them, a bad flag, or a run the
interpreter refuses (an op it does not run on CPU, the memory or compute budget, an
out-of-range collective, calls nested deeper than 256, a loop beyond --max-loop-iterations):
the module or the flags asked for something that cannot be run, which is bad input, not a
failed check (1 is for checks such as validation); 3 an internal error.
)";

// Elements shown per output.
constexpr int64_t kFirstValues = 4;
// Each virtual device is a thread of the interpreter; far more than any SPMD program the
// interpreter can run at test sizes needs.
constexpr int64_t kMaxDevices = 4096;

struct RunFlags {
  std::string path;
  std::optional<int64_t> devices;
  uint64_t seed = 0;
  std::vector<std::string> input_paths;  // empty: random inputs
  std::string save_dir;                  // empty: not saved
  int64_t memory_budget_bytes = InterpreterOptions().memory_budget_bytes;
  int64_t threads = 0;
  int64_t max_loop_iterations = InterpreterOptions().max_loop_iterations;
  double max_flops = InterpreterOptions().max_flops;
  bool json = false;
};

// Summary of one output array on one device.
struct OutputSummary {
  int64_t device = 0;
  int64_t index = 0;
  const Literal* literal = nullptr;
  uint64_t checksum = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
};

absl::StatusOr<int64_t> ParseCount(const std::string& flag, const std::string& text,
                                   int64_t min_value) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min_value) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected an integer >= ", min_value, "; got '", text, "'"));
  }
  return value;
}

absl::StatusOr<RunFlags> ParseRunFlags(const ParsedFlags& flags) {
  RunFlags run;
  if (flags.positional().size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected one FILE.hlo; got ", flags.positional().size(), " arguments"));
  }
  run.path = flags.positional()[0];
  if (flags.Has("devices")) {
    PERFSIM_ASSIGN_OR_RETURN(run.devices, ParseCount("devices", flags.Get("devices"), 1));
    if (*run.devices > kMaxDevices) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: expected at most ", kMaxDevices, "; got ", *run.devices));
    }
  }
  if (flags.Has("seed") && !absl::SimpleAtoi(flags.Get("seed"), &run.seed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seed: expected an integer in [0, 2^64); got '", flags.Get("seed"), "'"));
  }
  if (flags.Has("inputs")) {
    run.input_paths = absl::StrSplit(flags.Get("inputs"), ',');
    for (const std::string& path : run.input_paths) {
      if (path.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--inputs: expected comma-separated .npy paths; got an empty entry in '",
                         flags.Get("inputs"), "'"));
      }
    }
  }
  if (flags.Has("save-outputs")) {
    run.save_dir = flags.Get("save-outputs");
    if (run.save_dir.empty()) {
      return absl::InvalidArgumentError("--save-outputs: expected a directory; got ''");
    }
  }
  if (flags.Has("memory-budget")) {
    PERFSIM_ASSIGN_OR_RETURN(run.memory_budget_bytes,
                             ParseMemoryBudget("memory-budget", flags.Get("memory-budget")));
  }
  if (flags.Has("threads")) {
    PERFSIM_ASSIGN_OR_RETURN(run.threads, ParseCount("threads", flags.Get("threads"), 0));
  }
  if (flags.Has("max-loop-iterations")) {
    PERFSIM_ASSIGN_OR_RETURN(
        run.max_loop_iterations,
        ParseCount("max-loop-iterations", flags.Get("max-loop-iterations"), 1));
  }
  if (flags.Has("max-flops")) {
    const std::string& text = flags.Get("max-flops");
    if (!absl::SimpleAtod(text, &run.max_flops) || !std::isfinite(run.max_flops) ||
        run.max_flops <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-flops: expected a positive finite number; got '", text, "'"));
    }
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(flags);
  if (!format.ok()) return format.status();
  run.json = *format == "json";
  return run;
}

// See --devices in kRunUsage.
int64_t DefaultDeviceCount(const Module& module) {
  const int64_t from_header = module.replica_count() * module.num_partitions();
  if (from_header > 1) return from_header;
  int64_t devices = 1;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const InstructionAttributes& attrs = instruction->attributes();
      if (attrs.replica_groups.has_value()) {
        for (const std::vector<int64_t>& group : attrs.replica_groups->groups) {
          for (int64_t id : group) devices = std::max(devices, id + 1);
        }
      }
      if (attrs.source_target_pairs.has_value()) {
        for (const auto& [source, target] : *attrs.source_target_pairs) {
          devices = std::max({devices, source + 1, target + 1});
        }
      }
    }
  }
  return devices;
}

// inputs[device][parameter] from the --inputs files, checked against the entry parameters so
// that a wrong file is named, rather than reported as an interpreter error.
absl::StatusOr<std::vector<std::vector<Literal>>> ReadInputs(const Module& module,
                                                             const RunFlags& run,
                                                             int64_t num_devices) {
  const Computation& entry = *module.entry();
  if (static_cast<int64_t>(run.input_paths.size()) != entry.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--inputs: expected ", entry.parameter_count(), " .npy files (one per entry parameter of ",
        module.name(), "); got ", run.input_paths.size()));
  }
  // Without any '{d}' one set of inputs serves every device (RunModule shares it).
  bool per_device = false;
  for (const std::string& path : run.input_paths) {
    per_device = per_device || absl::StrContains(path, "{d}");
  }
  std::vector<std::vector<Literal>> inputs(per_device ? num_devices : 1);
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const Instruction& parameter = *entry.parameter(p);
    const Shape& want = parameter.shape();
    const std::string& pattern = run.input_paths[p];
    const bool this_per_device = absl::StrContains(pattern, "{d}");
    for (size_t d = 0; d < inputs.size(); ++d) {
      if (!this_per_device && d > 0) {
        inputs[d].push_back(inputs[0][p]);
        continue;
      }
      const std::string path = absl::StrReplaceAll(pattern, {{"{d}", absl::StrCat(d)}});
      if (!want.IsArray()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": parameter ", p, " (", parameter.name(), ") is ", want.ToString(false),
            "; expected an array parameter (.npy cannot hold a tuple)"));
      }
      absl::StatusOr<Literal> literal = ReadNpyFile(path, want.element_type());
      if (!literal.ok()) {
        return absl::Status(literal.status().code(),
                            absl::StrCat(literal.status().message(), " (parameter ", p, ", ",
                                         parameter.name(), ", ", want.ToString(false), ")"));
      }
      if (literal->shape().dimensions() != want.dimensions()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": expected ", want.ToString(false), " for parameter ", p, " (",
                         parameter.name(), "); got ", literal->shape().ToString(false)));
      }
      inputs[d].push_back(*std::move(literal));
    }
  }
  return inputs;
}

// Real and imaginary part of element i of a complex array (stored real part first).
std::pair<double, double> ComplexAt(const Literal& literal, int64_t i) {
  const uint8_t* p = literal.data().data() + i * ByteWidth(literal.shape().element_type());
  if (literal.shape().element_type() == PrimitiveType::kC64) {
    float parts[2];
    std::memcpy(parts, p, sizeof(parts));
    return {parts[0], parts[1]};
  }
  double parts[2];
  std::memcpy(parts, p, sizeof(parts));
  return {parts[0], parts[1]};
}

OutputSummary Summarize(int64_t device, int64_t index, const Literal& literal) {
  const ArrayStats stats = ComputeArrayStats(literal);
  return OutputSummary{device, index, &literal, stats.fnv1a64, stats.nan_count, stats.inf_count};
}

void Flatten(const Literal& literal, std::vector<const Literal*>* out) {
  if (!literal.shape().IsTuple()) {
    out->push_back(&literal);
    return;
  }
  for (const Literal& element : literal.tuple_elements()) Flatten(element, out);
}

std::string ChecksumText(uint64_t checksum) { return fmt::format("{:016x}", checksum); }

// A float as text: 6 significant digits; nan, inf and -inf as words.
std::string FloatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// Element i as text: integers exactly, pred as 0/1, floats as FloatText, complex numbers as
// (re,im).
std::string ValueText(const Literal& literal, int64_t i) {
  const PrimitiveType type = literal.shape().element_type();
  if (IsComplex(type)) {
    const auto [re, im] = ComplexAt(literal, i);
    return absl::StrCat("(", FloatText(re), ",", FloatText(im), ")");
  }
  if (!IsFloatingPoint(type)) return absl::StrCat(literal.GetAsInt64(i));
  return FloatText(literal.GetAsDouble(i));
}

std::vector<std::string> FirstValues(const Literal& literal) {
  std::vector<std::string> values;
  const int64_t n = std::min(literal.element_count(), kFirstValues);
  for (int64_t i = 0; i < n; ++i) values.push_back(ValueText(literal, i));
  return values;
}

// A float for JSON: the number, exactly, or "nan", "inf", "-inf" (JSON has no such numbers).
google::protobuf::Value FloatValue(double v) {
  google::protobuf::Value value;
  if (std::isfinite(v)) {
    value.set_number_value(v);
  } else {
    value.set_string_value(FloatText(v));
  }
  return value;
}

// Element i for JSON (report.RunOutput.first_values): floats as FloatValue, complex numbers as
// [re, im], integers as numbers, or as decimal strings beyond 2^53 where a double would round.
google::protobuf::Value FirstValueJson(const Literal& literal, int64_t i) {
  const PrimitiveType type = literal.shape().element_type();
  google::protobuf::Value value;
  if (IsComplex(type)) {
    const auto [re, im] = ComplexAt(literal, i);
    google::protobuf::ListValue& pair = *value.mutable_list_value();
    *pair.add_values() = FloatValue(re);
    *pair.add_values() = FloatValue(im);
    return value;
  }
  if (IsFloatingPoint(type)) return FloatValue(literal.GetAsDouble(i));
  constexpr int64_t kExactDoubleIntegers = int64_t{1} << 53;
  const int64_t n = literal.GetAsInt64(i);
  if (n > -kExactDoubleIntegers && n < kExactDoubleIntegers) {
    value.set_number_value(static_cast<double>(n));
  } else {
    value.set_string_value(absl::StrCat(n));
  }
  return value;
}

void PrintTable(const Module& module, const RunFlags& run, int64_t num_devices,
                const RunResult& result, const std::vector<OutputSummary>& summaries,
                std::ostream& out) {
  out << fmt::format(
      "module {}: {} device{}, {}\n", module.name(), num_devices, num_devices == 1 ? "" : "s",
      run.input_paths.empty()
          ? absl::StrCat("random inputs (seed ", run.seed, ")")
          : absl::StrCat("inputs from ", run.input_paths.size(), " .npy paths (--inputs)"));
  const MemoryNeed& memory = result.memory;
  out << fmt::format(
      "memory {} of the {} budget: inputs {} + {} device{} x {}, peaking at {}\n",
      FormatQuantity("bytes", static_cast<double>(memory.total_bytes)),
      FormatQuantity("bytes", static_cast<double>(run.memory_budget_bytes)),
      FormatQuantity("bytes", static_cast<double>(memory.input_bytes)), memory.num_devices,
      memory.num_devices == 1 ? "" : "s",
      FormatQuantity("bytes", static_cast<double>(memory.device_bytes)),
      memory.peak_at.empty() ? std::string("the start") : memory.peak_at);
  static constexpr char kRow[] = "{:>6} {:>6}  {:<20} {:<16} {:>6} {:>6}  {}\n";
  out << fmt::format(kRow, "output", "device", "shape", "fnv1a64", "nan", "inf", "first values");
  for (const OutputSummary& s : summaries) {
    const Literal& literal = *s.literal;
    std::string values =
        absl::StrJoin(FirstValues(literal), " ");
    if (literal.element_count() > kFirstValues) absl::StrAppend(&values, " ...");
    out << fmt::format(kRow, s.index, s.device, literal.shape().ToString(false),
                       ChecksumText(s.checksum), s.nan_count, s.inf_count, values);
  }
}

report::RunReport RunReportOf(const Module& module, const RunFlags& run, int64_t num_devices,
                              const RunResult& result,
                              const std::vector<OutputSummary>& summaries) {
  report::RunReport r;
  r.set_module(module.name());
  r.set_devices(num_devices);
  r.set_seed(run.seed);
  if (run.input_paths.empty()) {
    r.mutable_inputs()->set_string_value("random");
  } else {
    google::protobuf::ListValue& paths = *r.mutable_inputs()->mutable_list_value();
    for (const std::string& path : run.input_paths) paths.add_values()->set_string_value(path);
  }
  r.set_memory_budget_bytes(run.memory_budget_bytes);
  r.set_memory_need_bytes(result.memory.total_bytes);
  r.set_memory_input_bytes(result.memory.input_bytes);
  r.set_memory_device_bytes(result.memory.device_bytes);
  r.set_memory_peak_at(result.memory.peak_at);
  for (const OutputSummary& s : summaries) {
    const Shape& shape = s.literal->shape();
    report::RunOutput& out = *r.add_outputs();
    out.set_index(s.index);
    out.set_device(s.device);
    out.set_shape(shape.ToString(false));
    out.set_dtype(std::string(PrimitiveTypeName(shape.element_type())));
    for (int64_t d : shape.dimensions()) out.add_dimensions(d);
    out.set_fnv1a64(ChecksumText(s.checksum));
    out.set_nan_count(s.nan_count);
    out.set_inf_count(s.inf_count);
    const int64_t n = std::min(s.literal->element_count(), kFirstValues);
    for (int64_t i = 0; i < n; ++i) *out.add_first_values() = FirstValueJson(*s.literal, i);
  }
  return r;
}

absl::Status SaveOutputs(const std::string& dir, const std::vector<OutputSummary>& summaries) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("--save-outputs: expected a directory that can be created; got '", dir,
                     "': ", error.message()));
  }
  // All or nothing: every file is written in full before any replaces what was there.
  AtomicFileSet files;
  for (const OutputSummary& s : summaries) {
    const std::string path = absl::StrCat(dir, "/out_", s.device, "_", s.index, ".npy");
    absl::StatusOr<std::string> bytes = SerializeNpy(*s.literal);
    if (!bytes.ok()) return Annotate(bytes.status(), path);
    PERFSIM_RETURN_IF_ERROR(Annotate(files.Stage(path, *bytes), "--save-outputs"));
  }
  return Annotate(files.Commit(), "--save-outputs");
}

absl::Status Run(const RunFlags& run, CliIo& io) {
  // The interpreter trusts declared shapes; a module that fails verification is refused here.
  PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadVerifiedModule(run.path, io.in));
  const std::string display_name = InputName(run.path);
  const int64_t num_devices = run.devices.value_or(DefaultDeviceCount(*module));
  if (num_devices > kMaxDevices) {
    return absl::InvalidArgumentError(absl::StrCat(display_name,
                                                   ": expected collectives over at most ",
                                                   kMaxDevices, " devices; got ", num_devices));
  }
  // Refuse a run beyond the budget before making (or reading) its inputs. RunModule checks
  // again with the input sets it is given; the need is the same.
  bool per_device_inputs = run.input_paths.empty();
  for (const std::string& path : run.input_paths) {
    per_device_inputs = per_device_inputs || absl::StrContains(path, "{d}");
  }
  absl::StatusOr<MemoryNeed> need =
      ComputeMemoryNeed(*module, num_devices, per_device_inputs ? num_devices : 1);
  absl::Status fits = need.ok() ? CheckMemoryBudget(*need, run.memory_budget_bytes) : need.status();
  if (!fits.ok()) {
    return absl::Status(fits.code(), absl::StrCat(display_name, ": ", fits.message()));
  }
  absl::StatusOr<ComputeNeed> compute = ComputeComputeNeed(*module, num_devices);
  fits = compute.ok() ? CheckComputeBudget(*compute, run.max_flops) : compute.status();
  if (!fits.ok()) {
    return absl::Status(fits.code(), absl::StrCat(display_name, ": ", fits.message()));
  }
  std::vector<std::vector<Literal>> inputs;
  if (run.input_paths.empty()) {
    PERFSIM_ASSIGN_OR_RETURN(inputs, MakeRandomInputs(*module, num_devices, run.seed));
  } else {
    PERFSIM_ASSIGN_OR_RETURN(inputs, ReadInputs(*module, run, num_devices));
  }
  InterpreterOptions options;
  options.num_devices = num_devices;
  options.seed = run.seed;
  options.memory_budget_bytes = run.memory_budget_bytes;
  options.num_threads = run.threads;
  options.max_loop_iterations = run.max_loop_iterations;
  options.max_flops = run.max_flops;
  absl::StatusOr<RunResult> result = RunModule(*module, std::move(inputs), options);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(display_name, ": run failed: ", result.status().message()));
  }

  std::vector<OutputSummary> summaries;
  for (int64_t d = 0; d < num_devices; ++d) {
    std::vector<const Literal*> outputs;
    for (const Literal& literal : result->outputs[d]) Flatten(literal, &outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      summaries.push_back(Summarize(d, static_cast<int64_t>(i), *outputs[i]));
    }
  }
  // Sorted by output, then device, so that one output's devices sit together.
  std::stable_sort(
      summaries.begin(), summaries.end(),
      [](const OutputSummary& a, const OutputSummary& b) { return a.index < b.index; });
  if (!run.save_dir.empty()) PERFSIM_RETURN_IF_ERROR(SaveOutputs(run.save_dir, summaries));
  if (run.json) {
    io.out << ReportJson(RunReportOf(*module, run, num_devices, *result, summaries));
  } else {
    PrintTable(*module, run, num_devices, *result, summaries, io.out);
  }
  return absl::OkStatus();
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"devices", true},
                                                        {"seed", true},
                                                        {"inputs", true},
                                                        {"save-outputs", true},
                                                        {"memory-budget", true},
                                                        {"threads", true},
                                                        {"max-loop-iterations", true},
                                                        {"max-flops", true},
                                                        {"format", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kRunUsage;
    return kExitOk;
  }
  absl::StatusOr<RunFlags> run = ParseRunFlags(*flags);
  if (!run.ok()) {
    io.err << "perfsim: " << run.status().message() << "\n\n" << kRunUsage;
    return kExitBadInput;
  }
  return ReportStatus(Run(*run, io), io);
}

}  // namespace perfsim
