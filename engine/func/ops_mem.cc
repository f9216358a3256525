// Memory instructions: ld ldu st atom red cp.async, and the address resolution / fault machinery they share.
#include <algorithm>
#include <cmath>
#include <sstream>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "../ptx/errors.h"
#include "decode.h"
#include "exec.h"
#include "forms.h"
#include "operands.h"
#include "memory.h"

namespace stc {

void raise_fault(const ExecCtx& c, int lane, const std::string& what, uint64_t addr, uint32_t size) {
  const LaunchState& L = c.L;
  const uint32_t tid = c.w.warp_in_cta * 32 + static_cast<uint32_t>(lane);
  const uint32_t tx = tid % L.block[0], ty = (tid / L.block[0]) % L.block[1], tz = tid / (L.block[0] * L.block[1]);
  const Instr& in = *c.rec.in;
  std::ostringstream s;
  s << "memory fault in kernel '" << L.kernel->name << "': " << what << " of " << size << " bytes at address 0x"
    << std::hex << addr << std::dec << " by thread (" << tx << "," << ty << "," << tz << ") of block ("
    << c.cta.ctaid[0] << "," << c.cta.ctaid[1] << "," << c.cta.ctaid[2] << ") [warp " << c.w.warp_in_cta
    << ", lane " << lane << "], instruction " << L.kernel->file << ":" << in.line << " `" << in.text << "`";
  throw SimFault(s.str());
}

namespace {

// The host bytes of a state space other than global memory: lane l's copy starts at base + l * lane_stride
// (.local: each lane its own; the others are shared by every lane) and holds `size` bytes. base nullptr: the
// access is not allowed at all (a write to the parameters or the constant bank, an unresolved generic).
struct SpaceBytes {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  uint64_t lane_stride = 0;
};
SpaceBytes space_bytes(ExecCtx& c, Space space, bool write) {
  switch (space) {
    case Space::Shared: return {c.cta.shared.data(), c.cta.shared.size(), 0};
    case Space::Local: return {c.w.local.data(), c.L.kernel->local_bytes, c.L.kernel->local_bytes};
    case Space::Param:
      if (write) return {};
      return {const_cast<uint8_t*>(c.L.params.data()), c.L.params.size(), 0};
    case Space::Const:
      if (write) return {};
      return {const_cast<uint8_t*>(c.L.const_bank->data()), c.L.const_bank->size(), 0};
    case Space::Global: case Space::Generic: return {};
  }
  return {};
}

}  // namespace

uint8_t* mem_access_general(ExecCtx& c, Space space, uint64_t addr, uint32_t size, int lane, bool write, uint32_t align) {
  if (space == Space::Generic) {
    if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize) { space = Space::Shared; addr -= kSharedWindow; }
    else if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize) { space = Space::Local; addr -= kLocalWindow; }
    else if (addr >= kConstWindow && addr < kConstWindow + kWindowSize) { space = Space::Const; addr -= kConstWindow; }
    else if (addr >= kParamWindow && addr < kParamWindow + kWindowSize) { space = Space::Param; addr -= kParamWindow; }
    else space = Space::Global;
  }
  const char* rw = write ? "write" : "read";
  if (align > 1 && addr % align != 0)
    raise_fault(c, lane, std::string("misaligned ") + space_name(space) + " " + rw, addr, size);
  uint8_t* p = nullptr;
  if (space == Space::Global) {
    p = c.L.mem->find(addr, size);
  } else if (const SpaceBytes b = space_bytes(c, space, write); b.base && addr + size <= b.size) {
    p = b.base + static_cast<uint64_t>(lane) * b.lane_stride + addr;
  }
  if (!p) {
    std::string what = std::string("out-of-bounds ") + space_name(space) + " " + rw;
    if (space == Space::Global) what += " (" + c.L.mem->describe(addr, size) + ")";
    raise_fault(c, lane, what, addr, size);
  }
  if (c.L.record_accesses) append_access(c.rec.acc, addr, size, lane, write, space);
  if (c.rec.space == Space::Generic) c.rec.space = space;
  return p;
}

