"""Which run to compare a run with: the latest other run of the same framework, levels and model."""

from __future__ import annotations

from pathlib import Path

from console.fileio import read_json
from console.runs.store import RunStore


def _key(run_dir: Path) -> tuple[str, tuple[int, ...], str] | None:
    spec = read_json(run_dir / "spec.json")
    if not isinstance(spec, dict):
        return None
    return (
        str(spec.get("framework") or "?"),
        tuple(int(x) for x in spec.get("levels") or []),
        str(spec.get("model") or ""),
    )


def _created(run_dir: Path) -> tuple[float, str]:
    state = read_json(run_dir / "state.json") or {}
    return (float(state.get("created") or 0.0) if isinstance(state, dict) else 0.0, run_dir.name)


def pair_with_latest_peer(runs_dir: Path, run_dir: Path) -> tuple[Path, Path] | None:
    """(baseline, candidate): ``run_dir`` and the newest other run like it, the older one first."""
    run_dir = Path(run_dir).resolve()
    key = _key(run_dir)
    if key is None:
        return None
    others = [p.resolve() for p in RunStore(runs_dir).run_dirs()]
    peers = [p for p in others if p != run_dir and _key(p) == key]
    if not peers:
        return None
    peer = max(peers, key=_created)
    return (peer, run_dir) if _created(peer) < _created(run_dir) else (run_dir, peer)
