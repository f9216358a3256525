"""The sampling-error benchmark: rows of sampled vs full cycles, network totals, the markdown table."""

import pytest

from stcsim.harness.jobs import Variant, plan_network
from stcsim.kernels import get_kernel
from stcsim.sparsity import get
from stcsim.tools.sampling_bench import (
    SPARSE_KERNELS,
    SamplingRow,
    format_markdown,
    measure_network,
    network_error,
)
from stcsim.tools.sim_speed import CASE_SPARSITY, case_pattern, parse_case
from stcsim.tools.sim_speed import main as sim_speed_main


def _row(layer: str, full: int, sampled: int, repeat: int) -> SamplingRow:
    return SamplingRow("k", "v100", layer, "1x1x1", repeat, 10, 5, "sampled", full, sampled, 0.01, 2.0, 1.0)


def test_network_error_weights_each_shape_by_its_repeat_count():
    rows = [_row("a", 1000, 1010, 3), _row("b", 2000, 1990, 1)]
    assert network_error(rows) == pytest.approx((3030 + 1990 - 5000) / 5000)
    assert rows[0].error == pytest.approx(0.01)
    table = format_markdown(rows)
    assert "**network total**" in table and "+0.40%" in table


def test_a_single_wave_layer_of_two_iterations_runs_in_full_detail_with_zero_error():
    (row,) = measure_network("gemm_wmma_f16_f32_tile64x64x32_warp32x32", "v100", layers=1)
    assert row.shape == "64x3136x64" and row.grid_ctas < row.wave_ctas  # two k-tiles: no steady loop
    assert row.mode == "full: no steady loop"
    assert row.sampled_cycles == row.full_cycles > 0 and row.error == 0


def test_parse_case_reads_kernel_shape_and_config():
    assert parse_case("gemm_x:64x32x16:none") == ("gemm_x", (64, 32, 16), None)
    with pytest.raises(ValueError, match="KERNEL:MxNxK:CONFIG"):
        parse_case("gemm_x:64x32")


def test_bench_case_runs_a_sparse_kernel_on_its_own_pattern():
    pattern, sparsity = case_pattern(get_kernel("gemm_wgmma_sp_f16_f32_tile128x128x64_stage5"))
    assert pattern.spec() == "nm:N=2,M=4" and sparsity == 0.5
    pattern, sparsity = case_pattern(get_kernel("spmm_csr_f32_f32_tile4x64_warp1x64"))
    assert sparsity == CASE_SPARSITY
    assert case_pattern(get_kernel("gemm_mma_f16_f32_tile64x64x32_warp32x32_stage2")) == (get("dense"), 0.0)


@pytest.mark.parametrize("argv, message", [
    (["--case", "gemm_nope:64x64x64:h100"], "unknown kernel 'gemm_nope'"),
    (["--case", "gemm_x:64x32"], "KERNEL:MxNxK:CONFIG"),
])
def test_bench_case_errors_are_one_line_with_exit_code_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        sim_speed_main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in err and len(err) < 200


@pytest.mark.parametrize("kernel, config, pattern, sparsity", SPARSE_KERNELS,
                         ids=[k[0].split("_f")[0] for k in SPARSE_KERNELS])
def test_each_sparse_kernel_of_the_benchmark_runs_itself_not_a_fallback(kernel, config, pattern, sparsity):
    # (its config has the instructions it needs: a dense fallback would measure another kernel's sampling)
    (job,) = plan_network("resnet50", [Variant.make(pattern, sparsity, config, kernel)], 1, max_layers=1,
                          sample=0.02)
    assert (job.choice.kernel, job.choice.fallback) == (kernel, "")
