"""Property tests: override and env strings stay single argv elements / env values, nothing goes
through a shell, a canary file is never created, nothing crashes (only SpecError is allowed).

The ``--format sh`` script is executed for real with bash, with ``uv`` and ``ray`` replaced by a
recorder on PATH: what each command receives must be exactly the plan's argv and env.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_helpers import make_repos, spec

from console.errors import SpecError
from console.plan import build_plan, render_sh

pytestmark = pytest.mark.timeout(120)

RECORDER = """#!/bin/bash
n=$(ls "$STUB_OUT" | wc -l)
printf '%s\\0' "$(basename "$0")" "$@" > "$STUB_OUT/$(printf %04d "$n").argv"
env -0 > "$STUB_OUT/$(printf %04d "$n").env"
"""
PAYLOADS = [
    "$(touch CANARY)",
    "`touch CANARY`",
    "; touch CANARY",
    "&& touch CANARY",
    "| touch CANARY",
    "\ntouch CANARY",
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    "${IFS}touch${IFS}CANARY",
    "*",
    "~",
]
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=24)
override = st.one_of(
    text,
    st.builds(
        lambda k, v: f"{k}={v}",
        st.sampled_from(["grpo.max_num_steps", "logger.wandb.name", "+x.y"]),
        st.one_of(text, st.sampled_from(PAYLOADS)),
    ),
    st.builds(
        lambda v: f"logger.wandb.name='{v}'",
        st.one_of(st.sampled_from(PAYLOADS), text.filter(lambda s: "'" not in s and "\\" not in s)),
    ),
)
env_value = st.one_of(st.sampled_from(PAYLOADS), text)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("props")
    repos = make_repos(root)
    stubs = root / "bin"
    stubs.mkdir()
    for name in ("uv", "ray"):
        (stubs / name).write_text(RECORDER)
        (stubs / name).chmod(0o755)
    return root, repos, stubs


def _canary(root: Path) -> list[Path]:
    return [
        p
        for p in [root / "CANARY", *(Path(r) / "CANARY" for r in os.listdir(root) if (root / r).is_dir())]
        if p.exists()
    ]


def _plan(repos, levels, overrides=(), env=None):
    try:
        return build_plan(spec("nemo-rl", repos, levels, overrides=list(overrides), env=dict(env or {})))
    except SpecError as exc:
        assert str(exc) and "\n" not in str(exc).strip() or "override" in str(exc)
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ov=st.lists(override, max_size=3), levels=st.sampled_from([(0,), (2,), (0, 2)]))
def test_overrides_stay_single_argv_elements(world, ov, levels):
    root, repos, _ = world
    plan = _plan(repos, levels, ov)
    if plan is not None:
        for step in plan.steps:
            assert isinstance(step.argv, list) and all(isinstance(a, str) for a in step.argv)
            if step.kind == "train" and ov:
                assert step.argv[-len(ov) :] == list(ov)
        render_sh(plan)
    assert not _canary(root)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    env=st.dictionaries(st.from_regex(r"RLC_[0-9]{1,4}", fullmatch=True), env_value, max_size=3),
    bad=st.one_of(st.none(), text),
)
def test_env_values_pass_unchanged_and_bad_names_refused(world, env, bad):
    root, repos, _ = world
    if bad is not None:
        env = {**env, bad: "x"}
    plan = _plan(repos, (0,), env=env)
    if plan is not None:
        for step in plan.steps:
            for key, value in env.items():
                assert step.env[key] == value
    assert not _canary(root)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ov=st.lists(override, min_size=1, max_size=2),
    env=st.dictionaries(
        st.from_regex(r"RLC_[0-9]{1,4}", fullmatch=True),
        env_value.filter(lambda v: "\x00" not in v),
        max_size=2,
    ),
)
def test_rendered_script_runs_the_exact_argv(world, ov, env, tmp_path_factory):
    root, repos, stubs = world
    plan = _plan(repos, (2,), ov, env)
    if plan is None:
        return
    out = tmp_path_factory.mktemp("rec")
    script = out / "plan.sh"
    script.write_text(render_sh(plan))
    run_env = {
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "STUB_OUT": str(out / "rec"),
        "HOME": str(root),
        "RUN_DIR": str(out / "run"),
    }
    (out / "rec").mkdir()
    proc = subprocess.run(
        ["bash", str(script)], cwd=root, env=run_env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    recorded = sorted((out / "rec").glob("*.argv"))
    expected = [s for s in plan.steps if s.argv[0] in ("uv", "ray")]
    assert len(recorded) == len(expected)
    for rec, step in zip(recorded, expected, strict=True):
        argv = rec.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1]
        assert argv == step.argv
        envs = dict(
            item.split("=", 1)
            for item in rec.with_suffix(".env")
            .read_bytes()
            .decode("utf-8", "surrogateescape")
            .split("\0")[:-1]
        )
        for key, value in step.env.items():
            assert envs[key] == value
    assert not _canary(root)
