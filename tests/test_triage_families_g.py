"""Rule families added from the tuning split of ``tests/corpus/cases-g.jsonl`` (issue 12), each on a real
excerpt (``fixtures/triage/real/``, sources in ``real/sources.json``) and against the benign lines of the
same family that must not fire: the Hub unreachable vs a collective's socket, a resume that finds no
checkpoint vs a fresh run's notice, aborted requests in a run that completed, a serving engine's dead loop
vs the CUDA fault that killed it, and a death after the training loop returned.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import REAL, primary, tri, tri_text  # noqa: E402

pytestmark = pytest.mark.timeout(60)
DONE = "Max number of steps has been reached, stopping training early\n"  # a completion marker


def test_unresolvable_hub_host_is_offline_missing_but_not_a_collective_socket(tmp_path: Path) -> None:
    assert primary(tri("hub_host_unresolvable_geneface")) == (
        "Blocked",
        "hf_offline_missing",
        "hub_host_unresolvable",
    )
    nccl = "node1:77:88 [0] NCCL WARN Net : Connect to 10.0.0.2<43385> failed : Network is unreachable\n"
    assert all(f["rule"] != "hub_host_unresolvable" for f in tri_text(tmp_path, nccl)["findings"])


def test_resume_without_a_checkpoint_but_not_a_fresh_start(tmp_path: Path) -> None:
    res = tri("resume_checkpoint_not_found_medicalgpt")
    assert primary(res) == ("Fail", "checkpoint_failure", "resume_checkpoint_not_found")
    fresh = "No checkpoint found at /ckpt/run1, starting training from scratch\n"
    assert tri_text(tmp_path, fresh)["primary"] is None
    # soft: the same line in a run that then completed was not fatal
    done = (REAL / "resume_checkpoint_not_found_medicalgpt.log").read_text() + DONE
    assert tri_text(tmp_path, done)["verdict"] == "Pass"


def test_aborted_requests_count_only_when_the_run_did_not_complete(tmp_path: Path) -> None:
    assert primary(tri("vllm_aborted_requests_under_load"))[:2] == ("Fail", "generation_failure")
    log = (REAL / "vllm_aborted_requests_under_load.log").read_text()
    done = log + DONE
    assert tri_text(tmp_path, done)["verdict"] == "Pass"


def test_dead_engine_loop_yields_to_the_cuda_fault_that_killed_it(tmp_path: Path) -> None:
    assert primary(tri("vllm_detokenize_none_token_h2ogpt"))[1] == "generation_failure"
    text = (
        "ERROR 06-13 02:36:52 async_llm_engine.py:52] Engine background task failed\n"
        "ERROR 06-13 02:36:52 async_llm_engine.py:52] RuntimeError: CUDA error: an illegal memory access was "
        "encountered\n"
    )
    res = tri_text(tmp_path, text)
    assert primary(res)[1] == "cuda_error"
    assert any(f["rule"] == "generation_engine_loop_died" for f in res["findings"])


def test_death_after_the_training_loop_returned_is_a_teardown_crash(tmp_path: Path) -> None:
    summary = "{'train_runtime': 157317.86, 'train_samples_per_second': 0.017, 'train_loss': 0.0149, 'epoch': 0.99}\n"
    assert primary(tri_text(tmp_path, summary + "Segmentation fault (core dumped)\n"))[:2] == (
        "Fail",
        "teardown_crash",
    )
    assert primary(tri_text(tmp_path, "Segmentation fault (core dumped)\n"))[:2] == ("Fail", "unknown_error")


@pytest.mark.parametrize(
    ("name", "cls", "rule"),
    [
        ("deepspeed_batch_size_assert_world_size_one", "config_error", "batch_size_consistency"),
        ("deepspeed_missing_cuda_exception_vixtts", "missing_dependency", "cuda_toolkit_missing_for_build"),
        ("knn_cuda_ninja_required", "missing_dependency", "ninja_missing"),
        ("autograd_anomaly_divbackward", "metric_failure", "autograd_anomaly_nonfinite"),
        ("ray_function_not_imported_properly", "container_venv_mismatch", "ray_worker_import_failed"),
        ("ray_session_name_mismatch_slime", "ray_cluster", "ray_stale_cluster"),
        ("reward_not_implemented_doctoragent", "config_error", "exc_not_implemented_for_data"),
        ("datasets_offline_cache_config_squad", "hf_offline_missing", "exc_dataset_offline_cache_miss"),
    ],
)
def test_family_names_the_cause(name: str, cls: str, rule: str) -> None:
    assert primary(tri(name))[1:] == (cls, rule)
