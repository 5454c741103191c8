"""Draw her mood, energy and activities over time as a PNG for people (used by `anima mood` and `anima simulate`).

Three panels on one local-time axis: mood (valence, arousal, dominance on -1..1), energy on its
own 0..1 scale (it is not a mood and shares no axis with one), and one row per activity category
so a fortnight reads as a rhythm instead of hundreds of unlabelled bands. Chats and told life
events are marked on the mood panel; untold life never reaches this function (callers pass told
events only) and no text is drawn, only times. Labels are Chinese when a CJK font exists; without
one the plot falls back to English labels with a warning instead of drawing empty boxes.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from engine import activity as act

CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
                "Microsoft YaHei", "PingFang SC", "SimHei", "AR PL UMing CN")
# Category colours: night and rest cool, food warm, doing things saturated, chat the one pink.
CATEGORY_COLOURS = {"sleep": "#34495e", "rest": "#9bb7e0", "meal": "#f2b134", "reading": "#6aa84f",
                    "learning": "#45b5c4", "creative": "#b565c9", "music": "#8e7cc3", "outdoor": "#2e9e5b",
                    "exercise": "#e06666", "social": "#f08a24", "domestic": "#a0a0a0", "screen": "#5b5b5b",
                    "chat": "#ff4f8b"}
SPARE_COLOURS = ("#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#1f77b4", "#d62728", "#9467bd", "#2ca02c")
CATEGORY_ORDER = ("sleep", "meal", "chat", "social", "outdoor", "exercise", "domestic", "rest", "reading",
                  "learning", "creative", "music", "screen")
ZH = {"sleep": "睡眠", "rest": "休息", "meal": "吃饭", "reading": "阅读", "learning": "学习", "creative": "创作",
      "music": "音乐", "outdoor": "户外", "exercise": "运动", "social": "社交", "domestic": "家务", "screen": "屏幕",
      "chat": "和你聊天", "valence": "愉悦度 V", "arousal": "唤醒度 A", "dominance": "掌控感 D", "energy": "精力",
      "mood_axis": "心情（−1…1）", "energy_axis": "精力（0…1）", "told": "讲过的经历", "chat_mark": "聊天",
      "title": "{name}的心情、精力与日常", "time": "当地时间（{tz}，UTC{offset}）",
      "weekdays": "一 二 三 四 五 六 日", "weekday": "周{}", "simulated": "（模拟）"}
EN = {"valence": "valence V", "arousal": "arousal A", "dominance": "dominance D", "energy": "energy",
      "mood_axis": "mood (-1..1)", "energy_axis": "energy (0..1)", "told": "told life event", "chat_mark": "chat",
      "title": "{name}: mood, energy and activities", "time": "local time ({tz}, UTC{offset})",
      "weekdays": "Mon Tue Wed Thu Fri Sat Sun", "weekday": "{}", "simulated": " (simulated)"}


def cjk_font() -> str | None:
    """The family name of an installed CJK font matplotlib can use, registering fontconfig's if needed."""
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    for family in CJK_FAMILIES:
        if family in known:
            return family
    # matplotlib's font cache may predate the font's installation: ask fontconfig for files.
    if shutil.which("fc-list"):
        try:
            out = subprocess.run(["fc-list", ":lang=zh", "file"], capture_output=True, text=True, timeout=10,
                                 check=False).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        for line in out.splitlines():
            path = line.split(":", 1)[0].strip()
            if not path:
                continue
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):
                continue
        known = {f.name for f in font_manager.fontManager.ttflist}
        for family in CJK_FAMILIES:
            if family in known:
                return family
    return None


def _category(kind: str, specs: dict[str, Any]) -> str:
    spec = specs.get(kind)
    if kind == "chat":
        return "chat"
    return str(spec.category) if spec else kind


