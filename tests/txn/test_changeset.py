"""The pure changeset functions: classification, order, rename labels, the
symlink-escape resolver, diff text, read-only refusal, JSON round trip."""

from __future__ import annotations

from activities.txn.changeset import (
    DIR, FILE, SYMLINK, Change, Changeset, Node, action, apply_order, detect_renames, file_diff,
    read_only_refusal, symlink_escapes,
)

ROOT = "/w/ws"
F1 = Node(FILE, 0o644, 3, "aaa")
F2 = Node(FILE, 0o644, 3, "bbb")
D = Node(DIR, 0o755)


def link(target: str) -> Node:
    return Node(SYMLINK, target=target)


def test_actions():
    assert action(None, F1) == "create"
    assert action(F1, None) == "delete"
    assert action(F1, F2) == "modify"
    assert action(F1, Node(FILE, 0o755, 3, "aaa")) == "mode"
    assert action(F1, D) == "replace"
    assert action(link("a"), link("b")) == "modify"


def test_apply_order_deletes_deepest_first_then_parents_first():
    changes = [Change("a", D, None), Change("a/b", F1, None), Change("n/m", None, F1), Change("n", None, D)]
    assert [c.path for c in apply_order(changes)] == ["a/b", "a", "n", "n/m"]


def test_renames_are_labelled_by_content():
    changes = [Change("old", F1, None), Change("new", None, F1), Change("other", None, F2)]
    detect_renames(changes)
    assert [c.renamed_from for c in changes] == ["", "old", ""]


def test_symlink_escapes_direct_relative_absolute_and_chained():
    def current(rel):
        return {"in": D, "in/up": link("..")}.get(rel)

    cases = {
        "ok": link("in/file"), "ok_abs": link("/w/ws/in"), "abs": link("/etc/passwd"),
        "rel": link("../outside"), "deep/rel2": link("../../x"),
        # in/up -> .. is the workspace root itself; one more '..' leaves it, which a lexical
        # check (normpath('in/up/..') == 'in') would miss.
        "chained": link("in/up/.."),
        "sneaky_prefix": link("/w/ws-other/x"),
    }
    problems = symlink_escapes(ROOT, [Change(p, None, n) for p, n in cases.items()], current)
    assert sorted(path for path, _ in problems) == ["abs", "chained", "deep/rel2", "rel", "sneaky_prefix"]


def test_symlink_through_a_link_the_same_changeset_places():
    changes = [Change("hop", None, link("..")), Change("esc", None, link("hop/x"))]
    problems = symlink_escapes(ROOT, changes, lambda rel: None)
    assert [path for path, _ in problems] == ["hop", "esc"]


def test_symlink_loops_are_refused():
    changes = [Change("a", None, link("b")), Change("b", None, link("a/x"))]
    assert len(symlink_escapes(ROOT, changes, lambda rel: None)) == 2


def test_file_diff_text_binary_and_new_files():
    text = file_diff("a.py", b"one\ntwo\n", b"one\nthree\n")
    assert "--- a/a.py\n+++ b/a.py\n" in text and "-two\n+three\n" in text
    assert file_diff("new.txt", None, b"x").startswith("--- /dev/null\n+++ b/new.txt\n")
    assert "No newline at end of file" in file_diff("new.txt", None, b"x")
    assert file_diff("img.png", b"\x89PNG\x00", b"\x89PNG\x00\x01") == "img.png: binary, 5 -> 6 bytes (content not shown)\n"


def test_read_only_refusal_lists_what_an_allowed_command_tried():
    cs = Changeset([Change("notes.txt", None, F1), Change("gone.txt", F2, None)])
    text = read_only_refusal("allow", cs)
    assert "nothing was applied" in text and "create notes.txt" in text and "delete gone.txt" in text
    assert read_only_refusal("ask", cs) is None
    assert read_only_refusal("allow", Changeset()) is None


def test_json_round_trip():
    cs = Changeset([Change("a", F1, F2, content="content/0", mtime_ns=5), Change("l", None, link("a"))], [("p", "fifo")])
    assert Changeset.from_json(cs.to_json()) == cs
