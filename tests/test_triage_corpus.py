"""The shared triage corpus (real failure logs from public issue trackers), scored by its own tool.

CI has ``../shared`` beside the checkout; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
EVAL = SHARED / "tools" / "triage-eval"


@pytest.mark.timeout(300)
def test_triage_corpus_scores() -> None:
    if not EVAL.exists():
        pytest.skip(f"no triage-eval at {EVAL}")
    cmd = shlex.join([sys.executable, "-m", "console", "triage", "--json"])
    proc = subprocess.run(
        [sys.executable, str(EVAL), "--cmd", cmd], capture_output=True, text=True, timeout=280
    )
    last = proc.stdout.strip().splitlines()[-1]
    m = re.search(r"(\d+) cases, verdict ([\d.]+)%, class ([\d.]+)%, false_pass (\d+)", last)
    assert m, proc.stdout + proc.stderr
    cases, verdict, klass, false_pass = int(m[1]), float(m[2]), float(m[3]), int(m[4])
    assert cases > 0
    assert false_pass == 0, proc.stdout
    assert verdict >= 95.0, proc.stdout
    assert klass >= 90.0, proc.stdout
