// Runtime state of a functional launch: warps (registers, SIMT stack), CTAs (shared memory) and the
// per-instruction record handed to the timing model.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "../ptx/ir.h"
#include "huge_pool.h"

namespace stc {

class DeviceMemory;

// One memory access of one lane (vector and matrix accesses produce several per lane).
struct MemAccess {
  // Nothing zeroed: every maker writes every field (append_access, record_warp's resize by a warp's lanes
  // spent a tenth of a global ld/st zeroing 32 records it then overwrote).
  MemAccess() {}  // NOLINT(modernize-use-equals-default): `= default` would zero them in resize()
  MemAccess(uint64_t a, uint32_t s, uint8_t l, bool w, Space sp) : addr(a), size(s), lane(l), write(w), space(sp) {}
  uint64_t addr;   // address in the resolved space (global address, shared/local offset)
  uint32_t size;   // bytes
  uint8_t lane;
  bool write;
  Space space;     // Global, Shared, Local, Param or Const (never Generic)
};

// Appends a record with its fields written in place: `push_back({...})` made GCC build the record with
// narrow stores on the stack and copy it with one 16-byte load, which waits for those stores to complete
// (a store-forwarding stall on every record).
inline void append_access(std::vector<MemAccess>& acc, uint64_t addr, uint32_t size, int lane, bool write,
                          Space space) {
  MemAccess& m = acc.emplace_back();
  m.addr = addr;
  m.size = size;
  m.lane = static_cast<uint8_t>(lane);
  m.write = write;
  m.space = space;
}

// The tag of a work record type T (its address: one per type in the program).
template <class T>
inline constexpr char work_kind = 0;

// Data-dependent work an instruction reports for the latency model of its timing class (e.g. the operand
// blocks each phase of wmma.smma.L touches): one record of a type the extension defines (trivially
// copyable, at most 1 KiB), tagged with that type, so the class that reads it gets its own type or nothing
// (an instruction that reported no work, or another class's record). Opaque to the core.
class WorkSummary {
 public:
  // A value-initialised (zeroed) T as this instruction's record, to be filled in place.
  template <class T>
  T& emplace() {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    static_assert(sizeof(T) <= sizeof(bytes_) && alignof(T) <= alignof(std::max_align_t));
    kind_ = &work_kind<T>;
    return *::new (static_cast<void*>(bytes_)) T{};
  }
  template <class T>
  void put(const T& record) { emplace<T>() = record; }
  // The record if this instruction reported a T, else null.
  template <class T>
  const T* get() const {
    return kind_ == &work_kind<T> ? std::launder(reinterpret_cast<const T*>(bytes_)) : nullptr;
  }
  // No record (each instruction's record starts empty).
  void clear() { kind_ = nullptr; }

