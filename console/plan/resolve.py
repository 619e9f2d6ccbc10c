"""Resolve a plan against the checkouts it will run in: catalog drift findings.

Every script, test file and config a step names must exist in the checkout the step runs in, and
every Hydra override a training step passes (the catalog's own, the wrapper's own, the user's) must
fit the config that step loads, with Hydra's rules: ``key=v`` needs an existing key, ``+key=v`` a
missing one, ``++key=v`` either. Keys the wrapper script itself adds with ``+``/``++`` count as
present for the arguments that come after it (the catalog's and the user's, appended to ``$@``).

A miss is a ``catalog_drift`` finding (DESIGN.md class id) with the closest existing path or key.
Sources: a real checkout (``CheckoutSource``), or, when none is given, the upstream manifest that
``scripts/check_upstream.py`` writes (``ManifestSource``, ``console/catalog/upstream_manifest.json``).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast

from console.catalog import CATALOG_DIR
from console.fileio import read_json
from console.plan.model import DriftRecord

MANIFEST_PATH = CATALOG_DIR / "upstream_manifest.json"
DRIFT_CLASS = "catalog_drift"
PATH_SUFFIXES = (".py", ".sh", ".yaml", ".yml")
# a Hydra override at the start of a wrapper-script line: "  +a.b=..", "a.b.c=..", "++x.y=.."
_WRAPPER_OVERRIDE_RE = re.compile(r"^\s*(\+{0,2})([A-Za-z_][\w-]*(?:\.[\w-]+)+)=", re.MULTILINE)
_OVERRIDE_RE = re.compile(r"^(~|\+{1,2})?([A-Za-z_][\w-]*(?:\.[\w-]+)*)(?:@[\w.]+)?=")


@dataclass
class Drift:
    """One catalog-drift finding (plan.json ``drift`` entry)."""

    step: str
    kind: str  # missing_path | unknown_key | key_exists
    item: str
    origin: str  # catalog | wrapper | user
    where: str  # the checkout role/file it was checked against
    closest: str | None = None
    source: str = "checkout"

    @property
    def message(self) -> str:
        hint = f"; closest: {self.closest}" if self.closest else ""
        what = {
            "missing_path": f"{self.item} does not exist in {self.where}",
            "unknown_key": f"override {self.item!r} ({self.origin}): key not in {self.where}",
            "key_exists": f"override {self.item!r} ({self.origin}): '+' adds a key {self.where} already has",
        }
        return f"{self.step}: {what.get(self.kind, self.item)}{hint}"

    def to_dict(self) -> DriftRecord:
        return cast(DriftRecord, {**asdict(self), "class": DRIFT_CLASS, "message": self.message})


class Source(Protocol):
    label: str

    def has_path(self, role: str, rel: str) -> bool: ...
    def candidates(self, role: str, rel: str) -> list[str]: ...
    def config_keys(self, role: str, rel: str) -> set[str] | None: ...
    def wrapper_keys(self, role: str, rel: str) -> tuple[set[str], list[str]]: ...


def wrapper_overrides(text: str) -> tuple[set[str], list[str]]:
    """(keys the script adds with '+'/'++', keys it overrides plainly) from a wrapper's text."""
    added: set[str] = set()
    plain: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for m in _WRAPPER_OVERRIDE_RE.finditer(line):
            (added.add(m.group(2)) if m.group(1) else plain.append(m.group(2)))
    return added, list(dict.fromkeys(plain))


