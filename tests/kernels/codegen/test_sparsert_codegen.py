"""SparseRT's code generator (paper 003): the engine runs the generated PTX against numpy on fresh random
weights, ptxas accepts it, the constant bank holds 64 KiB on both, the PTX is cached by the weights' hash."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from stcsim.kernels import GemmProblem, verify_gemm
from stcsim.kernels.codegen import sparsert_codegen as codegen
from stcsim.kernels.codegen.sparsert_plan import SplitParams, make_plan
from stcsim.kernels.descriptors.spmm_sparsert import SparseRtKernel
from stcsim.sim import Engine, PtxError
from stcsim.sparsity.unstructured import SparseRT

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if Path("/usr/local/bin/ptxas").is_file() else None)
PATTERN = SparseRT()


@pytest.fixture(scope="module")
def engine():
    return Engine("h100")


def random_csr(rng, m, k, sparsity):
    w = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    return PATTERN.encode(w, PATTERN.prune(w, sparsity))


def ptxas(text, tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(text)
    return subprocess.run([PTXAS, "-arch=sm_80", str(path), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("m", "n", "k", "params", "sparsity"),
    [
        (64, 64, 64, SplitParams(8, 64, 2, "imm"), 0.9),
        (33, 17, 40, SplitParams(4, 32, 1, "const"), 0.8),
        (70, 100, 50, SplitParams(16, 32, 4, "auto"), 0.9),
        (1, 1, 1, SplitParams(8, 64, 2, "imm"), 0.0),
        (48, 37, 130, SplitParams(4, 64, 3, "imm"), 0.95),
        (5, 9, 7, SplitParams(32, 32, 4, "const"), 0.5),
    ],
    ids=["64x64x64-imm", "33x17x40-const", "70x100x50-g4", "1x1x1", "48x37x130-g3", "5x9x7-const-g4"],
)
def test_generated_kernel_matches_numpy_on_the_engine(engine, m, n, k, params, sparsity):
    check = verify_gemm(SparseRtKernel(params), engine, GemmProblem(m, n, k), pattern=PATTERN,
                        sparsity=sparsity)
    assert check.ok, str(check)
    assert check.stats["kernel_cycles"] > 0


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("weights", ["imm", "const"])
def test_ptxas_accepts_the_generated_ptx(tmp_path, weights):
    csr = random_csr(np.random.default_rng(), 37, 45, 0.9)
    text = codegen.render(make_plan(csr, SplitParams(4, 32, 2, weights)), 29, weights)
    done = ptxas(text, tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_const_bank_holds_64_kib_like_ptxas(engine, tmp_path):
    """One weight over 16384 in .const: the engine refuses the module as ptxas does."""
    rng = np.random.default_rng()
    csr = random_csr(rng, 129, 128, 0.0)  # 16512 weights
    text = codegen.render(make_plan(csr, SplitParams(32, 32, 1, "const")), 8, "const")
    with pytest.raises(PtxError, match="65536"):
        engine.load_ptx(text)
    if PTXAS is not None:
        done = ptxas(text, tmp_path)
        assert done.returncode != 0 and "too much global constant data" in done.stderr
    assert codegen.weight_mode(SplitParams(weights="auto"), 16384) == "const"
    assert codegen.weight_mode(SplitParams(weights="auto"), 16385) == "imm"


def test_generated_ptx_is_cached_by_the_weights_hash(tmp_path):
    rng = np.random.default_rng()
    csr, params = random_csr(rng, 20, 30, 0.8), SplitParams(4, 32, 2)
    first = codegen.generate_cached(csr, 40, params)
    assert not first.cached and first.path.is_file() and first.seconds > 0
    assert codegen.generate_cached(csr, 40, params) is first
    codegen._MEMORY.clear()
    again = codegen.generate_cached(csr, 40, params)
    assert again.cached and again.text == first.text
    other = random_csr(rng, 20, 30, 0.8)
    assert codegen.generate_cached(other, 40, params).path != first.path
    assert codegen.generate_cached(csr, 41, params).path != first.path
