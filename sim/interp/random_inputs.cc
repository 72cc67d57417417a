#include "sim/interp/random_inputs.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sim/interp/custom_calls.h"
#include "sim/interp/element_types.h"
#include "sim/ir/float_types.h"
#include "sim/util/status.h"

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics as maybe
// uninitialised; the warning's location is the header, so it is silenced there.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define PERFSIM_RANDOM_INPUTS_AVX512 1
#endif

namespace perfsim {
namespace {

// SplitMix64: a small, fixed, platform-independent generator.
class Stream {
 public:
  Stream(uint64_t seed, uint64_t device, uint64_t parameter)
      : state_(seed * 0x9e3779b97f4a7c15ull ^ (device + 1) * 0xbf58476d1ce4e5b9ull ^
               (parameter + 1) * 0x94d049bb133111ebull) {}
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;
  static constexpr uint64_t kMul1 = 0xbf58476d1ce4e5b9ull;
  static constexpr uint64_t kMul2 = 0x94d049bb133111ebull;
  uint64_t Next() {
    uint64_t z = (state_ += kGamma);
    z = (z ^ (z >> 30)) * kMul1;
    z = (z ^ (z >> 27)) * kMul2;
    return z ^ (z >> 31);
  }
  // The state Next() mixes for its next draw is state() + kGamma (the draw after that adds
  // kGamma again): vector code draws lanes from it without stepping a Stream.
  uint64_t state() const { return state_; }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
  // Uniform in [0, n), n >= 1.
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }
  // This stream `count` draws later: SplitMix64's state moves by a constant per draw, so a
  // chunk of an array can be drawn without drawing what comes before it.
  Stream Skipped(uint64_t count) const {
    Stream later = *this;
    later.state_ += count * kGamma;
    return later;
  }

 private:
  uint64_t state_;
};

struct IntRule {
  enum class Kind { kUniform, kGroupSizes, kZeros };
  Kind kind = Kind::kUniform;
  int64_t hi = 8;    // kUniform: values in [0, hi)
  int64_t rows = 0;  // kGroupSizes: the sizes sum to this
};

using Users =
    absl::flat_hash_map<const Instruction*, std::vector<std::pair<const Instruction*, int64_t>>>;

Users BuildUsers(const Module& module) {
  Users users;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      for (int64_t i = 0; i < instruction->operand_count(); ++i) {
        users[instruction->operand(i)].push_back({instruction.get(), i});
      }
    }
  }
  return users;
}

bool PassesValueThrough(Opcode op) {
  return op == Opcode::kReshape || op == Opcode::kBitcast || op == Opcode::kConvert ||
         op == Opcode::kCopy || op == Opcode::kBroadcast || op == Opcode::kSlice;
}

