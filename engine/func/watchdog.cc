#include "watchdog.h"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "../ptx/errors.h"

namespace stc {

namespace {

constexpr size_t kShownPcs = 8;
constexpr size_t kShownWarps = 3;

uint64_t effective(uint64_t limit) { return limit ? limit : std::numeric_limits<uint64_t>::max(); }

// "  pc 3, f.ptx:12 `bra.uni $L`: 7 warps (block (0,0,0) warp 0, ...)" per distinct (pc, barrier): the pc
// is the warp's next instruction (for a warp waiting at a barrier, the one after the barrier).
std::string where_warps_are(const Kernel& k, const std::vector<LiveWarp>& live) {
  using Key = std::pair<int32_t, int32_t>;  // pc, barrier id waited at (-1: none)
  std::map<Key, std::vector<LiveWarp>> by_pc;
  for (const LiveWarp& lw : live) by_pc[{lw.warp->pc(), lw.warp->at_barrier ? lw.warp->barrier_id : -1}].push_back(lw);
  std::vector<std::pair<Key, std::vector<LiveWarp>>> sorted(by_pc.begin(), by_pc.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::ostringstream s;
  for (size_t i = 0; i < sorted.size() && i < kShownPcs; ++i) {
    const auto& [key, warps] = sorted[i];
    const Instr& in = k.code[static_cast<size_t>(key.first)];
    s << "\n  pc " << key.first << ", " << k.file << ":" << in.line << " `" << in.text << "`: " << warps.size()
      << (warps.size() == 1 ? " warp" : " warps");
    if (key.second >= 0) s << " waiting at barrier " << key.second << " to resume here";
    s << " (";
    for (size_t j = 0; j < warps.size() && j < kShownWarps; ++j) {
      const CtaState& c = *warps[j].cta;
      s << (j ? ", " : "") << "block (" << c.ctaid[0] << "," << c.ctaid[1] << "," << c.ctaid[2] << ") warp "
        << warps[j].warp->warp_in_cta;
    }
    s << (warps.size() > kShownWarps ? ", ...)" : ")");
  }
  if (sorted.size() > kShownPcs) s << "\n  and " << sorted.size() - kShownPcs << " more distinct pcs";
  return s.str();
}

}  // namespace

Watchdog::Watchdog(const LaunchLimits& limits, InterruptPoll poll)
    : given_(limits),
      max_cycles_(effective(limits.max_cycles)),
      max_warp_insts_(effective(limits.max_warp_insts)),
      poll_(std::move(poll)),
      last_poll_(std::chrono::steady_clock::now()) {}

void Watchdog::trip(const LaunchState& L, uint64_t warp_insts, uint64_t cycles, const std::vector<LiveWarp>& live,
                    uint64_t blocks_done) const {
  const bool by_cycles = cycles > max_cycles_;
  const char* limit = by_cycles ? "max_cycles" : "max_warp_insts";
  const uint64_t blocks = static_cast<uint64_t>(L.grid[0]) * L.grid[1] * L.grid[2];
  std::ostringstream s;
  s << "watchdog: kernel '" << L.kernel->name << "' exceeded " << limit << " = "
    << (by_cycles ? given_.max_cycles : given_.max_warp_insts) << " after ";
  if (by_cycles) s << cycles << " simulated cycles and ";
  s << warp_insts << " warp instructions (" << blocks_done << " of " << blocks << " blocks completed); "
    << live.size() << (live.size() == 1 ? " unfinished warp is at:" : " unfinished warps are at:")
    << where_warps_are(*L.kernel, live)
    << "\nRaise the limit with Engine(" << limit << "=...) or launch(..., " << limit << "=...); 0 means no limit.";
  throw WatchdogError(s.str());
}

void Watchdog::check_grid(const LaunchState& L) const {
  const uint64_t blocks = static_cast<uint64_t>(L.grid[0]) * L.grid[1] * L.grid[2];
  if (given_.max_ctas == 0 || blocks <= given_.max_ctas) return;
  std::ostringstream s;
  s << "watchdog: kernel '" << L.kernel->name << "' exceeded max_ctas = " << given_.max_ctas << ": its grid ("
    << L.grid[0] << "," << L.grid[1] << "," << L.grid[2] << ") has " << blocks
    << " blocks; nothing was run.\nRaise the limit with Engine(max_ctas=...) or launch(..., max_ctas=...); 0 means "
       "no limit.";
  throw WatchdogError(s.str());
}

void Watchdog::check_estimate(const LaunchState& L, uint64_t cycles, uint64_t warp_insts) const {
  if (cycles <= max_cycles_) return;
  std::ostringstream s;
  s << "watchdog: kernel '" << L.kernel->name << "' exceeded max_cycles = " << given_.max_cycles
    << ": sampled simulation estimates " << cycles << " cycles (" << warp_insts
    << " warp instructions; the launch ran to its end, its sampled part is not counted in cycles while it "
       "runs)\nRaise the limit with Engine(max_cycles=...) or launch(..., max_cycles=...); 0 means no limit.";
  throw WatchdogError(s.str());
}

void Watchdog::poll_if_due() {
  if (!poll_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_poll_ < kPollInterval) return;
  last_poll_ = now;
  if (poll_()) throw Interrupted();
}

}  // namespace stc
