#include "sim/interp/npy.h"

#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct DtypeName {
  const char* descr;
  PrimitiveType type;
};

// Descriptors we write, and read.
constexpr DtypeName kDtypes[] = {
    {"|b1", PrimitiveType::kPred}, {"|i1", PrimitiveType::kS8},  {"<i2", PrimitiveType::kS16},
    {"<i4", PrimitiveType::kS32},  {"<i8", PrimitiveType::kS64}, {"|u1", PrimitiveType::kU8},
    {"<u2", PrimitiveType::kU16},  {"<u4", PrimitiveType::kU32}, {"<u8", PrimitiveType::kU64},
    {"<f2", PrimitiveType::kF16},  {"<f4", PrimitiveType::kF32}, {"<f8", PrimitiveType::kF64},
    {"<c8", PrimitiveType::kC64},  {"<c16", PrimitiveType::kC128},
};

std::optional<PrimitiveType> TypeOfDescr(absl::string_view descr) {
  for (const DtypeName& d : kDtypes) {
    if (descr == d.descr) return d.type;
  }
  // Single-byte types may be written with '<' or '='; ml_dtypes' bfloat16 is a 2-byte void.
  if (descr == "<b1" || descr == "=b1") return PrimitiveType::kPred;
  if (descr == "<i1" || descr == "=i1") return PrimitiveType::kS8;
  if (descr == "<u1" || descr == "=u1") return PrimitiveType::kU8;
  if (descr == "<V2" || descr == "|V2") return PrimitiveType::kBF16;
  return std::nullopt;
}

// The type an element type is stored as in a file: itself, or the unsigned type of its width.
absl::StatusOr<PrimitiveType> FileTypeOf(PrimitiveType type) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == type) return type;
  }
  if (IsFloatingPoint(type) && ByteWidth(type) == 2) return PrimitiveType::kU16;
  if (IsFloatingPoint(type) && ByteWidth(type) == 1) return PrimitiveType::kU8;
  return absl::InvalidArgumentError(
      absl::StrCat("npy: expected an element type NumPy can hold; got ", PrimitiveTypeName(type)));
}

const char* DescrOf(PrimitiveType file_type) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == file_type) return d.descr;
  }
  return "";
}

// The value text of `key` in the header dict, e.g. "'<f4'" or "(4, 8)".
std::optional<std::string> HeaderValue(absl::string_view header, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t at = header.find(quoted);
  if (at == absl::string_view::npos) return std::nullopt;
  at = header.find(':', at + quoted.size());
  if (at == absl::string_view::npos) return std::nullopt;
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  size_t end = at;
  if (at < header.size() && header[at] == '(') {
    end = header.find(')', at);
    if (end == absl::string_view::npos) return std::nullopt;
    ++end;
  } else if (at < header.size() && header[at] == '\'') {
    end = header.find('\'', at + 1);
    if (end == absl::string_view::npos) return std::nullopt;
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(at, end - at)));
}

}  // namespace

