"""models.toml: the kana-kanji models Karukan knows, and how to find one on disk.

Each `[models.<id>]` table has a display `name`, a source — `repo` + `file` (Hugging Face hub),
`path` (a GGUF or model directory; relative paths are relative to models.toml) or `package_path`
(relative to the karukan_engine package, for the bundled model) — plus `tokenizer`
("tokenizer.json": the file beside the GGUF / in the same repo; "gguf": the GGUF vocabulary),
`prompt` ("jinen" or "zenz-v3": the family's prompt and text policy, prompt.PromptFamily),
`license`, `size_mib`, `params` and optional `context_chars` (left context the model gets; the
family's default when absent), `threads` (llama.cpp threads), `gpu_layers` (layers offloaded to
a GPU backend; 0 = CPU only),
`kv_overrides` (GGUF metadata overrides), `tokenizer_repo` (the hub repository tokenizer.json
comes from when the GGUF's repository has none), `arch` and `n_vocab` (what the GGUF must be:
another architecture or vocabulary size is refused at load). The top-level `default` names the
offline default.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from karukan_engine.core.user_files import MAX_SETTINGS_BYTES, read_user_file
from karukan_engine.neural.errors import ModelNotFoundError, NeuralError, UnknownModelError
from karukan_engine.neural.prompt import FAMILIES, PromptFamily

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # karukan_engine/
REGISTRY_ENV = "KARUKAN_MODELS_TOML"
PROMPT_FORMATS = tuple(FAMILIES)
TOKENIZER_KINDS = ("tokenizer.json", "gguf")


@dataclass(frozen=True)
class ModelEntry:
    id: str
    name: str
    repo: str | None = None
    file: str | None = None
    revision: str | None = None
    path: Path | None = None
    package_path: str | None = None
    tokenizer: str = "tokenizer.json"
    prompt: str = "jinen"
    license: str = ""
    size_mib: float | None = None
    params: str = ""
    kv_overrides: Mapping[str, object] = field(default_factory=dict)
    tokenizer_repo: str | None = None
    arch: str | None = None
    n_vocab: int | None = None
    context_chars: int | None = None  # None: the family's own
    threads: int | None = None        # None: the caller's or the default
    gpu_layers: int | None = None     # None: 0 (CPU) unless the caller says

    @property
    def family(self) -> PromptFamily:
        """The prompt and text policy this model was trained with."""
        return FAMILIES[self.prompt].with_context_chars(self.context_chars)

    @property
    def tokenizer_source(self) -> str:
        """Where tokenizer.json comes from, in words."""
        if self.tokenizer == "gguf":
            return "the GGUF's own vocabulary"
        if self.repo:
            return f"{self.tokenizer_repo or self.repo}/tokenizer.json"
        return "tokenizer.json beside the GGUF"

    @property
    def source_kind(self) -> str:
        return "hub" if self.repo else ("package" if self.package_path else "path")

    @property
    def source_text(self) -> str:
        if self.repo:
            return f"{self.repo}/{self.file}"
        if self.package_path:
            return f"karukan_engine/{self.package_path}"
        return str(self.path)

    def local_path(self) -> Path | None:
        """Where a path / package model lives (None for hub models)."""
        if self.package_path:
            return PACKAGE_ROOT / self.package_path
        return self.path


@dataclass(frozen=True)
class Registry:
    default_id: str | None
    entries: dict[str, ModelEntry]
    source: Path | None = None

    def get(self, model_id: str) -> ModelEntry:
        try:
            return self.entries[model_id]
        except KeyError:
            raise UnknownModelError(f"unknown model id {model_id!r} (see `karukan model list`)") from None


def default_registry_path() -> Path:
    """$KARUKAN_MODELS_TOML, else the package's models.toml: in a checkout a link to the one at
    the repository root (resolved, so relative `path` entries stay relative to that file), in an
    installed wheel a copy of it."""
    env = os.environ.get(REGISTRY_ENV)
    return Path(env) if env else (PACKAGE_ROOT / "data" / "models.toml").resolve()


def _entry(model_id: str, table: Mapping[str, object], base: Path) -> ModelEntry:
    def text(key: str, default: str | None = None) -> str | None:
        value = table.get(key, default)
        if value is not None and not isinstance(value, str):
            raise NeuralError(f"models.toml: {model_id}.{key} must be a string")
        return value

    repo, file, path, package = text("repo"), text("file"), text("path"), text("package_path")
    sources = sum(x is not None for x in (repo, path, package))
    if sources != 1 or (repo is not None) != (file is not None):
        raise NeuralError(f"models.toml: {model_id} needs exactly one of repo+file, path, package_path")
    tokenizer = text("tokenizer", "tokenizer.json")
    prompt = text("prompt", "jinen")
    if tokenizer not in TOKENIZER_KINDS:
        raise NeuralError(f"models.toml: {model_id}.tokenizer must be one of {TOKENIZER_KINDS}")
    if prompt not in PROMPT_FORMATS:
        raise NeuralError(f"models.toml: {model_id}.prompt must be one of {PROMPT_FORMATS}")
    overrides = table.get("kv_overrides", {})
    if not isinstance(overrides, dict):
        raise NeuralError(f"models.toml: {model_id}.kv_overrides must be a table")
    size = table.get("size_mib")

    def count(key: str, low: int) -> int | None:
        value = table.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            raise NeuralError(f"models.toml: {model_id}.{key} must be an integer of at least {low}")
        return value

    n_vocab = count("n_vocab", 1)
    tokenizer_repo = text("tokenizer_repo")
    if tokenizer_repo is not None and repo is None:
        raise NeuralError(f"models.toml: {model_id}.tokenizer_repo needs a hub model (repo + file)")
    return ModelEntry(
        id=model_id,
        name=text("name", model_id) or model_id,
        repo=repo,
        file=file,
        revision=text("revision"),
        path=(base / Path(path).expanduser()) if path is not None else None,
        package_path=package,
        tokenizer=tokenizer or "tokenizer.json",
        prompt=prompt or "jinen",
        license=text("license", "") or "",
        size_mib=float(size) if isinstance(size, (int, float)) else None,
        params=text("params", "") or "",
        kv_overrides=dict(overrides),
        tokenizer_repo=tokenizer_repo,
        arch=text("arch"),
        n_vocab=n_vocab,
        context_chars=count("context_chars", 0),
        threads=count("threads", 1),
        gpu_layers=count("gpu_layers", 0),
    )


def parse_registry(text: str, base: Path, source: Path | None = None) -> Registry:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NeuralError(f"models.toml is not valid TOML: {exc}") from exc
    except RecursionError:
        raise NeuralError("models.toml is nested too deeply") from None
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise NeuralError("models.toml: [models] must be a table of tables")
    entries = {mid: _entry(mid, table, base) for mid, table in models.items()}
    default = data.get("default")
    if default is not None and default not in entries:
        raise NeuralError(f"models.toml: default {default!r} is not listed")
    return Registry(default, entries, source)


def load_registry(path: Path | None = None) -> Registry:
    path = path or default_registry_path()
    try:
        # Regular files only, size-capped: a FIFO or device named by KARUKAN_MODELS_TOML must
        # not block or exhaust memory.
        raw = read_user_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return Registry(None, {}, None)  # no registry: paths still work
    except OSError as exc:
        raise NeuralError(f"models.toml cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NeuralError("models.toml is not UTF-8") from None
    return parse_registry(text, path.parent, path)


@dataclass(frozen=True)
class ResolvedModel:
    gguf: Path
    tokenizer: Path | None  # None: use the GGUF vocabulary
    kv_overrides: Mapping[str, object]
    entry: ModelEntry | None = None


def _local_model(entry: ModelEntry) -> ResolvedModel:
    from karukan_engine.neural.model import TOKENIZER_FILE, find_gguf

    location = entry.local_path()
    assert location is not None
    if not location.exists():
        raise ModelNotFoundError(f"model {entry.id!r} is not installed (expected at {entry.source_text})")
    gguf = find_gguf(location)
    tokenizer = None
    if entry.tokenizer == "tokenizer.json":
        tokenizer = gguf.parent / TOKENIZER_FILE
        if not tokenizer.is_file():
            raise ModelNotFoundError(f"model {entry.id!r} has no tokenizer.json beside its GGUF")
    return ResolvedModel(gguf, tokenizer, entry.kv_overrides, entry)


def resolve_model(source: str | None = None, registry: Registry | None = None, download: bool = False) -> ResolvedModel:
    """A models.toml id (None = the registry default) or a GGUF path / model directory, to files
    on disk. Hub models must be in the Hugging Face cache unless download=True."""
    registry = registry or load_registry()
    if source is None:
        if registry.default_id is None:
            raise UnknownModelError("no default model in models.toml")
        source = registry.default_id
    if source in registry.entries:
        entry = registry.entries[source]
        if entry.source_kind != "hub":
            return _local_model(entry)
        from karukan_engine.neural.download import fetch_entry

        gguf, tokenizer = fetch_entry(entry, allow_download=download)
        return ResolvedModel(gguf, tokenizer, entry.kv_overrides, entry)
    path = Path(source).expanduser()
    if path.exists():
        from karukan_engine.neural.model import TOKENIZER_FILE, find_gguf

        gguf = find_gguf(path)
        beside = gguf.parent / TOKENIZER_FILE
        return ResolvedModel(gguf, beside if beside.is_file() else None, {})
    if "/" in source or source.endswith(".gguf"):
        raise ModelNotFoundError(f"model file not found: {source}")
    raise UnknownModelError(f"unknown model id {source!r} (see `karukan model list`)")


def entry_options(entry: ModelEntry, options):
    """options with the model's own settings (models.toml) wherever the caller left one unset."""
    from dataclasses import replace

    def pick(mine, theirs):
        return mine if mine is not None else theirs

    return replace(options, prompt=pick(options.prompt, entry.prompt),
                   max_context_chars=pick(options.max_context_chars, entry.context_chars),
                   n_threads=pick(options.n_threads, entry.threads),
                   gpu_layers=pick(options.gpu_layers, entry.gpu_layers))


def load_model_by_id_or_path(source: str | None = None, options=None, registry: Registry | None = None):
    """Resolve then load (see model.load_model); options: ModelOptions."""
    from dataclasses import replace

    from karukan_engine.neural.model import Expected, ModelOptions, load_model
    from karukan_engine.neural.probe import prove_model

    resolved = resolve_model(source, registry)
    options = options or ModelOptions()
    overrides = {**resolved.kv_overrides, **options.kv_overrides}
    tokenizer_kind = "auto" if resolved.tokenizer is not None else "gguf"
    options = replace(options, kv_overrides=overrides, tokenizer=tokenizer_kind)
    entry = resolved.entry
    if entry is not None:
        options = entry_options(entry, options)
    expected = Expected(entry.arch, entry.n_vocab) if entry is not None else Expected()
    try:
        # A child process loads it first: a file that makes llama.cpp abort costs only the child.
        prove_model(resolved.gguf, overrides)
        return load_model(resolved.gguf, options, tokenizer_path=resolved.tokenizer, expected=expected)
    except NeuralError as exc:
        if entry is None:
            raise
        raise type(exc)(f"model {entry.id!r}: {exc}") from exc
