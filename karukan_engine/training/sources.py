"""The Debian documentation packages the corpus is cut from, with their licences and splits."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    name: str
    packages: tuple[str, ...]
    # Globs relative to the extracted package root; only Japanese files are matched.
    globs: tuple[str, ...]
    licence: str
    # "train" sources feed training (a hashed 2 % slice becomes dev); "heldout" never trains.
    split: str = "train"


SOURCES: tuple[Source, ...] = (
    Source("manpages-ja", ("manpages-ja",), ("usr/share/man/ja/**/*.gz",),
           "as the original man pages (GPL/BSD/verbatim), translations by the JM Project"),
    Source("manpages-ja-dev", ("manpages-ja-dev",), ("usr/share/man/ja/**/*.gz",),
           "as the original man pages (GPL/BSD/verbatim), translations by the JM Project"),
    Source("libreoffice-help-ja", ("libreoffice-help-ja",), ("usr/share/libreoffice/help/ja/**/*.html",),
           "MPL-2.0"),
    Source("lilypond-doc-html-ja", ("lilypond-doc-html-ja",), ("usr/share/doc/lilypond/html/**/*.ja.html",),
           "GFDL-1.3+"),
    Source("debian-reference-ja", ("debian-reference-ja",), ("usr/share/debian-reference/*.ja.html",),
           "GPL-2+"),
    Source("debian-faq-ja", ("debian-faq-ja",), ("usr/share/doc/debian/FAQ/**/*.html",
                                                  "usr/share/doc/debian-faq-ja/**/*.html"),
           "SPI permission notice (verbatim and modified copies under the same notice)"),
    Source("maint-guide-ja", ("maint-guide-ja",), ("usr/share/doc/maint-guide-ja/**/*.html",
                                                    "usr/share/doc/maint-guide/**/*.ja.html"),
           "MIT or GPL-2+ (maint-guide)"),
    Source("developers-reference-ja", ("developers-reference-ja",),
           ("usr/share/developers-reference/ja/*.html",), "GPL-2"),
    Source("ddskk", ("ddskk",), ("usr/share/info/skk.info*.gz", "usr/share/doc/ddskk/*.rst.gz"),
           "GPL-2+ / GPL-3+ (Daredevil SKK manual)"),
    # Held out for evaluation: never used for training, tuning or vocabulary choice.
    Source("gimp-help-ja", ("gimp-help-ja",), ("usr/share/gimp/2.0/help/ja/**/*.html",),
           "GFDL-1.2+ (no invariant sections)", split="heldout"),
    Source("gnome-user-docs-ja", ("gnome-user-docs",), ("usr/share/help/ja/**/*.page",),
           "CC-BY-SA-3.0", split="heldout"),
)


def by_name(name: str) -> Source:
    for source in SOURCES:
        if source.name == name:
            return source
    raise KeyError(name)
