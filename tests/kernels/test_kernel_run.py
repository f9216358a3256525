"""run_gemm and verify_gemm on a numpy stand-in engine that implements the engine API."""

import numpy as np
import pytest

from stcsim.kernels import (
    GEMM_KERNELS,
    KERNELS,
    GemmProblem,
    get_kernel,
    random_operands,
    relative_error,
    run_gemm,
    verify_gemm,
)
from stcsim.kernels.ptx_info import entry_params
from stcsim.sparsity.dense import Dense

IDS = [k.procedural_name for k in GEMM_KERNELS]


class NumpyEngine:
    """Engine API over a dict of buffers; launch() does what the named GEMM kernel computes."""

    def __init__(self, leave_unwritten: bool = False):
        self.buffers: dict[int, bytearray] = {}
        self.entries: set[str] = set()
        self.next_addr = 0x10000
        self.leave_unwritten = leave_unwritten

    def malloc(self, nbytes):
        addr = self.next_addr
        self.buffers[addr] = bytearray(nbytes)
        self.next_addr += -(-nbytes // 256) * 256 + 256
        return addr

    def copy_to(self, addr, array):
        data = np.ascontiguousarray(array).tobytes()
        assert len(data) == len(self.buffers[addr])
        self.buffers[addr][:] = data

    def copy_from(self, addr, shape, dtype):
        return np.frombuffer(bytes(self.buffers[addr]), dtype=dtype).reshape(shape).copy()

    def load_ptx(self, path_or_text):
        with open(path_or_text) as f:
            self.entries |= set(entry_params(f.read()))

    def launch(self, kernel, grid, block, args, shared_bytes=0):
        assert kernel in self.entries
        desc = KERNELS[kernel]
        a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc = args
        lay = desc.layout
        a = np.frombuffer(self.buffers[a_ptr], dtype=lay.a_dtype).reshape(m, lda)[:, :k]
        b = np.frombuffer(self.buffers[b_ptr], dtype=lay.b_dtype).reshape(k, ldb)[:, :n]
        c = np.frombuffer(self.buffers[c_ptr], dtype=lay.c_dtype).reshape(m, ldc)
        c.flags.writeable = True
        rows = m - 1 if self.leave_unwritten else m
        c[:rows, :n] = (a.astype(np.float64) @ b.astype(np.float64))[:rows]
        return {"grid": grid, "block": block, "shared_bytes": shared_bytes}


@pytest.mark.parametrize("kernel", GEMM_KERNELS, ids=IDS)
def test_run_gemm_lays_out_launches_and_reads_back(kernel):
    p = GemmProblem(33, 17, 40)
    a, b = random_operands(p, np.random.default_rng(3))
    c, stats = run_gemm(kernel, NumpyEngine(), a, b)
    assert c.shape == (33, 17) and c.dtype == np.float32
    assert relative_error(c, kernel.reference(kernel.prepare(a, b, Dense()))) < 1e-6
    assert stats == dict(zip(("grid", "block", "shared_bytes"), kernel.launch_geometry(p), strict=True))


def test_unwritten_output_is_caught_by_the_poison():
    check = verify_gemm(get_kernel("gemm_naive_f32_f32_tile16x16x1"), NumpyEngine(leave_unwritten=True),
                        GemmProblem(8, 8, 8))
    assert check.rel_error == float("inf") and not check.ok
    assert "FAILED" in str(check)


def test_verify_gemm_draws_fresh_operands_unless_seeded():
    kernel = get_kernel("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4")
    first = verify_gemm(kernel, NumpyEngine(), GemmProblem(5, 6, 7))
    second = verify_gemm(kernel, NumpyEngine(), GemmProblem(5, 6, 7))
    assert first.ok and second.ok and first.seed != second.seed
    assert verify_gemm(kernel, NumpyEngine(), GemmProblem(5, 6, 7), seed=11).seed == 11


def test_random_operands_are_not_zero():
    a, b = random_operands(GemmProblem(4, 5, 6), np.random.default_rng(0))
    assert a.shape == (4, 6) and b.shape == (6, 5)
    assert np.all(a != 0) and np.all(b != 0)


def test_run_gemm_refuses_mismatched_or_empty_operands():
    kernel = get_kernel("gemm_naive_f32_f32_tile16x16x1")
    with pytest.raises(ValueError, match="need 2-D"):
        run_gemm(kernel, NumpyEngine(), np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="cannot run"):
        run_gemm(kernel, NumpyEngine(), np.ones((0, 4)), np.ones((4, 2)))


def test_relative_error():
    ref = np.array([[1.0, -4.0]])
    assert relative_error(np.array([[1.0, -3.0]]), ref) == pytest.approx(0.25)
    assert relative_error(np.array([[np.nan, -4.0]]), ref) == float("inf")
    assert relative_error(np.array([1.0, -4.0]), ref) == float("inf")
