// Register scopes with lazily materialised ranges (scopes.h).
#include "scopes.h"

#include <algorithm>

namespace stc {

const RegisterScopes::Range* RegisterScopes::range_of(const Scope& s, const std::string& name) {
  for (const Range& r : s.ranges) {
    if (name.size() <= r.prefix.size() || name.compare(0, r.prefix.size(), r.prefix) != 0) continue;
    const std::string idx = name.substr(r.prefix.size());
    if (idx.size() > 19 || idx.find_first_not_of("0123456789") != std::string::npos || (idx.size() > 1 && idx[0] == '0'))
      continue;
    if (std::stoull(idx) < r.count) return &r;
  }
  return nullptr;
}

std::string RegisterScopes::declare(const std::string& name, DType type) {
  Scope& s = scopes_.back();
  if (s.names.count(name) || range_of(s, name)) return "duplicate definition of register '" + name + "'";
  s.names[name] = static_cast<int32_t>(k_.regs.size());
  k_.regs.push_back({name, type});
  return "";
}

std::string RegisterScopes::declare_range(const std::string& prefix, uint64_t count, DType type) {
  Scope& s = scopes_.back();
  for (const Range& r : s.ranges)
    if (r.prefix == prefix) return "duplicate definition of register range '" + prefix + "<'";
  Scope probe;
  probe.ranges.push_back({prefix, count, type});
  for (const auto& [name, _] : s.names)
    if (range_of(probe, name)) return "duplicate definition of register '" + name + "'";
  s.ranges.push_back({prefix, count, type});
  return "";
}

bool RegisterScopes::declares_outermost(const std::string& name) const {
  return scopes_[0].names.count(name) || range_of(scopes_[0], name);
}

bool RegisterScopes::declares_in_innermost(const std::string& name) const {
  return scopes_.back().names.count(name) || range_of(scopes_.back(), name);
}

bool RegisterScopes::declares_innermost(const std::string& name) const {
  const Scope& s = scopes_.back();
  return s.names.count(name) && !range_of(s, name);
}

bool RegisterScopes::declared(const std::string& name) const {
  for (const Scope& s : scopes_)
    if (s.names.count(name) || range_of(s, name)) return true;
  return false;
}

int32_t RegisterScopes::find(const std::string& name) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (std::find(it->hidden.begin(), it->hidden.end(), name) != it->hidden.end()) return -1;
    auto f = it->names.find(name);
    if (f != it->names.end()) return f->second;
    if (const Range* r = range_of(*it, name)) {
      const int32_t idx = static_cast<int32_t>(k_.regs.size());
      k_.regs.push_back({name, r->type});
      it->names[name] = idx;
      return idx;
    }
  }
  return -1;
}

}  // namespace stc
