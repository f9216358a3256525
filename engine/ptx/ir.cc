#include "ir.h"

#include <unordered_map>

namespace stc {

namespace {
const std::pair<const char*, DType> kTypes[] = {
    {"pred", DType::Pred}, {"b8", DType::B8}, {"b16", DType::B16}, {"b32", DType::B32}, {"b64", DType::B64},
    {"b128", DType::B128}, {"u8", DType::U8}, {"u16", DType::U16}, {"u32", DType::U32}, {"u64", DType::U64},
    {"s8", DType::S8}, {"s16", DType::S16}, {"s32", DType::S32}, {"s64", DType::S64}, {"f16", DType::F16},
    {"f16x2", DType::F16x2}, {"bf16", DType::BF16}, {"bf16x2", DType::BF16x2}, {"f32", DType::F32},
    {"f64", DType::F64}, {"tf32", DType::TF32}, {"u16x2", DType::U16x2}, {"s16x2", DType::S16x2}};
}

const char* dtype_name(DType t) {
  for (const auto& [n, d] : kTypes)
    if (d == t) return n;
  return "none";
}

DType dtype_from_name(const std::string& s) {
  for (const auto& [n, d] : kTypes)
    if (s == n) return d;
  return DType::None;
}

const char* space_name(Space s) {
  switch (s) {
    case Space::Generic: return "generic";
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::Local: return "local";
    case Space::Param: return "param";
    case Space::Const: return "const";
  }
  return "?";
}

const char* unit_name(Unit u) {
  static const char* names[] = {"INT", "FP32", "FP16", "FP64", "SFU", "TENSOR", "LDST", "BRANCH", "SYNC", "NONE"};
  return names[static_cast<int>(u)];
}

}  // namespace stc
