#include "ir.h"

#include <deque>
#include <mutex>
#include <stdexcept>
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

namespace {
struct OpClassNames {
  std::mutex mu;
  std::deque<std::string> names{""};  // by id (a deque: references stay valid as names are added)
  std::unordered_map<std::string, OpClassId> ids{{"", kUnitClass}};
};
OpClassNames& op_class_names() {
  static OpClassNames* n = new OpClassNames;  // immortal: decoders may run during static initialisation
  return *n;
}
}  // namespace

OpClassId op_class_id(const std::string& name) {
  OpClassNames& n = op_class_names();
  std::lock_guard<std::mutex> lock(n.mu);
  const auto it = n.ids.find(name);
  if (it != n.ids.end()) return it->second;
  if (n.names.size() > UINT16_MAX) throw std::length_error("more than 65535 timing classes");
  const auto id = static_cast<OpClassId>(n.names.size());
  n.names.push_back(name);
  n.ids.emplace(name, id);
  return id;
}

const std::string& op_class_name(OpClassId id) {
  OpClassNames& n = op_class_names();
  std::lock_guard<std::mutex> lock(n.mu);
  return n.names.at(id);
}

const char* unit_name(Unit u) {
  static const char* names[] = {"INT", "FP32", "FP16", "FP64", "SFU", "TENSOR", "LDST", "BRANCH", "SYNC", "NONE"};
  return names[static_cast<int>(u)];
}

}  // namespace stc
