"""The doctor probes the run's own interpreter: `uv run python` in the NeMo-RL checkout, verl's uv
launcher (or python3 with VERL_USE_UV=0). A stand-in `uv` script on PATH runs a real virtual
environment's python (<checkout>/.venv); versions, EXT_SUFFIX and imports come from that process."""

from __future__ import annotations

import importlib.metadata as md
import json
import shutil
import sys
from pathlib import Path

import pytest
from doctor_helpers import (
    assert_check_shape,
    by_id,
    clean_env,
    install_fake_uv,
    make_bridge,
    make_git_repo,
    make_project_env,
)

from console.doctor import run_doctor
from console.doctor.context import Probes
from console.doctor.interpreter import parse_dry_run, sync_flags
from console.plan import build_plan
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """Bridge + NeMo-RL + verl checkouts, a stand-in uv first on PATH, its call log."""
    clean_env(monkeypatch, HOME=str(tmp_path / "home"))
    bindir = tmp_path / "bin"
    install_fake_uv(bindir)
    monkeypatch.setenv("PATH", f"{bindir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    log = tmp_path / "uv.log"
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    nemo = make_git_repo(tmp_path / "nemo-rl", {"pyproject.toml": "[project]\nname = 'nemo-rl'\n"})
    verl = make_git_repo(
        tmp_path / "verl",
        {
            "pyproject.toml": "[project]\nname = 'verl'\n",
            "tests/special_e2e/run_ppo_trainer_megatron.sh": "# VERL_USE_UV\n",
        },
    )
    return {"bridge": bridge, "nemo": nemo, "verl": verl, "log": log, "bin": bindir, "tmp": tmp_path}


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _add_megatron_lm(bridge: Path) -> Path:
    """<bridge>/3rdparty/Megatron-LM with megatron/core (a package) and its datasets/ directory."""
    datasets = bridge / "3rdparty" / "Megatron-LM" / "megatron" / "core" / "datasets"
    datasets.mkdir(parents=True)
    (datasets.parent / "__init__.py").write_text("")
    return datasets


def _nemo_spec(w, **kw) -> RunSpec:
    return RunSpec(framework="nemo-rl", bridge_repo=str(w["bridge"]), repo=str(w["nemo"]), **kw)


def _doctor(spec: RunSpec, checks: list[str], probes: Probes | None = None) -> dict:
    result = run_doctor(spec, build_plan(spec), checks=checks, probes=probes)
    for check in result["checks"]:
        assert_check_shape(check)
    return result


def test_nemo_rl_uv_run_python_in_the_checkout(world):
    venv_python = make_project_env(world["nemo"])
    datasets = _add_megatron_lm(world["bridge"])
    result = _doctor(_nemo_spec(world), ["run_interpreter", "bridge_import_driver", "mcore_helpers"])
    checks = by_id(result)
    run = checks["run_interpreter"]
    assert run["status"] == "ok", run
    assert "`uv run python`" in run["evidence"] and str(venv_python) in run["evidence"]
    assert f"torch {md.version('torch')}" in run["evidence"] and "vLLM not installed" in run["evidence"]
    assert "the run's `uv run` finds its environment in sync with uv.lock and runs offline" in run["evidence"]
    assert f"megatron.core from {datasets.parent}" in run["evidence"]
    interp = result["interpreter"]
    assert interp["command"] == ["uv", "run", "python"] and interp["executable"] == str(venv_python)
    assert list(interp["packages"]) == [
        "torch",
        "vLLM",
        "Megatron-Core",
        "TransformerEngine",
        "transformers",
        "Ray",
    ]
    assert interp["packages"]["torch"] == md.version("torch") and interp["packages"]["vLLM"] is None
    assert interp["packages"]["transformers"] == md.version("transformers")
    # the doctor never let uv sync: --no-sync --offline for the probe, a dry run for the offline check
    calls = _calls(world["log"])
    runs = [c for c in calls if c["argv"][0] == "run"]
    assert runs and all(c["argv"][1:4] == ["--no-sync", "--offline", "python"] for c in runs)
    assert all(c["cwd"] == str(world["nemo"]) for c in calls)
    assert ["sync", "--dry-run", "--offline"] in [c["argv"] for c in calls]
    assert len(runs) == 1  # probed once, shared by the checks
    # the other flag sets the plan's steps use in the checkout are dry-run too (unit checks: mcore, test)
    assert ["sync", "--dry-run", "--offline", "--extra", "mcore", "--group", "test"] in [
        c["argv"] for c in calls
    ]
    by_steps = {tuple(o["steps"]): o for o in interp["offline_steps"]}
    assert by_steps[("nemo-rl-unit-checks",)]["command"][-4:] == ["--extra", "mcore", "--group", "test"]
    assert by_steps[("nemo-rl-unit-weight-transfer",)]["no_changes"] is True
    assert "`uv run` of nemo-rl-unit-checks" in run["evidence"]
    # the driver import and EXT_SUFFIX come from that interpreter
    driver = checks["bridge_import_driver"]
    assert driver["status"] == "ok", driver
    assert str(venv_python) in driver["evidence"] and str(world["bridge"] / "src") in driver["evidence"]
    assert f"EXT_SUFFIX of the run's interpreter {venv_python}" in checks["mcore_helpers"]["evidence"]


def test_plan_flags_reach_the_offline_check(world):
    """The same uv flags as the run's steps: verl's launcher --frozen --all-packages --extra ..."""
    make_project_env(world["verl"])
    spec = RunSpec(
        framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]), env={"NUM_GPUS": "0"}
    )
    result = _doctor(spec, ["run_interpreter"])
    assert result["checks"][0]["status"] == "ok", result
    launcher = ["--frozen", "--all-packages", "--extra", "vllm", "--extra", "megatron", "--extra", "math"]
    assert result["interpreter"]["command"] == ["uv", "run", *launcher, "python3"]
    argvs = [c["argv"] for c in _calls(world["log"])]
    assert ["sync", "--dry-run", "--offline", *launcher] in argvs
    assert ["run", "--no-sync", "--offline", *launcher, "python3"] == next(a for a in argvs if a[0] == "run")[
        :12
    ]


