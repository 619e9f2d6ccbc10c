"""`rl-console run ... --baseline REF` end to end on a Bridge git repo made here: the demo imports the
repo's `rlc_demo_bridge` (its weight conversion for generation), so a commit that changes it really
changes the numbers, and a commit that only refactors it does not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from runs_support import cli, reap_runs

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]

IDENTITY = '''"""Weights for generation: unchanged."""


def export_weights(state_dict):
    return dict(state_dict)
'''
REFACTOR = '''"""Weights for generation: unchanged (refactored: a comprehension instead of dict())."""


def export_weights(state_dict):
    return {name: tensor for name, tensor in state_dict.items()}
'''
PLANTED = '''"""Weights for generation: the LM head scaled by 5% (a conversion bug)."""


def export_weights(state_dict):
    return {k: (v * 1.05 if k.startswith("head.") else v) for k, v in state_dict.items()}
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_bridge(tmp_path: Path, *versions: str) -> Path:
    repo = tmp_path / "Megatron-Bridge"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    for i, text in enumerate(versions):
        (repo / "rlc_demo_bridge.py").write_text(text)
        git(repo, "add", "rlc_demo_bridge.py")
        git(repo, "commit", "-qm", f"v{i}")
    return repo


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == []


def run_pair(runs: Path, repo: Path, ref: str, *extra: str):
    return cli(
        "run",
        "--framework",
        "demo",
        "--no-doctor",
        "--bridge-repo",
        str(repo),
        "--baseline",
        ref,
        "--override",
        "grpo.max_num_steps=6",
        "--runs-dir",
        str(runs),
        *extra,
        timeout=300,
    )


def test_baseline_pair_planted_change_is_changed_linked_and_reported(tmp_path: Path, runs_dir: Path) -> None:
    repo = make_bridge(tmp_path, IDENTITY, PLANTED)
    head, base = git(repo, "rev-parse", "HEAD").strip(), git(repo, "rev-parse", "HEAD~1").strip()
    (repo / "notes.txt").write_text("a dirty file of the user's\n")
    res = run_pair(runs_dir, repo, "HEAD~1")
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr  # candidate passed; comparison Changed
    assert "--- Baseline comparison ---" in res.stdout and "Verdict: Changed" in res.stdout

    runs = sorted(p for p in runs_dir.iterdir() if (p / "state.json").exists())
    assert len(runs) == 2
    b_dir, c_dir = runs
    b_state, c_state = (json.loads((d / "state.json").read_text()) for d in runs)
    b_spec, c_spec = (json.loads((d / "spec.json").read_text()) for d in runs)
    # both kept, both passed, and linked both ways
    assert b_state["verdict"] == c_state["verdict"] == "Pass"
    assert c_state["baseline_run"] == b_dir.name and c_spec["extra"]["baseline_run"] == b_dir.name
    assert b_state["candidate_run"] == c_dir.name and b_state["baseline_of_ref"] == "HEAD~1"
    assert (
        b_spec["extra"]["bridge_state"]["commit"] == base
        and b_spec["extra"]["bridge_state"]["ref"] == "HEAD~1"
    )
    assert c_spec["extra"]["bridge_state"]["commit"] == head
    assert "notes.txt" in c_spec["extra"]["bridge_state"]["dirty"]
    # the baseline really imported REF's module from its worktree, the candidate the user's checkout
    b_log = (b_dir / "logs/01-demo-grpo.log").read_text()
    c_log = (c_dir / "logs/01-demo-grpo.log").read_text()
    assert "demo bridge: rlc_demo_bridge (" in b_log and "/.worktrees/" in b_log
    assert f"demo bridge: rlc_demo_bridge ({repo}/rlc_demo_bridge.py)" in c_log

    cmp = json.loads((c_dir / "compare.json").read_text())
    assert cmp["verdict"] == "Changed" and cmp["baseline"]["id"] == b_dir.name
    tmpe = next(r for r in cmp["metrics"] if r["key"] == "token_mult_prob_error")
    assert tmpe["first_divergence"] == 1 and not tmpe["within"]  # generation now samples other weights
    bridge = next(d for d in cmp["differences"] if d["field"] == "Bridge")
    assert bridge["baseline"].startswith(base) and bridge["candidate"].startswith(head)
    assert "dirty files: notes.txt" in bridge["candidate"]
    report = (c_dir / "report.md").read_text()
    assert "\nBaseline comparison:\n- Verdict: Changed - beyond tolerance:" in report
    assert report.index("Baseline comparison:") < report.index("Limitations:")
    assert json.loads((c_dir / "report.json").read_text())["baseline_comparison"][0].startswith(
        "Verdict: Changed"
    )

    shown = cli("show", c_dir.name, "--runs-dir", str(runs_dir)).stdout
    assert f"baseline {b_dir.name}" in shown
    assert f"candidate {c_dir.name}" in cli("show", b_dir.name, "--runs-dir", str(runs_dir)).stdout

    # the user's checkout is untouched and the worktree is gone
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert (repo / "rlc_demo_bridge.py").read_text() == PLANTED
    assert git(repo, "status", "--short").strip() == "?? notes.txt"
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1
    assert list((runs_dir / ".worktrees").iterdir()) == []


def test_baseline_pair_refactor_only_is_same(tmp_path: Path, runs_dir: Path) -> None:
    repo = make_bridge(tmp_path, IDENTITY, REFACTOR)
    res = run_pair(runs_dir, repo, "HEAD~1")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    assert "Verdict: Same" in res.stdout and "identical" in res.stdout
    (_, c_dir) = sorted(p for p in runs_dir.iterdir() if (p / "state.json").exists())
    cmp = json.loads((c_dir / "compare.json").read_text())
    assert cmp["verdict"] == "Same" and cmp["match"]["identical"] is True
    assert [d["kind"] for d in cmp["differences"]] == ["code", "code"]  # PYTHONPATH and Bridge commit


def test_baseline_bad_input_creates_nothing(tmp_path: Path, runs_dir: Path) -> None:
    repo = make_bridge(tmp_path, IDENTITY)
    for extra, msg in [
        (["--bridge-repo", str(repo), "--baseline", "no-such-ref"], "no such commit"),
        (["--bridge-repo", str(repo), "--baseline=--upload-pack=x"], "expected a commit"),
        (["--baseline", "HEAD"], "--baseline needs the Bridge checkout"),
        (["--bridge-repo", str(repo), "--baseline", "HEAD", "--detach"], "cannot --detach"),
        (["--bridge-repo", str(repo), "--baseline", "HEAD", "--override", "x=[1,"], "does not parse"),
    ]:
        res = cli("run", "--framework", "demo", "--no-doctor", "--runs-dir", str(runs_dir), *extra)
        assert res.returncode == 2, (extra, res.stderr)
        assert msg in res.stderr and len(res.stderr.strip().splitlines()) == 1, (extra, res.stderr)
    assert not runs_dir.exists() or [p for p in runs_dir.iterdir() if p.name != ".worktrees"] == []
    assert not (runs_dir / ".worktrees").exists() or list((runs_dir / ".worktrees").iterdir()) == []
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1


def test_ctrl_c_cancels_the_run_in_flight_and_removes_the_worktree(tmp_path: Path, runs_dir: Path) -> None:
    import os
    import signal
    import sys
    import time

    from runs_support import ROOT, takes_ctrl_c, wait_finished

    repo = make_bridge(tmp_path, IDENTITY, PLANTED)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "console",
            "run",
            "--framework",
            "demo",
            "--no-doctor",
            "--bridge-repo",
            str(repo),
            "--baseline",
            "HEAD~1",
            "--override",
            "grpo.max_num_steps=500",
            "--runs-dir",
            str(runs_dir),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
        preexec_fn=takes_ctrl_c,
    )
    try:
        deadline = time.monotonic() + 120
        run_dir = None
        while time.monotonic() < deadline:
            dirs = [p for p in runs_dir.glob("2*") if (p / "logs/01-demo-grpo.log").exists()]
            if dirs and "Step 2/500" in (dirs[0] / "logs/01-demo-grpo.log").read_text(errors="replace"):
                run_dir = dirs[0]
                break
            time.sleep(0.2)
        assert run_dir is not None, "the baseline run never reached step 2"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "the baseline worktree is removed" in err
    assert wait_finished(run_dir, timeout=30)["verdict"] == "Cancelled"
    assert [p.name for p in runs_dir.glob("2*")] == [run_dir.name]  # no candidate was started
    assert list((runs_dir / ".worktrees").iterdir()) == []
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1


USES_SUBMODULE = '''"""Weights for generation, scaled by the vendored dependency's SCALE (3rdparty/dep, a submodule)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "3rdparty", "dep"))
import depmod  # noqa: E402

