"""Errors: malformed PTX, bad launches, memory faults and trap, each with the message it must carry
(tests/sim/cuda/faults.cu for the faults)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from simkit import CUDA_DIR, kernels

pytestmark = pytest.mark.sim_only

KERNEL = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<5>;
\tmov.u32 %r1, %tid.x;
\t{body}
\tret;
}}
"""
BODY_LINE = 12


def load_text(body: str) -> None:
    from stcsim.sim import Engine

    Engine().load_ptx(KERNEL.format(body=body))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("add.s32 %r1, %r2 %r3;", "unsupported operand expression '%r2%r3': `add.s32 %r1, %r2 %r3`"),
        ("frobnicate.u32 %r1, %r2;", "unsupported instruction 'frobnicate': `frobnicate.u32 %r1, %r2`"),
        ("add.s32 %r1, %r2, %r99;", "unknown register '%r99': `add.s32 %r1, %r2, %r99`"),
        ("ld.global.u32 %r1, [%rd9+4];", "unknown register or variable in address '[%rd9+4]'"),
        ("@%p7 bra $L_end;", "unknown guard predicate"),
        ("bra $L_nowhere;", "unknown label or symbol '$L_nowhere': `bra $L_nowhere`"),
        ("mov.u32 %r2, %tid.q;", "bad special register component '%tid.q'"),
        ("add.q32 %r1, %r2, %r3;", "unsupported modifier .q32 in 'add.q32'"),
        ("mul.s32 %r1, %r2, %r3;", "'mul.s32' needs one of .lo, .hi, .wide"),
        ("add.s32 %r1, %r2, %r3\n", "missing ';' at the end of the line: `add.s32 %r1, %r2, %r3`"),
        ("add.s32 %r1, %r2, #;", "unexpected character: `#`"),
        (
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, "
            "{%r5, %r6}, {%r1, %r2};",
            "mma .m16n8k16 needs the same .dtype and .ctype (got .f32 and .f16)",
        ),
    ],
    ids=[
        "syntax",
        "unknown-instruction",
        "unknown-register",
        "unknown-address-register",
        "unknown-guard",
        "unknown-label",
        "bad-special-register",
        "bad-modifier",
        "mul-without-mode",
        "missing-semicolon",
        "bad-character",
        "mma-mixed-accumulators",
    ],
)
def test_broken_ptx_names_file_line_and_text(body, message):
    from stcsim.sim import PtxError

    with pytest.raises(PtxError) as err:
        load_text(body)
    assert str(err.value).startswith(f"<ptx text>:{BODY_LINE}: "), str(err.value)
    assert message in str(err.value)


def test_broken_ptx_file_names_its_path(tmp_path):
    from stcsim.sim import Engine, PtxError

    path = tmp_path / "broken.ptx"
    path.write_text(KERNEL.format(body="frobnicate.u32 %r1, %r2;"))
    with pytest.raises(
        PtxError, match=re.escape(f"{path}:{BODY_LINE}: unsupported instruction 'frobnicate'")
    ):
        Engine().load_ptx(path)


@pytest.fixture(scope="module")
def k():
    return kernels("faults")


@pytest.mark.parametrize(
    ("grid", "block", "args", "message"),
    [
        (1, 32, [0, 1], "unknown kernel 'nope'; loaded kernels: misaligned, oob_read, oob_write, shared_oob"),
        (
            1,
            32,
            [0],
            "kernel 'oob_write' takes 2 arguments (.u64 oob_write_param_0, .u32 oob_write_param_1), got 1",
        ),
        (1, 32, [0, 2.5], "argument 1 ('oob_write_param_1', .u32) of kernel 'oob_write' must be an integer"),
        (1, 0, [0, 1], "block dimensions must be positive and below 2^31, got 0"),
        (0, 32, [0, 1], "grid dimensions must be positive and below 2^31, got 0"),
        (1, 2048, [0, 1], "block of 2048 threads exceeds the limit of 1024"),
        (1, (32, 32, 2), [0, 1], "block of 2048 threads exceeds the limit of 1024"),
        (
            1,
            32,
            [0, 1 << 40],
            "argument 1 ('oob_write_param_1', .u32) of kernel 'oob_write': 1099511627776 does not fit .u32",
        ),
    ],
    ids=[
        "unknown-kernel",
        "arg-count",
        "float-for-int",
        "zero-block",
        "zero-grid",
        "big-block",
        "big-3d",
        "range",
    ],
)
def test_bad_launches(k, grid, block, args, message):
    from stcsim.sim import LaunchError

    name = "nope" if "nope" in message else "oob_write"
    with pytest.raises(LaunchError) as err:
        k.engine.launch(name, grid, block, args)
    assert message in str(err.value)


