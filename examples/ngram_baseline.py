"""The floor to beat (issue #12): a character 5-gram LM (stupid backoff) reranking the lattice.

A plain character n-gram model (n = 1..5, stupid backoff with alpha = 0.4) is counted over the
training parts of the general-domain corpus, and used for one thing only: to rerank the
dictionary lattice's 5-best, the very list fused_quality.py's "dictionary" system answers with,

    score(candidate) = -rank_weight * rank + lambda * log S(candidate | left context)

(rank 0 = the dictionary's best; rank_weight is fixed at 1; ties keep the dictionary's order).
lambda is chosen on a small grid on the fit rows (the even rows of every sampled dev set, pooled,
each item once, with its context) maximising Acc@1 after NFKC; every set is then reported on its
held-out (odd) rows: the dictionary vs the reranked list, with the items fixed and broken and the
two-sided sign-test p (fused_quality.py's sampling, statistics and dictionary system, imported).

    python examples/ngram_baseline.py --limit 700 --json ngram_baseline.json

Training text (the training pipeline's work directory, never committed; held-out parts never
read): corpus/{chat,tatoeba,wikipedia,aozora}.txt (one sentence a line) and the annotated
Wikipedia training split readings/wac_train.jsonl (the sentence is the concatenated surfaces),
at most --max-chars characters in all (each part cut to the same share when there is more).
Text is NFKC-normalised; every sentence starts (and ends) with a boundary symbol, so the start of
a text is a context of its own.

Dev sets: the three in karukan_engine/data/eval/, the docs hold-out (pairs/test.jsonl), and the
held-out Wikipedia test split and chat dialogues (pairs/heldout/wac_test.jsonl,
pairs/heldout/chat_heldout.jsonl). Every set whose items carry a left context is also reported
without it ("... (no context)": the same items, context dropped for the lattice and the LM).

Counting is numpy only: characters map to small ints, an n-gram is an int64 code
(sum of id * base^position), each order's codes are counted with np.unique and looked up with
np.searchsorted; the count of a history is the sum of the counts of its continuations.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import resource
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import fusion_fit  # noqa: E402  (the dictionary-vs-system statistics)

UNK = 0          # a character outside the vocabulary
BOUNDARY = 1     # sentence start / end
FIRST_CHAR_ID = 2
INT64_MAX = np.iinfo(np.int64).max
ORDER = 5
ALPHA = 0.4
TRAINING_PARTS = ("chat", "tatoeba", "wikipedia", "aozora")
HELD_OUT_PARTS = ("chat_heldout", "gimp-help-ja", "gnome-user-docs-ja")   # never read here
LAMBDA_GRID = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
RANK_WEIGHT = 1.0


def normalise(text: str) -> str:
    """NFKC; a newline inside a text is a sentence boundary, other line breaks become it too."""
    return unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")


def codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def max_base(order: int) -> int:
    """The largest base whose order-th power still fits an int64 code."""
    base = int(round(INT64_MAX ** (1.0 / order)))
    while base ** order > INT64_MAX:
        base -= 1
    while (base + 1) ** order <= INT64_MAX:
        base += 1
    return base


@dataclass
class BuildStats:
    sentences: int = 0
    characters: int = 0          # characters counted (boundaries not included)
    vocabulary: int = 0          # distinct characters kept (others count as UNK)
    ngrams: dict = field(default_factory=dict)   # order -> distinct n-grams
    seconds: float = 0.0
    peak_rss_mb: float = 0.0


class CharNgram:
    """Character n-gram counts with stupid-backoff scores (Brants et al. 2007).

    S(w | h) = c(h w) / c(h) for the longest history h (up to order - 1 characters) with
    c(h w) > 0, times alpha for every character dropped from the history; at the bottom the
    unigram (c(w) + 1) / (N + V) over every id (characters, UNK and the boundary), so an unseen
    character still scores. S is not a normalised probability, but every S is in (0, 1].
    """

    def __init__(self, chars: np.ndarray, order: int, alpha: float,
                 keys: list[np.ndarray], counts: list[np.ndarray],
                 history_keys: list[np.ndarray], history_counts: list[np.ndarray]) -> None:
        self.chars = chars                      # sorted code points of the vocabulary
        self.base = len(chars) + FIRST_CHAR_ID
        self.order, self.alpha = order, alpha
        self.keys, self.counts = keys, counts   # [k - 1]: order-k codes, sorted, and their counts
        self.history_keys, self.history_counts = history_keys, history_counts   # [k - 1]: of order-k histories
        self.total = int(counts[0].sum())

    # --- counting ---------------------------------------------------------------------------

    @classmethod
    def count(cls, sentences: Iterable[str], order: int = ORDER, alpha: float = ALPHA,
              max_vocabulary: int | None = None) -> "CharNgram":
        """Count every n-gram (n = 1..order) of the sentences, each framed by boundaries.
        The most frequent characters are the vocabulary (as many as int64 codes allow, or
        max_vocabulary); any others count as UNK."""
        lines = [s for s in (normalise(s).replace("\n", "") for s in sentences) if s]
        cps = codepoints("\n" + "".join(line + "\n" for line in lines))
        chars, freq = np.unique(cps[cps != ord("\n")], return_counts=True)
        limit = max_base(order) - FIRST_CHAR_ID
        if max_vocabulary is not None:
            limit = min(limit, max_vocabulary)
        if len(chars) > limit:
            chars = chars[np.sort(np.argsort(-freq, kind="stable")[:limit])]
        return cls.from_ids(_map_ids(cps, chars), chars, order, alpha)

    @classmethod
    def from_ids(cls, ids: np.ndarray, chars: np.ndarray, order: int, alpha: float) -> "CharNgram":
        """ids: BOUNDARY s1 BOUNDARY s2 ... BOUNDARY. An n-gram never crosses a sentence: a
        boundary may only be its first symbol (a sentence start) or its last (a sentence end)."""
        base = len(chars) + FIRST_CHAR_ID
        if base ** order > INT64_MAX:
            raise ValueError(f"{len(chars)} characters: order-{order} codes would not fit int64")
        ids = np.asarray(ids, dtype=np.int64)
        is_boundary = ids == BOUNDARY
        keys, counts, history_keys, history_counts = [], [], [], []
        codes, valid = ids, np.ones(len(ids), dtype=bool)
        for k in range(1, order + 1):
            n = max(0, len(ids) - k + 1)
            if k == 1:
                selected = ids[1:]          # every symbol but the opening boundary is predicted
            else:
                codes = codes[:n] * base + ids[k - 1:k - 1 + n]
                valid = valid[:n]
                if k >= 3:                  # symbol i + k - 2 is now inside the n-gram at i
                    valid = valid & ~is_boundary[k - 2:k - 2 + n]
                selected = codes[valid]
            unique, count = np.unique(selected, return_counts=True)
            keys.append(unique)
            counts.append(count.astype(np.int64))
            if k == 1:
                history_keys.append(np.zeros(0, dtype=np.int64))
                history_counts.append(np.zeros(0, dtype=np.int64))
            else:   # a history's count: the sum over its continuations (prefixes of sorted codes are sorted)
                prefix = unique // base
                starts = np.flatnonzero(np.r_[True, prefix[1:] != prefix[:-1]]) if len(prefix) else prefix
                history_keys.append(prefix[starts])
                history_counts.append(np.add.reduceat(count, starts).astype(np.int64) if len(prefix)
                                      else np.zeros(0, dtype=np.int64))
            del selected
        return cls(chars, order, alpha, keys, counts, history_keys, history_counts)

    # --- scoring ----------------------------------------------------------------------------

    def ids_of(self, text: str) -> np.ndarray:
        return _map_ids(codepoints(normalise(text)), self.chars)

    def count_of(self, k: int, codes: np.ndarray) -> np.ndarray:
        return _lookup(self.keys[k - 1], self.counts[k - 1], codes)

    def history_count_of(self, k: int, codes: np.ndarray) -> np.ndarray:
        """Counts of order-k histories (k - 1 symbols), given their codes."""
        if k == 1:
            return np.full(len(codes), self.total, dtype=np.int64)
        return _lookup(self.history_keys[k - 1], self.history_counts[k - 1], codes)

    def window_scores(self, windows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """log S of each window's last symbol given the symbols before it.
        windows: (P, order) ids, right-aligned; lengths: how many of them are real (1..order)."""
        windows = np.asarray(windows, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        target = windows[:, -1]
        unigram = (self.count_of(1, target) + 1) / (self.total + self.base)
        score = np.log(unigram) + (lengths - 1) * math.log(self.alpha)
        done = np.zeros(len(windows), dtype=bool)
        for k in range(self.order, 1, -1):
            rows = np.flatnonzero((lengths >= k) & ~done)
            if not len(rows):
                continue
            part = windows[rows, self.order - k:]      # k real symbols: lengths >= k
            code = np.zeros(len(rows), dtype=np.int64)
            for j in range(k):
                code = code * self.base + part[:, j]
            c = self.count_of(k, code)
            seen = c > 0
            if seen.any():
                r = rows[seen]
                history = self.history_count_of(k, code[seen] // self.base)
                score[r] = np.log(c[seen] / history) + (lengths[r] - k) * math.log(self.alpha)
                done[r] = True
        return score

    def windows_of(self, text: str, context: str = "") -> tuple[np.ndarray, np.ndarray]:
        """The scoring windows of text's characters: up to order - 1 symbols before each, from
        the context after its last sentence start (the start of the text, when the context is
        empty or short, or where a newline in it is)."""
        history = np.r_[BOUNDARY, self.ids_of(context)].astype(np.int64)
        history = history[max(int(np.flatnonzero(history == BOUNDARY)[-1]), len(history) - (self.order - 1)):]
        target = self.ids_of(text)
        h, n = len(history), len(target)
        if n == 0:
            return np.zeros((0, self.order), dtype=np.int64), np.zeros(0, dtype=np.int64)
        padded = np.r_[np.full(self.order - 1, -1, dtype=np.int64), history, target]
        windows = np.lib.stride_tricks.sliding_window_view(padded, self.order)[h:h + n]
        lengths = np.minimum(self.order, h + 1 + np.arange(n))
        return windows, lengths

    def score(self, text: str, context: str = "") -> float:
        """log S(text | context): the sum of its characters' log S, natural log."""
        return float(self.score_many([(text, context)])[0])

    def score_many(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """log S(text | context) for every (text, context), in one vectorised pass."""
        all_windows, all_lengths, owner = [], [], []
        for index, (text, context) in enumerate(pairs):
            windows, lengths = self.windows_of(text, context)
            all_windows.append(windows)
            all_lengths.append(lengths)
            owner.append(np.full(len(lengths), index, dtype=np.int64))
        out = np.zeros(len(pairs))
        if not pairs or not sum(len(x) for x in all_lengths):
            return out
        scores = self.window_scores(np.concatenate(all_windows), np.concatenate(all_lengths))
        np.add.at(out, np.concatenate(owner), scores)
        return out

    def distinct(self) -> dict[int, int]:
        return {k: len(self.keys[k - 1]) for k in range(1, self.order + 1)}


def _map_ids(cps: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Code points to ids: newline = BOUNDARY, a vocabulary character its id, others UNK."""
    ids = np.full(len(cps), UNK, dtype=np.int64)
    if len(chars):
        pos = np.minimum(np.searchsorted(chars, cps), len(chars) - 1)
        known = chars[pos] == cps
        ids[known] = pos[known] + FIRST_CHAR_ID
    ids[cps == ord("\n")] = BOUNDARY
    return ids


def _lookup(keys: np.ndarray, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    if len(keys) == 0:
        return np.zeros(len(codes), dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, codes), len(keys) - 1)
    return np.where(keys[pos] == codes, values[pos], 0)


# --- training text ----------------------------------------------------------------------------

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


def build(work: Path, max_chars: int, order: int = ORDER, alpha: float = ALPHA) -> tuple[CharNgram, BuildStats, dict]:
    started = time.perf_counter()
    sentences, used = capped(part_sentences(work), max_chars)
    model = CharNgram.count(sentences, order, alpha)
    stats = BuildStats(sentences=len(sentences), characters=sum(used.values()),
                       vocabulary=len(model.chars), ngrams=model.distinct(),
                       seconds=time.perf_counter() - started,
                       peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return model, stats, used


# --- evaluation -------------------------------------------------------------------------------

def fused_quality():
    """examples/fused_quality.py as a module (its sampling, statistics and dictionary system)."""
    if "fused_quality" in sys.modules:
        return sys.modules["fused_quality"]
    spec = importlib.util.spec_from_file_location("fused_quality", ROOT / "examples" / "fused_quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def rerank(candidates: Sequence[str], log_s: Sequence[float], lam: float,
           rank_weight: float = RANK_WEIGHT) -> list[str]:
    """Candidates by -rank_weight * rank + lam * log S, best first; ties keep the given order."""
    order = sorted(range(len(candidates)), key=lambda r: (-(-rank_weight * r + lam * log_s[r]), r))
    return [candidates[r] for r in order]


def acc1(items: Sequence, outputs: Sequence[Sequence[str]]) -> float:
    return sum(fusion_fit.top_correct(i, o) for i, o in zip(items, outputs)) / max(1, len(items))


def fit_lambda(items: Sequence, candidates: Sequence[Sequence[str]], scores: Sequence[Sequence[float]],
               grid: Sequence[float] = LAMBDA_GRID) -> tuple[float, dict[float, float]]:
    """The grid's lambda with the best Acc@1 (NFKC) on these rows; the smallest on a tie."""
    by_lambda = {lam: acc1(items, [rerank(c, s, lam) for c, s in zip(candidates, scores)]) for lam in grid}
    best = max(grid, key=lambda lam: (by_lambda[lam], -lam))
    return best, by_lambda


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=700, help="items per dev set (every k-th)")
    parser.add_argument("--max-chars", type=int, default=30_000_000, help="training characters at most")
    parser.add_argument("--order", type=int, default=ORDER)
    parser.add_argument("--alpha", type=float, default=ALPHA)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.training.paths import work_dir

    fq = fused_quality()
    work = work_dir()
    model, stats, used = build(work, args.max_chars, args.order, args.alpha)
    print(f"{args.order}-gram counted over {stats.characters:,} characters, {stats.sentences:,} sentences "
          f"({', '.join(f'{k} {v:,}' for k, v in used.items())}), {stats.vocabulary:,} distinct characters; "
          f"distinct n-grams {', '.join(f'{k}: {v:,}' for k, v in stats.ngrams.items())}; "
          f"{stats.seconds:.1f} s, peak RSS {stats.peak_rss_mb:.0f} MB", flush=True)

    # fused_quality.py's "dictionary" system: the lattice over the system dictionary alone.
    base = LatticeConverter(SystemDictionary(), None, None)

    def dictionary_top(item) -> list[str]:
        return [c.surface for c in base.candidates(fusion_fit.request_of(item), fusion_fit.N_CANDIDATES)]

    sets = fq.with_no_context(fq.load_sets(None, args.limit, docs=True))
    lists, scores, seconds = {}, {}, {}
    for name, items in sets.items():
        started = time.perf_counter()
        lists[name] = [dictionary_top(it) for it in items]
        dictionary_s = time.perf_counter() - started
        started = time.perf_counter()
        flat = [(c, it.context) for it, cands in zip(items, lists[name]) for c in cands]
        flat_scores = model.score_many(flat)
        scores[name], at = [], 0
        for cands in lists[name]:
            scores[name].append(list(flat_scores[at:at + len(cands)]))
            at += len(cands)
        seconds[name] = (dictionary_s, time.perf_counter() - started)

    fit_names = [n for n in sets if not n.endswith(fq.NO_CONTEXT)]
    fit_items = [it for n in fit_names for it in sets[n][0::2]]
    fit_lists = [c for n in fit_names for c in lists[n][0::2]]
    fit_scores = [s for n in fit_names for s in scores[n][0::2]]
    lam, by_lambda = fit_lambda(fit_items, fit_lists, fit_scores)
    fit_out = [rerank(c, s, lam) for c, s in zip(fit_lists, fit_scores)]
    fit_versus = fusion_fit.paired(fit_items, fit_out, fit_lists)
    fit_p = fusion_fit.sign_test(fit_versus.wins, fit_versus.losses, two_sided=False)
    print(f"fit on {len(fit_items)} even rows of {len(fit_names)} sets: lambda {lam} "
          f"(Acc@1 NFKC {100 * by_lambda[lam]:.1f} % vs dictionary {100 * by_lambda[0.0]:.1f} %, "
          f"+{fit_versus.wins} -{fit_versus.losses}, one-sided p {fit_p:.4f}); grid "
          + ", ".join(f"{g}: {100 * a:.1f}" for g, a in by_lambda.items()), flush=True)

    results = {}
    header = (f"{'dev set (held-out rows)':<34} {'n':>4}  {'dictionary':>10}  {'5-gram':>7}  "
              f"{'fixed':>5} {'broken':>6}  {'p':>6}  {'dict R@5':>8}")
    print(header)
    for name, items in sets.items():
        held = items[1::2]
        dictionary_out = lists[name][1::2]
        reranked = [rerank(c, s, lam) for c, s in zip(lists[name][1::2], scores[name][1::2])]
        dict_run = fq.Run(dictionary_out, [seconds[name][0] / max(1, len(items))] * len(held))
        lm_run = fq.Run(reranked, [(seconds[name][0] + seconds[name][1]) / max(1, len(items))] * len(held))
        dict_row, lm_row = fq.row(held, dict_run, None), fq.row(held, lm_run, dict_run)
        results[name] = {"items": len(held), "dictionary": dict_row, "ngram_rerank": lm_row}
        print(f"{name:<34} {len(held):>4}  {100 * dict_row['acc1_nfkc']:9.1f}%  {100 * lm_row['acc1_nfkc']:6.1f}%  "
              f"{lm_row['wins_vs_dictionary']:>5} {lm_row['losses_vs_dictionary']:>6}  "
              f"{lm_row['sign_test_p']:6.3f}  {100 * dict_row['recall5']:7.1f}%", flush=True)
    if args.json:
        args.json.write_text(json.dumps({
            "order": args.order, "alpha": args.alpha, "rank_weight": RANK_WEIGHT, "limit": args.limit,
            "build": {**stats.__dict__, "characters_per_part": used},
            "fit": {"items": len(fit_items), "sets": fit_names, "lambda": lam,
                    "acc1_nfkc_by_lambda": {str(k): v for k, v in by_lambda.items()},
                    "fit_wins": fit_versus.wins, "fit_losses": fit_versus.losses,
                    "fit_p_one_sided": fit_p},
            "results": results}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
