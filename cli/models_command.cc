// `perfsim models list|show`: the described MoE models.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "sim/moe/model_config.h"
#include "sim/moe/model_registry.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

constexpr char kModelsUsage[] = R"(usage: perfsim models list [--format=table|json]
       perfsim models show NAME|FILE.textproto [--format=table|json]

list: one row per built-in model: D (d_model), F (expert FFN), E (routed experts), K (experts per
      token), shared experts, MoE/total layers, router and activation.
show: every field of one model, plus derived per-token FLOPs and parameter counts. NAME is a
      built-in model (see 'perfsim models list'); an argument with '/' or ending in .textproto
      is read as a file, '-' reads the textproto from standard input. A file with problems exits
      2 and lists each as 'file:line:col: ...'.
--format=json prints machine-readable JSON: list, an array of ModelListEntry
(proto/report.proto); show, the description (field names as in proto/model.proto).
)";

// "sigmoid+bias grouped 4/8" etc.: the router in a few words.
std::string RouterWords(const ModelConfig& model) {
  const RouterSpec& router = model.proto().router();
  std::string words;
  switch (router.kind()) {
    case ROUTER_KIND_SOFTMAX_TOPK:
      words = "softmax,topk";
      break;
    case ROUTER_KIND_TOPK_SOFTMAX:
      words = "topk,softmax";
      break;
    case ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK:
      words = "sigmoid+bias";
      break;
    case ROUTER_KIND_SIGMOID_INPUT_PRESCALE:
      words = "sigmoid prescale";
      break;
    case ROUTER_KIND_UNSPECIFIED:
    case RouterKind_INT_MIN_SENTINEL_DO_NOT_USE_:
    case RouterKind_INT_MAX_SENTINEL_DO_NOT_USE_:
      words = "?";
      break;
  }
  if (router.num_groups() > 1) {
    absl::StrAppend(&words, " groups ", router.topk_groups(), "/", router.num_groups());
  }
  if (router.renormalize()) absl::StrAppend(&words, " renorm");
  if (router.routed_scaling_factor() != 1.0) {
    absl::StrAppend(&words, " x", FormatDouble(router.routed_scaling_factor()));
  }
  return words;
}

std::string ActivationWords(const ModelConfig& model) {
  const ActivationSpec& activation = model.proto().activation();
  switch (activation.kind()) {
    case ACTIVATION_KIND_SILU:
      return activation.gated() ? "swiglu" : "silu";
    case ACTIVATION_KIND_GELU:
      return activation.gated() ? "geglu" : "gelu";
    case ACTIVATION_KIND_CLIPPED_SWIGLU:
      return absl::StrCat("clipped swiglu (", FormatDouble(activation.clip_limit()), ", ",
                          FormatDouble(activation.sigmoid_alpha()), ")");
    case ACTIVATION_KIND_UNSPECIFIED:
    case ActivationKind_INT_MIN_SENTINEL_DO_NOT_USE_:
    case ActivationKind_INT_MAX_SENTINEL_DO_NOT_USE_:
      break;
  }
  return "?";
}

int ListModels(const std::string& format, CliIo& io) {
  std::vector<ModelConfig> models;
  for (const std::string& name : BuiltinModelNames()) {
    absl::StatusOr<ModelConfig> model = LoadBuiltinModel(name);
    // A built-in file that does not load is a perfsim bug (the tests load every one).
    if (!model.ok()) return ReportStatus(absl::InternalError(model.status().message()), io);
    models.push_back(*std::move(model));
  }
  if (format == "json") {
    std::vector<report::ModelListEntry> entries;
    for (const ModelConfig& m : models) {
      report::ModelListEntry& e = entries.emplace_back();
      e.set_name(m.name());
      e.set_display_name(m.proto().display_name());
      e.set_d_model(m.d_model());
      e.set_expert_ffn_dim(m.expert_ffn_dim());
      e.set_num_experts(m.num_experts());
      e.set_experts_per_token(m.experts_per_token());
      e.set_num_shared_experts(m.num_shared_experts());
      e.set_num_moe_layers(m.proto().num_moe_layers());
      e.set_num_layers(m.proto().num_layers());
      e.set_router(RouterWords(m));
      e.set_activation(ActivationWords(m));
    }
    io.out << ReportJsonArray(entries);
    return kExitOk;
  }
  static constexpr char kRow[] = "{:<16} {:>5} {:>6} {:>4} {:>2} {:>6} {:>7}  {:<36} {}\n";
  io.out << fmt::format(kRow, "name", "D", "F", "E", "K", "shared", "layers", "router",
                        "activation");
  for (const ModelConfig& m : models) {
    io.out << fmt::format(kRow, m.name(), m.d_model(), m.expert_ffn_dim(), m.num_experts(),
                          m.experts_per_token(), m.num_shared_experts(),
                          absl::StrCat(m.proto().num_moe_layers(), "/", m.proto().num_layers()),
                          RouterWords(m), ActivationWords(m));
  }
  return kExitOk;
}

int ShowModel(const std::string& name_or_path, const std::string& format, CliIo& io) {
  absl::StatusOr<ModelConfig> loaded = LoadDescriptionArgument<ModelConfig>(
      name_or_path, io.in, "model", ResolveModel, ModelConfig::FromText);
  if (!loaded.ok()) return ReportStatus(loaded.status(), io);
  const ModelConfig& m = *loaded;
  if (format == "json") {
    io.out << ProtoToJson(m.proto());
    return kExitOk;
  }
  io.out << fmt::format("{}: {}\n", m.name(), m.proto().display_name());
  for (const ProtoFieldLine& line : DescribeProtoFields(m.proto(), /*include_unset=*/true)) {
    if (line.path == "name" || line.path == "display_name") continue;
    io.out << fmt::format("  {:<36} {:>22}", line.path, line.value)
           << (line.human.empty() ? "" : "  " + line.human) << "\n";
  }
  static constexpr char kDerived[] = "  {:<36} {:>22}  {}\n";
  io.out << "derived (one MoE layer, forward):\n";
  io.out << fmt::format(kDerived, "routed_flops_per_token", m.RoutedFlopsPerToken(),
                        "2*K*matrices*D*F");
  io.out << fmt::format(kDerived, "shared_flops_per_token", m.SharedFlopsPerToken(),
                        "2*shared*matrices*D*F_shared");
  io.out << fmt::format(kDerived, "router_flops_per_token", m.RouterFlopsPerToken(), "2*D*E");
  io.out << fmt::format(kDerived, "params_per_expert", m.ParamsPerExpert(), "matrices*D*F");
  io.out << fmt::format(kDerived, "bytes_per_expert", m.BytesPerExpert(),
                        FormatQuantity("bytes", static_cast<double>(m.BytesPerExpert())));
  io.out << fmt::format(kDerived, "routed_params_per_moe_layer", m.RoutedParamsPerMoeLayer(),
                        "E*params_per_expert");
  io.out << fmt::format(kDerived, "routed_params_total", m.RoutedParamsTotal(),
                        "num_moe_layers*E*params_per_expert");
  return kExitOk;
}

}  // namespace

int RunModelsCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"format", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kModelsUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  const std::vector<std::string>& positional = flags->positional();
  if (positional.size() == 1 && positional[0] == "list") return ListModels(*format, io);
  if (positional.size() == 2 && positional[0] == "show") {
    return ShowModel(positional[1], *format, io);
  }
  io.err << kModelsUsage;
  return kExitBadInput;
}

}  // namespace perfsim
