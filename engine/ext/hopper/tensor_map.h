// The engine's encoding of a CUtensorMap (the 128-byte kernel parameter of cp.async.bulk.tensor). The
// driver's own encoding is opaque; stcsim.sim.tensor_map.TensorMap.encode() writes this one for the engine
// (a GPU run gets the driver's, from cuTensorMapEncodeTiled). Little-endian fields:
//   0  u32 magic 0x504d5453 ("STMP")    4 u8 version (1)   5 u8 element bytes   6 u8 rank (1..5)
//   7  u8 swizzle (0 none, 1 32B, 2 64B, 3 128B)   8 u8 interleave (0 none)   9 u8 oob fill (0 zero, 1 NaN)
//   10 u8 float element (NaN fill allowed)   16 u64 global address   24 u32 dims[5]
//   48 u64 strides[4] (bytes, of dims 1..4)   80 u16 box[5]   90 u8 element strides[5]; the rest is zero.
#pragma once

#include <cstdint>
#include <string>

namespace stc::hopper {

struct TensorMap {
  uint32_t elem_bytes = 0, rank = 0, swizzle = 0, oob_nan = 0;
  bool is_float = false;
  uint64_t address = 0;
  uint64_t dims[5] = {1, 1, 1, 1, 1};
  uint64_t strides[5] = {0, 0, 0, 0, 0};  // bytes; strides[0] = element bytes
  uint32_t box[5] = {1, 1, 1, 1, 1};
  uint32_t estride[5] = {1, 1, 1, 1, 1};
};

// Decodes the 128 bytes at `p`; returns an empty string or why they are not a tensor map of this encoding.
std::string decode_tensor_map(const uint8_t* p, TensorMap& out);

}  // namespace stc::hopper
