"""Control flow, barriers, launch shapes and special registers (tests/sim/cuda/control.cu)."""

from __future__ import annotations

import numpy as np
import pytest
from simkit import BACKEND, assert_bits, kernels


@pytest.fixture(scope="module")
def k():
    return kernels("control")


def i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def divergence_ref(x: int) -> tuple[int, int, int | None, bool]:
    """What `divergence` computes for one input: (r, acc, r + acc or None after the early exit, store 3)."""
    store3 = False
    if x & 1:
        if x & 2:
            r = 0
            for j in range(x & 28):
                r = i32(r + (j ^ x))
        else:
            r = i32(x - 7)
    else:
        r = x ^ 0x55
        if (x & 12) == 4:
            store3 = True
            r = i32(r + 100)
    acc = 0
    for j in range((x >> 5) & 15):
        acc = i32(acc + j * x)
        if acc & 1:
            acc ^= 3
        if acc > 5000000:
            break
    sel = (x >> 9) & 7
    if sel == 0:
        r = i32(r + 1)
    elif sel == 1:
        r = i32(r * 2)
    elif sel == 3:
        r = i32(r - 5)
    elif sel == 4:
        r = i32((r ^ 0xFF) + 3)
    elif sel == 5:
        r = i32(r + 3)
    else:
        r = i32(r + 1000)
    last = None if (x & 0x7000) == 0x3000 else i32(r + acc)
    return r, acc, last, store3


def test_divergent_branches_loops_switch_and_early_return(k, rng):
    n = 300
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    a[: n // 2] = rng.integers(0, 1 << 16, size=n // 2)  # more variety in the low bits that steer the paths
    out = np.full((n, 4), -7, np.int32)
    *_, got = k.launch("divergence", 5, 64, a, out, np.int32(n))
    want = np.full((n, 4), -7, np.int64)
    for i, x in enumerate(a.tolist()):
        r, acc, last, store3 = divergence_ref(x)
        want[i, :2] = r, acc
        if last is not None:
            want[i, 2] = last
        if store3:
            want[i, 3] = 11
    assert_bits(got, want.astype(np.int32), "divergence")
    assert ((a & 0x7000) == 0x3000).any() and ((a & 0x7000) != 0x3000).any()


def test_dense_switch_and_data_dependent_while(k, rng):
    n = 256
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    out = np.zeros((n, 2), np.int32)
    *_, got = k.launch("switch_loop", 4, 64, a, out, np.int32(n))
    want = np.zeros((n, 2), np.int64)
    for i, x in enumerate(a.tolist()):
        r = [
            x * 3,
            x + 11,
            x - 13,
            x ^ 0x1234,
            x << 2,
            x >> 1,
            ~x,
            x * x,
        ][x & 7]
        v, steps = x & 0xFFF, 0
        while v not in (0, 1) and steps < 200:
            v = 3 * v + 1 if v & 1 else v >> 1
            steps += 1
        want[i] = i32(r), steps
    assert_bits(got, want.astype(np.int32), "switch_loop")


@pytest.mark.parametrize("mode", [2, 5])
def test_uniform_loop_and_branch(k, rng, mode):
    n = 200
    a = rng.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    out = np.zeros(n, np.int32)
    *_, got = k.launch("uniform", 4, 64, a, out, np.int32(n), np.int32(7), np.int32(mode))
    want = []
    for x in a.tolist():
        for _ in range(7):
            x = i32(x * 1664525 + 1013904223)
        want.append(x ^ 0x5A5A if mode == 2 else i32(x + mode))
    assert_bits(got, np.array(want, np.int32), "uniform")


@pytest.mark.parametrize(("block", "live"), [(48, 48), (100, 100), (100, 70), (64, 33)])
def test_syncthreads_in_blocks_of_any_size(k, rng, block, live):
    grid = 3
    a = rng.integers(-1000, 1000, size=grid * block).astype(np.int32)
    out = np.full(grid * block, 12345, np.int32)
    *_, got = k.launch("block_sync", grid, block, a, out, np.int32(live))
    want = np.full((grid, block), 12345, np.int64)
    for b in range(grid):
        s = a[b * block : b * block + live].astype(np.int64)
        v = np.roll(s, -1) + 2 * np.roll(s, 1)
        want[b, :live] = np.cumsum(v[::-1])[::-1]  # suffix sums
    assert_bits(got, want.reshape(-1).astype(np.int32), f"block_sync block={block} live={live}")


@pytest.mark.parametrize(
    ("grid", "block"), [((2, 3, 2), (5, 4, 3)), ((3, 1, 2), (7, 9, 1)), ((1, 2, 1), (33, 1, 2))]
)
def test_special_registers_in_3d_launches(k, grid, block):
    nthreads = int(np.prod(grid) * np.prod(block))
    out = np.zeros((nthreads, 20), np.uint32)
    *_, got = k.launch("special_regs", grid, block, out)
    gx, gy, gz = grid
    bx, by, bz = block
    per_block = bx * by * bz
    want = np.zeros_like(out, dtype=np.int64)
    for bz_i in range(gz):
        for by_i in range(gy):
            for bx_i in range(gx):
                bl = bx_i + gx * (by_i + gy * bz_i)
                for tz in range(bz):
                    for ty in range(by):
                        for tx in range(bx):
                            tl = tx + bx * (ty + by * tz)
                            g = bl * per_block + tl
                            lane, warp = tl % 32, tl // 32
                            want[g, :14] = [tx, ty, tz, bx, by, bz, bx_i, by_i, bz_i, gx, gy, gz, lane, warp]
                            want[g, 14:] = [
                                1 << lane,
                                (1 << lane) - 1,
                                (2 << lane) - 1,
                                0xFFFFFFFF & ~((2 << lane) - 1),
                                0xFFFFFFFF & ~((1 << lane) - 1),
                                g,
                            ]
    if BACKEND == "gpu":  # %warpid is the hardware warp slot on a GPU, not tid / 32
        got[:, 13] = want[:, 13]
    assert_bits(got, want.astype(np.uint32), f"special registers grid={grid} block={block}")
