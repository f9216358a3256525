"""The `invoke run` path: a kernel of the set, checked against numpy, with timing stats."""

import pytest

from stcsim.harness.run import default_kernel, format_result, main, parse_shape, run_kernel
from stcsim.kernels import NoKernelError


def test_parse_shape_accepts_mxnxk():
    p = parse_shape("200x136x72")
    assert (p.m, p.n, p.k) == (200, 136, 72)


@pytest.mark.parametrize("bad", ["200x136", "0x1x1", "axbxc", ""])
def test_parse_shape_rejects_bad_text(bad):
    with pytest.raises(ValueError, match="MxNxK"):
        parse_shape(bad)


def test_run_kernel_with_timing_checks_and_reports_cycles():
    r = run_kernel("gemm_wmma_f16_f32_tile64x64x32_warp32x32", "72x40x48", "v100", seed=3)
    assert r.check.ok
    assert r.stats["gpu_sim_cycle"] > 0
    assert r.stats["tensor_insts"] > 0
    text = format_result(r)
    assert "gpu_sim_cycle" in text and "ok" in text


def test_run_kernel_functional_only_has_no_cycles():
    r = run_kernel("gemm_naive_f32_f32_tile16x16x1", "33x17x40", None, seed=1)
    assert r.check.ok
    assert "gpu_sim_cycle" not in r.stats


def test_main_exit_code_is_zero_on_success(capsys):
    assert main(["--shape", "32x32x32", "--config", "h100"]) == 0
    assert "gpu_sim_cycle" in capsys.readouterr().out


def test_unknown_kernel_lists_the_known_ones():
    with pytest.raises(KeyError, match="gemm_"):
        run_kernel("no_such_kernel", "16x16x16", None)


def test_default_kernel_per_pattern():
    assert default_kernel("dense") == "gemm_wmma_f16_f32_tile64x64x32_warp32x32"
    with pytest.raises(NoKernelError, match="kernels exist for dense"):
        default_kernel("nm:N=4,M=8")


def test_main_reports_a_pattern_without_kernels(capsys):
    assert main(["--pattern", "nm:N=4,M=8", "--sparsity", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "no kernel implements the sparsity pattern 'nm:N=4,M=8'" in err
    assert "gemm_mma_f16_f32_tile128x128x32_warp64x64_stage3" in err


def test_main_reports_a_kernel_that_cannot_run_the_pattern(capsys):
    args = ["--kernel", "gemm_naive_f32_f32_tile16x16x1", "--pattern", "unstructured", "--sparsity", "0.5"]
    assert main(args) == 2
    assert "implements the dense pattern, not unstructured" in capsys.readouterr().err


def test_run_kernel_records_the_pattern():
    r = run_kernel("gemm_simt_f32_f32_tile64x64x8_warp32x16_thread4x4", "20x30x40", None, pattern="dense")
    assert r.check.ok and r.check.pattern == "dense"
    assert "20x30x40, dense" in format_result(r)
