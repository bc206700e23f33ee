"""The bottom layer: value types, errors, the one LRU and safe user-file access, shared by every
layer above.

Nothing here imports another karukan_engine package, so lattice, neural, conversion, session
and the frontends can all depend on it without depending on each other.
"""