 private:
  const void* kind_ = nullptr;
  alignas(std::max_align_t) unsigned char bytes_[1024];
};

// The two work records the timing core itself reads (every other record is an extension's own): an
// asynchronous bulk copy from global into shared memory whose completion is counted into a completion object
// at a shared address of its CTA (the Hopper TMA into an mbarrier), and a wait that saw that object's phase
// complete. The timing model sends a bulk copy's global sectors through the L2 slices and DRAM and ends the
// wait no earlier than the last of them arrives (completion_time.cc). `key`: the object's shared address
// (0: the copy is not tracked, e.g. the lanes of one instruction named different objects).
struct BulkCopyWork {
  uint64_t key;
};
struct BulkWaitWork {
  uint64_t key;
  uint32_t elapsed;  // cycles since the phase's first copy was issued (for the class's own latency model)
  uint32_t bytes;    // the phase's bytes
};

// Names the pattern of a warp's accesses where the instruction knows it from a few parameters (a wmma.load
// or store: fragment kind, layout, element size, stride, space and lanes; an ld/st whose lane addresses are
// affine within groups of lanes: ops_mem.cc affine_shape): two records of one non-zero shape have equal
// accesses relative to their first access. The timing model keys results that do not depend on where the
// pattern lies (modulo an alignment) by it, instead of comparing the records.
struct AccessShape {
  uint64_t key = 0;    // 0: no shape (the records are all there is)
  uint64_t lanes = 0;
  bool operator==(const AccessShape& o) const { return key == o.key && lanes == o.lanes; }
};

// A full warp's access pattern affine in the lane within groups of 2^log_g lanes: lane l's `bytes` bytes lie
// at a0 + (l % 2^log_g) * s1 + (l / 2^log_g) * s2. key() names it as an AccessShape key (tag bit 63, write,
// space, bytes, log_g, s2 and s1 as 23-bit signed fields); of() reads such a key back.
struct LaneAffine {
  static constexpr int64_t kLimit = int64_t{1} << 22;  // every stride in [-kLimit, kLimit)
  uint32_t bytes;  // below 32
  Space space;
  bool write;
  int log_g;
  int64_t s1, s2;
  static bool fits(int64_t s) { return s >= -kLimit && s < kLimit; }
  uint64_t key() const {
    constexpr uint64_t kField = (uint64_t{1} << 23) - 1;
    return uint64_t{1} << 63 | uint64_t{write} << 62 | uint64_t(space) << 59 | uint64_t{bytes} << 54 |
           uint64_t(log_g) << 51 | (static_cast<uint64_t>(s2) & kField) << 23 | (static_cast<uint64_t>(s1) & kField);
  }
  static LaneAffine of(uint64_t key) {
    const auto field = [](uint64_t v) { return static_cast<int64_t>(v << 41) >> 41; };  // 23 bits, signed
    return {static_cast<uint32_t>(key >> 54 & 31), static_cast<Space>(key >> 59 & 7), (key >> 62 & 1) != 0,
            static_cast<int>(key >> 51 & 7), field(key), field(key >> 23)};
  }
};

// What executing one warp instruction did: the timing model's view of it.
struct WarpRecord {
  const Instr* in = nullptr;
  int32_t pc = 0;
  uint32_t active = 0;          // lanes that executed (active and guard true)
  Space space = Space::Generic; // resolved space of the memory accesses (Generic: none)
  std::vector<MemAccess> acc;
  AccessShape shape;            // the pattern of `acc`, where the instruction names one
  WorkSummary work;             // data-dependent work (size 0: none reported)
  // Records held by reference until a consumer needs them: `ndeferred` records at `deferred`, each moved by
  // `deferred_base`, stand after `acc` (a planned wmma.load/store keeps its plan's records, relative to the
  // operand's address; the timing model reads them only when its memo of the named shape misses).
  const MemAccess* deferred = nullptr;
  uint32_t ndeferred = 0;
  uint64_t deferred_base = 0;
  // A full warp's access whose shape is a LaneAffine key (an ld/st's lanes at affine addresses): its 32
  // records, one per lane in lane order, held as lane 0's address alone (`affine`, with `acc` empty and no
  // deferred records) until a consumer needs them: the timing model's memos of the shape mostly do not.
  bool affine = false;
  uint64_t affine_first = 0;
  void reset(const Instr* i, int32_t p, uint32_t mask) {
    in = i; pc = p; active = mask; space = Space::Generic; acc.clear(); shape = {}; work.clear(); ndeferred = 0;
    affine = false;
  }
  bool no_accesses() const { return acc.empty() && ndeferred == 0 && !affine; }
  // The first record's address (there is one).
  uint64_t first_addr() const {
    return affine ? affine_first : acc.empty() ? deferred[0].addr + deferred_base : acc.front().addr;
  }
  // Moves the deferred records into `acc`.
  void materialize() {
    if (affine) expand_affine();
    if (!ndeferred) return;
    const size_t first = acc.size();
    acc.resize(first + ndeferred);  // (uninitialised: a record is trivially copyable, moved in whole)
    std::memcpy(acc.data() + first, deferred, ndeferred * sizeof(MemAccess));
    for (size_t i = first; i < acc.size(); ++i) acc[i].addr += deferred_base;
    ndeferred = 0;
  }

