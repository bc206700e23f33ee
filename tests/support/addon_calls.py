"""What the fcitx5 addon asks of the engine service, read from its C++ source (test support).

The addon builds each call with a helper that wraps `createMethodCall(kService, kPath,
kInterface, method)`, appends the arguments with `msg << a << b`, and reads the reply with
`reply >> x` (directly, or in a function the message is handed to). This reader follows those
patterns through the file: method names given as literals, as a local chosen among literals, or
as a parameter (resolved at every caller); argument types from casts, string constructions and
declarations; type aliases such as WireView expanded to D-Bus signatures. Anything it cannot
follow raises AddonReadError, so a new call site cannot slip past the check unread.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<char>'(?:\\.|[^'\\])*')
  | (?P<name>[A-Za-z_]\w*)
  | (?P<number>\d[\w.']*)
  | (?P<op><<|>>|->|::|&&|\|\||[-+*/%=<>!&|^~?:;,.(){}\[\]])
  | (?P<space>\s+)
""", re.S | re.X)

_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "static_cast", "decltype"}
_TRAILERS = {"const", "override", "final", "noexcept"}
_BASIC = {
    "bool": "b", "uint8_t": "y", "int16_t": "n", "uint16_t": "q", "int32_t": "i", "int": "i",
    "uint32_t": "u", "int64_t": "x", "uint64_t": "t", "double": "d", "std::string": "s",
}
_STRUCTS = {"DBusStruct", "dbus::DBusStruct", "fcitx::dbus::DBusStruct"}
_DICT_ENTRIES = {"DictEntry", "dbus::DictEntry", "fcitx::dbus::DictEntry"}
_EXPR_ENDS = {";", ",", "&&", "||", "?", ":"}


def read_addon(src_dir) -> str:
    """The addon's source as one text: its headers first (the class and its members), then its
    .cpp files, which define the members out of line."""
    from pathlib import Path

    files = sorted(Path(src_dir).glob("*.h")) + sorted(Path(src_dir).glob("*.cpp"))
    if not files:
        raise AddonReadError(f"no addon source in {src_dir}")
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


class AddonReadError(Exception):
    """The source holds a call this reader cannot follow: teach it, rather than skip the call."""


@dataclass(frozen=True)
class AddonCall:
    member: str
    in_sig: str
    out_sig: str | None     # None: sent without reading a reply (fire and forget)
    function: str           # where the call is built


@dataclass(frozen=True)
class _Function:
    name: str
    returns: tuple[str, ...]
    params: tuple[tuple[tuple[str, ...], str | None], ...]   # (type tokens, name)
    header: int      # index of the name token
    start: int       # index of "{"
    end: int         # index of the matching "}"


