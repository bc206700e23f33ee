"""Dates and times from the clock at conversion time: きょう → 2026/12/02, 2026-12-02,
2026年12月2日, 令和8年12月2日, 12月2日(水), 水曜日; あした, きのう, あさって, おととい the same for
their day; ことし, らいねん, きょねん → 2026年, 令和8年; こんげつ …; いま → 14:05, 14時5分, 午後2時5分;
げつようび … → the next such day. They go right after the reading's word (今日) and never
first, unless the user chose that kind for this reading before (a DateCandidate carries its
kind, which is what is remembered, not the day's text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Callable

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

WEEKDAYS = "月火水木金土日"
# Era starts (the first day of the era), newest first.
_ERAS = ((date(2019, 5, 1), "令和"), (date(1989, 1, 8), "平成"), (date(1926, 12, 25), "昭和"))


@dataclass(frozen=True)
class DateCandidate(Candidate):
    kind: str = ""    # which form ("slash", "era", "hm" …), remembered when chosen


def era_year(day: date) -> str:
    """令和8年; the first year is 元年."""
    for start, name in _ERAS:
        if day >= start:
            year = day.year - start.year + 1
            return f"{name}{'元' if year == 1 else year}年"
    return f"{day.year}年"


def _day_forms(day: date) -> list[tuple[str, str]]:
    week = WEEKDAYS[day.weekday()]
    return [("slash", f"{day:%Y/%m/%d}"), ("hyphen", f"{day:%Y-%m-%d}"),
            ("kanji", f"{day.year}年{day.month}月{day.day}日"),
            ("era", f"{era_year(day)}{day.month}月{day.day}日"),
            ("month_day", f"{day.month}月{day.day}日({week})"), ("weekday", f"{week}曜日")]


def _year_forms(day: date) -> list[tuple[str, str]]:
    return [("year", f"{day.year}年"), ("era_year", era_year(date(day.year, 12, 31))), ("year_digits", str(day.year))]


def _month_forms(day: date) -> list[tuple[str, str]]:
    return [("year_month", f"{day.year}年{day.month}月"), ("month", f"{day.month}月"),
            ("year_month_slash", f"{day:%Y/%m}")]


def _time_forms(now: datetime) -> list[tuple[str, str]]:
    half = "午前" if now.hour < 12 else "午後"
    return [("hm", f"{now:%H:%M}"), ("hm_kanji", f"{now.hour}時{now.minute}分"),
            ("ampm", f"{half}{now.hour % 12}時{now.minute}分")]


def _shift_year(day: date, years: int) -> date:
    return date(day.year + years, 1, 1)


def _shift_month(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


_DAYS = {"きょう": (0, "今日"), "ほんじつ": (0, "本日"), "あした": (1, "明日"), "あす": (1, "明日"),
         "みょうにち": (1, "明日"), "きのう": (-1, "昨日"), "さくじつ": (-1, "昨日"), "あさって": (2, "明後日"),
         "おととい": (-2, "一昨日"), "おとつい": (-2, "一昨日"), "しあさって": (3, "明々後日")}
_YEARS = {"ことし": (0, "今年"), "こんねん": (0, "今年"), "らいねん": (1, "来年"), "きょねん": (-1, "去年"),
          "さくねん": (-1, "昨年"), "さらいねん": (2, "再来年"), "おととし": (-2, "一昨年")}
_MONTHS = {"こんげつ": (0, "今月"), "らいげつ": (1, "来月"), "せんげつ": (-1, "先月")}
_TIMES = {"いま": "今", "じこく": "時刻", "げんざい": "現在"}
_WEEKDAY_READINGS = {f"{kana}ようび": i for i, kana in
                     enumerate(("げつ", "か", "すい", "もく", "きん", "ど", "にち"))}

READINGS = frozenset(_DAYS) | frozenset(_YEARS) | frozenset(_MONTHS) | frozenset(_TIMES) | frozenset(_WEEKDAY_READINGS)


def _forms(reading: str, clock: Callable[[], datetime]) -> tuple[str, str, list[tuple[str, str]]] | None:
    """(the reading's word, the annotation, [(kind, text)]), reading the clock only for a date reading."""
    if reading not in READINGS:
        return None
    now = clock()
    today = now.date()
    if reading in _DAYS:
        offset, word = _DAYS[reading]
        return word, f"{word}の日付", _day_forms(today + timedelta(days=offset))
    if reading in _YEARS:
        offset, word = _YEARS[reading]
        return word, word, _year_forms(_shift_year(today, offset))
    if reading in _MONTHS:
        offset, word = _MONTHS[reading]
        return word, word, _month_forms(_shift_month(today, offset))
    if reading in _TIMES:
        return _TIMES[reading], "現在の時刻", _time_forms(now)
    weekday = _WEEKDAY_READINGS[reading]
    day = today + timedelta(days=(weekday - today.weekday()) % 7)
    word = f"{WEEKDAYS[weekday]}曜日"
    forms = [(kind, text) for kind, text in _day_forms(day) if kind != "weekday"]
    return word, "今日" if day == today else f"次の{word}", forms


def additions(request: RewriteRequest) -> list[Addition]:
    found = _forms(request.reading, request.clock)
    if found is None:
        return []
    word, note, forms = found
    cands = [DateCandidate(text, note, Source.VARIANT, kind) for kind, text in forms]
    anchor = request.index_of(word)
    out = [Addition(tuple(cands), 1 if anchor is None else anchor + 1)]
    chosen = [c for c in cands if c.kind == request.remembered]
    if chosen:   # chosen before: today's text of that kind moves up to lead
        out.append(Addition(tuple(chosen), 0, may_lead=True))
    return out
