"""Everyday commands the validator must allow or ask about: (command,
"allow" | "ask", expected argv or None)."""

from __future__ import annotations

# --- everyday allows / asks ---------------------------------------------------

ACCEPTS: list[tuple[str, str, tuple[str, ...] | None]] = [
    # Tilde: the sandbox's home, written out; outside the workspace, so reads ask.
    ("ls ~", "ask", ("ls", "/tmp/home")),
    ("cat ~/.ssh/id_rsa", "ask", ("cat", "/tmp/home/.ssh/id_rsa")),
    # the sandbox's environment is known: written out at plan time
    ("echo ${HOME}", "allow", ("echo", "/tmp/home")),
    ("echo $HOME", "allow", ("echo", "/tmp/home")),
    ('echo "$HOME/x $LANG"', "allow", ("echo", "/tmp/home/x C.UTF-8")),
    # NAME=value for one command; `export NAME=value` for the later parts
    ("FOO=1 ls", "ask", ("ls",)),
    ("LANG=C sort x.txt", "allow", ("sort", "x.txt")),
    ("PYTHONWARNINGS=ignore::pkg.W ls", "ask", ("ls",)),  # Python imports the category's module
    ("PYTHONPATH=. python -m pytest -q", "ask", ("python", "-m", "pytest", "-q")),
    ("export FOO=1", "ask", ("export", "FOO=1")),
    ("~/bin/tool", "ask", ("/tmp/home/bin/tool",)),
    ("cat '~/x'", "allow", ("cat", "~/x")),
    ("ls", "allow", ("ls",)),
    ("ls -la src", "allow", ("ls", "-la", "src")),
    ("ls -la", "allow", None),
    ("  ls -la  ", "allow", ("ls", "-la")),
    ("ls -la\n", "allow", ("ls", "-la")),
    ("/usr/bin/ls -l", "allow", ("/usr/bin/ls", "-l")),
    ("/opt/tools/ls -l", "ask", None),
    ("cat README.md", "allow", ("cat", "README.md")),
    ("cat", "allow", ("cat",)),
    ("cat -n src/main.py", "allow", None),
    ("head -n 20 src/app.py", "allow", None),
    ("head -5 x", "allow", None),
    ("tail -n 50 log.txt", "allow", None),
    ("wc -l src/a.py src/b.py", "allow", None),
    ("pwd", "allow", ("pwd",)),
    ("echo 'a b' \"c\"", "allow", ("echo", "a b", "c")),
    ("echo hello world", "allow", ("echo", "hello", "world")),
    ("echo '$HOME' '`id`' '*'", "allow", ("echo", "$HOME", "`id`", "*")),
    ("echo \"it's\"", "allow", ("echo", "it's")),
    ("echo a'b'\"c\"d", "allow", ("echo", "abcd")),
    ("echo '' \"\"", "allow", ("echo", "", "")),
    ("echo \"a!b\"", "allow", ("echo", "a!b")),
    ("echo issue#12", "allow", ("echo", "issue#12")),
    ("stat -c '%s' x", "allow", None),
    ("file src/x.bin", "allow", None),
    ("du -sh src", "allow", None),
    ("df -h", "allow", None),
    ("tree -L 2 src", "allow", None),
    ("diff -u a.txt b.txt", "allow", None),
    ("cmp a b", "allow", None),
    ("which python3", "allow", None),
    ("type ls", "allow", ("type", "ls")),
    ("command -v python3", "allow", ("command", "-v", "python3")),
    ("uname -a", "allow", None),
    ("whoami", "allow", None),
    ("date", "allow", None),
    ("date +%Y-%m-%d", "allow", ("date", "+%Y-%m-%d")),
    ("basename src/a.py .py", "allow", None),
    ("dirname src/a.py", "allow", None),
    ("realpath src", "allow", None),
    ("grep -rn \"TODO\" src", "allow", ("grep", "-rn", "TODO", "src")),
    ("grep -rn 'foo.*bar' src", "allow", ("grep", "-rn", "foo.*bar", "src")),
    ("grep -rn --include='*.py' 'def main' .", "allow", ("grep", "-rn", "--include=*.py", "def main", ".")),
    ("egrep -i 'a|b' x", "allow", ("egrep", "-i", "a|b", "x")),
    ("rg -n 'fn main' src", "allow", ("rg", "-n", "fn main", "src")),
    ("rg --pre-glob '*.gz' foo", "allow", None),
    ("find . -name '*.py' -type f", "allow", ("find", ".", "-name", "*.py", "-type", "f")),
    ("find src -maxdepth 2 -newermt 2024-01-01 -print", "allow", None),
    ("find . '(' -name a -o -name b ')'", "allow", ("find", ".", "(", "-name", "a", "-o", "-name", "b", ")")),
    ("sort -n data.txt", "allow", None),
    ("sort -o out.txt data.txt", "ask", None),
    ("uniq -c data.txt", "allow", None),
    ("uniq in.txt out.txt", "ask", None),
    ("test -f setup.py", "allow", None),
    ("[ -d src ]", "allow", ("[", "-d", "src", "]")),
    ("printf '%s\\n' hi", "allow", ("printf", "%s\\n", "hi")),
    ("sed -n 's/foo/bar/p' x.txt", "allow", ("sed", "-n", "s/foo/bar/p", "x.txt")),
    ("sed -n '10,20p' x.txt", "allow", None),
    ("sed -i 's/foo/bar/g' x.txt", "ask", None),
    ("awk '{print $1}' data.txt", "allow", ("awk", "{print $1}", "data.txt")),
    ("awk -F: '$3 > 100 {print $1}' data.txt", "allow", None),
    ("awk -F: '{print $1}' /etc/passwd", "ask", None),
    ("cat /etc/passwd", "ask", None),
    ("cat ../other/secret.txt", "ask", None),
    ("ls ..", "ask", None),
    ("ls /", "ask", None),
    ("grep -rn --exclude-dir=../x foo src", "allow", None),  # a name pattern to skip, never opened
    ("grep -rn --exclude-from=../x foo src", "ask", None),  # a file of patterns, read
    ("git log --oneline main..HEAD", "allow", None),
    ("grep -rn '/api/v1' src", "allow", None),
    ("sed -n '/start/,/end/p' x.txt", "allow", None),
    ("sed --exp 's/a/b/' x.txt", "allow", None),
    ("sed '1r /etc/shadow' x.txt", "ask", None),
    ("awk 'BEGIN{getline l < \"/etc/shadow\"; print l}'", "ask", None),
    ("git cat-file -p HEAD", "allow", None),
    ("git fsck", "ask", None),
    ("git help log", "ask", None),
    ("awk -f prog.awk data", "ask", None),
    ("git status", "allow", ("git", "status")),
    ("git status --short", "allow", None),
    ("git diff --stat", "allow", ("git", "diff", "--stat")),
    ("git diff HEAD~1 -- src/app.py", "allow", ("git", "diff", "HEAD~1", "--", "src/app.py")),
    ("git diff --cached", "allow", None),
    ("git log --oneline -5", "allow", ("git", "log", "--oneline", "-5")),
    ("git log -n 3 --format='%h %s'", "allow", ("git", "log", "-n", "3", "--format=%h %s")),
    ("git log -p --follow src/x.py", "allow", None),
    ("git show HEAD", "allow", None),
    ("git show 'HEAD@{1}'", "allow", ("git", "show", "HEAD@{1}")),
    ("git branch", "allow", None),
    ("git branch -a", "allow", None),
    ("git branch --show-current", "allow", None),
    ("git rev-parse --abbrev-ref HEAD", "allow", None),
    ("git ls-files", "allow", None),
    ("git blame -L 10,20 src/x.py", "allow", None),
    ("git -C sub status", "allow", ("git", "-C", "sub", "status")),
    ("git -C /tmp/repo status", "ask", None),
    ("git --no-pager log -3", "allow", None),
    ("git stash list", "allow", None),
    ("git stash show -p", "allow", None),
    ("git stash push -m wip", "ask", None),
    ("od -c x.bin", "allow", None),
    ("git config --get user.name", "allow", None),
    ("git clean -n", "allow", None),
    ("curl https://example.com", "ask", None),  # a download asks (uploads reject; | sh rejects)
    ("curl -o x http://e", "ask", None),
    ("wget http://e", "ask", None),
    ("wget -q -O x.tgz http://e", "ask", None),
    ('python3 -Ic x', "ask", None),  # inline code asks like a script (was reject)
    ('python3 -cimport os', "ask", None),  # inline code asks like a script (was reject)
    ('python3.12 -c x', "ask", None),  # inline code asks like a script (was reject)
    ('pypy3 -c x', "ask", None),  # inline code asks like a script (was reject)
    ("perl -e 'system(1)'", "ask", None),  # inline code asks like a script (was reject)
    ("perl -E 'say 1'", "ask", None),  # inline code asks like a script (was reject)
    ("perl -ne 'print' f", "ask", None),  # inline code asks like a script (was reject)
    ("ruby -e 'puts 1'", "ask", None),  # inline code asks like a script (was reject)
    ("ruby -ne 'x' f", "ask", None),  # inline code asks like a script (was reject)
    ("node -e 'require(1)'", "ask", None),  # inline code asks like a script (was reject)
    ('node -p 1', "ask", None),  # inline code asks like a script (was reject)
    ('node -pe 1', "ask", None),  # inline code asks like a script (was reject)
    ('node --eval 1', "ask", None),  # inline code asks like a script (was reject)
    ('node --print=1', "ask", None),  # inline code asks like a script (was reject)
    ('bun -e 1', "ask", None),  # inline code asks like a script (was reject)
    ("php -r 'system(1);'", "ask", None),  # inline code asks like a script (was reject)
    ("python -c 'import os'", "ask", None),  # inline code asks like a script (was reject)
    ("python3 -c 'print(1)'", "ask", None),  # inline code asks like a script (was reject)
    ("python3 -W ignore -c 'x'", "ask", None),  # inline code asks like a script (was reject)
    ('python3 -Wignore -c x', "ask", None),  # inline code asks like a script (was reject)
    ('python3 -X importtime -c x', "ask", None),  # inline code asks like a script (was reject)
    ('/usr/bin/python3 -c x', "ask", None),  # inline code asks like a script (was reject)
    ('.venv/bin/python -c x', "ask", None),  # inline code asks like a script (was reject)
    ("perl -pi -e 's/a/b/' f", "ask", None),  # inline code asks like a script (was reject)
    ("perl '-Mstrict;system q(id);' x", "ask", None),  # inline code asks like a script (was reject)
    ("deno eval 'Deno.exit()'", "ask", None),  # inline code asks like a script (was reject)
    ("lua -e 'os.execute()'", "ask", None),  # inline code asks like a script (was reject)
    ("Rscript -e 'system(1)'", "ask", None),  # inline code asks like a script (was reject)
    ("find . -exec rm '{}' ';'", "ask", None),  # judged as its inner command (destructive ask)
    ("r\\m x", "ask", ("rm", "x")),  # an escaped character is literal, as in bash
    ('echo "a\\"b"', "allow", ("echo", 'a"b')),  # bash's backslash rules inside double quotes
    ("ls # comment", "allow", ("ls",)),  # comments are ignored, as bash does
    ("ls #", "allow", ("ls",)),
    ("git show HEAD@{1}", "allow", ("git", "show", "HEAD@{1}")),  # no comma: bash does not brace-expand
    # `{}` inside a word, with nothing after it in the word but plain characters, is literal to bash
    ("echo -I{} {}.bak x{}", "allow", ("echo", "-I{}", "{}.bak", "x{}")),
    ("ls src | xargs -I{} wc -l src/{}", "ask", None),
    ("echo '\u00e9 \u2713'", "allow", ("echo", "\u00e9 \u2713")),  # quoted Unicode is data
    ("cat docs/\u6570\u636e.md", "allow", ("cat", "docs/\u6570\u636e.md")),  # so are letters unquoted
    ("grep -rn caf\u00e9 src", "allow", ("grep", "-rn", "caf\u00e9", "src")),
    ('ls > out', "ask", None),  # compound commands, redirections, globs
    ('ls >> out', "ask", None),  # compound commands, redirections, globs
    ('ls 2>&1', "allow", None),  # compound commands, redirections, globs
    ('ls &> out', "ask", None),  # compound commands, redirections, globs
    ('ls >out', "ask", None),  # compound commands, redirections, globs
    ('echo hi 1>/dev/null', "allow", None),  # compound commands, redirections, globs
    ('ls; id', "allow", None),  # compound commands, redirections, globs
    ('ls ;', "allow", None),  # compound commands, redirections, globs
    ('ls && id', "allow", None),  # compound commands, redirections, globs
    ('ls || id', "allow", None),  # compound commands, redirections, globs
    ('cat x | grep y', "allow", None),  # compound commands, redirections, globs
    ('true;rm x', "ask", None),  # compound commands, redirections, globs
    ('ls\nid', "allow", None),  # compound commands, redirections, globs
    ('ls\n\nrm -rf x', "ask", None),  # compound commands, redirections, globs
    ('ls *.py', "allow", None),  # compound commands, redirections, globs
    ('cat ?', "allow", None),  # compound commands, redirections, globs
    ('ls [ab]', "allow", None),  # compound commands, redirections, globs
    ("echo 'a\nb'", "allow", None),  # compound commands, redirections, globs
    ("r'm' x", "ask", None),  # destructive ask (was reject)
    ('/bin/rm x', "ask", None),  # destructive ask (was reject)
    ('/usr/bin/rm -rf .', "ask", None),  # destructive ask (was reject)
    ('RM -rf x', "ask", None),  # destructive ask (was reject)
    ('rm x', "ask", None),  # destructive ask (was reject)
    ('unlink x', "ask", None),  # destructive ask (was reject)
    ('truncate -s 0 x', "ask", None),  # destructive ask (was reject)
    ('uv run rm -rf x', "ask", None),  # destructive ask (was reject)
    ("git clean -f", "ask", None),  # destructive ask (was reject)
    ("git clean -fdx", "ask", None),  # destructive ask (was reject)
    ("git --version", "allow", None),
    ("git diff --output=patch.txt", "ask", None),
    ("git diff --ext-diff", "ask", None),
    ("git branch new-feature", "ask", None),
    ("git branch -D old", "ask", None),
    ("git add src/app.py", "ask", ("git", "add", "src/app.py")),
    ("git add -A", "ask", None),
    ("git commit -m 'fix: thing'", "ask", ("git", "commit", "-m", "fix: thing")),
    ("git checkout -b feature", "ask", None),
    ("git switch main", "ask", None),
    ("git stash", "ask", None),
    ("git stash pop", "ask", None),
    ("git reset --hard HEAD~1", "ask", None),
    ("git merge --no-edit main", "ask", None),
    ("git fetch origin", "ask", None),
    ("git pull --rebase", "ask", None),
    ("git push -u origin main", "ask", None),
    ("git clone https://github.com/a/b.git", "ask", None),
    ("git config user.name 'A B'", "ask", None),
    ("pytest -q", "ask", ("pytest", "-q")),
    ("pytest tests/test_x.py -k 'a and not b'", "ask", ("pytest", "tests/test_x.py", "-k", "a and not b")),
    ("python -m pytest tests/test_x.py", "ask", ("python", "-m", "pytest", "tests/test_x.py")),
    ("python3 -m pytest -x -q", "ask", None),
    (".venv/bin/python -m pytest -q", "ask", None),
    (".venv/bin/pytest -q", "ask", None),
    ("python script.py --flag value", "ask", ("python", "script.py", "--flag", "value")),
    ("python3 -u prog.py", "ask", None),
    ("python3 prog.py -c x", "ask", None),
    ("python3 -m pip install -e .", "ask", None),
    ("python --version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("python3 -V", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("node --version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("node server.js", "ask", None),
    ("go version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("go test ./...", "ask", ("go", "test", "./...")),
    ("go build ./cmd/app", "ask", None),
    ("cargo --version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("cargo build", "ask", ("cargo", "build")),
    ("cargo test --release", "ask", None),
    ("rustc --version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("npm test", "ask", ("npm", "test")),
    ("npm run build", "ask", None),
    ("npm install", "ask", None),
    ("yarn test", "ask", None),
    ("make", "ask", ("make",)),
    ("make -j4 test", "ask", None),
    ("make --version", "allow", None),
    ("mkdir -p build/out", "ask", None),
    ("touch x.txt", "ask", None),
    ("cp a.txt b.txt", "ask", None),
    ("mv a.txt b.txt", "ask", None),
    ("rmdir build", "ask", None),
    ("chmod +x run.sh", "ask", None),
    ("chmod -R u+w build", "ask", None),
    ("pip install requests", "ask", None),
    ("pip --version", "ask", None),  # the repository may select the toolchain (allow only with workspace facts)
    ("uv run pytest -q", "ask", None),
    ("tar -czf out.tar.gz src", "ask", None),
    ("tar -tf x.tar", "ask", None),
    ("unzip -l a.zip", "allow", None),  # a listing mode only reads the archive (rules/builds.py)
    ("./run_tests.sh", "ask", ("./run_tests.sh",)),
    ("./run_tests.sh -v", "ask", None),
    ("scripts/build.py --release", "ask", None),
    ("./test.sh", "ask", None),
    ("bash scripts/build.sh", "ask", ("bash", "scripts/build.sh")),
    ("sh ./configure", "ask", None),
    ("some-unknown-tool --flag", "ask", None),
    ("sleep 1", "allow", None),
    ("ls --weird-option", "ask", None),
    ("head --follow x", "ask", None),
    ("tree -o out.txt", "ask", None),
    ("find . -name x -newer y -frobnicate", "ask", None),
]


# Opaque commands (what the plain subset cannot prove): `ask` with
# opaque=True, the construct named in the reason. Before opaque commands ran
# as captured scripts these were rejections (subshells, groups, functions,
# substitutions, variables); each inner command is still judged (REJECTS has
# the ones whose inner command rejects the whole).
OPAQUE: list[tuple[str, str]] = [
    ("echo $((1+1))", "$((...))"),
    ('echo "$((1+1))"', "$((...))"),
    ("[[ -f a ]] && cat a", "[[ ]]"),
    ('f() { local x="$1"; read -r -p "$x" y; getopts ab opt "$@"; wait "$x"; }', "function"),
    ('echo $(id)', '$(...)'),
    ('echo `id`', '$(...)'),
    ('echo "`id`"', '$(...)'),
    ('cat $0', '$0'),
    ('cat <(ls)', '<(...)'),
    ('diff <(ls a) <(ls b)', '<(...)'),
    ('(ls)', 'subshell'),
    ('( ls )', 'subshell'),
    ('{ ls; }', 'group'),
    ('f() { ls; }', 'function'),
    ('f () { ls; }', 'function'),
    ('function f { ls; }', 'function'),
    ("for f in *.py; do wc -l \"$f\"; done", "for loop"),
    ("if [ -f setup.py ]; then python setup.py --version; fi", "if"),
    ("while read l; do echo \"$l\"; done < notes.txt", "while loop"),
    ("until test -f x; do sleep 1; done", "until loop"),
    ("ls | while read f; do echo \"== $f\"; done", "while loop"),
    ("COMMON=$(git rev-parse --git-common-dir) && ls -la \"$COMMON/hooks\"", "$(...)"),
    ("echo $SESSION_ID", "$SESSION_ID"),
    ("a=1 && echo $a", "variable assignment"),
    ("echo {a,b}", "brace expansion"),
    # builtins that keep a script's own state: the plain plan has no shell
    # between its parts, the same text run as a script means what it says
    ("set -e", "`set`"),
    ("set -euo pipefail\nls | wc -l", "`set`"),
    ("set -o pipefail && pytest -q | tail -n 5", "`set`"),
    ("shopt -s extglob", "`shopt`"),
    ("shopt -s globstar; ls **/*.py", "`shopt`"),
    ("read x", "`read`"),
    ("read -r first < notes.txt && echo \"$first\"", "`read`"),
    ("read -rp PATH -d , -t 5 -n 3 -u 0 answer < notes.txt", "`read`"),  # option values are no variables
    ("mapfile x", "`mapfile`"),
    ("declare -a x", "`declare`"),
    ("typeset x", "`typeset`"),
    ("local x", "`local`"),
    ("readonly x", "`readonly`"),
    ("exit 1", "`exit`"),
    ("pytest -q || exit 1", "`exit`"),
    ("wait", "`wait`"),
    (": > build.log", "`:`"),
    ("echo {1..3}", "brace expansion"),
    ("cat <<EOF\nhi $USER\nEOF", "here-document with variables"),
    ("cat <<EOF > notes.rst\n:doc:`index`\nEOF", "here-document with substitutions"),
    ("for d in */; do (cd \"$d\" && git status --short); done", "subshell"),
]
