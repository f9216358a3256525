// Measured L2 slice maps (l2.slice_map): which slice each interleave unit of an address lives on, read from
// a table measured on silicon instead of the hashed interleave.
#pragma once

#include <cstdint>
#include <string>

namespace stc {

struct L2SliceMap {
  uint32_t unit_bytes;   // bytes of one table entry (the slice interleave the map was measured at)
  uint32_t page_bytes;   // bytes of one measured page
  uint32_t pages;        // measured pages; an address's page number modulo this picks the page's table
  uint32_t slices;       // slices the map names (0 .. slices - 1)
  const uint8_t* table;  // pages x (page_bytes / unit_bytes) slice numbers
  const uint8_t* buddy;  // each slice's buddy (the one slice it shares atomic throughput with), or null

  uint32_t slice(uint64_t addr) const {
    const uint64_t units = page_bytes / unit_bytes;
    const uint64_t page = (addr / page_bytes) % pages;
    return table[page * units + (addr % page_bytes) / unit_bytes];
  }
};

// The map named by l2.slice_map ("h100"), or nullptr for "hash" (the hashed interleave).
// Throws std::invalid_argument for any other name.
const L2SliceMap* find_l2_slice_map(const std::string& name);

}  // namespace stc
