#include "stats.h"

namespace stc {

const std::array<StatInfo, static_cast<size_t>(TStat::Count)>& timing_stat_info() {
  static const std::array<StatInfo, static_cast<size_t>(TStat::Count)> info = {{
#define STC_STAT(id, name, unit, desc) {name, unit, desc},
#include "stats.def"
#undef STC_STAT
  }};
  return info;
}

void TimingStats::export_to(std::map<std::string, double>& out) const {
  const auto& info = timing_stat_info();
  for (size_t i = 0; i < v.size(); ++i) out[info[i].name] = v[i];
}

}  // namespace stc
