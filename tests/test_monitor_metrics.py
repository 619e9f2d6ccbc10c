"""TensorBoard events written by a real SummaryWriter, tb_dump, and the check language."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from console.monitor.check_metrics import evaluate_check, evaluate_checks, validate
from console.monitor.tb_reader import TbReader

pytestmark = pytest.mark.timeout(120)

WRITER = """
import sys
from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter(log_dir=sys.argv[1])
for step in (1, 2):
    w.add_scalar("train/loss", 1.0 / step, step)
    w.add_scalar("train/token_mult_prob_error", 1.0 + step / 100, step)
w.flush()
print("flushed", flush=True)
sys.stdin.readline()          # keep the file open and growing
w.add_scalar("train/loss", 0.25, 3)
for t in (0, 10):
    w.add_scalar("ray/node.0.gpu.0.mem_gb", 10.0 + t, t)
    w.add_scalar("ray/node.0.gpu.0.util", 90.0 + t / 10, t)
    w.add_scalar("ray/node.0.mem_gb", 100.0, t)
    w.add_scalar("ray/node.0.mem_total_gb", 512.0, t)
w.close()
if len(sys.argv) > 2:
    w2 = SummaryWriter(log_dir=sys.argv[2])   # a resumed run: exp_002, later file
    w2.add_scalar("train/loss", 0.2, 3)
    w2.add_scalar("train/loss", 0.1, 4)
    w2.close()
"""


@pytest.fixture(scope="module")
def tb_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real writer process; the reader polls while the file is still open and growing."""
    root = tmp_path_factory.mktemp("tb")
    exp1 = root / "logs" / "exp_001" / "tensorboard"
    exp2 = root / "logs" / "exp_002" / "tensorboard"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(exp1), str(exp2)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "flushed"
    reader = TbReader(root / "logs")
    first = reader.poll()
    proc.stdin.write("go\n")
    proc.stdin.close()
    assert proc.wait(60) == 0
    second = reader.poll()
    return {"root": root, "reader": reader, "first": first, "second": second}


def test_incremental_while_written(tb_run: dict) -> None:
    first = {(p.tag, p.step): p.value for p in tb_run["first"]}
    assert first[("train/loss", 1)] == 1.0 and first[("train/loss", 2)] == 0.5
    assert ("train/loss", 3) not in first
    second = {(p.tag, p.step) for p in tb_run["second"]}
    assert ("train/loss", 1) not in second  # only what was appended
    assert ("train/loss", 3) in second and ("train/loss", 4) in second


def test_merge_like_json_dump(tb_run: dict) -> None:
    m = tb_run["reader"].metrics()
    assert list(m) == sorted(m)
    assert m["train/loss"] == pytest.approx(
        {"1": 1.0, "2": 0.5, "3": 0.2, "4": 0.1}
    )  # later file wins at step 3
    assert m["train/token_mult_prob_error"]["2"] == pytest.approx(1.02)


