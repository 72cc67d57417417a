// The lowering's typed annotations (proto/annotation.proto, sim/lowering/annotations.h): every
// backend annotates what it builds, and a printed lowered module parses back to the same
// annotations, op by op.
#include "sim/lowering/annotations.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/lowering/lowering.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::TestStepSpec;
using ::perfsim::testing::WithSquareExperts;

// The stage op_name "moe/<stage>" names in the metadata ("" when none): what dumps show.
std::string OpNameStage(const Instruction& i) {
  const std::string& m = i.attributes().metadata;
  const size_t at = m.find("op_name=\"moe/");
  if (at == std::string::npos) return "";
  return m.substr(at + 13, m.find('"', at + 13) - at - 13);
}

// The group-sizes operand of a grouped matmul; null for other instructions.
const Instruction* GroupSizesOperand(const Instruction& i) {
  if (i.opcode() == Opcode::kRaggedDot) return i.operand(2);
  if (i.opcode() != Opcode::kCustomCall) return nullptr;
  const std::string& target = i.attributes().custom_call_target;
  if (target == kGmmTarget || target == kTgmmTarget) return i.operand(2);
  if (target == kFusedFfnTarget) return i.operand(4);
  return nullptr;
}

bool IsKernel(const Instruction& i) {
  if (i.opcode() == Opcode::kRaggedDot) return true;
  const std::string& target = i.attributes().custom_call_target;
  return i.opcode() == Opcode::kCustomCall &&
         (target == kGmmTarget || target == kTgmmTarget || target == kFusedFfnTarget);
}

// Prints `module`, parses it back and compares the annotations op by op; printing again gives
// the same text.
void ExpectRoundTripsThroughText(const Module& module, const std::string& label) {
  const std::string text = PrintModule(module);
  absl::StatusOr<std::unique_ptr<Module>> parsed = ParseHloModule(text, label);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::map<std::string, const Instruction*> by_name;
  for (const auto& i : (*parsed)->entry()->instructions()) by_name[i->name()] = i.get();
  for (const auto& i : module.entry()->instructions()) {
    auto it = by_name.find(i->name());
    ASSERT_NE(it, by_name.end()) << i->name();
    const Instruction& back = *it->second;
    ASSERT_EQ(back.annotation() == nullptr, i->annotation() == nullptr) << i->name();
    if (i->annotation() == nullptr) continue;
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(*back.annotation(), *i->annotation()))
        << i->name() << ": " << back.annotation()->ShortDebugString() << " vs "
        << i->annotation()->ShortDebugString();
    EXPECT_EQ(back.attributes().frontend_attributes, i->attributes().frontend_attributes)
        << i->name();
  }
  EXPECT_EQ(PrintModule(**parsed), text);
}

// Lowers `spec` on `devices` with the backend's default parallelism.
absl::StatusOr<LoweredStep> Lower(const MoeBackend& backend, StepSpec spec, int64_t devices) {
  spec.parallelism = backend.DefaultParallelism(devices, spec);
  return LowerStepWith(spec, backend);
}

TEST(LoweringAnnotations, EveryBackendAnnotatesAndRoundTripsThroughText) {
  int kernels = 0, ragged = 0, exchanges = 0;
  for (const MoeBackend* backend : Backends()) {
    for (Phase phase : {Phase::kForward, Phase::kForwardBackward}) {
      for (int64_t devices : {1, 4}) {
        const std::string label =
            absl::StrCat(backend->name(), " ", PhaseName(phase), " ", devices, " devices");
        SCOPED_TRACE(label);
        absl::StatusOr<LoweredStep> step =
            Lower(*backend, TestStepSpec("nano", std::string(backend->name()), phase), devices);
        ASSERT_TRUE(step.ok()) << step.status();
        const Computation& entry = *step->module->entry();
        for (int64_t p = 0; p < entry.parameter_count(); ++p) {
          const Instruction& parameter = *entry.parameter(p);
          ASSERT_NE(parameter.annotation(), nullptr) << parameter.name();
          EXPECT_NE(parameter.annotation()->role(), Annotation::ROLE_UNSPECIFIED)
              << parameter.name();
          EXPECT_EQ(parameter.annotation()->role(), step->parameters[p].role);
        }
        for (const auto& i : entry.instructions()) {
          if (i->opcode() == Opcode::kParameter || i.get() == entry.root()) continue;
          // Stage and phase on everything a stage built, equal to what op_name says.
          ASSERT_NE(i->annotation(), nullptr) << i->name();
          const std::optional<Stage> stage = StageOfAnnotation(i->annotation());
          ASSERT_TRUE(stage.has_value()) << i->name();
          EXPECT_EQ(StageName(*stage), OpNameStage(*i)) << i->name();
          EXPECT_EQ(i->annotation()->phase(), AnnotationPhase(*stage)) << i->name();
          if (IsKernel(*i)) {
            ++kernels;
            EXPECT_GT(i->annotation()->kernel().tm(), 0) << i->name();
            EXPECT_GT(i->annotation()->kernel().tk(), 0) << i->name();
            EXPECT_GT(i->annotation()->kernel().tn(), 0) << i->name();
          }
          if (const Instruction* sizes = GroupSizesOperand(*i); sizes != nullptr) {
            ++ragged;
            ASSERT_NE(sizes->annotation(), nullptr) << i->name() << " " << sizes->name();
            const RaggedSizes& r = sizes->annotation()->ragged();
            EXPECT_NE(r.rows(), RaggedSizes::ROWS_UNSPECIFIED) << sizes->name();
            EXPECT_EQ(r.group_count(), sizes->shape().dimensions(0)) << sizes->name();
          }
          // Every exchange declares what its receive buffer holds (checks.h).
          if (i->opcode() == Opcode::kRaggedAllToAll) {
            ++exchanges;
            EXPECT_NE(i->annotation()->buffer().received(), RaggedBuffer::RECEIVED_UNSPECIFIED)
                << i->name();
          }
        }

        ExpectRoundTripsThroughText(*step->module, label);
      }
    }
  }
  EXPECT_GT(kernels, 0);
  EXPECT_GT(ragged, 0);
  EXPECT_GT(exchanges, 0);
}