bool warp_resolve(ExecCtx& c, Space& space, uint64_t (&addr)[32], uint32_t size, uint32_t align, uint8_t* (&p)[32],
                  bool write, int lanes) {
  if (align == 0 || (align & (align - 1)) != 0) return false;
  uint64_t lo = addr[0], hi = addr[0], bits = 0;
  for (int l = 0; l < lanes; ++l) {
    lo = std::min(lo, addr[l]);
    hi = std::max(hi, addr[l]);
    bits |= addr[l];
  }
  if ((bits & (align - 1)) != 0 || hi + size < hi) return false;  // misaligned (the windows are aligned)
  Space s = space;
  uint64_t window = 0;
  if (s == Space::Generic) {
    if (lo - kSharedWindow >= kWindowSize || hi - kSharedWindow >= kWindowSize) return false;
    s = Space::Shared;
    window = kSharedWindow;
  }
  // the host pointer of the lowest address, and each lane's own copy (.local) lane_stride apart
  uint8_t* base = nullptr;
  uint64_t lane_stride = 0;
  if (s == Space::Global) {
    base = c.L.mem->find(lo, hi - lo + size);
  } else if (const SpaceBytes b = space_bytes(c, s, write); b.base && hi - window + size <= b.size) {
    base = b.base + (lo - window);
    lane_stride = b.lane_stride;
  }
  if (!base) return false;
  if (lane_stride == 0 && window == 0) {  // (global and shared: one loop the compiler vectorizes)
    const uintptr_t origin = reinterpret_cast<uintptr_t>(base) - lo;  // (integers: it may lie outside the memory)
    for (int l = 0; l < lanes; ++l) p[l] = reinterpret_cast<uint8_t*>(origin + addr[l]);
  } else {
    for (int l = 0; l < lanes; ++l) {
      p[l] = base + (addr[l] - lo) + static_cast<uint64_t>(l) * lane_stride;
      addr[l] -= window;
    }
  }
  space = s;
  return true;
}

