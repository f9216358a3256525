"""The ExTensor chunk SpMM (paper 004): the five schemes' plans, the record stream, and the kernel on the
engine against numpy through the extensor pattern's decode, on fresh random pruned weights."""

from __future__ import annotations

import numpy as np
import pytest

from stcsim.kernels import (
    CannotImplement,
    GemmProblem,
    get_kernel,
    kernels_for,
    random_operands,
    relative_error,
    run_gemm,
    verify_gemm,
)
from stcsim.kernels.descriptors.extensor_plans import SCHEMES, STATIC_WIDTHS, fixed_blocks, scheme_plans
from stcsim.kernels.descriptors.extensor_records import (
    GROUPS,
    PAD,
    PANEL,
    RecordStream,
    balanced_split,
    pack_records,
    unpack_records,
)
from stcsim.kernels.descriptors.extensor_spmm import EXTENSOR_KERNELS, ExtensorSpmmKernel
from stcsim.kernels.run import launch
from stcsim.sparsity import get
from stcsim.sparsity.extensor import ExTensor, encode_chunks
from stcsim.sparsity.extensor_latency import chunk_latencies
from stcsim.sparsity.extensor_planner import latency_table, plan_cost

try:
    from stcsim.sim import Engine, LaunchError
except ImportError as err:
    pytest.skip(f"stcsim.sim.Engine is not available: {err}", allow_module_level=True)

IDS = [k.scheme for k in EXTENSOR_KERNELS]
SHAPES = [GemmProblem(64, 64, 64), GemmProblem(200, 136, 72), GemmProblem(33, 17, 40), GemmProblem(1, 1, 1)]
PATTERN = ExTensor()


@pytest.fixture
def rng() -> np.random.Generator:
    seed = int(np.random.SeedSequence().generate_state(1)[0])
    print(f"operand seed {seed}")
    return np.random.default_rng(seed)


def test_one_descriptor_per_scheme_found_by_the_pattern():
    assert [k.scheme for k in EXTENSOR_KERNELS] == list(SCHEMES)
    assert kernels_for("extensor") == EXTENSOR_KERNELS
    for kernel in EXTENSOR_KERNELS:
        assert get_kernel(kernel.procedural_name) is kernel
        assert kernel.procedural_name == f"spmm_extensor_{kernel.scheme}_f16_f32_tile32x32_warp16x16"
        assert f".entry {kernel.entry}(" in kernel.ptx_path.read_text()
    with pytest.raises(ValueError, match="unknown ExTensor scheme 'l8'"):
        ExtensorSpmmKernel("l8")


def test_supports_needs_chunks_as_wide_as_the_scheme():
    l64 = get_kernel("spmm_extensor_l64_f16_f32_tile32x32_warp16x16")
    ok, reason = l64.supports(get("extensor:maxL=32"))
    assert not ok and "needs extensor maxL >= 64" in reason
    assert kernels_for("extensor:maxL=32") == tuple(k for k in EXTENSOR_KERNELS if k.scheme != "l64")
    ok, reason = l64.supports(get("unstructured"))
    assert not ok and "implements the extensor pattern, not unstructured" in reason


def test_can_implement_ragged_shapes_and_refuses_with_a_reason():
    kernel = EXTENSOR_KERNELS[-1]
    for p in SHAPES:
        assert kernel.can_implement(p, PATTERN) == (True, "")
    ok, reason = kernel.can_implement(GemmProblem(16, 0, 16), PATTERN)
    assert not ok and "M, N, K" in reason
    ok, reason = kernel.can_implement(GemmProblem(32 * 65536, 16, 16), PATTERN)
    assert not ok and "grid" in reason
    ok, reason = kernel.can_implement(GemmProblem(16, 40000, 60000), PATTERN)
    assert not ok and "32-bit" in reason


def test_fixed_schemes_cover_each_slice_with_l_wide_chunks_then_the_remainder(rng):
    assert fixed_blocks(5, 4) == [4, 1] and fixed_blocks(6, 2) == [2, 2, 2] and fixed_blocks(3, 4) == [3]
    mask = rng.random((40, 80)) < 0.2
    for scheme, widths in (("l16", (16,) * 5), ("l32", (32, 32, 16)), ("l64", (64, 16))):
        plans = scheme_plans(mask, scheme, PATTERN)
        assert len(plans) == 3 and all(p.widths == widths for p in plans)
    with pytest.raises(ValueError, match="needs chunks of 64, above maxL=32"):
        scheme_plans(mask, "l64", get("extensor:maxL=32"))
    with pytest.raises(ValueError, match="unknown ExTensor scheme"):
        scheme_plans(mask, "best", PATTERN)


