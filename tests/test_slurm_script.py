"""Slurm launcher pieces that need no cluster: output parsers, state meanings, script generation."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.errors import SpecError
from console.runs.slurm import gpu, scheduler, states
from console.runs.slurm.script import choose_mode, generic_word, render
from console.spec import RunSpec, SlurmOptions

pytestmark = pytest.mark.timeout(60)


def test_parsers_read_real_slurm_output_shapes() -> None:
    assert scheduler.parse_sbatch_parsable("1234;cluster\n") == "1234"
    with pytest.raises(scheduler.SlurmError):
        scheduler.parse_sbatch_parsable("sbatch: error: nope\n")
    rec = scheduler.parse_squeue("77|PENDING|PartitionTimeLimit||2\n")
    assert rec is not None and (rec.state, rec.reason, rec.nodes, rec.num_nodes) == (
        "PENDING",
        "PartitionTimeLimit",
        [],
        2,
    )
    rec = scheduler.parse_squeue("78|RUNNING|None|gpu[01-02,7]|3\n")
    assert rec is not None and rec.reason is None and rec.nodes == ["gpu01", "gpu02", "gpu7"]
    kv = (
        "JobId=9 JobName=x JobState=NODE_FAIL Reason=NodeDown Dependency=(null) Restarts=0 "
        "ExitCode=0:9 NodeList=vm NumNodes=1 Command=/a b/c.sh WorkDir=/w"
    )
    rec = scheduler.parse_scontrol_job(kv)
    assert rec is not None and (rec.state, rec.reason, rec.exit_code, rec.signal, rec.nodes) == (
        "NODE_FAIL",
        "NodeDown",
        0,
        9,
        ["vm"],
    )
    assert scheduler.parse_scontrol_kv(kv)["Command"] == "/a b/c.sh"
    out = "12|FAILED|7:0|None|n1|1\n12|CANCELLED by 0|0:15|None|n2|1\n12.batch|CANCELLED|0:15||n2|1\n"
    rec = scheduler.parse_sacct(out, "12")
    assert rec is not None and (rec.state, rec.exit_code, rec.signal) == ("CANCELLED", 0, 15)
    assert scheduler.base_state("CANCELLED+") == "CANCELLED"


def test_state_meanings_follow_the_documented_choice() -> None:
    assert states.meaning("COMPLETED").verdict == "steps"
    for s in ("FAILED", "TIMEOUT", "OUT_OF_MEMORY"):
        assert states.meaning(s).verdict == "Fail"
    for s in ("NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "DEADLINE"):
        assert states.meaning(s).verdict == "Blocked"
    assert states.meaning("CANCELLED").verdict == "Cancelled"
    assert states.meaning("PENDING").phase == "queued" and states.meaning("RUNNING").phase == "active"
    assert states.never_runs("PartitionTimeLimit") and not states.never_runs("Resources")
    assert not states.never_runs(None) and not states.never_runs("Priority")


def test_gpu_sample_parsers() -> None:
    out = "0, NVIDIA H100, GPU-a, 1000, 81559, 50\n1, NVIDIA H100, GPU-b, 2000, 81559, 0\n0, H100, GPU-c, 5, 80, 1\n"
    devs = gpu.parse_nvidia_smi_csv(out)
    assert [d["uuid"] for d in devs] == ["GPU-a", "GPU-b", "GPU-c"]
    assert devs[2]["mem_total"] == 80 * 2**20
    prom = (
        "# HELP ray_node_gram_used x\n"
        'ray_node_gram_used{GpuDeviceName="NVIDIA H100",GpuIndex="0",ip="10.0.0.5"} 40960.0\n'
        'ray_node_gram_available{GpuDeviceName="NVIDIA H100",GpuIndex="0",ip="10.0.0.5"} 40960.0\n'
        'ray_node_gpus_utilization{GpuDeviceName="NVIDIA H100",GpuIndex="0",ip="10.0.0.5"} 93.0\n'
        'ray_node_mem_used{ip="10.0.0.5"} 1.0\n'
    )
    devs = gpu.parse_ray_prometheus(prom)["10.0.0.5"]
    assert devs == [
        {
            "index": 0,
            "name": "NVIDIA H100",
            "uuid": None,
            "mem_used": 40 * 2**30,
            "mem_total": 80 * 2**30,
            "util": 93.0,
            "procs": [],
        }
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40),
    st.sampled_from(["", "/r/run", "x/r/run", "/r/run/", "/r/runx"]),
)
def test_generic_word_is_one_safe_shell_word(tail: str, head: str) -> None:
    text = head + tail
    roots = {"RUN_DIR": "/r/run", "BRIDGE_REPO": "/b"}
    word = generic_word(text, roots)
    out = subprocess.run(
        ["bash", "-c", f"RUN_DIR=/r/run BRIDGE_REPO=/b; printf %s {word}"], capture_output=True, check=True
    ).stdout
    assert out.decode("utf-8") == text


def _spec(tmp_path: Path, **kw: object) -> RunSpec:
    repo = tmp_path / "nemo-rl"
    repo.mkdir(exist_ok=True)
    (repo / "ray.sub").write_text("#!/bin/bash\n")
    return RunSpec(
        framework="nemo-rl",
        repo=str(repo),
        bridge_repo=str(tmp_path / "bridge"),
        launcher="slurm",
        slurm=SlurmOptions(**kw),
    )  # type: ignore[arg-type]


PLAN = {
    "steps": [
        {
            "name": "l0-grpo",
            "argv": ["uv", "run", "bash", "tests/functional/grpo_megatron.sh"],
            "env": {"PYTHONPATH": "BRIDGE/src"},
            "cwd": "REPO",
            "gpus": 8,
        }
    ]
}


def test_ray_sub_mode_for_multi_node_nemo_rl(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path, nodes=2, container="nvcr.io/nemo-rl:x", account="acct", partition="batch", time="4:00:00"
    )
    assert choose_mode(spec) == "ray.sub"
    sub = render(tmp_path / "run", PLAN, spec)
    assert sub.mode == "ray.sub" and sub.cwd == spec.repo
    assert sub.sbatch_args[-1] == str(Path(spec.repo) / "ray.sub")  # type: ignore[arg-type]
    assert "--nodes=2" in sub.sbatch_args and "--gres=gpu:4" in sub.sbatch_args
    assert "--account=acct" in sub.sbatch_args and "--time=4:00:00" in sub.sbatch_args
    assert sub.env["CONTAINER"] == "nvcr.io/nemo-rl:x"
    assert sub.env["BASE_LOG_DIR"] == str((tmp_path / "run").resolve())
    assert shlex.split(sub.env["COMMAND"]) == [
        "bash",
        str((tmp_path / "run").resolve() / "slurm" / "driver.sh"),
    ]
    assert f"{(tmp_path / 'run').resolve()}:" in sub.env["MOUNTS"]
    assert "srun" not in sub.script_text.split("step_start 1", 1)[1]
    # without a container ray.sub cannot run: srun mode, and a one-node run stays srun
    assert choose_mode(_spec(tmp_path, nodes=2)) == "srun"
    assert choose_mode(_spec(tmp_path, nodes=1, container="img")) == "srun"


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    spec = _spec(tmp_path, partition="a b")
    with pytest.raises(SpecError, match="--partition"):
        render(tmp_path / "run", PLAN, spec)
    spec = _spec(tmp_path)
    spec.extra["slurm_mode"] = "ray.sub"
    with pytest.raises(SpecError, match="container"):
        render(tmp_path / "run", PLAN, spec)
    with pytest.raises(SpecError, match="no steps"):
        render(tmp_path / "run", {"steps": []}, _spec(tmp_path))
    with pytest.raises(SpecError, match="mounts"):
        render(tmp_path / "run", PLAN, _spec(tmp_path, container="i", mounts=["nocolon"]))


def test_cpus_per_task_reaches_sbatch_and_every_srun_step(tmp_path: Path) -> None:
    sub = render(tmp_path / "run", PLAN, _spec(tmp_path, cpus_per_task=2))
    assert "--cpus-per-task=2" in sub.sbatch_args
    srun_lines = [ln for ln in sub.script_text.splitlines() if " srun --" in ln]
    assert srun_lines and all("--cpus-per-task=2" in ln for ln in srun_lines)
    assert subprocess.run(["bash", "-n"], input=sub.script_text, text=True).returncode == 0
    without = render(tmp_path / "run2", PLAN, _spec(tmp_path))
    assert not any("--cpus-per-task" in a for a in without.sbatch_args)
    with pytest.raises(SpecError, match="--cpus-per-task"):
        render(tmp_path / "run3", PLAN, _spec(tmp_path, cpus_per_task=0))
