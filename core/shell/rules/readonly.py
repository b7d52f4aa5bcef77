"""Read-only tools (ls, cat, grep, find, ...): allowed with known options. Pure."""

from __future__ import annotations

import re

from core.shell.options import Opts, generic_allow, long_hit, opts, scan, short_hit
from core.shell.rules.per_item import find_delete, find_exec
from core.shell.programs import Handler, family
from core.shell.stdin_names import family_names_from
from core.shell.verdict import RANK, ask_writes, H_SYSTEM, J, allow, ask, rej


READONLY_OPTS: dict[str, Opts] = {
    "ls": opts(
        "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1", "ITw",
        "all almost-all author escape ignore-backups classify file-type full-time "
        "group-directories-first no-group human-readable si dereference-command-line "
        "dereference-command-line-symlink-to-dir hyperlink inode kibibytes literal numeric-uid-gid "
        "quote-name reverse recursive size context zero color dereference directory indicator-style "
        "quoting-style sort time time-style format width tabsize block-size hide ignore",
        "block-size hide ignore indicator-style quoting-style sort time time-style format width tabsize",
        data="I T w block-size hide ignore indicator-style quoting-style sort time time-style format width tabsize",
    ),
    "cat": opts(
        "AbeEnstTuv", "",
        "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting",
    ),
    "head": opts("qvz", "cn", "quiet silent verbose zero-terminated", "bytes lines", numeric=True,
                 data="c n bytes lines"),
    "tail": opts(
        "qvz", "cns", "quiet silent verbose zero-terminated retry",
        "bytes lines sleep-interval pid max-unchanged-stats", numeric=True,
        data="c n s bytes lines sleep-interval pid max-unchanged-stats",
    ),
    "wc": opts("clmwL", "", "bytes chars lines words max-line-length total zero-terminated", "files0-from"),
    "pwd": opts("LP", "", "logical physical"),
    "stat": opts("LftZ", "c", "dereference file-system terse cached", "format printf", data="c format printf"),
    "file": opts(
        "bcdEhiklLNnrsS0v", "mefFP",
        "brief checking-printout debug dereference no-dereference mime mime-type mime-encoding "
        "keep-going list no-pad no-buffer raw special-files extension apple print0",
        "separator exclude exclude-quiet files-from magic-file parameter",
        data="e F P separator exclude exclude-quiet parameter",
    ),
    "du": opts(
        "0abcDhHklLmsSxP", "BdtX",
        "null all apparent-size bytes total dereference-args human-readable inodes dereference "
        "count-links no-dereference separate-dirs si summarize one-file-system time",
        "block-size max-depth threshold exclude-from exclude files0-from time-style",
        data="B d t block-size max-depth threshold exclude time-style",
    ),
    "df": opts(
        "ahHiklPTv", "Btx",
        "all human-readable inodes local no-sync portability print-type sync total si output",
        "block-size type exclude-type",
        data="B t x block-size type exclude-type",
    ),
    "tree": opts(
        "adlfxpugshDFqNQrtcvUnCASiJX", "LPIHT",
        "gitignore noreport prune dirsfirst filesfirst du si inodes device fromfile matchdirs "
        "ignore-case metafirst info",
        "filelimit timefmt sort charset gitfile infofile hintro houtro",
        data="L P I H T filelimit timefmt sort charset",
    ),
    "diff": opts(
        "abBcdeEfinNpqrstTuwyZ", "DFIxXSW",
        "normal brief report-identical-files context unified ed rcs side-by-side expand-tabs "
        "initial-tab suppress-common-lines show-c-function new-file unidirectional-new-file "
        "ignore-case ignore-file-name-case no-ignore-file-name-case ignore-tab-expansion "
        "ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines text "
        "strip-trailing-cr recursive minimal speed-large-files color no-dereference left-column "
        "suppress-blank-empty",
        "width show-function-line label exclude exclude-from starting-file from-file to-file "
        "horizon-lines palette ignore-matching-lines line-format old-line-format new-line-format "
        "unchanged-line-format old-group-format new-group-format changed-group-format "
        "unchanged-group-format tabsize ifdef",
        short_opt="CU",
        data="D F I x W width show-function-line label exclude horizon-lines palette ignore-matching-lines "
        "line-format old-line-format new-line-format unchanged-line-format old-group-format new-group-format "
        "changed-group-format unchanged-group-format tabsize ifdef",
    ),
    "cmp": opts("bls", "in", "print-bytes verbose quiet silent", "ignore-initial bytes",
                data="i n ignore-initial bytes"),
    "which": opts("as", "", "all skip-dot skip-tilde show-dot show-tilde"),
    "uname": opts(
        "asnrvmpio", "",
        "all kernel-name nodename kernel-release kernel-version machine processor "
        "hardware-platform operating-system",
    ),
    "whoami": opts(),
    "id": opts("agGnruzZ", "", "context group groups name real user zero"),
    "groups": opts(),
    "nproc": opts("", "", "all", "ignore"),
    "arch": opts(),
    "true": opts(),
    "false": opts(),
    "basename": opts("az", "s", "multiple zero", "suffix"),
    "dirname": opts("z", "", "zero"),
    "realpath": opts(
        "eLmPqsz", "",
        "canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero",
        "relative-to relative-base",
    ),
    "readlink": opts(
        "efmnqsvz", "",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
    ),
    "grep": opts(
        "abcEFGhHiIlLnoPqrRsTUvVwxyzZ", "ABCdDefm",
        "basic-regexp extended-regexp fixed-strings perl-regexp ignore-case no-ignore-case "
        "word-regexp line-regexp null-data no-messages invert-match byte-offset line-number "
        "line-buffered with-filename no-filename only-matching quiet silent text recursive "
        "dereference-recursive files-without-match files-with-matches count initial-tab null "
        "color colour binary",
        "after-context before-context context regexp file max-count label binary-files directories "
        "devices include exclude exclude-from exclude-dir",
        numeric=True,
        data="A B C d D e m after-context before-context context regexp max-count label binary-files "
        "directories devices include exclude exclude-dir",
    ),
    "rg": opts(
        "iSswxvnNlcuFoLUPaHIbpqhVz0.", "ABCegtTfjmMrEd",
        "hidden no-ignore files files-with-matches files-without-match count count-matches follow "
        "json vimgrep heading no-heading column no-column line-number no-line-number smart-case "
        "ignore-case case-sensitive fixed-strings word-regexp line-regexp invert-match multiline "
        "multiline-dotall pcre2 only-matching passthru passthrough stats trim null no-messages quiet "
        "no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global no-ignore-exclude "
        "no-ignore-files no-ignore-messages text binary crlf debug trace no-config "
        "with-filename no-filename byte-offset unrestricted one-file-system "
        "glob-case-insensitive no-unicode pretty mmap no-mmap unicode no-require-git line-buffered "
        "block-buffered type-list no-pcre2-unicode auto-hybrid-regex max-columns-preview "
        "no-crlf no-multiline no-text no-binary no-follow no-hidden sort-files files0 "
        "include-zero no-include-zero invert-match no-invert-match no-stats no-trim null-data "
        "search-zip no-search-zip no-context-separator no-pre",
        "after-context before-context context regexp glob iglob type type-not type-add type-clear "
        "file max-count max-depth maxdepth max-filesize threads color colors encoding engine replace "
        "sort sortr path-separator max-columns ignore-file field-match-separator "
        "field-context-separator context-separator dfa-size-limit regex-size-limit pre-glob "
        "generate",
        data="A B C e g t T j m M r E d after-context before-context context regexp glob iglob type type-not "
        "type-add type-clear max-count max-depth maxdepth max-filesize threads color colors encoding engine "
        "replace sort sortr path-separator max-columns field-match-separator field-context-separator "
        "context-separator dfa-size-limit regex-size-limit pre-glob generate",
    ),
    "sort": opts(
        "bdfgiMhnRrVcCsuzm", "kotTS",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
        "month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check merge "
        "stable unique zero-terminated debug parallel batch-size random-source sort",
        "key field-separator buffer-size temporary-directory files0-from output",
        data="k t S key field-separator buffer-size",
    ),
    "uniq": opts("cdDiuz", "fsw", "count repeated all-repeated ignore-case unique zero-terminated group",
               "skip-fields skip-chars check-chars", data="f s w skip-fields skip-chars check-chars"),
    "date": opts("uR", "dfrI", "utc universal rfc-2822 rfc-email debug iso-8601 rfc-3339 resolution",
               "date file reference", data="d date"),
    "cut": opts("nszw", "bcdf", "complement only-delimited zero-terminated",
              "bytes characters delimiter fields output-delimiter",
              data="b c d f bytes characters delimiter fields output-delimiter"),
    "sha256sum": opts("bctwz", "", "binary check tag text zero ignore-missing quiet status strict warn"),
    "printenv": opts("0", "", "null"),
    # -w and --width / --strings take an optional attached value only (-w32, --width=32)
    "od": opts("bcdfilosvx", "AjNtS", "output-duplicates traditional endian width strings",
             "address-radix skip-bytes read-bytes format", short_opt="w",
             data="A j N t S address-radix skip-bytes read-bytes format"),
    "hexdump": opts("bcCdovx", "efns", data="e n s"),
    "strings": opts("afw", "nteTo", "all print-file-name include-all-whitespace",
                  "bytes radix encoding target output-separator unicode",
                  data="n t e T bytes radix encoding target output-separator unicode"),
    "tac": opts("br", "s", "before regex", "separator", data="s separator"),
    "rev": opts(),
    "nl": opts("p", "bdfhilnsvw",
             "no-renumber", "body-numbering section-delimiter footer-numbering header-numbering "
             "line-increment join-blank-lines number-format number-separator starting-line-number "
             "number-width",
             data="b d f h i l n s v w body-numbering section-delimiter footer-numbering header-numbering "
             "line-increment join-blank-lines number-format number-separator starting-line-number number-width"),
    "tr": opts("cCdst", "", "complement delete squeeze-repeats truncate-set1"),
    "paste": opts("sz", "d", "serial zero-terminated", "delimiters", data="d delimiters"),
    "column": opts(
        "tdeLJx", "nONlEHRTWripcos",
        "table table-noheadings table-header-repeat keep-empty-lines json fillrows",
        "table-name table-order table-columns table-columns-limit table-noextreme table-hide table-right "
        "table-truncate table-wrap tree tree-id tree-parent output-width output-separator separator",
        data="n O N l E H R T W r i p c o s table-name table-order table-columns table-columns-limit "
        "table-noextreme table-hide table-right table-truncate table-wrap tree tree-id tree-parent output-width "
        "output-separator separator",
    ),
    # Text and number filters of coreutils: they print what they read; none
    # writes a file or runs a program.
    "seq": opts("w", "fs", "equal-width", "format separator", numeric=True, data="f s format separator"),
    "expr": opts(),
    "numfmt": opts("z", "d", "debug grouping header zero-terminated",
                   "from from-unit to to-unit padding round suffix format invalid field delimiter",
                   data="d from from-unit to to-unit padding round suffix format invalid field delimiter"),
    "comm": opts("123z", "", "check-order nocheck-order total zero-terminated", "output-delimiter",
                 data="output-delimiter"),
    "join": opts("iz", "aejotv12", "ignore-case check-order nocheck-order header zero-terminated",
                 data="a e j o t v 1 2"),
    "fold": opts("bs", "w", "bytes spaces", "width", numeric=True, data="w width"),
    "fmt": opts("cstu", "pwg", "crown-margin split-only tagged-paragraph uniform-spacing", "prefix width goal",
                numeric=True, data="p w g prefix width goal"),
    "expand": opts("i", "t", "initial", "tabs", data="t tabs"),
    "unexpand": opts("a", "t", "all first-only", "tabs", data="t tabs"),
    "base64": opts("di", "w", "decode ignore-garbage", "wrap", data="w wrap"),
    "basenc": opts("di", "w", "base64 base64url base32 base32hex base16 base2msbf base2lsbf z85 decode "
                   "ignore-garbage", "wrap", data="w wrap"),
    # Not -o/--output (writes). A code set name with a `/` is a charmap file
    # iconv reads, so -f/-t values are checked as paths.
    "iconv": opts("cls", "ft", "list silent verbose", "from-code to-code"),
}
READONLY_OPTS["base32"] = READONLY_OPTS["base64"]
READONLY_OPTS.update(
    dict.fromkeys(("md5sum", "sha1sum", "sha224sum", "sha384sum", "sha512sum", "b2sum"), READONLY_OPTS["sha256sum"])
)
READONLY_OPTS.update(dict.fromkeys(("egrep", "fgrep"), READONLY_OPTS["grep"]))

