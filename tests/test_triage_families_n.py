"""General triage families added with corpus round n (issue 12), on real excerpts from public threads
(``tests/fixtures/triage/real/``, sources.json; tuning cases of ``tests/corpus/``) and against lines of
the same family that must not fire:

- a signature mismatch (``TypeError: X() got an unexpected keyword argument``) raised by a call that an
  installed package made (the deepest frame is under site-packages / dist-packages) is two installed
  versions that disagree: missing_dependency, with config_error as the alternative; the same error from
  the user's own script stays config_error;
- argparse's rejection of a positional argument or subcommand ("prog: error: argument command: invalid
  choice: ...") is the rejected command line, as the rejected options already were;
- the native stack of a crash ("Segfault encountered" and its frames) inside torch.save's zip writer
  (PyTorchStreamWriter) is a checkpoint failure, and that banner is a fatal signal death;
- vLLM waiting again and again for a placement group Ray cannot create is the cluster lacking resources
  (ray_cluster), not a hang of unknown cause.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri, tri_text, tuning_case

USER_CALL = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/dpo.py", line 3, in <module>\n'
    "    cfg = DPOConfig(output_dir='out', ref_model_init_kwargs={})\n"
    "TypeError: DPOConfig.__init__() got an unexpected keyword argument 'ref_model_init_kwargs'\n"
)


def test_a_signature_mismatch_made_by_an_installed_package_is_a_version_mismatch(tmp_path: Path) -> None:
    for name in ("signature_mismatch_installed_caller_chatlm", "signature_mismatch_installed_caller_llava"):
        res = tri(name)
        assert primary(res) == ("Blocked", "missing_dependency", "exc_signature_mismatch+library_caller"), (
            name
        )
        assert "config_error" in [a["class"] for a in res["alternatives"]], name
    # a library CLI calling another library (TRL's vllm-serve building vLLM's EngineArgs)
    res = tri_text(tmp_path, tuning_case("n-trl-vllm-serve-engineargs-worker-extension-cls"))
    assert primary(res)[1] == "missing_dependency"


def test_the_same_mismatch_from_the_users_script_is_a_config_error(tmp_path: Path) -> None:
    res = tri_text(tmp_path, USER_CALL)
    assert primary(res) == ("Blocked", "config_error", "exc_signature_mismatch")
    # a frame of an installed package higher up the stack does not count: the failing call is the user's
    above = USER_CALL.replace(
        '  File "/home/me/dpo.py"',
        '  File "/usr/lib/python3/dist-packages/runpy.py", line 1, in run\n    run()\n  File "/home/me/dpo.py"',
    )
    assert primary(tri_text(tmp_path, above))[1] == "config_error"


def test_argparse_rejecting_a_subcommand_is_the_rejected_command_line(tmp_path: Path) -> None:
    assert primary(tri("argparse_invalid_subcommand_az")) == (
        "Blocked",
        "config_error",
        "launcher_rejected_arguments",
    )
    res = tri_text(tmp_path, tuning_case("n-trl-cli-vllm-serve-invalid-choice-old-trl"))
    assert primary(res) == ("Blocked", "config_error", "launcher_rejected_arguments")
    # prose that quotes the words is not an argparse error line
    prose = "INFO tip: the error: argument parsing is strict, see --help\n"
    assert tri_text(tmp_path, prose)["primary"] is None


def test_a_native_crash_in_torch_saves_writer_is_a_checkpoint_failure(tmp_path: Path) -> None:
    for case_id in (
        "g-ckpt-swift-megatron-save-optimizer-segfault-crc32",
        "n-bridge-gb200-dsv3-ckpt-save-crc32-segfault",
    ):
        res = tri_text(tmp_path, tuning_case(case_id))
        assert primary(res)[:2] == ("Fail", "checkpoint_failure"), case_id
    # the banner alone is a signal death with no cause named
    res = tri_text(tmp_path, "!!!!!!! Segfault encountered !!!!!!!\n")
    assert res["verdict"] == "Fail"
    assert any(f["rule"] == "fatal_signal" for f in res["findings"]) or primary(res)[1] == "unknown_error"


def test_vllm_waiting_for_a_placement_group_is_a_cluster_without_the_resources(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("n-aibrix-vllm-ray-placement-group-wait"))
    assert primary(res) == ("Blocked", "ray_cluster", "ray_resources_pending")
    # a wait, and then the run went on and completed: a warning, no failure
    once = tuning_case("n-aibrix-vllm-ray-placement-group-wait").splitlines()[0] + "\n"
    res = tri_text(tmp_path, once + "Max number of steps has been reached, stopping training early\n")
    assert res["verdict"] == "Pass", res["primary"]


def test_an_inf_loss_in_a_metric_table_is_a_metric_failure_a_nan_one_is_not(tmp_path: Path) -> None:
    # Dreamer's "model_loss inf / value_loss 5.0 / ..." after its grad norm went nan: a diverged run
    res = tri_text(tmp_path, tuning_case("k-metric-dreamer-model-grad-norm-nan-inf-losses"))
    assert primary(res) == ("Fail", "metric_failure", "nan_inf_metric")
    # rlpyt's and stable-baselines' tables print nan for a statistic whose window is still empty
    for name in ("metric_table_nan_empty_window_rlpyt", "metric_table_nan_empty_window_sb_ppo2"):
        res = tri(name)
        assert res["verdict"] not in ("Fail", "Blocked") and res["primary"] is None, name
    # the colon form still counts a nan loss
    assert primary(tri_text(tmp_path, "step 12 | loss: nan | lr: 1e-5\n"))[1] == "metric_failure"


def test_a_bare_missing_file_line_names_data_only_for_a_data_file(tmp_path: Path) -> None:
    # a paste of the error alone: "[Errno 2] No such file or directory: '../dataset/.../x_train.json'"
    res = tri_text(tmp_path, tuning_case("m-dpt-t2i-refall-json-missing"))
    assert primary(res) == ("Blocked", "data_missing", "data_files_missing")
    assert (
        primary(tri_text(tmp_path, "[Errno 2] No such file or directory: 'data/train.jsonl'\n"))[1]
        == "data_missing"
    )
    # a model's or trainer's own .json is no dataset
    for own in (
        "outputs/run1/trainer_state.json",
        "/models/llama/tokenizer_config.json",
        "ckpt/model.safetensors.index.json",
    ):
        res = tri_text(tmp_path, f"[Errno 2] No such file or directory: '{own}'\n")
        assert primary(res)[1] != "data_missing", own


def test_an_exception_logged_at_error_level_is_an_exception_line(tmp_path: Path) -> None:
    # logger.exception()/error() records whose message is "Type: message", pasted without the frames:
    # vLLM's "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d]", DeepSpeed's, logging's default
    for line in (
        "(EngineCore_DP0 pid=11) ERROR 03-02 10:11:12 [core.py:700] RuntimeError: Worker failed with error 'x'",
        "[2024-05-01 10:00:00,123] [ERROR] [engine.py:12:step] RuntimeError: the step failed",
        "ERROR:root:RuntimeError: the step failed",
    ):
        res = tri_text(tmp_path, line + "\n")
        assert primary(res)[:2] == ("Fail", "unknown_error"), line
        assert "RuntimeError" in res["primary"]["evidence"], line
    # a logged error that is no exception line, and a warning category, stay what they were
    for line in (
        "ERROR 04-10 03:53:16 [launcher.py:34] Error while stopping the server: it was not running",
        "WARNING 03-02 10:11:12 [utils.py:10] UserWarning: TypedStorage is deprecated",
    ):
        assert tri_text(tmp_path, line + "\n")["verdict"] != "Fail", line


def test_a_compiled_op_missing_from_torch_ops_is_a_dependency_mismatch(tmp_path: Path) -> None:
    for name in ("custom_ops_missing_vllm_silu_docext", "custom_ops_missing_vllm_rms_norm_line"):
        assert primary(tri(name)) == ("Blocked", "missing_dependency", "exc_custom_op_missing"), name
    # another object lacking an attribute is not one
    other = "AttributeError: 'Qwen2Model' object has no attribute 'rotary_emb'\n"
    assert primary(tri_text(tmp_path, other))[2] != "exc_custom_op_missing"


def test_a_repeated_warning_head_still_covers_the_line_after_it(tmp_path: Path) -> None:
    # repeated lines are counted from memory (no traceback open): a warning's head read that way must still
    # make the next line part of its message, and a remembered line must not skip that check
    head = "/venv/lib/python3.10/site-packages/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:\n"
    msg = "No module named 'vllm._version'\n"
    other = "step 1 done\n"
    text = head + other + head + msg + other + head + msg + head + msg
    res = tri_text(tmp_path, text)
    (f,) = [f for f in res["findings"] if f["class"] == "missing_dependency"]
    assert f["rule"].endswith("+in_warning") and f["transient"] and f["count"] == 3, f
    assert res["verdict"] not in ("Fail", "Blocked"), res["primary"]
    # the same message line after a line that is no warning's head is a failure of its own
    res = tri_text(tmp_path, text + other + msg)
    assert primary(res)[:2] == ("Blocked", "missing_dependency")