std::optional<IntRule> RuleForUse(const Instruction& user, int64_t index) {
  const InstructionAttributes& attrs = user.attributes();
  IntRule rule;
  const Opcode op = user.opcode();
  if (op == Opcode::kRaggedDot && index == 2 && attrs.ragged_dot_dimension_numbers.has_value() &&
      !attrs.ragged_dot_dimension_numbers->lhs_ragged_dimensions.empty()) {
    const int64_t r = attrs.ragged_dot_dimension_numbers->lhs_ragged_dimensions[0];
    const Shape& lhs = user.operand(0)->shape();
    if (r >= 0 && r < lhs.rank()) {
      rule.kind = IntRule::Kind::kGroupSizes;
      rule.rows = lhs.dimensions(r);
      return rule;
    }
  }
  if (op == Opcode::kCustomCall && index == 2 &&
      (attrs.custom_call_target == kGmmTarget || attrs.custom_call_target == kTgmmTarget)) {
    const Shape& lhs = user.operand(0)->shape();
    if (lhs.rank() == 2) {
      rule.kind = IntRule::Kind::kGroupSizes;
      rule.rows = lhs.dimensions(attrs.custom_call_target == kGmmTarget ? 0 : 1);
      return rule;
    }
  }
  // perfsim.fused_ffn(x [m, D], wi_0, wi_1, wo, group_sizes, ...): the groups split x's rows.
  if (op == Opcode::kCustomCall && index == 4 && attrs.custom_call_target == kFusedFfnTarget &&
      user.operand(0)->shape().rank() == 2) {
    rule.kind = IntRule::Kind::kGroupSizes;
    rule.rows = user.operand(0)->shape().dimensions(0);
    return rule;
  }
  if (op == Opcode::kRaggedAllToAll && index >= 2) {
    rule.kind = IntRule::Kind::kZeros;
    return rule;
  }
  if (op == Opcode::kDynamicSlice && index >= 1) {
    const Shape& in = user.operand(0)->shape();
    const int64_t d = index - 1;
    if (d < in.rank() && d < user.shape().rank()) {
      rule.hi = std::max<int64_t>(1, in.dimensions(d) - user.shape().dimensions(d) + 1);
      return rule;
    }
  }
  if (op == Opcode::kDynamicUpdateSlice && index >= 2) {
    const Shape& in = user.operand(0)->shape();
    const Shape& update = user.operand(1)->shape();
    const int64_t d = index - 2;
    if (d < in.rank() && d < update.rank()) {
      rule.hi = std::max<int64_t>(1, in.dimensions(d) - update.dimensions(d) + 1);
      return rule;
    }
  }
  auto min_dim = [](const Shape& s, const std::vector<int64_t>& dims) {
    int64_t m = -1;
    for (int64_t d : dims) {
      if (d >= 0 && d < s.rank()) m = m < 0 ? s.dimensions(d) : std::min(m, s.dimensions(d));
    }
    return std::max<int64_t>(1, m < 0 ? 1 : m);
  };
  if (op == Opcode::kGather && index == 1 && attrs.gather_dimension_numbers.has_value()) {
    rule.hi = min_dim(user.operand(0)->shape(), attrs.gather_dimension_numbers->start_index_map);
    return rule;
  }
  if (op == Opcode::kScatter && index == (user.operand_count() - 1) / 2 &&
      attrs.scatter_dimension_numbers.has_value()) {
    rule.hi = min_dim(user.operand(0)->shape(),
                      attrs.scatter_dimension_numbers->scatter_dims_to_operand_dims);
    return rule;
  }
  return std::nullopt;
}

IntRule FindRule(const Instruction* parameter, const Users& users) {
  std::deque<const Instruction*> work = {parameter};
  absl::flat_hash_set<const Instruction*> seen = {parameter};
  auto push = [&](const Instruction* i) {
    if (i != nullptr && seen.insert(i).second) work.push_back(i);
  };
  while (!work.empty()) {
    const Instruction* value = work.front();
    work.pop_front();
    auto it = users.find(value);
    if (it == users.end()) continue;
    for (const auto& [user, index] : it->second) {
      if (std::optional<IntRule> rule = RuleForUse(*user, index)) return *rule;
      const Opcode op = user->opcode();
      if (PassesValueThrough(op)) {
        push(user);
      } else if (op == Opcode::kCall || op == Opcode::kFusion || op == Opcode::kAsyncStart) {
        const Computation* callee = user->to_apply() != nullptr
                                        ? user->to_apply()
                                        : (user->calls().empty() ? nullptr : user->calls()[0]);
        if (callee != nullptr && index < callee->parameter_count()) push(callee->parameter(index));
      }
    }
  }
  return IntRule{};
}