class AddonSource:
    def __init__(self, source: str) -> None:
        text = "\n".join("" if line.lstrip().startswith("#") else line for line in source.splitlines())
        self._classes = set(re.findall(r"\b(?:class|struct)\s+(\w+)", text))
        self.tokens: list[str] = []
        at = 0
        for m in _TOKEN.finditer(text):
            if m.start() != at:
                raise AddonReadError(f"cannot read the source at {text[at:at + 20]!r}")
            at = m.end()
            if m.lastgroup not in ("comment", "space"):
                self.tokens.append(m.group())
        if at != len(text):
            raise AddonReadError(f"cannot read the source at {text[at:at + 20]!r}")
        self.functions = self._functions()
        self.aliases = self._aliases()

    # --- structure ------------------------------------------------------------------------------

    def _match(self, i: int) -> int:
        """Index of the bracket closing the one at i."""
        pairs = {"(": ")", "{": "}", "[": "]"}
        opener, closer, depth = self.tokens[i], pairs[self.tokens[i]], 0
        for j in range(i, len(self.tokens)):
            depth += (self.tokens[j] == opener) - (self.tokens[j] == closer)
            if depth == 0:
                return j
        raise AddonReadError(f"unbalanced {opener}")

    def _functions(self) -> list[_Function]:
        found, t, i = [], self.tokens, 0
        while i < len(t):
            if t[i] == "(" and i > 0 and _is_name(t[i - 1]) and t[i - 1] not in _KEYWORDS:
                close = self._match(i)
                j = close + 1
                while j < len(t) and t[j] in _TRAILERS:
                    j += 1
                if j < len(t) and t[j] == "{":
                    end = self._match(j)
                    found.append(_Function(t[i - 1], self._type_before(i - 1), self._params(i + 1, close),
                                           i - 1, j, end))
                    i = j + 1    # member functions do not nest, but keep reading inside for safety
                    continue
            i += 1
        return found

    def _params(self, start: int, end: int) -> tuple[tuple[tuple[str, ...], str | None], ...]:
        params = []
        for part in _split_top(self.tokens[start:end], {","}):
            if "=" in part:
                part = part[:part.index("=")]
            if not part:
                continue
            name = part[-1] if _is_name(part[-1]) and len(part) > 1 else None
            params.append((tuple(part[:-1] if name else part), name))
        return tuple(params)

    def _type_before(self, i: int) -> tuple[str, ...]:
        """The type tokens written just before index i (a declaration's or definition's type)."""
        t, j, depth = self.tokens, i - 1, 0
        while j >= 0:
            tok = t[j]
            if tok in (">", ">>"):
                depth += len(tok)
            elif tok == "<":
                depth -= 1
            elif depth == 0 and not (_is_name(tok) or tok in ("::", "&", "*")):
                break
            j -= 1
        found = [tok for tok in t[j + 1:i] if tok not in ("const", "&", "*", "static", "constexpr", "inline")]
        if len(found) >= 3 and found[-1] == "::" and found[-2] in self._classes:
            found = found[:-2]       # `Message KarukanEngine::call(`: a member defined out of line
        return tuple(found)

    def _aliases(self) -> dict[str, tuple[str, ...]]:
        t, aliases = self.tokens, {}
        for i, tok in enumerate(t):
            if tok == "using" and i + 2 < len(t) and t[i + 2] == "=":
                end = t.index(";", i)
                aliases[t[i + 1]] = tuple(t[i + 3:end])
        return aliases

    def function_at(self, i: int) -> _Function:
        for f in self.functions:
            if f.start <= i <= f.end:
                return f
        raise AddonReadError(f"token {self.tokens[i]!r} is outside any function")

    def constant(self, name: str) -> str:
        """The string value of `constexpr char NAME[] = "...";`."""
        t = self.tokens
        for i in range(len(t) - 4):
            if t[i] == name and t[i + 1:i + 4] == ["[", "]", "="] and t[i + 4].startswith('"'):
                return _literal(t[i + 4])
        raise AddonReadError(f"no string constant {name}")

    # --- types ----------------------------------------------------------------------------------

    def signature(self, type_tokens: tuple[str, ...]) -> str:
        tokens = [p for tok in type_tokens for p in ([">", ">"] if tok == ">>" else [tok])]
        sig, rest = self._parse_type(tokens)
        if rest:
            raise AddonReadError(f"cannot read the type {' '.join(type_tokens)}")
        return sig

    def _parse_type(self, tokens: list[str]) -> tuple[str, list[str]]:
        name, rest = [], list(tokens)
        while rest and rest[0] in ("const", "typename"):
            rest.pop(0)
        while rest and (_is_name(rest[0]) or rest[0] == "::"):
            name.append(rest.pop(0))
        qualified = "".join(name)
        args: list[str] = []
        if rest and rest[0] == "<":
            rest.pop(0)
            while True:
                sig, rest = self._parse_type(rest)
                args.append(sig)
                if not rest:
                    raise AddonReadError(f"unclosed template in {qualified}")
                if rest.pop(0) == ">":
                    break
        while rest and rest[0] in ("&", "*"):
            rest.pop(0)
        if qualified in _BASIC and not args:
            return _BASIC[qualified], rest
        if qualified in self.aliases and not args:
            return self.signature(self.aliases[qualified]), rest
        if qualified in _STRUCTS:
            return "(" + "".join(args) + ")", rest
        if qualified in _DICT_ENTRIES and len(args) == 2:
            return "{" + "".join(args) + "}", rest
        if qualified == "std::vector" and len(args) == 1:
            return "a" + args[0], rest
        raise AddonReadError(f"no D-Bus type for the C++ type {qualified or tokens!r}")

    def declared_type(self, name: str, f: _Function) -> tuple[str, ...]:
        """The type of `name` in function f: a parameter, a local, or else a class member."""
        for ptype, pname in f.params:
            if pname == name:
                return ptype
        local = self._declarations(name, f.start, f.end)
        if local:
            return local[0]
        return self.member_type(name)

    def member_type(self, name: str) -> tuple[str, ...]:
        """The type of the class member `name` (declared outside any function, once)."""
        members = set(self._declarations(name, 0, len(self.tokens), outside_functions=True))
        if len(members) != 1:
            raise AddonReadError(f"cannot tell the type of {name!r} ({len(members)} declarations)")
        return members.pop()

    def _declarations(self, name: str, start: int, end: int, outside_functions: bool = False) -> list[tuple[str, ...]]:
        t, found = self.tokens, []
        for i in range(max(start, 1), min(end, len(t) - 1)):
            if t[i] != name or t[i + 1] not in ("=", ";", "{") or not (_is_name(t[i - 1]) or t[i - 1] in ("&", "*", ">")):
                continue
            if outside_functions and any(f.start <= i <= f.end for f in self.functions):
                continue
            declared = self._type_before(i)
            if declared and declared != ("auto",) and declared[-1] not in ("return",):
                found.append(declared)
        return found

    def expression_sig(self, expr: list[str], f: _Function) -> str:
        if len(expr) == 1 and expr[0].startswith('"'):
            return "s"
        if expr[:2] == ["static_cast", "<"]:
            return self.signature(tuple(expr[2:expr.index(">")]))
        if expr[:3] == ["std", "::", "string"]:
            return "s"
        if len(expr) == 1 and _is_name(expr[0]):
            return self.signature(self.declared_type(expr[0], f))
        if len(expr) == 3 and expr[1] in ("->", ".") and _is_name(expr[2]):
            return self.signature(self.member_type(expr[2]))
        raise AddonReadError(f"cannot tell the D-Bus type of `{' '.join(expr)}` in {f.name}")

    # --- calls ----------------------------------------------------------------------------------

    def call_helpers(self) -> list[_Function]:
        """Functions that create a method call on the engine service's interface."""
        helpers = []
        for f in self.functions:
            body = self.tokens[f.start:f.end]
            if "createMethodCall" in body:
                i = body.index("createMethodCall")
                args = _split_top(body[i + 2:f.start + self._match(f.start + i + 1) - f.start], {","})
                if args[:3] == [["kService"], ["kPath"], ["kInterface"]]:
                    helpers.append(f)
        if not helpers:
            raise AddonReadError("no helper calls createMethodCall(kService, kPath, kInterface, ...)")
        return helpers

    def call_sites(self, fname: str) -> list[int]:
        """Indices of calls of fname (not its definition or declaration, not a method of another
        object): only inside function bodies, where a declaration cannot stand."""
        t, headers = self.tokens, {f.header for f in self.functions}
        return [i for i in range(1, len(t) - 1)
                if t[i] == fname and t[i + 1] == "(" and i not in headers and t[i - 1] not in (".", "->")
                and any(f.start < i < f.end for f in self.functions)]

    def argument(self, site: int, index: int) -> list[str]:
        args = _split_top(self.tokens[site + 2:self._match(site + 1)], {","})
        if index >= len(args):
            raise AddonReadError(f"call of {self.tokens[site]} has no argument {index}")
        return args[index]

    def names_of(self, expr: list[str], f: _Function) -> set[str]:
        """The method names an argument expression can hold."""
        if len(expr) == 1 and expr[0].startswith('"'):
            return {_literal(expr[0])}
        if len(expr) != 1 or not _is_name(expr[0]):
            raise AddonReadError(f"cannot follow the method name `{' '.join(expr)}` in {f.name}")
        name = expr[0]
        for index, (_ptype, pname) in enumerate(f.params):
            if pname == name:
                sites = self.call_sites(f.name)
                if not sites:
                    raise AddonReadError(f"{f.name} is never called")
                return set().union(*(self.names_of(self.argument(s, index), self.function_at(s)) for s in sites))
        t = self.tokens
        for i in range(f.start, f.end):
            if t[i] == name and t[i + 1] == "=":
                init = t[i + 2:t.index(";", i)]
                literals = {_literal(tok) for tok in init if tok.startswith('"')}
                if literals:
                    return literals
        raise AddonReadError(f"cannot follow the method name {name!r} in {f.name}")

    def reply_sig(self, msg: str, f: _Function, after: int) -> str | None:
        """The types read from the reply to message variable msg used in f after index after;
        None when the message is only sent."""
        t = self.tokens
        for i in range(after, f.end):
            if t[i] != msg:
                continue
            if t[i + 1:i + 4] == [".", "send", "("]:
                return None
            if t[i + 1:i + 3] == [".", "call"] and t[i - 1] == "=":
                return self._read_sig(t[i - 2], f, i)
            if t[i - 1] in ("(", ",") and t[i + 1] in (")", ","):
                open_paren = self._enclosing_paren(i)
                callee_name = t[open_paren - 1]
                callee = next((g for g in self.functions if g.name == callee_name), None)
                if callee is None:
                    raise AddonReadError(f"the message goes to {callee_name}, which this file does not define")
                if callee.returns[-1:] == ("Message",) and t[open_paren - 2] == "=":
                    return self._read_sig(t[open_paren - 3], f, i)     # reply = timedCall(msg)
                pname = callee.params[_arg_index(t, open_paren, i)][1]
                if pname is None:
                    raise AddonReadError(f"{callee.name} takes the message unnamed")
                return self.reply_sig(pname, callee, callee.start)
        raise AddonReadError(f"the message {msg!r} in {f.name} is never sent")

    def _enclosing_paren(self, i: int) -> int:
        """Index of the "(" of the call whose argument list holds index i."""
        depth = 0
        for j in range(i - 1, -1, -1):
            depth += (self.tokens[j] == ")") - (self.tokens[j] == "(")
            if depth < 0:
                return j
        raise AddonReadError("an argument outside any call")

    def _read_sig(self, reply: str, f: _Function, after: int) -> str:
        t = self.tokens
        for i in range(after, f.end):
            if t[i] == reply and t[i + 1] == ">>":
                operands = _split_top(_expression(t, i), {">>"})[1:]
                return "".join(self.expression_sig(op, f) for op in operands)
        # Awaited but never read (only checked for an error): the addon expects an empty reply,
        # which the comparison with the service's out signature then checks.
        return ""

    def service_calls(self) -> list[AddonCall]:
        calls = []
        t = self.tokens
        for helper in self.call_helpers():
            for site in self.call_sites(helper.name):
                f = self.function_at(site)
                if t[site - 1] != "=" or not _is_name(t[site - 2]):
                    raise AddonReadError(f"{helper.name}(...) in {f.name} is not assigned to a message variable")
                msg = t[site - 2]
                end = self._match(site + 1)
                members = self.names_of(self.argument(site, 0), f)
                in_sig = self._appended_sig(msg, f, end)
                out_sig = self.reply_sig(msg, f, end)
                calls += [AddonCall(m, in_sig, out_sig, f.name) for m in sorted(members)]
        return calls

    def _appended_sig(self, msg: str, f: _Function, after: int) -> str:
        t, sig = self.tokens, ""
        for i in range(after, f.end):
            if t[i] == msg and t[i + 1] == "<<" and t[i - 1] in (";", "{", "}"):
                operands = _split_top(_expression(t, i), {"<<"})[1:]
                sig += "".join(self.expression_sig(op, f) for op in operands)
        return sig

    def signals_read(self) -> dict[str, str]:
        """Signals the addon matches on the service's path and interface: member -> types read."""
        t, found = self.tokens, {}
        for i in range(len(t) - 1):
            if t[i] != "MatchRule" or t[i + 1] != "(":
                continue
            args = _split_top(t[i + 2:self._match(i + 1)], {","})
            if len(args) != 4 or args[1:3] != [["kPath"], ["kInterface"]]:
                continue
            member = _literal(args[3][0])
            j = self._match(i + 1)
            while t[j] != "{":           # the handler lambda's body, which calls one function
                j += 1
            handler = next(g for g in self.functions if g.name == t[j + 1])
            _ptype, param = handler.params[0]
            found[member] = self._read_sig(param, handler, handler.start)
        return found


