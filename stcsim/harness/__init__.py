"""The harness: run kernels on the simulator, benchmark the engine, print results."""
