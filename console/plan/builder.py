"""RunSpec -> Plan: the catalog's steps for the requested levels and variants, resolved exactly.

Nothing here runs through a shell: argv lists are assembled from catalog strings with placeholders
replaced by whole values, and user text (overrides, env, paths) only ever becomes one argv element
or one env value.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.catalog import CatalogError, FrameworkCatalog, StepTemplate, Variant, load_framework
from console.errors import SpecError
from console.plan.gpus import visible_gpus
from console.plan.model import DriftRecord, Plan, ResolveInputs, Step
from console.plan.overrides import check_unquoted, effective_values, parse_override, validate_overrides
from console.plan.resolve import (
    CheckoutSource,
    ManifestSource,
    RoleSource,
    Source,
    load_manifest,
    manifest_commits,
    override_args,
    resolve_step,
)
from console.spec import RunSpec

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HF_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)?$")
# "${NAME}" / "${NAME:-default}" (default may hold {placeholders}) or "{placeholder}"
_TOKEN_RE = re.compile(r"\$\{(\w+)(?::-((?:[^{}]|\{\w+\})*))?\}|\{(\w+)\}")
_PLACEHOLDER_RE = re.compile(r"\{(\w+)\}")
KEEP = {"run_dir"}  # replaced by the launcher


class _Unset(Exception):
    """A ${NAME} without default whose variable is not set: the env entry is left out."""


@dataclass
class _Ctx:
    values: dict[str, str]
    lookup: Callable[[str], str | None]

    def expand(self, text: str) -> str:
        def placeholder(name: str) -> str:
            if name in KEEP:
                return "{" + name + "}"
            if name not in self.values:
                raise CatalogError(f"unknown placeholder {{{name}}} in {text!r}")
            return self.values[name]

        def sub(m: re.Match[str]) -> str:
            if m.group(3):
                return placeholder(m.group(3))
            value = self.lookup(m.group(1))
            if value:
                return value
            if m.group(2) is None:
                raise _Unset(m.group(1))
            return _PLACEHOLDER_RE.sub(lambda p: placeholder(p.group(1)), m.group(2))

        return _TOKEN_RE.sub(sub, text)

    def expand_env(self, env: dict[str, str], into: dict[str, str]) -> None:
        for key, template in env.items():
            try:
                into[key] = self.expand(template)
            except _Unset:
                continue


@dataclass
class _Selected:
    template: StepTemplate
    level: int | None
    variants: list[Variant] = field(default_factory=list)
    extra_args: list[str] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    title: str | None = None

    def apply(self, v: Variant) -> None:
        """Apply a modify variant to this step."""
        self.variants.append(v)
        self.extra_args.extend(v.args)
        self.extra_env.update(v.env)


def framework_catalog(framework: str) -> FrameworkCatalog:
    """The framework's catalog; its CatalogError as a SpecError (bad input: exit 2)."""
    try:
        return load_framework(framework)
    except CatalogError as exc:
        raise SpecError(str(exc)) from None


