"""Triage families added with corpus round ae (issue 12), on real excerpts (tuning cases of ``tests/corpus/``) and
against near misses that must not fire:

- GPU OOM in Theano's, CuPy's and Metal's words;
- apex amp's loss scale halved down to nothing is a metric failure, its routine early reductions are not;
- the shell not finding an environment's entry point (torchrun, autotrain) is the wrong environment, a quoted
  command line that is not one program is not this;
- torch failing to write a /dev/shm tensor file is a full /dev/shm.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("name", "cls", "rule"),
    [
        ("sudo_torchrun_not_found", "container_venv_mismatch", "env_entry_point_not_on_path"),
        ("torch_shm_file_write_docker", "no_space", "torch_shm_file_write_failed"),
    ],
)
def test_round_ae_families_on_real_fixtures(name: str, cls: str, rule: str) -> None:
    assert_primary(tri(name), "Blocked", cls, rule)


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        ("aea-theano-keras-cnmem-status-out-of-memory-mlnet", "Fail", "cuda_oom"),
        ("aea-koboldcpp-metal-kiogpu-command-buffer-oom-m4", "Fail", "cuda_oom"),
        ("aea-chainer-cupy-out-of-memory-allocating-so-far", "Fail", "cuda_oom"),
        ("aea-apex-amp-o1-gradient-overflow-loss-scale-collapse", "Fail", "metric_failure"),
        ("ta-autotrain-container-conda-env-not-activated", "Blocked", "container_venv_mismatch"),
        # apex's routine reductions while a run trains on (loss scale 32768) stay noise
        ("za-uniter-horovod-nan-inf-warning-overflow-trains", "Incomplete", None),
    ],
)
def test_round_ae_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str | None) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


@pytest.mark.parametrize(
    "text",
    [
        # the usual fp16 warm-up: the scale settles far above 1
        "".join(
            f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {2.0**k}\n"
            for k in range(16, 12, -1)
        )
        + "".join(f"step {i} loss 2.{40 - i} lr 1e-4\n" for i in range(8)),
        # a help text naming the tools, and a missing optional tool that is not an env entry point
        "hint: torchrun is not found in PATH? use python -m torch.distributed.run\n"
        "/bin/sh: 1: nvidia-smi-extra: not found\n",
        # a CuPy memory pool report, not a failure
        "cupy memory pool: used 3,635,267,072 bytes, total 4,294,967,296 bytes\n",
    ],
)
def test_round_ae_near_misses_do_not_fire(tmp_path: Path, text: str) -> None:
    assert_no_finding(tri_text(tmp_path, text))


def test_a_quoted_command_line_is_no_entry_point(tmp_path: Path) -> None:
    # "/bin/sh: 1: python script.py: not found": a quoted entrypoint (one word that is no program), not a tool
    # missing from the environment's PATH
    got = primary(tri_text(tmp_path, tuning_case("o-config-ray-job-submit-quoted-entrypoint")))
    assert got[1] != "container_venv_mismatch", got


def test_colab_linked_frames_and_the_ipython_arrow_line(tmp_path: Path) -> None:
    # Colab's frames, "[/usr/.../migration.py](https://localhost:8080/#) in f(checkpoint)", are frames; the
    # deepest one's running line (the arrow) reads a key of the loaded checkpoint
    got = primary(tri_text(tmp_path, tuning_case("aad-lightning-migration-global-step-colab")))
    assert got[:2] == ("Fail", "checkpoint_failure"), got
    # the arrow line, not the context printed above it, is the frame's source: a context line that reads the
    # checkpoint does not make a KeyError raised elsewhere a checkpoint failure
    text = (
        "KeyError                                  Traceback (most recent call last)\n"
        "[/content/train.py](https://localhost:8080/#) in build(cfg)\n"
        "     40     state = ckpt['model']\n"
        "---> 41     width = cfg['width']\n"
        "     42     return Model(width)\n"
        "\n"
        "KeyError: 'width'\n"
    )
    assert primary(tri_text(tmp_path, text))[1] != "checkpoint_failure"
