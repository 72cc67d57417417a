// A validated view over one hardware description (proto/hardware.proto).
//
//   PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip("tpu_v5p"));     // sim/hw/chip_registry.h
//   chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16);               // 4.59e14 FLOP/s
//   chip.ScratchLimitBytes();                                        // 16 MiB scoped VMEM
//   chip.DefaultSliceShape();                                        // "4x4x4"
//
// A Chip always satisfies ValidateHardwareSpec: every peak and bandwidth it reports is finite and
// positive where the schema requires it, the scoped VMEM limit fits in physical VMEM, every
// interconnect dimension has chips and links. Consumers (cost, comm, fit) can divide by them
// without checking.
//
// Defaults are applied before validation, so proto() may differ from the file: unset efficiency
// factors and small_rows_fraction_of_peak become 1, an unset devices_per_chip becomes 1, and an
// empty efficiency.fitted_on says the factors are not calibrated.
#ifndef PERFSIM_SIM_HW_CHIP_H_
#define PERFSIM_SIM_HW_CHIP_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hardware.pb.h"
#include "sim/util/textproto.h"

namespace perfsim {

// Operand types with their own matrix-unit peak.
enum class MatmulDtype { kBf16, kF16, kFp8, kInt8, kFp4, kF32 };

// "bf16", "f16", "fp8", "int8", "fp4", "f32".
absl::string_view MatmulDtypeName(MatmulDtype dtype);

// Checks every field of `spec` and reports ALL problems at once as InvalidArgument, one per line,
// each "file:line:col: field.path: expected X; got Y" when `source` (may be null) knows where the
// field was written. Does not apply defaults; see Chip::FromProto.
absl::Status ValidateHardwareSpec(const HardwareSpec& spec, const TextProtoSource* source);

class Chip {
 public:
  // Applies defaults (see the file comment), then validates. `source`, when given, locates the
  // fields in messages.
  static absl::StatusOr<Chip> FromProto(HardwareSpec proto,
                                        const TextProtoSource* source = nullptr);
  // Parses textproto `text` (syntax errors as "filename:line:col: ...") and validates it.
  static absl::StatusOr<Chip> FromText(absl::string_view text, absl::string_view filename);
  // Reads and parses the file at `path`.
  static absl::StatusOr<Chip> Load(const std::string& path);

  const HardwareSpec& proto() const { return proto_; }
  const std::string& name() const { return proto_.name(); }
  ChipKind kind() const { return proto_.kind(); }
  bool is_tpu() const { return proto_.kind() == CHIP_KIND_TPU; }
  bool is_gpu() const { return proto_.kind() == CHIP_KIND_GPU; }

  // Dense matrix peak per chip for operands of `dtype`, FLOP/s (OP/s for int8); 0 when the chip
  // has no native rate for it (e.g. fp8 on TPU v4) or none is sourced (f32 on most chips).
  double PeakMatmulFlopsPerSecond(MatmulDtype dtype) const;
  double hbm_bytes_per_second() const { return proto_.memory().hbm_bytes_per_second(); }
  int64_t hbm_capacity_bytes() const { return proto_.memory().hbm_capacity_bytes(); }

  // On-chip scratch a kernel may use without asking for more: the default scoped-VMEM limit per
  // TensorCore (TPU) or the shared memory one thread block may opt into (GPU), bytes.
  int64_t ScratchLimitBytes() const;
  // Physical on-chip scratch: VMEM per TensorCore (TPU) or shared memory per SM (GPU), bytes.
  int64_t ScratchPhysicalBytes() const;

  // Bandwidth/compute balance point for bf16: peak FLOP/s / HBM bytes/s, FLOP per byte.
  double RidgeBf16FlopsPerByte() const;

  // Sizes of the default slice joined by 'x': "4x4x4", "16x16", "8".
  std::string DefaultSliceShape() const;
  // Chips in the default slice: the product of the dimension sizes (validated <= 2^24).
  int64_t DefaultSliceChips() const;
  // One line for tables: "ICI torus 4x4x4 (wrap xyz), 90 GB/s/link/dir, DCN 6.25 GB/s".
  std::string InterconnectSummary() const;

 private:
  explicit Chip(HardwareSpec proto) : proto_(std::move(proto)) {}
  HardwareSpec proto_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_HW_CHIP_H_
