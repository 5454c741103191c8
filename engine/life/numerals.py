"""Counted quantities in Chinese text: numerals (三十五, 一万两千, 十几, 三点五, 30) with a unit (分钟, 小时, 步, 公里, 页, 集, 章).

Read by engine/life/checks.py to hold what a sentence says against the activity it tells. Vague numerals become
ranges ("十几" is 11-19), ordinals (第三章) and parts or rhythms of an activity ("还剩二十分钟", "每隔十分钟",
"下一集") are not amounts and are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNIT = {"十": 10, "百": 100, "千": 1000}
_NUM = r"[0-9０-９.]+|[零〇一二两三四五六七八九十百千万几来多半]+(?:点[零〇一二三四五六七八九]+)?"
_QUANTITY = re.compile(rf"(第)?({_NUM})(个半小时|个多小时|个小时|小时|分钟|刻钟|步|公里|千米|页|集|章)")
# A number right after these is a part or a rhythm of the activity, not its length ("还剩二十分钟", "每隔十分钟",
# "前二十分钟", "提前十分钟").
_PART_BEFORE = re.compile(r"(?:剩|每|隔|前|头|最后)\S{0,2}$|[上下这那哪]$")   # and 下一集, 这一步: which, not how many


def chinese_int(text: str) -> int:
    """A Chinese integer up to the 万s: 三十五 35, 一万两千 12000, 十 10, 两千五 2500 (a trailing digit after a unit)."""
    total, section, digit, last_unit = 0, 0, None, 1
    for ch in text:
        if ch in ("零", "〇"):
            digit, last_unit = None, 1   # 一百零五: the digit after 零 is a unit digit
        elif ch in _DIGIT:
            digit = _DIGIT[ch]
        elif ch in _UNIT:
            section += (1 if digit is None else digit) * _UNIT[ch]
            digit, last_unit = None, _UNIT[ch]
        elif ch == "万":
            section += digit or 0
            total += (section or 1) * 10000
            section, digit, last_unit = 0, None, 10000
    if digit is not None:   # 两千五 = 2500: a last digit after a unit counts one unit lower
        section += digit * (last_unit // 10 if last_unit >= 100 else 1)
    return total + section


def parse_number(text: str) -> tuple[float, float] | None:
    """The range a numeral means: "30" (30, 30); "三十" (30, 30); "十几" (11, 19); "三四十" (30, 40); "两三" (2, 3).

    None for a numeral with no usable size ("几", "多", "来" alone).
    """
    text = text.translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text):
        return float(text), float(text)
    if text == "半":
        return 0.5, 0.5
    if "点" in text:   # 三点五 = 3.5: a Chinese decimal, digit by digit after 点
        whole, _, decimals = text.partition("点")
        value = chinese_int(whole) + float("0." + "".join(str(_DIGIT[ch]) for ch in decimals))
        return value, value
    if text.strip("几来多") == "" or not re.search(r"[零〇一二两三四五六七八九十百千万半]", text):
        return None
    fuzzy = text.endswith(("几", "来", "多"))
    core = text.rstrip("几来多")
    pair = re.fullmatch(r"([一二两三四五六七八九])([一二两三四五六七八九])(十|百|千|万)?", core)
    if pair:
        scale = {"十": 10, "百": 100, "千": 1000, "万": 10000}.get(pair.group(3) or "", 1)
        lo, hi = _DIGIT[pair.group(1)] * scale, _DIGIT[pair.group(2)] * scale
        return float(min(lo, hi)), float(max(lo, hi))
    if core.startswith("几"):
        return None
    value = chinese_int(core)
    if fuzzy:   # 十几 11-19, 二十多 21-29, 一百多 101-199: "more than", up to the next step of its magnitude
        step = 10 ** (len(str(value)) - 1) if value >= 10 else 1
        return float(value + 1), float(value + max(1, step - 1))
    return float(value), float(value)


@dataclass(frozen=True)
class Quantity:
    """A number with its unit as written: 40 分钟, 1.5 小时, 8000 步 (a range when the numeral is vague)."""

    lo: float
    hi: float
    unit: str   # minutes | steps | km | pages | episodes | chapters
    word: str   # as written, for the finding


def quantities(text: str) -> list[Quantity]:
    """Every counted quantity in a text with one of the units the checks know; ordinals (第三章) are skipped."""
    out: list[Quantity] = []
    for m in _QUANTITY.finditer(text):
        if m.group(1) or _PART_BEFORE.search(text[max(0, m.start() - 4):m.start()]):
            continue   # 第十二集 is where she is, not how much she did; see _PART_BEFORE
        value = parse_number(m.group(2))
        if value is None:
            continue
        lo, hi = value
        unit = m.group(3)
        if unit == "个半小时":
            lo, hi, kind = (lo + 0.5) * 60, (hi + 0.5) * 60, "minutes"
        elif unit == "个多小时":   # 一个多小时: more than an hour, less than two
            lo, hi, kind = lo * 60 + 1, hi * 60 + 59, "minutes"
        elif unit in ("个小时", "小时"):
            lo, hi, kind = lo * 60, hi * 60, "minutes"
        elif unit == "刻钟":
            lo, hi, kind = lo * 15, hi * 15, "minutes"
        else:
            kind = {"分钟": "minutes", "步": "steps", "公里": "km", "千米": "km", "页": "pages", "集": "episodes",
                    "章": "chapters"}[unit]
        out.append(Quantity(lo, hi, kind, m.group(0)))
    return out
