// XLA accepts what perfsim prints, and computes what perfsim's interpreter computes.
//
// tools/jax/xla_accepts.py printed every backend's module (`perfsim lower` on the pico model of
// tests/testdata/xla_accepts/pico.textproto, fwd and fwd_bwd, 1 and 4 devices), had XLA
// (jaxlib 0.10.2) parse each one, and compiled and ran on XLA:CPU those it can run: the
// backends' own modules where they hold no kernel custom-call, ragged-dot or
// ragged-all-to-all, else the same step printed with --grouped-matmul masked_dot. It committed,
// for every module XLA ran, the HLO text, the per-device inputs (validate's, seed 1) and XLA's
// per-device outputs, and listed every module in INDEX.tsv with what XLA did with it.
//
// Here perfsim runs (1) the committed text and (2) the current lowering of the same step on the
// same inputs, and compares every output with XLA's. Metric, per output tensor over all devices:
// max |perfsim − XLA| / max |XLA| ≤ 1e-5 (f32; the ∞-norm relative error validate uses), and a
// NaN/Inf in one but not the other fails.
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/hlo_parser.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

const std::string kDir = std::string(PERFSIM_TESTDATA_DIR) + "/xla_accepts/";

struct Entry {
  std::string name, backend, phase, parallelism, form, status, xla_error, mode;
  int64_t devices = 0, inputs = 0, outputs = 0;
};

// INDEX.tsv: one module per line, tab-separated (xla_accepts.py writes it):
//   name backend phase devices parallelism form inputs outputs status xla_error mode
// status "ran" (parsed, compiled, run: files committed) or "parsed" (XLA parsed it only, and
// xla_error says why it went no further); mode "partitions" (XLA ran the text as printed, as
// N SPMD partitions) or "replicas" (as N replicas, partition-id renamed replica-id: XLA's SPMD
// partitioner refuses partition-id in an unannotated module).
std::vector<Entry> ReadIndex() {
  std::ifstream file(kDir + "INDEX.tsv");
  EXPECT_TRUE(file.good()) << kDir << "INDEX.tsv";
  std::vector<Entry> entries;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    EXPECT_EQ(f.size(), 11u) << line;
    if (f.size() != 11) continue;
    Entry e{.name = f[0], .backend = f[1], .phase = f[2], .parallelism = f[4], .form = f[5],
            .status = f[8], .xla_error = f[9], .mode = f[10]};
    EXPECT_TRUE(absl::SimpleAtoi(f[3], &e.devices) && absl::SimpleAtoi(f[6], &e.inputs) &&
                absl::SimpleAtoi(f[7], &e.outputs))
        << line;
    entries.push_back(std::move(e));
  }
  return entries;
}

Literal Load(const std::string& file) {
  absl::StatusOr<Literal> lit = ReadNpyFile(kDir + file);
  EXPECT_TRUE(lit.ok()) << file << ": " << lit.status();
  return lit.ok() ? *std::move(lit) : Literal();
}

// Entry d of a [devices, ...] file: device d's tensor.
Literal DeviceSlice(const Literal& stacked, int64_t device) {
  std::vector<int64_t> dims = stacked.shape().dimensions();
  dims.erase(dims.begin());
  Literal one(Shape::Array(stacked.shape().element_type(), dims));
  const size_t bytes = one.data().size();
  std::memcpy(one.mutable_data().data(), stacked.data().data() + device * bytes, bytes);
  return one;
}

// inputs[device][param] as the interpreter takes them.
std::vector<std::vector<Literal>> Inputs(const Entry& e) {
  std::vector<std::vector<Literal>> inputs(e.devices);
  for (int64_t i = 0; i < e.inputs; ++i) {
    const Literal stacked = Load(e.name + ".in" + std::to_string(i) + ".npy");
    EXPECT_EQ(stacked.shape().dimensions(0), e.devices) << e.name << " input " << i;
    for (int64_t d = 0; d < e.devices; ++d) inputs[d].push_back(DeviceSlice(stacked, d));
  }
  return inputs;
}

// The largest relative error seen, for the test's record.
double worst_relative_error = 0;

// Compares perfsim's outputs[device][o] with XLA's, per output over all devices.
void ExpectMatchesXla(const Entry& e, const std::vector<std::vector<Literal>>& got,
                      const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), e.devices) << e.name;
  for (int64_t o = 0; o < e.outputs; ++o) {
    double max_want = 0, max_diff = 0;
    int64_t mismatched_non_finite = 0;
    const Literal stacked = Load(e.name + ".out" + std::to_string(o) + ".npy");
    for (int64_t d = 0; d < e.devices; ++d) {
      const Literal want = DeviceSlice(stacked, d);
      ASSERT_LT(o, static_cast<int64_t>(got[d].size())) << e.name;
      const Literal& mine = got[d][o];
      ASSERT_EQ(mine.shape().dimensions(), want.shape().dimensions())
          << e.name << " output " << o << " device " << d;
      for (int64_t i = 0; i < want.element_count(); ++i) {
        const double w = want.GetAsDouble(i), g = mine.GetAsDouble(i);
        if (std::isfinite(w) != std::isfinite(g)) {
          ++mismatched_non_finite;
          continue;
        }
        if (!std::isfinite(w)) continue;
        max_want = std::max(max_want, std::fabs(w));
        max_diff = std::max(max_diff, std::fabs(g - w));
      }
    }
    EXPECT_EQ(mismatched_non_finite, 0) << e.name << " (" << what << ") output " << o;
    EXPECT_GT(max_want, 0) << e.name << " output " << o << ": an all-zero output proves little";
    worst_relative_error = std::max(worst_relative_error, max_diff / std::max(max_want, 1e-30));
    EXPECT_LE(max_diff, 1e-5 * std::max(max_want, 1e-30))
        << e.name << " (" << what << ") output " << o << ": max |perfsim - XLA| " << max_diff
        << ", max |XLA| " << max_want;
  }
}

