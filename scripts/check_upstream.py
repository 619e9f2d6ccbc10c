"""Check every plan rl-console builds against real upstream checkouts, and write the upstream manifest.

    python scripts/check_upstream.py NEMO_RL VERL BRIDGE [--manifest PATH] [--no-write] [--json]

For every level and variant of NeMo-RL and verl it builds the plan against the three checkouts and
checks:
- paths: every script, test file and config a step names exists (console/plan/resolve.py), and every
  catalog ``config`` is the one the wrapper really loads (its ``--config`` or the driver's default);
- NeMo-RL overrides: each training step's overrides (the wrapper's own, then the catalog's) are
  applied to its config with NeMo-RL's own ``load_config`` + ``parse_hydra_overrides``, imported from
  the checkout in a subprocess (the checkout first on sys.path);
- verl: the real ``tests/special_e2e/run_ppo_trainer_megatron.sh`` runs with stub ``python3``/``uv``/
  ``ray`` first on PATH that record their argv, and the recorded trainer arguments are composed
  with Hydra against verl's own ``ppo_megatron_trainer`` config;
- drift: the findings the plan builder reports for these checkouts (must be none).

It then writes ``console/catalog/upstream_manifest.json``: the commits, the files the catalog names
(with their sibling files, for "closest path" hints), the key trees of the configs the catalog uses
and the keys each wrapper sets. Paths and key names only: no upstream code is copied.
Exit 0 when every count is 0, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from console.catalog import load_framework  # noqa: E402
from console.errors import ConsoleError  # noqa: E402
from console.fileio import write_text_atomic  # noqa: E402
from console.plan import build_plan  # noqa: E402
from console.plan.resolve import MANIFEST_PATH, override_args, step_paths, wrapper_overrides  # noqa: E402
from console.spec import RunSpec  # noqa: E402

VERL_WRAPPER = "tests/special_e2e/run_ppo_trainer_megatron.sh"
VERL_CONFIG_DIR = "verl/trainer/config"
_FULL_OVERRIDE_RE = re.compile(r"^\s*(\+{0,2}[A-Za-z_][\w-]*(?:\.[\w-]+)+=\S*)", re.MULTILINE)
_CONFIG_RE = re.compile(r"--config\s+(\S+)")

# Run inside the NeMo-RL checkout (its own loader); reads [{config, overrides}] on stdin.
NEMO_PROBE = r"""
import json, sys
sys.path.insert(0, ".")
from omegaconf import OmegaConf
from nemo_rl.utils.config import load_config, parse_hydra_overrides
def flat(d, p=""):
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{p}.{k}" if p else str(k)
            out.append(key)
            out += flat(v, key)
    return out
res = []
for job in json.load(sys.stdin):
    try:
        cfg = load_config(job["config"])
        keys = sorted(flat(OmegaConf.to_container(cfg, resolve=False)))
        bad = None
        try:
            cfg = parse_hydra_overrides(cfg, job["overrides"])
        except Exception as exc:
            bad = str(exc).splitlines()[0]
        res.append({"keys": keys, "error": bad})
    except Exception as exc:
        res.append({"keys": None, "error": f"load_config: {exc}".splitlines()[0]})
print("@@RESULT@@" + json.dumps(res))
"""

# Compose verl's trainer config with the recorded argv, with Hydra (run from the verl checkout).
VERL_PROBE = r"""
import json, sys
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
jobs = json.load(sys.stdin)
res = []
with initialize_config_dir(config_dir=jobs["config_dir"], version_base=None):
    for args in jobs["runs"]:
        try:
            cfg = compose(config_name=jobs["config_name"], overrides=args)
            res.append({"error": None, "steps": OmegaConf.select(cfg, "trainer.total_training_steps")})
        except Exception as exc:
            res.append({"error": str(exc).splitlines()[0]})
