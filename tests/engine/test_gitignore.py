""".gitignore read statically (rlhf_lint.engine.gitignore): the answers git check-ignore gives for the same tree."""
import pytest

from rlhf_lint.engine.gitignore import GitIgnore, parse

from lintutil import run_lint


@pytest.fixture
def tree(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.sh\n")
    (tmp_path / ".gitignore").write_text(
        "# build output\nbuild/\n*.log\n!keep.log\n/top.sh\nsub/**/gen_*.json\nspaced\\ \n\\#hash.sh\n")
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / ".gitignore").write_text("*.yaml\n!ok.yaml\nlocal/\n")
    return tmp_path


# (path, is a folder, ignored): what `git check-ignore --no-index` answers for this tree
CASES = [
    ("build", True, True),
    ("build/x/a.sh", False, True),  # inside an ignored folder
    ("docs/build/a.sh", False, True),  # unanchored folder pattern, at any depth
    ("build", False, False),  # "build/" names folders only
    ("a.log", False, True),
    ("sub/keep.log", False, False),  # negated
    ("top.sh", False, True),
    ("sub/top.sh", False, False),  # anchored to the root
    ("sub/deep/gen_a.json", False, True),  # "**/" zero or more folders
    ("sub/gen_a.json", False, True),
    ("gen_a.json", False, False),
    ("sub/a.yaml", False, True),  # nested .gitignore, relative to its folder
    ("sub/ok.yaml", False, False),
    ("a.yaml", False, False),
    ("sub/local/x.sh", False, True),
    ("secret.sh", False, True),  # .git/info/exclude
    ("sub/secret.sh", False, True),
    ("spaced ", False, True),  # escaped trailing space
    ("#hash.sh", False, True),  # escaped '#'
]


@pytest.mark.parametrize("path,is_dir,ignored", CASES)
def test_answers_as_git_does(tree, path, is_dir, ignored):
    assert GitIgnore().ignored(str(tree / path), is_dir) is ignored


def test_outside_a_git_work_tree_nothing_is_ignored(tmp_path):
    (tmp_path / ".gitignore").write_text("*.sh\n")
    assert GitIgnore().ignored(str(tmp_path / "a.sh")) is False


def test_comments_blank_lines_and_bracket_classes():
    patterns = parse("\n# comment\n[abc].sh\nfile[!0-9].json\n")
    assert [p.regex.match(x) is not None for p, x in zip(patterns, ["b.sh", "filex.json"])] == [True, True]
    assert patterns[1].regex.match("file1.json") is None


def test_discovery_skips_gitignored_folders_and_files(tree):
    (tree / "build").mkdir()
    (tree / "build" / "ds_config.json").write_text("{,}\n")
    (tree / "a.json").write_text("{,}\n")
    (tree / "sub" / "a.yaml").write_text("a: [\n")
    result = run_lint([tree])
    assert {d.path.rsplit("/", 1)[-1] for d in result.diagnostics} == {"a.json"}


# (pattern, names it matches among NAMES): what `git check-ignore --no-index` (git 2.39) answers for one file of
# each name; git's wildmatch reads brackets this way, and gives up on a malformed pattern (it matches nothing)
NAMES = ["z", "b", "a", "m", "]", "x", "foo", "a]", "c", "-"]
BRACKETS = [
    ("[z-a]", {"z"}),  # a reversed range adds no character; the `z` before it still counts
    ("[z-ab]", {"z", "b"}),
    ("[!z-a]", {"b", "a", "m", "]", "x", "c", "-"}),
    ("[]a]", {"a", "]"}),  # a `]` first is a member
    ("[ab", set()),  # unclosed
    ("[[:alpha:]]", {"z", "b", "a", "m", "x", "c"}),
    ("[[:bogus:]]", set()),  # unknown class
    ("fo\\", set()),  # trailing backslash
    ("x//", set()),  # one trailing slash is removed, as git does
    ("//x", set()),
    ("[:b:]", {"b"}),  # no class outside brackets: a plain bracket
    ("[!]", set()),
    ("[a-]", {"a", "-"}),
    ("[-c]", {"c", "-"}),
]


