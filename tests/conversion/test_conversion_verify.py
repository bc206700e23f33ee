"""Zenzai-style verification (conversion/verify.py): the model steers, the lattice writes.

The loop is driven twice: by scripted model answers (every branch, with the real dictionary),
and by the bundled model on readings where it disagrees with the lattice's best.
"""

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.align import Aligner  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.conversion.verify import REPLACEMENT_CHAR, verify_draft  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.training.paths import PACKAGE_MODEL_DIR  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

READING = "このせいやくはつぎのばーじょんではとりのぞかれるよていです"
# Readings on which the bundled model disagrees with the lattice's best for some dictionary
# (which ones depends on the dictionary's data: the tests look for one, not for a given one).
DISAGREEMENTS = [READING, "きのうののみかいはきびしかったなあ", "ぎじゅつやちしきもだいじだけど",
                 "かいぎのしりょうをおくります", "きしゃのきしゃがきしゃできしゃした", "はしのはしをはしでわたる"]


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture(scope="module")
def aligner(system):
    return Aligner(system)


class ScriptedSlot:
    """Answers check_draft from a script (draft -> preferred prefix), recording each draft."""

    def __init__(self, script: dict[str, str | None]) -> None:
        self.script = script
        self.checked: list[str] = []

    def check_draft(self, reading: str, context: str, draft: str) -> str | None:
        self.checked.append(draft)
        return self.script.get(draft)


def test_a_preferred_prefix_reruns_the_lattice_until_the_model_agrees(aligner):
    draft = "この成約は次のバージョンでは取り除かれる予定です"
    revised = "この制約は次のバージョンでは取り除かれる予定です"
    slot = ScriptedSlot({draft: "この制", revised: None})
    assert verify_draft(slot, aligner, READING, "", draft, rounds=3) == revised
    assert slot.checked == [draft, revised]   # the revision is checked again, then accepted
    assert aligner.align(READING, revised) is not None


def test_rounds_bound_the_checks(aligner):
    draft = "この成約は次のバージョンでは取り除かれる予定です"
    slot = ScriptedSlot({draft: "この制"})   # every later draft gets None: agreement
    assert verify_draft(slot, aligner, READING, "", draft, rounds=0) == draft and slot.checked == []
    assert verify_draft(slot, aligner, READING, "", draft, rounds=1).startswith("この制")
    assert slot.checked == [draft]


@pytest.mark.parametrize("prefix", [None, "", "この" + REPLACEMENT_CHAR, "この鬱"])
def test_the_draft_stays_when_the_model_agrees_or_its_prefix_is_unusable(aligner, prefix):
    # None/"" = agreement; a broken UTF-8 token; a prefix no dictionary path can write.
    draft = "この成約は次のバージョンでは取り除かれる予定です"
    slot = ScriptedSlot({draft: prefix})
    assert verify_draft(slot, aligner, READING, "", draft, rounds=3) == draft


def test_the_bundled_model_revises_lattice_drafts_into_dictionary_paths(system, aligner):
    from karukan_engine.neural.model import ModelOptions, load_model

    base = LatticeConverter(system, None, None)
    readings = DISAGREEMENTS
    revised = 0
    with load_model(PACKAGE_MODEL_DIR, ModelOptions(n_threads=1)) as model:
        slot = ModelSlot(model, "karukan-bundled")
        for reading in readings:
            draft = base.candidates(ConversionRequest(reading, ""), 1)[0].surface
            prefix = slot.check_draft(reading, "", draft)
            result = verify_draft(slot, aligner, reading, "", draft, rounds=1)
            assert aligner.align(reading, result) is not None   # always a dictionary path
            if result != draft:
                revised += 1
                assert prefix and not draft.startswith(prefix) and result.startswith(prefix)
        slot.close()
    assert revised >= 1   # the bundled model disagrees with the lattice on these readings


def test_the_verify_scheme_puts_the_revision_first_unless_the_user_chose(system, tmp_path):
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.neural.model import ModelOptions, load_model

    base = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    with load_model(PACKAGE_MODEL_DIR, ModelOptions(n_threads=1)) as model:
        slot = ModelSlot(model, "karukan-bundled")
        fused = FusedConverter(base, [slot], ConversionSettings(scheme="verify"), lexicon=system)
        for reading in DISAGREEMENTS:   # one the model revises (the test above: there is one)
            lattice_best = base.candidates(ConversionRequest(reading, ""), 1)[0].surface
            expected = verify_draft(slot, fused.aligner, reading, "", lattice_best, fused.settings.verify_rounds)
            if expected != lattice_best:
                break
        assert expected != lattice_best
        top = fused.candidates(ConversionRequest(reading, ""), 5)
        assert top[0].surface == expected and top[0].source == "model"
        assert lattice_best in [c.surface for c in top]
        fused.record([(reading, lattice_best)])   # the user picked the lattice's text before
        assert fused.candidates(ConversionRequest(reading, ""), 5)[0].surface == lattice_best
        fused.close()
