"""Emoji by kana reading (ねこ → 🐱 😸 …, Mozc's emoji readings) and by `:name` queries typed in
Latin (`:smile` → 😄, `:+1` → 👍; shortcodes and Unicode CLDR names), annotated 「絵文字」."""

from __future__ import annotations

from karukan_engine.core.types import Candidate, Source
from karukan_engine.kana import to_halfwidth_ascii
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

ANNOTATION = "絵文字"
# The first few go right after the reading's top words (page one), the rest to the end.
EARLY_COUNT = 3
EARLY_AT = 3
MAX_QUERY_MATCHES = 40


def additions(request: RewriteRequest) -> list[Addition]:
    query = name_query(request.reading)
    if query is not None:
        return _by_name(request, query)
    found = [Candidate(e, ANNOTATION, Source.VARIANT) for e in request.tables.emoji.get(request.reading, ())]
    return [Addition(tuple(found[:EARLY_COUNT]), EARLY_AT), Addition(tuple(found[EARLY_COUNT:]))]


def name_query(reading: str) -> str | None:
    """`:smile` / `:smile:` / `：ｓｍｉｌｅ` → "smile"; None for anything else."""
    text = to_halfwidth_ascii(reading).strip()
    if len(text) < 2 or not text.startswith(":") or not text.isascii():
        return None
    name = text[1:].rstrip(":").lower()
    return name if name and " " not in name else None


def matches(names: dict, query: str) -> list[tuple[str, str]]:
    """(name, emoji): the exact name first, then names starting with the query, then names
    holding it as a word, shorter names first; each emoji once."""
    exact = [(query, names[query])] if query in names else []
    starts = sorted((n for n in names if n.startswith(query) and n != query), key=lambda n: (len(n), n))
    words = sorted((n for n in names if f"_{query}" in n and not n.startswith(query)), key=lambda n: (len(n), n))
    seen: set[str] = set()
    out = []
    for name, char in exact + [(n, names[n]) for n in starts + words]:
        if char not in seen:
            seen.add(char)
            out.append((name, char))
            if len(out) >= MAX_QUERY_MATCHES:
                break
    return out


def _by_name(request: RewriteRequest, query: str) -> list[Addition]:
    found = tuple(Candidate(char, f"{ANNOTATION} :{name}:", Source.VARIANT)
                  for name, char in matches(request.tables.emoji_names, query))
    listed = request.listed
    # Only the query's own text is displaced: a word the converter found keeps the first place.
    typed = bool(listed) and to_halfwidth_ascii(listed[0].surface) == to_halfwidth_ascii(request.reading)
    return [Addition(found, 0 if typed else 1, may_lead=typed)]
