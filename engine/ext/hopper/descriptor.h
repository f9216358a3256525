// The wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): a 64-bit value
//   bits  0-13  matrix start address, (addr & 0x3FFFF) >> 4
//   bits 16-29  leading dimension byte offset (LBO) >> 4
//   bits 32-45  stride dimension byte offset (SBO) >> 4
//   bits 49-51  matrix base offset (swizzled layouts whose start is not aligned to the swizzle repeat)
//   bits 62-63  swizzle mode: 0 none, 1 128B, 2 64B, 3 32B
// and the canonical layouts it describes (PTX ISA, "Strides"; T = 16 bytes / element size, W = swizzle width):
//   K-major,  no swizzle: ((8,m),(T,2k)):((1T,SBO),(1,LBO))     swizzled: ((8,m),(T,2k)):((W/16 T,SBO),(1,T))
//   MN-major, no swizzle: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))  swizzled: ((T,W/16,m),(8,k)):((1,T,LBO),(W/16 T,SBO))
// composed with Swizzle<s,4,3> (s = 3, 2, 1 for 128B, 64B, 32B) on the absolute shared address: address bits
// [4, 4+s) are XORed with bits [7, 7+s).
#pragma once

#include <cstdint>
#include <string>

namespace stc::hopper {

enum class Swizzle : uint8_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

struct MatrixDesc {
  uint32_t start = 0;        // shared-memory byte address
  uint32_t lbo = 0, sbo = 0; // bytes
  uint32_t base_offset = 0;
  Swizzle swizzle = Swizzle::None;
};

// Swizzle width in bytes (16 for no swizzle: one 16-byte line).
uint32_t swizzle_bytes(Swizzle s);

// Decodes a descriptor; returns an empty string, or why it is malformed (reserved bits set, a base offset
// that does not match the start address, a base offset without swizzle).
std::string decode_desc(uint64_t bits, MatrixDesc& out);

// Shared-memory byte address of element (mn, k) of an operand described by `d` (mn: the row of A / column
// of B; k: the reduction index), `mn_major` for the transposed layouts, `elem_bytes` its element size.
uint32_t element_address(const MatrixDesc& d, bool mn_major, uint32_t elem_bytes, uint32_t mn, uint32_t k);

}  // namespace stc::hopper
