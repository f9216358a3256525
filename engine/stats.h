// The one statistics registry of a launch: every stat declared once (stats.def for the core, extension rows
// from ext/<name>/) with group, unit, kind and description; formulas computed in one place (stats.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace stc {

enum class StatKind : uint8_t { COUNTER, VALUE, FORMULA };

// Ids of the core stats, in stats.def order; extension stats get the ids after them (add_stat).
enum class TStat : int {
#define STC_STAT(id, group, name, unit, kind, desc) id,
#include "stats.def"
#undef STC_STAT
  Count
};

struct Stats;

struct StatDef {
  std::string name, group, unit, desc;
  StatKind kind = StatKind::COUNTER;
  std::function<double(const Stats&)> formula;  // FORMULA stats only
};

// Every stat, core rows first.
const std::vector<StatDef>& stat_defs();
// Declares a stat (extensions, at static initialisation); returns its id. Names must be unique.
int add_stat(const StatDef& def);
// The id of a stat by name (throws std::out_of_range for an unknown name).
int stat_id(const std::string& name);

// The values of one launch, indexed by stat id.
struct Stats {
  std::vector<double> v = std::vector<double>(stat_defs().size(), 0.0);
  double& operator[](TStat s) { return v[static_cast<size_t>(s)]; }
  double operator[](TStat s) const { return v[static_cast<size_t>(s)]; }
  double& at(int id) { return v[static_cast<size_t>(id)]; }
  double at(int id) const { return v[static_cast<size_t>(id)]; }
  // Computes every FORMULA stat, then writes the stats of the groups a launch reports (launch and
  // functional always; the cycle-level groups when `timing`; sampling when `timing` and `sampled`) to `out`.
  void finish(bool timing, bool sampled, std::map<std::string, double>& out);
};

}  // namespace stc