 private:
  void expand_affine() {
    const LaneAffine a = LaneAffine::of(shape.key);
    const uint32_t g = 1u << a.log_g;
    acc.resize(32);  // (empty before: see `affine`)
    for (uint32_t l = 0; l < 32; ++l) {
      MemAccess& m = acc[l];
      m.addr = affine_first + static_cast<uint64_t>(l % g) * static_cast<uint64_t>(a.s1) +
               static_cast<uint64_t>(l / g) * static_cast<uint64_t>(a.s2);
      m.size = a.bytes;
      m.lane = static_cast<uint8_t>(l);
      m.write = a.write;
      m.space = a.space;
    }
    affine = false;
  }
};

// SIMT reconvergence stack entry (GPGPU-Sim style: pc, reconvergence pc, active mask).
struct SimtEntry {
  int32_t pc;
  int32_t rpc;
  uint32_t mask;
};

// A warp's SIMT stack. Its top entry lives in the warp's record (the scheduler reads a visited warp's pc
// from the line it reads its flags from); the entries below it, on the heap, only while it has diverged.
class SimtStack {
 public:
  SimtStack() = default;
  SimtStack(const SimtStack& o) : top_(o.top_), size_(o.size_) {
    if (o.below_) below_ = std::make_unique<std::vector<SimtEntry>>(*o.below_);
  }
  SimtStack& operator=(const SimtStack& o) {
    if (this != &o) *this = SimtStack(o);
    return *this;
  }
  SimtStack(SimtStack&&) = default;
  SimtStack& operator=(SimtStack&&) = default;
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  SimtEntry& back() { return top_; }
  const SimtEntry& back() const { return top_; }
  void clear() {
    size_ = 0;
    if (below_) below_->clear();
  }
  void push_back(const SimtEntry& e) {
    if (size_ > 0) {
      if (!below_) below_ = std::make_unique<std::vector<SimtEntry>>();
      below_->push_back(top_);
    }
    top_ = e;
    ++size_;
  }
  void pop_back() {
    if (--size_ > 0) {
      top_ = below_->back();
      below_->pop_back();
    }
  }
  // Applies f to every entry, bottom first.
  template <class F>
  void for_each(F f) {
    if (size_ == 0) return;
    if (below_) for (SimtEntry& e : *below_) f(e);
    f(top_);
  }

