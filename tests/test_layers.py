"""The packages by role (docs/architecture.md): the library (sim, config, sparsity, kernels, workloads,
harness, gpu) never imports the experiments or the developer tools; experiments never import the tools;
inside `stcsim.kernels` the core never imports a descriptor or a code generator, and the code generators
never import a descriptor. Every import counts, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stcsim"
KERNEL_LAYERS = ("stcsim.kernels.descriptors", "stcsim.kernels.codegen")


def module_name(path: Path) -> str:
    """The dotted name of a source file of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every module `path` imports (absolute names; `from X import Y` gives X and X.Y)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def forbidden(module: str) -> tuple[str, ...]:
    """The packages `module` may not import, by its role."""
    if module.startswith("stcsim.tools"):
        return ()
    if module.startswith("stcsim.experiments"):
        return ("stcsim.tools",)
    rules = ("stcsim.experiments", "stcsim.tools")
    if module.startswith("stcsim.kernels.codegen"):
        return (*rules, "stcsim.kernels.descriptors")
    core = module.startswith("stcsim.kernels.") and module.count(".") == 2
    if core and module != "stcsim.kernels.registry":
        return (*rules, *KERNEL_LAYERS)
    return rules


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_no_import_goes_up_the_layers(path: Path) -> None:
    module = module_name(path)
    wrong = sorted(name for name in imported(path) for up in forbidden(module)
                   if name == up or name.startswith(up + "."))
    assert not wrong, f"{module} imports {wrong}: an arrow up the layers (docs/architecture.md)"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from stcsim.experiments import reproduce\n")
    assert "stcsim.experiments.reproduce" in imported(source)
    assert "stcsim.experiments" in forbidden("stcsim.harness.network_run")
    assert "stcsim.kernels.descriptors" in forbidden("stcsim.kernels.protocol")
    assert "stcsim.kernels.descriptors" not in forbidden("stcsim.kernels.registry")
    assert forbidden("stcsim.tools.sim_speed") == ()