_READONLY_WHAT = "only reads (read-only list)"


# Programs built on libiberty, which replaces every `@FILE` word (even after
# `--`) with the words in FILE before parsing: options and paths nobody saw,
# and an error quotes them (`strings @/etc/passwd`).
_RESPONSE_FILES = frozenset(["strings"])


def _h_readonly(name: str, args: list[str]) -> J:
    fam = family(name.lower())
    if fam in _RESPONSE_FILES:
        for a in args:
            if a.startswith("@") and len(a) > 1:
                return ask(f"`{name} {a}` reads more arguments from the file `{a[1:]}`, which were not inspected")
    return _names_from_file(name, args, fam) or generic_allow(name, args, READONLY_OPTS[fam], _READONLY_WHAT)


def _names_from_file(name: str, args: list[str], fam: str | None = None) -> J | None:
    source = family_names_from(fam or family(name.lower()), args)
    if source in (None, "-"):  # `-`: stdin, judged with the pipeline (core.shell.compound)
        return None
    return ask(f"`{name}` reads the names of the files to open from `{source}`, which may name files "
               "outside the workspace")


def _h_echo(name: str, args: list[str]) -> J:
    return allow(f"`{name}` only prints its arguments")


def _h_printf(name: str, args: list[str]) -> J:
    if args and (args[0] == "-v" or args[0].startswith("-v")):
        return rej(
            "`printf -v` assigns a shell variable (and evaluates array subscripts)",
            "print the value instead (`printf '%s' VALUE`); variables do not persist between calls",
        )
    return allow(f"`{name}` only prints its arguments")