namespace {

// A vector access of one lane (n elements of `size` bytes, aligned to their total) that access_fast resolves
// in one piece: one record for the whole vector (the timing model sees the same bytes), else nullptr and
// the caller goes element by element (which reports any fault exactly).
uint8_t* vector_access(ExecCtx& c, Space space, uint64_t addr, uint32_t size, int n, int lane, bool write) {
  const uint32_t bytes = size * static_cast<uint32_t>(n);
  uint8_t* p = access_fast(c, space, addr, bytes, bytes);
  if (p) record_access(c, space, addr, bytes, lane, write);
  return p;
}

// The shape (AccessShape) of a full warp's records of `bytes` bytes each, in lane order, when their
// addresses are affine in the lane within groups of G lanes: addr[l] = addr[0] + (l % G) * s1 + (l / G) * s2,
// G a power of two (a row of lanes, a broadcast, a plain stride): the LaneAffine key, which fixes every
// record relative to the first, so the timing model finds the results it keeps per shape by this key instead
// of comparing the records. 0: no such pattern (or a stride too wide for the key).
uint64_t affine_shape(const uint64_t (&addr)[32], uint32_t bytes, Space space, bool write) {
  const uint64_t a0 = addr[0], s1 = addr[1] - a0;
  int g = 2;  // the first lane off the line a0 + l * s1: the group size
  for (uint64_t v = a0 + 2 * s1; g < 32 && addr[g] == v; v += s1) ++g;
  if (g & (g - 1)) return 0;
  const int log_g = __builtin_ctz(static_cast<uint32_t>(g));
  const uint64_t s2 = g < 32 ? addr[g] - a0 : 0;
  // every later group: each lane s2 after the same lane of the group before (group 0 is the line a0 + j * s1,
  // so lane r + j of group r / g lies at a0 + j * s1 + (r / g) * s2); one straight loop, vectorized
  uint64_t diff = 0;
  for (int l = g; l < 32; ++l) diff |= (addr[l] - addr[l - g]) ^ s2;
  const LaneAffine a{bytes, space, write, log_g, static_cast<int64_t>(s1), static_cast<int64_t>(s2)};
  if (diff != 0 || !LaneAffine::fits(a.s1) || !LaneAffine::fits(a.s2) || bytes >= 32) return 0;
  return a.key();
}

// A full warp's access of n elements of `size` bytes per lane at the address operand `a`, resolved and recorded
// at once (one record per lane for its n elements, as vector_access makes them, and their shape where
// affine_shape finds one: then held as the first address until the timing model needs them, WarpRecord::
// affine; else written now, record_warp); false, nothing done: the caller goes lane by lane.
bool warp_vector_access(ExecCtx& c, const Instr& in, const Operand& a, uint32_t size, int n, bool write,
                        uint8_t* (&p)[32]) {
  uint64_t addr[32];
  Space space = in.space;
  mem_addrs(c, a, addr);
  const uint32_t bytes = size * static_cast<uint32_t>(n);
  if (!warp_resolve(c, space, addr, bytes, bytes, p, write)) return false;
  WarpRecord& rec = c.rec;
  if (rec.space == Space::Generic) rec.space = space;
  if (!c.L.record_accesses) return true;
  rec.shape = {affine_shape(addr, bytes, space, write), c.mask};
  if (rec.shape.key && rec.acc.empty() && rec.ndeferred == 0) {
    rec.affine = true;
    rec.affine_first = addr[0];
  } else {
    record_warp(c, space, addr, bytes, write);
  }
  return true;
}

void ex_ld(ExecCtx& c, const Instr& in) {
  const Operand& d = in.ops[0];
  const Operand& a = in.ops[1];
  const uint32_t size = static_cast<uint32_t>(dtype_bytes(in.type));
  const bool sgn = dtype_is_signed(in.type);
  const int n = in.vec;  // 1, 2 or 4 (the parser knows .v2 and .v4)
  // Each destination's 32 lanes, found once for the warp (none: a sink, `_`).
  LaneDst dst[4];
  for (int i = 0; i < n; ++i) dst[i] = reg_dst(c, d.kind == OpndKind::Vec ? d.vec[static_cast<size_t>(i)] : d.reg);
  const auto put = [&](int l, int i, uint64_t v) {
    if (dst[i]) dst[i].set(l, sgn ? sext(v, static_cast<int>(size)) : v);
  };
  if (uint8_t* p[32]; c.mask == ~0u && warp_vector_access(c, in, a, size, n, false, p)) {
#if defined(__SSE2__)
    if (size == 4 && n == 4 && dst[0].n && dst[1].n && dst[2].n && dst[3].n) {
      // each lane's four words into the four 32-bit registers: four lanes at a time, transposed (a 32-bit
      // register keeps the low 32 bits, so signedness does not show)
      for (int l0 = 0; l0 < 32; l0 += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(p[l0]));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(p[l0 + 1]));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(p[l0 + 2]));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(p[l0 + 3]));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(dst[0].n + l0), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(dst[1].n + l0), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(dst[2].n + l0), r2);
        _mm_storeu_ps(reinterpret_cast<float*>(dst[3].n + l0), r3);
      }
      return;
    }
#endif
    with_size(size, [&](auto bytes) {  // element by element, each a lane loop of fixed-size loads
      constexpr uint32_t S = decltype(bytes)::value;
      for (int i = 0; i < n; ++i) {
        if (!dst[i]) continue;
        store_lanes(dst[i], [&](int l) {
          const uint64_t v = load_bits(p[l] + static_cast<size_t>(i) * S, S);
          return sgn ? sext(v, S) : v;
        });
      }
    });
    return;
  }
  for_lanes(c.mask, [&](int l) {
    const uint64_t base = mem_addr(c, a, l);
    if (const uint8_t* p = n > 1 ? vector_access(c, in.space, base, size, n, l, false) : nullptr) {
      for (int i = 0; i < n; ++i) put(l, i, load_bits(p + static_cast<size_t>(i) * size, size));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint8_t* p = mem_access(c, in.space, base + static_cast<uint64_t>(i) * size, size, l, false, size * (i == 0 ? n : 1));
      put(l, i, load_bits(p, size));
    }
  });
}

