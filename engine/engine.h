// The Engine: owns simulated device memory, loaded PTX modules and the launch machinery. One Engine object
// holds all simulator state (no globals).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "func/memory.h"
#include "func/watchdog.h"
#include "ptx/ir.h"
#include "timing/config.h"

namespace stc {

// An integer argument outside [-2^63, 2^64): it fits no parameter type; `text` is its decimal value.
struct OutOfRangeInt {
  std::string text;
};
// A by-value aggregate argument (e.g. a 128-byte CUtensorMap for a `.param .align 64 .b8 p[128]`): its bytes.
struct ByteArg {
  std::vector<uint8_t> bytes;
};
using KernelArg = std::variant<int64_t, uint64_t, double, OutOfRangeInt, ByteArg>;
using StatMap = std::map<std::string, double>;

struct LaunchRequest {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  std::vector<KernelArg> args;
  uint64_t dynamic_shared = 0;
  bool timing = true;            // run the cycle-level model (needs a config); false: functional only
  uint32_t regs_per_thread = 0;  // for occupancy; 0: estimate from the PTX
  double sample = 0;             // > 0: sampled simulation with this wave tolerance (timing/sampling.h)
  bool serialize_wgmma = false;  // ptxas's C7515 for this kernel: its wgmma.mma_async run one at a time
  uint32_t threads = 1;          // host threads of a full-detail timing launch (same stats; timing/gpu.h)
  bool lockstep = false;         // a full-detail timing launch in the lockstep loop (same stats; timing/gpu.h)
  bool skip_mma_values = false;  // cycles only: skip the Tensor Core arithmetic where it cannot reach the timing
                                 // (Kernel::mma_values_note; same stats, outputs the results reach are not
                                 // written); the stats then say whether it was skipped (mma_values_skipped)
  LaunchLimits limits;           // the watchdog's bounds (func/watchdog.h)
  InterruptPoll interrupt;       // polled every few ms of host time; true stops the launch (Interrupted)
};

class Engine {
 public:
  // `schedule_loads`: reorder each basic block so loads issue early, as ptxas does (see func/schedule.h).
  // `memcheck`: surround every allocation with red zones so that an access overrunning one allocation
  // faults instead of landing in a neighbouring one (see func/memory.h).
  explicit Engine(bool schedule_loads = true, bool memcheck = false)
      : mem_(memcheck), schedule_loads_(schedule_loads) {}
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  DeviceMemory& memory() { return mem_; }

  // Sets the GPU config the timing model uses (the flat dict of stcsim.config). Throws std::invalid_argument.
  void set_config(const FlatConfig& flat);
  bool has_config() const { return has_config_; }
  // Every config key the engine read, with the value its typed record holds (empty without a config).
  const FlatConfig& config_record() const { return cfg_.record; }

  // Parses, schedules and links a PTX module; its .entry kernels become launchable by name (replacing kernels of the
  // same name loaded before). Loading the same text again is a no-op. Returns the kernel names.
  // `sass`: per kernel name, what ptxas's SASS says of its schedule (SassFacts; absent: the PTX-only
  // schedule). A module loaded again keeps the schedule of its first load.
  std::vector<std::string> load_ptx(const std::string& text, const std::string& file,
                                    const std::map<std::string, SassFacts>& sass = {});

  // Launches a kernel (on the timing model when it has a config and req.timing) and returns its stats.
  // Throws LaunchError, SimFault (WatchdogError past a limit) and Interrupted.
  StatMap launch(const LaunchRequest& req);

  const Kernel& kernel(const std::string& name) const;
  std::vector<std::string> kernel_names() const;

  // Copies between host bytes and device memory; throw LaunchError when out of bounds.
  void copy_to(uint64_t addr, const uint8_t* src, uint64_t n);
  void copy_from(uint64_t addr, uint8_t* dst, uint64_t n);

 private:
  void link(Module& m);
  std::vector<uint8_t> pack_params(const Kernel& k, const std::vector<KernelArg>& args) const;

  DeviceMemory mem_;
  TimingConfig cfg_;
  bool has_config_ = false;
  bool schedule_loads_ = true;
  std::vector<uint8_t> const_bank_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::map<std::string, std::pair<Module*, Kernel*>> kernels_;
  struct Loaded {
    std::string text;
    std::vector<std::string> names;  // its entries
    Module* module = nullptr;
  };
  std::map<size_t, Loaded> loaded_;  // text hash -> the module loaded from that text
};

}  // namespace stc
