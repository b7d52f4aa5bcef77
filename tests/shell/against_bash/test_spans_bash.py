"""The scanner of ``[[ ]]``, ``(( ))`` and ``$(( ))`` (core/shell/opaque/spans.py)
against real bash: random scripts of harmless pieces (quotes, comments,
here-documents, ``$( (`` subshells, nested substitutions) are run twice,
as written and with every span the scanner found replaced by what it
evaluates to (``$((1+2))`` by ``$((3))``, a ``[[ ]]`` or ``(( ))`` by
``true``/``false``). Where the scanner and bash agree on what is a span and
where it ends, the two print the same; where the scanner took literal text
for a span, or ended one elsewhere, they differ. (A test that cond_tests or
bash itself refuses has no value to put in its place: skipped.)"""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from core.shell.opaque.conditions import cond_tests
from core.shell.opaque.spans import ARITH, COND, find_spans
from core.shell.verdict import J

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

_PIECES = [
    "echo A",
    'echo "$((1+2))"',
    "echo '$((1+2))' x",
    "echo $((2*3))x$((4-1))",
    "echo $(( (1+2) * (3) ))",
    "echo $((2#101 + 0x10 + 010))",
    "echo $((1<<3)) $((7>>1))",
    "[[ -n x ]] && echo T1",
    "[[ -z x ]] || echo T2",
    '[[ "a ]]" == "a ]]" ]] && echo T3',
    "[[ a =~ ^(a|b)$ ]] && echo T4",
    "[[ ab =~ a(b|c) && ( -n a || -z b ) ]] && echo T4b",
    "((1+1)) && echo T5",
    "(( 0 )) || echo T5b",
    "( (echo S1) )",
    "echo $( (echo S2) )",
    "((echo S1b) )",
    "echo $((echo S3) )",
    "echo $((echo S3b) ; echo S3c)",
    "echo $( (echo S2b) ; echo S2c)",
    "echo $(echo $((4+4)))",
    "echo \"$(echo \"$((5+5))\")\"",
    "echo x # [[ -n x ]] $((1))",
    "cat <<'EOF'\n[[ -n x ]] $((1)) ((2))\nEOF",
    "cat <<EOF\nplain ]] ))\nEOF",
    "if [[ -n x ]]; then echo T6; fi",
    "while ((0)); do :; done",
    "{ [[ -n a ]]; } && echo T7",
    "! [[ -z a ]] && echo T8",
    'echo "[[ -n x ]]"',
    "echo [[ -n x ]]",
    "echo ']]' \"))\"",
    "x='$((1))'; echo \"$x\"",
    "[[ -n $(echo ']]') ]] && echo T9",
    "[[ $(echo a) == a ]] && echo T10",
    "[[ a < b ]] && echo T11",
    "[[\n-n a\n]] && echo T12",
    "echo $(( 1 + $((2)) ))",
    "f() { ((1)) && echo F1; }; f",
    "echo ${x:-a}$((3))",
    "echo $$((1))x",
    "echo \\$((1))",
    "echo \"a\\\"$((6))\"",
    "[[ a =~ (a)(b)? ]] && echo R1",
    "[[ 'a(b' =~ a\\( ]] && echo R2",
    "[[ ab =~ ^a|x$ ]] && echo R3",
    "[[ -n \"$(echo \"))\")\" ]] && echo Q1",
    "echo \"$(( 3 ))\" '$(( 4 ))'",
    "cat <<EOF\n]] )) [[ x $((7))\nEOF",
    "(( 2 == 2 )) && echo X1",
    "echo $((1))$((2))",
    "[[ a == a ]]&&echo C1",
    "((( 1 ))) && echo P1",
    "echo $(((1)+1))",
    "[[ -n x ]] # c ]]",
    "[[ x ]] || [[ y ]] && echo D1",
    "[[ ( a == a ) ]] && echo D2",
    "[[ ! ( a == b ) && a != b ]] && echo D3",
    ">out.txt [[ -n x ]]; echo D4",
    "> [[ -n x ]]; echo D5",
    "cat <<EOF [[ -n x ]]\nbody\nEOF",
    "((1))#c",
    "[[ -n a ]]#c",
]
_JOINERS = ["; ", "\n", " && ", " || "]
_WRAPPERS = ["{0}", "( {0} )", "{{ {0}; }}", "echo \"$( {0} )\"", "echo $( {0} )", "g() {{ {0}; }}; g"]


def _script(rng: random.Random) -> str:
    parts = [rng.choice(_PIECES) for _ in range(rng.randint(1, 4))]
    text = parts[0]
    for part in parts[1:]:
        joiner = rng.choice(_JOINERS)
        text = f"{text}{joiner if not text.endswith('EOF') else chr(10)}{part}"
    return rng.choice(_WRAPPERS).format(text) if "EOF" not in text else text


def _run(script: str, cwd: str) -> tuple[int, str]:
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    return done.returncode, done.stdout


def _value(text: str, cwd: str) -> str:
    rc, out = _run(f"echo {text}", cwd)
    assert rc == 0, text
    return out.strip()


def _replaced(script: str, spans, cwd: str) -> str | None:  # type: ignore[no-untyped-def]
    outer = [sp for sp in spans if not any(o.start <= sp.start and sp.end <= o.end and o != sp for o in spans)]
    out, last = [], 0
    for sp in outer:
        text = script[sp.start : sp.end]
        if sp.kind == ARITH:
            new = f"$(({_value(text, cwd)}))"
        else:  # a test: its truth, as bash decides it alone
            rc, _ = _run(text, cwd)
            if rc not in (0, 1):
                return None  # bash refuses it (as cond_tests does): nothing to compare
            new = " (true)" if rc == 0 else " (false)"  # (a blank: `$( (true))` is no arithmetic)
        out += [script[last : sp.start], new]
        last = sp.end
    return "".join(out) + script[last:]


def test_the_scanner_finds_the_spans_bash_evaluates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(20261202)
    seen = {ARITH: 0, COND: 0}
    for _ in range(300):
        script = _script(rng)
        spans = find_spans(script)
        if not isinstance(spans, list):
            continue  # refused (or not understood): the opaque reading keeps the plain rejection
        if any(isinstance(cond_tests(script, sp), J) for sp in spans if sp.kind == COND):
            continue  # a test the opaque reading refuses
        replaced = _replaced(script, spans, str(tmp_path))
        if replaced is None:
            continue
        for sp in spans:
            seen[sp.kind] = seen.get(sp.kind, 0) + 1
        assert _run(script, str(tmp_path)) == _run(replaced, str(tmp_path)), script
    assert seen[ARITH] > 50 and seen[COND] > 50, seen
