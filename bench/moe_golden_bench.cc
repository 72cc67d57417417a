// `perfsim run`'s interpreter on the JAX MoE goldens (tests/testdata/hlo/jax/moe_*), on their
// own inputs, one benchmark per module:
//   BM_MoeGolden/moe_dense_einsum_fwd   ...   RunModule of the compiled (per-device SPMD)
//   module, inputs sharded per device as MANIFEST.json's partition_spec says, parse and input
//   loading outside the timed loop: the figure comparable to XLA:CPU's compile-excluded run.
// bench/run_vs_xla.py runs this with --benchmark_format=json beside tools/jax/time_xla_cpu.py
// and prints the ratio per module.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "sim/interp/array_util.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

const std::string kDir = std::string(PERFSIM_SOURCE_DIR) + "/tests/testdata/hlo/jax/";

std::string ReadText(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Block `index` of `parts` equal blocks of `global` along `dim`.
Literal Block(const Literal& global, int64_t dim, int64_t parts, int64_t index) {
  std::vector<int64_t> dims = global.shape().dimensions();
  const int64_t size = dims[dim] / parts;
  dims[dim] = size;
  Literal out(Shape::Array(global.shape().element_type(), dims));
  const std::vector<int64_t> strides = interp::RowMajorStrides(global.shape().dimensions());
  interp::StridedCopy(global.data().data(), index * size * strides[dim], strides,
                      out.mutable_data().data(), 0, interp::RowMajorStrides(dims), dims,
                      ByteWidth(global.shape().element_type()));
  return out;
}

struct Case {
  std::string name;
  std::unique_ptr<Module> module;
  std::vector<std::vector<Literal>> inputs;  // per device
  int64_t devices = 1;
};

absl::StatusOr<Case> LoadCase(const google::protobuf::Struct& entry) {
  const auto& f = entry.fields();
  Case c;
  c.name = f.at("name").string_value();
  c.devices = static_cast<int64_t>(f.at("num_devices").number_value());
  const auto& files = f.at("files").struct_value().fields();
  const std::string compiled = files.at("compiled").string_value();
  absl::StatusOr<std::unique_ptr<Module>> module =
      ParseHloModule(ReadText(kDir + compiled), compiled);
  if (!module.ok()) return module.status();
  c.module = *std::move(module);
  c.inputs.resize(c.devices);
  const auto& in_files = files.at("inputs").list_value().values();
  const auto& params = f.at("parameters").list_value().values();
  for (int i = 0; i < in_files.size() && i < params.size(); ++i) {
    const auto& p = params[i].struct_value().fields();
    const PrimitiveType type =
        ParsePrimitiveType(p.at("dtype").string_value()).value_or(PrimitiveType::kInvalid);
    absl::StatusOr<Literal> global = ReadNpyFile(kDir + in_files[i].string_value(), type);
    if (!global.ok()) return global.status();
    for (int64_t d = 0; d < c.devices; ++d) {
      Literal local = *global;
      if (p.contains("partition_spec")) {
        const auto& spec = p.at("partition_spec").list_value().values();
        for (int dim = 0; dim < spec.size(); ++dim) {
          if (spec[dim].kind_case() == google::protobuf::Value::kStringValue) {
            local = Block(local, dim, c.devices, d);  // one mesh axis of all the devices
          }
        }
      }
      c.inputs[d].push_back(std::move(local));
    }
  }
  return c;
}

void RunCase(benchmark::State& state, const Case* c) {
  InterpreterOptions options;
  options.num_devices = c->devices;
  for (auto _ : state) {
    absl::StatusOr<RunResult> result = RunModule(*c->module, c->inputs, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result);
  }
  state.counters["devices"] = static_cast<double>(c->devices);
}

}  // namespace
}  // namespace perfsim

int main(int argc, char** argv) {
  google::protobuf::Struct manifest;
  if (!google::protobuf::util::JsonStringToMessage(
           perfsim::ReadText(perfsim::kDir + "MANIFEST.json"), &manifest)
           .ok()) {
    fprintf(stderr, "cannot read %sMANIFEST.json\n", perfsim::kDir.c_str());
    return 1;
  }
  static std::vector<std::unique_ptr<perfsim::Case>> cases;
  for (const auto& m : manifest.fields().at("modules").list_value().values()) {
    const std::string name = m.struct_value().fields().at("name").string_value();
    if (name.rfind("moe_", 0) != 0) continue;
    absl::StatusOr<perfsim::Case> c = perfsim::LoadCase(m.struct_value());
    if (!c.ok()) {
      fprintf(stderr, "%s: %s\n", name.c_str(), std::string(c.status().message()).c_str());
      return 1;
    }
    cases.push_back(std::make_unique<perfsim::Case>(*std::move(c)));
    benchmark::RegisterBenchmark(("BM_MoeGolden/" + name).c_str(), perfsim::RunCase,
                                 cases.back().get())
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
