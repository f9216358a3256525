"""The generated wmma.smma.L header: every (L, W) spelling, committed up to date with its template."""

from stcsim.kernels.codegen import smma_l_codegen


def test_every_chunk_width_and_row_length_has_a_specialisation():
    shapes = smma_l_codegen.shapes()
    assert len(shapes) == 4 + 8 + 12 + 16
    assert (16, 4) in shapes and (64, 64) in shapes and (16, 20) not in shapes and (32, 6) not in shapes
    text = smma_l_codegen.render()
    for l_, w in shapes:
        assert f"struct SmmaL<{l_}, {w}>" in text and f"X({l_}, {w})" in text
        assert f"wmma.smma.mma.sync.aligned.m16n16.l{l_}.w{w}.row.row.f32.f32" in text


def test_operand_counts_follow_the_isa():
    text = smma_l_codegen.render()
    block = text[text.index("struct SmmaL<48, 20>") :].split("\n};")[0]
    # 5 value registers, 3 coordinate registers, 24 B registers, 8 D/C registers: %0..%39 used
    assert "{%8, %9, %10, %11, %12}" in block and "{%13, %14, %15}" in block and "%39}" in block
    assert '"r"(b[2][7])' in block and "%40" not in block


def test_the_committed_header_is_current(capsys):
    assert smma_l_codegen.HEADER_PATH.read_text() == smma_l_codegen.render()
    assert smma_l_codegen.main(["--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_check_reports_a_stale_header(tmp_path, capsys):
    stale = tmp_path / "smma_l_shapes.cuh"
    stale.write_text("// old\n")
    assert smma_l_codegen.main(["--check", "--out", str(stale)]) == 1
    assert "stale" in capsys.readouterr().out
    assert smma_l_codegen.main(["--out", str(stale)]) == 0
    assert stale.read_text() == smma_l_codegen.render()