class CheckoutSource:
    """The user's checkouts: ``roots`` maps ``repo``/``bridge`` to directories."""

    label = "checkout"

    def __init__(self, roots: dict[str, str | None]) -> None:
        self.roots = {k: v for k, v in roots.items() if v}

    def _path(self, role: str, rel: str) -> Path | None:
        root = self.roots.get(role)
        return Path(rel) if Path(rel).is_absolute() else (Path(root) / rel if root else None)

    def has_path(self, role: str, rel: str) -> bool:
        p = self._path(role, rel)
        return p is None or p.exists()

    def candidates(self, role: str, rel: str) -> list[str]:
        root = self.roots.get(role)
        if not root:
            return []
        base = Path(root)
        parent = (base / rel).parent
        while parent != base and not parent.is_dir():
            parent = parent.parent
        if parent == base and len(Path(rel).parts) > 1:
            parent = base / Path(rel).parts[0]
            if not parent.is_dir():
                return []
        out: list[str] = []
        for dirpath, dirnames, files in os.walk(parent):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            out += [os.path.relpath(os.path.join(dirpath, f), base) for f in files]
            if len(out) > 20000:
                break
        return out

    def config_keys(self, role: str, rel: str) -> set[str] | None:
        from console.plan.overrides import ConfigUnavailable, flat_keys, load_config

        p = self._path(role, rel)
        if p is None:
            return None
        try:
            return set(flat_keys(load_config(p)))
        except ConfigUnavailable:
            return None

    def wrapper_keys(self, role: str, rel: str) -> tuple[set[str], list[str]]:
        p = self._path(role, rel)
        try:
            return wrapper_overrides(p.read_text(encoding="utf-8", errors="replace")) if p else (set(), [])
        except OSError:
            return set(), []


class ManifestSource:
    """The upstream facts ``scripts/check_upstream.py`` recorded (paths, config key trees, wrapper keys)."""

    def __init__(self, manifest: dict[str, Any], roles: dict[str, str]) -> None:
        self.m = manifest
        self.roles = roles  # repo -> nemo-rl | verl, bridge -> bridge
        commits = ", ".join(f"{k} {v.get('commit', '?')[:10]}" for k, v in manifest.get("repos", {}).items())
        self.label = f"upstream manifest ({commits})"

    def _repo(self, role: str) -> dict[str, Any]:
        repo: dict[str, Any] = self.m.get("repos", {}).get(self.roles.get(role, role), {})
        return repo

    def has_path(self, role: str, rel: str) -> bool:
        return rel in set(self._repo(role).get("files", []))

    def candidates(self, role: str, rel: str) -> list[str]:
        return list(self._repo(role).get("files", []))

    def config_keys(self, role: str, rel: str) -> set[str] | None:
        keys = self._repo(role).get("configs", {}).get(rel)
        return set(keys) if keys is not None else None

    def wrapper_keys(self, role: str, rel: str) -> tuple[set[str], list[str]]:
        w = self._repo(role).get("wrappers", {}).get(rel) or {}
        return set(w.get("added", [])), list(w.get("plain", []))


class RoleSource:
    """Checkout roles from the user's checkouts, the others (``manifest_roles``) from the manifest."""

    def __init__(self, checkout: CheckoutSource, manifest: ManifestSource, manifest_roles: set[str]) -> None:
        self.checkout, self.manifest, self.manifest_roles = checkout, manifest, set(manifest_roles)
        self.label = manifest.label

    def _for(self, role: str) -> Source:
        return self.manifest if role in self.manifest_roles else self.checkout

    def has_path(self, role: str, rel: str) -> bool:
        return self._for(role).has_path(role, rel)

    def candidates(self, role: str, rel: str) -> list[str]:
        return self._for(role).candidates(role, rel)

    def config_keys(self, role: str, rel: str) -> set[str] | None:
        return self._for(role).config_keys(role, rel)

    def wrapper_keys(self, role: str, rel: str) -> tuple[set[str], list[str]]:
        return self._for(role).wrapper_keys(role, rel)


def manifest_commits(
    manifest: dict[str, Any], roles: dict[str, str], only: Iterable[str] | None = None
) -> str:
    """'nemo-rl 7ea279abfbeb, bridge 067f987df03b': the manifest's commits of the given checkout roles."""
    repos = manifest.get("repos", {})
    picked = [roles.get(r, r) for r in (only if only is not None else roles)]
    return (
        ", ".join(f"{name} {str(repos.get(name, {}).get('commit') or 'unknown')[:12]}" for name in picked)
        or "unknown commits"
    )


