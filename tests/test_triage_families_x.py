"""Triage families and mechanisms added with corpus round x (issue 12), on real excerpts (tuning cases of
``tests/corpus/`` and fixtures from other public threads) and against near misses that must not fire:

- a failed CUDA/HIP graph API call (or PyTorch's CUDAGraph:: named in an error) is a graph crash, and so is
  a stream-capture status check ("capturing blocking stream", cudaStreamCaptureStatusInvalidated);
- driver-level OOM codes (CUDA_ERROR_OUT_OF_MEMORY from numba) and XLA's "Resource exhausted: Failed to
  allocate" are GPU OOMs;
- a NaN reported in past tense ("Loss was NaN", "hit nan") and torch.normal refusing a NaN std are metric
  failures; a cut traceback whose last frame raises with such a message is read through the line rules;
- a KeyError (or any error) raised where the deepest frame loads a state dict or indexes a loaded
  checkpoint is a checkpoint failure; so is a shard-consolidation function;
- an installed package whose own code runs but whose name does not import is the wrong interpreter;
  runpy's "Error while finding module specification" from the system interpreter likewise;
- mpirun --tag-output tags inside a line (one rank's write split by another's) are dropped before reading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("name", "verdict", "cls", "rule"),
    [
        ("ckpt_load_state_dict_keyerror_reid", "Fail", "checkpoint_failure", "frames_checkpoint_source"),
        ("ckpt_state_dict_keyerror_selfcure", "Fail", "checkpoint_failure", "frames_checkpoint_source"),
        ("tcnn_cuda_graph_exec_update_failed", "Fail", "cuda_graph_crash", "cuda_graph_api_failure"),
        ("torch_stream_capture_status_invalidated", "Fail", "cuda_graph_crash", "cuda_graph_capture_error"),
    ],
)
def test_round_x_families_on_real_fixtures(name: str, verdict: str, cls: str, rule: str) -> None:
    assert primary(tri(name)) == (verdict, cls, rule)


@pytest.mark.parametrize(
    ("case", "verdict", "cls", "rule"),
    [
        ("xa-torchtrt-replay-before-instantiate", "Fail", "cuda_graph_crash", "cuda_graph_api_failure"),
        ("xa-xla-rocm-hip-graph-launch-fails", "Fail", "cuda_graph_crash", "cuda_graph_api_failure"),
        ("xa-torch-graphed-callables-legacy-stream", "Fail", "cuda_graph_crash", None),
        ("xa-dask-cuda-numba-cumemalloc-oom", "Fail", "cuda_oom", None),
        ("xa-mesh-jax-resource-exhausted-ordinal", "Fail", "cuda_oom", None),
        ("xb-mjlab-ppo-log-std-nan-normal-std", "Fail", "metric_failure", None),
        (
            "xb-ranger21-hit-nan-variance-normalized",
            "Fail",
            "metric_failure",
            "nan_inf_metric+raised_in_cut_traceback",
        ),
        ("xe-sfa3d-resume-keyerror-optimizer", "Fail", "checkpoint_failure", "frames_checkpoint_source"),
        ("xe-alpa-opt66b-consolidate-shards-keyerror-metadata", "Fail", "checkpoint_failure", None),
        ("xb-deepspeed-mpi-prefixed-comm-aborted", "Fail", "nccl", None),
    ],
)
def test_round_x_families_on_tuning_cases(
    tmp_path: Path, case: str, verdict: str, cls: str, rule: str | None
) -> None:
    assert_primary(tri_text(tmp_path, tuning_case(case)), verdict, cls, rule)


def test_the_wrong_interpreter_for_an_installed_package_or_a_module_run(tmp_path: Path) -> None:
    # TorchServe's worker runs site-packages/ts/... yet cannot import ts: another interpreter runs that file
    res = tri_text(tmp_path, tuning_case("xd-torchserve-model-worker-venv-missing-site-packages"))
    assert primary(res) == ("Blocked", "container_venv_mismatch", "import_own_package")
    assert "missing_dependency" in [a["class"] for a in res["alternatives"]]
    # runpy's message when the system interpreter runs `python -m torch.distributed.run`
    res = tri_text(tmp_path, tuning_case("xd-te-rocm-test-subprocess-resolved-system-python-no-torch"))
    assert primary(res) == ("Blocked", "container_venv_mismatch", "import_system_interpreter")
    # near misses: a submodule missing from an installed package is that package's version (a dependency),
    # and another package missing from inside one is a dependency too
    for missing in ("vllm._C", "flash_attn"):
        text = (
            "Traceback (most recent call last):\n"
            '  File "/opt/env/lib/python3.10/site-packages/vllm/__init__.py", line 3, in <module>\n'
            f"    import {missing}\n"
            f"ModuleNotFoundError: No module named '{missing}'\n"
        )
        assert primary(tri_text(tmp_path, text))[1] == "missing_dependency", missing


def test_near_misses_of_the_round_x_families(tmp_path: Path) -> None:
    # TensorFlow's "Graph execution error" is its op graph, not a CUDA graph
    text = "tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:\n"
    assert primary(tri_text(tmp_path, text))[1] != "cuda_graph_crash"
    # a KeyError in code that reads a config dict, not a checkpoint
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 10, in <module>\n'
        "    lr = cfg['optimizer']['lr']\n"
        "KeyError: 'lr'\n"
    )
    assert primary(tri_text(tmp_path, text))[1] != "checkpoint_failure"
    # a healthy metric line that says NaN checks passed, and a loss that went to a number
    ok = "INFO step 10: loss went to 0.52, no NaN found in grads\n"
    assert primary(tri_text(tmp_path, ok))[0] == "Incomplete"
    # the leading mpirun tag is kept as the rank's prefix; only inner ones go
    from console.triage.engine import drop_inner_mpi_tags

    assert drop_inner_mpi_tags("[1,3]<stderr>:Error[1,3]<stderr>:: x") == "[1,3]<stderr>:Error: x"
