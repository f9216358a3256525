// The PTX ISA versions and targets the loader knows (targets.h).
#include "targets.h"

#include <algorithm>
#include <utility>

namespace stc {

uint16_t ptx_version_number(const std::string& text) {
  static const std::pair<int, int> last_minor[] = {{1, 5}, {2, 3}, {3, 2}, {4, 3}, {5, 0}, {6, 5}, {7, 8}, {8, 8}, {9, 0}};
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 2 || dot + 1 >= text.size() || text.size() > 8 ||
      text.find_first_not_of("0123456789.") != std::string::npos || text.find('.', dot + 1) != std::string::npos)
    return 0;
  std::string frac = text.substr(dot + 1);
  while (frac.size() > 1 && frac.back() == '0') frac.pop_back();
  if (frac.size() != 1) return 0;
  const int major = std::stoi(text.substr(0, dot)), minor = frac[0] - '0';
  for (const auto& [mj, last] : last_minor)
    if (major == mj && minor <= last) return static_cast<uint16_t>(10 * major + minor);
  return 0;
}

uint16_t target_sm(const std::string& name, uint16_t& min_ptx) {
  static const std::pair<uint16_t, uint16_t> known[] = {  // sm, first PTX version that knows it
      {20, 10}, {30, 31}, {32, 40}, {35, 31}, {37, 41}, {50, 40}, {52, 41}, {53, 42}, {60, 50}, {61, 50},
      {62, 50}, {70, 60}, {72, 61}, {75, 63}, {80, 70}, {86, 71}, {87, 74}, {88, 90}, {89, 78}, {90, 78},
      {100, 86}, {101, 86}, {103, 88}, {110, 90}, {120, 87}, {121, 88}};
  const size_t us = name.find('_');
  if (us == std::string::npos) return 0;
  const std::string family = name.substr(0, us);
  std::string num = name.substr(us + 1);
  // Architecture-specific (sm_90a, sm_100a) and family (sm_100f) targets: sm_90a came two PTX versions after
  // sm_90, the later `a` targets with their base target, the `f` targets with PTX 8.8 (as ptxas 13 has them).
  char suffix = 0;
  if (family == "sm" && !num.empty() && (num.back() == 'a' || num.back() == 'f')) {
    suffix = num.back();
    num.pop_back();
  }
  if ((family != "sm" && family != "compute") || num.empty() || num.size() > 3 ||
      num.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  const uint16_t sm = static_cast<uint16_t>(std::stoi(num));
  for (const auto& [s, ptx] : known) {
    if (s != sm || (suffix && sm < 90) || (suffix == 'f' && sm < 100)) continue;
    min_ptx = suffix == 'a' && sm == 90 ? 80 : suffix == 'f' ? std::max<uint16_t>(ptx, 88) : ptx;
    return sm;
  }
  return 0;
}

}  // namespace stc