void ex_st(ExecCtx& c, const Instr& in) {
  const Operand& a = in.ops[0];
  const Operand& s = in.ops[1];
  const uint32_t size = static_cast<uint32_t>(dtype_bytes(in.type));
  const int n = in.vec;  // 1, 2 or 4
  // Each element's source, found once for the warp: a register's 32 lanes, else the immediate (-2 in a vector)
  // or zero (a sink) every lane stores; per_lane: a scalar source src_bits reads lane by lane (a special
  // register, a negated predicate).
  uint64_t imm[4] = {};
  LaneSrc src[4];
  for (int i = 0; i < 4; ++i) src[i] = {nullptr, &imm[i], 0};
  bool per_lane = false;
  if (s.kind == OpndKind::Vec) {
    for (int i = 0; i < n; ++i) {
      const int32_t r = s.vec[static_cast<size_t>(i)];
      if (r >= 0) src[i] = reg_lanes(c, r);
      else if (r == -2) imm[i] = s.vec_imm[static_cast<size_t>(i)];
    }
  } else if (!lane_src(c, s, src[0])) {
    per_lane = true;
  }
  const auto value = [&](int l, int i) -> uint64_t { return per_lane ? src_bits(c, s, l) : src[i][l]; };
  if (uint8_t* p[32]; c.mask == ~0u && warp_vector_access(c, in, a, size, n, true, p)) {
#if defined(__SSE2__)
    if (size == 4 && n == 4 && !per_lane && src[0].n && src[1].n && src[2].n && src[3].n) {
      // four 32-bit registers: four lanes at a time, transposed, each lane's 16 bytes stored in lane order
      for (int l0 = 0; l0 < 32; l0 += 4) {
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src[0].n + l0));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src[1].n + l0));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src[2].n + l0));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src[3].n + l0));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(reinterpret_cast<float*>(p[l0]), r0);
        _mm_storeu_ps(reinterpret_cast<float*>(p[l0 + 1]), r1);
        _mm_storeu_ps(reinterpret_cast<float*>(p[l0 + 2]), r2);
        _mm_storeu_ps(reinterpret_cast<float*>(p[l0 + 3]), r3);
      }
      return;
    }
#endif
    uint64_t v[4][32];  // every element's 32 lanes, copied once (vectorized)
    for (int i = 0; i < n; ++i) {
      if (per_lane) {
        for (int l = 0; l < 32; ++l) v[i][l] = src_bits(c, s, l);
      } else {
        copy_lanes(src[i], v[i]);
      }
    }
    with_size(size, [&](auto bytes) {  // lane by lane, in order (two lanes may store to one place)
      constexpr uint32_t S = decltype(bytes)::value;
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < n; ++i) store_bits(p[l] + static_cast<size_t>(i) * S, v[i][l], S);
    });
    return;
  }
  for_lanes(c.mask, [&](int l) {
    const uint64_t base = mem_addr(c, a, l);
    if (uint8_t* p = n > 1 ? vector_access(c, in.space, base, size, n, l, true) : nullptr) {
      for (int i = 0; i < n; ++i) store_bits(p + static_cast<size_t>(i) * size, value(l, i), size);
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint8_t* p = mem_access(c, in.space, base + static_cast<uint64_t>(i) * size, size, l, true, size * (i == 0 ? n : 1));
      store_bits(p, value(l, i), size);
    }
  });
}

enum AtomOp : uint8_t { A_ADD, A_MIN, A_MAX, A_AND, A_OR, A_XOR, A_EXCH, A_CAS, A_INC, A_DEC };

// a + b of two f16 / bf16 bit patterns (the low 16 bits), rounded to nearest even; the sum of two such values
// in double is exact or rounded innocuously (53 >= 2 * 11 + 2); NaN gives the canonical NaN.
uint64_t half_add(DType t, uint64_t a, uint64_t b) {
  const bool f16 = t == DType::F16;
  const auto val = [f16](uint64_t x) {
    return f16 ? half_to_double(static_cast<uint16_t>(x)) : bf16_to_double(static_cast<uint16_t>(x));
  };
  const double r = val(a) + val(b);
  if (std::isnan(r)) return kCanonicalNaN16;
  return f16 ? double_to_half(r) : double_to_bf16(r);
}

