"""StaticCache: one sample, valid at every time, survives clear() (tf2-reference §3.4)."""

from __future__ import annotations

from tf2py.buffer.time_cache import StaticCache

S = 1_000_000_000


def test_static_sample_is_valid_at_every_time():
    cache = StaticCache()
    cache.insert(5 * S, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 4)
    for t in (0, 1, 5 * S, 10**18, -(10**12)):
        assert cache.get(t) == (1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 4)


def test_static_latest_insert_wins():
    cache = StaticCache()
    cache.insert(5 * S, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4)
    cache.insert(1 * S, 9.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 6)
    assert cache.get(0)[0] == 9.0
    assert cache.parent_at(123) == 6
    assert len(cache) == 1


def test_static_latest_time_is_zero():
    cache = StaticCache()
    cache.insert(5 * S, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4)
    assert cache.latest() == (0, 4)
    assert cache.latest_stamp() == 0
    assert cache.oldest_stamp() == 0


def test_static_clear_keeps_the_sample():
    cache = StaticCache()
    cache.insert(0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 4)
    cache.clear()
    assert cache.get(7) is not None
