"""Probes of the `.target` / `.version` gates of PTX features (engine/ptx/feature_gates.def) and ptxas's
verdicts on them, recorded in data/feature_gate_verdicts.json so that CI without CUDA checks the engine
against ptxas (tests/ptx/test_ptx_gating.py).

A probe is one instruction (a line of PTX) placed in a one-kernel module with a fixed register file. Each is
tried under every target of TARGETS at .version 9.0 and under every .version of VERSIONS (that knows the
target) at the lowest target ptxas accepts it for: the grid of (target, version) pairs around its gate.
``python tests/ptx/gate_probes.py`` records the verdicts anew (ptxas 13 needed; about a minute).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
from ptxas_oracle import check_lines, find_ptxas  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "feature_gate_verdicts.json"

TARGETS = (
    "sm_50",
    "sm_53",
    "sm_60",
    "sm_61",
    "sm_62",
    "sm_70",
    "sm_72",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_89",
    "sm_90",
    "sm_90a",
)
VERSIONS = (
    "5.0",
    "6.0",
    "6.1",
    "6.2",
    "6.3",
    "6.4",
    "6.5",
    "7.0",
    "7.1",
    "7.2",
    "7.3",
    "7.4",
    "7.5",
    "7.6",
    "7.7",
    "7.8",
    "8.0",
    "8.1",
    "8.2",
    "8.3",
    "8.4",
    "8.5",
    "8.6",
    "8.7",
    "8.8",
    "9.0",
)
# The first .version that knows each target (engine/ptx/targets.cc; sm_90a two versions after sm_90).
FIRST_VERSION = {
    "sm_50": "4.0",
    "sm_53": "4.2",
    "sm_60": "5.0",
    "sm_61": "5.0",
    "sm_62": "5.0",
    "sm_70": "6.0",
    "sm_72": "6.1",
    "sm_75": "6.3",
    "sm_80": "7.0",
    "sm_86": "7.1",
    "sm_89": "7.8",
    "sm_90": "7.8",
    "sm_90a": "8.0",
}

REGISTERS = (
    ".reg .b16 %h<8>;",
    ".reg .b32 %r<16>;",
    ".reg .b64 %rd<8>;",
    ".reg .f32 %f<16>;",
    ".reg .f64 %fd<4>;",
    ".reg .pred %p<4>;",
    ".shared .align 16 .b8 sm[1024];",
)

_F4 = "{%f0, %f1, %f2, %f3}"
_R2, _R4 = "{%r0, %r1}", "{%r0, %r1, %r2, %r3}"
_R8 = "{%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}"
_F8 = "{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}"

# name -> one instruction. Gated features first, then forms every target takes (they must stay accepted).
PROBES: dict[str, str] = {
    # tensor cores
    "mma.m16n8k8.f16": f"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {_F4}, {_R2}, {{%r4}}, {_F4};",
    "mma.m16n8k8.f16acc": f"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {_R2}, {_R2}, {{%r4}}, {_R2};",
    "mma.m16n8k8.bf16": f"mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {_F4}, {_R2}, {{%r4}}, {_F4};",
    "mma.m16n8k16.f16": f"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {_F4}, {_R4}, {_R2}, {_F4};",
    "mma.m16n8k16.f16acc": f"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {_R2}, {_R4}, {_R2}, {_R2};",
    "mma.m16n8k16.bf16": f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {_F4}, {_R4}, {_R2}, {_F4};",
    "mma.sp.f16": f"mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {_F4}, {_R4}, {_R4}, {_F4}, %r8, 0;",
    "mma.sp.f16acc": (
        f"mma.sp.sync.aligned.m16n8k32.row.col.f16.f16.f16.f16 {_R2}, {_R4}, {_R4}, {_R2}, %r8, 0;"
    ),
    "mma.sp.bf16": (
        f"mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {_F4}, {_R4}, {_R4}, {_F4}, %r8, 1;"
    ),
    "mma.sp::ordered_metadata": (
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
        f"{_F4}, {_R4}, {_R4}, {_F4}, %r8, 0;"
    ),
    "wmma.load.a": "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 " + _R8 + ", [sm];",
    "wmma.load.c": "wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 " + _F8 + ", [sm], 16;",
    "wmma.store.d": "wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [sm], " + _F8 + ";",
    "wmma.mma.f32": f"wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {_F8}, {_R8}, {_R8}, {_F8};",
    "ldmatrix.x1": "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r0}, [%r1];",
    "ldmatrix.x4.trans": f"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {_R4}, [%r4];",
    "ldmatrix.shared::cta": "ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16 {%r0, %r1}, [%r4];",
    # asynchronous copies
    "cp.async.ca": "cp.async.ca.shared.global [%r1], [%rd1], 4;",
    "cp.async.cg.16": "cp.async.cg.shared.global [%r1], [%rd1], 16;",
    "cp.async.cg.L2::128B": "cp.async.cg.shared.global.L2::128B [%r1], [%rd1], 16;",
    "cp.async.src-size": "cp.async.ca.shared.global [%r1], [%rd1], 8, %r2;",
    "cp.async.commit_group": "cp.async.commit_group;",
    "cp.async.wait_group": "cp.async.wait_group 1;",
    "cp.async.wait_all": "cp.async.wait_all;",
    "mbarrier.init": "mbarrier.init.shared.b64 [sm], %r1;",
    "mbarrier.arrive": "mbarrier.arrive.shared.b64 %rd1, [sm];",
    "mbarrier.try_wait": "mbarrier.try_wait.parity.shared::cta.b64 %p1, [sm], %r1;",
    "mbarrier.inval": "mbarrier.inval.shared.b64 [sm];",
    "mbarrier.arrive.sink": "mbarrier.arrive.shared.b64 _, [sm];",
    "mbarrier.arrive.count": "mbarrier.arrive.shared.b64 %rd1, [sm], %r1;",
    "mbarrier.arrive.noComplete": "mbarrier.arrive.noComplete.shared.b64 %rd1, [sm], %r1;",
    "mbarrier.arrive_drop": "mbarrier.arrive_drop.shared.b64 %rd1, [sm];",
    "mbarrier.arrive.release.cta": "mbarrier.arrive.release.cta.shared.b64 %rd1, [sm];",
    "mbarrier.arrive.relaxed.cta": "mbarrier.arrive.relaxed.cta.shared.b64 %rd1, [sm];",
    "mbarrier.arrive.release.cluster": "mbarrier.arrive.release.cluster.shared.b64 %rd1, [sm];",
    "mbarrier.arrive.shared::cluster": "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];",
    "mbarrier.arrive.expect_tx": "mbarrier.arrive.expect_tx.shared.b64 %rd1, [sm], %r1;",
    "mbarrier.expect_tx": "mbarrier.expect_tx.relaxed.cta.shared.b64 [sm], %r1;",
    "mbarrier.complete_tx": "mbarrier.complete_tx.shared.b64 [sm], %r1;",
    "mbarrier.test_wait": "mbarrier.test_wait.shared.b64 %p1, [sm], %rd1;",
    "mbarrier.test_wait.parity": "mbarrier.test_wait.parity.shared.b64 %p1, [sm], %r1;",
    "mbarrier.test_wait.acquire.cta": "mbarrier.test_wait.acquire.cta.shared.b64 %p1, [sm], %rd1;",
    "mbarrier.test_wait.relaxed.cta": "mbarrier.test_wait.relaxed.cta.shared.b64 %p1, [sm], %rd1;",
    "mbarrier.try_wait.relaxed.cta": "mbarrier.try_wait.relaxed.cta.shared.b64 %p1, [sm], %rd1;",
    "fence.proxy.async": "fence.proxy.async.shared::cta;",
    "wgmma.fence": "wgmma.fence.sync.aligned;",
    "wgmma.commit_group": "wgmma.commit_group.sync.aligned;",
    "wgmma.wait_group": "wgmma.wait_group.sync.aligned 0;",
    # special functions
    "tanh.approx.f32": "tanh.approx.f32 %f1, %f2;",
    "tanh.approx.f16": "tanh.approx.f16 %h1, %h2;",
    "tanh.approx.f16x2": "tanh.approx.f16x2 %r1, %r2;",
    "tanh.approx.bf16": "tanh.approx.bf16 %h1, %h2;",
    "ex2.approx.f16": "ex2.approx.f16 %h1, %h2;",
    "ex2.approx.f16x2": "ex2.approx.f16x2 %r1, %r2;",
    "ex2.approx.ftz.bf16": "ex2.approx.ftz.bf16 %h1, %h2;",
    "ex2.approx.f32": "ex2.approx.f32 %f1, %f2;",
    "rcp.approx.ftz.f64": "rcp.approx.ftz.f64 %fd1, %fd2;",
    "sqrt.rn.f32": "sqrt.rn.f32 %f1, %f2;",
    "rsqrt.approx.f64": "rsqrt.approx.f64 %fd1, %fd2;",
    "sin.approx.f32": "sin.approx.f32 %f1, %f2;",
    "lg2.approx.ftz.f32": "lg2.approx.ftz.f32 %f1, %f2;",
    # bf16 and f16 arithmetic
    "fma.rn.bf16": "fma.rn.bf16 %h1, %h2, %h3, %h4;",
    "fma.rn.bf16x2": "fma.rn.bf16x2 %r1, %r2, %r3, %r4;",
    "fma.rn.relu.bf16": "fma.rn.relu.bf16 %h1, %h2, %h3, %h4;",
    "fma.rz.bf16": "fma.rz.bf16 %h1, %h2, %h3, %h4;",
    "add.rn.bf16": "add.rn.bf16 %h1, %h2, %h3;",
    "mul.bf16x2": "mul.bf16x2 %r1, %r2, %r3;",
    "abs.bf16": "abs.bf16 %h1, %h2;",
    "neg.bf16x2": "neg.bf16x2 %r1, %r2;",
    "min.bf16": "min.bf16 %h1, %h2, %h3;",
    "max.NaN.bf16x2": "max.NaN.bf16x2 %r1, %r2, %r3;",
    "min.xorsign.abs.bf16": "min.xorsign.abs.bf16 %h1, %h2, %h3;",
    "setp.lt.bf16": "setp.lt.bf16 %p1, %h1, %h2;",
    "cvt.rn.bf16.f32": "cvt.rn.bf16.f32 %h1, %f1;",
    "cvt.rn.bf16x2.f32": "cvt.rn.bf16x2.f32 %r1, %f1, %f2;",
    "cvt.f32.bf16": "cvt.f32.bf16 %f1, %h1;",
    "cvt.rn.relu.bf16.f32": "cvt.rn.relu.bf16.f32 %h1, %f1;",
    "atom.add.noftz.bf16": "atom.global.add.noftz.bf16 %h1, [%rd1], %h2;",
    "fma.rn.f16": "fma.rn.f16 %h1, %h2, %h3, %h4;",
    "fma.rn.relu.f16": "fma.rn.relu.f16 %h1, %h2, %h3, %h4;",
    "fma.rn.sat.f16x2": "fma.rn.sat.f16x2 %r1, %r2, %r3, %r4;",
    "add.f16": "add.f16 %h1, %h2, %h3;",
    "mul.ftz.f16x2": "mul.ftz.f16x2 %r1, %r2, %r3;",
    "neg.f16": "neg.f16 %h1, %h2;",
    "abs.f16x2": "abs.f16x2 %r1, %r2;",
    "min.f16": "min.f16 %h1, %h2, %h3;",
    "max.NaN.f16x2": "max.NaN.f16x2 %r1, %r2, %r3;",
    "setp.lt.f16": "setp.lt.f16 %p1, %h1, %h2;",
    "setp.lt.f16x2": "setp.lt.f16x2 %p1|%p2, %r1, %r2;",
    "set.lt.u32.f16": "set.lt.u32.f16 %r1, %h1, %h2;",
    "cvt.rn.f16.f32": "cvt.rn.f16.f32 %h1, %f1;",
    "cvt.rn.f16x2.f32": "cvt.rn.f16x2.f32 %r1, %f1, %f2;",
    "cvt.rn.relu.f16x2.f32": "cvt.rn.relu.f16x2.f32 %r1, %f1, %f2;",
    "cvt.f32.f16": "cvt.f32.f16 %f1, %h1;",
    "atom.add.noftz.f16": "atom.global.add.noftz.f16 %h1, [%rd1], %h2;",
    "atom.add.noftz.f16x2": "atom.global.add.noftz.f16x2 %r1, [%rd1], %r2;",
    # f32 / integer forms with gates
    "min.NaN.f32": "min.NaN.f32 %f1, %f2, %f3;",
    "max.ftz.NaN.f32": "max.ftz.NaN.f32 %f1, %f2, %f3;",
    "max.xorsign.abs.f32": "max.xorsign.abs.f32 %f1, %f2, %f3;",
    "min.relu.s32": "min.relu.s32 %r1, %r2, %r3;",
    "max.u16x2": "max.u16x2 %r1, %r2, %r3;",
    "add.s16x2": "add.s16x2 %r1, %r2, %r3;",
    "copysign.f32": "copysign.f32 %f1, %f2, %f3;",
    "fma.rn.f64": "fma.rn.f64 %fd1, %fd2, %fd3, %fd1;",
    "add.rn.f64": "add.rn.f64 %fd1, %fd2, %fd3;",
    "cvta.shared.u64": "cvta.shared.u64 %rd1, %rd2;",
    "cvta.param.u64": "cvta.param.u64 %rd1, %rd2;",
    # memory
    "ld.relaxed.gpu": "ld.relaxed.gpu.global.u32 %r1, [%rd1];",
    "ld.acquire.sys": "ld.acquire.sys.global.u32 %r1, [%rd1];",
    "st.release.cta": "st.release.cta.global.u32 [%rd1], %r1;",
    "ld.volatile": "ld.volatile.global.u32 %r1, [%rd1];",
    "ld.global.nc": "ld.global.nc.u32 %r1, [%rd1];",
    "ld.L2::128B": "ld.global.L2::128B.u32 %r1, [%rd1];",
    "ld.L1::evict_last": "ld.global.L1::evict_last.u32 %r1, [%rd1];",
    "ld.L1::no_allocate": "ld.global.L1::no_allocate.u32 %r1, [%rd1];",
    "ld.shared::cta": "ld.shared::cta.u32 %r1, [%r2];",
    "ld.v4.f32": "ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd1];",
    "ldu.global": "ldu.global.u32 %r1, [%rd1];",
    "st.global.cs": "st.global.cs.u32 [%rd1], %r1;",
    "prefetch.L2": "prefetch.global.L2 [%rd1];",
    "prefetch.L2::evict_last": "prefetch.global.L2::evict_last [%rd1];",
    "atom.add.f32": "atom.global.add.f32 %f1, [%rd1], %f2;",
    "atom.add.f64": "atom.global.add.f64 %fd1, [%rd1], %fd2;",
    "atom.cas.b16": "atom.global.cas.b16 %h1, [%rd1], %h2, %h3;",
    "atom.cas.b32": "atom.global.cas.b32 %r1, [%rd1], %r2, %r3;",
    "atom.acq_rel.gpu": "atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], %r2;",
    "atom.shared.max.s64": "atom.shared.max.s64 %rd1, [%r1], %rd2;",
    "red.add.u64": "red.global.add.u64 [%rd1], %rd2;",
    "red.release.sys": "red.release.sys.global.add.u32 [%rd1], %r2;",
    # synchronisation and warps
    "fence.acq_rel.gpu": "fence.acq_rel.gpu;",
    "fence.sc.sys": "fence.sc.sys;",
    "membar.gl": "membar.gl;",
    "nanosleep": "nanosleep.u32 %r1;",
    "bar.warp.sync": "bar.warp.sync %r1;",
    "barrier.sync.aligned": "barrier.sync.aligned 1, 64;",
    "bar.sync": "bar.sync 0;",
    "activemask": "activemask.b32 %r1;",
    "shfl.sync.bfly": "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, %r3;",
    "vote.sync.ballot": "vote.sync.ballot.b32 %r1, %p1, %r2;",
    "vote.sync.uni": "vote.sync.uni.pred %p1, %p2, %r2;",
    # integer and bit forms
    "lop3.b32": "lop3.b32 %r1, %r2, %r3, %r4, 0x96;",
    "shf.l.wrap": "shf.l.wrap.b32 %r1, %r2, %r3, %r4;",
    "prmt.f4e": "prmt.b32.f4e %r1, %r2, %r3, %r4;",
    "bfe.u32": "bfe.u32 %r1, %r2, 3, 5;",
    "bfi.b64": "bfi.b64 %rd1, %rd2, %rd3, %r1, %r2;",
    "brev.b32": "brev.b32 %r1, %r2;",
    "popc.b64": "popc.b64 %r1, %rd2;",
    "clz.b32": "clz.b32 %r1, %r2;",
    "mad.wide.u32": "mad.wide.u32 %rd1, %r2, %r3, %rd1;",
    "mul.hi.s64": "mul.hi.s64 %rd1, %rd2, %rd3;",
    "add.cc.u32": "add.cc.u32 %r1, %r2, %r3;",
    "addc.u32": "addc.u32 %r1, %r2, %r3;",
    "madc.hi.cc.u32": "madc.hi.cc.u32 %r1, %r2, %r3, %r4;",
    "div.s64": "div.s64 %rd1, %rd2, %rd3;",
    "testp.finite.f32": "testp.finite.f32 %p1, %f1;",
    "selp.b32": "selp.b32 %r1, %r2, %r3, %p1;",
    "slct.f32.s32": "slct.f32.s32 %f1, %f2, %f3, %r1;",
    "mov.u32.tid": "mov.u32 %r1, %tid.x;",
    "mov.u32.lanemask": "mov.u32 %r1, %lanemask_lt;",
    "mov.u64.globaltimer": "mov.u64 %rd1, %globaltimer;",
    "mov.u32.dynamic_smem_size": "mov.u32 %r1, %dynamic_smem_size;",
    "cvt.rni.s32.f32": "cvt.rni.s32.f32 %r1, %f1;",
    "cvt.sat.u8.s32": "cvt.sat.u8.s32 %r1, %r2;",
    "div.full.f32": "div.full.f32 %f1, %f2, %f3;",
    "div.rn.f64": "div.rn.f64 %fd1, %fd2, %fd3;",
    "bra.uni": "bra.uni $L_end;",
    # more rows of the table
    "neg.f16x2": "neg.f16x2 %r1, %r2;",
    "add.f16x2": "add.f16x2 %r1, %r2, %r3;",
    "sub.f16": "sub.f16 %h1, %h2, %h3;",
    "sub.f16x2": "sub.ftz.f16x2 %r1, %r2, %r3;",
    "mul.f16": "mul.rn.f16 %h1, %h2, %h3;",
    "min.u16x2": "min.u16x2 %r1, %r2, %r3;",
    "max.s16x2": "max.s16x2 %r1, %r2, %r3;",
    "abs.f16": "abs.f16 %h1, %h2;",
    "set.lt.f16x2.f16x2": "set.lt.f16x2.f16x2 %r1, %r2, %r3;",
    "min.f16x2": "min.f16x2 %r1, %r2, %r3;",
    "max.f16": "max.f16 %h1, %h2, %h3;",
    "min.s16x2": "min.s16x2 %r1, %r2, %r3;",
    "max.relu.s32": "max.relu.s32 %r1, %r2, %r3;",
    "add.u16x2": "add.u16x2 %r1, %r2, %r3;",
    "red.add.f64": "red.global.add.f64 [%rd1], %fd2;",
    "red.add.noftz.f16": "red.global.add.noftz.f16 [%rd1], %h2;",
    "red.add.noftz.f16x2": "red.global.add.noftz.f16x2 [%rd1], %r2;",
    "ld.L1::evict_normal": "ld.global.L1::evict_normal.u32 %r1, [%rd1];",
    "ld.L1::evict_unchanged": "ld.global.L1::evict_unchanged.u32 %r1, [%rd1];",
    "ld.L1::evict_first": "ld.global.L1::evict_first.u32 %r1, [%rd1];",
    "ld.L2::64B": "ld.global.L2::64B.u32 %r1, [%rd1];",
    "ld.L2::256B": "ld.global.L2::256B.u32 %r1, [%rd1];",
    "prefetch.L2::evict_normal": "prefetch.global.L2::evict_normal [%rd1];",
    "cp.async.bulk.tensor": (
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[sm], [%rd1, {%r1, %r2}], [sm];"
    ),
    "wmma.load.a.unaligned": "wmma.load.a.sync.row.m16n16k16.shared.f16 " + _R8 + ", [sm];",
    "max.xorsign.abs.f16": "max.xorsign.abs.f16 %h1, %h2, %h3;",
    "cvt.rn.relu.f16.f32": "cvt.rn.relu.f16.f32 %h1, %f1;",
}


def module(target: str, version: str, lines: str = "") -> str:
    """A one-kernel module with the probes' register file and `lines` as its body."""
    body = "".join(f"\t{d}\n" for d in REGISTERS)
    return (
        f".version {version}\n.target {target}\n.address_size 64\n\n.visible .entry k()\n{{\n{body}{lines}"
        "$L_end:\n\tret;\n}\n"
    )