def test_static_takes_the_best_single_width_per_slice_and_dynamic_the_patterns_plan(rng):
    mask = rng.random((48, 256)) < rng.uniform(0.02, 0.3, (48, 1))  # slices of different densities
    static = scheme_plans(mask, "static", PATTERN)
    for s, plan in enumerate(static):
        table = latency_table(mask[16 * s : 16 * (s + 1)], 4, PATTERN.reading)
        costs = [plan_cost(table, fixed_blocks(16, w // 16)) for w in STATIC_WIDTHS]
        assert plan.latency == min(costs) and len(set(plan.widths[:-1])) <= 1
    assert scheme_plans(mask, "dynamic", PATTERN) == PATTERN.plan(mask)
    dynamic = sum(p.latency for p in scheme_plans(mask, "dynamic", PATTERN))
    assert dynamic <= sum(p.latency for p in scheme_plans(mask, "l16", PATTERN))


def test_balanced_split_cuts_contiguous_ranges_of_even_cost():
    np.testing.assert_array_equal(balanced_split(np.array([1, 1, 1, 1, 1, 1, 1, 1]), 4), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(balanced_split(np.array([9, 0, 0, 1]), 2), [0, 1, 4])
    np.testing.assert_array_equal(balanced_split(np.array([5]), 4), [0, 0, 0, 1, 1])  # ties: the earlier
    np.testing.assert_array_equal(balanced_split(np.zeros(3, dtype=int), 4), [0, 0, 0, 0, 3])


@pytest.mark.parametrize("scheme", ["l16", "l64", "dynamic"])
def test_records_round_trip_through_the_format_with_engine_padding(rng, scheme):
    w = rng.uniform(-1, 1, (37, 150)).astype(np.float32)
    mask = PATTERN.prune(w, 0.7)
    fmt = encode_chunks(w, mask, scheme_plans(mask, scheme, PATTERN))
    stream = pack_records(fmt, mask, PATTERN.reading)
    panels = -(-150 // PANEL)
    assert stream.offsets.shape == (2, 2 * panels + 1) and np.all(np.diff(stream.offsets, axis=1) >= 0)
    assert stream.split.shape == (2, GROUPS + 1) and np.all(stream.split[:, -1] == panels)
    assert np.all(np.diff(stream.split, axis=1) >= 0)
    decoded = PATTERN.decode(unpack_records(stream, (37, 150)))
    np.testing.assert_array_equal(decoded, np.where(mask, w, 0).astype(np.float16))
    header = np.frombuffer(stream.records[:16].tobytes(), np.int32)
    w_first = 4 * (int(header[1]) % 16 + 1)
    coords = stream.records[16 + 32 * w_first : int(header[2])].reshape(16, w_first)
    real = coords != PAD
    assert np.all(real[:, :-1] >= real[:, 1:])  # each row: real entries, then padding
    assert real.any(axis=0)[0]


def test_a_matrix_without_non_zeros_has_no_records():
    w = np.zeros((20, 40), np.float32)
    mask = np.zeros(w.shape, bool)
    stream = pack_records(encode_chunks(w, mask, scheme_plans(mask, "l16", PATTERN)), mask, PATTERN.reading)
    assert not stream.offsets.any() and unpack_records(stream, w.shape) is None


@pytest.mark.parametrize("kernel", EXTENSOR_KERNELS, ids=IDS)
@pytest.mark.parametrize("p", SHAPES, ids=str)
def test_matches_numpy_on_the_engine(kernel, p):
    check = verify_gemm(kernel, Engine(), p, pattern=PATTERN, sparsity=0.9)
    assert check.ok, str(check)


@pytest.mark.parametrize("kernel", [EXTENSOR_KERNELS[0], EXTENSOR_KERNELS[2]], ids=["l16", "l64"])
@pytest.mark.parametrize("sparsity", [0.0, 0.5])
def test_dense_weights_overflow_the_prefetched_records_and_still_match(kernel, sparsity):
    check = verify_gemm(kernel, Engine(), GemmProblem(40, 50, 300), pattern=PATTERN, sparsity=sparsity)
    assert check.ok, str(check)


def test_matches_numpy_on_the_resnet50_layer():
    kernel = get_kernel("spmm_extensor_dynamic_f16_f32_tile32x32_warp16x16")
    check = verify_gemm(kernel, Engine(), GemmProblem(256, 196, 2304), pattern=PATTERN, sparsity=0.96)
    assert check.ok, str(check)


def _chunk_latency_sum(operands) -> int:
    """PhaseLat summed over the records' chunks (the model the engine's timing implements)."""
    fmt = unpack_records(RecordStream(operands["records"], operands["offsets"], operands["split"]),
                         (operands.problem.m, operands.problem.k))
    masks = [np.zeros((16, c.width), bool) for c in fmt.chunks]
    for m, c in zip(masks, fmt.chunks, strict=True):
        rows = np.repeat(np.arange(16), c.coords.shape[1]).reshape(c.coords.shape)
        m[rows[c.values != 0], c.coords[c.values != 0]] = True
    return sum(int(chunk_latencies(m[None], PATTERN.reading)[0]) for m in masks)


@pytest.mark.parametrize("scheme", ["l32", "dynamic"])
def test_timed_on_titanv_extensor_with_the_plans_phaselat(rng, scheme):
    kernel = get_kernel(f"spmm_extensor_{scheme}_f16_f32_tile32x32_warp16x16")
    p = GemmProblem(40, 36, 200)
    w, x = random_operands(p, rng)
    operands = kernel.prepare(w, x, PATTERN, 0.8)
    d, stats = launch(kernel, Engine("titanv+extensor"), operands)
    assert relative_error(d, kernel.reference(operands)) < kernel.tolerance
    tiles = -(-p.n // 16)  # every chunk runs once per 16 columns of D
    records = stats["extensor_smma_insts"] / tiles
    assert records == int(records) and stats["warp_insts_TENSOR"] == stats["extensor_smma_insts"]
    assert stats["extensor_smma_latency_cycles"] == tiles * _chunk_latency_sum(operands)


def test_refused_on_a_config_without_the_extension(rng):
    kernel = EXTENSOR_KERNELS[0]
    with pytest.raises(LaunchError, match="extensor.enabled"):
        verify_gemm(kernel, Engine("titanv"), GemmProblem(16, 16, 16), pattern=PATTERN, sparsity=0.5)
    w, x = random_operands(GemmProblem(16, 16, 16), rng)
    with pytest.raises(CannotImplement, match="implements the extensor pattern, not dense"):
        kernel.prepare(w, x, get("dense"))


def test_chunks_the_pruning_emptied_issue_no_instruction(rng):
    """Weights whose odd 16x16 blocks are 1000x smaller lose exactly those blocks at 50 % sparsity: the
    16-only plan then has half as many non-empty chunks, and half as many wmma.smma run."""
    p = GemmProblem(32, 32, 128)
    _, x = random_operands(p, rng)
    w = (rng.uniform(0.5, 1.0, (32, 128)) * rng.choice([-1.0, 1.0], (32, 128))).astype(np.float32)
    small = (np.arange(8)[None, :] + np.arange(2)[:, None]) % 2 == 1  # checkerboard of 16x16 blocks
    w = w * np.where(np.kron(small, np.ones((16, 16))), 1e-3, 1.0).astype(np.float32)
    kernel = get_kernel("spmm_extensor_l16_f16_f32_tile32x32_warp16x16")
    dense_run = run_gemm(kernel, Engine(), w, x, pattern=PATTERN, sparsity=0.0)[1]
    half_run = run_gemm(kernel, Engine(), w, x, pattern=PATTERN, sparsity=0.5)[1]
    assert dense_run["warp_insts_TENSOR"] == 2 * 8 * 2  # 2 slices x 8 chunks x 2 column tiles
    assert half_run["warp_insts_TENSOR"] == dense_run["warp_insts_TENSOR"] / 2


def test_instruction_count_falls_with_density():
    """Sparser weights: fewer, wider chunks under the greedy merge, fewer instructions, less Tensor Core
    time (fixed-width schemes keep their chunk count until chunks empty out, but their phases shrink)."""
    p = GemmProblem(64, 32, 1024)
    dynamic = get_kernel("spmm_extensor_dynamic_f16_f32_tile32x32_warp16x16")
    l16 = get_kernel("spmm_extensor_l16_f16_f32_tile32x32_warp16x16")
    insts, tensor, busy = [], [], []
    for sparsity in (0.5, 0.9, 0.99):
        check = verify_gemm(dynamic, Engine(), p, pattern=PATTERN, sparsity=sparsity)
        assert check.ok, str(check)
        insts.append(check.stats["warp_insts"])
        tensor.append(check.stats["warp_insts_TENSOR"])
        timed = verify_gemm(l16, Engine("titanv+extensor"), GemmProblem(32, 16, 256), pattern=PATTERN,
                            sparsity=sparsity)
        busy.append(timed.stats["extensor_smma_latency_cycles"])
    assert insts[0] > insts[1] > insts[2] and tensor[0] > tensor[1] > tensor[2]
    assert busy[0] > busy[1] > busy[2]