print("@@RESULT@@" + json.dumps(res))
"""

STUB = """#!/bin/sh
# rl-console check_upstream stub: record argv (one JSON list a line), answer the device probe
python_bin={python}
"$python_bin" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$(basename "$0")" "$@" >> {record}
for last in "$@"; do :; done
if [ "${{last:-}}" = "-" ]; then cat >/dev/null; echo cuda; fi
exit 0
"""


_VAR_DEFAULT_RE = r"^\s*(?:export\s+)?{var}=[\"']?\$\{{(\w+):-([^}}]*)\}}"


def wrapper_models(text: str, entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """(variable, default model) a wrapper names for one [wrapper_models] entry: the value of its
    `key=...` argument, followed through `VAR=${ENV:-default}` when it is a variable."""
    var = entry.get("env")
    if entry.get("key"):
        m = re.search(rf"(?:^|\s){re.escape(entry['key'])}=(\S+)", text)
        if not m:
            return None, None
        value = m.group(1).strip("\"'")
        ref = re.match(r"^\$\{?(\w+)\}?$", value)
        if not ref:
            return None, value
        var = ref.group(1)
    if not var:
        return None, None
    m = re.search(_VAR_DEFAULT_RE.format(var=re.escape(var)), text, re.MULTILINE)
    return (m.group(1), m.group(2)) if m else (var, None)


def wrapper_model_mismatches(repos: dict[str, str]) -> list[str]:
    """Where doctor.toml's [wrapper_models] (the models each wrapper downloads) disagrees with the checkouts."""
    from console.doctor.catalog import doctor_catalog

    out: list[str] = []
    table = doctor_catalog()["wrapper_models"]
    for fw in ("nemo-rl", "verl"):
        for w in table.get(fw, []):
            path = Path(repos[fw]) / w["script"]
            if not path.is_file():
                out.append(f"wrapper_models {fw} {w['script']}: no such wrapper")
                continue
            text = path.read_text(errors="replace")
            for entry in w["models"]:
                var, default = wrapper_models(text, entry)
                if default != entry.get("default") or (entry.get("env") and var != entry["env"]):
                    out.append(
                        f"wrapper_models {fw} {w['script']} {entry.get('role')}: doctor.toml has "
                        f"{entry.get('env') or '-'}:{entry.get('default')}, the wrapper {var or '-'}:{default}"
                    )
        if table.get("verified", {}).get(fw) != git_head(repos[fw]):
            out.append(
                f"wrapper_models {fw}: verified at {table.get('verified', {}).get(fw)}, checkout at "
                f"{git_head(repos[fw])} (update the commit in doctor.toml when the models still match)"
            )
    return out


