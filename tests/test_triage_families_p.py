"""General triage families added with corpus round p (issue 12), on real excerpts (tuning cases of
``tests/corpus/``) and against lines of the same family that must not fire:

- a KeyError whose key is a parameter's dotted name ('lm_head.weight') is a weight missing from the
  checkpoint being loaded or converted;
- a bare "AssertionError" line (Python's line for an assert without a message, a traceback pasted without
  its frames) is a death, never Incomplete;
- the rollout's HTTP calls to its generation server failing (a 5xx in the server's access log for a
  generate/completions request, or the client's "Client error '422 ...' for url '.../generate'") is a
  generation failure, the weakest evidence of it;
- SGLang's capture-failure advice ("disable cuda graph by --disable-cuda-graph") names a CUDA-graph crash
  even when the excerpt holds only that advice;
- a traceback cut inside an import chain (the deepest frame is module-level code running an import) is a
  failed import;
- an unexplained exception whose message asks for a setting ("must be specified", "should be in [...]")
  is a config error;
- (rounds q and r) a rank that timed out waiting on the TCPStore / a c10d socket is an NCCL failure; a Hub
  429 next to a model-not-available error is the rate limit; sampling from inf/NaN probabilities is a metric
  failure; a checkpoint call named by a Ray task (ray::W.save_checkpoint()), a loader frame
  (load_from_checkpoint) or the message ("Saving ... failed") is a checkpoint failure; the driver's "A worker
  died" warning explains a run that then died; a finished log whose last grad-norm report turned NaN is a
  metric failure.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri_text, tuning_case


def test_a_key_error_on_a_parameter_name_is_a_checkpoint_that_does_not_fit(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("pc-lmdeploy-internvl2-awq-turbomind-keyerror-w1"))
    assert primary(res) == ("Fail", "checkpoint_failure", "exc_state_dict_key")
    assert "unknown_error" in [a["class"] for a in res["alternatives"]]
    assert primary(tri_text(tmp_path, "KeyError: 'model.embed_tokens.weight'\n"))[1] == "checkpoint_failure"
    # a KeyError on a config key or a class name is no checkpoint
    for key in ("'DecoderLayer'", "'learning_rate'", "'model.name'"):
        assert primary(tri_text(tmp_path, f"KeyError: {key}\n"))[1] != "checkpoint_failure", key


def test_a_bare_assertion_error_is_a_death(tmp_path: Path) -> None:
    # Python's line for an assert without a message, pasted without the traceback's frames
    res = tri_text(tmp_path, tuning_case("pa-verl-model-merger-dtensor-assert"))
    assert res["verdict"] == "Fail" and res["primary"]["class"] == "unknown_error"
    filler = "".join(f"step {i} loading shard\n" for i in range(300))  # past framework detection
    prefixed = filler + "(WorkerDict pid=12)     assert x is not None\n(WorkerDict pid=12) AssertionError\n"
    assert tri_text(tmp_path, prefixed)["verdict"] == "Fail"
    # another exception's bare name is no exception line (a word in a table, a list of types)
    assert tri_text(tmp_path, filler + "ValueError\n")["verdict"] == "Incomplete"


def test_failed_http_calls_to_the_generation_server_are_a_generation_failure(tmp_path: Path) -> None:
    for case in (
        "pb-slime-sglang-500-after-rollout",
        "pb-slime-abort-request-422",
        "pb-slime-sglang-403-max-retries",
    ):
        res = tri_text(tmp_path, tuning_case(case))
        assert primary(res) == ("Fail", "generation_failure", "generation_http_errors"), case
    # a 4xx of a download, or a 5xx of another endpoint, is not the rollout's server
    hub = "Client error '404 Not Found' for url 'https://huggingface.co/api/models/x/y'\n"
    assert primary(tri_text(tmp_path, hub))[2] != "generation_http_errors"
    health = 'INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
    assert primary(tri_text(tmp_path, health))[2] != "generation_http_errors"
    # soft and tier 2: a named cause in the same log wins
    text = (
        tuning_case("pb-slime-sglang-500-after-rollout") + "\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    )
    assert primary(tri_text(tmp_path, text))[1] == "cuda_oom"


def test_sglang_capture_advice_alone_names_a_cuda_graph_crash(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("pc-sglang-deepep-normal-mode-cuda-graph-unsupported"))
    assert primary(res)[:2] == ("Fail", "cuda_graph_crash")
    # a launch line that passes the flag is no crash
    assert (
        tri_text(tmp_path, "python -m sglang.launch_server --disable-cuda-graph --tp 2\n")["primary"] is None
    )


def test_an_exception_that_asks_for_a_setting(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("pb-mm-pretrain-tokenizer-path-missing"))
    assert primary(res)[:2] == ("Blocked", "config_error")
    res = tri_text(tmp_path, tuning_case("pc-lmdeploy-convert-model-format-assert"))
    assert primary(res)[:2] == ("Blocked", "config_error")
    # a message that asks for nothing stays unexplained
    assert primary(tri_text(tmp_path, "AssertionError: shapes differ: 3 vs 4\n"))[1] == "unknown_error"


def test_a_traceback_cut_inside_an_import_chain_is_a_failed_import(tmp_path: Path) -> None:
    # the deepest frame is module-level code running an import statement, the exception below the cut
    res = tri_text(tmp_path, tuning_case("o-missingdep-megatron-no-te-import-chain"))
    assert primary(res) == ("Blocked", "missing_dependency", "frames_cut_in_import_chain")
    # module-level code doing something else (ray's "global_worker = Worker()") is not an import chain
    other = (
        "Traceback (most recent call last):\n"
        '  File "<stdin>", line 1, in <module>\n'
        '  File "/env/lib/python3.11/site-packages/ray/_private/worker.py", line 1273, in <module>\n'
        "    global_worker = Worker()\n"
    )
    assert primary(tri_text(tmp_path, other))[2] != "frames_cut_in_import_chain"
    # a weak guess (tier 2): a named cause in the same log wins
    amd = "HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0,1 python\n"
    res = tri_text(tmp_path, amd + tuning_case("o-missingdep-megatron-no-te-import-chain"))
    assert primary(res)[1] == "rocr_visible_devices"
    # an import chain whose exception line was pasted is read from that line, not guessed
    done = (
        tuning_case("o-missingdep-megatron-no-te-import-chain")
        + "\nModuleNotFoundError: No module named 'x'\n"
    )
    assert primary(tri_text(tmp_path, done))[2] != "frames_cut_in_import_chain"


def test_an_exception_while_building_megatrons_sharded_state_dict_is_a_checkpoint_failure(
    tmp_path: Path,
) -> None:
    # sharded_state_dict is built only to save or load a distributed checkpoint
    res = tri_text(tmp_path, tuning_case("qa-slime-distopt-save-shape-assert"))
    assert primary(res) == ("Fail", "checkpoint_failure", "frames_checkpoint")


def test_a_rank_that_timed_out_waiting_on_the_store_is_an_nccl_failure(tmp_path: Path) -> None:
    # c10d's socket warning in a weight-sync group (o tuning), and ProcessGroupNCCL's store->get of the NCCL id
    # (kaito-project/kaito#135, fixtures/triage/c10d_store_get_socket_timeout.log)
    res = tri_text(tmp_path, tuning_case("o-hang-msswift-grpo-vlm-vllm-socket-timeout-300s"))
    assert primary(res) == ("Fail", "nccl", "c10d_store_wait_timeout")
    fixture = Path(__file__).parent / "fixtures" / "triage" / "c10d_store_get_socket_timeout.log"
    assert primary(tri_text(tmp_path, fixture.read_text())) == ("Fail", "nccl", "c10d_store_wait_timeout")
    # the same socket line that did not time out says nothing
    ok = "[c10d] waitForInput: socket SocketImpl(fd=3) ready\nstep 1/10 loss=0.5\n"
    assert tri_text(tmp_path, ok)["primary"] is None


def test_a_hub_429_next_to_a_model_not_available_error_is_the_rate_limit(tmp_path: Path) -> None:
    # transformers surfaces a 429 on config.json as "We couldn't connect to 'https://huggingface.co/'"
    res = tri_text(tmp_path, tuning_case("o-hfrate-transformers-429-config-json"))
    assert primary(res)[:2] == ("Blocked", "hf_rate_limit")
    assert "context:hub_429" in primary(res)[2]
    assert "hf_offline_missing" in [a["class"] for a in res["alternatives"]]
    # a gated repo's 401 far (60 lines) from an earlier 429 is not read as that 429
    retried = "429 Client Error: Too Many Requests for url: https://huggingface.co/a/b/resolve/main/x.json\n"
    filler = "".join(f"step {i} loss=0.5\n" for i in range(60))
    gated = "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/c/d\n"
    res = tri_text(tmp_path, retried + filler + gated)
    late = [f for f in res["findings"] if f["line"] == 62]
    assert late and late[0]["class"] == "hf_offline_missing" and "context:" not in late[0]["rule"]


def test_sampling_from_non_finite_probabilities_is_a_metric_failure(tmp_path: Path) -> None:
    # torch.multinomial's message, from vLLM's sampler (r tuning) and an RL script's generate (MedicalGPT#121)
    res = tri_text(tmp_path, tuning_case("rc-vllm-tiny-top-p-temperature-nan-probability"))
    assert primary(res) == ("Fail", "metric_failure", "sampling_probabilities_nonfinite")
    fixture = Path(__file__).parent / "fixtures" / "triage" / "sampling_probability_nan_rl_generate.log"
    assert primary(tri_text(tmp_path, fixture.read_text()))[1] == "metric_failure"


def test_checkpoint_calls_named_by_a_ray_task_a_loader_or_the_message(tmp_path: Path) -> None:
    for case_id in (
        "rb-nemorl-gemma4-save-checkpoint-valueerror",  # RayTaskError(ValueError): ray::Worker.save_checkpoint()
        "ra-nemo-mlm-ckpt-to-nemo-keyerror-model",  # KeyError raised in load_from_checkpoint
        "rd-unsloth-merged-save-lora-count-mismatch-vision",  # "Saving LoRA finetune failed since ..."
    ):
        assert primary(tri_text(tmp_path, tuning_case(case_id)))[:2] == ("Fail", "checkpoint_failure"), (
            case_id
        )
    # another Ray task's ValueError, and a failure that saves nothing, are not checkpoints
    other = "ray.exceptions.RayTaskError(ValueError): ray::Worker.generate() (pid=1, ip=10.0.0.1)\nValueError: bad shape\n"
    assert primary(tri_text(tmp_path, other))[1] != "checkpoint_failure"
    assert (
        primary(tri_text(tmp_path, "RuntimeError: loading the tokenizer failed\n"))[1] != "checkpoint_failure"
    )


def test_the_drivers_worker_died_warning_explains_a_run_that_then_died(tmp_path: Path) -> None:
    # Ray retries the task: alone in a run that completed it is noise (fixtures/triage/noise_worker_died_warning)
    res = tri_text(tmp_path, tuning_case("rc-ray-worker-killed-system-error-after-task-retries"))
    assert primary(res) == ("Blocked", "ray_cluster", "ray_worker_died_warning")
    warning = "2023-10-09 23:04:29,519\tWARNING worker.py:2058 -- A worker died or was killed while executing a task by an unexpected system error.\n"
    assert tri_text(tmp_path, warning + "step 2/2 done\n")["verdict"] != "Blocked"  # the run went on


def test_a_finished_log_whose_last_grad_norm_turned_nan_is_a_metric_failure(tmp_path: Path) -> None:
    for case_id in (
        "pd-swift-qwen25vl-zero2-gradnorm-nan-step2",  # ms-swift's dict lines: 6.08, then nan
        "rd-swift-minicpmv-grad-norm-nan-midrun",  # JSON lines at step 8280: 4.17, then NaN
    ):
        res = tri_text(tmp_path, tuning_case(case_id))
        assert primary(res) == ("Fail", "metric_failure", "metrics:grad_norm_nonfinite_last"), case_id
        assert res["primary"]["confidence"] < 0.5  # the other reading (a log cut mid-run) is said
    # one NaN report that the run got past (fp16 loss scaling skips such steps) is no failure
    went_on = (
        "{'loss': 2.1, 'grad_norm': 6.0}\n{'loss': 2.0, 'grad_norm': nan}\n{'loss': 1.9, 'grad_norm': 5.0}\n"
    )
    assert tri_text(tmp_path, went_on)["primary"] is None
    # nor is a log that starts at NaN with no finite report before it to turn from
    assert tri_text(tmp_path, "{'loss': 2.0, 'grad_norm': nan}\n")["primary"] is None