// bf16 bits of `value` rounded to nearest even in one step from the double, exactly as
// EncodeFloat (Literal::SetFromDouble) rounds it, for values in f32's normal range; others go
// through EncodeFloat.
uint16_t Bf16BitsFromDouble(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const int64_t exponent = static_cast<int64_t>((bits >> 52) & 0x7ff);
  if (exponent < 1023 - 126 || exponent > 1023 + 127) {
    return static_cast<uint16_t>(EncodeFloat(PrimitiveType::kBF16, value));
  }
  // Exponent rebiased to bf16's (f32's), mantissa below it: dropping 45 bits with a
  // round-to-nearest-even carry gives the bf16 magnitude (a carry into the exponent, up to
  // inf, is the correct rounding too).
  const uint64_t magnitude =
      (static_cast<uint64_t>(exponent - 1023 + 127) << 52) | (bits & ((uint64_t{1} << 52) - 1));
  uint64_t rounded = magnitude >> 45;
  const uint64_t rest = magnitude & ((uint64_t{1} << 45) - 1);
  const uint64_t half = uint64_t{1} << 44;
  // Without a branch: the carry is random, and a mispredicted branch per element cost more
  // than the rest of the draw.
  rounded += static_cast<uint64_t>(rest > half) | (static_cast<uint64_t>(rest == half) & rounded);
  return static_cast<uint16_t>(((bits >> 63) << 15) | rounded);
}

#ifdef PERFSIM_RANDOM_INPUTS_AVX512
// FillFloatRange for f32, f64 and bf16 with AVX-512 (8 draws at once): the same SplitMix64
// draws, the same doubles (2·(k·2^-53) − 1 and k·2^-52 − 1 are one rounding of the same exact
// value) and the same roundings (cvtpd_ps rounds to nearest even, as static_cast<float>
// does; bf16 by Bf16BitsFromDouble's integer steps, lane by lane). Values are in [-1, 1), so
// none is below bf16's normal range except 0, which the zero mask handles. Returns the
// first element it did not fill (a tail of fewer than 8 is left to the scalar loop).
__attribute__((target("avx512f,avx512dq"))) int64_t FillFloatRangeAvx512(PrimitiveType type,
                                                                         int64_t begin, int64_t end,
                                                                         uint64_t state,
                                                                         uint8_t* data) {
  const __m512i lane = _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1);
  __m512i z = _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(state)),
                               _mm512_mullo_epi64(lane, _mm512_set1_epi64(Stream::kGamma)));
  const __m512i step = _mm512_set1_epi64(static_cast<int64_t>(8 * Stream::kGamma));
  const __m512i mul1 = _mm512_set1_epi64(static_cast<int64_t>(Stream::kMul1));
  const __m512i mul2 = _mm512_set1_epi64(static_cast<int64_t>(Stream::kMul2));
  const __m512d scale = _mm512_set1_pd(0x1p-52);
  const __m512d one = _mm512_set1_pd(1.0);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m512i x = z;
    z = _mm512_add_epi64(z, step);
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)), mul1);
    x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)), mul2);
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
    const __m512d value =
        _mm512_sub_pd(_mm512_mul_pd(_mm512_cvtepi64_pd(_mm512_srli_epi64(x, 11)), scale), one);
    if (type == PrimitiveType::kF64) {
      _mm512_storeu_pd(data + i * 8, value);
    } else if (type == PrimitiveType::kF32) {
      _mm256_storeu_ps(reinterpret_cast<float*>(data + i * 4), _mm512_cvtpd_ps(value));
    } else {
      const __m512i bits = _mm512_castpd_si512(value);
      const __m512i exponent =
          _mm512_and_si512(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(0x7ff));
      const __m512i magnitude = _mm512_or_si512(
          _mm512_slli_epi64(_mm512_sub_epi64(exponent, _mm512_set1_epi64(1023 - 127)), 52),
          _mm512_and_si512(bits, _mm512_set1_epi64((int64_t{1} << 52) - 1)));
      __m512i rounded = _mm512_srli_epi64(magnitude, 45);
      const __m512i rest = _mm512_and_si512(magnitude, _mm512_set1_epi64((int64_t{1} << 45) - 1));
      const __m512i half = _mm512_set1_epi64(int64_t{1} << 44);
      const __mmask8 odd = _mm512_test_epi64_mask(rounded, _mm512_set1_epi64(1));
      const __mmask8 up =
          _mm512_cmpgt_epu64_mask(rest, half) | (_mm512_cmpeq_epu64_mask(rest, half) & odd);
      rounded = _mm512_mask_add_epi64(rounded, up, rounded, _mm512_set1_epi64(1));
      __m512i out = _mm512_or_si512(_mm512_slli_epi64(_mm512_srli_epi64(bits, 63), 15), rounded);
      out = _mm512_maskz_mov_epi64(_mm512_cmpneq_pd_mask(value, _mm512_setzero_pd()), out);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(data + i * 2), _mm512_cvtepi64_epi16(out));
    }
  }
  return i;
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has;
}
#endif