HEAD_LINES = 6 + len(REGISTERS)  # the lines before the first probe line


def ptxas_arch(target: str) -> str:
    """The -arch that assembles a module of `target`: the target itself, sm_75 for older ones (ptxas 13 takes
    no -arch below sm_75 but checks an older .target's features against that target)."""
    num = int(re.sub(r"\D", "", target))
    return target if num >= 75 else "sm_75"


def gate_key(target: str, version: str) -> str:
    """The key of a (target, version) pair in the recorded verdicts."""
    return f"{target}@{version}"


def grid(min_target: str | None) -> list[tuple[str, str]]:
    """The (target, version) pairs a probe is tried under: every target at 9.0, and every version that knows
    `min_target` at that target."""
    pairs = [(t, "9.0") for t in TARGETS]
    if min_target:
        first = float(FIRST_VERSION[min_target])
        pairs += [(min_target, v) for v in VERSIONS if float(v) >= first and v != "9.0"]
    return pairs


def _batch(ptxas: str, target: str, version: str, names: list[str]) -> dict[str, str | None]:
    head = module(target, version).split("$L_end:")[0]
    tail = "$L_end:\n\tret;\n}\n"
    got = check_lines(ptxas, head, [PROBES[n] for n in names], tail, ptxas_arch(target))
    return {
        n: None if v is None else re.sub(r"^ptxas \S+, ", "", v)[:160]
        for n, v in zip(names, got, strict=True)
    }


def record(ptxas: str) -> dict:
    """ptxas's verdicts on every probe over its grid."""
    out: dict[str, dict[str, str | None]] = {n: {} for n in PROBES}
    for t in TARGETS:
        for n, v in _batch(ptxas, t, "9.0", list(PROBES)).items():
            out[n][gate_key(t, "9.0")] = v
    lowest: dict[str, str | None] = {}
    for n in PROBES:
        ok = [t for t in TARGETS if out[n][gate_key(t, "9.0")] is None]
        lowest[n] = ok[0] if ok else None
    for t in TARGETS:
        names = [n for n in PROBES if lowest[n] == t]
        for v in VERSIONS:
            if names and v != "9.0" and float(v) >= float(FIRST_VERSION[t]):
                for n, verdict in _batch(ptxas, t, v, names).items():
                    out[n][gate_key(t, v)] = verdict
    return {"probes": PROBES, "verdicts": out}


if __name__ == "__main__":
    exe = find_ptxas()
    if exe is None:
        sys.exit("ptxas not found (set STCSIM_PTXAS)")
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(record(exe), indent=1, sort_keys=True) + "\n")
    print(f"recorded {DATA}")
