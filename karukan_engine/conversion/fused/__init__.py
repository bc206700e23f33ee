"""The fused converter: dictionary lattice + neural model + learning behind one LiveConverter.

Parts, each one job, sharing one FusionShared (models, aligner, n-gram handle, stage timings):

    converter.py         FusedConverter, the one object callers hold; each call is a part's
    live_text.py         live conversion: a key's quick text and the model's refinement
    space_ranking.py     Space's candidate list: lattice N-best and model texts, ranked
    space_segments.py    the best candidate cut back into segments with their lists
    space_conversion.py  Space within its budget, prepared while the user pauses, or quick
    suggesting.py        completions of what was typed, and the model's view of them
    run_options.py       SpacePlan (how much model work) and RunOptions (how a run goes)
    shared.py            what the parts share
    build.py             build_fused_converter, which the factory calls
"""

from karukan_engine.conversion.fused.build import build_fused_converter, bundled_ngram
from karukan_engine.conversion.fused.converter import FusedConverter

__all__ = ["FusedConverter", "build_fused_converter", "bundled_ngram"]
