"""Triage families added with corpus round ad (issue 12), on real excerpts (tuning cases of ``tests/corpus/`` and
fixtures from other public threads) and against near misses that must not fire:

- GPU OOM in other runtimes' words (Julia's "Out of GPU memory", Spark RAPIDS' GpuRetryOOM);
- an epoch table whose loss columns read nan is a metric failure, a printed array of nans is not;
- Kubernetes evicting a pod for its ephemeral storage is a full disk; Lua torch's short reads and writes of a
  model file are a checkpoint failure; llama.cpp's GGUF converters are checkpoint conversion;
- Hub clients outside huggingface_hub (Rust, editor plugins) refused with 401/403 on a huggingface.co URL, and
  transformers' "is not a local folder and is not a" cut by a wrapped line, are a model that is not available;
- a library refusing another's installed version (Keras 3 in Transformers), and jaxlib "newer than and
  incompatible with" jax, are dependency versions;
- a Ray node or driver whose log ends on its first "Unable to connect to GCS" (or "have not registered with
  GCS, so retrying") could not reach the cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("name", "cls", "rule"),
    [
        ("hf_rust_client_status_401", "hf_offline_missing", "hf_http_auth_status"),
        ("hf_request_error_status_401_plugin", "hf_offline_missing", "hf_http_auth_status"),
        ("hf_tokenizer_download_401_unauthorized_for_url", "hf_offline_missing", "hf_http_auth_status"),
        ("transformers_keras3_not_supported", "missing_dependency", "installed_version_unsupported"),
        ("k8s_node_low_ephemeral_storage", "no_space", "k8s_ephemeral_storage_evicted"),
    ],
)
def test_round_ad_families_on_real_fixtures(name: str, cls: str, rule: str) -> None:
    assert_primary(tri(name), "Blocked", cls, rule)


def test_lua_torch_short_write_of_a_checkpoint() -> None:
    assert_primary(tri("torch7_checkpoint_short_write"), "Fail", "checkpoint_failure", "torch7_file_short_io")


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        ("ada-spark-rapids-gpuretryoom-kudo-serializer", "Fail", "cuda_oom"),
        ("ada-cudajl-out-of-gpu-memory-stuck-state", "Fail", "cuda_oom"),
        ("ada-ultralytics-yolo-train-losses-nan", "Fail", "metric_failure"),
        ("adb-ray-start-gcs-behind-http-ingress", "Blocked", "ray_cluster"),
        ("adb-ray-driver-processes-not-registered-with-gcs", "Blocked", "ray_cluster"),
        ("adc-mt3-colab-jaxlib-newer-than-pinned-jax", "Blocked", "missing_dependency"),
        ("adc-transforemotion-reticulate-keras3-tf-roberta-import", "Blocked", "missing_dependency"),
        ("add-gke-gcsfuse-sidecar-ephemeral-limit-evicted", "Blocked", "no_space"),
        ("add-torchbench-node-low-ephemeral-storage-eviction", "Blocked", "no_space"),
        ("add-llamacpp-gguf-deepseek-fp8-weight-scale-inv-unmapped", "Fail", "checkpoint_failure"),
        ("add-waifu2x-t7-read-0-blocks-damaged-copy", "Fail", "checkpoint_failure"),
        ("zc-opennmt-lua-t7-checkpoint-short-write", "Fail", "checkpoint_failure"),
        ("ade-candle-rust-llama2-tokenizer-401", "Blocked", "hf_offline_missing"),
        ("ade-colab-textgen-local-model-folder-missing", "Blocked", "hf_offline_missing"),
    ],
)
def test_round_ad_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


@pytest.mark.parametrize(
    "text",
    [
        # numpy printing an array of nans (statistics of an empty window), pandas' missing values
        "val stats: [       nan        nan        nan        nan]\n"
        "   col_a  col_b  col_c\n0    NaN    NaN    NaN\n",
        # one GCS retry while the node joins, then it works
        "2023-03-18 06:51:17,521 WARNING utils.py:1446 -- Unable to connect to GCS at 10.0.0.1:6379. "
        "Check that (1) Ray GCS with matching version started successfully at the specified address, "
        "and (2) there is no firewall setting preventing access.\n"
        + "".join(f"(train pid=4{i}) step {i} loss 0.{90 - i} lr 1e-5\n" for i in range(1, 9)),
        # a pod spec naming its ephemeral storage, not an eviction
        "    resources:\n      limits:\n        ephemeral-storage: 10Gi\n        nvidia.com/gpu: 8\n",
        # a version report that refuses nothing
        "INFO: the installed version of numpy is 1.26.4 (supported: >=1.22)\n",
        # a Hub download that succeeded
        "Downloading https://huggingface.co/gpt2/resolve/main/config.json: status 200 OK (665 bytes)\n",
    ],
)
def test_round_ad_near_misses_do_not_fire(tmp_path: Path, text: str) -> None:
    assert_no_finding(tri_text(tmp_path, text))