uint64_t atom_apply(AtomOp op, DType t, uint64_t old, uint64_t b, uint64_t cv) {
  const int bytes = dtype_bytes(t);
  switch (op) {
    case A_ADD:
      if (t == DType::F32) {  // flushes subnormal inputs and results to sign-preserving zero (PTX ISA, H100)
        const float r = f32_ftz(f32_ftz(f32_from_bits(old)) + f32_ftz(f32_from_bits(b)));
        return std::isnan(r) ? kCanonicalNaN32 : bits_from_f32(r);
      }
      if (t == DType::F64) return bits_from_f64(f64_from_bits(old) + f64_from_bits(b));
      if (t == DType::F16 || t == DType::BF16) return half_add(t, old, b);
      if (t == DType::F16x2 || t == DType::BF16x2) {
        const DType h = t == DType::F16x2 ? DType::F16 : DType::BF16;
        return half_add(h, old, b) | (half_add(h, old >> 16, b >> 16) << 16);
      }
      return zext(old + b, bytes);
    case A_MIN: case A_MAX: {
      bool less;
      if (t == DType::F32) less = f32_from_bits(b) < f32_from_bits(old);
      else if (t == DType::F64) less = f64_from_bits(b) < f64_from_bits(old);
      else if (dtype_is_signed(t)) less = static_cast<int64_t>(sext(b, bytes)) < static_cast<int64_t>(sext(old, bytes));
      else less = zext(b, bytes) < zext(old, bytes);
      return (op == A_MIN) == less ? zext(b, bytes) : old;
    }
    case A_AND: return old & b;
    case A_OR: return old | b;
    case A_XOR: return old ^ b;
    case A_EXCH: return b;
    case A_CAS: return zext(old, bytes) == zext(b, bytes) ? cv : old;
    case A_INC: return zext(old, bytes) >= zext(b, bytes) ? 0 : zext(old + 1, bytes);
    case A_DEC: return (zext(old, bytes) == 0 || zext(old, bytes) > zext(b, bytes)) ? b : zext(old - 1, bytes);
  }
  return old;
}

void ex_atom(ExecCtx& c, const Instr& in) {
  const bool has_dst = in.op == Op::Atom;
  const size_t ai = has_dst ? 1 : 0;
  const uint32_t size = static_cast<uint32_t>(dtype_bytes(in.type));
  const AtomOp op = static_cast<AtomOp>(in.sub);
  for_lanes(c.mask, [&](int l) {
    uint8_t* p = mem_access(c, in.space, mem_addr(c, in.ops[ai], l), size, l, true, size);
    const uint64_t old = load_bits(p, size);
    const uint64_t b = src_bits(c, in.ops[ai + 1], l);
    const uint64_t cv = in.ops.size() > ai + 2 ? src_bits(c, in.ops[ai + 2], l) : 0;
    store_bits(p, atom_apply(op, in.type, old, b, cv), size);
    if (has_dst) set_reg(c, in.ops[0].reg, l, dtype_is_signed(in.type) ? sext(old, static_cast<int>(size)) : old);
  });
}

