// The lowering's side of the typed annotations (proto/annotation.proto): the Stage <-> enum
// mapping, and small helpers that add to an instruction's annotation.
//
//   UpdateAnnotation(op, [](Annotation& a) { a.set_role(Annotation::ROLE_COTANGENT); });
//   StageOfAnnotation(instruction.annotation());   // Stage::kExperts, or nullopt
//
// Readers (sim/predict, the static checks) take a stage from here, never from op_name text.
#ifndef PERFSIM_SIM_LOWERING_ANNOTATIONS_H_
#define PERFSIM_SIM_LOWERING_ANNOTATIONS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/annotation.pb.h"
#include "sim/ir/instruction.h"
#include "sim/moe/step_graph.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

Annotation::Stage AnnotationStage(Stage stage);
// Forward for the forward stages, backward for the *_bwd ones and grad_sync.
Annotation::Phase AnnotationPhase(Stage stage);
// The stage an annotation names; nullopt when there is none (or it is unspecified).
std::optional<Stage> StageOfAnnotation(const Annotation* annotation);
// StageName of the annotated stage, "" when none.
std::string StageNameOf(const Instruction& instruction);

// Copies the instruction's annotation (or an empty one), lets `update` change it, stores it.
void UpdateAnnotation(Instruction* instruction, const std::function<void(Annotation&)>& update);

// The kernel configuration of a grouped-matmul call or ragged-dot.
Kernel KernelConfig(Kernel::Name kernel, Kernel::Projection projection, const GmmTiling& tiling,
                    bool transpose_rhs = false);
// "wi.fwd", "wo.dlhs", ... -> the projection; unspecified for anything else.
Kernel::Projection ProjectionOfRole(absl::string_view role);

// The knob a grouped-matmul kernel's tiling comes from, read back from its typed annotation:
// "wi.fwd", "wi.dlhs" (gmm with the rhs transposed: the input gradient), "wi.drhs" (tgmm: the
// weight gradient), and the same for "wo"; "" for any other kernel or a projection not named.
std::string KernelRoleOf(const Kernel& kernel);

// The routing a lowered module's ragged sizes come from (proto/annotation.proto RoutingShape,
// sim/moe/ragged_sizes.h RoutingLayout::ForStep(spec)), written where a reader needs it:
// into every RaggedSizes annotation, and as a RaggedTransfer on every ragged-all-to-all, whose
// direction its stage gives (dispatch and combine_bwd send towards the experts; combine and
// dispatch_bwd back; a ragged-all-to-all without a stage gets none). LowerStep calls it last,
// so that `lower` -> print -> `predict --hlo --routing` can draw the sizes predict draws.
void AnnotateRouting(const StepSpec& spec, Module& module);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_ANNOTATIONS_H_
