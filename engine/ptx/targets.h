// The PTX ISA versions and targets the loader knows (those of ptxas 13).
#pragma once

#include <cstdint>
#include <string>

namespace stc {

// `.version X.Y` as 10 * X + Y (decimal: "7.10" is 7.1); 0 when it is not a version ptxas 13 knows.
uint16_t ptx_version_number(const std::string& text);

// The SM number of a `.target` name (sm_XX, sm_XXa, sm_XXf, compute_XX); 0 when unknown. `min_ptx`
// receives the first .version (times ten) that knows the target.
uint16_t target_sm(const std::string& name, uint16_t& min_ptx);

}  // namespace stc
