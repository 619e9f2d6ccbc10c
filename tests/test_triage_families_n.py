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