def _h_test(name: str, args: list[str]) -> J:
    for a in args:
        if a in ("-v", "-R"):
            return rej(
                f"`{name} {a}` tests shell variables and evaluates array subscripts (code hidden in words)",
                "there are no shell variables here; test files directly (e.g. `test -f path`)",
            )
    if name == "[" and (not args or args[-1] != "]"):
        return ask("`[` without a closing `]`")
    return allow(f"`{name}` only checks a condition")


def _h_cat(name: str, args: list[str]) -> J:
    # No file: reads stdin, which the executor connects to /dev/null -> ends at once.
    return generic_allow(name, args, READONLY_OPTS["cat"], _READONLY_WHAT)


def _h_tail(name: str, args: list[str]) -> J:
    for a in args:
        if (
            long_hit(a, ("follow",))
            or short_hit(a, "fF", "cns")
            or (a[:1] in "-+" and a[1:2].isdigit() and a.rstrip("bcl").endswith("f"))
        ):
            return rej(
                f"`tail {a}` follows the file and never ends",
                "read the end once with `tail -n 100 FILE`, or use the read_file tool with an offset",
            )
    return _h_readonly(name, args)


def _h_sort(name: str, args: list[str]) -> J:
    for a in args:
        if long_hit(a, ("compress-program",)):
            return rej(
                "`sort --compress-program` runs another program",
                "drop --compress-program",
            )
    for a in args:
        if long_hit(a, ("output",)) or short_hit(a, "o", "ktTS"):
            return ask_writes("`sort -o` writes a file")
    return _h_readonly(name, args)


