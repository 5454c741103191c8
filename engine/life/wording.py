"""Chinese numbers and durations as a person says them: 两 vs 二, 半小时, 一个多小时, all derived from real minutes.

Every number in her sentences comes from here so that one place decides how a count reads and how much a phrase
may round: a duration phrase always covers the real duration (a tested property), so "一个半小时" is never said of
forty minutes.
"""

from __future__ import annotations

_DIGITS = "零一二三四五六七八九"
_UNITS = ((1000, "千"), (100, "百"), (10, "十"))


def _below_10000(n: int, liang: bool) -> str:
    """0 < n < 10000 in standard reading; a leading 2 before 百/千 reads 两 when `liang` (两千三百, but 二十)."""
    out: list[str] = []
    rest = n
    zero_pending = False
    for value, unit in _UNITS:
        digit, rest = divmod(rest, value)
        if digit:
            if zero_pending:
                out.append("零")
                zero_pending = False
            if value == 10 and digit == 1 and not out:
                out.append("十")  # 十二, not 一十二, at the head of a number
                continue
            head = not out
            out.append("两" if digit == 2 and head and liang and value >= 100 else _DIGITS[digit])
            out.append(unit)
        elif out:
            zero_pending = True
    if rest:
        if zero_pending:
            out.append("零")
        out.append(_DIGITS[rest])
    return "".join(out)


def cn_number(n: int, liang: bool = True) -> str:
    """A whole number in Chinese characters (0 <= n < 10^8): 3 -> 三, 12 -> 十二, 2300 -> 两千三百, 10500 -> 一万零五百."""
    if not 0 <= n < 100_000_000:
        raise ValueError(f"cn_number covers 0..99999999, got {n}")
    if n == 0:
        return "零"
    high, low = divmod(n, 10_000)
    if not high:
        return _below_10000(low, liang)
    text = ("两" if high == 2 and liang else _below_10000(high, liang)) + "万"
    if low:
        text += ("零" if low < 1000 else "") + _below_10000(low, liang)
    return text


def cn_count(n: int, measure: str) -> str:
    """n things with a measure word: 两集, 十二页, 二十二章 (两 only stands alone or leads 百/千/万)."""
    if n == 2:
        return "两" + measure
    return cn_number(n) + measure


def cn_ordinal(n: int, measure: str) -> str:
    """第二章, 第十二集: ordinals always read 二."""
    return "第" + cn_number(n, liang=False) + measure


def cn_decimal_half(value: float, measure: str) -> str:
    """A distance rounded to a half: 三公里, 两公里, 二点五公里, 半公里."""
    halves = max(1, round(value * 2))
    whole, half = divmod(halves, 2)
    if whole == 0:
        return "半" + measure
    if not half:
        return cn_count(whole, measure)
    return cn_number(whole, liang=False) + "点五" + measure


def duration_phrase(minutes: int) -> str:
    """How she says a duration of `minutes` (>= 1); the phrase always covers the real value (see duration_bounds)."""
    if minutes < 1:
        raise ValueError(f"a duration is at least one minute, got {minutes}")
    if minutes < 20:
        return "一刻钟" if minutes == 15 else cn_number(minutes) + "分钟"
    if minutes < 56:
        rounded = 5 * round(minutes / 5)
        if rounded == 30:
            return "半个小时"
        return cn_number(rounded) + "分钟"
    hours, rest = divmod(minutes, 60)
    if rest >= 55:
        hours, rest = hours + 1, rest - 60
    if -5 <= rest <= 5:
        return cn_count(hours, "个小时")
    if rest <= 24:
        return cn_count(hours, "个多小时")
    if rest <= 40:
        return cn_count(hours, "个半小时")
    return "快" + cn_count(hours + 1, "个小时")


def duration_bounds(phrase: str) -> tuple[int, int]:
    """The minutes a phrase of duration_phrase may stand for, inclusive (for checks; raises on other text)."""
    if phrase == "一刻钟":
        return (15, 15)
    if phrase == "半个小时":
        return (28, 32)
    if phrase.endswith("分钟"):
        value = parse_cn_number(phrase[:-2])
        return (value, value) if value < 20 else (value - 2, value + 2)
    almost = phrase.startswith("快")
    body = phrase[1:] if almost else phrase
    for suffix, low, high in (("个多小时", 6, 24), ("个半小时", 25, 40), ("个小时", -5, 5)):
        if body.endswith(suffix):
            hours = parse_cn_number(body[: -len(suffix)])
            if almost:
                return (hours * 60 - 19, hours * 60 - 6)
            return (hours * 60 + low, hours * 60 + high)
    raise ValueError(f"not a duration phrase: {phrase!r}")


def parse_cn_number(text: str) -> int:
    """The inverse of cn_number for what it writes (两/二, 十, 百, 千, 万, 零)."""
    if not text:
        raise ValueError("empty number")
    digits = {ch: i for i, ch in enumerate(_DIGITS)} | {"两": 2}
    units = {"十": 10, "百": 100, "千": 1000}
    total, section, digit = 0, 0, 0
    for ch in text:
        if ch in digits:
            digit = digits[ch]
        elif ch in units:
            section += (digit or 1) * units[ch]
            digit = 0
        elif ch == "万":
            total += (section + digit) * 10_000
            section, digit = 0, 0
        else:
            raise ValueError(f"not a Chinese number: {text!r}")
    return total + section + digit
