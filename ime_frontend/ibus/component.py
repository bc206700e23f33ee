"""The IBus component that describes our engine: as XML for ibus-daemon, or as a D-Bus value."""

from __future__ import annotations

from xml.sax.saxutils import escape

from ime_frontend.ibus.gvariant import ComponentDesc, EngineDesc

COMPONENT_NAME = "org.freedesktop.IBus.Karukan"
ENGINE_NAME = "karukan"
VERSION = "0.1.0"
LICENSE = "MIT OR Apache-2.0"
AUTHOR = "Karukan developers"
HOMEPAGE = ""


def engine_desc(icon: str = "") -> EngineDesc:
    return EngineDesc(
        name=ENGINE_NAME, longname="Karukan", description="Karukan Japanese input method",
        language="ja", license=LICENSE, author=AUTHOR, icon=icon, layout="default", rank=0,
        symbol="あ", version=VERSION, textdomain="karukan",
    )


def component_desc(exec_line: str, icon: str = "") -> ComponentDesc:
    return ComponentDesc(
        name=COMPONENT_NAME, description="Karukan Japanese input method", version=VERSION,
        license=LICENSE, author=AUTHOR, homepage=HOMEPAGE, exec=exec_line, textdomain="karukan",
        engines=(engine_desc(icon),),
    )


def component_xml(exec_line: str, icon: str = "") -> str:
    comp = component_desc(exec_line, icon)
    engine = comp.engines[0]

    def tag(name: str, value: object, indent: str) -> str:
        return f"{indent}<{name}>{escape(str(value))}</{name}>\n"

    head = "".join(tag(n, v, "  ") for n, v in (
        ("name", comp.name), ("description", comp.description), ("exec", comp.exec),
        ("version", comp.version), ("author", comp.author), ("license", comp.license),
        ("homepage", comp.homepage), ("textdomain", comp.textdomain),
    ))
    body = "".join(tag(n, v, "      ") for n, v in (
        ("name", engine.name), ("longname", engine.longname), ("description", engine.description),
        ("language", engine.language), ("license", engine.license), ("author", engine.author),
        ("icon", engine.icon), ("layout", engine.layout), ("rank", engine.rank),
        ("symbol", engine.symbol), ("version", engine.version), ("textdomain", engine.textdomain),
    ))
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<component>\n{head}'
            f"  <engines>\n    <engine>\n{body}    </engine>\n  </engines>\n</component>\n")