def _h_uniq(name: str, args: list[str]) -> J:
    bad, pos = scan(args, READONLY_OPTS["uniq"])
    if bad is None and len(pos) > 1:
        return ask("`uniq INPUT OUTPUT` writes the output file")
    return _h_readonly(name, args)


def _h_date(name: str, args: list[str]) -> J:
    for a in args:
        if long_hit(a, ("set",)) or short_hit(a, "s", "dfrI"):
            return rej("`date -s/--set` changes the system clock", H_SYSTEM)
    bad, pos = scan(args, READONLY_OPTS["date"])
    if bad is None and any(not p.startswith("+") for p in pos):
        return ask("`date` with an argument that is not a +FORMAT may set the clock")
    return _h_readonly(name, args)


def _h_rg(name: str, args: list[str]) -> J:
    for a in args:
        hit = long_hit(a, ("pre", "hostname-bin"))
        if hit:
            return rej(f"`rg --{hit}` runs another program", "drop the option; rg can search plain files itself")
    for a in args:
        if long_hit(a, ("search-zip",)) or short_hit(a, "z", "ABCegtTfjmMrEd"):
            return ask("`rg --search-zip` runs decompression programs")
    return _h_readonly(name, args)


_FIND_REJECT = frozenset("-delete -fprint -fprint0 -fprintf -fls".split())
_FIND_FLAGS = frozenset(
    "-print -print0 -ls -prune -quit -true -false -empty -readable -writable -executable -nouser "
    "-nogroup -depth -mount -xdev -noleaf -daystart -follow -ignore_readdir_race "
    "-noignore_readdir_race -not -a -o -and -or ! ( ) , -L -H -P -warn -nowarn -O0 -O1 -O2 -O3".split()
)
_FIND_ARG = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -lname -ilname "
    "-type -xtype -maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -size -newer -anewer "
    "-cnewer -perm -user -group -uid -gid -links -inum -samefile -fstype -used -printf "
    "-files0-from -D -context".split()
)
_FIND_NEWERXY = re.compile(r"-newer[aBcmt][aBcmt]")


