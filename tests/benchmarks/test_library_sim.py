"""benchmarks/gpu/library_sim.py: the library table's kernels simulated on a config."""

from benchmarks.gpu.library_sim import cases, simulate_case


def test_cases_cover_our_kernels_at_the_asked_batch():
    listed = cases("h100", frozenset({"ours_simt_sgemm"}), frozenset({1}))
    assert listed and all(c[6] == "ours_simt_sgemm" and c[2] == 1 and c[7] == "h100" for c in listed)
    assert not cases("h100", frozenset({"ours_simt_sgemm"}), frozenset({7}))


def test_simulate_case_returns_cycles(tmp_path, monkeypatch):
    monkeypatch.setenv("STCSIM_CACHE", str(tmp_path))
    row = simulate_case(("net", "l", 1, 64, 64, 64, "ours_simt_sgemm", "h100"))
    assert row[:8] == ("net", "l", 1, 64, 64, 64, "ours_simt_sgemm", "h100")
    assert row[8] > 1000 and row[9] >= 0
