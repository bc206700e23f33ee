"""LatticeConverter: the dictionary converter (DictionaryConverter protocol) over Mozc's OSS data.

convert(): best path (Viterbi) -> bunsetsu segments (Mozc's segmenter rules, user-fixed
boundaries kept); each segment's candidates are the N-best spellings of its span inside one
bunsetsu, between its neighbours on the best path, followed by learned words and variants; the
user's last choice for a segment's reading comes first (as in Mozc), and the last choice after
the same left context (the end of the text before the segment) before that.
They are computed lazily (LazyCandidates): a segment costs a search only when its list is read.
candidates(): N-best whole-reading paths, deduplicated by surface (led by live()'s text).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Callable, Sequence

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.lru import Lru
from karukan_engine.core.types import Candidate, ConversionRequest, LazyCandidates, Segment, Source
from karukan_engine.dictionary.learning import LearningStore, context_key
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.kana import has_kanji, is_one_kanji, to_hiragana
from karukan_engine.lattice.candidate_filter import (
    HIRAGANA_BY,
    KATAKANA_BY,
    SegmentFilter,
    Shape,
    Spelling,
    bring_forward,
    order_spellings,
    reference_cost,
    shape_of,
)
from karukan_engine.lattice.context import START, ContextAnalyzer
from karukan_engine.lattice.corpus_words import BUNDLED as CORPUS_NOUNS
from karukan_engine.lattice.corpus_words import CorpusWordSource, LexiconWithWords
from karukan_engine.lattice.lattice import Lattice, LatticeBuilder
from karukan_engine.lattice.live_spelling import fitting_text
from karukan_engine.lattice.lm_paths import (
    MAX_EXPANSIONS,
    LmWeights,
    ScoredPath,
    TextScorer,
    keep_dictionary_choice,
    ranked_paths,
)
from karukan_engine.lattice.search import SearchSpace
from karukan_engine.lattice.segment_order import split_compositions
from karukan_engine.lattice.segmenter import fixed_cuts, segment_spans
from karukan_engine.lattice.sources import LearnedWordSource, UserWordSource
from karukan_engine.lattice.topic_paths import CONTEXT_CHARS as TOPIC_CONTEXT_CHARS
from karukan_engine.lattice.variants import load_symbols, number_variants, symbol_variants
from karukan_engine.lattice.word_lm import (
    MAX_CONTEXT_WORD,
    LoadedWordScorer,
    SearchTerms,
    WordLmWeights,
    WordScorer,
    dictionary_margin,
    open_start,
    path_rescorer,
    search_terms,
)
from karukan_engine.transliteration import Form, script_variants

SEGMENT_ALTERNATIVES = 20
# bound on A* pops for each segment's alternatives (the whole reading's: lm_paths.MAX_EXPANSIONS)
SEGMENT_EXPANSIONS = 200
# Segment candidates depend only on the span's text, its neighbours' POS ids and the user data,
# so resizing or re-converting reuses the segments that did not change.
SEGMENT_CACHE_SIZE = 256
# Analyses kept: a fused Space needs the reading's lattice and the one cut where its best
# candidate cuts (segments), and a preparation's two stages and a quick Space's refinement ask
# for both again; one entry made each call rebuild the other's. Between keys the session has
# the readings the next letter can make analysed (up to six), and the reading shown is the base
# of the next one's lattice: 16 keep them all (about 0.7 MB each at 44 kana).
ANALYSIS_CACHE_SIZE = 16


class _Analysis:
    """One reading's lattice and its unconstrained search (cached between calls); the word
    n-gram's terms and the dictionary-only search too, for the analysis of a reading that
    continues this one (typing: LatticeBuilder.extend)."""

    def __init__(self, lattice: Lattice, space: SearchSpace, cuts: list[int], ranked: list[ScoredPath],
                 terms: SearchTerms | None, plain: SearchSpace | None) -> None:
        self.lattice = lattice
        self.space = space
        self.terms = terms
        self.plain = plain   # the search on the dictionary's costs alone, when it was needed
        self.cuts = cuts
        self.ranked = ranked   # the distinct paths the language model judged, best first
        self.path = list(ranked[0].nodes) if ranked else []
        self.best: list[tuple[int, int, Candidate]] | None = None   # each segment's span and first candidate
        self.segments: list[Segment] | None = None   # convert()'s result, computed once


class LatticeConverter:
    def __init__(self, dictionary: SystemDictionary, user_dictionary: UserDictionary | None = None,
                 learning: LearningStore | None = None, lm: Callable[[], TextScorer | None] | None = None,
                 lm_weights: LmWeights = LmWeights(), word_lm: Callable[[], WordScorer | None] | None = None,
                 word_weights: WordLmWeights = WordLmWeights(), corpus_words: CorpusWordSource | None = None) -> None:
        """lm: gives the language model the paths are judged with, or None while it loads (or
        without one: the dictionary's costs alone); word_lm: the same for the word n-gram the
        search itself scores words with (lattice/word_lm.py); corpus_words: nouns the
        dictionary lacks (lattice/corpus_words.py)."""
        self.dictionary = dictionary
        self.lm = lm
        self.lm_weights = lm_weights
        self.word_lm = word_lm
        self.word_weights = word_weights
        self.user_dictionary = user_dictionary
        self.learning = learning
        # what alignment and segment lists read: the dictionary with the corpus words
        self.lexicon = LexiconWithWords(dictionary, corpus_words) if corpus_words is not None else dictionary
        sources: list = [corpus_words] if corpus_words is not None else []
        if user_dictionary is not None:
            sources.append(UserWordSource(user_dictionary, dictionary))
        self._learned = LearnedWordSource(learning, dictionary) if learning is not None else None
        if self._learned is not None:
            sources.append(self._learned)
        self.builder = LatticeBuilder(dictionary, sources)
        self.symbols = load_symbols(dictionary.directory / "symbols.tsv")
        self.context = ContextAnalyzer(dictionary)
        self.use_context = True   # the first word connects to the end of request.left_context
        # a reading that continues a cached one is analysed from it (False: always from scratch,
        # for benchmarks: the results are the same)
        self.incremental = True
        self.preparation: threading.Thread | None = None   # prepare_in_background's thread
        self._lock = threading.Lock()
        self._cache: Lru[tuple, _Analysis] = Lru(ANALYSIS_CACHE_SIZE)
        self._segment_cache: Lru[tuple, tuple[Candidate, ...]] = Lru(SEGMENT_CACHE_SIZE)

    @classmethod
    def load_default(cls, directory: Path = DEFAULT_DIR,
                     lm: Callable[[], TextScorer | None] | None = None, words: bool = False) -> "LatticeConverter":
        """The bundled system dictionary with the user's dictionary and learning history (and
        the language model `lm` gives, with its fitted weights; words: the bundled word n-gram
        too, loading in the background). Raises FileNotFoundError when the compiled dictionary
        is missing, DictionaryFormatError when it is damaged."""
        dictionary = SystemDictionary(directory)
        user = UserDictionary(pos_names=dictionary.user_pos)
        word_lm = LoadedWordScorer(dictionary) if words and WordLmWeights().weight > 0 else None
        return cls(dictionary, user, LearningStore(), lm=lm, word_lm=word_lm,
                   corpus_words=CorpusWordSource.load(dictionary, directory / CORPUS_NOUNS.name))

    @classmethod
    def judged(cls, dictionary: SystemDictionary, word_weights: WordLmWeights = WordLmWeights(),
               corpus_words: bool = True) -> "LatticeConverter":
        """The lattice `karukan convert --no-model` converts with, less the user's dictionary and
        learning history (benchmarks, tools, tests): both bundled n-grams, loaded before it
        returns, and the corpus nouns unless `corpus_words` is False."""
        from karukan_engine.lm.bundled import LoadedNgram, shared_ngram

        chars, words = LoadedNgram(shared_ngram()), LoadedWordScorer(dictionary)
        chars.handle.settle()
        words.handle.settle()
        return cls(dictionary, None, None, lm=chars, word_lm=words, word_weights=word_weights,
                   corpus_words=CorpusWordSource.load(dictionary) if corpus_words else None)

    def prepare_in_background(self) -> threading.Thread:
        """Build what a key would otherwise build on first use (the engine: the key after a
        commit, the first with a left context, waited 50-110 ms for them): the left-context
        index and the dictionary's bunsetsu-boundary table."""
        thread = threading.Thread(target=self._prepare, name="karukan-lattice-prepare", daemon=True)
        thread.start()
        self.preparation = thread
        return thread

    def _prepare(self) -> None:
        self.context.prepare()
        _ = self.dictionary.segmenter

    def clear_cache(self) -> None:
        """Forget the last analysis (benchmarks; the cache is otherwise keyed safely)."""
        with self._lock:
            self._cache.clear()
            self._segment_cache.clear()

    def data_version(self) -> tuple[int, int]:
        """(user dictionary, learning) versions; the user dictionary is re-read when its file
        changed."""
        return self._versions()

    # -- analysis ------------------------------------------------------------------------------
    def _versions(self) -> tuple[int, int]:
        if self.user_dictionary is not None:
            self.user_dictionary.reload_if_changed()
        return (self.user_dictionary.version if self.user_dictionary else 0,
                self.learning.version if self.learning else 0)

    def _analyse(self, request: ConversionRequest) -> _Analysis:
        cuts = fixed_cuts(len(request.reading), tuple(request.fixed_lengths))
        start = self.context.left_neighbours(request.left_context) if self.use_context else START
        # the learned choice after a context depends on the context's last characters
        words = self.word_lm() if self.word_lm is not None and self.word_weights.weight > 0 else None
        # beside the word n-gram the character n-gram has its jointly fitted weight
        lm_weights = self.lm_weights if words is None else replace(self.lm_weights, weight=self.word_weights.char_weight)
        scorer = self.lm() if self.lm is not None and lm_weights.weight > 0 else None
        if words is not None and scorer is None and self.lm is not None and lm_weights.weight > 0:
            # the char n-gram still loading: the word n-gram's weights were fitted beside it,
            # alone they favour odd paths (アアア for あああ), so the dictionary judges alone
            words, lm_weights = None, self.lm_weights
        lm_context = request.left_context[-lm_weights.context_chars:] if scorer is not None else None
        word_context = request.left_context[-self._word_context_chars(words):] if words is not None else None
        # everything but the reading: an analysis with the same rest is the base of a longer reading's
        rest = (tuple(cuts), start, context_key(request.left_context), self._versions(), lm_context, word_context,
                lm_weights, self.word_weights)
        key = (request.reading, *rest)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                return found
            base = self._base_of(request.reading, rest) if self.incremental else None
        reading, context = request.reading, request.left_context
        lattice = self.builder.extend(base.lattice, reading) if base is not None else None
        if lattice is None:
            base = None
            lattice = self.builder.build(reading, cuts)
        terms = (search_terms(words, lattice, 0, len(reading), context, self.word_weights,
                              base.terms if base is not None else None) if words is not None else None)
        space = SearchSpace(lattice, self.dictionary, 0, len(reading), bos_choices=start,
                            base=base.space if base is not None else None,
                            **(terms.space_args() if terms is not None else {}))
        ranked = ranked_paths(lattice, space, scorer, context, lm_weights,
                              path_rescorer(words, lattice, context, self.word_weights),
                              self.word_weights.open_start if words is not None and open_start(context, self.word_weights)
                              else 0.0)
        plain = None
        if words is not None and len(ranked) > 1:
            plain = SearchSpace(lattice, self.dictionary, 0, len(reading), bos_choices=start,
                                base=base.plain if base is not None else None)
            surface, length = _first_path(lattice, plain)
            ranked = keep_dictionary_choice(ranked, surface, dictionary_margin(self.word_weights, context, length))
        analysis = _Analysis(lattice, space, cuts, ranked, terms, plain)
        with self._lock:
            self._cache.put(key, analysis)
        return analysis

    def _word_context_chars(self, words: WordScorer) -> int:
        """How much left context the word models read: the topic vectors read further back."""
        return TOPIC_CONTEXT_CHARS if words.topics is not None and self.word_weights.topic > 0 else MAX_CONTEXT_WORD

    def _base_of(self, reading: str, rest: tuple) -> _Analysis | None:
        """The cached analysis of the longest reading `reading` continues, with the same rest of
        the key (the previous key's, while typing), or None."""
        best = None
        for key in self._cache:
            if key[1:] == rest and len(key[0]) < len(reading) and reading.startswith(key[0]):
                if best is None or len(key[0]) > len(best[0]):
                    best = key
        return self._cache.peek(best) if best is not None else None

    # -- Converter protocol --------------------------------------------------------------------
    def live(self, request: ConversionRequest) -> str:
        if not request.reading:
            return ""
        analysis = self._analyse(request)
        text = self._live_text(request, analysis)
        lattice = analysis.lattice
        path_words = [(lattice.node_reading(n), lattice.surface(n)) for n in analysis.path]
        words = path_words if text == "".join(s for _, s in path_words) else [(request.reading, text)]
        # no digits the user did not type, no stand-in for a lone kana (live_spelling.py)
        others = ([(lattice.node_reading(n), lattice.surface(n)) for n in path] for _, path in self._paths(analysis))
        return fitting_text(request.reading, words, others)

    @staticmethod
    def _paths(analysis: _Analysis):
        """The whole reading's paths: the language model's order first, then the A* search's."""
        judged = ((0, list(p.nodes)) for p in analysis.ranked)
        return chain(judged, analysis.space.paths(MAX_EXPANSIONS))

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        if not request.reading or n <= 0:
            return []
        analysis = self._analyse(request)
        found = []
        seen: set[str] = set()
        top = self._live_text(request, analysis)
        if top != "".join(analysis.lattice.surface(node) for node in analysis.path):
            # a segment's last learned choice replaced what the path spelled: it leads here too
            found.append(Candidate(top, "", Source.LEARNING))
            seen.add(top)
        for _, path in self._paths(analysis):
            surface = "".join(analysis.lattice.surface(node) for node in path)
            if surface not in seen:
                seen.add(surface)
                found.append(Candidate(surface, "", _source_of(analysis.lattice, path)))
                if len(found) >= n:
                    break
        tail = script_variants(request.reading) if len(request.reading) <= 40 else []
        return unique_surfaces(found, tail, limit=n)

    def convert(self, request: ConversionRequest) -> list[Segment]:
        if not request.reading:
            return []
        analysis = self._analyse(request)
        if analysis.segments is None:
            analysis.segments = self._segments(request, analysis)
        return list(analysis.segments)

    def _live_text(self, request: ConversionRequest, analysis: _Analysis) -> str:
        if self.learning is None or not len(self.learning):
            # nothing learned: the path's text (no segmentation needed, so live conversion never
            # unpacks the segmenter table)
            return "".join(analysis.lattice.surface(node) for node in analysis.path)
        return "".join(seg[2].surface for seg in self._best(request, analysis))

    def _best(self, request: ConversionRequest, analysis: _Analysis) -> list[tuple[int, int, Candidate, tuple, int]]:
        """The segments of the best path: (start, end, first candidate, left neighbours, right
        neighbour's lid) each.

        Segments follow the segmenter (and the fixed lengths) over the path's words, a learned
        phrase counting as the dictionary words it is made of (so a phrase learned from live
        conversion still converts into its bunsetsu). A segment's first candidate is what the
        path spells there, unless the user's last choice for exactly that reading was something
        else: then the last choice leads, as in Mozc (the learned nodes' costs favour it, but the
        connections to its neighbours can still tip the path to an older choice). The last
        choice after the text left of the segment (the request's left context, then the
        segments before it) comes before the per-reading one."""
        if analysis.best is not None:
            return analysis.best
        reading = request.reading
        lattice, space = analysis.lattice, analysis.space
        pieces = []   # (start, end, lid, rid, surface, source)
        phrase = (self.learning.chosen_after(reading, request.left_context)
                  if self.learning is not None and self._learned is not None and not analysis.cuts else None)
        if phrase is not None:
            # this whole reading was chosen after this same context before: that choice, as the
            # dictionary words that spell it, whatever the path (whose learned nodes know no context)
            pieces = [(a, b, lid, rid, surface, Source.LEARNING)
                      for a, b, lid, rid, surface in self._learned.words(reading, phrase)]
        else:
            for x in analysis.path:
                start, end, source = int(space.start[x]), int(space.end[x]), lattice.source(x)
                words = (self._learned.words(reading[start:end], lattice.surface(x))
                         if source == Source.LEARNING and self._learned is not None else ())
                if len(words) > 1:
                    pieces += [(start + a, start + b, lid, rid, surface, source) for a, b, lid, rid, surface in words]
                else:
                    pieces.append((start, end, int(space.lid[x]), int(space.rid[x]), lattice.surface(x), source))
        spans = segment_spans([p[0] for p in pieces], [p[1] for p in pieces], [p[2] for p in pieces],
                              [p[3] for p in pieces], self.dictionary.segmenter, len(reading), analysis.cuts)
        result = []
        left_text = request.left_context
        for lo, hi in spans:
            inner = [p for p in pieces if lo <= p[0] and p[1] <= hi]
            best = Candidate("".join(p[4] for p in inner), "", _first_source(p[5] for p in inner))
            learned = self.learning.lookup(reading[lo:hi], left_text) if self.learning is not None and phrase is None else []
            if learned and learned[0] != best.surface:
                best = Candidate(learned[0], "", Source.LEARNING)
            left_text += best.surface
            before = [p for p in pieces if p[1] == lo]
            after = [p for p in pieces if p[0] == hi]
            left = ((before[-1][3], 0),) if before else space.bos_choices
            result.append((lo, hi, best, left, after[0][2] if after else 0))
        analysis.best = result
        return result

    def _segments(self, request: ConversionRequest, analysis: _Analysis) -> list[Segment]:
        reading, lattice = request.reading, analysis.lattice
        versions = self._versions()
        segments = []
        for lo, hi, best, left, eos_lid in self._best(request, analysis):
            # a list made before the language model loaded is not reused after
            key = (reading[lo:hi], left, eos_lid, best, versions, self._segment_lm() is None)
            with self._lock:
                candidates = self._segment_cache.get(key)
                if candidates is None:
                    candidates = LazyCandidates(
                        best, partial(self._segment_candidates, lattice, lo, hi, left, eos_lid, best))
                    self._segment_cache.put(key, candidates)
            segments.append(Segment(reading[lo:hi], candidates))
        return segments

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        """Learn in memory; the store writes its file in the background (never on this key).
        Each segment is learned after its left context: the text before the commit, then the
        segments committed before it."""
        if self.learning is None:
            return
        pairs = [(reading, surface) for reading, surface in pairs if reading and surface]
        left = left_context
        for reading, surface in pairs:
            self.learning.record(reading, surface, left)
            left += surface
        whole = "".join(reading for reading, _ in pairs)
        if len(pairs) > 1 and self.learning.lookup(whole):
            # The whole reading was learned as one phrase (a live conversion committed as it
            # stood): the phrase follows the last choice too, or its older spelling would compete.
            self.learning.record(whole, "".join(surface for _, surface in pairs), left_context)

    def save(self) -> bool:
        """Write pending learning now. True when everything is on disk."""
        return self.learning.flush() if self.learning is not None else True

    def close(self) -> None:
        """Stop background saving and write what is pending (shutdown)."""
        if self.learning is not None:
            self.learning.close()

    # -- segment candidates --------------------------------------------------------------------
    def _segment_lm(self):
        """The word n-gram itself, or None (none, not in use, or still loading)."""
        scorer = self.word_lm() if self.word_lm is not None and self.word_weights.weight > 0 else None
        return scorer.model if scorer is not None else None

    def _segment_candidates(self, lattice: Lattice, lo: int, hi: int, left: tuple[tuple[int, int], ...],
                            eos_lid: int, best: Candidate) -> list[Candidate]:
        """Runs when a segment's list is first read, in whichever thread reads it (the lattice is
        only read, apart from its surface cache, a dict)."""
        reading = lattice.reading[lo:hi]
        space = SearchSpace(lattice, self.dictionary, lo, hi, eos_lid=eos_lid, inside_segment=True,
                            bos_choices=left)
        if not space.reachable:   # no single-bunsetsu spelling: let words of any kind join
            space = SearchSpace(lattice, self.dictionary, lo, hi, eos_lid=eos_lid, bos_choices=left)
        kept: list[Spelling] = []
        sources: dict[str, Source] = {}
        words: dict[str, list[tuple[str, str]]] = {}
        plausible = SegmentFilter()
        for cost, nodes in space.paths(SEGMENT_EXPANSIONS):
            surface = "".join(lattice.surface(x) for x in nodes)
            if surface in sources:
                continue
            source = sources[surface] = _source_of(lattice, nodes)
            words[surface] = [(lattice.surface(x), to_hiragana(lattice.node_reading(x))) for x in nodes]
            structure = sum(self.dictionary.connection(int(lattice.rid[a]), int(lattice.lid[b]))
                            for a, b in zip(nodes, nodes[1:]))
            # after the first word, a word written with kanji is another content word (particles,
            # auxiliaries and endings are kana)
            content = 1 + sum(has_kanji(lattice.surface(x)) for x in nodes[1:])
            spelling = Spelling(surface, int(cost), structure, len(nodes), source != Source.DICTIONARY,
                                content, len(nodes) > 1 and is_one_kanji(lattice.surface(nodes[0])))
            # the user's own spellings are always kept and never the filter's reference
            if spelling.personal or plausible.keep(spelling):
                kept.append(spelling)
                if len(kept) >= SEGMENT_ALTERNATIVES:
                    break
        ordered = order_spellings(kept)
        top_cost = reference_cost(kept)
        likely = [Candidate(s.surface, "", sources[s.surface]) for s in ordered if shape_of(s, top_cost) < Shape.COMPOSED]
        glued = [s for s in ordered if shape_of(s, top_cost) == Shape.COMPOSED]
        # compositions of words the word n-gram never saw side by side are not listed (segment_order.py)
        composed, _ = split_compositions([Candidate(s.surface, "", sources[s.surface]) for s in glued],
                                         [words[s.surface] for s in glued], self._segment_lm())
        learned = [Candidate(s, "", Source.LEARNING) for s in self.learning.lookup(reading)] if self.learning else []
        forms = script_variants(reading)
        kana = [c for c in forms if c.annotation in (Form.HIRAGANA.label, Form.KATAKANA.label)]
        other_forms = [c for c in forms if c not in kana]
        listed = unique_surfaces([best], learned, likely, number_variants(best.surface), kana, composed,
                                 other_forms, symbol_variants(reading, self.symbols))
        for form, place in zip(kana, (HIRAGANA_BY, KATAKANA_BY)):
            shown = next((c for c in listed if c.surface == form.surface), None)
            listed = bring_forward(listed, shown, place)
        return listed


def _first_path(lattice: Lattice, space: SearchSpace) -> tuple[str, int]:
    """The surface a search puts first and its number of words (the dictionary's own choice,
    for a search without the language models' terms); ("", 0) when nothing reaches the end."""
    for _, nodes in space.paths(MAX_EXPANSIONS, distinct=True):
        return "".join(lattice.surface(node) for node in nodes), len(nodes)
    return "", 0


def _source_of(lattice: Lattice, nodes: Sequence[int]) -> Source:
    return _first_source(lattice.source(x) for x in nodes)


def _first_source(sources) -> Source:
    sources = set(sources)
    return next((s for s in (Source.LEARNING, Source.USER) if s in sources), Source.DICTIONARY)