def _arg_index(t: list[str], open_paren: int, i: int) -> int:
    depth, index = 0, 0
    for j in range(open_paren + 1, i):
        if t[j] in ("(", "{", "["):
            depth += 1
        elif t[j] in (")", "}", "]"):
            depth -= 1
        elif t[j] == "," and depth == 0:
            index += 1
    return index


def _expression(t: list[str], start: int) -> list[str]:
    """The tokens of the expression starting at start, up to where it ends."""
    depth = 0
    for j in range(start, len(t)):
        if t[j] in ("(", "[", "{"):
            depth += 1
        elif t[j] in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                return t[start:j]
        elif depth == 0 and t[j] in _EXPR_ENDS:
            return t[start:j]
    return t[start:]


def _split_top(tokens: list[str], separators: set[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = angle = 0
    for tok in tokens:
        if tok in ("(", "[", "{"):
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        elif tok == "<" and parts[-1] and parts[-1][-1] in ("static_cast", "vector", "DBusStruct"):
            angle += 1
        elif tok == ">" and angle:
            angle -= 1
        if depth == 0 and angle == 0 and tok in separators:
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


def _is_name(tok: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_]\w*", tok))


def _literal(tok: str) -> str:
    if not tok.startswith('"'):
        raise AddonReadError(f"not a string literal: {tok}")
    return tok[1:-1].encode().decode("unicode_escape")


def interface_methods(xml: str, interface: str) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """From introspection XML: {method: (in types, out types)} and {signal: types}."""
    iface = ET.fromstring(xml).find(f"interface[@name='{interface}']")
    if iface is None:
        return {}, {}
    methods = {
        m.get("name"): (
            "".join(a.get("type") for a in m.findall("arg") if a.get("direction", "in") == "in"),
            "".join(a.get("type") for a in m.findall("arg") if a.get("direction") == "out"),
        )
        for m in iface.findall("method")
    }
    signals = {s.get("name"): "".join(a.get("type") for a in s.findall("arg")) for s in iface.findall("signal")}
    return methods, signals


def mismatches(cpp_source: str, xml: str, interface: str) -> list[str]:
    """Every way the addon's calls and signals differ from the service's introspection XML."""
    addon = AddonSource(cpp_source)
    methods, signals = interface_methods(xml, interface)
    problems = []
    for call in addon.service_calls():
        if call.member not in methods:
            problems.append(f"{call.function}: the service has no method {call.member}")
            continue
        in_sig, out_sig = methods[call.member]
        if call.in_sig != in_sig:
            problems.append(f"{call.function}: {call.member} sent as ({call.in_sig}), the service takes ({in_sig})")
        if call.out_sig is not None and call.out_sig != out_sig:
            problems.append(f"{call.function}: {call.member} reply read as ({call.out_sig}), "
                            f"the service answers ({out_sig})")
    for member, sig in addon.signals_read().items():
        if signals.get(member) != sig:
            problems.append(f"signal {member} read as ({sig}), the service emits ({signals.get(member)})")
    return problems
