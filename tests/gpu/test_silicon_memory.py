"""The CPU-side parts of benchmarks/calibration/silicon_memory.py: SASS parsing and the dry compile."""

import shutil
import subprocess

import pytest

from benchmarks.calibration.silicon_memory import KERNELS, arch_of, parse_sass, sass_table

SASS = """
\tcode for sm_90
\t\tFunction : wmma_load_probe
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;           /* 0x0000000402047981 */
        /*0020*/              @!P0 LDG.E R8, desc[UR4][R2.64+0x10] ;          /* 0x0000000402087981 */
        /*0030*/                   HMMA.16816.F32 R12, R4, R8, RZ ;           /* 0x000000080c0c723c */
        /*0040*/                   RED.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;
        /*0050*/                   STG.E desc[UR4][R2.64], R12 ;              /* 0x0000000c02007986 */
        /*0060*/                   NOP;
\t\tFunction : other
        /*0000*/                   LDS R1, [R2] ;
        /*0010*/                   EXIT ;
"""


def test_parse_sass_counts_instructions_per_function():
    df = parse_sass(SASS).set_index("kernel")
    probe = df.loc["wmma_load_probe"]
    assert (probe.sass_insts, probe.ldg, probe.hmma, probe.atomic, probe.stg) == (6, 2, 1, 1, 1)
    assert (df.loc["other"].sass_insts, df.loc["other"].lds) == (2, 1)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_kernel_source_compiles_for_sm90(tmp_path):
    table = sass_table(tmp_path)
    assert {p.stem for p in KERNELS.glob("*.cu")} == {p.stem for p in tmp_path.glob("*.cubin")}
    if shutil.which("cuobjdump"):
        assert "wmma_load_probe" in set(table["kernel"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_committed_ptx_is_what_nvcc_makes_of_the_source(tmp_path):
    for cu in KERNELS.glob("*.cu"):
        out = tmp_path / f"{cu.stem}.ptx"
        subprocess.run(["nvcc", f"-arch={arch_of(cu, 'sm_80')}", "-O3", "-ptx", str(cu), "-o", str(out)],
                       check=True)
        assert out.read_text() == cu.with_suffix(".ptx").read_text(), f"{cu.name}: recompile"
