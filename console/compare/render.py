"""A comparison as text: the CLI's tables and the report's "Baseline comparison" lines."""

from __future__ import annotations

from typing import Any

from console.redact import redact_text

GIB = 1024**3


def num(x: Any, digits: int = 4) -> str:
    """A short number: 4 significant digits, '-' for missing, NaN/Inf as text."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    v = float(x)
    if v == 0:
        return "0"
    return f"{v:.{digits - 1}e}" if abs(v) >= 1e5 or abs(v) < 1e-3 else f"{v:.{digits}g}"


def pct(x: Any) -> str:
    if x is None or isinstance(x, str):
        return "-" if x is None else x
    return f"{float(x) * 100:+.1f}%"


def gib(x: float | None) -> str:
    return "-" if x is None else f"{x / GIB:.2f} GiB"


def verdict_line(r: dict[str, Any]) -> str:
    return f"{r['verdict']} - {'; '.join(r['reasons'])}"


def match_line(r: dict[str, Any]) -> str:
    m = r["match"]
    if m.get("max_abs_metric") is None:
        return "no judged metric in both runs"
    if m.get("identical"):
        return f"identical: every judged value equal at each of {r['common_steps']} common steps"
    return (
        f"max abs diff {num(m['max_abs_diff'])} ({m['max_abs_metric']}), "
        f"max rel diff {pct(m['max_rel_diff'])} ({m['max_rel_metric']}) over {r['common_steps']} common steps"
    )


def _tol(row: dict[str, Any]) -> str:
    t = row["tolerance"]
    if t["rel"] is None and t["abs"] is None:
        return "-"
    return f"{num(t['rel'] or 0, 2)}|{num(t['abs'] or 0, 2)}" + ("*" if t.get("user") else "")


def metric_table(r: dict[str, Any]) -> list[tuple[str, ...]]:
    """Rows: metric, baseline, candidate, delta, rel delta, first divergence, tolerance, status."""
    return [
        (
            str(row["key"]),
            num(row["baseline_mean"]),
            num(row["candidate_mean"]),
            num(row["delta"]),
            pct(row["rel_delta"]),
            str(row["first_divergence"]) if row["first_divergence"] is not None else "-",
            _tol(row),
            ("ok" if row["within"] else "MOVED") if row["judged"] else "info",
        )
        for row in r["metrics"]
    ]


def timing_table(r: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            t["label"],
            num(t["baseline"]),
            num(t["candidate"]),
            num(t["delta"]),
            pct(t["rel_delta"]),
            "REGRESSION" if t["regression"] else "",
        )
        for t in r["timing"]
    ]


def gpu_table(r: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            f"GPU {g['device']} {g['name']}",
            gib(g["baseline_bytes"]),
            gib(g["candidate_bytes"]),
            gib(g["delta_bytes"]) if g["delta_bytes"] is not None else "-",
            "REGRESSION" if g["regression"] else "",
        )
        for g in r["gpu"]
    ]


def _fmt(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    """The header and the rows in padded columns, each line indented by two spaces."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    return [
        "  " + "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def text(r: dict[str, Any]) -> str:
    k = r["last_k"]
    lines = [
        f"{role:<10} {x['id']}  ({x['verdict'] or x['status'] or '-'}, {x['steps']} steps, seed {x['seed']})"
        for role, x in (("baseline", r["baseline"]), ("candidate", r["candidate"]))
    ]
    lines += [f"Verdict: {verdict_line(r)}", f"Curves: {match_line(r)}", ""]
    if r["metrics"]:
        lines.append(f"Metrics (mean of the last {k} common steps; tolerance rel|abs, * = yours):")
        lines += _fmt(
            metric_table(r), ("metric", "baseline", "candidate", "delta", "rel", "diverges at", "tol", "")
        )
    else:
        lines.append("Metrics: none in both runs")
    if r["timing"]:
        lines += ["", f"Timing and throughput (mean of the last {k} steps):"]
        lines += _fmt(timing_table(r), ("", "baseline", "candidate", "delta", "rel", ""))
    if r["gpu"]:
        lines += ["", "GPU peak memory:"]
        lines += _fmt(gpu_table(r), ("device", "baseline", "candidate", "delta", ""))
    lines += ["", "Differences:" if r["differences"] else "Differences: none recorded"]
    lines += [f"  {d['field']}: {d['baseline']} -> {d['candidate']}  [{d['kind']}]" for d in r["differences"]]
    if r["notes"]:
        lines += ["", "Notes:"] + [f"  {n}" for n in r["notes"]]
    return redact_text("\n".join(lines) + "\n")


def report_lines(r: dict[str, Any]) -> list[str]:
    """The "Baseline comparison" bullets of the candidate's report (the procedures' summary style)."""
    b, c = r["baseline"], r["candidate"]
    k = r["last_k"]
    lines = [
        f"Verdict: {verdict_line(r)}",
        f"Baseline: {b['id']} (Bridge {b.get('bridge') or 'not recorded'}; verdict {b['verdict'] or '-'})",
        f"Candidate: {c['id']} (Bridge {c.get('bridge') or 'not recorded'}; verdict {c['verdict'] or '-'})",
        f"Curves: {match_line(r)}",
    ]
    moved = [m for m in r["metrics"] if m["judged"]]
    if moved:
        parts = [
            f"{m['key']} {num(m['baseline_mean'])} -> {num(m['candidate_mean'])} ({pct(m['rel_delta'])}"
            + (f", diverges from step {m['first_divergence']})" if m["first_divergence"] is not None else ")")
            for m in moved
        ]
        lines.append(f"Metrics (mean of the last {k} steps): " + "; ".join(parts))
    if r["timing"]:
        parts = [
            f"{t['label']} {num(t['baseline'])} -> {num(t['candidate'])} ({pct(t['rel_delta'])})"
            + (" REGRESSION" if t["regression"] else "")
            for t in r["timing"]
        ]
        lines.append("Timing: " + "; ".join(parts))
    if r["gpu"]:
        lines.append(
            "GPU peak memory: "
            + "; ".join(
                f"GPU {g['device']} {gib(g['baseline_bytes'])} -> {gib(g['candidate_bytes'])}"
                + (" REGRESSION" if g["regression"] else "")
                for g in r["gpu"]
            )
        )
    if r["differences"]:
        lines.append(
            "Differences: "
            + "; ".join(f"{d['field']} {d['baseline']} -> {d['candidate']}" for d in r["differences"])
        )
    lines += [f"Note: {n}" for n in r["notes"]]
    return [redact_text(x) for x in lines]
