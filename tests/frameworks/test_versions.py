"""Install sets (lint/frameworks/versions.py): what one install resolves, what a Dockerfile stage ends up with, and
uv's override and constraint settings."""
from __future__ import annotations

from rlhf_lint.engine.config import Config
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.frameworks.versions import breaks, constraints, install_sets, pinned_version, resolutions
from rlhf_lint.readers.source import Source


def project(*files):
    sources = []
    for path, kind, text in files:
        s = Source.from_text(path, text, kind=kind)
        parse_source(s)
        sources.append(s)
    return Project(sources, Config())


def test_each_pip_command_resolves_alone_and_a_later_pin_replaces_an_earlier_one():
    p = project(("Dockerfile", "dockerfile",
                 "FROM x\nRUN pip install torch==2.4.0\nRUN pip install torch==2.5.1 && pip install ray==2.40.0\n"))
    assert [[pin.text for pin in s.pins] for s in resolutions(p)] == [["torch==2.4.0"], ["torch==2.5.1"],
                                                                      ["ray==2.40.0"]]
    (stage,) = install_sets(p)
    assert [pin.text for pin in stage.pins] == ["torch==2.5.1", "ray==2.40.0"]
    version, setting = pinned_version(p, "torch")
    assert version == "2.5.1" and setting.origin == "pinned in Dockerfile"
    assert p.sources["Dockerfile"].position(setting.span.start).line == 3


def test_a_later_requirement_the_installed_version_satisfies_keeps_it():
    # "Requirement already satisfied": pip keeps torch 2.4.0
    p = project(("Dockerfile", "dockerfile", "FROM x\nRUN pip install torch==2.4.0\nRUN pip install 'torch>=2.0' peft\n"))
    (stage,) = install_sets(p)
    assert [pin.text for pin in stage.pins] == ["torch==2.4.0", "torch>=2.0", "peft"]
    assert pinned_version(p, "torch")[0] == "2.4.0"


def test_a_later_framework_pin_reinstalls_what_it_requires():
    # pip downgrades torch to the one vllm 0.7.2 requires: the stage ends with that torch, and nothing is broken
    p = project(("Dockerfile", "dockerfile", "FROM x\nRUN pip install torch==2.6.0\nRUN pip install vllm==0.7.2\n"))
    (stage,) = install_sets(p)
    assert [pin.text for pin in stage.pins] == ["vllm==0.7.2"]
    version, setting = pinned_version(p, "torch")
    assert version == "2.5.1" and setting.origin == "implied: vllm 0.7.2 requires torch==2.5.1"
    assert breaks(p) == []


def test_a_later_pin_that_breaks_an_earlier_requirement_is_a_break_once():
    p = project(("Dockerfile", "dockerfile", "FROM x\nRUN pip install vllm==0.7.2\nRUN pip install torch==2.6.0\n"
                                             "RUN pip install torch==2.6.1\n"))
    (b,) = breaks(p)
    assert (b.package, b.earlier.why(), b.later.text) == ("torch", "vllm 0.7.2 requires torch==2.5.1", "torch==2.6.0")


def test_stages_and_scripts_do_not_layer():
    p = project(("Dockerfile", "dockerfile", "FROM x\nRUN pip install vllm==0.7.2\nFROM y\nRUN pip install torch==2.6.0\n"),
                ("setup.sh", "shell", "pip install vllm==0.7.2\npip install torch==2.6.0\n"))
    assert breaks(p) == []
    assert len(install_sets(p)) == 4


def test_uv_override_replaces_every_requirement_on_its_package():
    p = project(("pyproject.toml", "pyproject_toml",
                 '[project]\nname = "x"\ndependencies = ["vllm==0.26.0", "flashinfer-python==0.6.12", "torch"]\n'
                 '[project.optional-dependencies]\nserve = ["ray"]\n'
                 '[tool.uv]\noverride-dependencies = ["flashinfer-python==0.6.13", "torch; sys_platform == \'never\'",'
                 ' "ray==2.40.0; extra == \'serve\'"]\n'))
    base, serve = install_sets(p)
    cons = constraints(base)
    assert [c.text for c in cons["flashinfer-python"]] == ["flashinfer-python==0.6.13"]
    assert "torch" not in cons  # its override never applies: nothing requires torch any more
    assert "ray" not in cons and [c.text for c in constraints(serve)["ray"]] == ["ray==2.40.0"]


def test_uv_constraints_add_to_every_set_but_the_build():
    p = project(("pyproject.toml", "pyproject_toml",
                 '[build-system]\nrequires = ["setuptools"]\n[project]\nname = "x"\ndependencies = ["vllm==0.7.2"]\n'
                 '[dependency-groups]\ndev = ["pytest"]\n'
                 '[tool.uv]\nconstraint-dependencies = ["torch==2.6.0"]\n'))
    by_id = {s.id: [pin.text for pin in s.pins] for s in install_sets(p)}
    assert by_id == {"pyproject.toml:build": ["setuptools"], "pyproject.toml": ["vllm==0.7.2", "torch==2.6.0"],
                     "pyproject.toml:dev": ["pytest", "torch==2.6.0"]}
    cons = constraints(next(s for s in install_sets(p) if s.id == "pyproject.toml"))
    assert sorted(c.text for c in cons["torch"]) == ["torch==2.5.1", "torch==2.6.0"]  # additive: they conflict
