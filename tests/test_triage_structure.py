"""The engine decides from structure (issue 12, Build 2), shown on real excerpts.

Every log under ``fixtures/triage/real/`` is an excerpt as pasted in a public issue thread, copied
from the tuning split of the project corpus, from the shared corpus, or from another public thread found
with the issues search (never a held-out one); ``real/sources.json`` gives its source URL and corpus id.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.triage.engine import TriageEngine
from console.triage.metricwatch import MetricWatch
from console.triage.scan import triage_files

pytestmark = pytest.mark.timeout(60)

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import REAL, tri, tuning_case  # noqa: E402

SOURCES = json.loads((REAL / "sources.json").read_text())


def test_every_real_fixture_cites_its_source() -> None:
    logs = {p.stem for p in REAL.glob("*.log")}
    assert logs == set(SOURCES)
    for meta in SOURCES.values():
        assert meta["source_url"].startswith("https://github.com/")
        assert meta["corpus_id"]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_real_fixture(name: str) -> None:
    meta = SOURCES[name]
    res = tri(name, meta.get("exit_code"))
    primary = res["primary"] or {}
    assert res["verdict"] == meta["verdict"], (res["verdict"], primary, meta["source_url"])
    assert primary.get("class") == meta["class"], (primary, meta["source_url"])
    for f in res["findings"]:  # every finding carries a confidence and the lines it used
        assert 0.0 < f["confidence"] <= 1.0 and f["lines"] and f["line"] in f["lines"]
    if primary:
        assert 0.0 < primary["confidence"] <= 1.0 and primary["lines"]


# --- fatal tier -------------------------------------------------------------------------------


def test_fatal_tier_is_never_incomplete() -> None:
    # "exits with return code = -9" (DeepSpeed launcher), an uncaught traceback, a SIGSEGV
    for name in ("fatal_rc_minus9", "fatal_uncaught_exception", "fatal_sigsegv"):
        res = tri(name)
        assert res["verdict"] == "Fail" and res["primary"]["class"] == "unknown_error", name
        assert "first traceback" in res["primary"]["advice"]  # generic next steps


def test_unknown_error_evidence_is_the_deepest_causal_exception(tmp_path: Path) -> None:
    # the cause printed first, then "The above exception was the direct cause": evidence is the first
    text = (REAL / "extension_build_ninja.log").read_text()
    res = tri("extension_build_ninja")
    assert res["primary"]["class"] == "missing_dependency"  # the build line names the cause
    # without the build lines the deepest exception (the ninja failure, printed first) is the evidence; its
    # own family (jit_extension_build_failed) names it, not the RuntimeError raised from it
    body = text[text.index("Traceback") :]
    p = tmp_path / "x.log"
    p.write_text(body)
    res = triage_files([p])
    assert res["primary"]["class"] == "missing_dependency"
    assert "CalledProcessError" in res["primary"]["evidence"]


def test_hydra_error_executing_job_is_fatal(tmp_path: Path) -> None:
    p = tmp_path / "h.log"
    p.write_text(
        "[2026-08-01 10:00:00,000][HYDRA] Launching 1 jobs locally\nError executing job with overrides: "
        "['trainer.n_gpus_per_node=8']\n"
    )
    res = triage_files([p])
    assert res["verdict"] == "Fail" and res["primary"]["rule"] == "fatal:fatal_hydra_job"


def test_exit_code_zero_ignores_fatal_looking_lines() -> None:
    assert tri("fatal_sigsegv", exit_code=0)["verdict"] in ("Incomplete", "Pass")


# --- wrapped root cause ----------------------------------------------------------------------


def test_wrapped_exceptions_name_the_inner_type(tmp_path: Path) -> None:
    assert tri("wrapped_dist_backend")["primary"]["class"] == "nccl"  # RayTaskError(DistBackendError)
    assert tri("wrapped_actor_died")["primary"]["class"] == "ray_cluster"  # RayTaskError(ActorDiedError)
    # an OOM inside RayTaskError whose message was cut: the wrapped type decides
    p = tmp_path / "w.log"
    p.write_text(
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronPolicyWorker.train() "
        "(pid=1, ip=10.0.0.1, actor_id=ab)\n"
    )
    assert triage_files([p])["primary"]["class"] == "cuda_oom"


def test_torch_save_write_failure_is_no_space() -> None:
    res = tri("torch_save_write_failed")
    assert res["primary"]["class"] == "no_space" and "PytorchStreamWriter" in res["primary"]["evidence"]


# --- imports ---------------------------------------------------------------------------------


def test_the_module_and_the_process_decide_an_import_failure() -> None:
    assert tri("import_bridge_megatron_training")["primary"]["class"] == "bridge_import"
    res = tri("import_ray_worker_other_python")  # frames of ray/workers/default_worker.py
    assert res["primary"]["class"] == "container_venv_mismatch"
    assert {a["class"] for a in res["alternatives"]} == {"missing_dependency"}
    assert tri("import_ray_actor_no_vllm")["primary"]["class"] == "container_venv_mismatch"
    assert tri("import_flash_attn_missing")["primary"]["class"] == "missing_dependency"


def test_worker_venv_path_is_a_venv_mismatch(tmp_path: Path) -> None:
    p = tmp_path / "v.log"
    p.write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/ray_venvs/nemo_rl.models.policy.workers.MegatronPolicyWorker/lib/python3.12/'
        'site-packages/x.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'megatron.bridge'\n"
    )
    assert triage_files([p])["primary"]["class"] == "container_venv_mismatch"


# --- metrics ---------------------------------------------------------------------------------


def test_metric_anomalies_from_log_lines() -> None:
    res = tri("metric_loss_nan_every_log")
    assert res["primary"]["class"] == "metric_failure" and res["primary"]["lines"] == [10, 11]
    assert tri("metric_nan_grad_norm_assert")["primary"]["class"] == "metric_failure"
    assert tri("metric_loss_scale_minimum")["primary"]["class"] == "metric_failure"
    assert tri("metric_pass_grad_norm_lines")["primary"] is None  # healthy verl metric lines
    # grad norms of 1e12+ from the first report (no history to compare with) vs one spike that recovers
    res = tri("grad_norm_explodes_from_start_hf_dict")
    assert (res["verdict"], res["primary"]["class"], res["primary"]["line"]) == ("Fail", "metric_failure", 1)
    assert res["primary"]["rule"] == "metrics:grad_norm_exploding"
    assert tri("grad_norm_one_spike_then_normal_mmengine")["primary"] is None


def test_metric_watch_grad_norm_needs_consecutive_steps() -> None:
    # verl's metric line format, from the real passing excerpt, with the grad norm values changed
    line = "step:{s} - actor/entropy:0.43 - actor/pg_loss:-0.01 - actor/grad_norm:{g} - critic/score/mean:{r}"
    w = MetricWatch()
    assert w.feed(1, line.format(s=1, g="nan", r=0.5)) == []  # one skipped fp16 step is routine
    assert w.feed(2, line.format(s=2, g="0.9", r=0.5)) == []
    assert w.feed(3, line.format(s=3, g="nan", r=0.5)) == []
    out = w.feed(4, line.format(s=4, g="inf", r=0.5))
    assert [(a.kind, a.step, a.lines) for a in out] == [("grad_norm_nonfinite", 3, [3, 4])]
    w = MetricWatch()
    for i, g in enumerate(["1.1", "0.9", "1.0", "1.2", "5400.0", "8100.0"], 1):
        out = w.feed(i, line.format(s=i, g=g, r=0.5))
    assert [a.kind for a in out] == ["grad_norm_exploding"]
    w = MetricWatch()
    rewards = ["0.1", "0.4", "0.6", "0.5", "0.55", "0.6", "0.62", "0.0", "0.01", "0.0", "0.02", "0.0"]
    found = []
    for i, r in enumerate(rewards, 1):
        found += w.feed(i, line.format(s=i, g="1.0", r=r))
    assert [(a.kind, a.step) for a in found] == [("reward_collapse", 8)]
    w = MetricWatch()  # one lucky batch in a run that never learned is not a collapse
    noisy = ["0.01", "0.0", "0.67", "0.02", "0.0", "0.01", "0.0", "0.0", "0.01", "0.0", "0.0"]
    assert [a for i, r in enumerate(noisy, 1) for a in w.feed(i, line.format(s=i, g="1.0", r=r))] == []


# --- CUDA context ----------------------------------------------------------------------------


def test_cuda_fault_with_and_without_graph_context() -> None:
    res = tri("cuda_ima_no_graph")
    assert res["primary"]["class"] == "cuda_error"
    assert "CUDA_LAUNCH_BLOCKING=1" in res["primary"]["advice"]
    assert res["primary"]["remedy"]["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert tri("cuda_ima_graph_frames")["primary"]["class"] == "cuda_graph_crash"
    res = tri("cuda_ima_graph_context_after")  # the graph file is named after the fault
    assert res["primary"]["class"] == "cuda_graph_crash"
    assert [a["class"] for a in res["alternatives"]] == ["cuda_error"]


# --- soft transients ---------------------------------------------------------------------------


def test_retried_429_matters_only_when_the_run_fails() -> None:
    res = tri("hf_429_retried")
    assert res["verdict"] == "Incomplete" and res["primary"] is None
    assert any(f["class"] == "hf_rate_limit" and f.get("transient") for f in res["findings"])
    assert tri("hf_429_retried", exit_code=1)["primary"]["class"] == "hf_rate_limit"


def test_nccl_warn_and_helpers_build_are_noise_in_a_passing_run(tmp_path: Path) -> None:
    nemo_pass = (Path(__file__).parent / "fixtures" / "triage" / "nemo_pass.log").read_text()
    # NCCL's warning that it cannot open the RDMA verbs library, in a run that then trained over sockets
    # (tuning case h-pass-nccl-libibverbs-missing-socket-fallback; NCCL's "Duplicate GPU detected" WARN is not
    # one of these: NCCL returns ncclInvalidUsage right after it)
    warn = [
        ln
        for ln in tuning_case("h-pass-nccl-libibverbs-missing-socket-fallback").splitlines()
        if "NCCL WARN" in ln
    ]
    # Megatron's datasets Makefile build line (reference/upstream-check-2026-08.md section 6)
    build = (
        "g++ -O3 -Wall -shared -std=c++11 -fPIC -fdiagnostics-color -I/usr/include/python3.11 "
        "helpers.cpp -o helpers_cpp.cpython-311-x86_64-linux-gnu.so"
    )
    p = tmp_path / "pass.log"
    p.write_text("\n".join([build, *warn]) + "\n" + nemo_pass)
    res = triage_files([p], exit_code=0)
    assert res["verdict"] == "Pass" and res["primary"] is None
    assert {f["class"] for f in res["findings"] if f.get("transient")} == {"nccl", "missing_dependency"}
    q = tmp_path / "died.log"
    q.write_text("\n".join([build, *warn]) + "\n")
    assert triage_files([q], exit_code=1)["primary"]["class"] in ("nccl", "missing_dependency")
    assert tri("nccl_warn_then_error")["primary"]["rule"] == "nccl_error"  # the real error, not the WARN


# --- cancel ----------------------------------------------------------------------------------


def test_user_cancel_is_cancelled_never_fail() -> None:
    for name in (
        "cancel_sigkill_handler",
        "cancel_sigint_logged",
        "cancel_ctrl_c_echo",
        "cancel_keyboard_interrupt",
    ):
        res = tri(name)
        assert res["verdict"] == "Cancelled" and res["primary"]["class"] == "cancelled", name


def test_console_cancel_event_and_exit_code() -> None:
    eng = TriageEngine("nemo-rl")
    eng.feed(1, "========================= Step 1/2 =========================")
    eng.feed(2, "RuntimeError: stopped")
    eng.note_cancel()
    res = eng.result(exit_code=130)
    assert res["verdict"] == "Cancelled" and res["primary"]["rule"] == "console_cancel"
    p = subprocess.run(
        [sys.executable, "-m", "console", "triage", str(REAL / "cancel_ctrl_c_echo.log")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 130 and "Verdict: Cancelled" in p.stdout


def test_a_cause_before_the_cancel_keeps_its_class(tmp_path: Path) -> None:
    oom = (REAL / "torch_save_write_failed.log").read_text()
    p = tmp_path / "c.log"
    p.write_text(oom + "^CTraceback (most recent call last):\nKeyboardInterrupt\n")
    assert triage_files([p])["primary"]["class"] == "no_space"


# --- confidence, lines, alternatives ----------------------------------------------------------


def test_competing_classes_are_reported() -> None:
    res = tri("import_ray_worker_other_python")
    assert res["alternatives"] and res["alternatives"][0]["class"] == "missing_dependency"
    p = subprocess.run(
        [sys.executable, "-m", "console", "triage", str(REAL / "import_ray_worker_other_python.log")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "likely container_venv_mismatch" in p.stdout
    assert "also consistent with missing_dependency" in p.stdout


def test_live_feed_equals_file_scan_on_real_excerpts() -> None:
    for name in (
        "cuda_ima_graph_context_after",
        "import_ray_actor_no_vllm",
        "metric_loss_nan_every_log",
        "cancel_sigkill_handler",
        "hf_429_retried",
    ):
        path = REAL / f"{name}.log"
        eng = TriageEngine("unknown")
        for i, line in enumerate(path.read_text().split("\n"), 1):
            eng.feed(i, line)
        assert eng.result()["primary"] == triage_files([path])["primary"], name


# --- last resort: the component an error line names --------------------------------------------


def test_error_line_names_its_component_before_unknown_error(tmp_path: Path) -> None:
    # synthetic lines (no rule literal in them): an error-level line, then an unnamed exception
    p = tmp_path / "c.log"
    p.write_text(
        "2026-08-01 10:00:00,000 ERROR trainer.py:88 -- all_reduce on rank 3 aborted after 600 s\n"
        "Traceback (most recent call last):\n"
        '  File "/x/train.py", line 3, in <module>\n'
        "ValueError: bad shape\n"
    )
    res = triage_files([p])
    assert res["primary"]["class"] == "nccl" and res["primary"]["rule"] == "component:comp_collective"
    assert res["primary"]["confidence"] < 0.5
    assert "unknown_error" in {a["class"] for a in res["alternatives"]}
    q = tmp_path / "d.log"
    q.write_text("ValueError: bad shape\n")  # no component, no rule: unknown_error
    assert triage_files([q])["primary"]["class"] == "unknown_error"


def test_console_cancel_of_a_step_is_cancelled_in_the_run_verdict(tmp_path: Path) -> None:
    from console.triage.verdict import run_verdict

    (tmp_path / "logs").mkdir()
    # the log of a step the console cancelled: the SIGTERM'd process printed an unrecognised traceback
    (tmp_path / "logs" / "01-train.log").write_text(
        'Traceback (most recent call last):\n  File "/x/train.py", line 3, in <module>\n'
        "RuntimeError: DataLoader worker (pid 4242) exited unexpectedly\n"
    )
    (tmp_path / "spec.json").write_text(json.dumps({"framework": "demo"}))
    (tmp_path / "plan.json").write_text(
        json.dumps({"steps": [{"name": "train", "kind": "train", "deliverable": "framework_run"}]})
    )
    (tmp_path / "state.json").write_text(
        json.dumps(
            {
                "status": "cancelled",
                "steps": [
                    {"name": "train", "status": "cancelled", "exit_code": -15, "log": "logs/01-train.log"}
                ],
            }
        )
    )
    res = run_verdict(tmp_path)
    assert res["verdict"] == "Cancelled"
    assert res["steps"]["train"]["verdict"] == "Cancelled"
    assert res["steps"]["train"]["primary"]["class"] == "cancelled"


# --- generalisation (issue 12, second round): structure over literals ---------------------------


def _tri_text(tmp_path: Path, text: str, exit_code: int | None = None) -> dict:
    p = tmp_path / "g.log"
    p.write_text(text)
    return triage_files([p], exit_code=exit_code)


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        # the module of an exception type no entry names gives its area (library wording, not a corpus case)
        ("ray.exceptions.RuntimeEnvSetupError: Failed to set up runtime environment.", "ray_cluster"),
        ("ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.", "ray_cluster"),
        (
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
            "nccl",
        ),
        (
            "datasets.exceptions.DataFilesNotFoundError: No (supported) data files found in org/name",
            "data_missing",
        ),
        (
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
            "'namespace/repo_name': '/data/models/x'.",
            "hf_offline_missing",
        ),
        # wrappers and Hub server errors say nothing about the area: unknown_error
        (
            "huggingface_hub.errors.HfHubHTTPError: 500 Server Error: Internal Server Error for url: x",
            "unknown_error",
        ),
        ("ray.exceptions.RayTaskError: ray::Worker.run() (pid=1, ip=10.0.0.1)", "unknown_error"),
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "unknown_error"),
    ],
)
def test_exception_module_names_its_area(tmp_path: Path, line: str, cls: str) -> None:
    res = _tri_text(
        tmp_path,
        'Traceback (most recent call last):\n  File "/x/train.py", line 3, in <module>\n' + line + "\n",
    )
    assert res["primary"]["class"] == cls, res["primary"]


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/root/data/gsm8k/train.parquet'",
            "data_missing",
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: 'examples/configs/grpo_math_8B.yaml'",
            "catalog_drift",
        ),
        ("/bin/bash: line 1: /workspace/scripts/run_local.sh: No such file or directory", "catalog_drift"),
        (
            "python: can't open file '/opt/repo/examples/run_grpo_math.py': [Errno 2] No such file or directory",
            "catalog_drift",
        ),
        (
            "Cannot find primary config 'grpo_trainer_v2'. Check that it's in your config search path.",
            "catalog_drift",
        ),
        ("In 'config': Could not find 'algo/ppo_v2'", "catalog_drift"),
        # container start-up noise, not a step of the run: no finding
        ("bash: /opt/conda/etc/profile.d/conda.sh: No such file or directory", None),
        ("ERROR: Could not find 'ninja'", None),
    ],
)
def test_a_missing_path_is_data_or_drift_by_its_shape(tmp_path: Path, line: str, cls: str | None) -> None:
    assert (_tri_text(tmp_path, line + "\n")["primary"] or {}).get("class") == cls


def test_rocm_visible_devices_context_names_an_unexplained_crash(tmp_path: Path) -> None:
    crash = (
        "Traceback (most recent call last):\n"
        '  File "/x/a.py", line 111, in <module>\n'
        "    ray.get(actor.ping.remote())\n"
    )
    res = _tri_text(tmp_path, "(GPUActor pid=1) ROCR_VISIBLE_DEVICES: 0,1\n" + crash)
    assert res["primary"]["class"] == "rocr_visible_devices" and res["verdict"] == "Blocked"
    assert _tri_text(tmp_path, crash)["primary"]["class"] == "unknown_error"  # no ROCm context: unnamed
    named = _tri_text(tmp_path, "HIP_VISIBLE_DEVICES=0\ntorch.OutOfMemoryError: CUDA out of memory.\n")
    assert named["primary"]["class"] == "cuda_oom"  # a named cause keeps its class


def test_training_loop_finished_makes_a_death_a_teardown_crash_never_a_pass(tmp_path: Path) -> None:
    done = (
        "Train epoch [3/3]:  88%|████▊ | 7/8 [00:13<00:01,  1.83s/it, act_loss=0.795]\n"
        "Train epoch [3/3]: 100%|██████| 8/8 [00:15<00:00,  1.85s/it, act_loss=-0.722]\n"
    )
    crash = 'Traceback (most recent call last):\n  File "/x/runpy.py", line 196, in _run_module_as_main\n'
    res = _tri_text(tmp_path, done + crash)
    assert res["primary"]["class"] == "teardown_crash" and res["verdict"] == "Fail"
    assert _tri_text(tmp_path, done)["verdict"] == "Incomplete"  # finished the loop, exit not seen: no Pass
    early = "Train epoch [2/3]: 100%|██████| 8/8 [00:15<00:00,  1.85s/it]\n"  # not the last epoch
    assert _tri_text(tmp_path, early + crash)["primary"]["class"] == "unknown_error"


def test_check_metrics_measured_value_against_threshold(tmp_path: Path) -> None:
    res = _tri_text(
        tmp_path,
        '| `grpo_topp_topk` | ❌ fail | max(data["train/token_mult_prob_error"]) < 1.06 '
        "(measured 1.078). |\n",
    )
    assert res["primary"]["class"] == "metric_failure"
    ok = _tri_text(
        tmp_path, '| `grpo_topp_topk` | ✅ pass | max(data["train/token_mult_prob_error"]) < 1.06 |\n'
    )
    assert ok["primary"] is None


def test_fp16_loss_scale_collapse_is_a_metric_failure_early_skips_are_not(tmp_path: Path) -> None:
    skip = "[INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
    early = "".join(f"{skip}Attempted loss scale: {2**k}, reducing to {2 ** (k - 1)}\n" for k in (16, 15, 14))
    assert _tri_text(tmp_path, early)["primary"] is None
    stuck = "".join(f"{skip}Attempted loss scale: 1, reducing to 1\n" for _ in range(3))
    assert _tri_text(tmp_path, stuck)["primary"]["class"] == "metric_failure"
