"""`bridge_import_driver` and `bridge_import_ray_worker`: which `megatron.bridge` the run really imports."""

from __future__ import annotations

import os
from pathlib import Path

from console.doctor.context import DoctorContext
from console.doctor.interpreter import bridge_probe, python_argv, run_interpreter
from console.doctor.model import Check
from console.doctor.probe import MARKER, ProbeResult, run_probe
from console.doctor.ray_cluster import detect_cluster
from console.doctor.repos import vendored_bridge_item
from console.doctor.result import NOT_APPLICABLE_DEMO, finding, make_remedy

DRIVER_ID = "bridge_import_driver"
WORKER_ID = "bridge_import_ray_worker"

# Prints where megatron.bridge comes from, or why it cannot be imported.
_IMPORT_BODY = """
def bridge_path():
    try:
        import megatron.bridge as mb
    except ModuleNotFoundError as exc:
        return {"missing": str(exc), "name": exc.name or ""}
    except BaseException as exc:
        return {"error": type(exc).__name__ + ": " + str(exc)}
    path = getattr(mb, "__file__", None) or next(iter(getattr(mb, "__path__", [])), None)
    return {"file": path}
"""

DRIVER_PROBE = (
    _IMPORT_BODY
    + f"""
import json
print({MARKER!r} + json.dumps(bridge_path()), flush=True)
"""
)

# argv: mode ("local" or an address), timeout seconds. PYTHONPATH goes through the runtime_env,
# as the verl procedure shows; a throw-away local cluster is shut down before exit.
WORKER_PROBE = (
    _IMPORT_BODY
    + f"""
import json, os, sys
try:
    import ray
except ModuleNotFoundError as exc:
    print({MARKER!r} + json.dumps({{"no_ray": str(exc)}}), flush=True)
    raise SystemExit(0)
mode, timeout = sys.argv[1], float(sys.argv[2])
runtime_env = {{"env_vars": {{"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}}}
try:
    if mode == "local":
        ray.init(address="local", num_cpus=1, include_dashboard=False, runtime_env=runtime_env,
                 log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=mode, runtime_env=runtime_env, log_to_driver=False, configure_logging=False)
except BaseException as exc:
    print({MARKER!r} + json.dumps({{"ray_failed": type(exc).__name__ + ": " + str(exc)}}), flush=True)
    raise SystemExit(0)
try:
    answer = ray.get(ray.remote(num_cpus=0)(bridge_path).remote(), timeout=timeout)
    answer["address"] = ray.get_runtime_context().gcs_address
except BaseException as exc:
    answer = {{"ray_failed": type(exc).__name__ + ": " + str(exc)}}
finally:
    ray.shutdown()
print({MARKER!r} + json.dumps(answer), flush=True)
"""
)


def _under(path: str, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def judge_import(
    ctx: DoctorContext, check_id: str, where: str, probe: ProbeResult, extra_evidence: str = ""
) -> Check:
    """Turn a probe's answer into the check entry (ok, vendored, wrong_path, missing, failed)."""
    assert ctx.bridge is not None
    expected = ctx.bridge / "src"
    pythonpath = ctx.env.get("PYTHONPATH", "")
    suffix = f"; {extra_evidence}" if extra_evidence else ""
    path_remedy = make_remedy(env={"PYTHONPATH": pythonpath} if pythonpath else None)
    answer = probe.payload
    if answer is None:
        return finding(
            check_id, "failed", f"{where}: no answer ({probe.problem()}){suffix}", expected=str(expected)
        )
    if "no_ray" in answer:
        return finding(check_id, "no_ray", f"{where}: {answer['no_ray']}", python=ctx.python)
    if "ray_failed" in answer:
        if "InvalidAuthToken" in probe.stderr_tail:
            suffix += (
                "; the cluster uses token authentication (RAY_AUTH_TOKEN / ~/.ray/auth_token, RAY_AUTH_MODE)"
            )
        return finding(check_id, "ray_failed", f"{where}: {answer['ray_failed']}{suffix}")
    if "file" in answer and answer["file"]:
        path = str(answer["file"])
        evidence = f"{where}: megatron.bridge.__file__ = {path}{suffix}"
        if _under(path, expected):
            return finding(check_id, "ok", evidence)
        if ctx.framework == "nemo-rl" and ctx.repo is not None:
            vendored = ctx.repo / ctx.catalog["paths"]["nemo_rl_vendored_bridge"]
            if _under(path, vendored) and vendored_bridge_item(ctx).case == "vendored_same":
                return finding(check_id, "vendored", evidence)
        return finding(check_id, "wrong_path", evidence, path_remedy, path=path, expected=str(expected))
    if "missing" in answer:
        name = answer.get("name") or ""
        evidence = f"{where}: ModuleNotFoundError: {answer['missing']}{suffix}"
        case = "missing" if name.startswith("megatron") else "failed"
        return finding(
            check_id, case, evidence, path_remedy if case == "missing" else None, expected=str(expected)
        )
    return finding(
        check_id, "failed", f"{where}: {answer.get('error', answer)}{suffix}", expected=str(expected)
    )


def _nothing_to_import(ctx: DoctorContext, check_id: str) -> Check | None:
    """The finding when there is no Bridge to import: the demo, or no checkout given."""
    if ctx.is_demo:
        return finding(check_id, "not_applicable", NOT_APPLICABLE_DEMO)
    if ctx.bridge is None:
        no_bridge = "no Bridge checkout given (--bridge-repo / $BRIDGE_REPO)"
        return finding(check_id, "missing", no_bridge, expected="<unset>")
    return None


def check_bridge_import_driver(ctx: DoctorContext) -> Check:
    nothing = _nothing_to_import(ctx, DRIVER_ID)
    if nothing is not None:
        return nothing
    from_run = bridge_probe(ctx)  # the run's own interpreter, probed once for every check
    if from_run is not None:
        probe, where = from_run
        pythonpath = run_interpreter(ctx).env.get("PYTHONPATH", "")
        return judge_import(ctx, DRIVER_ID, where, probe, f"PYTHONPATH={pythonpath}")
    argv, label = python_argv(ctx)
    timeout = float(ctx.catalog["defaults"]["import_timeout_s"])
    probe = run_probe([*argv, "-c", DRIVER_PROBE], ctx.env, ctx.cwd, timeout)
    return judge_import(
        ctx, DRIVER_ID, f"driver ({label})", probe, f"PYTHONPATH={ctx.env.get('PYTHONPATH', '')}"
    )


def check_bridge_import_ray_worker(ctx: DoctorContext) -> Check:
    nothing = _nothing_to_import(ctx, WORKER_ID)
    if nothing is not None:
        return nothing
    cluster = detect_cluster(ctx)
    timeout = float(ctx.catalog["defaults"]["ray_timeout_s"])
    env = dict(ctx.env)
    if cluster.address:
        mode, where = cluster.address, f"Ray worker on the existing cluster ({cluster.address})"
    else:
        env.pop("RAY_ADDRESS", None)
        mode, where = "local", "Ray worker on a throw-away local cluster"
    argv, label = python_argv(ctx)
    probe = run_probe([*argv, "-c", WORKER_PROBE, mode, str(max(timeout - 15, 10))], env, ctx.cwd, timeout)
    return judge_import(ctx, WORKER_ID, f"{where}, driver {label}", probe)
