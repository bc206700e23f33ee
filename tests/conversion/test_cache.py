"""The LRU conversion cache."""

import threading

from hypothesis import given, settings, strategies as st

from karukan_engine.conversion.cache import CacheKey, ConversionCache


def key(r, c="", m="m"):
    return CacheKey(r, c, m)


def test_key_includes_context_and_model():
    cache = ConversionCache(8)
    cache.put(key("きょう"), ("今日",))
    assert cache.get(key("きょう")) == ("今日",)
    assert cache.get(key("きょう", c="昨日と")) is None
    assert cache.get(key("きょう", m="other")) is None


def test_least_recently_used_is_evicted():
    cache = ConversionCache(2)
    cache.put(key("a"), "A")
    cache.put(key("b"), "B")
    assert cache.get(key("a")) == "A"     # a is now the most recent
    cache.put(key("c"), "C")
    assert key("b") not in cache
    assert cache.get(key("a")) == "A" and cache.get(key("c")) == "C"


def test_empty_results_are_not_cached():
    cache = ConversionCache(2)
    cache.put(key("a"), ())
    cache.put(key("b"), "")
    assert len(cache) == 0


def test_hit_and_miss_counts():
    cache = ConversionCache(2)
    cache.get(key("a"))
    cache.put(key("a"), "A")
    cache.get(key("a"))
    assert (cache.hits, cache.misses) == (1, 1)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=200), st.integers(1, 6))
@settings(max_examples=200)
def test_behaves_like_a_reference_lru(ops, capacity):
    cache = ConversionCache(capacity)
    model: list[tuple[int, str]] = []  # most recent last
    for is_put, k in ops:
        if is_put:
            model = [(mk, mv) for mk, mv in model if mk != k] + [(k, f"v{k}")]
            model = model[-capacity:]
            cache.put(key(str(k)), f"v{k}")
        else:
            expected = dict(model).get(k)
            assert cache.get(key(str(k))) == expected
            if expected is not None:
                model = [(mk, mv) for mk, mv in model if mk != k] + [(k, expected)]
    assert len(cache) == len(model)


def test_threads_share_it_safely():
    cache = ConversionCache(64)

    def hammer(t):
        for i in range(2000):
            cache.put(key(str((t * 7 + i) % 100)), str(i))
            cache.get(key(str(i % 100)))

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(cache) == 64


def test_forgetting_a_reading_drops_only_the_entries_holding_it():
    cache = ConversionCache(8)
    for r in ("きょうは", "あした", "きょうと"):
        cache.put(key(r), r)
    cache.forget_readings(["きょう"])
    assert cache.keys() == [key("あした")] and cache.get(key("あした")) == "あした"
    assert cache.get(key("きょうは")) is None and key("きょうと") not in cache
    cache.put(key("きょうは"), "今日は")   # stored after the commit: current
    assert cache.get(key("きょうは")) == "今日は"


READINGS = st.sampled_from(["あ", "い", "あい", "いあ", "う", "あう"])


@given(st.lists(st.one_of(st.tuples(st.just("put"), READINGS), st.tuples(st.just("get"), READINGS),
                          st.tuples(st.just("forget"), st.lists(READINGS, max_size=2))), max_size=80),
       st.integers(1, 8))
@settings(max_examples=300)
def test_forgetting_lazily_reads_like_dropping_at_once(ops, capacity):
    """Noting the readings and checking each entry when read gives what scanning the whole
    cache at each commit gave (the LRU order aside: nothing stale is ever read)."""
    import karukan_engine.conversion.cache as cache_module

    cache = ConversionCache(capacity)
    held: dict[str, str] = {}   # the eager cache's current entries (ignoring eviction, checked below)
    for i, (op, arg) in enumerate(ops):
        if op == "put":
            cache.put(key(arg), f"{arg}{i}")
            held[arg] = f"{arg}{i}"
        elif op == "forget":
            cache.forget_readings(arg)
            held = {r: v for r, v in held.items() if not any(f in r for f in arg if f)}
        else:
            got = cache.get(key(arg))
            assert got is None or got == held.get(arg)   # never a stale value
            if arg not in held:
                assert got is None
    assert set(k.reading for k in cache.keys()) <= set(held)


def test_an_entry_older_than_every_commit_kept_counts_as_stale(monkeypatch):
    import karukan_engine.conversion.cache as cache_module

    monkeypatch.setattr(cache_module, "FORGOTTEN_KEPT", 2)
    cache = ConversionCache(8)
    cache.put(key("あした"), "明日")
    for reading in ("か", "き", "く"):   # three commits, two kept: the entry cannot be checked
        cache.forget_readings([reading])
    assert cache.get(key("あした")) is None
