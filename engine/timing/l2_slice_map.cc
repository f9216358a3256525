#include "l2_slice_map.h"

#include <stdexcept>

namespace stc {

namespace {

// H100 SXM5 (silicon 2026-11-26, benchmarks/calibration/slice_map_probe.py): four 2 MiB pages of 8192
// units of 256 bytes over 80 slices.
const uint8_t kH100[4][8192] =
#include "l2_slice_map_h100.inc"
    ;

// Each slice's buddy (silicon 2026-11-26, the same probe's pair matrix): 40 pairs.
const uint8_t kH100Buddies[80] =
#include "l2_slice_buddies_h100.inc"
    ;

const L2SliceMap kH100Map{256, 2u << 20, 4, 80, &kH100[0][0], kH100Buddies};

}  // namespace

const L2SliceMap* find_l2_slice_map(const std::string& name) {
  if (name == "hash") return nullptr;
  if (name == "h100") return &kH100Map;
  throw std::invalid_argument("GPU config key 'l2.slice_map' must be 'hash' or 'h100', got '" + name + "'");
}

}  // namespace stc
