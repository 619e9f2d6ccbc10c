"""Every level and variant: the plan's argv and env compared with the procedure text.

Expectations are written by hand from reference/procedure-nemo-rl-e2e.md, procedure-verl-e2e.md,
notes-nemo-rl.md and notes-verl.md, not derived from the catalog.
"""

from __future__ import annotations

import json
import sys

import pytest
from plan_helpers import make_repos, spec

from console.cli import main
from console.plan import Plan, build_plan, render_sh

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def repos(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    for name in (
        "HF_HOME",
        "HF_HUB_CACHE",
        "HF_DATASETS_CACHE",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "NEMO_RL_HOME",
        "MODEL_PATH",
        "RM_MODEL_PATH",
        "NUM_GPUS",
        "TRAIN_FILES",
        "VAL_FILES",
        "GSM8K_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return make_repos(tmp_path)


def _train(plan: Plan) -> list:
    return [s for s in plan.steps if s.kind == "train"]


NEMO_L2 = [
    "uv",
    "run",
    "coverage",
    "run",
    "-a",
    "--data-file=tests/.coverage",
    "--source=nemo_rl",
    "examples/run_grpo.py",
    "--config",
    "examples/configs/grpo_math_1B_megatron.yaml",
    "policy.model_name=Qwen/Qwen2.5-0.5B",
    "grpo.num_prompts_per_step=2",
    "grpo.num_generations_per_prompt=4",
    "policy.train_global_batch_size=4",
    "policy.train_micro_batch_size=1",
    "policy.logprob_batch_size=4",
    "policy.generation.colocated.enabled=false",
    "policy.generation.colocated.resources.gpus_per_node=1",
    "policy.generation.vllm_cfg.async_engine=true",
    "cluster.gpus_per_node=2",
    "grpo.max_num_steps=2",
    "logger.tensorboard_enabled=true",
    "logger.log_dir=tests/functional/grpo_megatron_non_colocated/logs",
    "logger.wandb_enabled=false",
    "checkpointing.enabled=false",
]
# upstream delta refit: the sparse transport plus refit_cfg.sparse.delta_compression.* (NeMo-RL
# nemo_rl/models/generation/vllm/config.py); '++' because grpo_math_1B.yaml has no refit_cfg.sparse
DELTA = [
    "policy.generation.refit_transport=vllm_zmq_sparse",
    "++policy.generation.refit_cfg.sparse.delta_compression.encoding=xor",
    "++policy.generation.refit_cfg.sparse.delta_compression.sparse_bucket_size_bytes=5368709120",
]
UVB = ["uv", "run", "bash"]
UV_LAUNCH = [
    "uv",
    "run",
    "--frozen",
    "--all-packages",
    "--extra",
    "vllm",
    "--extra",
    "megatron",
    "--extra",
    "math",
]

# (levels, variants) -> expected argv of each training step, in order
NEMO_CASES = [
    ((0,), (), [UVB + ["tests/functional/grpo_megatron.sh"]]),
    (
        (1,),
        (),
        [UVB + ["tests/functional/grpo_megatron_lora.sh"], UVB + ["tests/functional/sft_resume_diamond.sh"]],
    ),
    ((2,), (), [NEMO_L2]),
    ((2,), ("delta-compression",), [NEMO_L2 + DELTA]),
    ((3,), (), [UVB + ["tests/functional/grpo_megatron_generation.sh"]]),
    (
        (3,),
        ("no-cuda-graphs",),
        [
            UVB + ["tests/functional/grpo_megatron_generation.sh"],
            UVB
            + [
                "tests/functional/grpo_megatron_generation.sh",
                "policy.generation.mcore_generation_config.cuda_graph_impl=none",
                "policy.generation.mcore_generation_config.num_cuda_graphs=null",
                "policy.generation.mcore_generation_config.use_cuda_graphs_for_non_decode_steps=false",
            ],
        ],
    ),
    (
        (4,),
        (),
        [
            UVB
            + [
                "tests/functional/grpo_megatron.sh",
                "policy.megatron_cfg.tensor_model_parallel_size=2",
                "policy.megatron_cfg.pipeline_model_parallel_size=1",
                "policy.megatron_cfg.context_parallel_size=1",
                "policy.megatron_cfg.sequence_parallel=false",
                "cluster.gpus_per_node=2",
            ]
        ],
    ),
    (
        (4,),
        ("moe-ep",),
        [
            UVB
            + [
                "tests/functional/grpo_megatron.sh",
                "policy.megatron_cfg.tensor_model_parallel_size=2",
                "policy.megatron_cfg.pipeline_model_parallel_size=1",
                "policy.megatron_cfg.context_parallel_size=1",
                "policy.megatron_cfg.sequence_parallel=false",
                "cluster.gpus_per_node=2",
                "policy.megatron_cfg.expert_model_parallel_size=2",
                "policy.megatron_cfg.expert_tensor_parallel_size=1",
            ]
        ],
    ),
    (
        (5,),
        ("vlm",),
        [UVB + ["tests/functional/vlm_grpo.sh", "--config", "examples/configs/vlm_grpo_3B_megatron.yaml"]],
    ),
    ((5,), ("audio",), [UVB + ["tests/functional/audio_grpo_megatron.sh"]]),
    ((5,), ("eagle-mtp",), [UVB + ["tests/functional/grpo_megatron_eagle3_online.sh"]]),
    (
        (6,),
        (),
        [
            UVB
            + [
                "tests/functional/grpo_megatron_lora.sh",
                "grpo.max_num_steps=20",
                "data.shuffle=false",
                "checkpointing.enabled=false",
            ]
        ],
    ),
]


@pytest.mark.parametrize(
    ("levels", "variants", "expected"),
    NEMO_CASES,
    ids=[f"L{c[0]}-{'-'.join(c[1]) or 'base'}" for c in NEMO_CASES],
)
def test_nemo_rl_levels_and_variants(repos, levels, variants, expected):
    bridge, nemo, _ = repos
    plan = build_plan(spec("nemo-rl", repos, levels, variants))
    train = _train(plan)
    assert [s.argv for s in train] == expected
    pythonpath = f"{bridge}/src:{bridge}/3rdparty/Megatron-LM:{nemo}"
    for s in plan.steps:
        assert s.env == {"PYTHONPATH": pythonpath}
    for s in train:
        assert s.cwd == nemo and s.gpus == 2 or s.name == "l1-sft-resume-diamond"
        assert s.level == levels[0]
        # every e2e run is preceded by `ray stop --force` (failure ignored)
        prev = plan.steps[plan.steps.index(s) - 1]
        assert prev.argv == ["ray", "stop", "--force"] and prev.on_failure == "continue"


def test_nemo_rl_shared_steps_and_unit_addons(repos):
    bridge, nemo, _ = repos
    plan = build_plan(spec("nemo-rl", repos, (0, 1, 2), extra={"bridge_tests": []}))
    argvs = {s.name: s.argv for s in plan.steps}
    assert argvs["bridge-git-status"] == ["git", "-C", bridge, "status", "--short"]
    assert argvs["repo-git-status"] == ["git", "-C", nemo, "status", "--short"]
    assert argvs["bridge-git-head"] == ["git", "-C", bridge, "rev-parse", "--short", "HEAD"]
    assert argvs["repo-git-head"] == ["git", "-C", nemo, "rev-parse", "--short", "HEAD"]
    assert argvs["bridge-checks"] == [
        "uv",
        "run",
        "python",
        "-m",
        "pytest",
        "-q",
        "tests/unit_tests/models/test_model_provider_mixin.py",
        "tests/unit_tests/models/test_param_mapping.py",
        "tests/unit_tests/peft/test_utils.py",
        "tests/unit_tests/training/utils/test_train_utils.py",
        "tests/unit_tests/training/utils/test_config_utils.py",
    ]
    assert (
        plan.step("bridge-checks").cwd == bridge and plan.step("bridge-checks").deliverable == "bridge_checks"
    )
    # NeMo-RL's documented form (docs/testing.md): mcore tests only run with --mcore-only
    assert argvs["nemo-rl-unit-checks"] == [
        "uv",
        "run",
        "--extra",
        "mcore",
        "--group",
        "test",
        "pytest",
        "--mcore-only",
        "-q",
        "tests/unit/models/megatron/test_megatron_setup.py",
        "tests/unit/models/policy/test_megatron_worker.py",
    ]
    assert argvs["nemo-rl-unit-weight-transfer"] == [
        "uv",
        "run",
        "--group",
        "test",
        "pytest",
        "-q",
        "tests/unit/utils/test_weight_transfer_stream.py",
    ]
    assert argvs["nemo-rl-unit-checkpoint"] == [
        "uv",
        "run",
        "--group",
        "test",
        "pytest",
        "-q",
        "tests/unit/utils/test_checkpoint.py",
        "tests/unit/utils/test_native_checkpoint.py",
    ]
    assert argvs["nemo-rl-unit-vllm"][:7] == ["uv", "run", "--extra", "vllm", "--group", "test", "pytest"]
    assert argvs["nemo-rl-unit-vllm"][8:] == [
        "tests/unit/models/generation/test_vllm_generation.py",
        "tests/unit/models/generation/test_vllm_utils.py",
    ]
    # the NeMo-RL unit checks do not gate the e2e runs; the Bridge checks do (procedure: "after the above pass")
    assert plan.step("bridge-checks").on_failure == "stop"
    assert plan.step("nemo-rl-unit-checks").on_failure == "continue"
    assert any("test_integration.py" in n for n in plan.step("bridge-checks").notes)
    assert plan.step("bridge-import").deliverable == "bridge_import"
    # the add-ons only come with the levels that need them
    names = [s.name for s in build_plan(spec("nemo-rl", repos, (0,))).steps]
    assert "nemo-rl-unit-checkpoint" not in names and "nemo-rl-unit-vllm" not in names


def test_nemo_rl_model_specific_bridge_tests(repos):
    bridge = repos[0]
    (__import__("pathlib").Path(bridge) / "tests" / "unit_tests" / "models" / "foo").mkdir(parents=True)
    p = __import__("pathlib").Path(bridge) / "tests/unit_tests/models/foo/test_foo_bridge.py"
    p.write_text("")
    plan = build_plan(
        spec(
            "nemo-rl",
            repos,
            extra={"bridge_tests": ["tests/unit_tests/models/foo/test_foo_bridge.py::test_x"]},
        )
    )
    assert plan.step("bridge-checks").argv[-1] == "tests/unit_tests/models/foo/test_foo_bridge.py::test_x"


def test_nemo_rl_l0_artifacts_for_the_verdict_engine(repos):
    s = build_plan(spec("nemo-rl", repos)).step("l0-grpo-megatron")
    assert s.deliverable == "framework_run" and s.total_steps == 2
    assert s.log_files == ["tests/functional/grpo_megatron/run.log"]
    assert s.tb_dir == "tests/functional/grpo_megatron/logs"
    assert s.metrics_json == "tests/functional/grpo_megatron/metrics.json"
    assert s.checks == [
        'max(data["train/token_mult_prob_error"]) < 1.05',
        'min(data["train/probs_ratio_clamped_min"]) > 0.79',
        'max(data["train/probs_ratio_clamped_min"]) < 1.21',
        'min(data["train/probs_ratio_clamped_max"]) > 0.79',
        'max(data["train/probs_ratio_clamped_max"]) < 1.21',
    ]
    lora = build_plan(spec("nemo-rl", repos, (1,))).step("l1-grpo-megatron-lora")
    assert lora.checks == ['max(data["train/reward"]) > 0.03', 'max(data["train/gen_kl_error"]) < 0.001']
    assert lora.total_steps == 3
    gen = build_plan(spec("nemo-rl", repos, (3,))).step("l3-grpo-megatron-generation")
    assert gen.checks == ['max(data["train/token_mult_prob_error"]) < 1.05']
    l6 = build_plan(spec("nemo-rl", repos, (6,))).step("l6-learning-signal")
    assert l6.total_steps == 20 and any("NaN" in c for c in l6.criteria)


def test_nemo_rl_l2_metrics_steps_and_delta_timings(repos):
    plan = build_plan(spec("nemo-rl", repos, (2,), ("delta-compression",)))
    names = [s.name for s in plan.steps if s.level == 2]
    assert names == [
        "l2-clean-logs",
        "l2-grpo-non-colocated-ray-stop",
        "l2-grpo-non-colocated",
        "l2-metrics-dump",
        "l2-check-metrics",
    ]
    assert plan.step("l2-metrics-dump").argv == [
        "uv",
        "run",
        "tests/json_dump_tb_logs.py",
        "tests/functional/grpo_megatron_non_colocated/logs",
        "--output_path",
        "tests/functional/grpo_megatron_non_colocated/metrics.json",
    ]
    assert plan.step("l2-check-metrics").argv == [
        "uv",
        "run",
        "tests/check_metrics.py",
        "tests/functional/grpo_megatron_non_colocated/metrics.json",
        'max(data["train/token_mult_prob_error"]) < 1.05',
        'min(data["train/probs_ratio_clamped_min"]) > 0.79',
        'max(data["train/probs_ratio_clamped_max"]) < 1.21',
    ]
    run = plan.step("l2-grpo-non-colocated")
    assert run.variant == "delta-compression"
    # only the timings NeMo-RL emits (grpo.py prepare_for_generation/total, the synchronizers'
    # prepare_for_generation/transfer_and_update_weights)
    assert run.report_metrics == [
        "timing/train/prepare_for_generation/total",
        "timing/train/prepare_for_generation/transfer_and_update_weights",
    ]
    assert any("refit_transport" in n for n in run.notes)


def test_nemo_rl_model_and_user_overrides_come_last(repos, tmp_path):
    snap = tmp_path / "snapshot"
    snap.mkdir()
    plan = build_plan(spec("nemo-rl", repos, (0,), overrides=["grpo.max_num_steps=5"], model=str(snap)))
    s = plan.step("l0-grpo-megatron")
    assert s.argv == UVB + [
        "tests/functional/grpo_megatron.sh",
        f"policy.model_name={snap}",
        f"policy.tokenizer.name={snap}",
        "grpo.max_num_steps=5",
    ]
    assert s.total_steps == 5  # the user override wins, as in Hydra
    hf = build_plan(spec("nemo-rl", repos, (0,), model="Qwen/Qwen3-0.6B")).step("l0-grpo-megatron")
    assert hf.argv[-1] == "policy.model_name=Qwen/Qwen3-0.6B"


def test_hf_cache_vars_and_existing_pythonpath(repos, monkeypatch):
    bridge, nemo, _ = repos
    monkeypatch.setenv("PYTHONPATH", "/opt/extra")
    monkeypatch.setenv("HF_HOME", "/scratch/hf")
    s = build_plan(spec("nemo-rl", repos)).step("l0-grpo-megatron")
    assert s.env == {
        "PYTHONPATH": f"{bridge}/src:{bridge}/3rdparty/Megatron-LM:{nemo}:/opt/extra",
        "HF_HOME": "/scratch/hf",
    }


VERL_L0_EXPORTS = {
    "ENGINE": "vllm",
    "USE_MBRIDGE": "True",
    "VANILLA_MBRIDGE": "False",
    "VALUE_VANILLA_MBRIDGE": "False",
    "LORA_RANK": "4",
    "USE_MEGATRON_FSDP": "False",
    "COMMON_PP": "1",
    "COMMON_VPP": "null",
    "COMMON_CP": "1",
    "COMMON_TP": "1",
    "INFER_TP": "1",
    "ALL_OFFLOAD": "False",
    "TOTAL_TRAIN_STEPS": "1",
    "SAVE_FREQ": "-1",
    "VAL_BEFORE_TRAIN": "False",
    "TEST_FREQ": "-1",
}
WRAPPER = ["bash", "tests/special_e2e/run_ppo_trainer_megatron.sh"]
FSDP_ARGS = [
    "++actor_rollout_ref.actor.megatron.override_transformer_config.gradient_accumulation_fusion=False",
    "++actor_rollout_ref.ref.megatron.override_transformer_config.gradient_accumulation_fusion=False",
    "++critic.megatron.override_transformer_config.gradient_accumulation_fusion=False",
]
# (levels, variants) -> [(argv, env changes on top of the Level 0 exports)]
VERL_CASES = [
    ((0,), (), [(WRAPPER, {})]),
    ((0,), ("no-reward-model",), [(WRAPPER + ["reward.reward_model.enable=False"], {})]),
    ((0,), ("enforce-eager",), [(WRAPPER + ["actor_rollout_ref.rollout.enforce_eager=True"], {})]),
    (
        (1,),
        (),
        [
            (WRAPPER, {"SAVE_FREQ": "1", "TOTAL_TRAIN_STEPS": "1"}),
            (WRAPPER, {"RESUME_MODE": "auto", "SAVE_FREQ": "1", "TOTAL_TRAIN_STEPS": "2"}),
        ],
    ),
    (
        (2,),
        (),
        [
            (
                WRAPPER,
                {
                    "COMMON_TP": "2",
                    "COMMON_PP": "2",
                    "COMMON_VPP": "null",
                    "COMMON_CP": "1",
                    "INFER_TP": "2",
                    "USE_MEGATRON_FSDP": "False",
                },
            )
        ],
    ),
    (
        (2,),
        ("moe-ep",),
        [
            (
                WRAPPER,
                {
                    "COMMON_TP": "2",
                    "COMMON_PP": "2",
                    "COMMON_VPP": "null",
                    "COMMON_CP": "1",
                    "INFER_TP": "2",
                    "USE_MEGATRON_FSDP": "False",
                },
            ),
            (WRAPPER, {"COMMON_EP": "2", "COMMON_ETP": "1", "ROUTING_REPLAY_MODE": "disabled"}),
        ],
    ),
    (
        (3,),
        (),
        [
            (
                WRAPPER + FSDP_ARGS,
                {
                    "USE_MEGATRON_FSDP": "True",
                    "ALL_OFFLOAD": "False",
                    "COMMON_PP": "1",
                    "COMMON_VPP": "null",
                    "COMMON_CP": "1",
                    "COMMON_TP": "1",
                    "INFER_TP": "1",
                },
            )
        ],
    ),
    ((4,), (), [(WRAPPER, {})]),
    (
        (5,),
        (),
        [
            (
                WRAPPER,
                {
                    "TOTAL_TRAIN_STEPS": "20",
                    "SAVE_FREQ": "-1",
                    "VAL_BEFORE_TRAIN": "True",
                    "TEST_FREQ": "10",
                    "LORA_RANK": "4",
                },
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("levels", "variants", "expected"),
    VERL_CASES,
    ids=[f"L{c[0]}-{'-'.join(c[1]) or 'base'}" for c in VERL_CASES],
)
def test_verl_levels_and_variants(repos, levels, variants, expected, tmp_path):
    bridge, _, verl = repos
    plan = build_plan(spec("verl", repos, levels, variants))
    train = _train(plan)
    assert [s.argv for s in train] == [argv for argv, _ in expected]
    gsm8k = f"{tmp_path}/home/data/gsm8k"
    for s, (_, changes) in zip(train, expected, strict=True):
        env = {
            "PYTHONPATH": f"{bridge}/src:{bridge}/3rdparty/Megatron-LM:{verl}",
            "TRAIN_FILES": f"{gsm8k}/train.parquet",
            "VAL_FILES": f"{gsm8k}/test.parquet",
            **VERL_L0_EXPORTS,
            **changes,
        }
        assert s.env == env
        assert s.cwd == verl and s.gpus == 8  # the wrapper's NUM_GPUS default
        assert s.total_steps == int(env["TOTAL_TRAIN_STEPS"])
    # the same interpreter and PYTHONPATH order as the wrapper (uv launcher unless VERL_USE_UV=0)
    assert plan.step("gsm8k-data-prep").argv == UV_LAUNCH + [
        "python3",
        "examples/data_preprocess/gsm8k.py",
        "--local_save_dir",
        gsm8k,
    ]
    assert (
        plan.step("gsm8k-data-prep").env["PYTHONPATH"]
        == f"/workspace/Megatron-LM:{bridge}/src:{bridge}/3rdparty/Megatron-LM:{verl}"
    )
    assert plan.step("bridge-import").argv[: len(UV_LAUNCH) + 1] == UV_LAUNCH + ["python3"]
    for s in train:
        assert plan.steps[plan.steps.index(s) - 1].argv == UV_LAUNCH + ["ray", "stop", "--force"]


def test_verl_use_uv_0_runs_the_system_python3(repos, tmp_path):
    plan = build_plan(spec("verl", repos, env={"VERL_USE_UV": "0"}))
    assert plan.step("bridge-import").argv[0] == "python3"
    assert plan.step("gsm8k-data-prep").argv[0] == "python3"
    assert plan.step("l0-ppo-lora-ddp-ray-stop").argv == ["ray", "stop", "--force"]


def test_verl_ray_pythonpath_form_and_model(repos, tmp_path):
    bridge, _, verl = repos
    plan = build_plan(
        spec(
            "verl",
            repos,
            (0, 1),
            ("ray-pythonpath",),
            model="Qwen/Qwen3-0.6B",
            env={"NUM_GPUS": "2", "RM_MODEL_PATH": "/models/rm"},
        )
    )
    pp = f"{bridge}/src:{bridge}/3rdparty/Megatron-LM:{verl}"
    for s in _train(plan):
        assert s.argv == WRAPPER + [f"++ray_kwargs.ray_init.runtime_env.env_vars.PYTHONPATH={pp}"]
        assert s.env["MODEL_ID"] == "Qwen/Qwen3-0.6B" and s.env["RM_MODEL_PATH"] == "/models/rm"
        assert s.gpus == 2
    local = tmp_path / "ckpt"
    local.mkdir()
    s = _train(build_plan(spec("verl", repos, model=str(local))))[0]
    assert s.env["MODEL_PATH"] == str(local) and "MODEL_ID" not in s.env


def test_verl_data_prep_skipped_when_parquet_exists(repos, tmp_path):
    d = tmp_path / "home" / "data" / "gsm8k"
    d.mkdir(parents=True)
    (d / "train.parquet").write_bytes(b"x")
    (d / "test.parquet").write_bytes(b"x")
    assert build_plan(spec("verl", repos)).step("gsm8k-data-prep") is None


def test_demo_plan_exact(repos):
    plan = build_plan(spec("demo", repos))
    py = sys.executable
    assert [s.name for s in plan.steps] == ["demo-grpo", "demo-metrics-dump", "demo-check-metrics"]
    g, d, c = plan.steps
    assert g.argv == [py, "-u", "-m", "console.demo.grpo", "--tb-dir", "{run_dir}/tb", "--steps", "30"]
    assert (g.kind, g.deliverable, g.total_steps, g.tb_dir, g.metrics_json) == (
        "train",
        "framework_run",
        30,
        "{run_dir}/tb",
        "{run_dir}/metrics.json",
    )
    assert d.argv == [
        py,
        "-m",
        "console.monitor.tb_dump",
        "{run_dir}/tb",
        "--output_path",
        "{run_dir}/metrics.json",
    ]
    assert d.kind == "metrics"
    checks = [
        'mean(data["train/reward"], -5) > mean(data["train/reward"], 1, 6)',
        'ratio_above(data["train/grad_norm"], 0) == 1',
        'max(data["train/token_mult_prob_error"]) < 1.05',
    ]
    assert c.argv == [py, "-m", "console.monitor.check_metrics", "{run_dir}/metrics.json", *checks]
    assert (c.kind, c.deliverable, c.checks) == ("metrics", "metrics", checks)
    assert all(s.cwd == "{run_dir}" for s in plan.steps)
    nan = build_plan(spec("demo", repos, variants=("nan",), env={"FOO": "bar"}))
    assert nan.steps[0].argv[-2:] == ["--variant", "nan"] and nan.steps[0].env == {"FOO": "bar"}


def test_plan_json_cli_roundtrip_and_redaction(repos, capsys):
    bridge, nemo, _ = repos
    rc = main(
        [
            "plan",
            "--framework",
            "nemo-rl",
            "--repo",
            nemo,
            "--bridge-repo",
            bridge,
            "--level",
            "0",
            "--env",
            "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "hf_abcdefghijklmnopqrstuvwxyz012345" not in out
    data = json.loads(out)
    assert set(data) == {"spec", "warnings", "steps", "drift"}
    assert data["spec"]["env"]["HF_TOKEN"] == "***"
    step = data["steps"][-1]
    for key in (
        "name",
        "title",
        "argv",
        "env",
        "unset",
        "cwd",
        "gpus",
        "proves",
        "criteria",
        "level",
        "variant",
        "deliverable",
        "kind",
        "log_files",
        "tb_dir",
        "metrics_json",
        "checks",
        "total_steps",
        "on_failure",
    ):
        assert key in step
    again = Plan.from_dict(data)
    assert again.to_dict() == data
    sh = render_sh(
        build_plan(spec("nemo-rl", repos, env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345"}))
    )
    assert "hf_abcdefghijklmnopqrstuvwxyz012345" not in sh and '"${HF_TOKEN:?' in sh
