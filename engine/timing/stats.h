// The timing model's statistics registry: each stat declared once with name, unit and description.
#pragma once

#include <array>
#include <map>
#include <string>

namespace stc {

enum class TStat : int {
#define STC_STAT(id, name, unit, desc) id,
#include "stats.def"
#undef STC_STAT
  Count
};

struct StatInfo {
  const char* name;
  const char* unit;
  const char* desc;
};

// Name, unit and description of every timing stat (for docs and the Python API).
const std::array<StatInfo, static_cast<size_t>(TStat::Count)>& timing_stat_info();

struct TimingStats {
  std::array<double, static_cast<size_t>(TStat::Count)> v{};
  double& operator[](TStat s) { return v[static_cast<size_t>(s)]; }
  double operator[](TStat s) const { return v[static_cast<size_t>(s)]; }
  void export_to(std::map<std::string, double>& out) const;
};

}  // namespace stc
