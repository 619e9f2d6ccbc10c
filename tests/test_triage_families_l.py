"""General triage families added with corpus round l (issue 12), on real excerpts from public threads
(``tests/fixtures/triage/real/``, sources.json) and against lines of the same family that must not fire:

- a line that goes on with a Python warning's message (the warnings module prints "<file>:<n>:
  <Category>Warning: <message>", a message with newlines over the next lines, then the source line) is
  part of the warning: what it names (vLLM's "Failed to read commit hash:" / "No module named
  'vllm._version'") counts as a cause only if the run then dies with nothing else to explain it;
- torch's per-parameter "size mismatch for <name>: copying a param with shape ..." lines, pasted without
  the exception line above them, are a checkpoint that does not fit the model.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri, tri_text

WARNING = (
    "/venv/lib/python3.10/site-packages/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:\n"
    "No module named 'vllm._version'\n"
    "  from vllm.version import __version__ as VLLM_VERSION\n"
)


def test_a_warnings_message_is_not_a_failure() -> None:
    for name in ("warning_message_no_module_vllm_version", "warning_message_no_module_ray_prefix"):
        res = tri(name)
        assert res["verdict"] not in ("Fail", "Blocked"), name
        assert res["primary"] is None, name
        (f,) = res["findings"]
        assert f["transient"] and f["rule"].endswith("+in_warning"), name


def test_the_same_words_outside_a_warning_still_count(tmp_path: Path) -> None:
    # the exception line of a failed import
    crash = (
        "Traceback (most recent call last):\n"
        '  File "/app/serve.py", line 3, in <module>\n'
        "    import vllm._version\n"
        "ModuleNotFoundError: No module named 'vllm._version'\n"
    )
    assert primary(tri_text(tmp_path, crash))[:2] == ("Blocked", "missing_dependency")
    # a bare line two lines below a warning's head is not its message
    later = WARNING + "No module named 'flash_attn'\n"
    assert primary(tri_text(tmp_path, later))[:2] == ("Blocked", "missing_dependency")
    # a process's warning does not cover the next line of another process
    other = (
        "(pid=11) /venv/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:\n"
        "(pid=12) No module named 'flash_attn'\n"
    )
    assert primary(tri_text(tmp_path, other))[:2] == ("Blocked", "missing_dependency")


def test_a_warned_module_explains_a_death_nothing_else_explains(tmp_path: Path) -> None:
    died = WARNING + "Segmentation fault (core dumped)\n"
    res = tri_text(tmp_path, died, exit_code=139)
    assert res["verdict"] in ("Fail", "Blocked")
    assert any(f["rule"].endswith("+in_warning") for f in res["findings"])


def test_state_dict_shape_mismatch_lines_are_a_checkpoint_failure(tmp_path: Path) -> None:
    for name in ("state_dict_shape_mismatch_t5_vocab", "state_dict_shape_mismatch_gpt_tabbed"):
        assert primary(tri(name)) == ("Fail", "checkpoint_failure", "state_dict_shape_mismatch"), name
    # transformers' notice for weights it re-initialised on purpose (ignore_mismatched_sizes) is not one
    notice = (
        "Some weights of BertForSequenceClassification were not initialized from the model checkpoint at "
        "bert-base-uncased and are newly initialized because the shapes did not match:\n"
        "- classifier.weight: found shape torch.Size([2, 768]) in the checkpoint and torch.Size([5, 768]) "
        "in the model instantiated\n"
    )
    assert primary(tri_text(tmp_path, notice))[1] != "checkpoint_failure"


def test_a_process_group_that_came_up_is_no_stall(tmp_path: Path) -> None:
    joined = (
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
        "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
        "All distributed processes registered. Starting with 2 processes\n"
    )
    assert tri_text(tmp_path, joined)["primary"] is None
    # DeepSpeed's record of every init_distributed call says nothing about where the run is
    record = (
        "[WARNING] [comm.py:152:init_deepspeed_backend] NCCL backend in DeepSpeed not yet implemented\n"
        " [INFO] [comm.py:594:init_distributed] cdb=None\n"
    )
    assert tri_text(tmp_path, record)["primary"] is None


def test_a_death_after_the_training_loop_returned_is_a_teardown_crash(tmp_path: Path) -> None:
    """Lightning's and verl's own closing lines (upstream strings) end the training loop: a death after
    one of them is a teardown crash, before it an unexplained crash."""
    death = "Segmentation fault (core dumped)\n"
    for done in (
        "`Trainer.fit` stopped: `max_epochs=5` reached.\n",
        "INFO:lightning.pytorch.utilities.rank_zero:`Trainer.fit` stopped: `max_steps=100` reached.\n",
        "(TaskRunner pid=2211) Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': 0.71}\n",
    ):
        assert primary(tri_text(tmp_path, "Epoch 4: 100%\n" + done + death, exit_code=139))[:2] == (
            "Fail",
            "teardown_crash",
        ), done
    assert primary(tri_text(tmp_path, "Epoch 4: 100%\n" + death, exit_code=139))[1] != "teardown_crash"


def test_a_cut_traceback_is_read_from_the_raise_in_its_last_frame(tmp_path: Path) -> None:
    from tests.triage_helpers import REAL

    lines = (REAL / "hf_entry_not_found_tgi_download.log").read_text().splitlines()
    cut = "\n".join(lines[:7]) + "\n"  # the paste stops at "    raise EntryNotFoundError("
    assert lines[6].strip() == "raise EntryNotFoundError("
    res = tri_text(tmp_path, cut)
    assert primary(res) == ("Blocked", "hf_offline_missing", "exc_hf_missing+raised_in_cut_traceback")
    assert res["primary"]["confidence"] <= 0.5
    # a bare re-raise names nothing: the traceback stays unterminated
    reraise = 'Traceback (most recent call last):\n  File "/app/x.py", line 3, in f\n    raise\n'
    assert primary(tri_text(tmp_path, reraise))[2] == "traceback:unterminated"


def test_hf_argument_parser_rejecting_options_is_a_config_error() -> None:
    for name in ("hfargparser_unused_args_deepspeed", "hfargparser_unused_args_renamed_option"):
        assert primary(tri(name)) == ("Blocked", "config_error", "launcher_rejected_arguments"), name


def test_interleaved_tracebacks_of_an_indented_paste_keep_their_exception(tmp_path: Path) -> None:
    """Two processes' tracebacks interleaved (multiprocessing children stopped by one Ctrl-C), pasted
    indented under a line that is not: the second header opens a traceback as deeply indented as the
    first, so its exception line is read (a user cancel, not an unterminated traceback)."""
    two = (
        "Traceback (most recent call last):\n"
        '  File "/venv/multiprocessing/process.py", line 314, in _bootstrap\n'
        "    self.run()\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/sglang/srt/managers/scheduler.py", line 872, in recv_requests\n'
        "    recv_reqs = broadcast_pyobj(\n"
        "KeyboardInterrupt\n"
    )
    pasted = "Process Process-3:\n" + "".join(" " + line for line in two.splitlines(keepends=True))
    assert primary(tri_text(tmp_path, pasted))[:2] == ("Cancelled", "cancelled")
    assert primary(tri_text(tmp_path, two))[:2] == ("Cancelled", "cancelled")


def test_agent_loop_errors_are_generation_errors(tmp_path: Path) -> None:
    """verl's agent loop logs each sample whose tool call it cannot parse and goes on (two threads of the
    corpus: verl#7177, verl#5668): generation errors, not an unknown failure."""
    lines = (
        "(AgentLoopWorker pid=2278825) ERROR:2026-03-19 11:19:08,800:Failed to decode tool call: "
        "Invalid \\escape: line 2 column 146 (char 146)\n"
    ) * 3
    res = tri_text(tmp_path, lines)
    assert res["findings"] and res["findings"][0]["class"] == "generation_failure"
