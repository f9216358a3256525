#include "stats.h"

#include <cmath>
#include <stdexcept>

namespace stc {

namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// The core's formulas (the only place a stat is computed from others).
std::function<double(const Stats&)> core_formula(TStat id) {
  switch (id) {
    case TStat::Ipc: return [](const Stats& s) { return ratio(s[TStat::ThreadInsts], s[TStat::Cycles]); };
    case TStat::WarpIpc: return [](const Stats& s) { return ratio(s[TStat::WarpInsts], s[TStat::Cycles]); };
    case TStat::AchievedOccupancy:
      return [](const Stats& s) {
        return ratio(ratio(s[TStat::ActiveWarpCycles], s[TStat::ActiveSmCycles]), s[TStat::MaxWarpsPerSm]);
      };
    case TStat::TheoreticalOccupancy:
      return [](const Stats& s) {
        return ratio(s[TStat::CtasPerSm] * std::ceil(s[TStat::BlockThreads] / 32.0), s[TStat::MaxWarpsPerSm]);
      };
    default: throw std::logic_error("stats.def declares a FORMULA without a formula in stats.cc");
  }
}

std::vector<StatDef>& registry() {
  static std::vector<StatDef> defs = [] {
    std::vector<StatDef> d;
#define STC_STAT(id, group, name, unit, kind, desc) \
    d.push_back({name, #group, unit, desc, StatKind::kind, \
                 StatKind::kind == StatKind::FORMULA ? core_formula(TStat::id) : nullptr});
#include "stats.def"
#undef STC_STAT
    return d;
  }();
  return defs;
}

bool cycle_level(const std::string& group) { return group != "launch" && group != "functional"; }

}  // namespace

const std::vector<StatDef>& stat_defs() { return registry(); }

int add_stat(const StatDef& def) {
  for (const StatDef& d : registry())
    if (d.name == def.name) throw std::logic_error("stat '" + def.name + "' declared twice");
  registry().push_back(def);
  return static_cast<int>(registry().size()) - 1;
}

int stat_id(const std::string& name) {
  const auto& d = registry();
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i].name == name) return static_cast<int>(i);
  throw std::out_of_range("no stat named '" + name + "'");
}

void Stats::finish(bool timing, bool sampled, std::map<std::string, double>& out) {
  const auto& defs = stat_defs();
  const auto reported = [&](const std::string& group) {
    return group == "sampling" ? timing && sampled : timing || !cycle_level(group);
  };
  for (size_t i = 0; i < defs.size(); ++i)
    if (defs[i].kind == StatKind::FORMULA && reported(defs[i].group)) v[i] = defs[i].formula(*this);
  for (size_t i = 0; i < defs.size(); ++i)
    if (reported(defs[i].group)) out[defs[i].name] = v[i];
}

}  // namespace stc