def _h_find(name: str, args: list[str]) -> J:
    listed = _names_from_file(name, args)
    if listed is not None and "-delete" in args:  # it would delete the files a list names, wherever they are
        return rej(f"`find -files0-from ... -delete` deletes the files a list names; {listed.reason.split(' from ', 1)[-1]}",
                   "name the folders to clean on the command line")
    if listed is not None:
        return listed
    inner = find_exec(args)
    if inner is not None and inner.verdict == "reject":
        return inner
    own = _find_predicates(_without_exec(args))
    if inner is None or RANK[own.verdict] > RANK[inner.verdict]:
        return own
    return inner


def _without_exec(args: list[str]) -> list[str]:
    out, skipping = [], False
    for a in args:
        if skipping:
            skipping = a not in (";", "+")
        elif a in ("-exec", "-execdir"):
            skipping = True
        else:
            out.append(a)
    return out


def _find_predicates(args: list[str]) -> J:
    for a in args:
        if a in _FIND_REJECT:
            if a == "-delete":
                return find_delete(args)
            if a.startswith("-f"):
                return rej(f"`find {a}` writes a file", "let find print to its output (`-print`), which is returned to you")
            return rej(
                f"`find {a}` runs another program for each file",
                "run find alone to list the files, then act on them in separate bash calls "
                "(or use the glob / grep tools)",
            )
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a in _FIND_ARG or _FIND_NEWERXY.fullmatch(a):
            i += 1
        elif a in _FIND_FLAGS or not a.startswith("-"):
            continue
        else:
            return ask(f"`find` with `{a}`, which is not on the known read-only predicate list")
    return allow("`find` only lists files")

# xxd: a hex dump of one file; a second file is the one it *writes*, and -r
# turns a dump back into bytes. Its options are single-dash words matched by
# prefix and stop at the first operand (`xxd f -l 8` has three operands).
# Value options take the next word when written bare or by their long name
# (`-c 8`, `-cols 8`) and an attached number otherwise (`-c8`, `-s+16`); any
# other spelling asks rather than guess where its value ends.
_XXD_VALUES = {"c": "cols", "g": "groupsize", "l": "len", "o": "offset", "s": "seek", "n": "name"}
_XXD_FLAGS = frozenset(
    "-a -autoskip -b -bits -C -capitalize -d -E -EBCDIC -e -h -help -i -include -p -ps -postscript -plain "
    "-u -uppercase -v -version".split()
)
_XXD_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)")


