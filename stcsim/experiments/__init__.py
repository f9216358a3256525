"""Experiments: the papers' figures and numbers (`reproduce`), the silicon tables and the calibration
suites; they use the library (sim, config, sparsity, kernels, workloads, harness, gpu), never the reverse."""
