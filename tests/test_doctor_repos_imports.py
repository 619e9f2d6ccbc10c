"""repo_state and bridge_import_driver against real git checkouts and real interpreters."""

from __future__ import annotations

import shutil

import pytest
from doctor_helpers import assert_check_shape, by_id, clean_env, git, make_bridge, make_git_repo, place_decoy

from console.doctor import run_doctor
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


def _spec(framework: str, bridge, repo, **kw) -> RunSpec:
    return RunSpec(
        framework=framework,
        bridge_repo=str(bridge) if bridge else None,
        repo=str(repo) if repo else None,
        **kw,
    )


def test_repo_state_records_heads_and_dirty_files(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    (bridge / "src" / "megatron" / "bridge" / "__init__.py").write_text("WHERE = 'changed'\n")
    (verl / "new_file.py").write_text("x = 1\n")
    check = by_id(run_doctor(_spec("verl", bridge, verl), checks=["repo_state"]))["repo_state"]
    assert_check_shape(check)
    assert check["status"] == "ok"
    assert git(bridge, "rev-parse", "--short", "HEAD") in check["evidence"]
    assert git(verl, "rev-parse", "--short", "HEAD") in check["evidence"]
    assert "M src/megatron/bridge/__init__.py" in check["evidence"]
    assert "?? new_file.py" in check["evidence"]


def test_repo_state_blocks_on_missing_or_non_git_checkout(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    check = by_id(run_doctor(_spec("verl", plain, None), checks=["repo_state"]))["repo_state"]
    assert check["status"] == "block"
    assert "not a git checkout" in check["advice"]
    assert "--repo or $VERL_REPO" in check["advice"]


def test_nemo_rl_vendored_bridge_differs_then_matches(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    nemo = make_git_repo(tmp_path / "nemo-rl", {"pyproject.toml": "[project]\nname='nemo-rl'\n"})
    vendored = nemo / "3rdparty" / "Megatron-Bridge-workspace" / "Megatron-Bridge"
    make_git_repo(vendored, {"README.md": "an older vendored bridge\n"})
    check = by_id(run_doctor(_spec("nemo-rl", bridge, nemo), checks=["repo_state"]))["repo_state"]
    assert check["status"] == "warn"
    assert "differs from the checkout under test" in check["evidence"]
    # Vendored tree is the checkout under test: a clone at the same commit with the same changes.
    shutil.rmtree(vendored)
    git(vendored.parent, "clone", "-q", str(bridge), vendored.name)
    check = by_id(run_doctor(_spec("nemo-rl", bridge, nemo), checks=["repo_state"]))["repo_state"]
    assert check["status"] == "ok", check
    assert "same commit" in check["evidence"]


def test_driver_import_ok_from_the_checkout_under_test(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    check = by_id(run_doctor(_spec("verl", bridge, verl), checks=["bridge_import_driver"]))[
        "bridge_import_driver"
    ]
    assert_check_shape(check)
    assert check["status"] == "ok", check
    assert str(bridge / "src" / "megatron" / "bridge" / "__init__.py") in check["evidence"]


def test_driver_import_blocks_on_a_decoy_outside_the_checkout(tmp_path, monkeypatch):
    bridge = make_bridge(tmp_path / "Megatron-Bridge", with_package=False)
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    decoy = place_decoy(tmp_path / "site-packages")
    monkeypatch.setenv("PYTHONPATH", str(decoy))  # the shell's PYTHONPATH, appended by the procedure
    check = by_id(run_doctor(_spec("verl", bridge, verl), checks=["bridge_import_driver"]))[
        "bridge_import_driver"
    ]
    assert check["status"] == "block", check
    assert str(decoy / "megatron" / "bridge") in check["evidence"]
    assert "not from" in check["advice"]
    assert check["remedy"]["env"]["PYTHONPATH"].startswith(str(bridge / "src"))


def test_driver_import_blocks_on_module_not_found(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge", with_package=False)
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    check = by_id(run_doctor(_spec("verl", bridge, verl), checks=["bridge_import_driver"]))[
        "bridge_import_driver"
    ]
    assert check["status"] == "block"
    assert "ModuleNotFoundError" in check["evidence"]


def test_driver_import_uses_the_plans_env(tmp_path):
    """When a plan is given, its step env (PYTHONPATH) decides, not the doctor's fallback."""
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    verl = make_git_repo(tmp_path / "verl", {"setup.py": "# verl\n"})
    decoy = place_decoy(tmp_path / "elsewhere")
    plan = {
        "steps": [
            {
                "name": "l0-verl",
                "kind": "train",
                "argv": ["bash", "x.sh"],
                "cwd": str(verl),
                "env": {"PYTHONPATH": f"{decoy}:{bridge}/src"},
                "gpus": 0,
                "unset": [],
            }
        ]
    }
    check = by_id(run_doctor(_spec("verl", bridge, verl), plan, checks=["bridge_import_driver"]))[
        "bridge_import_driver"
    ]
    assert check["status"] == "block"
    assert str(decoy) in check["evidence"]


def test_nemo_rl_vendored_import_is_ok_only_when_it_is_the_checkout(tmp_path):
    bridge = make_bridge(tmp_path / "Megatron-Bridge")
    nemo = make_git_repo(tmp_path / "nemo-rl", {"pyproject.toml": "[project]\nname='nemo-rl'\n"})
    vendored = nemo / "3rdparty" / "Megatron-Bridge-workspace" / "Megatron-Bridge"
    vendored.parent.mkdir(parents=True)
    git(vendored.parent, "clone", "-q", str(bridge), vendored.name)
    spec = _spec("nemo-rl", bridge, nemo, env={"PYTHONPATH": f"{vendored}/src"})
    plan = {
        "steps": [
            {
                "name": "l0",
                "kind": "train",
                "cwd": str(nemo),
                "gpus": 0,
                "env": {"PYTHONPATH": f"{vendored}/src:{bridge}/src"},
            }
        ]
    }
    check = by_id(run_doctor(spec, plan, checks=["bridge_import_driver"]))["bridge_import_driver"]
    assert check["status"] == "ok", check
    assert "vendored" in check["advice"]
    (bridge / "src" / "megatron" / "bridge" / "__init__.py").write_text("WHERE = 'local change'\n")
    check = by_id(run_doctor(spec, plan, checks=["bridge_import_driver"]))["bridge_import_driver"]
    assert check["status"] == "block"