def _xxd_operands(args: list[str]) -> list[str] | str:
    """xxd's operands, or why its options cannot be told apart safely."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1:]
        if a[:1] != "-" or a == "-":
            return args[i:]
        word = a[1:] if a.startswith("--") else a  # xxd reads `--len` as `-len`
        letter, rest = word[1:2], word[2:]
        if word.startswith("-r"):
            return "`-r` turns a hex dump back into bytes and writes them"
        if word in _XXD_FLAGS:
            i += 1
        elif letter in _XXD_VALUES and (rest == "" or word == "-" + _XXD_VALUES[letter]):
            i += 2
        elif letter in _XXD_VALUES and (_XXD_NUMBER.fullmatch(rest) or (letter == "n" and rest.isidentifier()
                                                                        and not rest.startswith("a"))):
            i += 1
        else:
            return f"option `{a}`, which is not on the known read-only option list"
    return []


def _h_xxd(name: str, args: list[str]) -> J:
    operands = _xxd_operands(args)
    if isinstance(operands, str):
        return ask(f"`{name}` with {operands}")
    if len(operands) > 1:
        return ask(f"`{name}` writes its dump into its second file `{operands[1]}`")
    return allow(f"`{name}` only prints a hex dump")


def _xxd_paths(args: list[str]) -> list[str]:
    operands = _xxd_operands(args)
    return [p for p in operands if p != "-"] if isinstance(operands, list) else []


HANDLERS: dict[str, Handler] = dict.fromkeys(READONLY_OPTS, _h_readonly)
OPTION_SPECS: dict[str, Opts] = dict(READONLY_OPTS)
HANDLERS.update({
    "echo": _h_echo, "printf": _h_printf, "test": _h_test, "[": _h_test, "cat": _h_cat, "tail": _h_tail,
    "sort": _h_sort, "uniq": _h_uniq, "date": _h_date, "rg": _h_rg, "find": _h_find, "xxd": _h_xxd,
})
PATH_FINDERS = {"xxd": _xxd_paths}

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("ls -la src", "allow", "read-only"),
    ("rg --files /etc", "ask", "outside the workspace"),
    ("rg --files src /etc", "ask", "outside the workspace"),
    ("rg --files src", "allow", None),
    ("rg --type-list", "allow", None),
    ("cat -n src/main.py", "allow", None),
    ("grep -rn --include='*.py' 'def main' .", "allow", None),
    ("rg --pre sh foo", "reject", "runs another program"),
    ("rg -z foo", "ask", "decompression"),
    ("find . -name '*.py' -type f", "allow", "lists files"),
    ("find . -delete", "ask+destructive", "deletes"),
    ("find . -newer x -frobnicate", "ask", "-frobnicate"),
    ("tail -5f log.txt", "reject", "never ends"),
    ("tail -n 5 log.txt", "allow", None),
    ("sort -o out.txt data.txt", "ask", "writes a file"),
    ("sort --compress-program=sh x", "reject", "another program"),
    ("uniq in.txt out.txt", "ask", "writes"),
    ("date -s 2020-01-01", "reject", "system clock"),
    ("date 0101", "ask", "set the clock"),
    ("printf -vx y", "reject", "shell variable"),
    ("test -v x", "reject", "shell variables"),
    ("[ -d src", "ask", "closing"),
    ("ls --weird-option", "ask", "--weird-option"),
    ("strings @/etc/passwd", "ask", "arguments from"),  # reads the file's words as arguments (and errors show them)
    ("strings -n 3 -- @args.txt", "ask", "arguments from"),
    ("strings -n 3 lib.so", "allow", None),
    ("seq 1 10", "allow", None),
    ("seq -w -s , 1 2 20", "allow", None),
    ("expr 1 + 2", "allow", None),
    ("numfmt --to=iec --header=1 1048576", "allow", None),
    ("du -b src | numfmt --to=iec -d /", "allow", None),  # a delimiter, not a file
    ("comm -12 a.txt b.txt", "allow", None),
    ("comm -3 a.txt /etc/passwd", "ask", "outside the workspace"),
    ("join -t , -1 2 -2 1 a.csv b.csv", "allow", None),
    ("fold -w 80 README.md", "allow", None),
    ("fmt -72 notes.txt", "allow", None),
    ("expand -t 4 src/main.go", "allow", None),
    ("base64 -d encoded.txt", "allow", None),
    ("echo aGVsbG8= | base64 -d", "allow", None),
    ("base64 /etc/hostname", "ask", "outside the workspace"),
    ("basenc --base16 -d hex.txt", "allow", None),
    ("iconv -f utf-8 -t ascii//TRANSLIT notes.txt", "allow", None),
    ("iconv -f /etc/x.charmap -t utf-8 notes.txt", "ask", "outside the workspace"),  # a charmap file
    ("iconv -f latin1 -t utf-8 -o out.txt in.txt", "ask", "-o"),
    ("iconv -f latin1 -t utf-8 --output=out.txt in.txt", "ask", "--output"),
    ("xxd build/app.bin | head -20", "allow", "hex dump"),
    ("xxd -l 64 -c 16 -g 1 data.bin", "allow", None),
    ("xxd -s -32 -cols 8 data.bin", "allow", None),
    ("xxd -c8 -s+16 -l0x40 data.bin", "allow", None),
    ("xxd -i -n blob data.bin", "allow", None),
    ("xxd -ps data.bin", "allow", None),
    ("xxd /etc/hostname", "ask", "outside the workspace"),
    ("xxd -l 8 /etc/hostname", "ask", "outside the workspace"),
    ("xxd data.bin out.hex", "ask", "writes"),
    ("xxd -l 8 data.bin .git/hooks/pre-commit", "ask", "writes"),
    ("xxd -cx data.bin out.hex", "ask", "-cx"),  # xxd reads -cx as cols=x and writes out.hex
    ("xxd -colsx 8 data.bin", "ask", "-colsx"),  # a long name xxd matches by prefix: not guessed
    ("xxd data.bin -l 8", "ask", "writes"),  # options stop at the first file: -l is the output file
    ("xxd -r dump.hex data.bin", "ask", "-r"),
    ("xxd -revert -p dump.hex", "ask", "-r"),
    ("xxd --len 8 data.bin", "allow", None),
    ("xxd -- -weird.bin", "allow", None),
]
