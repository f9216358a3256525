"""One job of a network run: pruned weights, the chosen kernel or the dense fallback, the numpy check."""

import numpy as np

from stcsim.harness import layer_run
from stcsim.harness.jobs import Variant, WeightSource, plan_network
from stcsim.harness.layer_run import layer_weights, run_job
from stcsim.sim.engine import stat_info
from stcsim.workloads.pruning import NO_WEIGHTS

MOBILENET = "mobilenet_v1:image_size=32"


def _jobs(pattern, sparsity, seed, network=MOBILENET, layers=2, **kwargs):
    variant = Variant.make(pattern, sparsity, "v100", kwargs.pop("kernel", "auto"))
    return plan_network(network, [variant], weights=WeightSource(seed), max_layers=layers, **kwargs)


def test_dense_layer_row_has_every_launch_stat_and_a_passing_check(seed):
    job = _jobs("dense", 0, seed, layers=1)[0]
    row = run_job(job)
    assert row["check"] == "full" and row["check_ok"] and 0 < row["rel_error"] < 1e-2
    assert row["density"] == 1.0 and not row["fallback"] and row["gpu_sim_cycle"] > 0
    assert {s.name for s in stat_info() if s.group in ("launch", "functional", "timing")} <= set(row)
    assert row["key"] == job.key() and row["host_seconds"] >= row["launch_seconds"] > 0


def test_weights_are_the_layer_s_own_and_never_zero(seed):
    job = _jobs("dense", 0, seed, layers=1)[0]
    w = layer_weights(job)
    assert w.shape == (job.layer.m, job.layer.k) and np.count_nonzero(w) == w.size
    assert np.array_equal(w, layer_weights(job))


def test_fallback_runs_the_pruned_weights_densely(dense_only, seed):
    job = _jobs("unstructured", 0.8, seed, layers=1)[0]
    row = run_job(job)
    assert row["fallback"] and row["run_pattern"] == "dense" and row["check_ok"]
    assert abs(row["density"] - 0.2) < 0.01


def test_large_layers_are_checked_on_sampled_columns(seed):
    """A sampled check's layer is timed cycles only; a Tensor Core kernel's sampled columns then run apart
    (the WMMA GEMM on the v100), a CUDA-core kernel's (nothing to skip) come from the timed launch itself."""
    for kernel, apart in (("tensor-core", True), ("cuda-core", False)):
        jobs = _jobs("dense", 0, seed, layers=3, check_limit=1, kernel=kernel)
        job = next(j for j in jobs if j.layer.n > 128)
        row = run_job(job)
        expect = f"sampled: 128 of {job.layer.n} columns" + (", run apart" if apart else "")
        assert row["check"] == expect and row["check_ok"] and row["mma_values_skipped"] == float(apart)
    off = run_job(_jobs("dense", 0, seed, layers=1, check=False)[0])
    assert off["check"] == "off" and np.isnan(off["rel_error"]) and off["mma_values_skipped"] == 1.0
    full = run_job(_jobs("dense", 0, seed, layers=1)[0])
    assert full["check"] == "full" and "mma_values_skipped" not in full  # checked whole: computed


def test_a_sampled_check_run_apart_compares_real_values(seed, monkeypatch):
    """The columns run apart are the kernel's output: a corrupted one fails the check."""
    real = layer_run.launch

    def corrupt(kernel, engine, operands, *args, **kwargs):
        result, stats = real(kernel, engine, operands, *args, **kwargs)
        return (result + 1.0 if kwargs.get("timing") is False else result), stats

    monkeypatch.setattr(layer_run, "launch", corrupt)
    job = next(j for j in _jobs("dense", 0, seed, layers=3, check_limit=1) if j.layer.n > 128)
    row = run_job(job)
    assert row["check"].endswith("run apart") and not row["check_ok"]


def test_a_sampled_check_reuses_the_prepared_weights(seed, monkeypatch):
    """A kernel that ReusesWeights (the wgmma GEMMs) checks its sampled columns with the weights it
    prepared for the timed launch: prepared once per job, the check still passing."""
    from stcsim.kernels.descriptors.gemm_wgmma import WgmmaGemmKernel

    variant = Variant.make("nm:N=2,M=4", 0.5, "h100")
    jobs = plan_network(MOBILENET, [variant], weights=WeightSource(seed), max_layers=3, check_limit=1)
    job = next(j for j in jobs if j.layer.n > 128 and j.choice.kernel.startswith("gemm_wgmma_sp"))
    calls, real = [], WgmmaGemmKernel.prepare

    def counted(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(WgmmaGemmKernel, "prepare", counted)
    row = run_job(job)
    assert row["check"].endswith("run apart") and row["check_ok"] and len(calls) == 1


def test_a_registered_sparse_kernel_runs_the_pruned_layer(csr_kernel, seed):
    job = _jobs("unstructured", 0.9, seed, layers=1)[0]
    assert job.choice.kernel == csr_kernel
    row = run_job(job)
    assert row["kernel"] == csr_kernel and not row["fallback"] and row["check_ok"]
    assert row["rel_error"] < 1e-5 and abs(row["density"] - 0.1) < 0.01


def test_attention_scores_multiply_two_activations_densely(seed):
    jobs = plan_network("transformer_base:seq_len=8", [Variant.make("unstructured", 0.9, "v100")],
                        weights=WeightSource(seed))
    (score,) = [j for j in jobs if j.layer.kind.value == "attn_score"]
    assert score.fallback == NO_WEIGHTS
    row = run_job(score)
    assert row["check_ok"] and row["density"] == 1.0 and row["run_pattern"] == "dense"


def test_weights_from_a_file_are_the_layer_s_tensors(tmp_path, seed):
    from stcsim.workloads import get_network, make_weights

    net = get_network(MOBILENET)
    tensors = {f"{name}.weight": w for name, w in make_weights(net, seed + 1).items()}
    path = tmp_path / "weights.npz"
    np.savez(path, **tensors)
    source = WeightSource.from_file(str(path))
    (job,) = plan_network(MOBILENET, [Variant.make("dense", 0, "v100")], weights=source, max_layers=1)
    assert np.array_equal(layer_weights(job), tensors[f"{job.layer.name}.weight"].reshape(job.layer.m, -1))
    row = run_job(job)
    assert row["weights"].startswith("weights.npz sha256:") and row["check_ok"]


def test_the_row_has_the_launch_in_physical_units(seed):
    from stcsim.harness.units import clock_mhz, peak_tflops

    job = _jobs("dense", 0, seed, layers=1)[0]
    row = run_job(job)
    cycles, macs = row["gpu_sim_cycle"], job.layer.m * job.layer.n * job.layer.k
    assert row["time_us"] == cycles / clock_mhz("v100") == cycles / 1530.0
    assert np.isclose(row["tflops"], 2 * macs / (row["time_us"] * 1e-6) / 1e12)
    assert row["math_units"] == "tensor-core" and row["peak_tflops"] == peak_tflops("v100", "tensor-core")
    assert np.isclose(row["pct_peak"], 100 * row["tflops"] / row["peak_tflops"])