def draw_life(path: str, points: Sequence[dict[str, Any]], acts: Sequence[dict[str, Any]],
              told: Sequence[dict[str, Any]], tz: str, *, name: str = "", simulated: bool = False) -> dict[str, Any]:
    """Write the PNG and return what it shows (font, categories, marks) so callers and tests can say so.

    points: trace rows (ts, v, a, d, e); acts: activity rows (kind, started_at, ended_at,
    expected_end); told: told life events (only ts is read).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    zone = ZoneInfo(tz)
    font = cjk_font()
    words = ZH if font else EN
    if font:
        matplotlib.rcParams["font.sans-serif"] = [font, *matplotlib.rcParams["font.sans-serif"]]
        matplotlib.rcParams["font.family"] = "sans-serif"
        matplotlib.rcParams["axes.unicode_minus"] = False   # CJK fonts often lack U+2212
    else:
        warnings.warn("no CJK font found (install fonts-noto-cjk or fonts-wqy-microhei): the plot uses English "
                      "labels", RuntimeWarning, stacklevel=2)

    def when(t: float) -> Any:  # matplotlib takes datetimes on a date axis; its stubs say float
        return datetime.fromtimestamp(t, UTC).astimezone(zone)

    specs = act.catalogue()
    spans: dict[str, list[tuple[float, float]]] = {}
    for a in acts:
        end = a["ended_at"] if a["ended_at"] is not None else a["expected_end"]
        spans.setdefault(_category(a["kind"], specs), []).append((float(a["started_at"]), float(end)))
    order = [c for c in CATEGORY_ORDER if c in spans] + sorted(c for c in spans if c not in CATEGORY_ORDER)
    spare = iter(SPARE_COLOURS * 4)
    colours = {c: CATEGORY_COLOURS.get(c) or next(spare, "#cccccc") for c in order}

    times = [float(p["ts"]) for p in points]
    lo = min([*times, *(s for v in spans.values() for s, _ in v)], default=0.0)
    hi = max([*times, *(e for v in spans.values() for _, e in v)], default=lo + 3600.0)
    days = (hi - lo) / 86400.0

    rows = max(1, len(order))
    fig, (ax_m, ax_e, ax_a) = plt.subplots(3, 1, sharex=True, figsize=(13, 6.2 + 0.22 * rows),
                                           gridspec_kw={"height_ratios": [3.0, 1.4, 0.35 * rows + 0.6]})
    xs = [when(t) for t in times]
    # Nights shaded on both curves: the eye finds the days before it reads the lines.
    for s, e in spans.get("sleep", []):
        for ax in (ax_m, ax_e):
            ax.axvspan(when(s), when(e), color="#34495e", alpha=0.07, linewidth=0)
    for key, colour in (("valence", "#c0392b"), ("arousal", "#e67e22"), ("dominance", "#27ae60")):
        ax_m.plot(xs, [p[key[0]] for p in points], label=words[key], color=colour, linewidth=1.3)
    ax_m.axhline(0, color="#888888", linewidth=0.6)
    ax_m.set_ylim(-1.05, 1.05)
    ax_m.set_ylabel(words["mood_axis"])

    chat_spans = spans.get("chat", [])
    for s, e in chat_spans:
        ax_m.axvspan(when(s), when(e), color=CATEGORY_COLOURS["chat"], alpha=0.35, linewidth=0)
    told_ts = sorted(float(ev["ts"]) for ev in told if lo <= float(ev["ts"]) <= hi)
    if told_ts:
        ax_m.scatter([when(t) for t in told_ts], [0.95] * len(told_ts), marker="*", s=90, color="#8e44ad",
                     zorder=5, label=words["told"])
    handles, labels = ax_m.get_legend_handles_labels()
    if chat_spans:
        handles.append(Patch(color=CATEGORY_COLOURS["chat"], alpha=0.5))
        labels.append(words["chat_mark"])
    ax_m.legend(handles, labels, loc="lower left", ncol=len(labels), fontsize=8, framealpha=0.85)

    ax_e.plot(xs, [p["e"] for p in points], color="#1f77b4", linewidth=1.3, label=words["energy"])
    ax_e.fill_between(xs, [p["e"] for p in points], 0.0, color="#1f77b4", alpha=0.12, linewidth=0)
    ax_e.set_ylim(0.0, 1.02)
    ax_e.set_ylabel(words["energy_axis"])

    for row, category in enumerate(order):
        bars = [(mdates.date2num(when(s)), (e - s) / 86400.0) for s, e in spans[category]]
        ax_a.broken_barh(bars, (row - 0.4, 0.8), facecolors=colours[category], linewidth=0)
    ax_a.set_yticks(range(rows), [words.get(c, c) if font else c for c in order], fontsize=8)
    ax_a.set_ylim(rows - 0.5, -0.5)
    ax_a.legend([Patch(color=colours[c]) for c in order], [words.get(c, c) if font else c for c in order],
                loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)

    for ax in (ax_m, ax_e, ax_a):
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.margins(x=0)
    if days <= 2.5:
        ax_a.xaxis.set_major_locator(mdates.HourLocator(byhour=range(0, 24, 3), tz=zone))
        ax_a.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M", tz=zone))
    else:
        step = max(1, round(days / 16))
        ax_a.xaxis.set_major_locator(mdates.DayLocator(interval=step, tz=zone))
        weekdays = words["weekdays"].split()

        def day_label(x: float, _pos: int) -> str:
            d = mdates.num2date(x, tz=zone)
            return f"{d:%m-%d}\n{words['weekday'].format(weekdays[d.weekday()])}" if step == 1 else f"{d:%m-%d}"

        ax_a.xaxis.set_major_formatter(day_label)
    offset = when(hi).strftime("%z")
    ax_a.set_xlabel(words["time"].format(tz=tz, offset=f"{offset[:3]}:{offset[3:]}"))
    start_d, end_d = when(lo), when(hi)
    span_text = f"{start_d:%Y-%m-%d} … {end_d:%Y-%m-%d}"
    if not font and not name.isascii():
        name = "her"   # a Chinese name would print as empty boxes without a CJK font
    head = words["title"].format(name=name or ("她" if font else "her")) + (words["simulated"] if simulated else "")
    fig.suptitle(f"{head}  {span_text}", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=100, pil_kwargs={"optimize": True})
    plt.close(fig)
    return {"font": font, "categories": order, "chats": len(chat_spans), "told": len(told_ts),
            "points": len(points), "activities": len(acts)}
