"""The System tab's GPU and Host panels for a run sampled per node (a Slurm job): one block per node."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.text import Text

from console.tui.rundata import human_bytes

Bar = Callable[[float, float], str]
NAME_WIDTH = 40  # a node's name (Slurm hostnames are short; a long one is cut, not wrapped)
REASON_WIDTH = 56  # "    no GPU data (" + this + ")" fits the System tab at 80 columns; the whole
# reason is in the run's events.jsonl


def cut(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` cells, ending in an ellipsis when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def gpu_nodes_text(gpu_nodes: Mapping[str, Mapping[str, Any]], bar: Bar) -> Text:
    text = Text()
    text.append(f"GPUs per node ({len(gpu_nodes)})\n", style="bold")
    for node, data in sorted(gpu_nodes.items()):
        source = data.get("source") or "?"
        text.append(f"  {cut(node, NAME_WIDTH)}", style="bold")
        text.append(f"  via {source}\n", style="dim")
        devices = list(data.get("devices") or [])
        if not devices:
            why = cut(str(data.get("reason") or "none reported"), REASON_WIDTH)
            text.append(f"    no GPU data ({why})\n", style="dim")
            continue
        for dev in devices:
            used, total = float(dev.get("mem_used") or 0), float(dev.get("mem_total") or 0)
            util = dev.get("util")
            text.append(f"    {dev.get('index', '?')} {str(dev.get('name') or '')[:18]:18} ")
            text.append(bar(used, total), style="cyan")
            text.append(
                f" {human_bytes(used)}/{human_bytes(total)} util {'n/a' if util is None else f'{util:g}%'}\n"
            )
    return text


def host_nodes_text(host_nodes: Mapping[str, Mapping[str, Any]], bar: Bar) -> Text:
    text = Text()
    text.append(f"Hosts ({len(host_nodes)} nodes)\n", style="bold")
    for node, data in sorted(host_nodes.items()):
        cpu = data.get("cpu")
        load = data.get("load1")
        mu, mt = float(data.get("mem_used") or 0), float(data.get("mem_total") or 0)
        text.append(f"  {cut(node, NAME_WIDTH)}", style="bold")
        text.append(f"  load {load if load is not None else 'n/a'}\n", style="dim")
        text.append(f"    CPU {bar(float(cpu or 0), 100)} {'n/a' if cpu is None else f'{cpu:.0f}%'}\n")
        text.append(f"    RAM {bar(mu, mt)} {human_bytes(mu)}/{human_bytes(mt)}\n")
    return text
