"""Analyses of the papers' own models, used to explain gaps in docs/reproductions.md."""