def test_verl_use_uv_0_probes_python3_on_path(world):
    python3 = world["bin"] / "python3"
    python3.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python3.chmod(0o755)
    spec = RunSpec(
        framework="verl",
        bridge_repo=str(world["bridge"]),
        repo=str(world["verl"]),
        env={"NUM_GPUS": "0", "VERL_USE_UV": "0"},
    )
    result = _doctor(spec, ["run_interpreter", "bridge_import_driver"])
    assert result["interpreter"]["command"] == ["python3"]
    assert result["interpreter"]["executable"] == sys.executable
    assert by_id(result)["run_interpreter"]["status"] == "ok"
    assert by_id(result)["bridge_import_driver"]["status"] == "ok"
    assert not _calls(world["log"])  # uv was not used at all


def test_missing_uv_is_a_finding_not_a_crash(world):
    no_uv = Probes(which=lambda name: None if name == "uv" else shutil.which(name))
    _add_megatron_lm(world["bridge"])
    result = _doctor(_nemo_spec(world), ["run_interpreter", "bridge_import_driver", "mcore_helpers"], no_uv)
    checks = by_id(result)
    assert checks["run_interpreter"]["status"] == "block"
    assert "uv is not on PATH" in checks["run_interpreter"]["evidence"]
    assert result["interpreter"]["status"] == "no_uv" and result["interpreter"]["packages"] == {}
    # the other checks say which interpreter they fell back to
    assert "the console's" in checks["bridge_import_driver"]["evidence"]
    assert "EXT_SUFFIX of the console's" in checks["mcore_helpers"]["evidence"]
    verl = RunSpec(
        framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]), env={"NUM_GPUS": "0"}
    )
    check = by_id(_doctor(verl, ["run_interpreter"], no_uv))["run_interpreter"]
    assert check["status"] == "block" and check["remedy"]["env"] == {"VERL_USE_UV": "0"}


def test_no_environment_yet_is_not_created_by_the_doctor(world):
    check = by_id(_doctor(_nemo_spec(world), ["run_interpreter"]))["run_interpreter"]
    assert check["status"] == "warn", check
    assert "does not exist yet" in check["evidence"]
    assert check["remedy"]["commands"] == [["uv", "sync"]]
    assert not (world["nemo"] / ".venv").exists()
    assert not [c for c in _calls(world["log"]) if c["argv"][0] == "run"]


@pytest.mark.parametrize(
    ("mode", "needle"), [("download", "would download 300"), ("offline_error", "No solution found")]
)
def test_offline_readiness(world, monkeypatch, mode, needle):
    make_project_env(world["nemo"])
    monkeypatch.setenv("FAKE_UV_SYNC", mode)
    check = by_id(_doctor(_nemo_spec(world), ["run_interpreter"]))["run_interpreter"]
    assert check["status"] == "warn", check
    assert needle in check["evidence"]
    assert "network" in check["advice"]


def test_megatron_core_from_elsewhere_is_named(world, monkeypatch):
    make_project_env(world["nemo"])
    decoy = world["tmp"] / "workspace" / "Megatron-LM"
    (decoy / "megatron" / "core").mkdir(parents=True)
    (decoy / "megatron" / "core" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(decoy))
    check = by_id(_doctor(_nemo_spec(world), ["run_interpreter"]))["run_interpreter"]
    assert check["status"] == "warn", check
    assert f"megatron.core from {decoy}" in check["evidence"]


