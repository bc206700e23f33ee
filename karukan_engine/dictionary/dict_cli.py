"""`karukan dict add|remove|list|import|export`: the user dictionary (Mozc TSV) from the shell."""

from __future__ import annotations

import argparse
import sys

from karukan_engine.dictionary.user_dictionary import DEFAULT_POS, UserDictionary, UserDictionaryError


def _pos_names() -> set[str] | None:
    """The user POS names the compiled dictionary knows (None if it is not built)."""
    import json

    from karukan_engine.dictionary.system import DEFAULT_DIR

    try:
        return set(json.loads((DEFAULT_DIR / "meta.json").read_text(encoding="utf-8"))["user_pos"])
    except (OSError, ValueError, KeyError, TypeError):   # missing or damaged: not built
        return None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("dict", help="edit the user dictionary (Mozc TSV format)")
    actions = parser.add_subparsers(dest="dict_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a word")
    add.add_argument("reading")
    add.add_argument("word")
    add.add_argument("--pos", default=DEFAULT_POS, help=f"Mozc user POS name (default {DEFAULT_POS})")
    add.add_argument("--comment", default="")
    remove = actions.add_parser("remove", help="remove a word")
    remove.add_argument("reading")
    remove.add_argument("word")
    actions.add_parser("list", help="print the dictionary as TSV")
    imp = actions.add_parser("import", help="add the words of a Mozc TSV file")
    imp.add_argument("file")
    exp = actions.add_parser("export", help="write the dictionary as Mozc TSV")
    exp.add_argument("file", nargs="?", help="output file (default: stdout)")
    actions.add_parser("pos", help="list the part-of-speech names")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UserDictionaryError as exc:   # e.g. the file on disk could not be read: never replaced
        print(f"karukan: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from karukan_engine.core.errors import UsageError

    names = _pos_names()
    if args.dict_action == "pos":
        print("\n".join(sorted(names or ())))
        return 0
    dictionary = UserDictionary(pos_names=names)
    if args.dict_action == "add":
        try:
            added = dictionary.add(args.reading, args.word, args.pos, args.comment)
        except UserDictionaryError as exc:
            raise UsageError(str(exc)) from exc
        if added:
            dictionary.save()   # UserDictionaryError if the file could not be read
        else:
            print("karukan: already in the user dictionary", file=sys.stderr)
        return 0
    if args.dict_action == "remove":
        if not dictionary.remove(args.reading, args.word):
            print("karukan: no such word in the user dictionary", file=sys.stderr)
            return 1
        dictionary.save()
        return 0
    if args.dict_action == "list":
        dictionary.export_tsv(sys.stdout)
        return 0
    if args.dict_action == "import":
        with open(args.file, encoding="utf-8") as stream:
            added, problems = dictionary.import_tsv(stream)
        dictionary.save()
        for problem in problems:
            print(f"karukan: {args.file}: {problem}", file=sys.stderr)
        print(f"imported {added} words", file=sys.stderr)
        return 0
    if args.file:
        with open(args.file, "w", encoding="utf-8") as stream:
            dictionary.export_tsv(stream)
    else:
        dictionary.export_tsv(sys.stdout)
    return 0
