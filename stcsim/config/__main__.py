"""Command line: ``python -m stcsim.config {show SPEC [--sources] | list | docs}``."""

from __future__ import annotations

import argparse
import sys

from stcsim.config.docs import render
from stcsim.config.errors import ConfigError
from stcsim.config.loader import available, load_config


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m stcsim.config", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the flat resolved config, one 'key = value' per line")
    show.add_argument("spec", help="base config and overlays, e.g. v100+stc-pingpong")
    show.add_argument("--sources", action="store_true", help="append each value's source")
    commands.add_parser("list", help="list shipped configs and overlays")
    commands.add_parser("docs", help="print docs/configs.md (generated from the schema)")
    args = parser.parse_args(argv)
    try:
        if args.command == "show":
            cfg = load_config(args.spec)
            for key, value in cfg.flat().items():
                text = str(value).lower() if isinstance(value, bool) else str(value)
                print(f"{key} = {text}" + (f"  # {cfg.source(key)}" if args.sources else ""))
        elif args.command == "list":
            bases, overlays = available()
            print("configs: " + ", ".join(bases))
            print("overlays: " + ", ".join(overlays))
        else:
            sys.stdout.write(render())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
