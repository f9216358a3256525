// Helpers shared by the semantic functions: typed operand access, lane loops, memory access with
// fault reporting.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "memory.h"
#include "numeric.h"
#include "state.h"

namespace stc {

// Value of a special register for one lane.
uint64_t special_value(const ExecCtx& c, const Operand& o, int lane);

// Raw 64-bit contents of a source operand for one lane (registers zero-extended, immediates, special
// registers).
inline uint64_t src_bits(const ExecCtx& c, const Operand& o, int lane) {
  if (o.kind == OpndKind::Reg) {
    const uint64_t v = c.w.reg(o.reg, lane);
    return o.negate ? static_cast<uint64_t>(v == 0) : v;
  }
  if (o.kind == OpndKind::Imm) return o.imm;
  return special_value(c, o, lane);
}

// A source operand's 32 lanes resolved once per instruction: a 32-bit register's lanes (n), a 64-bit
// register's (p), or an immediate read by every lane (p, index mask 0). lane_src() is false for what
// src_bits resolves per lane (special registers, negated predicates): the caller takes its per-lane path.
struct LaneSrc {
  const uint32_t* n = nullptr;
  const uint64_t* p = nullptr;
  uint32_t mask = 31;
  uint64_t operator[](int lane) const { return n ? n[lane] : p[static_cast<uint32_t>(lane) & mask]; }
};
// The lanes of register r (a slot, not the sink).
inline LaneSrc reg_lanes(const ExecCtx& c, int32_t r) {
  return r & kWideSlot ? LaneSrc{nullptr, c.w.col64(r), 31} : LaneSrc{c.w.col32(r), nullptr, 31};
}
inline bool lane_src(const ExecCtx& c, const Operand& o, LaneSrc& s) {
  if (o.kind == OpndKind::Reg && o.reg >= 0 && !o.negate) {
    s = reg_lanes(c, o.reg);
    return true;
  }
  if (o.kind == OpndKind::Imm) {
    s = {nullptr, &o.imm, 0};
    return true;
  }
  return false;
}
template <class F>
inline void for_lanes(uint32_t mask, F f) {
  while (mask) {
    const int lane = __builtin_ctz(mask);
    mask &= mask - 1;
    f(lane);
  }
}

// A resolved source's 32 lanes copied into a local array (a register's lanes zero-extended, or the
// immediate in every lane). A lane loop that reads such copies cannot alias its destination
// (`add r1, r1, 4` writes the register it reads), so the compiler vectorizes it without run-time overlap
// checks.
inline void copy_lanes(const LaneSrc& s, uint64_t (&out)[32]) {
  if (s.n) {
    for (int l = 0; l < 32; ++l) out[l] = s.n[l];
  } else if (s.mask) {
    std::memcpy(out, s.p, sizeof out);
  } else {
    for (uint64_t& v : out) v = *s.p;
  }
}

// Whether a resolved source's lanes are 32-bit values (a 32-bit register) or an immediate: all a 32-bit
// operation reads of them is their low 32 bits.
inline bool narrow_src(const LaneSrc& s) { return s.n || !s.mask; }
// A narrow source's low 32 bits per lane, copied into a local array (see copy_lanes).
inline void copy_lanes32(const LaneSrc& s, uint32_t (&out)[32]) {
  if (s.n) {
    std::memcpy(out, s.n, sizeof out);
  } else {
    for (uint32_t& v : out) v = static_cast<uint32_t>(*s.p);
  }
}

// d[l] = f(a[l], b[l] [, c[l]]) on 32-bit words, for a full warp whose sources are narrow (narrow_src) and
// whose destination is a 32-bit register: the caller's operation reads only its sources' low 32 bits, so
// the lanes go twice as many to a vector op as map_lanes' 64-bit copies.
template <class D, class F>
inline void map_lanes32(D* d, F f, const LaneSrc& a, const LaneSrc& b) {
  uint32_t x[32], y[32];
  copy_lanes32(a, x);
  copy_lanes32(b, y);
  for (int l = 0; l < 32; ++l) d[l] = f(x[l], y[l]);
}
template <class D, class F>
inline void map_lanes32(D* d, F f, const LaneSrc& a, const LaneSrc& b, const LaneSrc& c) {
  uint32_t x[32], y[32], z[32];
  copy_lanes32(a, x);
  copy_lanes32(b, y);
  copy_lanes32(c, z);
  for (int l = 0; l < 32; ++l) d[l] = f(x[l], y[l], z[l]);
}

// A destination register's 32 lanes: a 32-bit register's (n, each lane keeps the low 32 bits of what it
// is given) or a 64-bit one's (w); neither for the sink `_` or a non-register operand.
struct LaneDst {
  uint32_t* n = nullptr;
  uint64_t* w = nullptr;
  explicit operator bool() const { return n || w; }
  void set(int lane, uint64_t v) const {
    if (w) w[lane] = v;
    else n[lane] = static_cast<uint32_t>(v);
  }
};
// The lanes of register r (nothing for the sink, r < 0).
inline LaneDst reg_dst(ExecCtx& c, int32_t r) {
  if (r < 0) return {};
  return r & kWideSlot ? LaneDst{nullptr, c.w.col64(r)} : LaneDst{c.w.col32(r), nullptr};
}
inline LaneDst lane_dst(ExecCtx& c, const Operand& o) {
  return o.kind == OpndKind::Reg ? reg_dst(c, o.reg) : LaneDst{};
}

// d[l] = g(l) for all 32 lanes, as one straight loop per destination width (vectorized).
template <class G>
inline void store_lanes(const LaneDst& d, G g) {
  if (d.w) {
    for (int l = 0; l < 32; ++l) d.w[l] = g(l);
  } else {
    for (int l = 0; l < 32; ++l) d.n[l] = static_cast<uint32_t>(g(l));
  }
}

// d[l] = f(a[l], ...) for every lane in `mask` from one, two or three resolved sources: all 32 lanes as one
// straight loop over copies of the sources (vectorized), otherwise lane by lane. The result is the same
// either way (each lane reads only its own source lanes).
template <class F>
inline void map_lanes(uint32_t mask, const LaneDst& d, F f, const LaneSrc& a) {
  if (mask == ~0u) {
    uint64_t x[32];
    copy_lanes(a, x);
    store_lanes(d, [&](int l) { return f(x[l]); });
    return;
  }
  for_lanes(mask, [&](int l) { d.set(l, f(a[l])); });
}
template <class F>
inline void map_lanes(uint32_t mask, const LaneDst& d, F f, const LaneSrc& a, const LaneSrc& b) {
  if (mask == ~0u) {
    uint64_t x[32], y[32];
    copy_lanes(a, x);
    copy_lanes(b, y);
    store_lanes(d, [&](int l) { return f(x[l], y[l]); });
    return;
  }
  for_lanes(mask, [&](int l) { d.set(l, f(a[l], b[l])); });
}
template <class F>
inline void map_lanes(uint32_t mask, const LaneDst& d, F f, const LaneSrc& a, const LaneSrc& b, const LaneSrc& c) {
  if (mask == ~0u) {
    uint64_t x[32], y[32], z[32];
    copy_lanes(a, x);
    copy_lanes(b, y);
    copy_lanes(c, z);
    store_lanes(d, [&](int l) { return f(x[l], y[l], z[l]); });
    return;
  }
  for_lanes(mask, [&](int l) { d.set(l, f(a[l], b[l], c[l])); });
}

inline void set_reg(ExecCtx& c, int32_t reg, int lane, uint64_t v) {
  if (reg >= 0) c.w.set_reg(reg, lane, v);
}

// Type traits: V is the compute type; get() decodes register bits, put() encodes a result.
template <DType T> struct TT;
#define STC_INT_TRAIT(D, C)                                                        \
  template <> struct TT<DType::D> {                                               \
    using V = C;                                                                  \
    static V get(uint64_t b) { return static_cast<V>(b); }                        \
    static uint64_t put(V v) { return static_cast<uint64_t>(static_cast<std::make_unsigned_t<V>>(v)); } \
  };
STC_INT_TRAIT(U8, uint8_t)
STC_INT_TRAIT(U16, uint16_t)
STC_INT_TRAIT(U32, uint32_t)
STC_INT_TRAIT(U64, uint64_t)
STC_INT_TRAIT(S8, int8_t)
STC_INT_TRAIT(S16, int16_t)
STC_INT_TRAIT(S32, int32_t)
STC_INT_TRAIT(S64, int64_t)
STC_INT_TRAIT(B8, uint8_t)
STC_INT_TRAIT(B16, uint16_t)
STC_INT_TRAIT(B32, uint32_t)
STC_INT_TRAIT(B64, uint64_t)
#undef STC_INT_TRAIT
template <> struct TT<DType::Pred> {
  using V = uint32_t;
  static V get(uint64_t b) { return b != 0; }
  static uint64_t put(V v) { return v != 0; }
};
template <> struct TT<DType::F32> {
  using V = float;
  static V get(uint64_t b) { return f32_from_bits(b); }
  static uint64_t put(V v) { return bits_from_f32(v); }
};
template <> struct TT<DType::F64> {
  using V = double;
  static V get(uint64_t b) { return f64_from_bits(b); }
  static uint64_t put(V v) { return bits_from_f64(v); }
};
template <> struct TT<DType::F16> {
  using V = double;
  static V get(uint64_t b) { return half_to_double(static_cast<uint16_t>(b)); }
  static uint64_t put(V v) { return double_to_half(v); }
};
template <> struct TT<DType::BF16> {
  using V = double;
  static V get(uint64_t b) { return bf16_to_double(static_cast<uint16_t>(b)); }
  static uint64_t put(V v) { return double_to_bf16(v); }
};

template <DType T>
inline typename TT<T>::V get(const ExecCtx& c, const Operand& o, int lane) {
  return TT<T>::get(src_bits(c, o, lane));
}

// Throws SimFault describing the faulting thread and instruction.
[[noreturn]] void raise_fault(const ExecCtx& c, int lane, const std::string& what, uint64_t addr, uint32_t size);

// mem_access for every space and for faults (out of line).
uint8_t* mem_access_general(ExecCtx& c, Space space, uint64_t addr, uint32_t size, int lane, bool write, uint32_t align);

// Host pointer of an access of the frequent kinds - shared memory (also through the generic window) and
// global memory within the last allocation found, aligned (power of two) and in bounds - with `space` and
// `addr` resolved; nullptr otherwise (nothing recorded, no fault raised: mem_access_general decides).
inline uint8_t* access_fast(ExecCtx& c, Space& space, uint64_t& addr, uint32_t size, uint32_t align) {
  if (space == Space::Generic && addr - kSharedWindow < kWindowSize) {
    space = Space::Shared;
    addr -= kSharedWindow;
  }
  if (align == 0 || (align & (align - 1)) != 0 || (addr & (align - 1)) != 0) return nullptr;
  if (space == Space::Shared)
    return addr + size <= c.cta.shared.size() && addr + size >= addr ? c.cta.shared.data() + addr : nullptr;
  if (space == Space::Global) return c.L.mem->find_cached(addr, size);
  return nullptr;
}

// Records one access of `lane` for the timing model (when it records) and the instruction's resolved space.
inline void record_access(ExecCtx& c, Space space, uint64_t addr, uint32_t size, int lane, bool write) {
  if (c.L.record_accesses) append_access(c.rec.acc, addr, size, lane, write, space);
  if (c.rec.space == Space::Generic) c.rec.space = space;
}

// Resolves an address in `space` (Generic: by window) for `lane`, checks bounds and alignment, records
// the access and returns the host pointer. The frequent kinds (access_fast) are handled inline; everything
// else, faults included, by mem_access_general.
inline uint8_t* mem_access(ExecCtx& c, Space space, uint64_t addr, uint32_t size, int lane, bool write, uint32_t align) {
  Space s = space;
  uint64_t a = addr;
  if (uint8_t* p = access_fast(c, s, a, size, align)) {
    record_access(c, s, a, size, lane, write);
    return p;
  }
  return mem_access_general(c, space, addr, size, lane, write, align);
}

// The accesses of lanes 0 .. lanes-1 resolved at once (the common full-warp case): true when each lane's
// access of `size` bytes at addr[l] is aligned to `align` (a power of two) and lies in the CTA's shared
// memory (space Shared, or Generic through the shared window), in one global allocation (Global), in the
// lane's local memory (Local) or, reading, in the parameters (Param) or the constant bank (Const); then
// `space` is the resolved space, addr[] the resolved addresses and p[] each lane's host pointer. False,
// nothing changed: the caller goes lane by lane (mem_access reports any fault exactly). Records nothing.
// (noclone: GCC's profile-guided build gave its lanes = 32 clone no counts and left that clone's lane loops
// unvectorized, at three times the host instructions of this function's own body.)
[[gnu::noclone]] bool warp_resolve(ExecCtx& c, Space& space, uint64_t (&addr)[32], uint32_t size, uint32_t align,
                                   uint8_t* (&p)[32], bool write, int lanes = 32);

// The records of a resolved warp access (warp_resolve), in lane order: what mem_access records lane by lane.
inline void record_warp(ExecCtx& c, Space space, const uint64_t (&addr)[32], uint32_t size, bool write,
                        int lanes = 32) {
  if (c.L.record_accesses) {
    std::vector<MemAccess>& acc = c.rec.acc;
    const size_t first = acc.size();
    acc.resize(first + static_cast<size_t>(lanes));
    for (int l = 0; l < lanes; ++l) {  // fields in place (append_access: why)
      MemAccess& m = acc[first + static_cast<size_t>(l)];
      m.addr = addr[l];
      m.size = size;
      m.lane = static_cast<uint8_t>(l);
      m.write = write;
      m.space = space;
    }
  }
  if (c.rec.space == Space::Generic) c.rec.space = space;
}

// Effective address of a memory operand for one lane (base register or symbol + offset).
inline uint64_t mem_addr(const ExecCtx& c, const Operand& o, int lane) {
  uint64_t a = o.imm;
  if (o.reg >= 0) a += c.w.reg(o.reg, lane);
  return a;
}

// Effective addresses of a memory operand for lanes 0..lanes-1, the base register's column read once.
inline void mem_addrs(const ExecCtx& c, const Operand& o, uint64_t (&addr)[32], int lanes = 32) {
  if (o.reg < 0) {
    for (int l = 0; l < lanes; ++l) addr[l] = o.imm;
  } else if (o.reg & kWideSlot) {
    const uint64_t* r = c.w.col64(o.reg);
    for (int l = 0; l < lanes; ++l) addr[l] = o.imm + r[l];
  } else {
    const uint32_t* r = c.w.col32(o.reg);
    for (int l = 0; l < lanes; ++l) addr[l] = o.imm + r[l];
  }
}

// The usual sizes get a fixed-size copy (one move, no call); the byte order is the host's (little-endian).
inline uint64_t load_bits(const uint8_t* p, uint32_t size) {
  switch (size) {
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case 8: { uint64_t v; std::memcpy(&v, p, 8); return v; }
    default: { uint64_t v = 0; std::memcpy(&v, p, size); return v; }
  }
}
inline void store_bits(uint8_t* p, uint64_t v, uint32_t size) {
  switch (size) {
    case 2: { const auto x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); return; }
    case 4: { const auto x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); return; }
    case 8: std::memcpy(p, &v, 8); return;
    default: std::memcpy(p, &v, size); return;
  }
}

// f(std::integral_constant<uint32_t, size>{}) for the element sizes of ld/st (1, 2, 4, 8 bytes: their forms
// allow no wider element): a lane loop inside f then copies a fixed number of bytes (one move each).
template <class F>
inline void with_size(uint32_t size, F f) {
  switch (size) {
    case 1: f(std::integral_constant<uint32_t, 1>{}); return;
    case 2: f(std::integral_constant<uint32_t, 2>{}); return;
    case 4: f(std::integral_constant<uint32_t, 4>{}); return;
    default: f(std::integral_constant<uint32_t, 8>{}); return;
  }
}

// Sign-extends the low `bytes` bytes of v.
inline uint64_t sext(uint64_t v, int bytes) {
  if (bytes >= 8) return v;
  const int sh = 64 - 8 * bytes;
  return static_cast<uint64_t>(static_cast<int64_t>(v << sh) >> sh);
}
inline uint64_t zext(uint64_t v, int bytes) { return bytes >= 8 ? v : v & ((uint64_t{1} << (8 * bytes)) - 1); }

}  // namespace stc
