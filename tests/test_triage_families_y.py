"""Triage families and mechanisms added with corpus round y (issue 12), on real excerpts (tuning cases of
``tests/corpus/``) and against near misses that must not fire:

- a KL divergence that blows up (beyond any healthy scale, or a hundred times its own median) is a metric
  failure, read by the metric watcher like a grad norm; numbers with thousands separators are read;
- a loss printed with one space before nan ("loss nan, iter time") is a NaN loss;
- Gloo's transport errors name the collective backend (nccl class, as torch.distributed's other backend);
- an unexplained crash (a segfault) next to CUDA-graph capture text is a graph crash;
- a driver error returned from a graph API call ("CUDA_ERROR_INVALID_VALUE) from cuGraphInstantiate...") is
  a graph crash; Megatron's dist_checkpointing names are the checkpoint component;
- Ray's "The actor is temporarily unavailable: RpcError" is the actor lost; an import from the Megatron/NeMo
  stack whose line was cut before its closing quote still names the stack.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.triage.metricwatch import MetricWatch
from tests.triage_helpers import assert_primary, primary, tri_text, tuning_case


@pytest.mark.parametrize(
    ("case", "verdict", "cls", "rule"),
    [
        ("yb-torchforge-grpo-kl-mean-millions", "Fail", "metric_failure", "metrics:kl_exploding"),
        ("yb-tinyuniverse-tinyllm-loss-nan-step100k", "Fail", "metric_failure", "nan_inf_metric"),
        ("yb-pytorch-gloo-isend-recv-closed-by-peer", "Fail", "nccl", None),
        ("ya-sglang-draft-graph-capture-segfault", "Fail", "cuda_graph_crash", None),
        (
            "ya-torch-cond-nccl-cudagraph-instantiate-event-wait",
            "Fail",
            "cuda_graph_crash",
            "cuda_graph_api_failure",
        ),
        ("ye-nemorl-megatron-to-hf-shardedobject-missing", "Fail", "checkpoint_failure", None),
        ("ye-nvingest-ray-actor-unavailable-rpc-cancelled", "Blocked", "ray_cluster", None),
        ("yc-nemo-megatron-gpt-test-nlp-overrides-plugin-gone", "Blocked", "bridge_import", None),
    ],
)
def test_round_y_families_on_tuning_cases(
    tmp_path: Path, case: str, verdict: str, cls: str, rule: str | None
) -> None:
    assert_primary(tri_text(tmp_path, tuning_case(case)), verdict, cls, rule)


def _kl_anomalies(lines: list[str]) -> list[str]:
    watch = MetricWatch()
    out: list[str] = []
    for i, line in enumerate(lines, 1):
        out += [a.kind for a in watch.feed(i, line)]
    return out


def test_a_kl_divergence_that_blows_up_against_its_own_history() -> None:
    healthy = [f"step:{i} - actor/kl_loss:{0.002 + i * 1e-4:.4f} - actor/ppo_kl:0.0{i}" for i in range(1, 9)]
    assert _kl_anomalies(healthy) == []
    assert _kl_anomalies([*healthy, "step:9 - actor/kl_loss:3.5100 - actor/ppo_kl:0.01"]) == ["kl_exploding"]
    # a single report far beyond any healthy scale, with thousands separators
    assert _kl_anomalies(["kl_divergence_mean: 1,568,987.96"]) == ["kl_exploding"]


def test_kl_near_misses_stay_quiet(tmp_path: Path) -> None:
    # the KL coefficient, a target, a controller and a per-token max are not the divergence
    lines = [
        "kl_coef: 5000.0",
        "actor/kl_target: 2000",
        "kl_ctl/value=1500.0",
        "grpo_loss/kl_divergence_max: 6,821,680,128.0",
        "step 3 | approx_kl 0.5 | reward 1.0",  # not a key/value pair the watcher reads
    ]
    assert _kl_anomalies(lines) == []
    # a KL that starts high and stays level is not a blow-up (below the absolute scale)
    assert _kl_anomalies([f"kl: {v}" for v in (2.0, 2.5, 1.8, 2.2, 2.4)]) == []
    # a loss with one space before a number, and a table column of nan (an empty window) are not NaN losses
    quiet = "iter 8 step 1: loss 1.1201, iter time: 1819.72ms\nLossAverage        nan\n"
    assert primary(tri_text(tmp_path, quiet))[0] == "Incomplete"


def test_gloo_and_capture_context_near_misses(tmp_path: Path) -> None:
    # Gloo named in an INFO line of a healthy run is not an error
    assert (
        primary(tri_text(tmp_path, "INFO Using gloo/transport/tcp for CPU collectives\n"))[0] == "Incomplete"
    )
    # a segfault far from any graph capture text stays an unexplained crash
    far = "Capturing CUDA graphs: 100%\n" + "step ok\n" * 400 + "Fatal Python error: Segmentation fault\n"
    assert primary(tri_text(tmp_path, far))[1] == "unknown_error"
