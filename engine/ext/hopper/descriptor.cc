#include "descriptor.h"

#include <sstream>

namespace stc::hopper {

uint32_t swizzle_bytes(Swizzle s) {
  switch (s) {
    case Swizzle::B128: return 128;
    case Swizzle::B64: return 64;
    case Swizzle::B32: return 32;
    case Swizzle::None: break;
  }
  return 16;
}

namespace {
// Swizzle<s,4,3>: bits [4, 4+s) ^= bits [7, 7+s).
uint32_t swizzle_address(Swizzle s, uint32_t addr) {
  const uint32_t bits = s == Swizzle::B128 ? 3 : s == Swizzle::B64 ? 2 : s == Swizzle::B32 ? 1 : 0;
  const uint32_t mask = (1u << bits) - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

constexpr uint64_t kReserved = (uint64_t{3} << 14) | (uint64_t{3} << 30) | (uint64_t{7} << 46) |
                               (uint64_t{0x3ff} << 52);
}  // namespace

std::string decode_desc(uint64_t bits, MatrixDesc& out) {
  if (bits & kReserved) return "reserved bits (14-15, 30-31, 46-48, 52-61) are set";
  out.start = static_cast<uint32_t>(bits & 0x3fff) << 4;
  out.lbo = static_cast<uint32_t>((bits >> 16) & 0x3fff) << 4;
  out.sbo = static_cast<uint32_t>((bits >> 32) & 0x3fff) << 4;
  out.base_offset = static_cast<uint32_t>((bits >> 49) & 7);
  out.swizzle = static_cast<Swizzle>((bits >> 62) & 3);
  if (out.swizzle == Swizzle::None) {
    if (out.base_offset) return "a base offset needs a swizzled layout";
    return "";
  }
  // The swizzle pattern repeats every 8 lines of W bytes; a start inside a repeat names its phase.
  const uint32_t repeat = 8 * swizzle_bytes(out.swizzle);
  const uint32_t want = out.start % repeat ? (out.start >> 7) & 7 : 0;
  if (out.base_offset == want) return "";
  std::ostringstream s;
  s << "base offset " << out.base_offset << " does not match the start address 0x" << std::hex << out.start
    << std::dec << " (expected " << want << ": (start >> 7) & 7 when the start is not " << repeat
    << "-byte aligned, else 0)";
  return s.str();
}

uint32_t element_address(const MatrixDesc& d, bool mn_major, uint32_t elem_bytes, uint32_t mn, uint32_t k) {
  const uint32_t t = 16 / elem_bytes;  // elements per 16-byte line
  const uint32_t w = swizzle_bytes(d.swizzle);
  uint32_t off;
  if (!mn_major && d.swizzle == Swizzle::None)
    off = (mn % 8) * 16 + (mn / 8) * d.sbo + (k % t) * elem_bytes + (k / t) * d.lbo;
  else if (!mn_major)
    off = (mn % 8) * w + (mn / 8) * d.sbo + k * elem_bytes;
  else if (d.swizzle == Swizzle::None)
    off = (mn % t) * elem_bytes + (mn / t) * d.sbo + (k % 8) * 16 + (k / 8) * d.lbo;
  else {
    const uint32_t line = t * (w / 16);  // elements along MN in one swizzled line
    off = (mn % line) * elem_bytes + (mn / line) * d.lbo + (k % 8) * w + (k / 8) * d.sbo;
  }
  return swizzle_address(d.swizzle, d.start + off);
}

}  // namespace stc::hopper
