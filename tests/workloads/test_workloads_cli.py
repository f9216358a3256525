"""Text output for invoke tasks and ``python -m stcsim.workloads``; the docs table is generated output."""

import subprocess
import sys
from pathlib import Path

import pytest

from stcsim.workloads import get_network, list_networks, network_spec
from stcsim.workloads.cli import list_text, main, shapes_markdown, table_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list_networks())
def test_every_network_table_prints(name: str) -> None:
    text = table_text(name, batch=2)
    net = get_network(name, batch=2)
    assert text.startswith(f"{net.spec} (batch=2")
    assert f"params: {net.params:,}" in text and f"MACs: {net.macs:,}" in text
    assert "unique GEMM shapes" in text
    assert all(layer.name in text for layer in net.layers)


def test_table_text_parameters() -> None:
    assert "(batch=1, image_size=112)" in table_text("resnet18", 1, image_size=112)
    assert "(batch=4, seq_len=10, hidden=512)" in table_text("nmt_wmt16", 4, seq_len=10)
    slim = table_text("alexnet:variant=tf-slim", 1)
    assert slim.startswith("alexnet:variant=tf-slim (batch=1, image_size=224)")
    with pytest.raises(ValueError, match="batch for vgg16 must be an integer >= 1"):
        table_text("vgg16", 0)


def test_list_text_names_every_network() -> None:
    text = list_text()
    assert all(name in text for name in list_networks())
    assert "image_size=224 (>= 63)" in text
    blocks = text.split("\n\n")
    assert len(blocks) == len(list_networks()) + 1 and blocks[-1].startswith("papers: 000 = ")
    for name, block in zip(list_networks(), blocks, strict=False):
        spec = network_spec(name)
        assert block.startswith(f"{name}: ") and f"source    {spec.source}" in block
        assert f"model     {spec.reference}" in block and "papers    " in block
    alexnet = blocks[0]
    assert "variant=torchvision (default)" in alexnet and "[image_size >= 195]" in alexnet
    assert "001 AlexNet -> alexnet:variant=tf-slim" in alexnet
    assert "003 Transformer -> transformer_base:seq_len=256 (batch 1)" in text


def test_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0 and "resnet50" in capsys.readouterr().out
    assert main(["resnet50", "--batch", "1"]) == 0 and "unique GEMM shapes: 21" in capsys.readouterr().out
    assert main(["resnet50", "--batch", "0"]) == 2
    assert "error: batch for resnet50 must be an integer >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([])


def test_module_entry_point() -> None:
    run = subprocess.run([sys.executable, "-m", "stcsim.workloads", "alexnet", "--markdown"], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT)})
    assert run.stdout.startswith("| # | M | N | K |")


def test_docs_hold_the_generated_resnet50_shape_table() -> None:
    docs = (ROOT / "docs" / "workloads.md").read_text()
    assert shapes_markdown(get_network("resnet50", batch=1)) in docs
