#!/usr/bin/env python3
"""Our first candidate page against Mozc's, for the most frequent bunsetsu readings of the Anthy
corpus (gold bunsetsu) and for short whole phrases.

Our page is what Space shows through a Session (the candidate window's code path, 9 per page as
IBus and fcitx5 show it). Mozc's pages are read from a recorded fixture
(benchmarks/data/mozc_candidate_pages.json, made by tools/mozc_pages.py), so the comparison runs
without Mozc; the fixture also holds the readings and their gold spellings, so it runs without the
Anthy corpus too.

Every entry on a page is given one class, mechanically, from the system dictionary:
- kana: the hiragana or katakana of the reading;
- form: anything with a character that is not kana or kanji (romaji, half-width kana, digits,
  dates, emoticons: Mozc's rewriters);
- word: one dictionary entry for the whole reading;
- phrase: one content word followed by words written in kana only (particles, auxiliaries,
  endings), each a dictionary entry;
- guess: a phrase whose content word is a single kanji (教は, 強は);
- junk: anything else: two or more content words glued together (快技の = 快 + 技 + の),
  or a spelling the dictionary cannot build at all.
Printed and written per system: junk and guesses per page, pages where a guess comes before a
word or phrase, entries not on the other system's page, gold first / on the page, and where the
hiragana and katakana forms stand.

    python benchmarks/candidate_pages_eval.py --json pages.json
    python benchmarks/candidate_pages_eval.py --lm          # with the n-grams, as `--no-model` converts
    python benchmarks/candidate_pages_eval.py --select readings.json   # pick the readings (Anthy)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.kana import has_kanji, is_hiragana, is_kanji, is_one_kanji, nfkc, to_hiragana, to_katakana  # noqa: E402

PAGE = 9
FIXTURE = ROOT / "benchmarks" / "data" / "mozc_candidate_pages.json"
SEGMENT_READINGS = 200
PHRASES = 100
PHRASE_MAX = 10   # characters of a short phrase's reading


# -- which readings ----------------------------------------------------------------------------

def select_readings(rows: list[tuple[list[str], list[str]]]) -> list[dict]:
    """The most frequent bunsetsu readings (gold: their most frequent spelling), then short
    two-bunsetsu lines in corpus order (gold: the line)."""
    spellings: dict[str, Counter] = defaultdict(Counter)
    for readings, surfaces in rows:
        for reading, surface in zip(readings, surfaces):
            reading = to_hiragana(reading)
            if reading and is_hiragana(reading):
                spellings[reading][surface] += 1
    frequent = sorted(spellings, key=lambda r: (-sum(spellings[r].values()), r))[:SEGMENT_READINGS]
    items = [{"reading": r, "kind": "segment", "count": sum(spellings[r].values()),
              "gold": spellings[r].most_common(1)[0][0]} for r in frequent]
    seen = set(frequent)
    for readings, surfaces in rows:
        reading = to_hiragana("".join(readings))
        if (len(readings) == 2 and len(reading) <= PHRASE_MAX and is_hiragana(reading) and reading not in seen
                and len([i for i in items if i["kind"] == "phrase"]) < PHRASES):
            seen.add(reading)
            items.append({"reading": reading, "kind": "phrase", "count": 1, "gold": "".join(surfaces),
                          "gold_first_segment": (to_hiragana(readings[0]), surfaces[0])})
    return items


# -- what an entry is -------------------------------------------------------------------------

class EntryClasses:
    """Classes of page entries (see the module's docstring), from the system dictionary."""

    def __init__(self, dictionary) -> None:
        self.dictionary = dictionary

    def classify(self, reading: str, surface: str) -> str:
        if surface in (reading, to_katakana(reading)):
            return "kana"
        if not all(_japanese(ch) for ch in surface):
            return "form"
        if any(e.surface == surface for e in self.dictionary.lookup(reading)):
            return "word"
        best = self._fewest_content_words(reading, surface)
        if best is None or best[0] > 1:
            return "junk"
        return "guess" if best[1] else "phrase"

    def _fewest_content_words(self, reading: str, surface: str) -> tuple[int, bool] | None:
        """(content words, whether the first is one kanji with words after it) of the spelling's
        cheapest split into dictionary entries, or None when it has none."""
        best: dict[tuple[int, int], tuple[int, bool]] = {(0, 0): (0, False)}
        for i in range(len(reading)):
            for j in range(len(surface)):
                here = best.get((i, j))
                if here is None:
                    continue
                for key in self.dictionary.prefixes(reading[i:]):
                    for entry in self.dictionary.lookup(key):
                        if not entry.surface or not surface.startswith(entry.surface, j):
                            continue
                        # the same rule as the engine's (lattice/candidate_filter.py)
                        content = i == 0 or has_kanji(entry.surface)
                        lone_kanji = here[1] or (i == 0 and is_one_kanji(entry.surface) and len(key) < len(reading))
                        step = (here[0] + content, lone_kanji)
                        at = (i + len(key), j + len(entry.surface))
                        if at not in best or step < best[at]:
                            best[at] = step
        return best.get((len(reading), len(surface)))


def _japanese(ch: str) -> bool:
    return is_kanji(ch) or "\u3041" <= ch <= "\u30fc"


# -- our pages --------------------------------------------------------------------------------

def our_pages(converter, readings: list[str], config_path: Path | None = None) -> dict[str, dict]:
    """What Space shows for each reading, typed as romaji into a fresh Session (with the
    config file given, e.g. one that turns rewriters off, else the defaults)."""
    from karukan_engine.config import Config
    from karukan_engine.core.types import ConversionRequest
    from karukan_engine.romaji.table import RomajiTable
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    table = RomajiTable.load(ROOT / "karukan_engine" / "data" / "romaji-hiragana.tsv")
    pages = {}
    for reading in readings:
        session = Session(converter, Config.load(config_path) if config_path else Config())
        for _, keysym, modifiers in parse_keys(table.romaji_for(reading) + "<space>"):
            session.process_key(keysym, modifiers)
        segments = converter.convert(ConversionRequest(reading))
        pages[reading] = {"segments": [s.reading for s in segments], "top": session.view.preedit_text,
                          "page": [item.text for item in session.view.candidates.items]}
    return pages


# -- the measures -------------------------------------------------------------------------------

def measure(items: list[dict], pages: dict[str, dict], other: dict[str, dict], classes: EntryClasses) -> dict:
    """One system's figures over the items it has a page for."""
    junk, guesses, guess_first, not_other, gold_first, gold_page, whole = [], [], 0, [], 0, 0, 0
    places: dict[str, list[int | None]] = {"hiragana": [], "katakana": []}
    n = 0
    for item in items:
        shown = pages.get(item["reading"])
        if shown is None:
            continue
        n += 1
        reading = shown["segments"][0] if shown["segments"] else item["reading"]
        whole += len(shown["segments"]) == 1
        kinds = [classes.classify(reading, s) for s in shown["page"]]
        junk.append(kinds.count("junk"))
        guesses.append(kinds.count("guess"))
        if "guess" in kinds and any(k in ("word", "phrase") for k in kinds[kinds.index("guess"):]):
            guess_first += 1
        if item["reading"] in other:
            mine = set(other[item["reading"]]["page"])
            not_other.append(sum(s not in mine for s in shown["page"]))
        gold, gold_reading = item["gold"], item["reading"]
        if item["kind"] == "phrase":
            gold_first += nfkc(shown["top"]) == nfkc(gold)
            gold_reading, gold = item["gold_first_segment"]
        else:
            gold_first += bool(shown["page"]) and nfkc(shown["page"][0]) == nfkc(gold)
        gold_page += reading == gold_reading and nfkc(gold) in [nfkc(s) for s in shown["page"]]
        for name, form in (("hiragana", reading), ("katakana", to_katakana(reading))):
            places[name].append(shown["page"].index(form) + 1 if form in shown["page"] else None)
    n = max(1, n)

    def where(found: list[int | None]) -> dict:
        there = [p for p in found if p is not None]
        return {"on_page": round(len(there) / n, 3),
                "mean_place": round(statistics.mean(there), 2) if there else None,
                "places": dict(sorted(Counter(there).items()))}

    return {"pages": n, "whole_reading_one_segment": round(whole / n, 3),
            "junk_per_page": round(sum(junk) / n, 3), "pages_with_junk": round(sum(j > 0 for j in junk) / n, 3),
            "guesses_per_page": round(sum(guesses) / n, 3), "guess_before_word": round(guess_first / n, 3),
            "not_on_other_page": round(sum(not_other) / max(1, len(not_other)), 3),
            "gold_first": round(gold_first / n, 3), "gold_on_page": round(gold_page / n, 3),
            "hiragana": where(places["hiragana"]), "katakana": where(places["katakana"])}


def report(name: str, kind: str, result: dict) -> None:
    print(f"{name:<8}{kind:<9}{result['pages']:>6}{result['junk_per_page']:>7.2f}{result['pages_with_junk']:>7.2f}"
          f"{result['guesses_per_page']:>8.2f}{result['guess_before_word']:>8.2f}{result['not_on_other_page']:>8.2f}"
          f"{result['gold_first']:>7.3f}{result['gold_on_page']:>7.3f}"
          f"{result['hiragana']['on_page']:>6.2f}/{result['hiragana']['mean_place'] or 0:<4.1f}"
          f"{result['katakana']['on_page']:>6.2f}/{result['katakana']['mean_place'] or 0:<4.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="Mozc's recorded pages and the readings")
    parser.add_argument("--select", type=Path, help="write the readings (from the Anthy corpus) here and stop")
    parser.add_argument("--cache", type=Path, default=ROOT / "work_data" / "downloads")
    parser.add_argument("--model", action="store_true", help="the default fused pipeline (with the model)")
    parser.add_argument("--lm", action="store_true",
                        help="the dictionary with the bundled n-grams and corpus nouns, as `--no-model` converts")
    parser.add_argument("--config", type=Path, help="the sessions' config file (default: the defaults)")
    parser.add_argument("--show", type=int, default=0, help="print this many pages side by side")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    if args.select:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from segment_candidates_eval import anthy_segments

        items = select_readings(anthy_segments(args.cache))
        args.select.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{len(items)} readings -> {args.select}")
        return 0

    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    fixture = json.loads(args.fixture.read_text(encoding="utf-8"))
    items, mozc = fixture["items"], fixture["pages"]
    dictionary = SystemDictionary()
    # the fused pipeline builds on the product's lattice, as the engine's does
    converter = (LatticeConverter.judged(dictionary) if args.lm or args.model
                 else LatticeConverter(dictionary, None, None))
    if args.model:
        from karukan_engine.conversion.factory import ConverterOptions
        from karukan_engine.conversion.fused import build_fused_converter

        converter = build_fused_converter(converter, ConverterOptions())
    ours = our_pages(converter, [item["reading"] for item in items], args.config)
    classes = EntryClasses(dictionary)
    result = {"mozc_version": fixture["mozc_version"], "model": args.model, "lm": args.lm or args.model}
    print(f"{'system':<8}{'kind':<9}{'pages':>6}{'junk':>7}{'w/junk':>7}{'guesses':>8}{'g<word':>8}"
          f"{'not@other':>9}{'gold1':>7}{'gold@p':>7}{'hira on/at':>11}{'kata on/at':>11}")
    for kind in ("segment", "phrase"):
        chosen = [item for item in items if item["kind"] == kind]
        for name, pages, other in (("karukan", ours, mozc), ("mozc", mozc, ours)):
            result[f"{name}_{kind}"] = measure(chosen, pages, other, classes)
            report(name, kind, result[f"{name}_{kind}"])
    for item in items[:args.show]:
        print(item["reading"], ours[item["reading"]]["page"], mozc.get(item["reading"], {}).get("page"))
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from private_user_data import private_user_data

    with private_user_data():   # the user's learning is neither read nor written
        sys.exit(main())
