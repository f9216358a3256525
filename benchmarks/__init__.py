"""Benchmarks of the stcsim timing model (see benchmarks/micro for the microbenchmarks)."""
