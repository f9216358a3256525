"""A differential test against ptxas: seeded mutants of the kernel set and the test PTX (sim/ptxfuzz.py).

The engine must refuse every mutant ptxas refuses, with a PtxError naming file and line; it must never
crash, hang or raise another exception (each load runs in a worker process with a time limit). Mutants
ptxas accepts and the engine refuses use something outside the engine's subset (docs/isa.md); they are
counted by reason.

The default run takes CI_MUTANTS mutants; STCSIM_FUZZ_MUTANTS=N takes N (and STCSIM_FUZZ_SEED another
seed). ptxas's verdicts are recorded in data/ptxas_fuzz_verdicts.json; with ptxas installed the missing
ones are computed (and recorded with STCSIM_UPDATE_PTXAS=1), and a sample of the recorded ones is checked.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ptxfuzz
import pytest
from ptxas_oracle import CRASHED, VerdictCache, check_text, find_ptxas, text_key

pytestmark = pytest.mark.sim_only

DATA = Path(__file__).resolve().parent / "data" / "ptxas_fuzz_verdicts.json"
CI_MUTANTS = 300
SEED = int(os.environ.get("STCSIM_FUZZ_SEED", "18"))
COUNT = int(os.environ.get("STCSIM_FUZZ_MUTANTS", str(CI_MUTANTS)))
LOAD_SECONDS = 20.0  # a load of any mutant takes milliseconds; this bound only catches hangs


def _worker(conn) -> None:
    """Loads each PTX text it receives into a fresh engine; answers (kind, message)."""
    from stcsim import _engine

    while True:
        job = conn.recv()
        if job is None:
            return
        text, name = job
        try:
            _engine.Engine(True).load_ptx(text.encode("utf-8", "surrogatepass"), name)
            conn.send(("ok", ""))
        except _engine.PtxError as e:
            conn.send(("ptx", str(e)))
        except BaseException as e:  # noqa: BLE001 - anything else is what the test looks for
            conn.send(("untyped", f"{type(e).__name__}: {e}"))


class Loader:
    """Engine loads in a worker process: a crash or a hang takes the worker, not the test."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("fork")
        self._start()

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child,), daemon=True)
        self._proc.start()

    def load(self, text: str, name: str) -> tuple[str, str]:
        """(ok | ptx | untyped | crash | hang, message)."""
        try:
            self._conn.send((text, name))
            if self._conn.poll(LOAD_SECONDS):
                return self._conn.recv()
            outcome = ("hang", f"no answer within {LOAD_SECONDS} s")
        except (EOFError, BrokenPipeError, ConnectionResetError):
            outcome = ("crash", f"worker died (exit code {self._proc.exitcode})")
        self._proc.kill()
        self._proc.join()
        self._start()
        return outcome

    def close(self) -> None:
        """Stops the worker."""
        self._conn.send(None)
        self._proc.join(5)


def ptxas_verdicts(mutants: list[ptxfuzz.Mutant], cache: VerdictCache) -> dict[str, str | None]:
    """key -> ptxas's verdict (None: accepted) for every mutant ptxas has a verdict on (recorded, or computed
    where ptxas is installed)."""
    ptxas = find_ptxas()
    missing = [m for m in mutants if not cache.get(text_key(m.arch + m.text))[0]]
    if ptxas and missing:
        with ThreadPoolExecutor(max_workers=2) as pool:
            got = list(pool.map(lambda m: check_text(ptxas, m.text, m.arch, "-O0"), missing))
        for m, v in zip(missing, got, strict=True):
            if not (v or "").startswith(CRASHED):
                cache.put(text_key(m.arch + m.text), None if v is None else v[:200])
    if os.environ.get("STCSIM_UPDATE_PTXAS"):
        cache.save()
    keys = [text_key(m.arch + m.text) for m in mutants]
    return {k: cache.get(k)[1] for k in keys if cache.get(k)[0]}


def _reason(message: str) -> str:
    """The kind of an engine error, without names and numbers (for counting)."""
    what = message.split(": ", 1)[1].rsplit(": `", 1)[0] if ": " in message else message
    return re.sub(r"'[^']*'|\.[\w:]+|%\w+|\d+", "_", what)[:70]


def test_the_engine_refuses_what_ptxas_refuses_and_never_crashes():
    mutants = ptxfuzz.mutants(SEED, COUNT)
    cache = VerdictCache(DATA)
    verdicts = ptxas_verdicts(mutants, cache)
    loader = Loader()
    outcomes = Counter()
    lax, bad, extra = [], [], Counter()
    try:
        for m in mutants:
            name = f"{m.source}.mutant"
            kind, msg = loader.load(m.text, name)
            outcomes[kind] += 1
            if kind in ("crash", "hang", "untyped"):
                bad.append(f"{kind}: {m.what}: {msg}")
                continue
            if kind == "ptx" and not re.match(rf"^{re.escape(name)}:\d+: ", msg):
                bad.append(f"error without file and line: {m.what}: {msg}")
            key = text_key(m.arch + m.text)
            if key not in verdicts:
                continue
            if verdicts[key] is not None and kind == "ok":
                lax.append(f"{m.what}: ptxas: {verdicts[key]}")
            if verdicts[key] is None and kind == "ptx":
                extra[_reason(msg)] += 1
    finally:
        loader.close()
    judged = sum(1 for m in mutants if text_key(m.arch + m.text) in verdicts)
    rejected = sum(1 for v in verdicts.values() if v is not None)
    print(
        f"\nptxas fuzz (seed {SEED}): {len(mutants)} mutants, {judged} with a ptxas verdict, ptxas rejects "
        f"{rejected}, the engine rejects {outcomes['ptx']}; crashes {outcomes['crash']}, hangs "
        f"{outcomes['hang']}, untyped errors {outcomes['untyped']}; accepted by ptxas but refused by the "
        f"engine (outside its subset): {sum(extra.values())}"
    )
    for reason, n in extra.most_common():
        print(f"  {n:4d}  {reason}")
    assert not bad, f"{len(bad)} crashes, hangs or untyped errors:\n" + "\n".join(bad[:20])
    assert not lax, f"{len(lax)} mutants ptxas refuses load on the engine:\n" + "\n".join(lax[:30])
    if not find_ptxas():
        assert judged >= 0.9 * len(mutants), (
            f"only {judged} of {len(mutants)} mutants have a recorded ptxas verdict: the corpus changed; "
            "record them with STCSIM_UPDATE_PTXAS=1 where ptxas is installed"
        )


def test_recorded_fuzz_verdicts_are_ptxas_verdicts():
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas not installed: the recorded verdicts are used as they are")
    cache = VerdictCache(DATA)
    sample = [m for m in ptxfuzz.mutants(SEED, CI_MUTANTS)[:40] if cache.get(text_key(m.arch + m.text))[0]]
    for m in sample:
        want = cache.get(text_key(m.arch + m.text))[1]
        got = check_text(ptxas, m.text, m.arch, "-O0")
        assert (got is None) == (want is None), f"{m.what}: recorded {want!r}, ptxas now {got!r}"