print(f"depmod SCALE={depmod.SCALE} from {depmod.__file__}", flush=True)


def export_weights(state_dict):
    return {k: (v * depmod.SCALE if k.startswith("head.") else v) for k, v in state_dict.items()}
'''


def test_baseline_worktree_gets_refs_submodule_commit_offline(tmp_path: Path, runs_dir: Path) -> None:
    """Megatron-Bridge vendors Megatron-LM as a submodule: a worktree of REF must see REF's submodule
    commit, taken from the user's checked-out submodule (no network), and leave it as it was."""
    dep = tmp_path / "dep"
    dep.mkdir()
    git(dep, "init", "-q")
    git(dep, "config", "user.email", "t@example.com")
    git(dep, "config", "user.name", "t")
    for scale in ("1.0", "1.05"):
        (dep / "depmod.py").write_text(f"SCALE = {scale}\n")
        git(dep, "add", "depmod.py")
        git(dep, "commit", "-qm", f"scale {scale}")
    d1 = git(dep, "rev-parse", "HEAD~1").strip()
    repo = make_bridge(tmp_path, USES_SUBMODULE)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(dep), "3rdparty/dep")
    sub = repo / "3rdparty/dep"
    git(sub, "checkout", "-q", d1)
    git(repo, "add", "3rdparty/dep")
    git(repo, "commit", "-qm", "vendor dep at 1.0")
    git(sub, "checkout", "-q", "master")
    git(repo, "commit", "-qam", "bump dep to 1.05")  # the change under test: a submodule bump
    sub_head = git(sub, "rev-parse", "HEAD").strip()

    res = run_pair(runs_dir, repo, "HEAD~1")
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr
    assert f"baseline: submodule 3rdparty/dep at {d1[:12]}" in res.stderr
    b_dir, c_dir = sorted(p for p in runs_dir.iterdir() if (p / "state.json").exists())
    b_log = (b_dir / "logs/01-demo-grpo.log").read_text()
    c_log = (c_dir / "logs/01-demo-grpo.log").read_text()
    assert "depmod SCALE=1.0 from " in b_log and "/.worktrees/" in b_log
    assert f"depmod SCALE=1.05 from {sub}/depmod.py" in c_log
    assert json.loads((c_dir / "compare.json").read_text())["verdict"] == "Changed"
    # the user's checkout and its submodule are as they were; no worktree is left anywhere
    assert (
        git(sub, "rev-parse", "HEAD").strip() == sub_head
        and (sub / "depmod.py").read_text() == "SCALE = 1.05\n"
    )
    assert git(repo, "status", "--short").strip() == ""
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1
    assert len(git(sub, "worktree", "list").strip().splitlines()) == 1
    assert list((runs_dir / ".worktrees").iterdir()) == []


def test_same_submodule_commit_is_shared_and_never_deleted_with_the_worktree(tmp_path: Path) -> None:
    from console.compare.baseline import add_worktree, fill_submodules, remove_worktree, resolve_ref

    dep = tmp_path / "dep"
    dep.mkdir()
    git(dep, "init", "-q")
    git(dep, "config", "user.email", "t@example.com")
    git(dep, "config", "user.name", "t")
    (dep / "depmod.py").write_text("SCALE = 1.0\n")
    git(dep, "add", "depmod.py")
    git(dep, "commit", "-qm", "dep")
    repo = make_bridge(tmp_path, IDENTITY)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(dep), "3rdparty/dep")
    git(repo, "commit", "-qm", "vendor dep")
    commit = resolve_ref(str(repo), "HEAD")
    wt = add_worktree(str(repo), commit, tmp_path / "runs")
    assert fill_submodules(str(repo), wt, commit) == []  # same commit: shared, nothing to say
    link = wt / "3rdparty/dep"
    assert link.is_symlink() and (link / "depmod.py").read_text() == "SCALE = 1.0\n"
    remove_worktree(str(repo), wt)
    assert not wt.exists() and (repo / "3rdparty/dep/depmod.py").read_text() == "SCALE = 1.0\n"
    assert git(repo, "status", "--short").strip() == ""
    assert len(git(repo, "worktree", "list").strip().splitlines()) == 1