def test_doctor_cli_shows_versions_text_and_json(world):
    import os
    import subprocess

    make_project_env(world["nemo"])
    args = [
        sys.executable,
        "-m",
        "console",
        "doctor",
        "--framework",
        "nemo-rl",
        "--repo",
        str(world["nemo"]),
        "--bridge-repo",
        str(world["bridge"]),
        "--runs-dir",
        str(world["tmp"] / "runs"),
    ]
    text = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ), timeout=170)
    assert "run_interpreter" in text.stdout and f"torch {md.version('torch')}" in text.stdout, text.stderr
    out = subprocess.run([*args, "--json"], capture_output=True, text=True, env=dict(os.environ), timeout=170)
    data = json.loads(out.stdout)
    assert data["interpreter"]["packages"]["Ray"] == md.version("ray")


def test_sync_flags_and_dry_run_parsing():
    assert sync_flags(["uv", "run", "--extra", "mcore", "--group", "test", "--with", "x", "pytest"]) == [
        "--extra",
        "mcore",
        "--group",
        "test",
    ]
    assert sync_flags(["uv", "run", "python"]) == []
    text = (
        "Would use project environment at: .venv\nWould create project environment at: .venv\n"
        "Would download 3 packages\nWould install 4 packages\n + a==1\n"
    )
    assert parse_dry_run(text) == {
        "download": 3,
        "install": 4,
        "uninstall": 0,
        "create": ".venv",
        "no_changes": False,
    }
    assert parse_dry_run("Checked in 0.00ms\nWould make no changes\n")["no_changes"] is True


def test_report_evidence_reads_the_versions_from_doctor_json(world):
    """preflight writes doctor.json with the interpreter block; the report's Evidence shows it next to
    the catalog's verified upstream commits and the run's checkout commits."""
    from console.doctor.preflight import write_doctor_json
    from console.report import render_json, render_markdown
    from tests.test_report import GOOD_METRICS, NEMO_LOGS, make_run, nemo_steps

    venv_python = make_project_env(world["nemo"])
    spec = _nemo_spec(world)
    result = run_doctor(spec, build_plan(spec), checks=["run_interpreter", "repo_state"])
    run = make_run(world["tmp"] / "runs", "nemo-rl", nemo_steps(), NEMO_LOGS, metrics=GOOD_METRICS)
    write_doctor_json(run, result)  # what preflight writes into the run folder
    lines = render_markdown(run).splitlines()
    line = next(x for x in lines if x.startswith("- Run interpreter: "))
    assert f"`uv run python` -> {venv_python}" in line
    assert f"torch {md.version('torch')}" in line and "vLLM not installed" in line and "Ray " in line
    assert lines[lines.index(line) - 1].startswith("- Upstream: catalog verified against upstream nemo-rl ")
    assert render_json(run)["evidence"]["interpreter"] == line.removeprefix("- Run interpreter: ")
    # no interpreter probed (uv missing): said so, not invented
    result["interpreter"] = {
        "command": ["uv", "run", "python"],
        "status": "no_uv",
        "problem": "uv is not on PATH",
        "executable": None,
        "packages": {},
    }
    (run / "doctor.json").write_text(json.dumps(result))
    assert "- Run interpreter: `uv run python` not probed (uv is not on PATH)" in render_markdown(run)


def test_without_a_plan_the_catalog_names_the_command(world):
    """No plan (doctor's fallback): doctor.toml [interpreters], with verl's VERL_USE_UV and ENGINE."""
    verl = RunSpec(framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]))
    got = run_doctor(verl, None, checks=["run_interpreter"])["interpreter"]
    assert got["command"] == [
        "uv",
        "run",
        "--frozen",
        "--all-packages",
        "--extra",
        "vllm",
        "--extra",
        "megatron",
        "--extra",
        "math",
        "python3",
    ]
    assert got["source"].startswith("doctor.toml")
    sglang = RunSpec(
        framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]), env={"ENGINE": "sglang"}
    )
    assert run_doctor(sglang, None, checks=["run_interpreter"])["interpreter"]["command"][5] == "sglang"
    no_uv = RunSpec(
        framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]), env={"VERL_USE_UV": "0"}
    )
    assert run_doctor(no_uv, None, checks=["run_interpreter"])["interpreter"]["command"] == ["python3"]
    trtllm = RunSpec(
        framework="verl", bridge_repo=str(world["bridge"]), repo=str(world["verl"]), env={"ENGINE": "trtllm"}
    )  # the wrapper's launcher covers vllm and sglang only
    assert run_doctor(trtllm, None, checks=["run_interpreter"])["interpreter"]["command"] == ["python3"]
    nemo = run_doctor(_nemo_spec(world), None, checks=["run_interpreter"])["interpreter"]
    assert nemo["command"] == ["uv", "run", "python"] and nemo["cwd"] == str(world["nemo"])
