#!/usr/bin/env bash
# Issue 44: the papers' figures reproduced at FULL size (every layer, not --quick) with the wall time of each
# full run. CPU work: run on the 16-core device machine (the GPU is not used), one figure after another.
#   bash benchmarks/gpu/run_full_reproduce.sh FIGURE:TIMEOUT_S [FIGURE:TIMEOUT_S ...]
#   e.g. bash benchmarks/gpu/run_full_reproduce.sh paper001-fig16:420 paper000-transformer:90
# Builds the engine (pip install -e ., PGO off; SKIP_BUILD=1 skips it), then per figure runs
#   python -m stcsim.experiments.reproduce FIGURE --jobs $JOBS --no-progress --out $OUT/FIGURE
# under `timeout -s INT` (a run stopped at its timeout takes it as Ctrl-C: the rows finished so far stay in
# results.csv and table.md/PNG are still written from them, marked interrupted), printing the figure's wall
# time (date +%s before/after) and its table.md. Writes under $OUT (default /tmp/full_reproduce):
#   full_reproduce.tgz   ONE archive of every figure's folder: FIGURE/results.csv, FIGURE/table.md,
#                        FIGURE/FIGURE.png, FIGURE/log.txt (the run's stdout+stderr), FIGURE/prewarm.txt
#                        (the kernel-choice cache prewarm's output, below), FIGURE/wall.txt
#                        (figure, requested and applied timeout, wall seconds, exit status, finished or
#                        not, layer rows and complete network totals in results.csv of the planned runs),
#                        plus meta.txt (date, host, cores, git commit, python) and summary.txt (one line
#                        per figure)
#   summary.txt          the same summary, outside the archive as well
# The raw folders are deleted after tarring (only a few files come back from the device machine).
# Env: JOBS (default 16), PREWARM (default 1; 0: reproduce alone, planning serial), QUICK=1 (add --quick: a local smoke test), SKIP_BUILD=1, BUDGET (seconds from the
# start for the whole call, default 575: each figure's timeout is cut so the archive is always written).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FIGURE:TIMEOUT_S [FIGURE:TIMEOUT_S ...]" >&2; exit 2; }
OUT=${OUT:-/tmp/full_reproduce}
JOBS=${JOBS:-16}
BUDGET=${BUDGET:-575}
RESERVE=30   # seconds kept per figure for the interrupted run's report, the kill grace and the tar
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname) cores: $(nproc) jobs: $JOBS quick: ${QUICK:-0}"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (dirty files: $(git status --porcelain 2>/dev/null | wc -l))"
  echo "python: $(python3 --version 2>&1)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
} > "$OUT/meta.txt"
cat "$OUT/meta.txt"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  CMAKE_BUILD_PARALLEL_LEVEL=16 SKBUILD_CMAKE_DEFINE=STCSIM_PGO=OFF \
    python3 -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | tail -2
  stamp "engine built"
fi
python3 -c "from stcsim.sim import Engine; Engine(None)" && stamp "engine imports"
# The per-shape kernel choice simulates its candidates while the figure is PLANNED, in one process, before
# any layer runs (a cold cache: paper001-fig16 needs ~730 candidate launches, ~2 s each; killed there,
# reproduce writes nothing). PREWARM (default 1) first lists those candidates exactly (planning with the
# simulation stubbed out: which candidates are simulated does not depend on their cycles) and simulates them
# in a pool of $JOBS forked workers into the same disk cache ($STCSIM_CACHE/kernel_choice), largest first;
# reproduce's planning then reads them back. Its wall time is reported apart from the reproduce run's.
PREWARM_PY='import sys, time, multiprocessing as mp
import stcsim.harness.kernel_choice as kc
from stcsim.experiments.reproduce import plan_figure, get_figure, QUICK_LAYERS
figure, quick, jobs = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
real, todo = kc.simulate_cycles, {}
def stub(kernel, problem, pattern, sparsity, config):
    key = kc._cache_key(kernel, problem, pattern, sparsity, config)
    todo.setdefault(key, (kernel, problem, pattern, sparsity, config))
    return 1000.0 + len(todo)
kc.simulate_cycles = stub
t0 = time.time()
plan_figure(get_figure(figure), QUICK_LAYERS if quick else None)
kc.simulate_cycles = real
left = [k for k in todo if not (kc.cache_dir() / f"{k}.json").exists()]
left.sort(key=lambda k: -todo[k][1].m * todo[k][1].n * todo[k][1].k)
print(f"prewarm {figure}: {len(todo)} candidate launches, {len(left)} not cached (listed in {time.time() - t0:.1f} s)", flush=True)
def one(key):
    real(*todo[key])
    return key