// Draws elements [begin, end) of a float array uniform in [-1, 1) from `stream` (positioned at
// element `begin`), each rounded once from the double as Literal::SetFromDouble does.
void FillFloatRange(PrimitiveType type, int64_t begin, int64_t end, Stream stream,
                    uint8_t* data) {
  const int64_t width = ByteWidth(type);
#ifdef PERFSIM_RANDOM_INPUTS_AVX512
  if ((type == PrimitiveType::kF32 || type == PrimitiveType::kF64 ||
       type == PrimitiveType::kBF16) &&
      HasAvx512()) {
    const int64_t done = FillFloatRangeAvx512(type, begin, end, stream.state(), data);
    stream = stream.Skipped(static_cast<uint64_t>(done - begin));
    begin = done;
  }
#endif
  switch (type) {
    case PrimitiveType::kF32:
      for (int64_t i = begin; i < end; ++i) {
        const float value = static_cast<float>(2.0 * stream.Uniform() - 1.0);
        std::memcpy(data + i * 4, &value, 4);
      }
      return;
    case PrimitiveType::kF64:
      for (int64_t i = begin; i < end; ++i) {
        const double value = 2.0 * stream.Uniform() - 1.0;
        std::memcpy(data + i * 8, &value, 8);
      }
      return;
    case PrimitiveType::kBF16:
      for (int64_t i = begin; i < end; ++i) {
        const uint16_t value = Bf16BitsFromDouble(2.0 * stream.Uniform() - 1.0);
        std::memcpy(data + i * 2, &value, 2);
      }
      return;
    default:
      for (int64_t i = begin; i < end; ++i) {
        const uint64_t value = EncodeFloat(type, 2.0 * stream.Uniform() - 1.0);
        std::memcpy(data + i * width, &value, width);
      }
      return;
  }
}

// A float array uniform in [-1, 1): the same values as SetFromDouble element by element
// (which spent most of `perfsim run` of large modules on per-element type dispatch), drawn in
// chunks on up to the machine's cores for large arrays; chunk c starts from the stream
// skipped to its first element, so the values do not depend on the threads.
void FillFloats(PrimitiveType type, int64_t n, Stream& stream, uint8_t* data) {
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t workers = std::min<int64_t>({cores, 16, (n + kChunk - 1) / kChunk});
  if (workers <= 1) {
    FillFloatRange(type, 0, n, stream, data);
  } else {
    const int64_t per = (n + workers - 1) / workers;
    std::vector<std::thread> threads;
    for (int64_t w = 1; w < workers; ++w) {
      const int64_t begin = std::min(n, w * per);
      const int64_t end = std::min(n, begin + per);
      const Stream at = stream.Skipped(static_cast<uint64_t>(begin));
      try {
        threads.emplace_back([=] { FillFloatRange(type, begin, end, at, data); });
      } catch (const std::system_error&) {
        FillFloatRange(type, begin, end, at, data);  // no thread: this one does it
      }
    }
    FillFloatRange(type, 0, std::min(n, per), stream, data);
    for (std::thread& t : threads) t.join();
  }
  stream = stream.Skipped(static_cast<uint64_t>(n));
}

