// Checking instructions against the form tables of their families (forms.h).
#include "forms.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "decode.h"

namespace stc {
namespace {

struct Group {
  std::vector<std::string> members;
  bool required = false;
};

// A form with its strings parsed: the expanded type keys and the modifier groups.
struct ParsedForm {
  std::set<std::string> types;
  std::vector<Group> groups;
  uint16_t sm = 0, ptx = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> expand_class(const std::string& t) {
  static const std::map<std::string, std::vector<std::string>> classes = {
      {"%b", {"b16", "b32", "b64"}},
      {"%u", {"u16", "u32", "u64"}},
      {"%s", {"s16", "s32", "s64"}},
      {"%i", {"u16", "u32", "u64", "s16", "s32", "s64"}},
      {"%i8", {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}},
      {"%f", {"f16", "bf16", "f32", "f64"}}};
  auto it = classes.find(t);
  return it == classes.end() ? std::vector<std::string>{t} : it->second;
}

ParsedForm parse_form(const Form& f) {
  ParsedForm p;
  for (const std::string& key : split(f.types, ' ')) {
    std::vector<std::string> keys = {""};
    for (const std::string& part : split(key, '.')) {
      std::vector<std::string> next;
      for (const std::string& prefix : keys)
        for (const std::string& t : expand_class(part)) next.push_back(prefix.empty() ? t : prefix + "." + t);
      keys = std::move(next);
    }
    p.types.insert(keys.begin(), keys.end());
  }
  for (std::string g : split(f.mods, ' ')) {
    Group grp;
    if (g[0] == '!') { grp.required = true; g = g.substr(1); }
    grp.members = split(g, '|');
    p.groups.push_back(std::move(grp));
  }
  p.sm = f.sm;
  p.ptx = f.ptx;
  return p;
}

// The parsed forms, built once per Form (tables are static data).
const ParsedForm& parsed(const Form& f) {
  static std::mutex mu;
  static std::map<const Form*, ParsedForm> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(&f);
  if (it == cache.end()) it = cache.emplace(&f, parse_form(f)).first;
  return it->second;
}

std::string list_of(const std::vector<std::string>& ms) {
  std::string out;
  for (const auto& m : ms) out += (out.empty() ? "." : ", .") + m;
  return out;
}

// Why `mods` do not fit form `p` (kind: 1 unknown modifier, 2 exclusive modifiers, 3 missing modifier),
// or kind 0 when they fit.
std::pair<int, std::string> mismatch(const ParsedForm& p, const std::vector<std::string>& mods, const std::string& opc) {
  for (const std::string& m : mods) {
    const bool known = std::any_of(p.groups.begin(), p.groups.end(), [&](const Group& g) {
      return std::find(g.members.begin(), g.members.end(), m) != g.members.end();
    });
    if (!known) return {1, "unsupported modifier ." + m + " in '" + opc + "'"};
  }
  for (const Group& g : p.groups) {
    std::vector<std::string> present;
    for (const std::string& m : g.members)
      if (std::find(mods.begin(), mods.end(), m) != mods.end()) present.push_back(m);
    if (present.size() > 1) return {2, "modifiers " + list_of(present) + " exclude each other in '" + opc + "'"};
    if (g.required && present.empty()) return {3, "'" + opc + "' needs one of " + list_of(g.members)};
  }
  return {0, ""};
}

std::string version_text(uint16_t v) { return std::to_string(v / 10) + "." + std::to_string(v % 10); }

// One feature gate (ptx/feature_gates.def).
struct Gate {
  const char* opcode;
  const char* tokens;
  uint16_t sm, ptx;
  const char* what;
};
const Gate kGates[] = {
#define STC_GATE(opcode, tokens, sm, ptx, what) {opcode, tokens, sm, ptx, what},
#include "../ptx/feature_gates.def"
#undef STC_GATE
};

}  // namespace

void check_feature_gates(const Instr& in, const Kernel& k) {
  const std::string base = in.opcode.substr(0, in.opcode.find('.'));
  const Gate* need_sm = nullptr;
  const Gate* need_ptx = nullptr;
  for (const Gate& g : kGates) {
    if (*g.opcode && base != g.opcode) continue;
    const std::vector<std::string> toks = split(g.tokens, ' ');
    const bool applies = std::all_of(toks.begin(), toks.end(), [&](const std::string& t) {
      return std::find(in.mods.begin(), in.mods.end(), t) != in.mods.end();
    });
    if (!applies) continue;
    if (!need_sm || g.sm > need_sm->sm) need_sm = &g;
    if (!need_ptx || g.ptx > need_ptx->ptx) need_ptx = &g;
  }
  if (need_sm && k.sm && need_sm->sm > k.sm)
    throw DecodeError("'" + in.opcode + "' (" + need_sm->what + ") requires .target sm_" + std::to_string(need_sm->sm) +
                      " or higher");
  if (need_ptx && k.ptx && need_ptx->ptx > k.ptx)
    throw DecodeError("'" + in.opcode + "' (" + need_ptx->what + ") requires PTX ISA .version " +
                      version_text(need_ptx->ptx) + " or later");
  // wmma without .aligned: ptxas requires it from PTX ISA 6.3 on (a feature removed, not gated).
  if (base == "wmma" && k.ptx >= 63 && std::find(in.mods.begin(), in.mods.end(), "aligned") == in.mods.end())
    throw DecodeError("'" + in.opcode + "' needs .aligned (required from PTX ISA .version 6.3 on)");
  // A second sparsity qualifier (mma.sp.sp, mma.sp.sp::ordered_metadata): ptxas's "multiple sparsity modifiers".
  if (base == "mma" || base == "wgmma") {
    const auto sparse = std::count_if(in.mods.begin(), in.mods.end(), [](const std::string& m) {
      return m == "sp" || m == "sp::ordered_metadata";
    });
    if (sparse > 1) throw DecodeError("more than one sparsity qualifier (.sp, .sp::ordered_metadata) in '" + in.opcode + "'");
  }
}

SplitMods split_mods(const Instr& in) {
  SplitMods s;
  for (const std::string& m : in.mods) {
    const DType t = dtype_from_name(m);
    if (t != DType::None) s.types.push_back(t);
    else s.mods.push_back(m);
  }
  return s;
}

void check_form(const Instr& in, const Kernel& k, const FormTable& table) {
  const std::string base = in.opcode.substr(0, in.opcode.find('.'));
  const SplitMods s = split_mods(in);
  for (size_t i = 0; i < s.mods.size(); ++i)
    if (std::find(s.mods.begin() + static_cast<std::ptrdiff_t>(i) + 1, s.mods.end(), s.mods[i]) != s.mods.end())
      throw DecodeError("duplicate modifier ." + s.mods[i] + " in '" + in.opcode + "'");
  std::string key;
  for (DType t : s.types) key += (key.empty() ? "" : ".") + std::string(dtype_name(t));
  if (key.empty()) key = "-";
  // Modifiers that no form of the opcode takes, then the type, then the forms of that type one by one.
  std::vector<const ParsedForm*> forms;
  for (size_t i = 0; i < table.size; ++i)
    if (base == table.forms[i].opcode) forms.push_back(&parsed(table.forms[i]));
  if (forms.empty()) throw DecodeError("unsupported instruction '" + base + "'");
  for (const std::string& m : s.mods) {
    const bool known = std::any_of(forms.begin(), forms.end(), [&](const ParsedForm* p) {
      return std::any_of(p->groups.begin(), p->groups.end(), [&](const Group& g) {
        return std::find(g.members.begin(), g.members.end(), m) != g.members.end();
      });
    });
    if (!known) throw DecodeError("unsupported modifier ." + m + " in '" + in.opcode + "'");
  }
  bool any_type = false;
  std::pair<int, std::string> best = {0, ""};
  for (const ParsedForm* fp : forms) {
    const ParsedForm& p = *fp;
    if (!p.types.count(key)) continue;
    any_type = true;
    auto why = mismatch(p, s.mods, in.opcode);
    if (why.first == 0) {
      const uint16_t sm = p.sm, ptx = p.ptx;
      if (k.sm && sm > k.sm)
        why = {4, "'" + in.opcode + "' requires .target sm_" + std::to_string(sm) + " or higher"};
      else if (k.ptx && ptx > k.ptx)
        why = {4, "'" + in.opcode + "' requires PTX ISA .version " + version_text(ptx) + " or later"};
      else
        return;
    }
    if (why.first > best.first) best = why;
  }
  if (!any_type) {
    if (key == "-") throw DecodeError("'" + in.opcode + "' needs a type");
    throw DecodeError("unsupported type ." + key + " in '" + in.opcode + "'");
  }
  throw DecodeError(best.second);
}

}  // namespace stc