// cp.async [dst], [src], cp-size{, src-size | ignore-src}: performed at issue (the data is in shared memory
// when the instruction executes; the timing model charges its latency to the wait that covers it).
void ex_cp_async(ExecCtx& c, const Instr& in) {
  const uint32_t cp = static_cast<uint32_t>(in.ops[2].imm);
  const bool has_extra = in.ops.size() > 3;
  const bool ignore_pred = in.num == 1;
  const auto src_size_of = [&](int l) {
    uint32_t src_size = cp;
    if (has_extra) {
      const uint64_t v = src_bits(c, in.ops[3], l);
      src_size = ignore_pred ? (v ? 0 : cp) : static_cast<uint32_t>(v);
      if (src_size > cp) src_size = cp;
    }
    return src_size;
  };
  if (c.mask == ~0u) {  // a full warp copying whole chunks, in one piece where it can (the same records)
    bool whole = true;
    for (int l = 0; l < 32 && whole; ++l) whole = src_size_of(l) == cp;
    uint64_t to[32], from[32];
    uint8_t *dst[32], *src[32];
    Space shared = Space::Shared, global = Space::Global;
    if (whole) {
      mem_addrs(c, in.ops[0], to);
      mem_addrs(c, in.ops[1], from);
    }
    if (whole && warp_resolve(c, shared, to, cp, cp, dst, true) && warp_resolve(c, global, from, cp, 1, src, false)) {
      // the lanes' shared records, then their global ones (the timing model takes each space's records
      // in lane order, as the lane-by-lane path below interleaves them)
      record_warp(c, shared, to, cp, true);
      record_warp(c, global, from, cp, false);
      const auto copy = [&](auto bytes) {  // a fixed-size copy per lane (cp-size is 4, 8 or 16)
        for (int l = 0; l < 32; ++l) std::memcpy(dst[l], src[l], decltype(bytes)::value);
      };
      if (cp == 16) copy(std::integral_constant<uint32_t, 16>{});
      else if (cp == 8) copy(std::integral_constant<uint32_t, 8>{});
      else for (int l = 0; l < 32; ++l) std::memcpy(dst[l], src[l], cp);
      return;
    }
  }
  for_lanes(c.mask, [&](int l) {
    const uint32_t src_size = src_size_of(l);
    uint8_t* dst = mem_access(c, Space::Shared, mem_addr(c, in.ops[0], l), cp, l, true, cp);
    uint8_t tmp[16] = {0};
    if (src_size > 0) {
      const uint8_t* src = mem_access(c, Space::Global, mem_addr(c, in.ops[1], l), src_size, l, false, 1);
      std::memcpy(tmp, src, src_size);
    }
    std::memcpy(dst, tmp, cp);
  });
}

// The forms of the family (forms.h). Cache operators, eviction priorities, prefetch sizes, memory orders and
// scopes are accepted as PTX allows them and do not change the functional result (cg is read by the timing
// model: it bypasses L1). .v4 takes elements of up to 32 bits.
#define STC_T "b8 u8 s8 %b %i f32 f64"
#define STC_T4 "b8 u8 s8 b16 b32 u16 u32 s16 s32 f32"
#define STC_L1 " L1::evict_normal|L1::evict_unchanged|L1::evict_first|L1::evict_last|L1::no_allocate"
#define STC_L2 " L2::64B|L2::128B|L2::256B"
#define STC_SCOPE " !cta|gpu|sys"
#define STC_ATOM " global|shared|shared::cta relaxed|acquire|release|acq_rel cta|gpu|sys"
#define STC_RED " global|shared|shared::cta relaxed|release cta|gpu|sys"
const Form kMemForms[] = {
    {"ld", STC_T, "global ca|cg|cs|lu|cv weak|volatile v2" STC_L1 STC_L2},
    {"ld", STC_T4, "global ca|cg|cs|lu|cv weak|volatile !v4" STC_L1 STC_L2},
    {"ld", STC_T, "!global !nc ca|cg|cs v2" STC_L1 STC_L2},
    {"ld", STC_T4, "!global !nc ca|cg|cs !v4" STC_L1 STC_L2},
    {"ld", STC_T, "global !relaxed|acquire" STC_SCOPE " v2" STC_L1 STC_L2},
    {"ld", STC_T4, "global !relaxed|acquire" STC_SCOPE " !v4" STC_L1 STC_L2},
    {"ld", STC_T, "!shared|shared::cta ca|cg|cs|lu|cv weak|volatile v2"},
    {"ld", STC_T4, "!shared|shared::cta ca|cg|cs|lu|cv weak|volatile !v4"},
    {"ld", STC_T, "!shared|shared::cta !relaxed|acquire" STC_SCOPE " v2"},
    {"ld", STC_T4, "!shared|shared::cta !relaxed|acquire" STC_SCOPE " !v4"},
    {"ld", STC_T, "!local|param|const ca|cg|cs|lu|cv weak v2"},
    {"ld", STC_T4, "!local|param|const ca|cg|cs|lu|cv weak !v4"},
    {"ldu", STC_T, "global v2"},
    {"ldu", STC_T4, "global !v4"},
    {"st", STC_T, "global wb|cg|cs|wt weak|volatile v2" STC_L1},
    {"st", STC_T4, "global wb|cg|cs|wt weak|volatile !v4" STC_L1},
    {"st", STC_T, "global !relaxed|release" STC_SCOPE " v2" STC_L1},
    {"st", STC_T4, "global !relaxed|release" STC_SCOPE " !v4" STC_L1},
    {"st", STC_T, "!shared|shared::cta wb|cg|cs|wt weak|volatile v2"},
    {"st", STC_T4, "!shared|shared::cta wb|cg|cs|wt weak|volatile !v4"},
    {"st", STC_T, "!shared|shared::cta !relaxed|release" STC_SCOPE " v2"},
    {"st", STC_T4, "!shared|shared::cta !relaxed|release" STC_SCOPE " !v4"},
    {"st", STC_T, "!local wb|cg|cs|wt weak v2"},
    {"st", STC_T4, "!local wb|cg|cs|wt weak !v4"},
    {"atom", "u32 u64 s32 f32 f64", "!add" STC_ATOM},
    {"atom", "f16 f16x2", "!add !noftz" STC_ATOM},
    {"atom", "bf16 bf16x2", "!add !noftz" STC_ATOM, 90, 78},
    {"atom", "u32 u64 s32 s64", "!min|max" STC_ATOM},
    {"atom", "b32 b64", "!and|or|xor|exch" STC_ATOM},
    {"atom", "b16 b32 b64", "!cas" STC_ATOM},
    {"atom", "u32", "!inc|dec" STC_ATOM},
    {"red", "u32 u64 s32 f32 f64", "!add" STC_RED},
    {"red", "f16 f16x2", "!add !noftz" STC_RED},
    {"red", "bf16 bf16x2", "!add !noftz" STC_RED, 90, 78},
    {"red", "u32 u64 s32 s64", "!min|max" STC_RED},
    {"red", "b32 b64", "!and|or|xor" STC_RED},
    {"red", "u32", "!inc|dec" STC_RED},
    {"cp", "-", "!async !ca !shared|shared::cta !global L2::64B|L2::128B|L2::256B"},
    {"cp", "-", "!async !cg !shared|shared::cta !global L2::64B|L2::128B|L2::256B"},
    {"cp", "-", "!async !commit_group|wait_group|wait_all"},
};
#undef STC_T
#undef STC_T4
#undef STC_L1
#undef STC_L2
#undef STC_SCOPE
#undef STC_ATOM
#undef STC_RED

}  // namespace

