#include "sim/hw/chip_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/status.h"

namespace perfsim {

std::vector<std::string> BuiltinChipNames() {
  std::vector<std::string> names;
  for (const EmbeddedTextProto& file : BuiltinHardwareFiles()) names.emplace_back(file.name);
  return names;  // Sorted: the files are sorted by path and all live in hardware/.
}

absl::StatusOr<Chip> LoadBuiltinChip(absl::string_view name) {
  const EmbeddedTextProto* file = FindEmbeddedTextProto(BuiltinHardwareFiles(), name);
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown hardware '", name,
                                            "'; known: ", absl::StrJoin(BuiltinChipNames(), ", "),
                                            " (or a path to a .textproto file)"));
  }
  HardwareSpec proto;
  PERFSIM_ASSIGN_OR_RETURN(TextProtoSource source,
                           ParseTextProto(file->contents, file->path, &proto));
  if (proto.name() != file->name) {
    return absl::InvalidArgumentError(absl::StrCat(source.Where("name"), ": name: expected \"",
                                                   file->name, "\" (the file name); got \"",
                                                   proto.name(), "\""));
  }
  return Chip::FromProto(std::move(proto), &source);
}

absl::StatusOr<Chip> ResolveChip(absl::string_view name_or_path) {
  if (LooksLikeTextProtoPath(name_or_path)) return Chip::Load(std::string(name_or_path));
  return LoadBuiltinChip(name_or_path);
}

}  // namespace perfsim
