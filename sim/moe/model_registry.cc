#include "sim/moe/model_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/status.h"

namespace perfsim {

std::vector<std::string> BuiltinModelNames() {
  std::vector<std::string> names;
  for (const EmbeddedTextProto& file : BuiltinModelFiles()) names.emplace_back(file.name);
  return names;  // Sorted: the files are sorted by path and all live in models/.
}

absl::StatusOr<ModelConfig> LoadBuiltinModel(absl::string_view name) {
  const EmbeddedTextProto* file = FindEmbeddedTextProto(BuiltinModelFiles(), name);
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown model '", name,
                                            "'; known: ", absl::StrJoin(BuiltinModelNames(), ", "),
                                            " (or a path to a .textproto file)"));
  }
  ModelSpec proto;
  PERFSIM_ASSIGN_OR_RETURN(TextProtoSource source,
                           ParseTextProto(file->contents, file->path, &proto));
  if (proto.name() != file->name) {
    return absl::InvalidArgumentError(absl::StrCat(source.Where("name"), ": name: expected \"",
                                                   file->name, "\" (the file name); got \"",
                                                   proto.name(), "\""));
  }
  return ModelConfig::FromProto(std::move(proto), &source);
}

absl::StatusOr<ModelConfig> ResolveModel(absl::string_view name_or_path) {
  if (LooksLikeTextProtoPath(name_or_path)) return ModelConfig::Load(std::string(name_or_path));
  return LoadBuiltinModel(name_or_path);
}

}  // namespace perfsim
