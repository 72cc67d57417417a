// Annotation helpers of the lowering (annotations.h).
#include "sim/lowering/annotations.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/moe/ragged_sizes.h"

namespace perfsim {

Annotation::Stage AnnotationStage(Stage stage) {
  // proto/annotation.proto lists the stages in Stage's order, from 1.
  return static_cast<Annotation::Stage>(static_cast<int>(stage) + 1);
}

Annotation::Phase AnnotationPhase(Stage stage) {
  switch (stage) {
    case Stage::kWeightGather:
    case Stage::kRouter:
    case Stage::kPermute:
    case Stage::kDispatch:
    case Stage::kExperts:
    case Stage::kCombine:
    case Stage::kSharedExpert:
    case Stage::kOutput: return Annotation::PHASE_FORWARD;
    case Stage::kWeightGatherBwd:
    case Stage::kCombineBwd:
    case Stage::kExpertsBwd:
    case Stage::kDispatchBwd:
    case Stage::kPermuteBwd:
    case Stage::kRouterBwd:
    case Stage::kSharedExpertBwd:
    case Stage::kGradSync: return Annotation::PHASE_BACKWARD;
  }
  return Annotation::PHASE_UNSPECIFIED;
}

std::optional<Stage> StageOfAnnotation(const Annotation* annotation) {
  if (annotation == nullptr) return std::nullopt;
  const int value = static_cast<int>(annotation->stage());
  if (value < 1 || value > static_cast<int>(Stage::kGradSync) + 1) return std::nullopt;
  return static_cast<Stage>(value - 1);
}

std::string StageNameOf(const Instruction& instruction) {
  const std::optional<Stage> stage = StageOfAnnotation(instruction.annotation());
  return stage.has_value() ? std::string(StageName(*stage)) : std::string();
}

void UpdateAnnotation(Instruction* instruction, const std::function<void(Annotation&)>& update) {
  Annotation a = instruction->annotation() != nullptr ? *instruction->annotation() : Annotation();
  update(a);
  instruction->set_annotation(std::make_shared<const Annotation>(std::move(a)));
}

Kernel KernelConfig(Kernel::Name kernel, Kernel::Projection projection, const GmmTiling& tiling,
                    bool transpose_rhs) {
  Kernel k;
  k.set_kernel(kernel);
  k.set_projection(projection);
  k.set_tm(tiling.tm);
  k.set_tk(tiling.tk);
  k.set_tn(tiling.tn);
  k.set_transpose_rhs(transpose_rhs);
  return k;
}

Kernel::Projection ProjectionOfRole(absl::string_view role) {
  if (absl::StartsWith(role, "wi.")) return Kernel::PROJECTION_WI;
  if (absl::StartsWith(role, "wo.")) return Kernel::PROJECTION_WO;
  return Kernel::PROJECTION_UNSPECIFIED;
}

std::string KernelRoleOf(const Kernel& kernel) {
  absl::string_view weight;
  switch (kernel.projection()) {
    case Kernel::PROJECTION_WI: weight = "wi"; break;
    case Kernel::PROJECTION_WO: weight = "wo"; break;
    case Kernel::PROJECTION_UNSPECIFIED:
    case Kernel_Projection_Kernel_Projection_INT_MIN_SENTINEL_DO_NOT_USE_:
    case Kernel_Projection_Kernel_Projection_INT_MAX_SENTINEL_DO_NOT_USE_: return "";
  }
  switch (kernel.kernel()) {
    case Kernel::KERNEL_GMM: return absl::StrCat(weight, kernel.transpose_rhs() ? ".dlhs" : ".fwd");
    case Kernel::KERNEL_TGMM: return absl::StrCat(weight, ".drhs");
    case Kernel::KERNEL_UNSPECIFIED:
    case Kernel::KERNEL_FUSED_FFN:
    case Kernel::KERNEL_RAGGED_DOT:
    case Kernel::KERNEL_FLASH_ATTENTION:
    case Kernel::KERNEL_FLASH_ATTENTION_BWD:
    case Kernel_Name_Kernel_Name_INT_MIN_SENTINEL_DO_NOT_USE_:
    case Kernel_Name_Kernel_Name_INT_MAX_SENTINEL_DO_NOT_USE_: return "";
  }
  return "";
}

void AnnotateRouting(const StepSpec& spec, Module& module) {
  const RoutingShape shape = RoutingLayout::ForStep(spec).ToProto();
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const Annotation* annotation = instruction->annotation();
      if (annotation != nullptr && annotation->has_ragged()) {
        UpdateAnnotation(instruction.get(),
                         [&](Annotation& a) { *a.mutable_ragged()->mutable_routing() = shape; });
      }
      if (instruction->opcode() != Opcode::kRaggedAllToAll) continue;
      const std::optional<Stage> stage = StageOfAnnotation(annotation);
      if (!stage.has_value()) continue;
      // sim/predict's rule (prepare.cc): towards the experts in dispatch and combine_bwd.
      const bool to_experts = *stage == Stage::kDispatch || *stage == Stage::kCombineBwd;
      UpdateAnnotation(instruction.get(), [&](Annotation& a) {
        RaggedTransfer& traffic = *a.mutable_traffic();
        traffic.set_direction(to_experts ? RaggedTransfer::DIRECTION_TO_EXPERTS
                                         : RaggedTransfer::DIRECTION_FROM_EXPERTS);
        *traffic.mutable_routing() = shape;
      });
    }
  }
}

}  // namespace perfsim
