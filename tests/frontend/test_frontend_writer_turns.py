"""The bus writer's queue serves destinations in turns (issue 29, item 7): while thousands of
replies to a flooding client wait for the bus daemon, a reply to a quiet client goes out after
at most one message of each other waiting destination. Before, it waited behind all of them
(a quiet key's worst case 8.6 s under 50,000 calls from 4 clients; benchmarks/flood_bench.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ime_frontend.bus import TurnsByDestination


def test_a_quiet_clients_reply_overtakes_a_flood_queued_before_it():
    queue = TurnsByDestination()
    for n in range(300):
        queue.push(":1.flood", ("flood", n))
    queue.push(":1.quiet", ("quiet", 0))
    out = [queue.popleft() for _ in range(len(queue))]
    assert out.index(("quiet", 0)) == 1
    assert [n for who, n in out if who == "flood"] == list(range(300))


@settings(max_examples=200, deadline=None)
@given(pushes=st.lists(st.sampled_from([":1.a", ":1.b", ":1.c", ""]), max_size=60))
def test_property_each_destination_keeps_its_order_and_waits_at_most_a_turn(pushes):
    queue = TurnsByDestination([("before", 0)])   # queued before the connection was set up
    for n, destination in enumerate(pushes):
        queue.push(destination, (destination, n))
    lanes = len(set(pushes) | {""})
    out = [queue.popleft() for _ in range(len(queue))]
    for destination in set(pushes):
        sent = [n for d, n in out if d == destination]
        assert sent == sorted(sent)
        first = next(i for i, item in enumerate(out) if item[0] == destination)
        assert first < lanes + 1   # every waiting destination got its first message in the first round
    assert out[0] == ("before", 0) and len(out) == len(pushes) + 1
