"""The `ngram` stage: count the character n-gram over the whole corpus and write it.

Text: every corpus source's training part, read in place (training/lm_text.py: the held-out
documents of each source, the annotated Wikipedia dev and test splits and the Debian
documentation are dev sets and never read here), at most `max_chars` characters (each source
cut to the same share when there is more). The n-grams of order >= 2 seen fewer than
`min_count` times are dropped (docs/training.md "Character n-gram": the size it saves and what
it costs), and the result goes next to the bundled GGUF.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from karukan_engine.lm.char_ngram import ALPHA, BUNDLED, KNESER_NEY, ORDER, CharNgram
from karukan_engine.training.lm_text import lm_text
from karukan_engine.training.paths import PACKAGE_MODEL_DIR

NGRAM_FILE = BUNDLED.name
MAX_CHARS = 200_000_000
MIN_COUNT = 2


@dataclass
class BuildStats:
    sentences: int = 0
    characters: int = 0          # characters counted (boundaries not included)
    vocabulary: int = 0          # distinct characters kept (others count as UNK)
    ngrams: dict = field(default_factory=dict)   # order -> distinct n-grams
    seconds: float = 0.0
    peak_rss_mb: float = 0.0


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


def build(corpus_dir: Path | None, max_chars: int = MAX_CHARS, order: int = ORDER, smoothing: str = KNESER_NEY,
          alpha: float = ALPHA) -> tuple[CharNgram, BuildStats, dict]:
    """The exact counts over the training text, smoothed, with what was read."""
    started = time.perf_counter()
    sentences, used = capped(dict(lm_text(corpus_dir)), max_chars)
    if not sentences:
        raise FileNotFoundError(f"no training text in {corpus_dir}")
    model = CharNgram.count(sentences, order, smoothing, alpha)
    stats = BuildStats(sentences=len(sentences), characters=sum(used.values()),
                       vocabulary=len(model.chars), ngrams=model.distinct(),
                       seconds=time.perf_counter() - started,
                       peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return model, stats, used


def build_ngram(corpus_dir: Path | None, model_dir: Path = PACKAGE_MODEL_DIR, min_count: int = MIN_COUNT,
                max_chars: int = MAX_CHARS, force: bool = False) -> Path:
    """Count, prune and write model_dir/NGRAM_FILE (skipped when it exists, unless force)."""
    out = Path(model_dir) / NGRAM_FILE
    if out.exists() and not force:
        print(f"{out.name} exists; --force rebuilds it")
        return out
    model, stats, used = build(corpus_dir, max_chars)
    pruned = model.pruned(min_count)
    out.parent.mkdir(parents=True, exist_ok=True)
    pruned.save(out)
    print(f"{ORDER}-gram ({pruned.smoothing}) over {stats.characters:,} characters ({', '.join(f'{k} {v:,}' for k, v in used.items())}); "
          f"{stats.vocabulary:,} characters; n-grams {stats.ngrams} -> kept (count >= {min_count}) "
          f"{pruned.distinct()}; {out.stat().st_size / 1e6:.1f} MB; {stats.seconds:.1f} s")
    return out
