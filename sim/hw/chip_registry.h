// The built-in chips (hardware/*.textproto, compiled into the binary) and the `--hw` resolver.
//
//   BuiltinChipNames();                 // {"gpu_a100", ..., "tpu_v7x"}, sorted
//   ResolveChip("tpu_v5p");             // a built-in chip
//   ResolveChip("my/chip.textproto");   // a file: any argument with '/' or ending ".textproto"
//   ResolveChip("tpu_v9");              // NotFound: "unknown hardware 'tpu_v9'; known: gpu_a100,
//   ..."
//
// Built-in files report problems under their source path ("hardware/tpu_v5p.textproto:12:3: ...")
// and must name themselves after their file ("name" equals the file stem).
#ifndef PERFSIM_SIM_HW_CHIP_REGISTRY_H_
#define PERFSIM_SIM_HW_CHIP_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/hw/chip.h"
#include "sim/util/textproto.h"

namespace perfsim {

// Every hardware/*.textproto of the source tree at build time, sorted by path. Generated.
absl::Span<const EmbeddedTextProto> BuiltinHardwareFiles();

// Names of the built-in chips, sorted.
std::vector<std::string> BuiltinChipNames();

// Loads and validates the built-in chip `name`; NotFound listing the known names otherwise.
absl::StatusOr<Chip> LoadBuiltinChip(absl::string_view name);

// A built-in name, or a path to a .textproto file (see LooksLikeTextProtoPath).
absl::StatusOr<Chip> ResolveChip(absl::string_view name_or_path);

}  // namespace perfsim

#endif  // PERFSIM_SIM_HW_CHIP_REGISTRY_H_
