"""The fast entry (no click import) must read a command line exactly as click's ``check`` does, or decline."""
import pytest

from rlhf_lint.cli.app import check, main
from rlhf_lint.cli.entry import DEFAULTS, SUBCOMMANDS, parse_check_args


def click_params(argv):
    ctx = check.make_context("check", list(argv))
    params = dict(ctx.params)
    return tuple(params.pop("paths")), params


@pytest.mark.parametrize("argv", [
    [],
    ["train.sh"],
    ["check", "a.sh", "b.json"],
    ["--fix", "train.sh", "--unsafe-fixes", "--diff", "--show-fixes", "-q", "--debug", "--no-cache"],
    ["--select", "D,S", "--select=M", "--ignore", "F100", "--extend-select", "P1", "--exclude", "legacy/*", "x"],
    ["--format", "json", "--fail-on=error", "--gpu", "A100-80GB", "--gpu-memory", "80GiB", "--gpus-per-node", "8",
     "--host-memory", "512GB", "--container-memory=500GiB", "--nodes", "2", "--world-size", "16",
     "--openrlhf-version", "v0.9.5", "--deepspeed-version", "0.15.4", "-o", "report.txt", "dir/"],
    ["--config", "rlhf-lint.toml", "--output=out.sarif", "--format=sarif", "a b.sh"],
    ["--unsafe-fixes", "train.sh"],  # fix stays False: --unsafe-fixes alone must write nothing
    ["--diff", "--unsafe-fixes", "--select", "ZZZ", "--config", "missing.toml", "."],  # run_check refuses these
    ["--force-exclude", "--no-respect-gitignore", "--statistics", "--exit-zero", "--add-noqa", "a.sh"],
    ["--output-format", "github", "--baseline", ".rlhf-lint-baseline.json", "--write-baseline", "."],
    ["--output-format=json", "--stdin-filename", "x.json", "--format", "sarif", "y.sh"],
])
def test_fast_parser_agrees_with_click(argv):
    fast = parse_check_args(argv)
    assert fast is not None, argv
    expected = click_params(argv[1:] if argv[:1] == ["check"] else argv)
    assert fast == expected
    if argv[:1] == ["--unsafe-fixes"]:
        assert fast[1]["fix"] is False and fast[1]["unsafe_fixes"] is True


@pytest.mark.parametrize("argv", [
    ["--help"], ["-h"], ["--version"], ["rules"], ["rule", "F003"], ["--format", "yaml", "x"], ["--nodes", "two"],
    ["--bogus", "x"], ["--fix=yes", "x"], ["--select"], ["--", "-weird.sh"], ["-qx"], ["-"], [""],
    ["--config", "."],
])
def test_fast_parser_declines_what_click_must_decide(argv):
    assert parse_check_args(argv) is None


def test_defaults_and_subcommands_match_the_click_application():
    assert click_params([])[1] == DEFAULTS
    assert set(main.list_commands(None)) <= SUBCOMMANDS
