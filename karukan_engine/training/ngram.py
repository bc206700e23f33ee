"""The `ngram` stage: count the bundled character n-gram over the training text and write it.

Text: the corpus stage's training parts in the work directory (corpus/{chat,tatoeba,wikipedia,
aozora}.txt, one sentence a line) and the annotated Wikipedia training split
(readings/wac_train.jsonl, the sentence is the concatenated surfaces); never the held-out chat
dialogues nor the documentation, whose hold-out is a dev set. At most `max_chars` characters
(each part cut to the same share when there is more). The n-grams of order >= 2 seen fewer than
`min_count` times are dropped (docs/training.md "Character n-gram": the size it saves and what
it costs), and the result goes next to the bundled GGUF.
"""

from __future__ import annotations

import json
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from karukan_engine.lm.char_ngram import ALPHA, BUNDLED, KNESER_NEY, ORDER, CharNgram
from karukan_engine.training.paths import PACKAGE_MODEL_DIR, work_dir

NGRAM_FILE = BUNDLED.name
TRAINING_PARTS = ("chat", "tatoeba", "wikipedia", "aozora")
HELD_OUT_PARTS = ("chat_heldout", "gimp-help-ja", "gnome-user-docs-ja")   # never read here
MAX_CHARS = 30_000_000
MIN_COUNT = 2


@dataclass
class BuildStats:
    sentences: int = 0
    characters: int = 0          # characters counted (boundaries not included)
    vocabulary: int = 0          # distinct characters kept (others count as UNK)
    ngrams: dict = field(default_factory=dict)   # order -> distinct n-grams
    seconds: float = 0.0
    peak_rss_mb: float = 0.0


def part_sentences(work: Path) -> dict[str, list[str]]:
    """The training parts (never the held-out ones), one list of sentences each."""
    parts: dict[str, list[str]] = {}
    for name in TRAINING_PARTS:
        assert name not in HELD_OUT_PARTS
        path = work / "corpus" / f"{name}.txt"
        if path.is_file():
            parts[name] = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    wac = work / "readings" / "wac_train.jsonl"
    if wac.is_file():
        parts["wac_train"] = ["".join(surface for surface, _ in json.loads(line)["chunks"])
                              for line in wac.read_text(encoding="utf-8").splitlines() if line.strip()]
    return parts


def capped(parts: dict[str, list[str]], max_chars: int) -> tuple[list[str], dict[str, int]]:
    """All sentences if they fit max_chars, else each part's leading lines up to the same share."""
    sizes = {name: sum(len(s) for s in lines) for name, lines in parts.items()}
    total = sum(sizes.values())
    share = 1.0 if total <= max_chars else max_chars / total
    chosen, used = [], {}
    for name, lines in parts.items():
        budget, taken = share * sizes[name], 0
        for line in lines:
            if taken + len(line) > budget:
                break
            chosen.append(line)
            taken += len(line)
        used[name] = taken
    return chosen, used


def build(work: Path, max_chars: int = MAX_CHARS, order: int = ORDER, smoothing: str = KNESER_NEY,
          alpha: float = ALPHA) -> tuple[CharNgram, BuildStats, dict]:
    """The exact counts over the training text, smoothed, with what was read."""
    started = time.perf_counter()
    sentences, used = capped(part_sentences(work), max_chars)
    if not sentences:
        raise FileNotFoundError(f"no training text under {work / 'corpus'}: run the corpus stage first")
    model = CharNgram.count(sentences, order, smoothing, alpha)
    stats = BuildStats(sentences=len(sentences), characters=sum(used.values()),
                       vocabulary=len(model.chars), ngrams=model.distinct(),
                       seconds=time.perf_counter() - started,
                       peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return model, stats, used


def build_ngram(model_dir: Path = PACKAGE_MODEL_DIR, min_count: int = MIN_COUNT,
                max_chars: int = MAX_CHARS, force: bool = False) -> Path:
    """Count, prune and write model_dir/NGRAM_FILE (skipped when it exists, unless force)."""
    out = Path(model_dir) / NGRAM_FILE
    if out.exists() and not force:
        print(f"{out.name} exists; --force rebuilds it")
        return out
    model, stats, used = build(work_dir(), max_chars)
    pruned = model.pruned(min_count)
    out.parent.mkdir(parents=True, exist_ok=True)
    pruned.save(out)
    print(f"{ORDER}-gram ({pruned.smoothing}) over {stats.characters:,} characters ({', '.join(f'{k} {v:,}' for k, v in used.items())}); "
          f"{stats.vocabulary:,} characters; n-grams {stats.ngrams} -> kept (count >= {min_count}) "
          f"{pruned.distinct()}; {out.stat().st_size / 1e6:.1f} MB; {stats.seconds:.1f} s")
    return out
