"""``python -m console.monitor.tb_dump LOGDIR [LOGDIR...] --output_path OUT``

Writes ``{tag: {"<step>": value}}`` from every TensorBoard event file under the folders, merged
like NeMo-RL's tests/json_dump_tb_logs.py (files by modification time, later wins; optional
``--error-on-conflicts`` and ``--require-tag-prefix``). Exit 0 on success, 1 on any error.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from console.fileio import write_json_atomic
from console.monitor.tb_reader import TbReader, find_event_files


def dump(
    logdirs: list[str | os.PathLike[str]],
    output_path: str | os.PathLike[str] | None = None,
    error_on_conflicts: bool = False,
    require_tag_prefix: str | None = None,
) -> dict[str, dict[str, float]]:
    """Read the event files and (optionally) write metrics.json atomically; returns the data."""
    dirs = [Path(d) for d in logdirs]
    where = ", ".join(str(d) for d in dirs)
    if not find_event_files(dirs):
        raise FileNotFoundError(f"No TensorBoard event files found under {where}")
    reader = TbReader(*dirs)
    reader.poll()
    data = reader.metrics(error_on_conflicts=error_on_conflicts)
    if require_tag_prefix and not any(t.startswith(require_tag_prefix) for t in data):
        raise ValueError(f"No TensorBoard tag starts with '{require_tag_prefix}' under {where}")
    if output_path is not None:
        write_json_atomic(Path(output_path), data)
    return data


def _summary(data: dict[str, dict[str, float]]) -> str:
    lines = []
    for tag, steps in data.items():
        vals = list(steps.values())
        keys = list(steps)
        finite = [v for v in vals if v == v]
        stats = (
            f"Min: {min(finite):.6g}  Max: {max(finite):.6g}  Avg: {statistics.fmean(finite):.6g}"
            if finite
            else "all NaN"
        )
        head = ", ".join(f"{k}: {steps[k]:.6g}" for k in keys[:3])
        tail = ", ".join(f"{k}: {steps[k]:.6g}" for k in keys[-3:]) if len(keys) > 3 else ""
        lines.append(
            f"{tag} ({len(vals)} steps)  {stats}  first: {head}" + (f"  last: {tail}" if tail else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m console.monitor.tb_dump", description=__doc__.split("\n\n")[1]
    )
    ap.add_argument(
        "log_dir", nargs="+", help="folders holding TensorBoard event files (searched recursively)"
    )
    ap.add_argument("--output_path", "--output-path", default=None, help="metrics.json to write")
    ap.add_argument(
        "--error-on-conflicts", action="store_true", help="fail when two files disagree on a step"
    )
    ap.add_argument("--require-tag-prefix", default=None, help="fail unless some tag starts with this")
    args = ap.parse_args(argv)
    try:
        files = find_event_files([Path(d) for d in args.log_dir])
        data = dump(args.log_dir, args.output_path, args.error_on_conflicts, args.require_tag_prefix)
    except Exception as e:  # noqa: BLE001 - one clear line, exit 1 (as json_dump_tb_logs.py)
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print("Found TensorBoard Event Files:")
    for f in files:
        print(f"  {f}")
    print(_summary(data))
    if args.output_path:
        print(f"✓ Merged data written to {args.output_path}")
    else:
        print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
