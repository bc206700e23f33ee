"""Type romaji into a Karukan session and commit the conversion: the library as a frontend uses it.

    python examples/type_keys.py                  # types "kyouhaiitenki", Space, Return
    python examples/type_keys.py watashi --model  # with the installed model, if there is one

A frontend feeds key presses (X11 keysyms) to a Session and draws each View it gets back: the
preedit while composing, the candidate page after Space, the committed text after Return.
"""

from __future__ import annotations

import argparse

from karukan_engine.conversion.factory import ConverterOptions, build_converter
from karukan_engine.session import Session, View

SPACE, RETURN = 0x20, 0xFF0D   # X11 keysyms; a letter's keysym is its code point


def show(label: str, view: View) -> None:
    line = f"{label:>8}: preedit {view.preedit_text!r}"
    if view.candidates is not None:
        line += "  candidates " + " ".join(item.text for item in view.candidates.items)
    if view.commit:
        line += f"  commit {view.commit!r}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("romaji", nargs="?", default="kyouhaiitenki")
    parser.add_argument("--model", action="store_true", help="use the installed model (slower start)")
    args = parser.parse_args()
    converter = build_converter(ConverterOptions(use_model=args.model))
    try:
        session = Session(converter)
        for letter in args.romaji:
            view = session.process_key(ord(letter))
        show("typed", view)
        show("Space", session.process_key(SPACE))
        show("Return", session.process_key(RETURN))
    finally:
        converter.close()   # learning reaches the disk


if __name__ == "__main__":
    main()