TEST(LoweringAnnotations, ReceiveBuffersDeclareAlignmentAndTruncationAndRoundTrip) {
  // grouped_gemm_aligned on 4 devices (ep = 4) with --align-size 8 pads each expert's rows to a
  // multiple of 8: its exchanges and its received group sizes declare A = 8. ep_ragged_a2a on
  // ep = 2 with ragged_buffer_factor 1.5 truncates to int(T_l·K·1.5) = int(32·2·1.5) = 96 rows:
  // the dispatch, the combine's transpose and the received group sizes declare it.
  struct Case {
    std::string backend;
    int64_t devices;
    int64_t align_size;
    double factor;
    std::string dispatch;        // the dispatch's buffer, in text format
    std::string combine;         // the combine's buffer
    RaggedSizes expected_sizes;  // align and truncated_rows of the received group sizes
  };
  RaggedSizes aligned, truncated;
  aligned.set_align(8);
  truncated.set_truncated_rows(96);
  for (const Case& c :
       {Case{"grouped_gemm_aligned", 4, 8, 0, "received: RECEIVED_EXPERT_ROWS align: 8",
             "received: RECEIVED_TOKEN_ROWS align: 8", aligned},
        Case{"ep_ragged_a2a", 2, 0, 1.5, "received: RECEIVED_EXPERT_ROWS truncated_rows: 96",
             "received: RECEIVED_TOKEN_ROWS", truncated}}) {
    SCOPED_TRACE(c.backend);
    StepSpec spec = TestStepSpec("nano", c.backend, Phase::kForwardBackward);
    spec.knobs.align_size = c.align_size;
    if (c.factor > 0) spec.knobs.ragged_buffer_factor = c.factor;
    absl::StatusOr<LoweredStep> step = Lower(**FindBackend(c.backend), spec, c.devices);
    ASSERT_TRUE(step.ok()) << step.status();
    int exchanges = 0, received_sizes = 0;
    for (const auto& i : step->module->entry()->instructions()) {
      const Annotation* a = i->annotation();
      if (a == nullptr) continue;
      if (i->opcode() == Opcode::kRaggedAllToAll) {
        ++exchanges;
        // The transposes receive what the other direction's forward receives: combine_bwd the
        // dispatch's expert rows, dispatch_bwd the combine's token rows.
        const std::string stage = StageNameOf(*i);
        const std::string& want =
            stage == "dispatch" || stage == "combine_bwd" ? c.dispatch : c.combine;
        EXPECT_EQ(a->buffer().ShortDebugString(), want) << i->name() << " (" << stage << ")";
      }
      if (a->ragged().rows() == RaggedSizes::ROWS_EP_GROUP) {
        ++received_sizes;
        EXPECT_EQ(a->ragged().align(), c.expected_sizes.align()) << i->name();
        EXPECT_EQ(a->ragged().truncated_rows(), c.expected_sizes.truncated_rows()) << i->name();
      }
    }
    EXPECT_EQ(exchanges, 4);  // dispatch, combine, and their transposes
    EXPECT_GT(received_sizes, 0);
    ExpectRoundTripsThroughText(*step->module, c.backend);
  }
}

TEST(LoweringAnnotations, RaggedDotsNameTheirProjectionEvenWithSquareExperts) {
  // With F = D the shapes of wi's and wo's ragged-dots are equal; the annotation still says
  // which weight each one multiplies, so each takes its own projection's tiling.
  StepSpec spec =
      WithSquareExperts(TestStepSpec("nano", "sparse_ragged_dot", Phase::kForwardBackward));
  spec.knobs.wi.fwd = {16, 40, 40};
  spec.knobs.wo.fwd = {8, 40, 40};
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  int wi = 0, wo = 0;
  for (const auto& i : step->module->entry()->instructions()) {
    if (i->opcode() != Opcode::kRaggedDot) continue;
    ASSERT_NE(i->annotation(), nullptr) << i->name();
    const Kernel& k = i->annotation()->kernel();
    EXPECT_EQ(k.kernel(), Kernel::KERNEL_RAGGED_DOT);
    // Forward and dlhs read the weight as operand 1.
    const std::string weight =
        i->shape().rank() == 2 ? std::string(i->operand(1)->name()) : std::string();
    if (weight == "wo") {
      EXPECT_EQ(k.projection(), Kernel::PROJECTION_WO) << i->name();
    }
    if (weight == "wi_0" || weight == "wi_1") {
      EXPECT_EQ(k.projection(), Kernel::PROJECTION_WI) << i->name();
    }
    const GmmTiling& knob = k.projection() == Kernel::PROJECTION_WO ? spec.knobs.wo.fwd
                                                                   : spec.knobs.wi.fwd;
    EXPECT_EQ(k.tm(), knob.tm) << i->name();
    (k.projection() == Kernel::PROJECTION_WO ? wo : wi) += 1;
  }
  EXPECT_EQ(wi, 6);  // wi_0, wi_1: forward, dlhs, drhs
  EXPECT_EQ(wo, 3);  // wo: forward, dlhs, drhs
}

}  // namespace
}  // namespace perfsim
