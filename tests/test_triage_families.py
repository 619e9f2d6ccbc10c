"""Rule families of the triage catalog, each on a real excerpt from the tuning split of the corpus.

The logs are ``fixtures/triage/real/*.log`` (``real/sources.json`` names the source thread and the corpus
case); a few tests add a contrasting line of the same library's wording to show where a family stops.
Every pattern describes a library's message family (as its source prints it), not one case's wording.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import REAL, primary, tri, tri_text  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("name", ["ray_version_mismatch_job", "ray_version_mismatch_runtime_env_pip"])
def test_ray_version_mismatch_is_a_venv_mismatch(name: str) -> None:
    """Ray refuses a driver/job (check_version_info) or a runtime_env pip field that brings another Ray."""
    verdict, cls, rule = primary(tri(name))
    assert (verdict, cls, rule) == ("Blocked", "container_venv_mismatch", "ray_version_mismatch")


def test_ray_version_mismatch_inside_a_tool_report(tmp_path: Path) -> None:
    # the same message quoted inside another tool's JSON report (corpus: a Ray job submission wrapper)
    text = '"stdout_tail": "ray submission failed: RuntimeError: Version mismatch: The cluster was started with:\n'
    verdict, cls, _ = primary(tri_text(tmp_path, text))
    assert (verdict, cls) == ("Blocked", "container_venv_mismatch")


def test_ray_fatal_check_is_a_cluster_failure() -> None:
    verdict, cls, rule = primary(tri("ray_raylet_fatal_check"))
    assert (verdict, cls, rule) == ("Blocked", "ray_cluster", "ray_fatal_check")


def test_ray_fatal_check_after_a_completed_run_is_not_a_failure(tmp_path: Path) -> None:
    # soft: Ray's own shutdown check failure after the run completed does not make it fail
    text = (
        "Max number of steps has been reached, stopping training early\n"
        "[2026-11-21 22:41:02,001 C 123 123] core_worker_process.cc:88: Check failed: !core_worker_process\n"
        "*** StackTrace Information ***\n"
        "/usr/lib/python3/site-packages/ray/_raylet.so(+0x10c7c7a) [0x7f] ray::RayLog::~RayLog()\n"
    )
    assert tri_text(tmp_path, text)["verdict"] == "Pass"


def test_raylet_socket_unreachable_is_a_cluster_failure() -> None:
    verdict, cls, rule = primary(tri("ray_raylet_socket"))
    assert (verdict, cls, rule) == ("Blocked", "ray_cluster", "ray_gcs")


def test_ray_actor_is_dead_message_is_an_actor_death() -> None:
    res = tri("ray_actor_is_dead")
    assert primary(res) == ("Blocked", "ray_cluster", "ray_actor_died")


def test_nccl_watchdog_stuck_is_a_hang_and_a_collective_timeout_stays_nccl(tmp_path: Path) -> None:
    assert primary(tri("nccl_watchdog_stuck")) == ("Fail", "hang", "hang_reported")
    timeout = (
        "[rank2]:[E ProcessGroupNCCL.cpp:754] [Rank 2] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=305, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600381 "
        "milliseconds before timing out.\n"
    )
    assert primary(tri_text(tmp_path, timeout))[1] == "nccl"


def test_libibverbs_warnings_in_a_passing_run_are_not_a_failure(tmp_path: Path) -> None:
    res = tri("pass_libibverbs_warnings")
    assert res["verdict"] in ("Pass", "Incomplete") and res["primary"] is None
    assert [(f["rule"], f.get("transient")) for f in res["findings"]] == [("rdma_verbs_unavailable", True)]
    # the same warning before a death that nothing else explains is kept as the (weak) cause
    log = (REAL / "pass_libibverbs_warnings.log").read_text()
    died = tri_text(tmp_path, log, exit_code=1)
    assert died["verdict"] == "Fail" and died["primary"]["class"] == "nccl"
    assert died["primary"]["confidence"] <= 0.3


def test_nccl_unhandled_system_error_after_any_nccl_prefix() -> None:
    assert primary(tri("nccl_tests_unhandled_system_error")) == ("Fail", "nccl", "nccl_error")


def test_cant_load_from_a_local_dir_is_data_and_from_a_hub_id_is_the_hub() -> None:
    assert primary(tri("tokenizer_local_dir_missing")) == ("Blocked", "data_missing", "data_files_missing")
    assert primary(tri("tokenizer_hub_id_offline")) == (
        "Blocked",
        "hf_offline_missing",
        "hf_gated",
    )


def test_rocm_refusal_naming_hip_instead_of_rocr() -> None:
    assert primary(tri("rocm_hip_instead_of_rocr")) == ("Blocked", "rocr_visible_devices", "rocr_verl_guard")


def test_megatron_namespace_package_is_an_installed_version_not_a_checkout(tmp_path: Path) -> None:
    # the module named (the Megatron stack) decides: bridge_import, whatever package answered to 'megatron'
    assert primary(tri("import_megatron_namespace_package")) == (
        "Blocked",
        "bridge_import",
        "import_name_from_bridge_stack",
    )
    checkout = (
        "ImportError: cannot import name 'ProcessGroupCollection' from 'megatron.core.process_groups_config' "
        "(/opt/megatron-lm/megatron/core/process_groups_config.py)\n"
    )
    assert primary(tri_text(tmp_path, checkout))[1:] == (
        "container_venv_mismatch",
        "megatron_symbol_mismatch",
    )
