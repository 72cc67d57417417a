// The time of a row's scenario as a closed-form function of a few calibration factors.
//
//   PERFSIM_ASSIGN_OR_RETURN(RowModel model, BuildRowModel(scenario));
//   ModelValue(model, ChipFactors());   // datasheet physics, in the row's unit
//   ChipFactors f;  f.Set(FactorKind::kMatmul, 0.6);
//   ModelValue(model, f);               // the same row with 60% of the matrix peak
//
// BuildRowModel simulates the scenario ONCE with every factor at 1, using the simulator's own
// functions (sim/cost CostGroupedMatmul, sim/comm RouteTraffic and the collective time
// functions), and keeps the pieces of its time that each factor scales:
//
//   seconds = fixed + combine_i(term_i.seconds / factor(term_i))
//             + sum_j(serial_j.seconds / factor(serial_j))
//             + invocations * overhead + api_calls * api_overhead
//
// where combine is max (a roofline: compute vs HBM; pipelined stages of an expert-parallel
// exchange) or sum (staged collective phases), serial terms are phases that overlap nothing
// (a GPU grouped matmul's epilogue write), fixed is what no factor scales (the chip's sourced
// kernel launch cost, hop latencies) and overhead is a fitted fixed cost per call of the row's
// op class (grouped-matmul kernel, or communication op). That is exactly how sim/cost and
// sim/comm apply the fractions of the chip's EfficiencySpec (a fraction divides the rate it
// derates), so fitting needs no re-simulation; tests/accuracy checks it against a
// re-simulation with the factors set in the chip. These factors are fields of the chip's
// EfficiencySpec (proto/hardware.proto) that `perfsim predict` and `perfsim cost` apply the same
// way: the HBM fraction divides every kernel's memory time, the grouped-matmul overhead is
// charged per group of a call (sim/cost/grouped_matmul.cc) and the collective overhead per
// collective (sim/comm/topology.cc), both on top of compute.kernel_overhead_seconds.
//
// One term is NOT a chip property: api_overhead, a fixed cost per call of the rows timed
// around a library's host API (scenario.h TimingMethod::kHostApi, e.g. HybridEP's "Torch API
// timing"). It is the host side of that library and timing (dispatch, allocation,
// synchronisation), which a device never pays for a collective inside a compiled step, so it
// is fitted and reported as a term of the row class (`perfsim accuracy` lists it) but never
// written into a hardware file and never charged by `perfsim predict`. Such a row carries
// api_calls = 1 and does not inform its op class's chip overhead: its one fixed cost per call
// cannot be split between the host and the device, so the chip overhead is left to
// device-timed rows (and keeps its value when there are none). A device-timed row has
// api_calls = 0 and ignores the term.
//
// Per scenario (scenario.h):
//   grouped GEMM   TPU: max(compute / matmul, memory / hbm) + fixed
//                  GPU: max(compute / matmul, operand streaming / hbm) + epilogue write / hbm
//                       + fixed (the output write after the main loop is not overlapped:
//                       sim/cost/grouped_matmul.h)
//                  fixed = kernel overhead (+ grid steps on a TPU); + groups * grouped-matmul
//                  overhead (per group, empty groups included)
//   EP             sim/comm/ep_dispatch.h: max(NVLink stage / nvlink, IB stage / infiniband
//                  (several nodes, normal mode), SM copy / sm_copy (an SM budget stated))
//                  + the stages' latencies + collective launch + collective overhead; one node:
//                  no IB stage; low-latency mode: the flat traffic's stage at its busiest
//                  link's class
//   collective     the collective time's transfer split by the link class of each phase
//                  (found by halving one class's factor at a time: the time grows by exactly
//                  the transfer that class's links carry) + collective overhead, except on a
//                  plateau row (scenario.h), which has none.
// Communication is fitted by link class (nvlink, infiniband, ici, dcn: issue 14), not by
// algorithm: the algorithm factors stay at 1 in the models (proto/hardware.proto says why).
#ifndef PERFSIM_SIM_ACCURACY_ROW_MODEL_H_
#define PERFSIM_SIM_ACCURACY_ROW_MODEL_H_

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/accuracy/scenario.h"
#include "sim/hw/chip.h"

