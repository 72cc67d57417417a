// Typed annotations in HLO text (sim/ir/annotation.h): parse, print, parse again; errors.
#include "sim/ir/annotation.h"

#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

const Instruction& Find(const Module& module, absl::string_view name) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->name() == name) return *instruction;
  }
  ADD_FAILURE() << "no instruction " << name;
  return *module.entry()->root();
}

Annotation Sample() {
  Annotation a;
  a.set_stage(Annotation::STAGE_EXPERTS_BWD);
  a.set_phase(Annotation::PHASE_BACKWARD);
  Kernel* k = a.mutable_kernel();
  k->set_kernel(Kernel::KERNEL_GMM);
  k->set_projection(Kernel::PROJECTION_WO);
  k->set_tm(512);
  k->set_tk(1024);
  k->set_tn(256);
  k->set_transpose_rhs(true);
  RaggedSizes* r = a.mutable_ragged();
  r->set_rows(RaggedSizes::ROWS_EP_GROUP);
  r->set_group_offset_per_ep_rank(8);
  r->set_group_count(8);
  r->set_align(128);
  return a;
}

TEST(Annotation, EncodesOnOneLineWithoutQuotesAndDecodesBack) {
  const std::string text = EncodeAnnotation(Sample());
  EXPECT_EQ(text.find('"'), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("stage: STAGE_EXPERTS_BWD"));
  absl::StatusOr<Annotation> back = DecodeAnnotation(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, Sample()));
  EXPECT_EQ(EncodeAnnotation(*back), text);  // deterministic
}

TEST(Annotation, RoundTripsThroughHloTextBesideOtherFrontendAttributes) {
  const std::string value = EncodeAnnotation(Sample());
  const std::string text = absl::StrCat(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0), frontend_attributes={perfsim_annotation=")", value, R"("}
  ROOT n = f32[4] negate(p), frontend_attributes={_xla_stream_annotation="1",perfsim_annotation=")",
                                        value, R"(",b="x"}
})");
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "t.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  const Instruction& p = Find(**module, "p");
  const Instruction& n = Find(**module, "n");
  ASSERT_NE(p.annotation(), nullptr);
  ASSERT_NE(n.annotation(), nullptr);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*n.annotation(), Sample()));
  EXPECT_EQ(p.attributes().frontend_attributes, "");
  EXPECT_EQ(n.attributes().frontend_attributes, R"({_xla_stream_annotation="1",b="x"})");

  const std::string printed = PrintModule(**module);
  EXPECT_THAT(printed, HasSubstr(absl::StrCat(R"(frontend_attributes={perfsim_annotation=")",
                                              value, R"("})")));
  EXPECT_THAT(printed, HasSubstr(absl::StrCat(R"({_xla_stream_annotation="1",b="x",)",
                                              R"(perfsim_annotation=")", value, R"("})")));
  absl::StatusOr<std::unique_ptr<Module>> again = ParseHloModule(printed, "t2.hlo");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_NE(Find(**again, "n").annotation(), nullptr);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      *Find(**again, "n").annotation(), Sample()));
  EXPECT_EQ(Find(**again, "n").attributes().frontend_attributes,
            R"({_xla_stream_annotation="1",b="x"})");
  EXPECT_EQ(PrintModule(**again), printed);
}

TEST(Annotation, WithoutAnAnnotationFrontendAttributesStayVerbatim) {
  const std::string text = R"(HloModule m
ENTRY e {
  ROOT p = f32[4] parameter(0), frontend_attributes={a = "1" , b="{\"x\": 2}"}
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "t.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(Find(**module, "p").annotation(), nullptr);
  EXPECT_EQ(Find(**module, "p").attributes().frontend_attributes, R"({a = "1" , b="{\"x\": 2}"})");
}

TEST(Annotation, UnknownFieldIsAnErrorAtItsLineAndColumn) {
  const std::string text = R"(HloModule m
ENTRY e {
  ROOT p = f32[4] parameter(0), frontend_attributes={perfsim_annotation="stage: STAGE_ROUTER colour: 3"}
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "t.hlo");
  ASSERT_FALSE(module.ok());
  // The value starts after `frontend_attributes={perfsim_annotation="`, at column 74 of line 3.
  EXPECT_THAT(std::string(module.status().message()),
              HasSubstr("t.hlo:3:74: p: expected a perfsim_annotation in text format"));
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("colour"));
}

TEST(Annotation, UnknownEnumValueIsAnError) {
  const std::string text = R"(HloModule m
ENTRY e {
  ROOT p = f32[4] parameter(0), frontend_attributes={perfsim_annotation="stage: STAGE_LUNCH"}
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "t.hlo");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("STAGE_LUNCH"));
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("expected a perfsim_annotation"));
}

TEST(Annotation, UnquotedAnnotationIsAnError) {
  const std::string text = R"(HloModule m
ENTRY e {
  ROOT p = f32[4] parameter(0), frontend_attributes={perfsim_annotation=3}
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, "t.hlo");
  ASSERT_FALSE(module.ok());
  EXPECT_THAT(std::string(module.status().message()),
              HasSubstr("expected frontend_attributes as {key=\"value\",...}"));
}

}  // namespace
}  // namespace perfsim