@pytest.mark.parametrize("pattern,matched", BRACKETS)
def test_brackets_and_malformed_patterns_as_git_reads_them(pattern, matched):
    patterns = parse(pattern + "\n")
    assert {name for name in NAMES if any(p.regex.match(name) for p in patterns)} == matched


def test_a_reversed_range_is_no_internal_error_and_the_files_are_checked(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("[z-a]\n")
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "bogus": 1}\n')
    result = run_lint([tmp_path])
    assert [d.code for d in result.diagnostics] == ["D002"]


GLOBS = [  # (glob, path, matches)
    ("**/**/**/b", "b", True),
    ("**/**/**/b", "x/y/b", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "ab", False),
    ("x/**/y*z", "x/y1/yz", True),  # the first `y` is not where `y*z` matches: the match is found further on
    ("**/a/**/b*c", "a/a/bc/a/bxc", True),
    ("*a*b", "xaxbxab", True),
    ("*a*b", "xaxbx", False),
    ("*a*b", "a/b", False),  # `*` stays in one folder
    ("a/**", "a/x/y", True),
    ("a/**", "a", False),
    ("**", "x/y", True),
]


@pytest.mark.parametrize("glob,path,matches", GLOBS)
def test_wildcards(glob, path, matches):
    (pattern,) = parse(glob + "\n")
    assert (pattern.regex.match(path) is not None) is matches


# globs that took minutes or years as one backtracking regex; each must answer at once
HOSTILE = [
    ("*a" * 10 + "*b", "a" * 60 + ".json"),
    ("*a" * 60 + "*b", "a" * 5000),
    ("**/" * 100 + "b", "a/" * 300 + "c"),
    ("**/a/" * 30 + "b", "a/" * 300 + "c"),
    ("**/a*/" * 30 + "b", "ab/" * 300 + "c"),
    ("?*" * 60 + "b", "a" * 3000),
    ("**/" + "*/" * 40 + "b", "a/" * 500 + "c"),
]


def test_hostile_globs_match_in_linear_time():
    """In a child process with a timeout, so that a regression fails rather than hangs the suite."""
    import subprocess
    import sys

    program = ("import sys, time\nfrom rlhf_lint.engine.gitignore import parse\n"
               f"for glob, path in {HOSTILE!r}:\n"
               "    (p,) = parse(glob + '\\n')\n"
               "    t = time.perf_counter()\n"
               "    assert p.regex.match(path) is None\n"
               "    assert time.perf_counter() - t < 0.5, glob\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_same_answers_as_git_on_random_globs(tmp_path):
    """Random globs over a small tree, against `git check-ignore` itself (skipped without git)."""
    import random
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True, timeout=30)
    rng = random.Random(7)
    names = ["a", "b", "ab", "ba", "z", "a]", "-", "x.y", "[a]", "A", "a:b", "!a"]
    files = {"/".join(rng.choice(names) for _ in range(rng.randint(1, 4))) for _ in range(60)}
    files = sorted(f for f in files if not any(g.startswith(f + "/") for g in files))
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).touch()
    pieces = ["a", "b", "*", "**", "?", "/", "[", "]", "!", "-", "z", ":", "[:alpha:]", "[z-a]", "[a-b]", "[!a]",
              "**/", "/**", "x.y", "A"]
    differ = []
    for _ in range(150):
        glob = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        literal = glob.split("*", 1)[0]
        if "/" in glob[:-1] and glob.startswith("**", len(literal)) and literal and not literal.endswith("/") and \
                not any(c in literal for c in "?[\\"):
            continue  # git reads `X**/` after a literal prefix X as `X` + `**/` (a quirk of its prefix match)
        (tmp_path / ".gitignore").write_text(glob + "\n")
        got = subprocess.run([git, "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin"], input="\n".join(files),
                             capture_output=True, text=True, timeout=30)
        by_git = set(got.stdout.splitlines())
        ours = GitIgnore()
        mine = {f for f in files if ours.ignored(str(tmp_path / f))}
        if mine != by_git:
            differ.append((glob, sorted(mine ^ by_git)[:3]))
    assert differ == []
