"""Text views of the workloads for invoke tasks and ``python -m stcsim.workloads``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stcsim.workloads.network import Network
from stcsim.workloads.papers import PAPERS, papers_using
from stcsim.workloads.registry import NetworkSpec, get_network, list_networks, network_spec
from stcsim.workloads.shapes import GemmShape, unique_gemm_shapes


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in pairs)
        return "  ".join(padded).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _scaled(value: int) -> str:
    for factor, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.2f} {unit}"
    return str(value)


def _layer_names(shape: GemmShape) -> str:
    extra = len(shape.layers) - 1
    return shape.layers[0] + (f" (+{extra} more)" if extra else "")


def _takes(spec: NetworkSpec) -> str:
    if spec.takes_image:
        return f"image_size={spec.default_image_size} (>= {spec.min_image_size})"
    if spec.lengths is not None:
        return (f"seq_len and kv_len by phase (prefill: seq_len={spec.default_seq_len}, kv_len=seq_len); "
                f"both <= {spec.max_seq_len}")
    text = f"seq_len={spec.default_seq_len}"
    return text + (f", hidden={spec.default_hidden}" if spec.default_hidden is not None else "")


def _network_block(name: str) -> list[str]:
    spec = network_spec(name)
    lines = [f"{name}: {spec.description}", f"  defaults  {_takes(spec)}", f"  source    {spec.source}",
             f"  model     {spec.reference}"]
    for option in spec.options:
        for index, value in enumerate(option.values):
            label = f"{option.name}={value.value}" + (" (default)" if index == 0 else "")
            minimum = f" [image_size >= {value.min_image_size}]" if value.min_image_size else ""
            lines.append(f"  {'options' if index == 0 else '':8}  {label}: {value.description}{minimum}")
    used = papers_using(name)
    uses = [f"{w.paper} {w.label} -> {w.spec}" + (f" (batch {w.batch})" if w.batch else "") for w in used]
    lines += [f"  {'papers' if i == 0 else '':8}  {use}" for i, use in enumerate(uses or ["none"])]
    return lines


IMPORT_TEXT = """\
imported models (docs/workloads.md, "Import a model"): any of these forms wherever a network name goes
  onnx:FILE.onnx[:DIM=N,...]     an ONNX file (pip install 'stcsim[onnx]'); DIM=N: its symbolic input
                                 dimensions other than the batch, e.g. onnx:model.onnx:seq=128
  torch:MODULE:CALLABLE:input=3x224x224[+...][,dtype=int64]
                                 an nn.Module that CALLABLE() of MODULE (importable, or a .py file) builds,
                                 traced on the meta device (pip install 'stcsim[torch]'); input: the
                                 per-sample shape of each input (batch prepended); image_size=N: 3xNxN
  lowered: convolutions (im2col), linear / matmul with a weight (prunable), activation x activation matmuls
  (batched, not prunable); no GEMM work (activations, norms, pooling, reshapes) skipped; other GEMM ops
  (transposed or 3-D convolutions, ONNX LSTM / Einsum) are an error naming the node"""


def list_text() -> str:
    """Every network with its defaults, source, model paper, options (variants) and the papers that ran it."""
    blocks = ["\n".join(_network_block(name)) for name in list_networks()]
    legend = "papers: " + "; ".join(f"{key} = {title}" for key, title in PAPERS.items())
    return "\n\n".join([*blocks, legend])


def _layer_rows(net: Network) -> list[tuple[str, ...]]:
    rows = []
    for index, layer in enumerate(net.layers):
        prunable = "yes" if layer.prunable else ("not a GEMM" if not layer.is_gemm else "no")
        rows.append((str(index), layer.name, layer.kind.value, str(layer.m), str(layer.n), str(layer.k),
                     str(layer.groups), str(layer.repeat), f"{layer.macs:,}", f"{layer.params:,}", prunable,
                     layer.conv.describe() if layer.conv is not None else ""))
    return rows


def _shape_rows(shapes: Sequence[GemmShape], launches: bool = False) -> list[tuple[str, ...]]:
    rows = []
    for i, s in enumerate(shapes):
        counts = (str(s.count), f"{s.launches} x {s.batch}" if s.batch > 1 else str(s.launches))
        rows.append((str(i), str(s.m), str(s.n), str(s.k), "yes" if s.prunable else "no",
                     *(counts if launches else counts[:1]), f"{s.macs:,}", _layer_names(s)))
    return rows


_SHAPE_HEADER = ("#", "M", "N", "K", "prunable", "count", "MACs", "layers")
_LAUNCH_HEADER = ("#", "M", "N", "K", "prunable", "count", "launches x batch", "MACs", "layers")


def network_text(net: Network) -> str:
    """Layer table, totals and the unique-shape table of a built network."""
    header = ("#", "layer", "kind", "M", "N", "K", "groups", "repeat", "MACs", "params", "prunable", "conv")
    shapes = unique_gemm_shapes(net)
    values = (("batch", net.batch), ("image_size", net.image_size), ("seq_len", net.seq_len),
              ("kv_len", net.kv_len), ("hidden", net.hidden))
    settings = ", ".join(f"{key}={value}" for key, value in values if value is not None)
    totals = [
        f"params: {net.params:,} ({_scaled(net.params)})",
        f"MACs: {net.macs:,} ({_scaled(net.macs)}); GEMM MACs {net.gemm_macs:,}; "
        f"non-GEMM (depthwise) MACs {net.macs - net.gemm_macs:,}",
        f"GEMMs per forward pass: {sum(s.count for s in shapes):,} in {sum(s.launches for s in shapes):,} "
        f"launches (a batched attention layer is one launch); unique GEMM shapes: {len(shapes)}",
    ]
    return "\n\n".join([
        f"{net.spec} ({settings})",
        _grid(header, _layer_rows(net), right={0, 3, 4, 5, 6, 7, 8, 9}),
        "\n".join(totals),
        _grid(_LAUNCH_HEADER, _shape_rows(shapes, launches=True), right={0, 1, 2, 3, 5, 6, 7}),
    ])


def table_text(
    name: str, batch: int, image_size: int | None = None, seq_len: int | None = None,
    hidden: int | None = None, kv_len: int | None = None,
) -> str:
    """Layer table + totals (params, MACs, unique shapes) of network ``name``; see ``get_network``."""
    return network_text(get_network(name, batch=batch, image_size=image_size, seq_len=seq_len, hidden=hidden,
                                    kv_len=kv_len))


def shapes_markdown(net: Network) -> str:
    """The unique-shape table of ``net`` as a Markdown table (for docs and README)."""
    align = ("---:", "---:", "---:", "---:", ":---:", "---:", "---:", "---")
    rows = ["| " + " | ".join(_SHAPE_HEADER) + " |", "|" + "|".join(align) + "|"]
    rows += ["| " + " | ".join(row) + " |" for row in _shape_rows(unique_gemm_shapes(net))]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m stcsim.workloads``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m stcsim.workloads", description=__doc__)
    parser.add_argument("network", nargs="?", help="network spec, e.g. alexnet:variant=tf-slim (see --list), "
                        "or an imported model: onnx:FILE.onnx, torch:MODULE:CALLABLE:input=3x224x224")
    parser.add_argument("--list", action="store_true",
                        help="list the networks (source, options, papers) and exit")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--image-size", type=int)
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--kv-len", type=int, help="keys attended (LLMs)")
    parser.add_argument("--markdown", action="store_true", help="print only the unique shapes, as Markdown")
    args = parser.parse_args(argv)
    if args.list:
        print(list_text() + "\n\n" + IMPORT_TEXT)
        return 0
    if args.network is None:
        parser.error("give a network name or --list")
    try:
        net = get_network(args.network, args.batch, args.image_size, args.seq_len, args.hidden, args.kv_len)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(shapes_markdown(net) if args.markdown else network_text(net))
    return 0
