"""A damaged compiled dictionary is refused with one clear error, and typing goes on in kana."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from tools import build_dictionary  # noqa: E402
from tools import dictionary_synthetic  # noqa: E402

from karukan_engine.conversion.factory import ConverterOptions, build_converter  # noqa: E402
from karukan_engine.conversion.plain import PlainConverter  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.format import DictionaryFormatError, file_sha256  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402

FILES = ("readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv", "meta.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dict")
    source = dictionary_synthetic.write_source(root / "mozc")
    build_dictionary.compile_dictionary(source, root / "out", {"path": "synthetic"})
    return root / "out"


def damaged_copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "dictionary"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(built, target)
    return target


def rewrite_arrays(directory: Path, drop: str | None = None, **changes) -> None:
    """Arrays as a faulty build might write them: checksums updated, so only the content checks
    can catch the fault."""
    with np.load(directory / "system.npz") as arrays:
        contents = {name: arrays[name] for name in arrays.files if name != drop}
    contents.update(changes)
    np.savez(directory / "system.npz", **contents)
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    meta["sha256"]["system.npz"] = file_sha256(directory / "system.npz")
    (directory / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def test_the_intact_copy_loads(built, tmp_path):
    assert [e.surface for e in SystemDictionary(damaged_copy(built, tmp_path)).lookup("きょう")] == ["今日", "京"]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_file_is_refused_with_a_clear_error(built, tmp_path, name, damage):
    directory = damaged_copy(built, tmp_path)
    path = directory / name
    data = path.read_bytes()
    path.write_bytes({"garbage": bytes(range(256)) * 4, "truncated": data[: len(data) // 2], "empty": b""}[damage])
    with pytest.raises(DictionaryFormatError, match="rebuild it with tools/build_dictionary.py"):
        SystemDictionary(directory)


@pytest.mark.parametrize("edit", [
    lambda meta: meta.update(entries=meta["entries"] + 1),
    lambda meta: meta.update(readings=meta["readings"] - 1),
    lambda meta: meta.update(stored_surfaces=meta["stored_surfaces"] + 5),
    lambda meta: meta.update(format=99),
    lambda meta: meta.pop("entries"),
    lambda meta: meta.pop("sha256"),
    lambda meta: meta.update(format=1),   # written before files carried checksums
])
def test_metadata_that_does_not_match_the_data_is_refused(built, tmp_path, edit):
    directory = damaged_copy(built, tmp_path)
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    edit(meta)
    (directory / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(DictionaryFormatError):
        SystemDictionary(directory)


def test_arrays_out_of_range_are_refused(built, tmp_path):
    directory = damaged_copy(built, tmp_path)
    with np.load(directory / "system.npz") as arrays:
        lid, surface, offsets, matrix = arrays["lid"], arrays["surface"], arrays["offsets"], arrays["matrix"]
    cases = {
        "POS ids out of range": dict(lid=np.full_like(lid, matrix.shape[0])),
        "surface ids out of range": dict(surface=np.full_like(surface, 10**6)),
        "entry offsets": dict(offsets=offsets[::-1].copy()),
        "entry array lengths": dict(lid=lid[:-1]),
        "connection matrix shape": dict(matrix=matrix[:, :-1]),
    }
    for problem, change in cases.items():
        directory = damaged_copy(built, tmp_path)
        rewrite_arrays(directory, **change)
        with pytest.raises(DictionaryFormatError, match=problem):
            SystemDictionary(directory)
    directory = damaged_copy(built, tmp_path)
    rewrite_arrays(directory, drop="cost")
    with pytest.raises(DictionaryFormatError, match="unreadable"):
        SystemDictionary(directory)


@pytest.mark.parametrize("name", ["readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv"])
def test_one_flipped_byte_in_a_data_file_is_caught_by_its_checksum(built, tmp_path, name):
    directory = damaged_copy(built, tmp_path)
    data = bytearray((directory / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (directory / name).write_bytes(bytes(data))
    with pytest.raises(DictionaryFormatError, match="checksum mismatch"):
        SystemDictionary(directory)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FILES), offset=st.floats(0, 1), chunk=st.binary(min_size=1, max_size=64))
def test_any_overwritten_bytes_load_or_raise_the_format_error(built, tmp_path, name, offset, chunk):
    directory = damaged_copy(built, tmp_path)
    path = directory / name
    data = bytearray(path.read_bytes())
    at = int(offset * max(0, len(data) - 1))
    data[at:at + len(chunk)] = chunk
    path.write_bytes(bytes(data))
    try:
        dictionary = SystemDictionary(directory)
    except DictionaryFormatError:
        return
    for reading in ("きょう", "きょうは", "さん", "かく"):   # what loads answers lookups without crashing
        dictionary.lookup(reading)


def test_the_engine_falls_back_to_kana_on_a_damaged_dictionary(built, tmp_path, monkeypatch, caplog):
    directory = damaged_copy(built, tmp_path)
    (directory / "system.npz").write_bytes(b"not a zip")
    load = LatticeConverter.load_default.__func__
    monkeypatch.setattr(LatticeConverter, "load_default", classmethod(lambda cls, lm=None, **kw: load(cls, directory, lm=lm, **kw)))
    converter = build_converter(ConverterOptions(use_model=False))
    assert isinstance(converter, PlainConverter)
    assert converter.candidates(ConversionRequest("かな"), 3)[0].surface == "かな"
    assert "system dictionary unavailable" in caplog.text


def test_doctor_reports_the_dictionary(built, tmp_path):
    from ime_frontend.doctor import dictionary_check

    directory = damaged_copy(built, tmp_path)
    assert dictionary_check(directory).ok
    (directory / "readings.marisa").write_bytes(b"\0" * 64)
    check = dictionary_check(directory)
    assert not check.ok and "checksum mismatch" in check.detail and "kana" in check.detail
    assert not dictionary_check(tmp_path / "nowhere").ok