absl::StatusOr<Literal> ParseNpy(absl::string_view bytes) {
  if (bytes.size() < kMagicSize + 4 ||
      bytes.substr(0, kMagicSize) != absl::string_view(kMagic, kMagicSize)) {
    return absl::InvalidArgumentError("npy: expected the \\x93NUMPY magic; got something else");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return absl::InvalidArgumentError("npy: expected a header; got a truncated file");
    uint32_t len = 0;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: expected format version 1, 2 or 3; got ", major));
  }
  if (bytes.size() < offset + header_len) {
    return absl::InvalidArgumentError("npy: expected a header; got a truncated file");
  }
  const absl::string_view header = bytes.substr(offset, header_len);
  const std::optional<std::string> descr = HeaderValue(header, "descr");
  const std::optional<std::string> fortran = HeaderValue(header, "fortran_order");
  const std::optional<std::string> shape_text = HeaderValue(header, "shape");
  if (!descr.has_value() || !fortran.has_value() || !shape_text.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: expected descr, fortran_order and shape in the header; got ", header));
  }
  if (*fortran != "False") {
    return absl::InvalidArgumentError("npy: expected fortran_order False (C order); got True");
  }
  const std::string d = descr->size() >= 2 ? descr->substr(1, descr->size() - 2) : *descr;
  const std::optional<PrimitiveType> type = TypeOfDescr(d);
  if (!type.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: expected a supported dtype (",
                     "bool, int8..64, uint8..64, float16/32/64, complex64/128); got '", d, "'"));
  }
  if (shape_text->size() < 2 || shape_text->front() != '(' || shape_text->back() != ')') {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: expected a shape tuple such as (4, 8); got '", *shape_text, "'"));
  }
  std::vector<int64_t> dims;
  const absl::string_view inner = absl::string_view(*shape_text).substr(1, shape_text->size() - 2);
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("npy: expected a shape of non-negative sizes; got ", *shape_text));
    }
    dims.push_back(dim);
  }
  const Shape shape = Shape::Array(*type, dims);
  if (absl::Status valid = ValidateShape(shape); !valid.ok()) return Annotate(valid, "npy");
  const size_t data_bytes = static_cast<size_t>(shape.ElementCount() * ByteWidth(*type));
  const absl::string_view data = bytes.substr(offset + header_len);
  if (data.size() != data_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("npy: expected ", data_bytes, " data bytes for ",
                                                   shape.ToString(false), "; got ", data.size()));
  }
  std::vector<uint8_t> storage(data.begin(), data.end());
  if (*type == PrimitiveType::kPred) {
    for (uint8_t& b : storage) b = b != 0 ? 1 : 0;
  }
  return Literal::CreateFromBytes(shape, std::move(storage));
}

absl::StatusOr<std::string> SerializeNpy(const Literal& literal) {
  const Shape& shape = literal.shape();
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: expected an array; got ", shape.ToString(false)));
  }
  if (literal.elided())
    return absl::InvalidArgumentError("npy: expected values; got an elided literal");
  PERFSIM_ASSIGN_OR_RETURN(PrimitiveType file_type, FileTypeOf(shape.element_type()));
  std::string dims = absl::StrJoin(shape.dimensions(), ", ");
  if (shape.rank() == 1) absl::StrAppend(&dims, ",");
  std::string header = absl::StrCat("{'descr': '", DescrOf(file_type),
                                    "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces so that magic + length + header + '\n' is a multiple of 64.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(header.size());
  if (v2) {
    out.append(reinterpret_cast<const char*>(&len), 4);
  } else {
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>((len >> 8) & 0xff));
  }
  out.append(header);
  out.append(reinterpret_cast<const char*>(literal.data().data()), literal.data().size());
  return out;
}

absl::StatusOr<Literal> ReadNpyFile(const std::string& path,
                                    std::optional<PrimitiveType> expected_type) {
  PERFSIM_ASSIGN_OR_RETURN(const std::string bytes, ReadRegularFile(path, kMaxNpyBytes));
  absl::StatusOr<Literal> literal = ParseNpy(bytes);
  if (!literal.ok()) return Annotate(literal.status(), path);
  if (!expected_type.has_value() || literal->shape().element_type() == *expected_type) {
    return literal;
  }
  const PrimitiveType got = literal->shape().element_type();
  absl::StatusOr<PrimitiveType> file_type = FileTypeOf(*expected_type);
  if (file_type.ok() && *file_type == got && *file_type != *expected_type) {
    std::vector<uint8_t> storage(literal->data().begin(), literal->data().end());
    return Literal::CreateFromBytes(Shape::Array(*expected_type, literal->shape().dimensions()),
                                    std::move(storage));
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": expected ",
                                                 PrimitiveTypeName(*expected_type),
                                                 " elements; got ", PrimitiveTypeName(got)));
}

absl::Status WriteNpyFile(const std::string& path, const Literal& literal) {
  absl::StatusOr<std::string> bytes = SerializeNpy(literal);
  if (!bytes.ok()) return Annotate(bytes.status(), path);
  return WriteFileAtomically(path, *bytes);
}

}  // namespace perfsim