 private:
  SimtEntry top_{};
  uint32_t size_ = 0;
  std::unique_ptr<std::vector<SimtEntry>> below_;
};

// The fields the scheduler and the executor read at every instruction of the warp (its SIMT stack, its
// flags, the register file's base) come first, in the record's first host cache line (the record is
// line-aligned): a warp visited but not issuing costs that line, not two.
struct alignas(64) WarpState {
  SimtStack stack;
  bool at_barrier = false;
  bool waiting = false;            // an extension's instruction cannot complete yet (warpgroup arrival,
                                   // mbarrier phase): the pc stays, it re-executes once woken (wake_waiters)
  uint32_t warp_in_cta = 0;
  uint32_t valid = 0;              // lanes that hold threads of the CTA
  uint32_t exited = 0;             // lanes that executed exit/ret
  // The register file (huge_pool.h: why), by slot (Kernel::reg_slots / wide_slots): registers of up to 32
  // bits in 32-bit lanes, [slot * 32 + lane] of `regs`; wider ones (named kWideSlot | slot) in `wregs`.
  std::vector<uint32_t, LaunchAllocator<uint32_t>> regs;
  std::vector<uint64_t, LaunchAllocator<uint64_t>> wregs;
  std::vector<uint8_t> local;      // [lane * local_bytes + offset]
  int32_t barrier_id = 0;
  uint32_t barrier_count = 0;      // expected thread count of a named barrier (0: all)
  // Lane `lane` of register r (a slot), zero-extended to 64 bits.
  uint64_t reg(int32_t r, int lane) const {
    return r & kWideSlot ? wregs[static_cast<size_t>(r & ~kWideSlot) * 32 + static_cast<size_t>(lane)]
                         : regs[static_cast<size_t>(r) * 32 + static_cast<size_t>(lane)];
  }
  // Writes lane `lane` of register r: a register of up to 32 bits keeps the low 32 bits of v (no reader of
  // it sees more: PTX reads a register as a type no wider than it).
  void set_reg(int32_t r, int lane, uint64_t v) {
    if (r & kWideSlot) wregs[static_cast<size_t>(r & ~kWideSlot) * 32 + static_cast<size_t>(lane)] = v;
    else regs[static_cast<size_t>(r) * 32 + static_cast<size_t>(lane)] = static_cast<uint32_t>(v);
  }
  // The 32 lanes of a register of up to 32 bits / of a 64-bit one.
  uint32_t* col32(int32_t r) { return regs.data() + static_cast<size_t>(r) * 32; }
  const uint32_t* col32(int32_t r) const { return regs.data() + static_cast<size_t>(r) * 32; }
  uint64_t* col64(int32_t r) { return wregs.data() + static_cast<size_t>(r & ~kWideSlot) * 32; }
  const uint64_t* col64(int32_t r) const { return wregs.data() + static_cast<size_t>(r & ~kWideSlot) * 32; }
  bool done() const { return stack.empty(); }
  int32_t pc() const { return stack.back().pc; }
};

// State an ISA extension keeps for one CTA (ext/extension.h `cta_state`); dropped when the CTA is set up.
struct ExtCtaState {
  virtual ~ExtCtaState() = default;
};

struct CtaState {
  uint32_t ctaid[3] = {0, 0, 0};
  uint32_t linear_id = 0;
  // Its shared memory, on the launch's huge pages (huge_pool.h): every wmma.load and ld/st.shared of a
  // GEMM reads it, across all resident CTAs, in no order a host TLB follows.
  using SharedBytes = std::vector<uint8_t, LaunchAllocator<uint8_t>>;
  SharedBytes shared;
  std::vector<WarpState, LaunchAllocator<WarpState>> warps;
  std::vector<std::unique_ptr<ExtCtaState>> ext;  // by extension slot
  bool woken = false;              // wake_waiters ran: the timing model wakes the CTA's sub-cores
};

// Lets every waiting warp of `cta` re-execute its instruction (an extension calls it when a warpgroup
// completes or an mbarrier phase flips).
inline void wake_waiters(CtaState& cta) {
  for (auto& w : cta.warps) w.waiting = false;
  cta.woken = true;
}

// Launch-wide read-only facts plus the device memory.
struct LaunchState {
  const Kernel* kernel = nullptr;
  const Module* module = nullptr;
  DeviceMemory* mem = nullptr;
  const std::vector<uint8_t>* const_bank = nullptr;
  std::vector<uint8_t> params;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint64_t shared_bytes = 0;       // static + dynamic
  uint64_t dynamic_shared = 0;
  uint32_t num_sms = 1;
  uint64_t clock = 0;              // current cycle (timing) or instruction count (functional)
  bool record_accesses = true;     // fill WarpRecord::acc (the timing model needs it; functional runs do not)
  bool serialize_wgmma = false;    // ptxas serialized the kernel's wgmma.mma_async (C7515): each one waits
                                   // for the warp's earlier wgmma groups to complete (timing/gpu.cc)
  bool mma_values = true;          // Tensor Core instructions compute their results (false: a cycles-only
                                   // launch of a kernel whose results cannot reach the timing, value_flow.h)
};

struct ExecCtx {
  LaunchState& L;
  CtaState& cta;
  WarpState& w;
  WarpRecord& rec;
  uint32_t mask;                   // active & guard
  uint32_t smid;
};

}  // namespace stc