void decode_ldst(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kMemForms));
  std::vector<DType> types;
  for (const auto& m : common_mods(in, types))
    if (m == "cg") in.flags |= F_CG;  // cache at L2, not L1 (the timing model bypasses L1)
  // .nc selects nothing here (a load is read through the same caches); .volatile is kept: decode_instruction
  // makes a volatile load Ordered and the load scheduler keeps it in place among all memory accesses.
  in.flags &= ~F_NC;
  in.type = types[0];
  need_ops(in, 2);
  const bool load = in.op != Op::St;
  const Operand& val = in.ops[load ? 0 : 1];
  check_address(in, k, load ? 1 : 0, in.space);
  check_operand(in, k, load ? 0 : 1, in.type, (in.vec > 1 ? uint32_t{OK_VEC} : uint32_t{OK_REG}) | (load ? 0u : uint32_t{OK_IMM}), Fit::Relaxed, load);
  if (in.vec > 1 && (val.kind != OpndKind::Vec || val.vec.size() != in.vec))
    throw DecodeError("vector access needs a {..} operand of " + std::to_string(in.vec) + " registers");
  if (in.vec == 1 && val.kind == OpndKind::Vec) throw DecodeError("a {..} operand needs .v2 or .v4");
  if (load && val.kind == OpndKind::Vec && !val.vec_imm.empty()) throw DecodeError("immediate in a destination");
  if (!load) imm_as(in.ops[1], in.type);
  in.unit = Unit::LDST;
  in.fn = load ? &ex_ld : &ex_st;
}