if left:
    with mp.get_context("fork").Pool(min(jobs, len(left))) as pool:
        for i, _ in enumerate(pool.imap_unordered(one, left), 1):
            if i % 100 == 0 or i == len(left):
                print(f"prewarm {figure}: {i}/{len(left)} simulated at {time.time() - t0:.0f} s", flush=True)
print(f"prewarm {figure}: done in {time.time() - t0:.0f} s", flush=True)'
# SIGINT must reach Python as KeyboardInterrupt even where the shell started us with SIGINT ignored.
RUNNER='import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["python -m stcsim.experiments.reproduce", *sys.argv[1:]]
runpy.run_module("stcsim.experiments.reproduce", run_name="__main__", alter_sys=True)'
: > "$OUT/summary.txt"
figures=()
for spec in "$@"; do
  fig=${spec%%:*}; want=${spec#*:}; [ "$want" = "$spec" ] && want=300
  figures+=("$fig")
  dir="$OUT/$fig"; mkdir -p "$dir"
  left=$(( BUDGET - ($(date +%s) - start) - RESERVE ))
  limit=$(( want < left ? want : left ))
  if [ "$left" -lt 20 ]; then
    echo "$fig: skipped (only ${left}s of the call's budget left)" | tee -a "$OUT/summary.txt"; continue
  fi
  stamp "$fig: full reproduction, timeout ${limit}s (asked ${want}s)"
  args=("$fig" --jobs "$JOBS" --no-progress --out "$dir")
  [ "${QUICK:-0}" = 1 ] && args+=(--quick)
  pre=0; prerc=-
  if [ "${PREWARM:-1}" = 1 ]; then
    p0=$(date +%s); prerc=0
    timeout -k 10 "$limit" python3 -c "$PREWARM_PY" "$fig" "${QUICK:-0}" "$JOBS" > "$dir/prewarm.txt" 2>&1 || prerc=$?
    pre=$(( $(date +%s) - p0 ))
    grep -h "candidate launches\|done in" "$dir/prewarm.txt" || tail -5 "$dir/prewarm.txt"
    stamp "$fig: prewarm ${pre}s (exit $prerc)"
    limit=$(( limit - pre ))
    if [ "$limit" -lt 10 ]; then limit=10; fi
  fi
  t0=$(date +%s)
  rc=0
  timeout -s INT -k 20 "$limit" python3 -c "$RUNNER" "${args[@]}" > "$dir/log.txt" 2>&1 || rc=$?
  t1=$(date +%s)
  wall=$(( t1 - t0 ))
  case $rc in
    0) state="finished, every layer passed" ;;
    1) state="finished with failed layers or checks, or a Python error (see log.txt)" ;;
    124|130) state="INTERRUPTED at the timeout (partial)" ;;
    137) state="KILLED after the timeout (no report written)" ;;
    *) state="error (exit $rc)" ;;
  esac
  planned=$(sed -n 's/^\([0-9]*\) layer runs (.*/\1/p' "$dir/log.txt" | head -1)
  rows=$(python3 - "$dir/results.csv" <<'PY' 2>/dev/null || echo "no results.csv"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1], comment="#", low_memory=False)
kinds = d["row_type"].value_counts()
print(f"{kinds.get('layer', 0)} layer rows, {kinds.get('total', 0)} complete network totals")
PY
)
  line="$fig: reproduce wall ${wall}s (+ prewarm ${pre}s, exit $prerc; timeout ${limit}s, asked ${want}s in all), exit $rc, $state; results.csv: $rows of ${planned:-?} planned layer runs"
  echo "$line" > "$dir/wall.txt"
  echo "$line" >> "$OUT/summary.txt"
  echo "===== $line"
  grep -m1 "expected time" "$dir/log.txt" || true
  if [ -f "$dir/table.md" ]; then echo "----- $fig/table.md"; cat "$dir/table.md"
  else echo "----- $fig: no table.md; end of the log:"; tail -25 "$dir/log.txt"; fi
done
stamp "all figures done"
(cd "$OUT" && tar czf full_reproduce.tgz meta.txt summary.txt "${figures[@]}")
rm -rf "${figures[@]/#/$OUT/}" "$OUT/meta.txt"
ls -l "$OUT"
echo "===== summary"
cat "$OUT/summary.txt"
stamp done