def _git_checkout(path: str | None, flag: str, framework: str, env_name: str) -> str:
    if not path:
        raise SpecError(f"{flag} is required for {framework} (or set {env_name})")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise SpecError(f"{flag} {path}: no such directory")
    try:
        proc = subprocess.run(
            ["git", "-C", str(p), "rev-parse", "--git-dir"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError(f"{flag} {path}: cannot run git ({exc})") from None
    if proc.returncode != 0:
        raise SpecError(f"{flag} {path}: not a git checkout (git rev-parse failed)")
    return str(p.resolve())


def _model(model: str | None) -> tuple[str | None, bool]:
    """(value, is_local_path). A local path must exist; anything else must look like an HF id."""
    if not model:
        return None, False
    if "\x00" in model:
        raise SpecError("--model contains a NUL character")
    looks_local = model.startswith(("/", "./", "../", "~")) or Path(model).expanduser().exists()
    if looks_local:
        p = Path(model).expanduser()
        if not p.exists():
            raise SpecError(f"--model {model}: no such local model path")
        return str(p.resolve()), True
    if not HF_ID_RE.match(model):
        raise SpecError(f"--model {model!r}: neither an existing local path nor a Hugging Face id (org/name)")
    return model, False


def _check_env(env: dict[str, str]) -> None:
    for key, value in env.items():
        if not isinstance(key, str) or not ENV_NAME_RE.match(key):
            raise SpecError(
                f"--env {key!r}: invalid environment variable name (letters, digits, _; "
                "not starting with a digit)"
            )
        if not isinstance(value, str) or "\x00" in value:
            raise SpecError(f"--env {key}: value must be text without NUL characters")


def _levels_and_variants(cat: FrameworkCatalog, spec: RunSpec) -> tuple[list[int], list[Variant]]:
    numbers = [lv.number for lv in cat.levels]
    levels = sorted(set(spec.levels or [0]))
    for n in levels:
        if n not in numbers:
            raise SpecError(f"Level {n} is not a {cat.name} level (levels: {', '.join(map(str, numbers))})")
    variants: list[Variant] = []
    for name in dict.fromkeys(spec.variants or []):
        v = cat.variant(name)
        if v is None:
            known = ", ".join(x.name for x in cat.variants) or "none"
            raise SpecError(f"unknown variant {name!r} for {cat.name} (variants: {known})")
        if not set(v.levels) & set(levels):
            lv = " or ".join(f"--level {n}" for n in v.levels)
            raise SpecError(
                f"variant {name!r} belongs to Level {'/'.join(map(str, v.levels))}, "
                f"which was not requested (add {lv})"
            )
        variants.append(v)
    for n in levels:
        level = cat.level(n)
        if level and level.requires_variant and not any(n in v.levels for v in variants):
            names = ", ".join(v.name for v in cat.variants if n in v.levels)
            raise SpecError(f"Level {n} ({level.title}) needs a variant: --variant one of {names}")
    return levels, variants


def _select(cat: FrameworkCatalog, levels: list[int], variants: list[Variant]) -> list[_Selected]:
    out: list[_Selected] = []
    for n in levels:
        level = cat.level(n)
        assert level is not None
        mine = [v for v in variants if n in v.levels]
        for st in level.steps:
            sel = _Selected(st, n)
            for v in mine:
                if v.mode == "modify" and _targets(v, st):
                    sel.apply(v)
            out.append(sel)
            for v in mine:
                if v.mode == "rerun" and _targets(v, st):
                    out.append(
                        _Selected(
                            st,
                            n,
                            variants=[*sel.variants, v],
                            extra_args=[*sel.extra_args, *v.args],
                            extra_env={**sel.extra_env, **v.env},
                            name=f"{st.name}-{v.name}",
                            title=f"{st.title} [{v.title}]",
                        )
                    )
        for v in mine:
            if v.mode == "add":
                for st in v.steps:
                    sel = _Selected(st, n, variants=[v])
                    for other in mine:  # modify variants that target every train step apply here too
                        if other.mode == "modify" and "*train" in other.targets and st.kind == "train":
                            sel.apply(other)
                    out.append(sel)
    return out


def _targets(v: Variant, st: StepTemplate) -> bool:
    return st.name in v.targets or ("*train" in v.targets and st.kind == "train")


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip().strip("'\""))
    except (TypeError, ValueError):
        return None


def build_plan(spec: RunSpec, *, manifest_fallback: bool = False) -> Plan:
    """Turn a run spec into ordered, exact steps; SpecError (one line) on bad input.

    ``manifest_fallback`` (``rl-console plan``): a checkout that was not given at all is not an error;
    its paths show as ``$NEMO_RL_REPO``-style placeholders and its steps resolve against the upstream
    manifest, which a warning says. A checkout given but missing is still an error, and a run always
    needs both checkouts."""
    cat = framework_catalog(spec.framework)
    _check_env(spec.env or {})
    levels, variants = _levels_and_variants(cat, spec)
    warnings: list[str] = []

    repo = bridge = None
    from_manifest: dict[str, str] = {}  # role -> placeholder, for checkouts resolved on the manifest
    if cat.needs_repo:
        if manifest_fallback and not spec.repo:
            from_manifest["repo"] = f"${cat.repo_env or 'REPO'}"
        else:
            repo = _git_checkout(spec.repo, "--repo", cat.name, cat.repo_env or "the repo variable")
    if cat.needs_bridge or spec.bridge_repo:  # optional where not needed (the demo's weight-conversion hook)
        if cat.needs_bridge and manifest_fallback and not spec.bridge_repo:
            from_manifest["bridge"] = "$BRIDGE_REPO"
        else:
            bridge = _git_checkout(spec.bridge_repo, "--bridge-repo", cat.name, "BRIDGE_REPO")
    if cat.overrides == "none" and spec.overrides:
        raise SpecError(f"--override is not accepted for {cat.name}: it has no Hydra config")
    model, local_model = _model(spec.model)
    if model and not (cat.model_args or cat.model_env):
        warnings.append(f"--model is ignored for {cat.name}")

    user_env = dict(spec.env or {})

    def lookup(name: str) -> str | None:
        return user_env.get(name) if name in user_env else os.environ.get(name)

    ctx = _Ctx(
        {
            "repo": repo or from_manifest.get("repo", ""),
            "bridge": bridge or from_manifest.get("bridge", ""),
            "model": model or "",
            "python": sys.executable,
            "home": str(Path.home()),
        },
        lookup,
    )
    for key, template in cat.placeholders.items():
        ctx.values[key] = ctx.expand(template)
    pythonpath = None
    parts = [x for x in (ctx.expand(p) for p in cat.pythonpath) if x]  # an unset optional repo adds nothing
    if parts:
        existing = lookup("PYTHONPATH")
        pythonpath = ":".join(parts + ([existing] if existing else []))
    ctx.values["pythonpath"] = pythonpath or ""

    remedy = spec.extra.get("remedy")
    remedy = remedy if isinstance(remedy, dict) else {}
    remedy_env = {str(k): str(v) for k, v in (remedy.get("env") or {}).items()}
    _check_env(remedy_env)
    remedy_unset = [str(x) for x in remedy.get("unset") or []]
    remedy_overrides = [str(x) for x in remedy.get("overrides") or []]
    user_overrides = [*spec.overrides, *remedy_overrides]

    bridge_tests = [str(t) for t in spec.extra.get("bridge_tests") or []]
    for t in bridge_tests:
        if "\x00" in t or not bridge or not (Path(bridge) / t.split("::", 1)[0]).exists():
            raise SpecError(f"--bridge-test {t}: not found in the Bridge checkout {bridge or '(none)'}")

    base_env = {"PYTHONPATH": pythonpath} if pythonpath is not None else {}
    base_env |= {name: value for name in cat.pass_env if (value := lookup(name))}

    launcher_on = bool(cat.launcher) and not any(lookup(k) == v for k, v in cat.launcher_off.items())
    checkout = CheckoutSource({"repo": repo, "bridge": bridge})
    user_for = _user_overrides_per_step(cat, levels, variants, user_overrides, repo, ctx, checkout, warnings)
    steps: list[Step] = []
    resolve_args: ResolveInputs = {}

    def make(st: StepTemplate, level: int | None, sel: _Selected | None = None) -> Step:
        env = dict(base_env)
        if st.kind == "train":
            ctx.expand_env(cat.run_env, env)
        ctx.expand_env(st.env, env)
        argv = [ctx.expand(a) for a in st.argv]
        if st.launcher and launcher_on:
            argv = [ctx.expand(a) for a in cat.launcher] + argv
        extra: list[str] = [ctx.expand(a) for a in (sel.extra_args if sel else [])]
        if sel:
            ctx.expand_env(sel.extra_env, env)
        if model:
            if st.model:
                extra += [ctx.expand(a) for a in (cat.model_path_args if local_model else cat.model_args)]
                ctx.expand_env(cat.model_path_env if local_model else cat.model_env, env)
            ctx.expand_env(st.model_env, env)
        if st.append_bridge_tests:
            argv += bridge_tests
        env.update({k: v for k, v in user_env.items() if not (k == "PYTHONPATH" and pythonpath)})
        unset: list[str] = []
        mine: list[str] = []
        if st.overrides:
            script = next((a for a in argv if a.endswith(".sh")), argv[-1]) if st.forwards_unquoted else None
            for arg in extra:
                if script:
                    warnings.extend(check_unquoted(arg, script))
                if not arg.startswith("-") and ("=" in arg or arg.startswith("~")):  # not a flag or its value
                    parse_override(arg)
            mine = user_for.get((st.config, _script(argv)), list(user_overrides))
        catalog_args = override_args(argv[1:] + extra)
        extra += mine
        if st.kind == "train":
            env.update(remedy_env)
            unset = [u for u in remedy_unset if u not in env]
        argv += extra
        eff = effective_values([f"{k}={v}" for k, v in st.implied.items()] + argv)
        gpus = st.gpus
        if st.gpus_key and _int(eff.get(st.gpus_key)) is not None:
            gpus = _int(eff[st.gpus_key]) or 0
        if st.gpus_env:
            gpus = _int(env.get(st.gpus_env) or lookup(st.gpus_env)) or gpus
        total = st.total_steps
        if st.steps_key and _int(eff.get(st.steps_key)) is not None:
            total = _int(eff[st.steps_key])
        if st.steps_env and _int(env.get(st.steps_env)) is not None:
            total = _int(env[st.steps_env])
        vs = sel.variants if sel else []
        cwd = {
            "repo": repo or from_manifest.get("repo"),
            "bridge": bridge or from_manifest.get("bridge"),
        }.get(st.cwd) or ctx.expand(st.cwd)
        if cat.tp_guard and st.kind == "train":
            _tp_warning(cat, st, eff, sel.name if sel and sel.name else st.name, warnings)
        resolve_args[sel.name if sel and sel.name else st.name] = (st.cwd, st.config, catalog_args, mine)
        return Step(
            name=(sel.name if sel and sel.name else st.name),
            title=(sel.title if sel and sel.title else st.title)
            + ("" if not vs or (sel and sel.name) else " + " + ", ".join(v.title for v in vs)),
            argv=argv,
            cwd=cwd,
            env=env,
            unset=unset,
            gpus=gpus,
            proves=ctx.expand(st.proves) + "".join(" " + v.proves for v in vs if v.proves not in st.proves),
            criteria=[ctx.expand(c) for c in st.criteria] + [c for v in vs for c in v.criteria],
            level=level,
            variant=",".join(v.name for v in vs) or None,
            deliverable=st.deliverable,
            kind=st.kind,
            log_files=[ctx.expand(x) for x in st.log_files],
            tb_dir=ctx.expand(st.tb_dir) if st.tb_dir else None,
            metrics_json=ctx.expand(st.metrics_json) if st.metrics_json else None,
            checks=list(st.checks),
            total_steps=total,
            on_failure=st.on_failure,
            report_metrics=[*st.report_metrics, *(m for v in vs for m in v.report_metrics)],
            notes=[n for n in [st.note, *(v.note for v in vs)] if n],
        )

    for st in cat.setup:
        if st.when_levels and not set(st.when_levels) & set(levels):
            continue
        if st.skip_if_exists and all(Path(ctx.expand(p)).exists() for p in st.skip_if_exists):
            continue
        steps.append(make(st, None))
    for sel in _select(cat, levels, variants):
        step = make(sel.template, sel.level, sel)
        if step.kind == "train":
            for bt in cat.before_train:
                pre = make(bt, sel.level)
                pre.name = f"{step.name}-{bt.name}"
                steps.append(pre)
        steps.append(step)
        if (sel.template.needs_model or any(v.needs_model for v in sel.variants)) and not model:
            warnings.append(
                f"{step.name}: needs the model under test (--model); the default model does not "
                "exercise this architecture"
            )

    _gpu_warning(cat, spec, steps, warnings)
    plan = Plan(spec=replace(spec, levels=levels), steps=steps, warnings=list(dict.fromkeys(warnings)))
    plan.resolve_inputs = resolve_args
    source: Source = checkout
    if from_manifest:
        manifest = load_manifest()
        roles = {"repo": cat.name, "bridge": "bridge"}
        source = RoleSource(checkout, ManifestSource(manifest, roles), set(from_manifest))
        plan.warnings.insert(
            0,
            "no checkout given for "
            + " and ".join(
                f"{'the Bridge' if r == 'bridge' else cat.title} ({p})" for r, p in from_manifest.items()
            )
            + f": resolved against the upstream manifest of {manifest_commits(manifest, roles, from_manifest)}, "
            "not your checkout",
        )
    plan.drift = resolve_plan(plan, resolve_args, source)
    return plan


def resolve_plan(plan: Plan, inputs: ResolveInputs, source: Source) -> list[DriftRecord]:
    """Catalog-drift findings of every step (``inputs``: step -> (cwd role, config, catalog args, user args))."""
    found: list[DriftRecord] = []
    for step in plan.steps:
        role, config, catalog_args, user_args = inputs.get(step.name, ("repo", None, [], []))
        if role in ("repo", "bridge"):
            found += [d.to_dict() for d in resolve_step(step, role, config, catalog_args, user_args, source)]
    return found


def _script(argv: list[str]) -> str | None:
    return next((a for a in argv if a.endswith(".sh")), None)


def _user_overrides_per_step(
    cat: FrameworkCatalog,
    levels: list[int],
    variants: list[Variant],
    user_overrides: list[str],
    repo: str | None,
    ctx: _Ctx,
    checkout: CheckoutSource,
    warnings: list[str],
) -> dict[tuple[str | None, str | None], list[str]]:
    """Which user overrides each training step gets: checked against the config that step loads
    (plus the keys its wrapper adds with '+'). An override no step accepts is refused (SpecError);
    one that only some steps' configs have goes to those steps only, with a warning."""
    targets: dict[tuple[str | None, str | None], str] = {}
    for sel in _select(cat, levels, variants):
        st = sel.template
        if st.overrides:
            argv = [ctx.expand(a) for a in st.argv]
            targets.setdefault((st.config, _script(argv)), sel.name or st.name)
    if not user_overrides or not targets:
        return {}
    out: dict[tuple[str | None, str | None], list[str]] = {k: [] for k in targets}
    for text in user_overrides:
        errors: list[SpecError] = []
        took: list[str] = []
        for _config, script in targets:
            if script and any(s.forwards_unquoted for s in _train_templates(cat)):
                warnings.extend(check_unquoted(text, script))  # a split argument is refused outright
        for (config, script), name in targets.items():
            added = checkout.wrapper_keys("repo", script)[0] if script else set()
            try:
                if repo is None:  # no checkout: syntax here, keys in the plan's resolution (manifest)
                    parse_override(text)
                else:
                    warnings.extend(validate_overrides([text], repo, config, extra_keys=added))
            except SpecError as exc:
                errors.append(exc)
                continue
            out[(config, script)].append(text)
            took.append(name)
        if not took:
            raise errors[0]
        if errors:
            left = [n for k, n in targets.items() if text not in out[k]]
            warnings.append(
                f"override {text!r} fits only {', '.join(took)}: not passed to {', '.join(left)} "
                f"(its key is not in the config {'that step' if len(left) == 1 else 'those steps'} load)"
            )
    return out


def _train_templates(cat: FrameworkCatalog) -> list[StepTemplate]:
    return [st for lv in cat.levels for st in lv.steps] + [st for v in cat.variants for st in v.steps]


def _tp_warning(
    cat: FrameworkCatalog, st: StepTemplate, eff: dict[str, str], name: str, warnings: list[str]
) -> None:
    guard = cat.tp_guard
    assert guard is not None
    tp = max((_int(eff.get(k)) or 0 for k in guard.tp_keys), default=0)
    micro, logprob = eff.get(guard.micro_key), eff.get(guard.logprob_key)
    if tp >= guard.min_tp and micro is not None and logprob is not None and _int(micro) != _int(logprob):
        warnings.append(
            f"{name}: TP={tp} with {guard.micro_key}={micro} != {guard.logprob_key}={logprob}. {guard.advice}"
        )


def _gpu_warning(cat: FrameworkCatalog, spec: RunSpec, steps: Iterable[Step], warnings: list[str]) -> None:
    need = {s.name: s.gpus for s in steps if s.gpus}
    if not need:
        return
    if spec.launcher == "slurm":
        have = spec.slurm.gpus_per_node
        where = "per Slurm node (--gpus-per-node)"
        if have is None:
            return
    else:
        have = visible_gpus()
        where = "visible here"
    over = [n for n, g in need.items() if g > have]
    if over:
        most = max(need[n] for n in over)
        warnings.append(
            f"{', '.join(over)}: need{'s' if len(over) == 1 else ''} up to {most} GPUs, "
            f"{have} {where}. {cat.gpus_advice}".strip()
        )
