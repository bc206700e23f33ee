"""What a model sees for a reading: the exact prompt text and its tokens (`karukan model prompt`)."""

from __future__ import annotations

import unicodedata

# Shown escaped in the table: marks, U+3000 and anything else that is invisible or ambiguous.
_VISIBLE_CATEGORIES = ("L", "M", "N", "P", "S")


def escaped(text: str) -> str:
    """text with every character that is not plainly visible written as \\uXXXX."""
    out = []
    for ch in text:
        visible = unicodedata.category(ch)[0] in _VISIBLE_CATEGORIES and ch != "\\"
        out.append(ch if visible or ch == " " else f"\\u{ord(ch):04X}")
    return "".join(out)


def written_text(raw: bytes) -> str:
    """What a token writes: its text, or <XX> per byte where it is not whole UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<{b:02X}>" for b in raw)


def prompt_view(model, reading: str, context: str = "", label: str = "") -> dict:
    """The prompt the model gets (fitted to its context), as plain data."""
    prompt, ids = model.fit_prompt(reading, context)
    tokenizer = model.tokenizer
    family = model.family
    return {
        "model": label or model.name,
        "family": family.name,
        "context_chars": family.context_chars,
        "max_new_tokens": family.max_new_tokens,
        "context": prompt.context,
        "reading": prompt.reading,
        "text": prompt.text,
        "ids": list(ids),
        "tokens": [{"id": i, "string": tokenizer.token_string(i), "text": written_text(tokenizer.token_bytes(i))}
                   for i in ids],
    }


def render_view(view: dict) -> str:
    lines = [
        f"model: {view['model']}  (prompt {view['family']}, last {view['context_chars']} context characters, "
        f"at most {view['max_new_tokens']} output tokens)",
        f"text: {escaped(view['text'])}",
        f"ids: {' '.join(str(i) for i in view['ids'])}",
        f"{'#':>3}  {'id':>6}  {'token':<12}  writes",
    ]
    for n, token in enumerate(view["tokens"]):
        lines.append(f"{n:>3}  {token['id']:>6}  {escaped(token['string']):<12}  {escaped(token['text'])}")
    return "\n".join(lines)
