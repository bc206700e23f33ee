"""`python -m karukan_engine.training STAGE`: run one stage of the model pipeline, or all of them.

Stages (each caches its output under the work directory and is skipped when it exists, unless
--force): corpus, readings, pairs, train, export, ngram (the character n-gram beside the
model), eval; `all` runs them in order. Six more run only when named: `wordlm` (the word
trigram the lattice search scores with), `topics` (content words' company, judging the paths
beside it; after `wordlm`), `nouns` (the corpus's frequent nouns the dictionary lacks),
`devsets` (the held-out dev sets), `pools` and `rerank` (a fine-tune on the choice the engine
asks of the model; docs/training.md "Rerank fine-tune"); `export --from rerank` exports its
weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from karukan_engine.training.paths import PACKAGE_MODEL_DIR, stage_dir
from karukan_engine.training.sources import default_corpus_dir

MODEL_NAME = "karukan-bundled"
MODEL_LICENCE = "CC-BY-SA-4.0"
MODEL_DESCRIPTION = ("Character-level kana-kanji model (jinen/zenz-v3 prompt) trained by Karukan on "
                     "RealPersonaChat, Tatoeba, Japanese Wikipedia (JGLUE, Kyoto Wikipedia Annotated "
                     "Corpus) and Aozora Bunko; CC BY-SA 4.0; see docs/model-card.md")
STAGES = ("corpus", "readings", "pairs", "train", "export", "ngram", "eval")
EXTRA_STAGES = ("pools", "rerank", "devsets", "wordlm", "topics", "nouns")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m karukan_engine.training", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=(*STAGES, *EXTRA_STAGES, "all"))
    parser.add_argument("--force", action="store_true", help="rebuild the stage even if cached")
    parser.add_argument("--corpus", type=Path, default=default_corpus_dir(),
                        help="the general-domain corpus directory (default: $KARUKAN_CORPUS, or "
                             "../shared/corpus beside the repository when it exists)")
    parser.add_argument("--processes", type=int, default=2, help="annotation processes")
    parser.add_argument("--minutes", type=float, default=85.0, help="training budget (step time)")
    parser.add_argument("--n-embd", type=int, default=160)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--context-weight", type=float, default=0.5,
                        help="loss weight of left-context tokens (0: surface only)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--tokens-per-batch", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="torch device (cuda for a GPU run)")
    parser.add_argument("--quant", default="q8_0", help="f32, f16, q8_0, q5_0 or q4_0")
    parser.add_argument("--model-dir", type=Path, default=PACKAGE_MODEL_DIR,
                        help="where export writes <name>.gguf + tokenizer.json (default: package data)")
    parser.add_argument("--pool-split", choices=("dev", "train"), default="dev",
                        help="pairs the rerank pools come from (dev: unseen by training)")
    parser.add_argument("--pool-pairs", type=int, default=20000,
                        help="training pairs sampled for the rerank pools (the stage resumes where an "
                             "interrupted run stopped; rerank uses the pools written so far)")
    parser.add_argument("--rerank-minutes", type=float, default=40.0, help="rerank fine-tune budget")
    parser.add_argument("--rerank-epochs", type=int, default=1, help="passes over the pools")
    parser.add_argument("--from", dest="weights_from", choices=("train", "rerank"), default="train",
                        help="whose weights export and eval read")
    parser.add_argument("--ngram-min-count", type=int, default=2,
                        help="n-grams (order >= 2) seen fewer times are not kept in the n-gram file")
    parser.add_argument("--eval-limit", type=int, default=500, help="items per evaluation set")
    return parser


def stage_weights(stage: str) -> Path:
    """The weights `export` and `eval` read: train.py's, or the rerank fine-tune's."""
    return stage_dir(stage) / "model.pt"


def run_stage(stage: str, args: argparse.Namespace) -> None:
    if stage == "corpus":
        from karukan_engine.training.corpus import build_corpus

        build_corpus(args.corpus, force=args.force)
    elif stage == "readings":
        from karukan_engine.training.readings import annotate_all

        annotate_all(args.corpus, processes=args.processes, force=args.force)
    elif stage == "devsets":
        from karukan_engine.training.devsets import build_devsets

        build_devsets(args.corpus, processes=args.processes, force=args.force)
    elif stage == "pairs":
        from karukan_engine.training.pairs import build_pairs

        build_pairs(force=args.force)
    elif stage == "train":
        from karukan_engine.training.train import TrainOptions, train

        if args.force and (stage_dir("train") / "checkpoint.pt").exists():
            (stage_dir("train") / "checkpoint.pt").unlink()
        train(TrainOptions(minutes=args.minutes, n_embd=args.n_embd, n_layer=args.n_layer,
                           n_head=args.n_head, lr=args.lr, threads=args.threads, device=args.device,
                           tokens_per_batch=args.tokens_per_batch, vocab_size=args.vocab_size,
                           context_weight=args.context_weight))
    elif stage == "pools":
        from karukan_engine.training.pools import build_pools

        out = stage_dir("pools") / "pools.jsonl"
        if args.force:
            for stale in (out, out.with_suffix(".done")):
                stale.unlink(missing_ok=True)
        # The pools are what the *trained* model proposes and how the engine ranks it.
        from karukan_engine.training.export import export_model_dir

        scratch = export_model_dir(stage_dir("train") / "model.pt", stage_dir("pools") / "model",
                                   MODEL_NAME, args.quant).parent
        build_pools(args.pool_pairs, threads=args.threads, model_dir=scratch, split=args.pool_split)
    elif stage == "rerank":
        from karukan_engine.training.rerank_train import RerankOptions, rerank_train

        rerank_train(RerankOptions(minutes=args.rerank_minutes, epochs=args.rerank_epochs, threads=args.threads))
    elif stage == "export":
        from karukan_engine.training.export import export_model_dir

        export_model_dir(stage_weights(args.weights_from), args.model_dir, MODEL_NAME, args.quant, MODEL_LICENCE, MODEL_DESCRIPTION)
    elif stage == "ngram":
        from karukan_engine.training.ngram import build_ngram

        build_ngram(args.corpus, args.model_dir, min_count=args.ngram_min_count, force=args.force)
    elif stage == "wordlm":
        from karukan_engine.training.wordlm import build_wordlm

        build_wordlm(args.corpus, args.model_dir, processes=args.processes, force=args.force)
    elif stage == "topics":
        from karukan_engine.training.topics import build_topics

        build_topics(args.corpus, args.model_dir, processes=args.processes, force=args.force)
    elif stage == "nouns":
        from karukan_engine.training.corpus_nouns import build_nouns

        build_nouns(args.corpus, processes=args.processes, force=args.force)
    elif stage == "eval":
        from karukan_engine.training.evaluate import evaluate

        report = evaluate(args.model_dir, stage_weights(args.weights_from), limit=args.eval_limit,
                          threads=args.threads)
        print(json.dumps(report, ensure_ascii=False, indent=1))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for stage in STAGES if args.stage == "all" else (args.stage,):
        print(f"== {stage}", file=sys.stderr)
        run_stage(stage, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
