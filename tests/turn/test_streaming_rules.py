"""Streaming dispatch's pure rules (core.turn.early_dispatch): dedup, which calls
may start before the stream ends, and how a retried stream is merged with
what already started."""

from __future__ import annotations

from core.contracts import ToolCall
from core.turn.early_dispatch import BatchBook, BatchClose, CallFacts, DispatchedCall, canonical_arguments, same_call

SAFE = CallFacts(concurrency_safe=True, runs_without_approval=True)
WRITE = CallFacts(concurrency_safe=False, runs_without_approval=True)
ASK_READ = CallFacts(concurrency_safe=True, runs_without_approval=False)


def call(cid: str, name: str, **args: object) -> ToolCall:
    return ToolCall(id=cid, name=name, arguments=args)


def dispatch(book: BatchBook, attempt: int, position: int, c: ToolCall, facts: CallFacts = SAFE) -> str:
    outcome = book.accept(DispatchedCall(attempt=attempt, position=position, call=c))
    if outcome == "new":
        book.facts[(attempt, position)] = facts
    return outcome


def test_a_repeated_dispatch_is_a_duplicate_and_a_conflicting_one_is_refused() -> None:
    book = BatchBook()
    a = call("c0", "read_file", path="a")
    assert dispatch(book, 1, 0, a) == "new"
    assert dispatch(book, 1, 0, a) == "duplicate"
    assert dispatch(book, 1, 0, call("other", "read_file", path="b")) == "refused"  # taken position
    assert dispatch(book, 1, 1, call("c0", "grep", pattern="x")) == "refused"  # taken id
    assert dispatch(book, 2, 0, a) == "new"  # a retried stream is a stream of its own
    assert book.streams[1] == {0: a}


def test_only_safe_allowed_calls_with_only_safe_calls_before_them_start() -> None:
    book = BatchBook()
    dispatch(book, 1, 0, call("r", "read_file", path="a"))
    dispatch(book, 1, 1, call("ask", "bash", command="ls"), ASK_READ)
    dispatch(book, 1, 2, call("g", "grep", pattern="x"))
    dispatch(book, 1, 3, call("w", "write_file", path="a", content="x"), WRITE)
    dispatch(book, 1, 4, call("r2", "read_file", path="a"))
    assert book.may_start((1, 0))
    assert not book.may_start((1, 1))  # needs approval: waits for the whole batch
    assert book.may_start((1, 2))  # an ask call before it is not an unsafe one
    assert not book.may_start((1, 3))  # writes never start early
    assert not book.may_start((1, 4))  # a read after a write must see the write


def test_a_call_waits_until_every_earlier_position_is_known() -> None:
    book = BatchBook()
    dispatch(book, 1, 1, call("g", "grep", pattern="x"))
    assert not book.may_start((1, 1))
    dispatch(book, 1, 0, call("r", "read_file", path="a"))
    assert book.may_start((1, 1))


def test_arguments_compare_across_protocols() -> None:
    assert canonical_arguments('{"b": 1, "a": "x"}') == canonical_arguments({"a": "x", "b": 1})
    assert same_call(ToolCall(id="1", name="grep", arguments='{"pattern":"x"}'), call("2", "grep", pattern="x"))
    assert not same_call(call("1", "grep", pattern="x"), call("1", "glob", pattern="x"))
    assert canonical_arguments("{'bad'") == "text:{'bad'"


def test_the_final_response_takes_the_started_calls_of_its_own_stream() -> None:
    book = BatchBook()
    r, g = call("c0", "read_file", path="a"), call("c1", "grep", pattern="x")
    dispatch(book, 1, 0, r)
    dispatch(book, 1, 1, g)
    book.started += [(1, 0), (1, 1)]
    w = call("c2", "write_file", path="b", content="y")
    closed, origin = book.merge(BatchClose(attempt=1, calls=[r, g, w]))
    assert closed.calls == [r, g, w] and closed.prepended == 0
    assert origin == {0: (1, 0), 1: (1, 1)} and closed.started_early == [0, 1]


def test_a_retried_stream_keeps_what_ran_and_puts_orphans_first() -> None:
    book = BatchBook()
    dispatch(book, 1, 0, call("old0", "read_file", path="a"))
    dispatch(book, 1, 1, call("old1", "read_file", path="b"))
    book.started += [(1, 0), (1, 1)]
    # The retry: the same first call (new id), then something else.
    new0, new1 = call("new0", "read_file", path="a"), call("new1", "glob", pattern="*")
    assert dispatch(book, 2, 0, new0) == "new"
    assert book.started_match((2, 0)) == (1, 0)  # already running: not started again
    dispatch(book, 2, 1, new1)
    assert book.started_match((2, 1)) is None
    closed, origin = book.merge(BatchClose(attempt=2, calls=[new0, new1]))
    # read b ran but is not in the retried response: kept, first.
    assert [(c.id, c.name) for c in closed.calls] == [("old1", "read_file"), ("old0", "read_file"), ("new1", "glob")]
    assert closed.prepended == 1
    assert origin == {0: (1, 1), 1: (1, 0)}


def test_a_started_call_after_a_changed_prefix_is_an_orphan() -> None:
    book = BatchBook()
    dispatch(book, 1, 0, call("g", "grep", pattern="x"))
    dispatch(book, 1, 1, call("r", "read_file", path="a"))
    book.started += [(1, 0), (1, 1)]
    # Retried: a write now precedes "read a": the read that ran did not see it.
    write, read = call("w", "write_file", path="a", content="z"), call("r2", "read_file", path="a")
    closed, origin = book.merge(BatchClose(attempt=2, calls=[write, read]))
    assert [c.id for c in closed.calls] == ["g", "r", "w", "r2"]
    assert origin == {0: (1, 0), 1: (1, 1)}


def test_abandon_keeps_only_what_started() -> None:
    book = BatchBook()
    dispatch(book, 1, 0, call("r", "read_file", path="a"))
    dispatch(book, 1, 1, call("w", "write_file", path="a", content="x"), WRITE)
    book.started.append((1, 0))
    closed, origin = book.merge(BatchClose(attempt=0, abandon=True))
    assert [c.id for c in closed.calls] == ["r"] and origin == {0: (1, 0)}
