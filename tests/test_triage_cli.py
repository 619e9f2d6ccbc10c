"""`rl-console triage` as a real process: JSON only on stdout, exit codes by verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parent / "fixtures" / "triage"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", "triage", *args], capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    ("name", "code", "verdict"),
    [
        ("nemo_pass", 0, "Pass"),
        ("cuda_oom", 1, "Fail"),
        ("rocr_verl_guard", 3, "Blocked"),
        ("incomplete", 1, "Incomplete"),
    ],
)
def test_json_and_exit_codes(name: str, code: int, verdict: str) -> None:
    p = run("--json", str(FIXTURES / f"{name}.log"))
    assert p.returncode == code, p.stderr
    data = json.loads(p.stdout)  # stdout holds only JSON
    assert data["verdict"] == verdict
    assert set(data) >= {"verdict", "framework", "primary", "findings", "progress"}  # fields are only added


def test_exit_code_option_and_framework() -> None:
    p = run("--json", "--exit-code", "137", "--framework", "verl", str(FIXTURES / "unknown_exit_code.log"))
    data = json.loads(p.stdout)
    assert p.returncode == 1 and data["primary"]["class"] == "unknown_error" and data["framework"] == "verl"


def test_unreadable_is_one_line_exit_2(tmp_path: Path) -> None:
    p = run("--json", str(tmp_path / "nope.log"))
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "cannot read" in p.stderr


def test_human_output_and_light_imports() -> None:
    p = run(str(FIXTURES / "hf_429.log"))
    assert p.returncode == 3 and "Verdict: Blocked" in p.stdout and "HF_HUB_OFFLINE=1" in p.stdout
    code = (
        "import sys, console.cli as c; c.main(['triage','--json',sys.argv[1]]); "
        "print(sorted(m for m in ('torch','ray','textual','tensorboard') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(FIXTURES / "nemo_pass.log")],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert out.strip().endswith("[]")