std::vector<std::vector<Literal>> RunOnInputs(const Module& module, const Entry& e) {
  InterpreterOptions options;
  options.num_devices = e.devices;
  absl::StatusOr<RunResult> run = RunModule(module, Inputs(e), options);
  EXPECT_TRUE(run.ok()) << e.name << ": " << run.status();
  return run.ok() ? run->outputs : std::vector<std::vector<Literal>>{};
}

TEST(XlaAcceptsTest, XlaParsedEveryModuleAndRanAllButTheRaggedAllToAllOnes) {
  const std::vector<Entry> entries = ReadIndex();
  std::set<std::string> native, ran;
  for (const Entry& e : entries) {
    EXPECT_TRUE(e.status == "ran" || e.status == "parsed") << e.name << ": " << e.status;
    const std::string key = e.backend + " " + e.phase + " " + std::to_string(e.devices);
    if (e.form == "native") native.insert(key);
    if (e.status == "ran") ran.insert(key);
  }
  // Every backend's own module, forward and backward, on 1 and 4 devices, was printed and
  // parsed; and XLA:CPU ran every one of them (natively or with masked grouped matmuls) but
  // those with a ragged-all-to-all: all of ep_ragged_a2a's, and grouped_gemm_aligned's on
  // ep = 4 (XLA:CPU has no ragged-all-to-all; tools/jax/README.md).
  for (const MoeBackend* backend : Backends()) {
    const std::string name(backend->name());
    for (const char* phase : {"fwd", "fwd_bwd"}) {
      for (int devices : {1, 4}) {
        const std::string key = name + " " + phase + " " + std::to_string(devices);
        EXPECT_TRUE(native.count(key)) << key;
        const bool has_ragged_all_to_all =
            name == "ep_ragged_a2a" || (name == "grouped_gemm_aligned" && devices == 4);
        EXPECT_EQ(ran.count(key), has_ragged_all_to_all ? 0u : 1u) << key;
      }
    }
  }
  for (const Entry& e : entries) {
    if (e.backend == "ep_ragged_a2a" && e.devices == 1 && e.form == "native") {
      EXPECT_NE(e.xla_error.find("`ragged-all-to-all` is not supported by XLA:CPU"),
                std::string::npos)
          << e.xla_error;
    }
  }
}

TEST(XlaAcceptsTest, InterpreterComputesWhatXlaComputed) {
  int ran = 0;
  for (const Entry& e : ReadIndex()) {
    if (e.status != "ran") continue;
    ++ran;
    // (1) The very text XLA ran.
    std::ifstream file(kDir + e.name + ".hlo");
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text.str(), e.name + ".hlo");
    ASSERT_TRUE(module.ok()) << module.status();
    ExpectMatchesXla(e, RunOnInputs(**module, e), "committed text");

    // (2) The step as perfsim lowers it today.
    absl::StatusOr<ModelConfig> model = ResolveModel(kDir + "pico.textproto");
    ASSERT_TRUE(model.ok()) << model.status();
    StepSpec spec = StepSpec::Defaults(*model);
    spec.batch = 4;  // xla_accepts.py's BATCH, SEQ: 16 tokens (capacity_einsum needs whole
    spec.seq = 4;    // sequences per device: batch divisible by 4)
    spec.backend = e.backend;
    absl::StatusOr<Phase> phase = ParsePhase(e.phase);
    absl::StatusOr<Parallelism> p = ParseParallelism(e.parallelism);
    absl::StatusOr<GroupedMatmulForm> form = ParseGroupedMatmulForm(e.form);
    ASSERT_TRUE(phase.ok() && p.ok() && form.ok()) << e.name;
    spec.phase = *phase;
    spec.parallelism = *p;
    spec.knobs.grouped_matmul = *form;
    absl::StatusOr<LoweredStep> step = LowerStep(spec);
    ASSERT_TRUE(step.ok()) << e.name << ": " << step.status();
    ExpectMatchesXla(e, RunOnInputs(*step->module, e), "current lowering");
  }
  // 7 backends × 2 phases on 1 device, 6 on 4 devices (the test above says which).
  EXPECT_EQ(ran, 26);
  RecordProperty("worst_relative_error", absl::StrFormat("%.3g", worst_relative_error));
}

}  // namespace
}  // namespace perfsim
