// Kernels for the pass tests: PTX text parsed (and decoded) by the engine's own front end, and helpers to
// find instructions in the result by their text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ptx/ir.h"
#include "ptx/parser.h"
#include "unit_test.h"

namespace stc_test {

// A module of one entry `k(.param .u64 a, .param .u64 b, .param .u32 n)` with the usual register
// declarations (%p, %r, %f: 32-bit; %rd, %fd: 64-bit; %h: 16-bit) around `body`.
struct PtxKernel {
  std::unique_ptr<stc::Module> module;
  stc::Kernel& kernel() { return *module->kernels.at(0); }
};

inline PtxKernel parse_kernel(const std::string& body, const std::string& target = "sm_80") {
  const std::string text = ".version 8.0\n.target " + target +
                           "\n.address_size 64\n"
                           ".visible .entry k(.param .u64 a, .param .u64 b, .param .u32 n)\n{\n"
                           "  .reg .pred %p<16>;\n  .reg .b32 %r<64>;\n  .reg .f32 %f<64>;\n"
                           "  .reg .b64 %rd<32>;\n  .reg .f64 %fd<8>;\n  .reg .b16 %h<8>;\n"
                           "  .shared .align 16 .b8 smem[1024];\n" +
                           body + "\n}\n";
  return PtxKernel{stc::parse_ptx(text, "unit_test.ptx")};
}

// The pc of the first instruction whose text starts with `prefix` (-1: none).
inline int find_pc(const stc::Kernel& k, const std::string& prefix, int from = 0) {
  for (size_t pc = static_cast<size_t>(from); pc < k.code.size(); ++pc)
    if (k.code[pc].text.compare(0, prefix.size(), prefix) == 0) return static_cast<int>(pc);
  return -1;
}

// The kernel's instructions as text, one a line (for failure messages).
inline std::string listing(const stc::Kernel& k) {
  std::string s;
  for (size_t pc = 0; pc < k.code.size(); ++pc) s += "\n  " + std::to_string(pc) + ": " + k.code[pc].text;
  return s;
}

// The register index of a PTX register name ("%r3").
inline int32_t reg(const stc::Kernel& k, const std::string& name) {
  for (size_t r = 0; r < k.regs.size(); ++r)
    if (k.regs[r].name == name) return static_cast<int32_t>(r);
  return -1;
}

}  // namespace stc_test
