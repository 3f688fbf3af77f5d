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
