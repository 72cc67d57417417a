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
//   seconds = fixed + combine_i(term_i.seconds / factor(term_i)) + invocations * overhead
//
// where combine is max (a roofline: compute vs HBM; pipelined stages of an expert-parallel
// exchange) or sum (staged collective phases), fixed is what no factor scales (the chip's
// sourced kernel launch cost, hop latencies) and overhead is a fitted fixed cost per call of
// the row's op class (grouped-matmul kernel, or communication op). That is exactly how sim/cost
// and sim/comm apply the fractions of the chip's EfficiencySpec (a fraction divides the rate it
// derates), so fitting needs no re-simulation; tests/accuracy checks it against a
// re-simulation with the factors set in the chip. Three factors are this module's own: kHbm
// (HBM efficiency of a grouped matmul's memory time; written to the hardware file as
// elementwise_fraction_of_peak, which sim/cost applies to data-movement kernels) and the two
// overheads (no hardware field holds them: they add to compute.kernel_overhead_seconds, which
// sim/cost charges per kernel and sim/comm per collective).
//
// Per scenario (scenario.h):
//   grouped GEMM   max(compute / matmul, memory / hbm) + kernel overhead + overhead
//   EP, one node   routed all-to-all of the expected traffic: transfer / direct + latency
//   EP, N nodes    max(IB stage / hierarchical, NVLink stage / direct) + both latencies
//   collective     the collective time's transfer split by the algorithm factor of each phase
//                  (found by halving one factor at a time: the time grows by exactly the
//                  transfer that factor divides).
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
  kMatmul,              // efficiency.matmul_fraction_of_peak
  kHbm,                 // HBM efficiency of memory-bound kernels (elementwise_fraction_of_peak)
  kRing,                // efficiency.collective_ring_fraction_of_peak
  kBidirectionalRing,   // efficiency.collective_bidirectional_ring_fraction_of_peak
  kDirect,              // efficiency.collective_direct_fraction_of_peak
  kHierarchical,        // efficiency.collective_hierarchical_fraction_of_peak
  kGemmOverhead,        // seconds added to every grouped-matmul call (no hardware field)
  kCommOverhead,        // seconds added to every collective / dispatch / combine (no field)
};
inline constexpr int kNumFactorKinds = 8;

// The hardware-file field: "matmul_fraction_of_peak", ..., "grouped_matmul_overhead_seconds",
// "collective_overhead_seconds" (the last two are not fields of proto/hardware.proto).
absl::string_view FactorFieldName(FactorKind kind);
// Short name for tables: "matmul", "hbm", "ring", "bidir_ring", "direct", "hierarchical",
// "gmm_overhead", "comm_overhead".
absl::string_view FactorShortName(FactorKind kind);
// A fraction of peak (true) or seconds (false: the overheads).
bool IsFraction(FactorKind kind);

// One chip's factors. Default: datasheet physics (fractions 1, overheads 0).
struct ChipFactors {
  std::array<double, kNumFactorKinds> values = {1, 1, 1, 1, 1, 1, 0, 0};
  double Get(FactorKind kind) const { return values[static_cast<int>(kind)]; }
  void Set(FactorKind kind, double value) { values[static_cast<int>(kind)] = value; }
};

// The built-in chip `name` with its efficiency fractions set from `factors` (kHbm becomes
// elementwise_fraction_of_peak; the overhead has no field and is ignored).
absl::StatusOr<Chip> ChipWithFactors(absl::string_view name, const ChipFactors& factors);

struct FactorTerm {
  FactorKind factor = FactorKind::kMatmul;
  double seconds = 0;  // at factor 1
};

struct RowModel {
  std::string chip;
  bool max_of_terms = true;  // false: the terms add up
  std::vector<FactorTerm> terms;
  double fixed_seconds = 0;
  FactorKind overhead = FactorKind::kCommOverhead;  // the op class's overhead factor
  double invocations = 0;                           // multiplies it
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
// largest term of a max (the roofline's bound, the slower stage) or any term of a sum, and the
// row's own overhead. A factor that only scales a term the row is never bound by is not fitted
// on it: with few rows such a factor can otherwise take any value a max() hides.
bool ModelInforms(const RowModel& model, FactorKind kind);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_ROW_MODEL_H_
