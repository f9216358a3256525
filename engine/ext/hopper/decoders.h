// The Hopper extension's decoders (one per opcode family), registered together in register.cc.
#pragma once

#include "../../ptx/ir.h"

namespace stc::hopper {

void decode_wgmma(Instr& in, const Kernel& k);       // wgmma.cc
void decode_mbarrier(Instr& in, const Kernel& k);    // mbarrier.cc
void decode_fence(Instr& in, const Kernel& k);       // mbarrier.cc: fence.proxy.async, fence.mbarrier_init
void decode_tma(Instr& in, const Kernel& k);         // tma.cc: cp.async.bulk.tensor

}  // namespace stc::hopper
