"""Tests of stcsim.sparsity (one module per pattern module)."""
