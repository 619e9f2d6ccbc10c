"""The one RunSpec builder (console.spec.make_spec): defaults, checks, and what a rerun keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.errors import SpecError
from console.runs.rerun import apply_remedy
from console.spec import make_spec

pytestmark = pytest.mark.timeout(30)


def test_defaults_come_from_the_procedures_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEMO_RL_REPO", "~/nemo-rl")
    monkeypatch.setenv("BRIDGE_REPO", "~/bridge")
    monkeypatch.setenv("RL_CONSOLE_RUNS", "/tmp/rlc-runs")
    spec = make_spec({"framework": "nemo-rl", "levels": [2, 0, 2], "env": ["A=1=2"], "repo": ""})
    assert spec.repo == str(Path("~/nemo-rl").expanduser()) and spec.bridge_repo == str(
        Path("~/bridge").expanduser()
    )
    assert spec.levels == [0, 2] and spec.env == {"A": "1=2"} and spec.runs_dir == "/tmp/rlc-runs"
    demo = make_spec({})
    assert demo.framework == "demo" and demo.bridge_repo is None and demo.repo is None and demo.levels == [0]
    assert demo.launcher == "local" and demo.slurm.nodes == 1 and demo.extra == {}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"env": ["NOEQUALS"]}, "--env 'NOEQUALS': expected KEY=VALUE"),
        ({"nodes": "two"}, "--nodes 'two': expected a number"),
        ({"gpus_per_node": "4x"}, "--gpus-per-node '4x': expected a number"),
        ({"hang_timeout": "0"}, "--hang-timeout 0: must be a positive number of seconds"),
        ({"hang_timeout": "nan"}, "--hang-timeout nan: must be a positive number of seconds"),
        ({"launcher": "pbs"}, "--launcher 'pbs': expected one of local, slurm"),
    ],
)
def test_a_bad_value_is_one_line_in_the_cli_words(options: dict, message: str) -> None:
    with pytest.raises(SpecError) as err:
        make_spec(options)
    assert str(err.value) == message


def test_a_rerun_keeps_everything_the_remedy_does_not_change() -> None:
    spec = make_spec(
        {"launcher": "slurm", "nodes": "2", "partition": "batch", "hang_timeout": 90, "env": {"A": "1"}}
        | {"bridge_tests": ["tests/test_x.py"], "overrides": ["a.b=1"]}
    )
    rerun = apply_remedy(
        spec, {"class": "cuda_oom", "env": {"B": "2"}, "unset": ["A"], "overrides": ["c=3"]}, "r1"
    )
    assert rerun.slurm == spec.slurm and rerun.launcher == "slurm"
    assert rerun.env == {"B": "2"} and rerun.overrides == ["a.b=1", "c=3"]
    assert rerun.extra["hang_timeout_s"] == 90.0 and rerun.extra["bridge_tests"] == ["tests/test_x.py"]
    assert rerun.extra["linked_from"] == "r1" and "linked_from" not in spec.extra
