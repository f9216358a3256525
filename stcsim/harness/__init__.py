"""The harness: one checked kernel, network runs (result CSVs with resume, compare, the papers' figures) and
the engine benchmark. See docs/harness.md."""
