#!/usr/bin/env python3
"""A build's trace (`bekc build --trace FILE`) as an SVG timeline.

A build: a row for its phases, then a row per lane, each step a box coloured
by its kind (cicc, ptxas, host-compile, link, ...), hatched when the step
cache answered it, outlined in red when it failed, labelled where it is wide
enough, with its name, duration and outcome as a tooltip.

A package build (or a replay, or a pack): a row per lane of the package, each
module's child build a box in the lane it ran in, and inside that box the
module's own steps, one thin row per lane of the module's. So the package's
critical path shows at a glance: what ran when, side by side, and which
module, and which of its steps, the build waited on. `--flat` draws each
module's process as a band of its own instead.

    python3 bench/trace_svg.py trace.json -o trace.svg [--width 1600] [--no-phases] [--flat]

Pure Python, no dependencies.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence
from xml.sax.saxutils import escape, quoteattr

from trace_events import kind_of, load_events, run_tool, short_name

ROW = 16          # a row of a build, px
SUB_ROWS = 42     # the height of a module's lanes inside the package's lane
MODULE_LABEL = 12  # a module's name above its lanes
LABEL_W = 150     # the left column: process and lane names
HEADER = 40       # the time axis
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'

# Colours of the kinds of steps, then of whatever else appears, in order.
KIND_COLOURS = {
    "cicc": "#4e79a7", "ptxas": "#f28e2b", "host-compile": "#59a14f", "compile": "#59a14f",
    "cudafe++": "#b07aa1", "host-preprocess": "#9c755f", "device-preprocess": "#c9a27e",
    "fatbinary": "#edc948", "link": "#e15759", "runtime-object": "#ff9da7",
    "write-wrapper": "#bab0ac", "runtime-headers": "#bab0ac", "check": "#bab0ac",
    "nvcc-phase": "#d4a6c8",
}
SPARE_COLOURS = ["#86bcb6", "#8cd17d", "#b6992d", "#f1ce63", "#499894", "#d37295", "#fabfd2",
                 "#a0cbe8", "#ffbe7d", "#79706e"]
PHASE_COLOUR = "#d7d7d7"
MODULE_COLOUR = "#f4f4f4"


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


@dataclass
class Process:
    pid: int
    name: str = ""
    sort: float = math.inf
    rows: Dict[int, List[dict]] = field(default_factory=lambda: defaultdict(list))
    lane_names: Dict[int, str] = field(default_factory=dict)

    def lanes(self) -> List[int]:
        return sorted(t for t in self.rows if t > 0)


def processes(events: Sequence[dict]) -> List[Process]:
    """Each process of the trace with its complete events by thread, in the
    order its sort index gives."""
    procs: Dict[int, Process] = {}
    for e in events:
        p = procs.setdefault(e.get("pid"), Process(e.get("pid")))
        args, tid = e.get("args") or {}, e.get("tid", 0)
        if e.get("ph") == "M" and e.get("name") == "process_name":
            p.name = str(args.get("name", ""))
        elif e.get("ph") == "M" and e.get("name") == "process_sort_index":
            p.sort = args.get("sort_index", math.inf)
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            p.lane_names[tid] = str(args.get("name", ""))
        elif e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)):
            p.rows[tid].append(e)
    return sorted((p for p in procs.values() if p.rows), key=lambda p: (p.sort, str(p.pid)))


def nice_step(span_s: float) -> float:
    """A tick interval giving about ten ticks over `span_s` seconds."""
    raw = max(span_s / 10, 1e-6)
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def tooltip(e: dict, details: bool) -> str:
    args = e.get("args") or {}
    lines = [f"{e.get('name', '')}: {e.get('dur', 0) / 1e6:.3f} s"]
    keys = list(args) if details else ["module", "kind", "phase", "cache", "step_cache", "status"]
    lines += [f"{k}: {args[k]}" for k in keys if k in args]
    return "\n".join(lines)


class Canvas:
    """The SVG's elements, with the time axis mapped onto x."""

    def __init__(self, width: int, t0: float, t1: float, details: bool) -> None:
        self.width, self.t0, self.details = width, t0, details
        self.total = max(t1 - t0, 1)
        self.plot_w = width - LABEL_W - 20
        self.colours = Colours()
        self.out: List[str] = []

    def x(self, ts: float) -> float:
        return LABEL_W + (ts - self.t0) / self.total * self.plot_w

    def text(self, x: float, y: float, text: str, attrs: str = "") -> None:
        self.out.append(f'<text x="{x:.1f}" y="{y:.1f}"{attrs}>{xml_text(text)}</text>')

    def box(self, e: dict, y: float, h: float, fill: str, stroke: str, label: str = "",
            label_y: Optional[float] = None) -> None:
        x0, x1 = self.x(e["ts"]), self.x(e["ts"] + e.get("dur", 0))
        w = max(x1 - x0, 0.6)
        args = e.get("args") or {}
        if args.get("status") not in (None, "ok") or args.get("failed"):
            stroke = ' stroke="#d00000" stroke-width="1.5"'
        shown = ""
        if label and w > 30:
            fit = max(int(w / 5.8), 1)
            text = label if len(label) <= fit else label[:max(fit - 1, 1)] + "\u2026"
            ly = label_y if label_y is not None else y + h - 3
            shown = f'<text x="{x0 + 2:.1f}" y="{ly:.1f}" font-size="9">{xml_text(text)}</text>'
        self.out.append(f'<g><title>{xml_text(tooltip(e, self.details))}</title>'
                        f'<rect x="{x0:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                        f'fill={quoteattr(fill)}{stroke}/>{shown}</g>')

    def step(self, e: dict, y: float, h: float, label: bool = True) -> None:
        args = e.get("args") or {}
        fill = "url(#hit)" if args.get("step_cache") == "hit" else self.colours(kind_of(e))
        self.box(e, y, h, fill, ' stroke="#ffffff" stroke-width="0.4"',
                 short_name(e.get("name", "")) if label else "")

    def phases(self, row: List[dict], y: float) -> None:
        for e in sorted(row, key=lambda e: (e["ts"], -e.get("dur", 0))):
            build = e.get("cat") == "build"
            self.box(e, y + 1, ROW - 3, "none" if build else PHASE_COLOUR,
                     ' stroke="#888"' if build else ' stroke="#ffffff"',
                     "" if build else str(e.get("name", "")))


def band_head(c: Canvas, p: Process, y: float, phases: bool) -> float:
    """A process's name and (unless left out) its row of phases; where the
    rows below them begin."""
    c.out.append(f'<rect x="0" y="{y}" width="{c.width}" height="{ROW}" fill="#ececec"/>')
    c.text(6, y + ROW - 4, p.name, ' font-weight="bold"')
    y += ROW
    if phases and 0 in p.rows:
        c.text(16, y + ROW - 4, "phases", ' fill="#555"')
        c.phases(p.rows[0], y)
        y += ROW
    return y


def draw_band(c: Canvas, p: Process, y: float, phases: bool) -> float:
    """A process as a band: its name, its phases, a row per lane."""
    y = band_head(c, p, y, phases)
    for tid in p.lanes():
        c.text(16, y + ROW - 4, p.lane_names.get(tid, f"lane {tid}"), ' fill="#555"')
        for e in p.rows[tid]:
            c.step(e, y + 1, ROW - 3)
        y += ROW
    return y


def draw_nested(c: Canvas, top: Process, children: Dict[str, Process], y: float,
                phases: bool) -> float:
    """The package's band, each module's steps drawn inside its box."""
    y = band_head(c, top, y, phases)
    for tid in top.lanes():
        row = top.rows[tid]
        subs = max([len(children[e.get("name")].lanes()) for e in row
                    if e.get("name") in children] + [1])
        sub = max(5, min(14, SUB_ROWS // subs))
        h = MODULE_LABEL + subs * sub + 3
        c.text(16, y + h / 2 + 4, top.lane_names.get(tid, f"lane {tid}"), ' fill="#555"')
        for e in row:
            label = (e.get("args") or {}).get("module") or e.get("name", "")
            c.box(e, y + 1, h - 2, MODULE_COLOUR, ' stroke="#999" stroke-width="0.6"',
                  str(label), y + MODULE_LABEL - 2)
            child = children.get(e.get("name"))
            for k, lane in enumerate(child.lanes() if child else []):
                for s in child.rows[lane]:
                    c.step(s, y + MODULE_LABEL + k * sub, sub - 1, label=False)
        y += h
    return y


def legend(c: Canvas, y: float) -> float:
    x = 10.0
    items = list(c.colours.used.items()) + [("step cache hit", "url(#hit)")]
    for kind, colour in items:
        if x > c.width - 140:
            x, y = 10.0, y + 18
        c.out.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="12" height="12" '
                     f'fill={quoteattr(colour)} stroke="#888" stroke-width="0.5"/>')
        c.text(x + 16, y + 10, kind)
        x += 30 + 6.5 * len(kind)
    return y + 24


def render(events: Sequence[dict], width: int = 1600, phases: bool = True, title: str = "",
           flat: bool = False, details: bool = False) -> str:
    procs = processes(events)
    spans = [e for p in procs for row in p.rows.values() for e in row]
    c = Canvas(width, min((e["ts"] for e in spans), default=0),
               max((e["ts"] + e.get("dur", 0) for e in spans), default=1), details)
    by_name = {p.name: p for p in procs}
    top = procs[0] if procs else None
    nested: Dict[str, Process] = {}
    if top is not None and not flat:
        # The lanes' events that name another process: its child builds.
        nested = {e.get("name"): by_name[e.get("name")] for t in top.lanes()
                  for e in top.rows[t]
                  if e.get("name") in by_name and by_name[e.get("name")] is not top}
    y: float = HEADER
    for p in procs:
        if p is top and nested:
            y = draw_nested(c, p, nested, y, phases)
        elif p not in nested.values():
            y = draw_band(c, p, y, phases)
    y = legend(c, y + 14)
    return assemble(c, y, title)


def assemble(c: Canvas, height: float, title: str) -> str:
    """The SVG document: the frame, the time axis under everything, the rest."""
    h = int(height) + 10
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{c.width}" height="{h}" '
            f'viewBox="0 0 {c.width} {h}" {FONT} font-size="11">',
            '<defs><pattern id="hit" width="5" height="5" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="5" height="5" fill="#ffffff"/>'
            '<line x1="0" y1="0" x2="0" y2="5" stroke="#777" stroke-width="2.5"/></pattern></defs>',
            f'<rect width="{c.width}" height="{h}" fill="#ffffff"/>',
            f'<text x="10" y="16" font-size="13" font-weight="bold">{xml_text(title)}</text>']
    step = nice_step(c.total / 1e6)
    tick = 0.0
    while tick * 1e6 <= c.total + 1:
        tx = c.x(c.t0 + tick * 1e6)
        head.append(f'<line x1="{tx:.1f}" y1="{HEADER - 6}" x2="{tx:.1f}" y2="{h - 40}" '
                    'stroke="#e4e4e4"/>')
        head.append(f'<text x="{tx:.1f}" y="{HEADER - 10}" text-anchor="middle" fill="#555">'
                    f'{tick:g} s</text>')
        tick += step
    return "\n".join(head + c.out + ["</svg>"]) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, help="the SVG file to write")
    parser.add_argument("--width", type=int, default=1600, help="in pixels (default 1600)")
    parser.add_argument("--no-phases", action="store_true",
                        help="leave out each build's row of phases")
    parser.add_argument("--flat", action="store_true",
                        help="a package's modules as bands of their own, not inside its lanes")
    parser.add_argument("--details", action="store_true",
                        help="every detail in the tooltips (the commands too)")
    parser.add_argument("--title", default=None, help="a line above the timeline")


def write_svg(args: argparse.Namespace) -> None:
    svg = render(load_events(args.trace), args.width, not args.no_phases,
                 args.title if args.title is not None else args.trace, args.flat, args.details)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_tool("trace_svg.py", __doc__, write_svg, add_arguments, argv)


if __name__ == "__main__":
    sys.exit(main())