def test_tb_dump_cli(tb_run: dict, tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "console.monitor.tb_dump",
            str(tb_run["root"] / "logs"),
            "--output_path",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "Merged data written to" in r.stdout
    data = json.loads(out.read_text())
    assert data["train/loss"]["4"] == pytest.approx(0.1)
    assert list(data["ray/node.0.gpu.0.mem_gb"]) == ["0", "10"]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "console.monitor.tb_dump",
            str(tb_run["root"] / "logs"),
            "--error-on-conflicts",
            "--output_path",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "Conflict detected for metric 'train/loss' at step 3" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "console.monitor.tb_dump", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and r.stderr.startswith("Error: No TensorBoard event files found under")


def test_partial_record_is_retried(tb_run: dict, tmp_path: Path) -> None:
    src = sorted((tb_run["root"] / "logs" / "exp_001").rglob("events*"))[0].read_bytes()
    dst = tmp_path / "events.out.tfevents.1.host"
    dst.write_bytes(src[:-7])  # the writer is mid-record
    reader = TbReader(tmp_path)
    got = reader.poll()
    with open(dst, "ab") as fh:
        fh.write(src[-7:])
    got += reader.poll()
    full = TbReader(dst).poll()
    assert [(p.tag, p.step, p.value) for p in got] == [(p.tag, p.step, p.value) for p in full]


DATA = {
    "train/loss": {"1": 4.0, "2": 2.0, "3": 1.0, "4": 100.0},
    "train/gen_kl_error": {"1": 0.001, "2": 0.002},
    "validation/accuracy": {"3": 0.5},
    "resumed": {"3": 1.0, "4": 3.0},
}


@pytest.mark.parametrize(
    ("check", "passed", "value"),
    [
        ('max(data["train/loss"]) < 200', True, 100.0),
        ('min(data["train/loss"]) > 0.5', True, 1.0),
        ('mean(data["train/loss"]) > 20', True, 26.75),
        ('mean(data["train/loss"], range_start=2, range_end=4) == 1.5', True, 1.5),
        ('mean(data["train/loss"], -2) == 50.5', True, 50.5),
        ('mean(data["train/loss"], ignore_top_p=0.25) < 3', True, 7 / 3),
        ('median(data["train/loss"]) == 3.0', True, 3.0),
        ('mean(data["resumed"]) == 2.0', True, 2.0),  # resume offset: steps 3..4
        ('ratio_above(data["train/loss"], 2.0) == 0.75', True, 0.75),
        ('"3" in data["validation/accuracy"]', True, True),
        ('data["validation/accuracy"]["3"] > 0.6', False, 0.5),
        ('len(data["train/gen_kl_error"]) == 2 and abs(-1) == 1', True, 2),
        ("data['train/loss']['2'] * 2 + -1 >= 3", True, None),
        ('data["train/loss"]["9"] < 1', False, None),
    ],
)
def test_check_semantics(check: str, passed: bool, value: object) -> None:
    r = evaluate_check(DATA, check)
    assert r.passed is passed, r.message
    if value is not None:
        assert r.value == pytest.approx(value)
    assert r.message.startswith("PASS: " if passed else "FAIL: ")


def test_check_messages() -> None:
    rs = evaluate_checks(
        DATA,
        [
            'data["nope"]["1"] < 1',
            'max(data["train/loss"]) < 1',
            'mean(data["train/loss"], ignore_top_p=2) < 1',
        ],
    )
    assert rs[0].message == 'FAIL: data["nope"]["1"] < 1 (key not found: \'nope\')'
    assert rs[1].message == 'FAIL: max(data["train/loss"]) < 1 (condition evaluated to False)'
    assert rs[2].message.startswith("FAIL: ") and "(error: ignore_top_p must be between" in rs[2].message


@pytest.mark.parametrize(
    "bad",
    [
        "__import__('os').system('touch PWNED')",
        "data.__class__",
        "().__class__.__bases__",
        "(lambda: 1)()",
        "[x for x in data]",
        "open('/etc/passwd')",
        "data['__class__']",
        "eval('1')",
        "max(data['a'], key=print)",
        "data[1:2]",
        "x := 1",
        "f'{data}'",
    ],
)
def test_refused_never_run(bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = evaluate_check(DATA, bad)
    assert r.refused and not r.passed and r.message.startswith("REFUSED: ")
    assert not (tmp_path / "PWNED").exists()


def test_check_cli_exit_codes(tmp_path: Path) -> None:
    mj = tmp_path / "metrics.json"
    mj.write_text(json.dumps(DATA))

    def run(*checks: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "console.monitor.check_metrics", str(mj), *checks],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )

    r = run('max(data["train/loss"]) < 200', '"3" in data["validation/accuracy"]')
    assert (
        r.returncode == 0
        and "Metric Checks" in r.stdout
        and 'PASS: max(data["train/loss"]) < 200' in r.stdout
    )
    r = run('max(data["train/loss"]) < 2')
    assert r.returncode == 1 and "(condition evaluated to False)" in r.stdout and "[value: 100.0]" in r.stdout
    r = run("__import__('os').system('touch PWNED')")
    assert r.returncode == 2 and "REFUSED" in r.stdout and not (tmp_path / "PWNED").exists()
    assert validate('data["a"] != 1') is not None