namespace perfsim {

enum class FactorKind {
  kMatmul,             // efficiency.matmul_fraction_of_peak
  kHbm,                // efficiency.hbm_fraction_of_peak (memory time of every kernel)
  kRing,               // efficiency.collective_ring_fraction_of_peak
  kBidirectionalRing,  // efficiency.collective_bidirectional_ring_fraction_of_peak
  kDirect,             // efficiency.collective_direct_fraction_of_peak
  kHierarchical,       // efficiency.collective_hierarchical_fraction_of_peak
  kNvlink,             // efficiency.nvlink_fraction_of_peak (link class, issue 14)
  kInfiniband,         // efficiency.infiniband_fraction_of_peak
  kIci,                // efficiency.ici_fraction_of_peak
  kDcn,                // efficiency.dcn_fraction_of_peak
  kSmCopy,             // efficiency.sm_copy_fraction_of_peak (an EP kernel's SMs copying)
  kGemmOverhead,       // efficiency.grouped_matmul_overhead_seconds_per_group
  kCommOverhead,       // efficiency.collective_overhead_seconds (collective, dispatch, combine)
  kApiOverhead,        // no field: the host-API cost per call of API-timed rows (file comment)
};
inline constexpr int kNumFactorKinds = 14;

// The EfficiencySpec field: "matmul_fraction_of_peak", "hbm_fraction_of_peak", ...,
// "grouped_matmul_overhead_seconds_per_group", "collective_overhead_seconds"; for kApiOverhead,
// which is no field, "api_overhead_seconds".
absl::string_view FactorFieldName(FactorKind kind);
// Short name for tables: "matmul", "hbm", "ring", "bidir_ring", "direct", "hierarchical",
// "nvlink", "infiniband", "ici", "dcn", "sm_copy", "gmm_overhead", "comm_overhead",
// "api_overhead".
absl::string_view FactorShortName(FactorKind kind);
// A fraction of peak (true) or seconds (false: the overheads).
bool IsFraction(FactorKind kind);
// Whether the factor is a field of the chip's EfficiencySpec, which `perfsim calibrate` writes
// and `perfsim predict` applies (every factor but kApiOverhead).
bool IsChipProperty(FactorKind kind);

// One chip's factors. Default: datasheet physics (fractions 1, overheads 0).
struct ChipFactors {
  std::array<double, kNumFactorKinds> values = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  double Get(FactorKind kind) const { return values[static_cast<int>(kind)]; }
  void Set(FactorKind kind, double value) { values[static_cast<int>(kind)] = value; }
};

// The built-in chip `name` with every field of its EfficiencySpec set from `factors` (the chip
// properties; kApiOverhead is none): with ChipFactors() it is the datasheet chip (fractions 1,
// overheads 0) whatever the shipped hardware file was calibrated to.
absl::StatusOr<Chip> ChipWithFactors(absl::string_view name, const ChipFactors& factors);

struct FactorTerm {
  FactorKind factor = FactorKind::kMatmul;
  double seconds = 0;  // at factor 1
};

struct RowModel {
  std::string chip;
  bool max_of_terms = true;  // false: the terms add up
  std::vector<FactorTerm> terms;
  // Phases after the terms that overlap nothing; they add up (a GPU grouped matmul's epilogue).
  std::vector<FactorTerm> serial_terms;
  double fixed_seconds = 0;
  FactorKind overhead = FactorKind::kCommOverhead;  // the op class's overhead factor
  // Multiplies it: the groups of a grouped matmul, 1 per collective, 0 on a plateau row.
  double invocations = 0;
  // Multiplies the api_overhead term: 1 when the row was timed around a host API call
  // (TimingMethod::kHostApi), else 0.
  double api_calls = 0;
  ScenarioMetric metric = ScenarioMetric::kTime;
  MeasurementUnit unit = MeasurementUnit::kMicroseconds;
  // kThroughput: useful flops; bandwidths: the bytes the metric counts (scenario.h).
  double work = 0;
  std::string detail;  // the pieces, for people: "compute 972 us, memory 185 us, fixed 1 us"
};

// InvalidArgument / FailedPrecondition when the simulator cannot time the scenario (e.g. a
// rate the chip description lacks).
absl::StatusOr<RowModel> BuildRowModel(const Scenario& scenario);

double ModelSeconds(const RowModel& model, const ChipFactors& factors);
// The predicted quantity in model.unit (time, TFLOP/s or GB/s).
double ModelValue(const RowModel& model, const ChipFactors& factors);
// Whether the row informs factor `kind`, i.e. bounds the row at datasheet physics: the
// largest term of a max (the roofline's bound, the slower stage), any term of a sum, any
// serial term, the row's own op-class overhead unless the row is API-timed, and api_overhead
// when it is. A factor that only scales a term the row is never bound by is not fitted on it:
// with few rows such a factor can otherwise take any value a max() hides.
bool ModelInforms(const RowModel& model, FactorKind kind);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_ROW_MODEL_H_
