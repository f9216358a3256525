"""`perf script` call chains read into the launch's profile (stcsim/tools/perf_profile.py)."""

from __future__ import annotations

from stcsim.tools.perf_profile import launch_profile

# Four samples in `perf script`'s default layout: two in the launch (issue with an inlined helper; the
# L2 path under load_sectors), one in the same process outside it, one in the kernel under the launch.
SCRIPT = """python 11637 15884.32: 500000 cpu-clock:
\t69ef4 stc::TimingModel::held_by_registers_or_unit+0x14 (inlined)
\t69ef4 stc::TimingModel::issue+0x594 (/tmp/e.so)
\t69a00 stc::TimingModel::schedule+0x40 (/tmp/e.so)
\t68000 stc::TimingModel::run+0x120 (/tmp/e.so)
\t10000 _PyEval_EvalFrameDefault+0x10 (/usr/bin/python3.11)

python 11637 15884.33: 500000 cpu-clock:
\t70000 stc::MemorySystem::l2_path+0x10 (/tmp/e.so)
\t70100 stc::MemorySystem::load_sectors+0x20 (/tmp/e.so)
\t69ef4 stc::TimingModel::issue+0x594 (/tmp/e.so)
\t68000 stc::TimingModel::run+0x120 (/tmp/e.so)

python 11637 15884.34: 500000 cpu-clock:
\t10000 _PyEval_EvalFrameDefault+0x10 (/usr/bin/python3.11)

python 11637 15884.35: 500000 cpu-clock:
\tffffffff8168e1d1 clear_page_erms+0x51 ([kernel.kallsyms])
\t5000 stc::(anonymous namespace)::wmma_plan(stc::FragTable const&, int)+0x8 (/tmp/e.so)
\t68000 stc::TimingModel::run+0x120 (/tmp/e.so)
"""


def test_only_the_launchs_samples_count_and_inlined_frames_fold_into_their_function():
    prof = launch_profile(SCRIPT)
    assert prof.samples == 3
    assert prof.self_samples == {"stc::TimingModel::issue": 1, "stc::MemorySystem::l2_path": 1,
                                 "clear_page_erms": 1}
    assert prof.inclusive["stc::TimingModel::issue"] == 2
    assert prof.inclusive["stc::TimingModel::run"] == 3
    assert prof.inclusive["stc::(anonymous namespace)::wmma_plan(stc::FragTable const&, int)"] == 1
    assert "held_by_registers_or_unit" not in " ".join(prof.inclusive)  # inlined: part of issue


def test_table_lists_self_and_inclusive_shares():
    text = launch_profile(SCRIPT).table(top=2)
    assert text.splitlines()[0].startswith("3 samples in the launch")
    assert len(text.splitlines()) == 4
    assert "33.3%  66.7%  stc::TimingModel::issue" in text


def test_a_leading_blank_line_is_not_a_frame():
    assert launch_profile("\n" + SCRIPT).self_samples == launch_profile(SCRIPT).self_samples


def test_no_launch_samples_says_so():
    assert "no samples" in launch_profile("python 1 2: 3 cpu-clock:\n\t10 main+0x1 (/bin/x)\n").table()