@cache
def load_manifest(path: str = str(MANIFEST_PATH)) -> dict[str, Any]:
    manifest: dict[str, Any] = read_json(Path(path), {})  # {}: missing or unreadable
    return manifest


def closest(item: str, pool: Iterable[str]) -> str | None:
    pool = list(pool)
    if not pool:
        return None
    leaf = item.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    same_leaf = [p for p in pool if p.rsplit("/", 1)[-1].rsplit(".", 1)[-1] == leaf]
    best = difflib.get_close_matches(item, same_leaf or pool, n=1, cutoff=0.3)
    if not best and same_leaf:
        best = difflib.get_close_matches(item, pool, n=1, cutoff=0.3)
    return best[0] if best else None


def step_paths(step: Any) -> list[str]:
    """The files a step names in its argv (scripts, test files, configs), relative to its cwd."""
    outputs = {x for x in [*(step.log_files or []), step.tb_dir, step.metrics_json] if x}
    out: list[str] = []
    for arg in step.argv:
        if arg.startswith("-") or "=" in arg or "{" in arg or arg in outputs:
            continue
        path = arg.split("::", 1)[0]
        if path.endswith(PATH_SUFFIXES) and ("/" in path or path.endswith((".sh", ".py"))):
            out.append(path)
    return list(dict.fromkeys(out))


def override_args(argv: list[str]) -> list[str]:
    """The Hydra overrides among an argv (``key=value``, ``+key=``, ``++key=``, ``~key``)."""
    return [a for a in argv if not a.startswith("-") and (_OVERRIDE_RE.match(a) or re.match(r"^~[\w.]+$", a))]


def _key(arg: str) -> tuple[str, str]:
    m = _OVERRIDE_RE.match(arg)
    if not m:
        return "~", arg.lstrip("~").split("=", 1)[0]
    return m.group(1) or "", m.group(2)


def check_override(arg: str, keys: set[str]) -> tuple[str, str | None] | None:
    """(kind, closest) when Hydra would refuse ``arg`` on a config with ``keys``; None when it fits."""
    prefix, key = _key(arg)
    if prefix == "++" or (key in keys) != (prefix == "+"):  # '+' adds a new key, the others need one
        return None
    return ("key_exists", None) if prefix == "+" else ("unknown_key", _closest_key(key, keys))


def _closest_key(key: str, keys: set[str]) -> str | None:
    from console.plan.overrides import did_you_mean  # Hydra loads only when a config is checked

    return did_you_mean(key, list(keys))


def resolve_step(
    step: Any,
    role: str,
    config: str | None,
    catalog_args: list[str],
    user_args: list[str],
    source: Source,
    where_label: str | None = None,
) -> list[Drift]:
    """Drift findings for one step: its files, then its overrides against the config it loads."""
    where = f"the {role} {where_label or source.label}"

    def missing(rel: str) -> Drift:
        return Drift(
            step.name,
            "missing_path",
            rel,
            "catalog",
            where,
            closest(rel, source.candidates(role, rel)),
            source.label,
        )

    found = [missing(rel) for rel in step_paths(step) if not source.has_path(role, rel)]
    if not config:
        return found
    keys = source.config_keys(role, config)
    if keys is None:
        if not any(d.item == config for d in found):
            found.append(missing(config))
        return found
    script = next((a for a in step.argv if a.endswith(".sh")), None)
    added, plain = source.wrapper_keys(role, script) if script else (set(), [])
    for key in plain:  # the wrapper's own plain overrides must exist in the config
        if key not in keys and key not in added:
            found.append(
                Drift(step.name, "unknown_key", key, "wrapper", config, _closest_key(key, keys), source.label)
            )
    known = keys | added
    for origin, args in (("catalog", catalog_args), ("user", user_args)):
        for arg in args:
            bad = check_override(arg, known)
            if bad:
                found.append(Drift(step.name, bad[0], arg, origin, config, bad[1], source.label))
            elif origin == "catalog":
                known.add(_key(arg)[1])
    return found
