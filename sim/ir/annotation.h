// Typed annotations (proto/annotation.proto) in HLO text: one frontend attribute,
//
//   frontend_attributes={perfsim_annotation="stage: STAGE_EXPERTS phase: PHASE_FORWARD"}
//
// whose value is the Annotation in protobuf text format on one line (deterministic: field
// order, defaults left out). The parser (hlo_parser_attributes.cc) takes the entry out of
// frontend_attributes into InstructionAttributes::annotation; the printer (hlo_printer.cc)
// puts it back as the last entry. Other frontend attributes are kept verbatim.
//
//   std::string v = EncodeAnnotation(a);               // "stage: STAGE_ROUTER phase: ..."
//   absl::StatusOr<Annotation> b = DecodeAnnotation(v);
//   FrontendAttributesText(attributes);                // "{x=\"1\",perfsim_annotation=\"...\"}"
#ifndef PERFSIM_SIM_IR_ANNOTATION_H_
#define PERFSIM_SIM_IR_ANNOTATION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/annotation.pb.h"
#include "sim/ir/attributes.h"

namespace perfsim {

inline constexpr char kAnnotationKey[] = "perfsim_annotation";

// The text-format value, single line, no trailing space.
std::string EncodeAnnotation(const Annotation& annotation);
// InvalidArgument "expected an Annotation in text format (proto/annotation.proto); got
// \"<text>\": <column>: <what protobuf said>" for an unknown field, enum value or bad syntax.
absl::StatusOr<Annotation> DecodeAnnotation(absl::string_view text);

// `raw` is a frontend_attributes value as written (`{k="v",...}`). Removes the
// perfsim_annotation entry from `raw` and decodes it into `*annotation` (left null when there is
// none). On a malformed entry returns InvalidArgument; `*error_offset` is then the offset in
// `raw` where the entry's value starts.
absl::Status TakeAnnotation(std::string& raw, std::shared_ptr<const Annotation>* annotation,
                            size_t* error_offset);

// The frontend_attributes text to print: the kept entries plus the annotation, "" when neither.
std::string FrontendAttributesText(const InstructionAttributes& attributes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_ANNOTATION_H_