void FillArray(const Shape& shape, const IntRule& rule, Stream& stream, Literal* out) {
  const int64_t n = shape.ElementCount();
  const PrimitiveType type = shape.element_type();
  if (IsFloatingPoint(type)) {
    FillFloats(type, n, stream, out->mutable_data().data());
  } else if (IsComplex(type)) {
    // Real, then imaginary part, each uniform in [-1, 1).
    uint8_t* data = out->mutable_data().data();
    (void)interp::DispatchElementType(type, "", [&](auto traits) {
      using T = decltype(traits);
      if constexpr (interp::kIsComplex<T>) {
        using Part = typename T::Component;
        for (int64_t i = 0; i < n; ++i) {
          const Part re = static_cast<Part>(2.0 * stream.Uniform() - 1.0);
          const Part im = static_cast<Part>(2.0 * stream.Uniform() - 1.0);
          T::Store(data, i, typename T::Compute(re, im));
        }
      }
      return absl::OkStatus();
    });
  } else if (type == PrimitiveType::kPred) {
    for (int64_t i = 0; i < n; ++i) out->SetFromInt64(i, static_cast<int64_t>(stream.Next() >> 63));
  } else if (rule.kind == IntRule::Kind::kZeros) {
    // Already zero.
  } else if (rule.kind == IntRule::Kind::kGroupSizes) {
    const int64_t groups = shape.rank() == 0 ? 1 : shape.dimensions().back();
    if (groups == 0) return;
    for (int64_t row = 0; row < n / groups; ++row) {
      std::vector<int64_t> counts(groups, 0);
      for (int64_t r = 0; r < rule.rows; ++r) ++counts[stream.Below(groups)];
      for (int64_t g = 0; g < groups; ++g) out->SetFromInt64(row * groups + g, counts[g]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out->SetFromInt64(i, stream.Below(rule.hi));
  }
}

absl::StatusOr<Literal> MakeValue(const Shape& shape, const IntRule& rule, Stream& stream) {
  if (shape.IsTuple()) {
    Literal out(shape);
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      PERFSIM_ASSIGN_OR_RETURN((*out.mutable_tuple_elements())[i],
                               MakeValue(shape.tuple_shapes(i), IntRule{}, stream));
    }
    return out;
  }
  if (!shape.IsArray()) {
    return absl::UnimplementedError(
        absl::StrCat("expected an array or tuple parameter; got ", shape.ToString(false)));
  }
  Literal out(Shape::Array(shape.element_type(), shape.dimensions()));
  FillArray(shape, rule, stream, &out);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<Literal>>> MakeRandomInputs(const Module& module,
                                                                   int64_t num_devices,
                                                                   uint64_t seed) {
  const Computation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("module: expected an ENTRY computation");
  if (num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices: expected at least 1; got ", num_devices));
  }
  const Users users = BuildUsers(module);
  std::vector<IntRule> rules;
  for (int64_t p = 0; p < entry->parameter_count(); ++p) {
    const Instruction* param = entry->parameter(p);
    if (param == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(entry->name(), ": expected parameters numbered 0..n-1; ", p, " is missing"));
    }
    rules.push_back(FindRule(param, users));
  }
  std::vector<std::vector<Literal>> inputs(num_devices);
  for (int64_t d = 0; d < num_devices; ++d) {
    for (int64_t p = 0; p < entry->parameter_count(); ++p) {
      Stream stream(seed, static_cast<uint64_t>(d), static_cast<uint64_t>(p));
      absl::StatusOr<Literal> value = MakeValue(entry->parameter(p)->shape(), rules[p], stream);
      if (!value.ok()) return Annotate(value.status(), entry->parameter(p)->name());
      inputs[d].push_back(*std::move(value));
    }
  }
  return inputs;
}

}  // namespace perfsim