void decode_atom(Instr& in, const Kernel& k) {
  check_form(in, k, form_table(kMemForms));
  std::vector<DType> types;
  static const std::pair<const char*, AtomOp> ops[] = {
      {"add", A_ADD}, {"min", A_MIN}, {"max", A_MAX}, {"and", A_AND}, {"or", A_OR}, {"xor", A_XOR},
      {"exch", A_EXCH}, {"cas", A_CAS}, {"inc", A_INC}, {"dec", A_DEC}};
  for (const auto& m : common_mods(in, types))
    for (const auto& [n, o] : ops)
      if (m == n) in.sub = o;
  in.type = types[0];
  const size_t base = in.op == Op::Atom ? 1 : 0;
  need_ops(in, base + (in.sub == A_CAS ? 3 : 2));
  if (base) check_operand(in, k, 0, in.type, OK_REG | OK_SINK, Fit::Exact, true);
  check_address(in, k, base, in.space);
  for (size_t i = base + 1; i < in.ops.size(); ++i) check_operand(in, k, i, in.type, OK_SRC);
  imms_as(in, in.type, base + 1);
  in.traits.cas_loop = in.sub == A_ADD && in.space == Space::Shared &&
                       (in.type == DType::U64 || in.type == DType::S64 || in.type == DType::F32 || in.type == DType::F64);
  in.unit = Unit::LDST;
  in.fn = &ex_atom;
}

void decode_cpasync(Instr& in, const Kernel& k) {
  // cp.async.{ca,cg}.shared{::cta}.global ... | cp.async.commit_group | cp.async.wait_group N | cp.async.wait_all
  check_form(in, k, form_table(kMemForms));
  const auto has = [&](const char* m) { return std::find(in.mods.begin(), in.mods.end(), m) != in.mods.end(); };
  in.unit = Unit::LDST;
  in.traits.writes_dst = false;
  in.traits.sched = SchedKind::Fence;
  in.traits.op_class = op_class_id("cp_async");  // exists only where the config has cp.async (sm_80+)
  if (has("commit_group")) { need_ops(in, 0); in.traits.async = AsyncKind::Commit; in.fn = [](ExecCtx&, const Instr&) {}; return; }
  if (has("wait_group")) {
    need_ops(in, 1);
    if (in.ops[0].kind != OpndKind::Imm) throw DecodeError("cp.async.wait_group needs an immediate");
    in.traits.async = AsyncKind::WaitGroup;
    in.fn = [](ExecCtx&, const Instr&) {};
    return;
  }
  if (has("wait_all")) { need_ops(in, 0); in.traits.async = AsyncKind::WaitAll; in.fn = [](ExecCtx&, const Instr&) {}; return; }
  // The destination's space comes first: cp.async.ca.global.shared is refused, as by ptxas.
  const auto shared = std::find_if(in.mods.begin(), in.mods.end(), [](const std::string& m) { return m.rfind("shared", 0) == 0; });
  if (std::find(in.mods.begin(), in.mods.end(), "global") < shared) throw DecodeError("cp.async copies .shared from .global, in that order");
  if (has("cg")) in.flags |= F_CG;
  need_ops(in, 3, 4);
  check_address(in, k, 0, Space::Shared);
  check_address(in, k, 1, Space::Global);
  check_operand(in, k, 2, DType::U32, OK_IMM);
  if (in.ops.size() > 3) {
    const bool pred = in.ops[3].kind == OpndKind::Reg && in.ops[3].reg >= 0 &&
                      k.regs[static_cast<size_t>(in.ops[3].reg)].type == DType::Pred;
    check_operand(in, k, 3, pred ? DType::Pred : DType::U32, OK_SRC | (pred ? uint32_t{OK_NEG} : 0u));
  }
  const uint64_t cp = in.ops[2].imm;
  if (cp != 4 && cp != 8 && cp != 16) throw DecodeError("cp.async cp-size must be 4, 8 or 16");
  if (has("cg") && cp != 16) throw DecodeError("cp.async.cg needs cp-size 16");
  if (in.ops.size() > 3 && in.ops[3].kind == OpndKind::Reg && in.ops[3].reg >= 0 &&
      k.regs[static_cast<size_t>(in.ops[3].reg)].type == DType::Pred)
    in.num = 1;  // ignore-src predicate form
  in.space = Space::Shared;  // the destination's space; the source is global
  in.traits.mem = MemKind::AsyncCopy;
  in.traits.sched = SchedKind::Ordered;
  in.fn = &ex_cp_async;
}

}  // namespace stc