def ptx_line(kernel: str, opcode: str) -> tuple[int, str]:
    """Line number and text (whitespace collapsed, no ';') of the first `opcode` instruction of `kernel`."""
    lines = (CUDA_DIR / "faults.ptx").read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(".visible .entry " + kernel + "("))
    for i in range(start, len(lines)):
        if lines[i].strip().startswith(opcode):
            return i + 1, " ".join(lines[i].strip().rstrip(";").split())
    raise AssertionError(f"{opcode} not in {kernel}")


def fault_message(k, *args) -> str:
    from stcsim.sim import SimFault

    with pytest.raises(SimFault) as err:
        k.launch(*args)
    return str(err.value)


def expect_fault(
    msg: str, kernel: str, what: str, addr: int, thread: tuple, block: tuple, opcode: str
) -> None:
    line, text = ptx_line(kernel, opcode)
    path = Path(CUDA_DIR / "faults.ptx")
    assert msg.startswith(f"memory fault in kernel '{kernel}': {what}"), msg
    assert f"at address 0x{addr:x}" in msg, msg
    assert "by thread ({},{},{}) of block ({},{},{})".format(*thread, *block) in msg, msg
    assert f"instruction {path}:{line} `{text}`" in msg, msg


def test_out_of_bounds_global_read(k):
    a, out = np.ones(64, np.float32), np.zeros(64, np.float32)
    msg = fault_message(k, "oob_read", 2, 32, a, out, np.int32(1000))
    addr = k.last_addresses[0] + 4000  # a[1000]
    expect_fault(msg, "oob_read", "out-of-bounds global read", addr, (5, 0, 0), (1, 0, 0), "ld.global.f32")
    assert "of 4 bytes" in msg and "[warp 0, lane 5]" in msg


def test_out_of_bounds_global_write(k):
    msg = fault_message(k, "oob_write", 1, 32, np.ones(32, np.float32), np.int32(-3))
    addr = k.last_addresses[0] - 12  # a[-3]
    expect_fault(msg, "oob_write", "out-of-bounds global write", addr, (5, 0, 0), (0, 0, 0), "st.global")


def test_misaligned_global_read(k):
    msg = fault_message(k, "misaligned", 1, 32, np.zeros(256, np.int8), np.zeros(32, np.int32), np.int32(1))
    addr = k.last_addresses[0] + 13  # p + 4 * 3 + 1
    expect_fault(msg, "misaligned", "misaligned global read", addr, (3, 0, 0), (0, 0, 0), "ld.global.u32")


def test_out_of_bounds_shared_read(k):
    msg = fault_message(k, "shared_oob", 1, 64, np.zeros(64, np.int32), np.int32(5000))
    expect_fault(msg, "shared_oob", "out-of-bounds shared read", 20000, (9, 0, 0), (0, 0, 0), "ld.shared.u32")


def test_trap_names_kernel_thread_and_line(k):
    from stcsim.sim import SimFault

    line, _ = ptx_line("trap_when", "trap")
    with pytest.raises(SimFault) as err:
        k.launch("trap_when", (1, 2), (48, 2), np.zeros(96, np.int32), np.int32(40))
    where = f"{CUDA_DIR / 'faults.ptx'}:{line}"
    assert (
        str(err.value)
        == f"trap executed in kernel 'trap_when' by thread (40,0,0) of block (0,0,0) at {where}"
    )


def test_a_fault_leaves_the_engine_usable(k):
    a, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    fault_message(k, "oob_read", 2, 32, a, out, np.int32(1 << 20))
    *_, got = k.launch("oob_read", 2, 32, a, out, np.int32(3))
    want = a.copy()
    want[37] = a[3]
    assert np.array_equal(got, want)


def test_launch_errors_with_a_global_libstdcxx_loaded():
    """A process where a library loaded RTLD_GLOBAL brought in the shared libstdc++ (torch does) before the
    engine: formatting and throwing a LaunchError must still work. With a toolchain that links libstdc++
    statically and exports its symbols, the two copies mixed and this crashed (the H100 machine)."""
    code = (
        "import ctypes, ctypes.util, os\n"
        "ctypes.CDLL(ctypes.util.find_library('stdc++') or 'libstdc++.so.6', mode=os.RTLD_GLOBAL)\n"
        "from stcsim.sim import Engine, LaunchError\n"
        "e = Engine()\n"
        f"e.load_ptx({str(CUDA_DIR / 'faults.ptx')!r})\n"
        "try:\n"
        "    e.launch('oob_write', 1, 32, [0])\n"
        "except LaunchError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "kernel 'oob_write' takes 2 arguments" in done.stdout