def git_head(path: str) -> str:
    out = subprocess.run(
        ["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return out.stdout.strip()


def all_specs(repos: dict[str, str]) -> list[RunSpec]:
    specs = []
    for fw in ("nemo-rl", "verl"):
        cat = load_framework(fw)
        for level in cat.levels:
            combos: list[list[str]] = [] if level.requires_variant else [[]]
            combos += [[v.name] for v in cat.variants if level.number in v.levels]
            for variants in combos:
                specs.append(
                    RunSpec(
                        framework=fw,
                        levels=[level.number],
                        variants=variants,
                        repo=repos[fw],
                        bridge_repo=repos["bridge"],
                        env={"NUM_GPUS": "8"},
                    )
                )
    return specs


def _probe(python: str, code: str, payload: Any, cwd: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [python, "-c", code],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@") :])
    raise SystemExit(f"probe failed in {cwd}: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")


def _dummy(token: str) -> str:
    """A wrapper's override as bash passes it: variables replaced by a dummy value, quotes removed."""
    text = re.sub(r"\$\{?[A-Za-z_]\w*(?::-[^}]*)?\}?", "x", token.rstrip("\\").strip())
    return text.replace('"', "").replace("'", "")


def nemo_wrapper_args(text: str) -> list[str]:
    return [_dummy(m.group(1)) for m in _FULL_OVERRIDE_RE.finditer(text) if not m.group(1).startswith("#")]


def wrapper_config(text: str, driver_default: str | None) -> str | None:
    m = _CONFIG_RE.search(text)
    if not m:
        return driver_default
    value = m.group(1)
    var = re.match(r"^\$\{?(\w+)\}?$", value)
    if var and var.group(1) != "PROJECT_ROOT":
        assigned = re.search(rf"^{var.group(1)}=(\S+)", text, re.MULTILINE)
        value = assigned.group(1) if assigned else value
    return re.sub(r"^\$\{?PROJECT_ROOT\}?/", "", value)


def run_verl_wrapper(verl: str, step: Any, tmp: Path) -> list[list[str]]:
    """Run the real wrapper with stub python3/uv/ray; return every recorded argv."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    record = tmp / "argv.jsonl"
    record.unlink(missing_ok=True)
    for name in ("python3", "uv", "ray"):
        stub = bindir / name
        stub.write_text(STUB.format(python=sys.executable, record=record))
        stub.chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ.get('PATH', '')}", "HOME": str(tmp / "home"), **step.env}
    env.pop("PYTHONHOME", None)
    subprocess.run(
        ["bash", *step.argv[1:]], cwd=verl, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def trainer_args(recorded: list[list[str]]) -> list[str] | None:
    for argv in recorded:
        if "verl.trainer.main_ppo" in argv:
            rest = argv[argv.index("verl.trainer.main_ppo") + 1 :]
            return [a for a in rest if not a.startswith("--config")]
    return None


def siblings(root: str, rels: set[str]) -> list[str]:
    out: set[str] = set()
    for rel in rels:
        d = (Path(root) / rel).parent
        if d.is_dir():
            out |= {str((d / f.name).relative_to(root)) for f in d.iterdir() if f.is_file()}
        out.add(rel)
    return sorted(p for p in out if (Path(root) / p).exists())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nemo_rl")
    ap.add_argument("verl")
    ap.add_argument("bridge")
    ap.add_argument("--manifest", default=str(MANIFEST_PATH))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the upstream loaders")
    args = ap.parse_args(argv)
    repos = {"nemo-rl": args.nemo_rl, "verl": args.verl, "bridge": args.bridge}
    for name, path in repos.items():
        if not (Path(path) / ".git").exists():
            print(f"check_upstream: {name} {path}: not a git checkout", file=sys.stderr)
            return 2

    missing: list[str] = []
    refused: list[str] = []
    drift: list[str] = []
    files: dict[str, set[str]] = {k: set() for k in repos}
    configs: dict[str, set[str]] = {"nemo-rl": set(), "verl": set()}
    wrappers: dict[str, dict[str, Any]] = {"nemo-rl": {}, "verl": {}}
    nemo_jobs: list[dict[str, Any]] = []
    nemo_labels: list[str] = []
    verl_runs: list[list[str]] = []
    verl_labels: list[str] = []
    plans = steps = 0
    tmp = Path(tempfile.mkdtemp(prefix="check-upstream-"))
    try:
        for spec in all_specs(repos):
            label = f"{spec.framework} L{spec.levels[0]}{'+' + spec.variants[0] if spec.variants else ''}"
            try:
                plan = build_plan(spec)
            except ConsoleError as exc:
                refused.append(f"{label}: plan refused: {exc}")
                continue
            plans += 1
            steps += len(plan.steps)
            drift += [f"{label}: {d['message']}" for d in plan.drift]
            cat = load_framework(spec.framework)
            templates = {s.name: s for lv in cat.levels for s in lv.steps} | {
                s.name: s for v in cat.variants for s in v.steps
            }
            for step in plan.steps:
                role = "bridge" if step.cwd == repos["bridge"] else spec.framework
                root = repos[role]
                for rel in step_paths(step):
                    files[role].add(rel)
                    if not (Path(root) / rel).exists():
                        missing.append(f"{label} {step.name}: {rel}")
                if step.kind != "train":
                    continue
                tpl = (
                    templates.get(step.name)
                    or templates.get(step.name.rsplit("-", 1)[0])
                    or next((t for n, t in templates.items() if step.name.startswith(n)), None)
                )
                config = tpl.config if tpl else None
                script = next((a for a in step.argv if a.endswith(".sh")), None)
                catalog = override_args(step.argv[1:])
                if spec.framework == "nemo-rl":
                    text = (Path(root) / script).read_text() if script else ""
                    if script:
                        added, plain = wrapper_overrides(text)
                        wrappers["nemo-rl"][script] = {"added": sorted(added), "plain": plain}
                        files["nemo-rl"].add(script)
                        drivers = {
                            "run_vlm_grpo.py": "examples/configs/vlm_grpo_3B.yaml",
                            "run_sft.py": "examples/configs/sft.yaml",
                            "run_grpo.py": "examples/configs/grpo_math_1B.yaml",
                        }
                        default = next((c for d, c in drivers.items() if d in text), None)
                        real = wrapper_config(text, default)
                        if "--config" in step.argv:
                            real = step.argv[step.argv.index("--config") + 1]
                        if real and "$" not in real and config != real:
                            missing.append(
                                f"{label} {step.name}: catalog config {config} but the wrapper loads {real}"
                            )
                    if config:
                        configs["nemo-rl"].add(config)
                        files["nemo-rl"].add(config)
                        nemo_jobs.append(
                            {
                                "config": config,
                                "overrides": (nemo_wrapper_args(text) if script else []) + catalog,
                            }
                        )
                        nemo_labels.append(f"{label} {step.name}")
                else:
                    files["verl"].add(VERL_WRAPPER)
                    if config:
                        configs["verl"].add(config)
                        files["verl"].add(config)
                    recorded = run_verl_wrapper(repos["verl"], step, tmp)
                    targs = trainer_args(recorded)
                    if targs is None:
                        refused.append(
                            f"{label} {step.name}: the wrapper never reached verl.trainer.main_ppo"
                        )
                        continue
                    verl_runs.append(targs)
                    verl_labels.append(f"{label} {step.name}")
                    keys = [
                        (re.match(r"^(\+{0,2})([^=]+)=", a) or re.match("()()", "")).groups() for a in targs
                    ]
                    w = wrappers["verl"].setdefault(VERL_WRAPPER, {"added": set(), "plain": set()})
                    user = set(catalog)
                    for arg, (plus, key) in zip(targs, keys, strict=True):
                        if key and "." in key and arg not in user:
                            w["added" if plus else "plain"].add(key)
        # NeMo-RL's own loader
        results = _probe(args.python, NEMO_PROBE, nemo_jobs, repos["nemo-rl"]) if nemo_jobs else []
        config_keys: dict[str, dict[str, list[str]]] = {"nemo-rl": {}, "verl": {}}
        for job, label, res in zip(nemo_jobs, nemo_labels, results, strict=True):
            if res["error"]:
                refused.append(f"{label}: NeMo-RL loader: {res['error']}")
            if res["keys"] is not None:
                config_keys["nemo-rl"][job["config"]] = res["keys"]
        # verl: Hydra composition against verl's config
        verl_cfg = str(Path(repos["verl"]) / VERL_CONFIG_DIR)
        vres = (
            _probe(
                args.python,
                VERL_PROBE,
                {"config_dir": verl_cfg, "config_name": "ppo_megatron_trainer", "runs": verl_runs},
                repos["verl"],
            )
            if verl_runs
            else []
        )
        for label, res in zip(verl_labels, vres, strict=True):
            if res["error"]:
                refused.append(f"{label}: Hydra compose: {res['error']}")
        from console.plan.overrides import ConfigUnavailable, flat_keys, load_config

        for config in configs["verl"]:
            try:
                config_keys["verl"][config] = sorted(flat_keys(load_config(Path(repos["verl"]) / config)))
            except ConfigUnavailable as exc:
                missing.append(f"verl config {config}: {exc}")
        missing += wrapper_model_mismatches(repos)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    manifest = {
        "generated_by": "scripts/check_upstream.py",
        "note": "Upstream facts (paths, config key names, wrapper keys) the catalog was verified against; no upstream code.",
        "repos": {
            role: {
                "commit": git_head(path),
                "files": siblings(path, files[role]),
                **(
                    {
                        "configs": config_keys.get(role, {}),
                        "wrappers": {
                            k: {
                                "added": sorted(v["added"]),
                                "plain": sorted(v["plain"]) if isinstance(v["plain"], set) else v["plain"],
                            }
                            for k, v in wrappers.get(role, {}).items()
                        },
                    }
                    if role in config_keys
                    else {}
                ),
            }
            for role, path in repos.items()
        },
    }
    summary = {
        "commits": {k: v["commit"] for k, v in manifest["repos"].items()},
        "plans": plans,
        "steps": steps,
        "nemo_rl_override_sets": len(nemo_jobs),
        "verl_wrapper_runs": len(verl_runs),
        "missing_paths": len(missing),
        "refused_overrides": len(refused),
        "drift_findings": len(drift),
    }
    if not args.no_write:
        write_text_atomic(Path(args.manifest), json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if args.json:
        print(
            json.dumps(
                {**summary, "details": {"missing": missing, "refused": refused, "drift": drift}}, indent=2
            )
        )
    else:
        print("check_upstream summary")
        for role, commit in summary["commits"].items():
            print(f"  {role:8s} {commit}")
        print(
            f"  plans built: {plans} ({steps} steps); NeMo-RL override sets checked with NeMo-RL's loader: "
            f"{len(nemo_jobs)}; verl wrapper runs composed with Hydra: {len(verl_runs)}"
        )
        print(
            f"  missing paths: {len(missing)}  refused overrides: {len(refused)}  drift findings: {len(drift)}"
        )
        for line in missing + refused + drift:
            print(f"  - {line}")
        if not args.no_write:
            print(f"  manifest: {args.manifest}")
    return 0 if not (missing or refused or drift) else 1


if __name__ == "__main__":
    sys.exit(main())
