"""Draw her mood, energy and activities over time as a PNG for people (used by `anima mood` and `anima simulate`).

Three panels on one local-time axis: mood (valence, arousal, dominance on -1..1), energy on its
own 0..1 scale (it is not a mood and shares no axis with one), and one row per activity category
so a fortnight reads as a rhythm instead of hundreds of unlabelled bands. Chats and told life
events are marked on the mood panel; untold life never reaches this function (callers pass told
events only) and no text is drawn, only times. Labels are Chinese when a CJK font exists; without
one the plot falls back to English labels (the CLI says so in one line) instead of drawing empty boxes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from typing import Any
from zoneinfo import ZoneInfo

from engine import activity as act

DAILY_AFTER_DAYS = 31.0   # longer runs are drawn per day: point by point they alias into a solid block
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
                "Microsoft YaHei", "PingFang SC", "SimHei", "AR PL UMing CN")
# Category colours: night and rest cool, food warm, doing things saturated, chat the one pink.
CATEGORY_COLOURS = {"sleep": "#34495e", "rest": "#9bb7e0", "meal": "#f2b134", "reading": "#6aa84f",
                    "learning": "#45b5c4", "creative": "#b565c9", "music": "#8e7cc3", "outdoor": "#2e9e5b",
                    "exercise": "#e06666", "social": "#f08a24", "domestic": "#a0a0a0", "screen": "#5b5b5b",
                    "chat": "#ff4f8b", "work": "#3d6fb6", "commute": "#c9b18a", "care": "#d9c6e8",
                    "festival": "#d62728"}
SPARE_COLOURS = ("#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#1f77b4", "#d62728", "#9467bd", "#2ca02c")
CATEGORY_ORDER = ("sleep", "work", "commute", "meal", "chat", "social", "festival", "outdoor", "exercise", "domestic",
                  "care", "rest", "reading", "learning", "creative", "music", "screen")
ZH = {"sleep": "睡眠", "rest": "休息", "meal": "吃饭", "reading": "阅读", "learning": "学习", "creative": "创作",
      "music": "音乐", "outdoor": "户外", "exercise": "运动", "social": "社交", "domestic": "家务", "screen": "屏幕",
      "chat": "和你聊天", "work": "工作", "commute": "通勤", "care": "洗漱", "festival": "过节", "valence": "愉悦度 V", "arousal": "唤醒度 A", "dominance": "掌控感 D", "energy": "精力",
      "mood_axis": "心情（−1…1）", "energy_axis": "精力（0…1）", "told": "讲过的经历", "chat_mark": "聊天",
      "title": "{name}的心情、精力与日常", "time": "当地时间（{tz}，UTC{offset}）",
      "weekdays": "一 二 三 四 五 六 日", "valence_range": "愉悦度日内范围", "daily_mean": "（日均）",
      "hours_axis": "每天小时数", "weekday": "周{}", "simulated": "（模拟）"}
EN = {"valence": "valence V", "arousal": "arousal A", "dominance": "dominance D", "energy": "energy",
      "mood_axis": "mood (-1..1)", "energy_axis": "energy (0..1)", "told": "told life event", "chat_mark": "chat",
      "title": "{name}: mood, energy and activities", "time": "local time ({tz}, UTC{offset})",
      "weekdays": "Mon Tue Wed Thu Fri Sat Sun", "valence_range": "valence daily range",
      "daily_mean": " (daily mean)", "hours_axis": "hours per day", "weekday": "{}", "simulated": " (simulated)"}


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


def _when(t: float, zone: ZoneInfo) -> Any:  # matplotlib takes datetimes on a date axis; its stubs say float
    return datetime.fromtimestamp(t, UTC).astimezone(zone)


def _draw_detail(ax_m: Any, ax_e: Any, ax_a: Any, points: Sequence[dict[str, Any]],
                 spans: dict[str, list[tuple[float, float]]], order: list[str], colours: dict[str, str],
                 words: dict[str, str], zone: ZoneInfo, chinese: bool) -> None:
    """Up to a few weeks: the curves point by point, nights shaded, one row of bars per category."""
    import matplotlib.dates as mdates
    from matplotlib.patches import Patch

    def when(t: float) -> Any:
        return _when(t, zone)

    font = chinese
    rows = max(1, len(order))
    times = [float(p["ts"]) for p in points]
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


def hours_per_day(spans: dict[str, list[tuple[float, float]]], order: list[str], days: list[Any],
                  zone: ZoneInfo) -> dict[str, list[float]]:
    """Hours of each category on each local day, spans split at local midnights (a covered day sums to 24)."""
    hours = {c: [0.0] * len(days) for c in order}
    index = {d: i for i, d in enumerate(days)}
    for category, items in spans.items():
        for s, e in items:
            t = s
            while t < e:
                day = _when(t, zone).date()
                nxt = datetime.combine(day + timedelta(days=1), dtime(0), tzinfo=zone).timestamp()
                if day in index and category in hours:
                    hours[category][index[day]] += (min(e, nxt) - t) / 3600.0
                t = min(e, nxt)
    return hours


def _draw_daily(ax_m: Any, ax_e: Any, ax_a: Any, points: Sequence[dict[str, Any]],
                spans: dict[str, list[tuple[float, float]]], order: list[str], colours: dict[str, str],
                words: dict[str, str], zone: ZoneInfo, chinese: bool) -> None:
    """Months: point-by-point curves and bars only alias into a solid block, so draw each local day.

    Mood: daily mean of V/A/D with valence's daily range shaded; energy: daily range and mean;
    activities: hours per day stacked by category (a time-use chart, summing to 24 h).
    """
    from matplotlib.patches import Patch

    by_day: dict[Any, list[dict[str, Any]]] = {}
    for p in points:
        by_day.setdefault(_when(float(p["ts"]), zone).date(), []).append(p)
    days = sorted(by_day)
    noon = [datetime(d.year, d.month, d.day, 12, tzinfo=zone) for d in days]

    def series(key: str, how: Any) -> list[float]:
        return [how([float(p[key]) for p in by_day[d]]) for d in days]

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    ax_m.fill_between(noon, series("v", min), series("v", max), color="#c0392b", alpha=0.15, linewidth=0,
                      label=words["valence_range"])
    for key, colour in (("valence", "#c0392b"), ("arousal", "#e67e22"), ("dominance", "#27ae60")):
        ax_m.plot(noon, series(key[0], mean), label=words[key] + words["daily_mean"], color=colour, linewidth=1.3)
    ax_m.axhline(0, color="#888888", linewidth=0.6)
    ax_m.set_ylim(-1.05, 1.05)
    ax_m.set_ylabel(words["mood_axis"])
    ax_e.fill_between(noon, series("e", min), series("e", max), color="#1f77b4", alpha=0.15, linewidth=0)
    ax_e.plot(noon, series("e", mean), color="#1f77b4", linewidth=1.3)
    ax_e.set_ylim(0.0, 1.02)
    ax_e.set_ylabel(words["energy_axis"])

    hours = hours_per_day(spans, order, days, zone)
    bottom = [0.0] * len(days)
    for category in order:
        ax_a.bar(noon, hours[category], width=1.0, bottom=bottom, color=colours[category], linewidth=0,
                 antialiased=False)
        bottom = [b + h for b, h in zip(bottom, hours[category], strict=True)]
    ax_a.set_ylim(0, 24)
    ax_a.set_yticks(range(0, 25, 6))
    ax_a.set_ylabel(words["hours_axis"])
    ax_a.legend([Patch(color=colours[c]) for c in order], [words.get(c, c) if chinese else c for c in order],
                loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)


NO_CJK_NOTE = ("anima: note: no CJK font found (install fonts-noto-cjk or fonts-wqy-microhei): the plot uses "
               "English labels")


def note_missing_font(shown: dict[str, Any], stream: Any = None) -> None:
    """One line on stderr when the plot had no CJK font (issue 25: a Python warning printed its source line)."""
    if shown.get("font") is None:
        print(NO_CJK_NOTE, file=stream or sys.stderr)


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

    long_run = days > DAILY_AFTER_DAYS
    rows = 1 if long_run else max(1, len(order))
    fig, (ax_m, ax_e, ax_a) = plt.subplots(3, 1, sharex=True, figsize=(13, 6.2 + (2.4 if long_run else 0.22 * rows)),
                                           gridspec_kw={"height_ratios": [3.0, 1.4, 3.0 if long_run
                                                                          else 0.35 * rows + 0.6]})
    told_ts = sorted(float(ev["ts"]) for ev in told if lo <= float(ev["ts"]) <= hi)
    chat_spans = spans.get("chat", [])
    if long_run:
        _draw_daily(ax_m, ax_e, ax_a, points, spans, order, colours, words, zone, bool(font))
    else:
        _draw_detail(ax_m, ax_e, ax_a, points, spans, order, colours, words, zone, bool(font))
    # Marks the same at every scale: chats as pink spans, told life events as stars (times only, no text).
    for s, e in chat_spans:
        ax_m.axvspan(when(s), when(e), color=CATEGORY_COLOURS["chat"], alpha=0.35, linewidth=0)
    if told_ts:
        ax_m.scatter([when(t) for t in told_ts], [0.95] * len(told_ts), marker="*", s=90, color="#8e44ad",
                     zorder=5, label=words["told"])
    handles, labels = ax_m.get_legend_handles_labels()
    if chat_spans:
        handles.append(Patch(color=CATEGORY_COLOURS["chat"], alpha=0.5))
        labels.append(words["chat_mark"])
    ax_m.legend(handles, labels, loc="lower left", ncol=len(labels), fontsize=8, framealpha=0.85)

    for ax in (ax_m, ax_e, ax_a):
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.margins(x=0)
    if days <= 2.5:
        ax_a.xaxis.set_major_locator(mdates.HourLocator(byhour=range(0, 24, 3), tz=zone))
        def hour_label(x: float, _pos: int) -> str:   # midnight names the day, so a short window needs no title
            d = mdates.num2date(x, tz=zone)
            return f"{d:%m-%d}" if d.hour == 0 else f"{d:%H:%M}"

        ax_a.xaxis.set_major_formatter(hour_label)
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
