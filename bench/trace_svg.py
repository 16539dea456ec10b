#!/usr/bin/env python3
"""A build's trace (`bekc build --trace FILE`) as an SVG timeline.

One band per process (a build; a package build's own process, whose lanes
hold its modules, then one per module): a row for the build's phases, then a
row per lane, each step a box coloured by its kind (cicc, ptxas,
host-compile, link, ...), labelled where it is wide enough, with its name,
duration and details as a tooltip. Steps the step cache answered are hatched.

    python3 bench/trace_svg.py trace.json -o trace.svg [--width 1600] [--no-phases]

Pure Python, no dependencies.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape, quoteattr

from trace_events import kind_of, load_events, run_tool

ROW = 16          # height of a row, px
GAP = 3           # between a box and the next row
LABEL_W = 230     # the left column, process and lane names
HEADER = 40       # the time axis
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'

# Colours of the kinds of steps, then of whatever else appears, in order.
KIND_COLOURS = {
    "cicc": "#4e79a7", "ptxas": "#f28e2b", "host-compile": "#59a14f", "compile": "#59a14f",
    "cudafe++": "#b07aa1", "preprocess": "#9c755f", "fatbinary": "#edc948", "link": "#e15759",
    "module": "#76b7b2", "write-wrapper": "#bab0ac", "runtime-object": "#ff9da7",
    "runtime-headers": "#bab0ac", "check": "#bab0ac", "assemble": "#d4a6c8",
}
SPARE_COLOURS = ["#86bcb6", "#8cd17d", "#b6992d", "#f1ce63", "#499894", "#d37295", "#fabfd2",
                 "#a0cbe8", "#ffbe7d", "#79706e"]
PHASE_COLOUR = "#d7d7d7"


def xml_text(value: object) -> str:
    """`value` as XML character data: a byte bekc escaped (a lone surrogate)
    and a control character, which XML cannot hold, become U+FFFD."""
    text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF or (ord(c) < 32 and c not in "\t\n")
                   else c for c in str(value))
    return escape(text)


class Colours:
    def __init__(self) -> None:
        self.used: Dict[str, str] = {}

    def __call__(self, kind: str) -> str:
        if kind not in self.used:
            spare = [c for c in SPARE_COLOURS if c not in self.used.values()]
            self.used[kind] = KIND_COLOURS.get(kind) or (spare[0] if spare else "#999999")
        return self.used[kind]


Band = Tuple[int, str, List[Tuple[str, List[dict]]]]


def bands(events: Sequence[dict], phases: bool) -> List[Band]:
    """(pid, name, [(row name, events)]) for each process, in sort order."""
    names: Dict[int, str] = {}
    order: Dict[int, float] = {}
    lane_names: Dict[Tuple[int, int], str] = {}
    rows: Dict[int, Dict[int, List[dict]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        pid, tid = e.get("pid"), e.get("tid", 0)
        if e.get("ph") == "M":
            args = e.get("args") or {}
            if e.get("name") == "process_name":
                names[pid] = str(args.get("name", ""))
            elif e.get("name") == "process_sort_index":
                order[pid] = args.get("sort_index", 0)
            elif e.get("name") == "thread_name":
                lane_names[(pid, tid)] = str(args.get("name", ""))
        elif e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)):
            rows[pid][tid].append(e)
    out = []
    for pid in sorted(rows, key=lambda p: (order.get(p, math.inf), str(p))):
        band = []
        for tid in sorted(rows[pid]):
            if tid == 0 and not phases:
                continue
            band.append((lane_names.get((pid, tid), f"thread {tid}"), rows[pid][tid]))
        if band:
            out.append((pid, names.get(pid, f"process {pid}"), band))
    return out


def nice_step(span_s: float) -> float:
    """A tick interval giving about ten ticks over `span_s` seconds."""
    raw = max(span_s / 10, 1e-6)
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def tooltip(e: dict) -> str:
    lines = [f"{e.get('name', '')}: {e.get('dur', 0) / 1e6:.3f} s"]
    for k, v in (e.get("args") or {}).items():
        lines.append(f"{k}: {v}")
    return "\n".join(lines)


def render(events: Sequence[dict], width: int = 1600, phases: bool = True,
           title: str = "") -> str:
    laid = bands(events, phases)
    spans = [e for _, _, band in laid for _, row in band for e in row]
    t0 = min((e["ts"] for e in spans), default=0)
    t1 = max((e["ts"] + e.get("dur", 0) for e in spans), default=1)
    total = max(t1 - t0, 1)
    plot_w = width - LABEL_W - 20
    x = lambda ts: LABEL_W + (ts - t0) / total * plot_w  # noqa: E731
    n_rows = sum(len(band) + 1 for _, _, band in laid)
    height = HEADER + n_rows * ROW + 60
    colours = Colours()
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {FONT} font-size="11">',
           '<defs><pattern id="hit" width="6" height="6" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
           '<line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="3"/></pattern></defs>',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="10" y="16" font-size="13" font-weight="bold">{xml_text(title)}</text>']
    step = nice_step(total / 1e6)
    tick = 0.0
    while tick * 1e6 <= total + 1:
        tx = x(t0 + tick * 1e6)
        out.append(f'<line x1="{tx:.1f}" y1="{HEADER - 6}" x2="{tx:.1f}" y2="{height - 50}" '
                   'stroke="#eeeeee"/>')
        out.append(f'<text x="{tx:.1f}" y="{HEADER - 10}" text-anchor="middle" fill="#555">'
                   f'{tick:g} s</text>')
        tick += step
    y = HEADER
    for _, name, band in laid:
        out.append(f'<rect x="0" y="{y}" width="{width}" height="{ROW}" fill="#f3f3f3"/>')
        out.append(f'<text x="6" y="{y + ROW - 4}" font-weight="bold">{xml_text(name)}</text>')
        y += ROW
        for row_name, row in band:
            out.append(f'<text x="16" y="{y + ROW - 4}" fill="#555">{xml_text(row_name)}</text>')
            for e in sorted(row, key=lambda e: (e["ts"], -e.get("dur", 0))):
                out.append(box(e, x, y, colours, is_phase_row=(e.get("tid", 0) == 0)))
            y += ROW
    out.append(legend(colours, y + 14, width))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def box(e: dict, x, y: int, colours: Colours, is_phase_row: bool) -> str:
    x0, x1 = x(e["ts"]), x(e["ts"] + e.get("dur", 0))
    w = max(x1 - x0, 0.8)
    args = e.get("args") or {}
    if is_phase_row:
        # The whole build outlined, its phases filled.
        fill = "none" if e.get("cat") == "build" else PHASE_COLOUR
        stroke = ' stroke="#888"' if e.get("cat") == "build" else ' stroke="#ffffff"'
    else:
        fill = "url(#hit)" if args.get("step_cache") == "hit" else colours(kind_of(e))
        stroke = ' stroke="#ffffff" stroke-width="0.5"'
    if args.get("status") not in (None, "ok") or args.get("failed"):
        stroke = ' stroke="#d00000" stroke-width="1.5"'
    label = ""
    text = str(e.get("name", ""))
    if w > 40 and e.get("cat") != "build":
        fit = max(int(w / 6.2), 1)
        shown = text if len(text) <= fit else text[:max(fit - 1, 1)] + "\u2026"
        label = (f'<text x="{x0 + 3:.1f}" y="{y + ROW - GAP - 3}" font-size="10" '
                 f'clip-path="none">{xml_text(shown)}</text>')
    return (f'<g><title>{xml_text(tooltip(e))}</title><rect x="{x0:.1f}" y="{y + 1}" '
            f'width="{w:.1f}" height="{ROW - GAP}" fill={quoteattr(fill)}{stroke}/>{label}</g>')


def legend(colours: Colours, y: int, width: int) -> str:
    parts = []
    lx = 10
    items = list(colours.used.items()) + [("step cache hit", "url(#hit)")]
    for kind, colour in items:
        parts.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill={quoteattr(colour)} '
                     'stroke="#888" stroke-width="0.5"/>')
        parts.append(f'<text x="{lx + 16}" y="{y + 10}">{xml_text(kind)}</text>')
        lx += 30 + 7 * len(kind)
        if lx > width - 120:
            lx = 10
            y += 18
    return "\n".join(parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, help="the SVG file to write")
    parser.add_argument("--width", type=int, default=1600, help="in pixels (default 1600)")
    parser.add_argument("--no-phases", action="store_true",
                        help="leave out each build's row of phases")
    parser.add_argument("--title", default=None, help="a line above the timeline")


def write_svg(args: argparse.Namespace) -> None:
    svg = render(load_events(args.trace), args.width, not args.no_phases,
                 args.title if args.title is not None else args.trace)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_tool("trace_svg.py", __doc__, write_svg, add_arguments, argv)


if __name__ == "__main__":
    sys.exit(main())
