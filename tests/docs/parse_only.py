"""Parse documented command lines with the programs' own parsers, running nothing.

Run as ``python tests/docs/parse_only.py`` (from the repository root) with a JSON list on stdin, each item
``{"prog": "invoke" | "python -m MODULE", "argv": [...]}``; prints a JSON list of results, one per item:
``{"ok": bool, "error": str, "parsed": ...}``.

- invoke: ``invoke.main.program`` parses as on the command line (tasks.py loaded, its own argv rules
  included) up to the point where it would execute the tasks; ``--help`` counts as parsed.
- ``python -m MODULE``: the module runs as ``__main__`` with ``sys.argv`` set, and the first top-level
  ``ArgumentParser.parse_args`` / ``parse_known_args`` to return stops it (an argparse error is the
  result). A module without an argparse parser that runs to its end is reported as ``"noparser"``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import runpy
import sys


class _Parsed(BaseException):
    def __init__(self, namespace: object) -> None:
        super().__init__()
        self.namespace = namespace


_depth = 0


def _stop_after(original):
    def wrapper(self, *args, **kwargs):
        global _depth
        _depth += 1
        try:
            result = original(self, *args, **kwargs)
        finally:
            _depth -= 1
        if _depth == 0:
            namespace = result[0] if isinstance(result, tuple) else result
            raise _Parsed(namespace)
        return result

    return wrapper


def parse_module(module: str, argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = [module, *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        return {"ok": True, "noparser": True, "error": ""}
    except _Parsed as p:
        return {"ok": True, "parsed": {k: repr(v) for k, v in vars(p.namespace).items()}, "error": ""}
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        text = (err.getvalue() or out.getvalue()).strip()
        return {"ok": code == 0, "error": "" if code == 0 else text[-2000:], "output": out.getvalue()}
    except ImportError as e:
        return {"ok": False, "import_error": str(e), "error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # noqa: BLE001 - reported to the test
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}
    finally:
        sys.argv = saved


def parse_invoke(argv: list[str]) -> dict:
    from invoke.exceptions import Exit, ParseError
    from invoke.main import program

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            program.create_config()
            program.parse_core(["invoke", *argv])
            program.parse_collection()
            program.parse_tasks()
            program.parse_cleanup()
        tasks = [
            {"task": t.name, "args": {k: repr(a.value) for k, a in t.args.items() if a.got_value}}
            for t in program.tasks
        ]
        return {"ok": True, "error": "", "parsed": tasks, "remainder": program.core.remainder}
    except ParseError as e:
        return {"ok": False, "error": str(e)}
    except Exit as e:  # --help, --list: printed and done
        return {"ok": e.code == 0, "output": out.getvalue(), "error": (e.message or err.getvalue()).strip()}
    except SystemExit as e:
        return {"ok": not e.code, "output": out.getvalue(), "error": err.getvalue().strip()}
    except ValueError as e:  # a value of the wrong type, e.g. a synopsis's N for an int option
        return {"ok": False, "error": f"invalid value: {e}"}


def main() -> int:
    argparse.ArgumentParser.parse_args = _stop_after(argparse.ArgumentParser.parse_args)
    argparse.ArgumentParser.parse_known_args = _stop_after(argparse.ArgumentParser.parse_known_args)
    results = []
    for item in json.load(sys.stdin):
        prog = item["prog"]
        if prog == "invoke":
            results.append(parse_invoke(item["argv"]))
        else:
            results.append(parse_module(prog.split()[-1], item["argv"]))
    json.dump(results, sys.__stdout__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
