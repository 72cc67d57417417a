// Helpers shared by the per-category mappings of scenario.cc (scenario_gemm.cc,
// scenario_comm.cc). Not part of the library's interface.
#ifndef PERFSIM_SIM_ACCURACY_SCENARIO_INTERNAL_H_
#define PERFSIM_SIM_ACCURACY_SCENARIO_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/accuracy/measurement.h"
#include "sim/accuracy/scenario.h"
#include "sim/hw/chip.h"

namespace perfsim {

// A row perfsim does not simulate, with the reason.
MappedRow SkippedRow(std::string reason);

// InvalidArgument "file:line:col: column: expected X; got 'cell'".
absl::Status CellError(const Measurement& row, absl::string_view column,
                       absl::string_view expected);

// The cell of `column`, trimmed.
std::string CellText(const Measurement& row, absl::string_view column);

// An integer column that may be empty (nullopt); anything else but a non-negative integer is
// a CellError.
absl::StatusOr<std::optional<int64_t>> OptionalIntegerColumn(const Measurement& row,
                                                             absl::string_view column);

// The per-category mappings. `scenario` arrives with chip, metric and unit set.
absl::StatusOr<MappedRow> MapGroupedGemmRow(const Measurement& row, const Chip& chip,
                                            Scenario scenario);
absl::StatusOr<MappedRow> MapEpCommRow(const Measurement& row, const Chip& chip, Scenario scenario);
absl::StatusOr<MappedRow> MapCollectiveRow(const Measurement& row, const Chip& chip,
                                           Scenario scenario);
// moe_block / moe_layer_fused: fills MappedRow::block from `scenario`'s chip, timing and unit.
absl::StatusOr<MappedRow> MapBlockRow(const Measurement& row, const Chip& chip,
                                      const Scenario& scenario);

// e2e_train: fills MappedRow::train_step.
absl::StatusOr<MappedRow> MapStepRow(const Measurement& row, const Chip& chip,
                                     const std::string& chip_name);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_SCENARIO_INTERNAL_H_
