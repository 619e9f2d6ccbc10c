"""Rule families added from the tuning split of ``tests/corpus/cases-e.jsonl`` (Ray, vLLM, SGLang,
PyTorch, NCCL, DeepSpeed, TRL threads), each on a real excerpt.

The logs are ``fixtures/triage/real/*.log`` (``real/sources.json`` names the source thread and the corpus
case); contrasting lines are other real lines of the same library's message family. Every pattern
describes how the library prints the message (NCCL's net_ib, PyTorch's c10d socket, torch's
cpp_extension), not one case's wording.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import REAL, primary, tri, tri_text  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def test_ib_completion_error_is_the_cause_of_the_later_cuda_failure() -> None:
    # nccl-tests over GPUDirect RDMA: "NET/IB : Got completion with error 12" on both nodes, then a CUDA
    # illegal-access WARN on one rank; the network error (first, a cause) is the primary, not the CUDA fault
    res = tri("nccl_ib_completion_then_cuda_failure")
    assert primary(res) == ("Fail", "nccl", "nccl_ib_completion_error")
    assert any(f["class"] == "cuda_error" for f in res["findings"])  # still listed, as a consequence
    assert res["primary"]["line"] < min(f["line"] for f in res["findings"] if f["class"] == "cuda_error")


def test_ib_completion_error_newer_wording_from_peer_with_status(tmp_path: Path) -> None:
    # the IB plugin / newer net_ib print the peer and "status=" (corpus, cases-a tuning: nccl issue 1405)
    text = (
        "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
        "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
        "fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f\n"
        "kp-ddp-worker-0:3468:3905 [4] NCCL INFO transport/net.cc:1302 -> 6\n"
    )
    assert primary(tri_text(tmp_path, text)) == ("Fail", "nccl", "nccl_ib_completion_error")


def test_c10d_store_connect_timeout_is_a_rendezvous_failure() -> None:
    # TRL GRPO with `trl vllm-serve`: the server answers /health, but the trainer's weight-sync group never
    # reaches the server's TCPStore; the uvicorn "Press CTRL+C to quit" banner is not a cancel
    res = tri("c10d_store_connect_timeout_trl_vllm_server")
    assert primary(res) == ("Fail", "nccl", "c10d_store_connect_timeout")
    assert "rendezvous" in res["primary"]["advice"]


def test_c10d_store_connect_timeout_older_seconds_wording(tmp_path: Path) -> None:
    # torchrun's elastic rendezvous on older builds prints the timeout in seconds
    text = "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234\n"
    assert primary(tri_text(tmp_path, text))[1:] == ("nccl", "c10d_store_connect_timeout")


def test_c10d_connect_retry_in_a_run_that_completed_is_not_a_failure(tmp_path: Path) -> None:
    # soft: c10d logs the same line while it retries; a run that then completed did connect
    log = (REAL / "c10d_store_connect_timeout_trl_vllm_server.log").read_text()
    text = log + "Max number of steps has been reached, stopping training early\n"
    assert tri_text(tmp_path, text)["verdict"] == "Pass"


def test_jit_extension_ninja_failure_is_a_missing_dependency() -> None:
    # DeepSpeed's FusedAdam JIT build: CalledProcessError from ninja, re-raised as the deepspeed traceback
    res = tri("deepspeed_fused_adam_ninja_failed")
    assert primary(res) == ("Blocked", "missing_dependency", "jit_extension_build_failed")
    assert "toolkit" in res["primary"]["advice"]


def test_ninja_with_parallel_jobs_flag_is_the_same_family(tmp_path: Path) -> None:
    # torch passes "-j N" when MAX_JOBS is set: the command list is longer, the family the same
    text = "subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '8']' returned non-zero exit status 1.\n"
    assert primary(tri_text(tmp_path, text))[1:] == ("missing_dependency", "jit_extension_build_failed")


def test_ray_exception_of_the_ray_module_is_a_cluster_failure() -> None:
    # ray.exceptions.ObjectStoreFullError has no rule of its own: the exception's module names the class
    res = tri("ray_object_store_full")
    assert primary(res) == ("Blocked", "ray_cluster", "exc_module_ray")


def test_ray_client_check_failure_is_attributed_to_ray() -> None:
    # glog "Check failed" aborts of the Ray client with only raylet context: the component names Ray. (The
    # thread says the user pressed Ctrl-C; nothing in these lines says so, so triage cannot call it a cancel.)
    res = tri("ray_client_check_failed_raylet_closed")
    assert primary(res)[:2] == ("Blocked", "ray_cluster")
    assert res["primary"]["rule"].startswith("component:")
