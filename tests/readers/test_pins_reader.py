"""Reading pins with exact spans from every format; nothing executed, bad input never crashes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rlhf_lint.engine.config import Config
from rlhf_lint.readers.pins import (PinDocument, parse_dockerfile_source, parse_pyproject_source, parse_requirements_source,
                            parse_setup_cfg_source, pins_of)
from rlhf_lint.frameworks.versions import pinned_version
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.model import ParseError
from rlhf_lint.readers.source import Source


def src(path, text, kind):
    s = Source.from_text(path, text, kind=kind)
    parse_source(s)
    return s


def spans(source, doc):
    return [(p.name, source.text[p.span.start:p.span.end], p.version,
             source.text[p.version_span.start:p.version_span.end] if p.version_span else None) for p in doc.pins]


def test_requirements_lines():
    text = ("# top\n"
            "torch==2.5.1 ; platform_machine != 'aarch64'  # cuda 12.4\n"
            "Flash_Attn == 2.7.0.post2 \\\n"
            "    --hash=sha256:abc\n"
            "deepspeed>=0.15,<0.16\n"
            "-r base.txt\n"
            "--constraint=constraints.txt\n"
            "--extra-index-url https://download.pytorch.org/whl/cu124\n"
            "-e git+https://github.com/OpenRLHF/OpenRLHF.git@v0.5.4#egg=openrlhf\n"
            "vllm @ https://example.org/vllm-0.6.5-cp38-abi3-manylinux1_x86_64.whl\n"
            "openrlhf[vllm]===0.9.5\r\n")
    s = src("requirements.txt", text, "requirements")
    assert spans(s, s.tree) == [
        ("torch", "torch==2.5.1 ; platform_machine != 'aarch64'", "2.5.1", "2.5.1"),
        ("flash-attn", "Flash_Attn == 2.7.0.post2", "2.7.0.post2", "2.7.0.post2"),
        ("deepspeed", "deepspeed>=0.15,<0.16", None, None),
        ("openrlhf", "git+https://github.com/OpenRLHF/OpenRLHF.git@v0.5.4#egg=openrlhf", None, None),
        ("vllm", "vllm @ https://example.org/vllm-0.6.5-cp38-abi3-manylinux1_x86_64.whl", "0.6.5", None),
        ("openrlhf", "openrlhf[vllm]===0.9.5", "0.9.5", "0.9.5"),
    ]
    assert [(i.option, i.target) for i in s.tree.includes] == [("-r", "base.txt"), ("-c", "constraints.txt")]
    assert s.tree.pins[-1].extras == ("vllm",)


def test_invalid_requirement_is_a_parse_error_at_its_line():
    s = Source.from_text("requirements.txt", "torch==2.1\ntransformers==>4.3\n", kind="requirements")
    with pytest.raises(ParseError) as err:
        parse_requirements_source(s)
    assert err.value.offset == 11


def test_pyproject_arrays():
    text = ('[build-system]\nrequires = ["setuptools>=61"]\n\n[project]\nname = "x"\n'
            'dependencies = [\n  "torch==2.4.0",  # cu121\n  \'vllm==0.6.3\',\n]\n\n'
            '[project.optional-dependencies]\ntrain = ["deepspeed==0.15.0", "peft"]\n'
            '[tool.other]\ndependencies = ["not-a-pin==1"]\n')
    s = src("pyproject.toml", text, "pyproject_toml")
    assert [(p.name, p.version, p.group) for p in s.tree.pins] == [
        ("setuptools", None, "pyproject.toml:build"), ("torch", "2.4.0", "pyproject.toml"),
        ("vllm", "0.6.3", "pyproject.toml"), ("deepspeed", "0.15.0", "pyproject.toml[train]"),
        ("peft", None, "pyproject.toml[train]")]
    vllm = s.tree.pins[2]
    assert s.text[vllm.version_span.start:vllm.version_span.end] == "0.6.3"


def test_pyproject_uv_overrides_and_constraints():
    text = ('[project]\nname = "x"\ndependencies = ["vllm==0.26.0"]\n'
            '[tool.uv]\noverride-dependencies = [\n  "flashinfer-python==0.6.13; sys_platform == \'linux\'",\n]\n'
            'constraint-dependencies = ["torch==2.11.0"]\n[tool.uv.sources]\ndependencies = ["not-a-pin==1"]\n')
    s = src("pyproject.toml", text, "pyproject_toml")
    assert [(p.name, p.group, p.constraint, p.override) for p in s.tree.pins] == [
        ("vllm", "pyproject.toml", False, False),
        ("flashinfer-python", "pyproject.toml:tool.uv", True, True),
        ("torch", "pyproject.toml:tool.uv", True, False)]
    flashinfer = s.tree.pins[1]
    assert s.text[flashinfer.version_span.start:flashinfer.version_span.end] == "0.6.13"


def test_pyproject_invalid_toml():
    s = Source.from_text("pyproject.toml", "[project]\nname = \n", kind="pyproject_toml")
    with pytest.raises(ParseError) as err:
        parse_pyproject_source(s)
    assert err.value.message.startswith("invalid TOML")


def test_setup_cfg():
    text = "[metadata]\nname = x\n[options]\ninstall_requires =\n    torch==2.1.2\n    # comment\n    ray>=2.9\n" \
           "[options.extras_require]\nvllm = vllm==0.4.2\n"
    s = src("setup.cfg", text, "setup_cfg")
    assert spans(s, s.tree) == [("torch", "torch==2.1.2", "2.1.2", "2.1.2"), ("ray", "ray>=2.9", None, None),
                                ("vllm", "vllm==0.4.2", "0.4.2", "0.4.2")]
    assert s.tree.pins[2].group == "setup.cfg[vllm]"


def test_setup_py_read_not_run():
    text = ('import os\nos.system("rm -rf /")  # never executed\nfrom setuptools import setup\n'
            'REQS = ["deepspeed==0.14.4", "transformers==4.42.4"]\n'
            'setup(name="x", install_requires=REQS, extras_require={"vllm": ["vllm==0.4.2"]})\n')
    s = src("setup.py", text, "python")
    doc = pins_of(s)
    assert spans(s, doc) == [("deepspeed", "deepspeed==0.14.4", "0.14.4", "0.14.4"),
                             ("transformers", "transformers==4.42.4", "4.42.4", "4.42.4"),
                             ("vllm", "vllm==0.4.2", "0.4.2", "0.4.2")]
    assert doc.pins[2].group == "setup.py[vllm]"


def test_setup_py_positions_literals_and_includes():
    # a non-ASCII character before a pin (ast columns are UTF-8 bytes), triple quotes, an escaped literal (skipped:
    # its offsets would not line up), a nested call, a requirements include and extras from a top-level name
    text = ('from setuptools import setup\n'
            'EXTRAS = {"vllm": [\'vllm==0.4.2\']}\n'
            'setup(name="\u00e9t\u00e9", install_requires=["torch==2.3.1", """ray==2.9.0""", "a\\x3d=1"],\n'
            '      extras_require=EXTRAS, package_data=dict(x=read("requirements.txt")))\n'
            'setup(install_requires=read("requirements-dev.txt"))\n')
    s = src("setup.py", text, "python")
    doc = pins_of(s)
    assert [(p.name, s.text[p.span.start:p.span.end], p.group) for p in doc.pins] == [
        ("torch", "torch==2.3.1", "setup.py"), ("ray", "ray==2.9.0", "setup.py"),
        ("vllm", "vllm==0.4.2", "setup.py[vllm]")]
    assert [(i.target, s.text[i.span.start:i.span.end]) for i in doc.includes] == [
        ("requirements-dev.txt", '"requirements-dev.txt"')]


def test_setup_py_lone_carriage_returns_give_no_wrong_span():
    # CPython ends lines at a lone CR, the position table does not: the literal check drops what would not line up
    s = src("setup.py", 'from setuptools import setup\rsetup(install_requires=["torch==2.3.1"])\r', "python")
    assert all(s.text[p.span.start:p.span.end] == "torch==2.3.1" for p in pins_of(s).pins)


def test_environment_yml():
    text = ("name: rl\nchannels: [pytorch]\ndependencies:\n  - python=3.10\n  - pytorch=2.1.2\n"
            "  - pip:\n    - 'deepspeed==0.12.6'\n    - -r requirements.txt\n")
    s = src("environment.yml", text, "yaml")
    # conda's fuzzy `python=3.10` is not a version the checks compare; `pytorch=2.1.2` is torch 2.1.2
    assert spans(s, pins_of(s)) == [("torch", "pytorch=2.1.2", "2.1.2", "2.1.2"),
                                    ("deepspeed", "deepspeed==0.12.6", "0.12.6", "0.12.6")]


def test_dockerfile_pip_commands():
    text = ("FROM base AS build\nRUN pip install -i https://mirror/simple torch==2.5.1 \\\n"
            "    \"vllm==0.6.5\" && echo 'pip install nope==1'\n"
            "# RUN pip install commented==1\n"
            "FROM runtime\nRUN python3 -m pip install --no-deps deepspeed==${DS_VERSION} ray[default]==2.40.0\n")
    s = src("Dockerfile", text, "dockerfile")
    # each pip command resolves on its own; a stage is the environment its commands install into in turn
    assert [(p.name, p.version, p.group, p.env) for p in s.tree.pins] == [
        ("torch", "2.5.1", "Dockerfile@23", "Dockerfile#stage1"), ("vllm", "0.6.5", "Dockerfile@23", "Dockerfile#stage1"),
        ("ray", "2.40.0", "Dockerfile@171", "Dockerfile#stage2")]
    vllm = s.tree.pins[1]
    assert s.text[vllm.span.start:vllm.span.end] == "vllm==0.6.5"
    assert text[23:34] == "pip install" and text[171:193] == "python3 -m pip install"


def test_pip_command_includes_belong_to_their_command():
    text = ("FROM x\nRUN pip install -r requirements.txt torch==2.5.1 && pip install -c c.txt --requirement=b.txt "
            "-rd.txt \\\n    --constraint \"$C\" && pip install vllm==0.6.5\n")
    s = src("Dockerfile", text, "dockerfile")
    assert [(i.option, i.target, text[i.span.start:i.span.end], i.group, i.env) for i in s.tree.includes] == [
        ("-r", "requirements.txt", "requirements.txt", "Dockerfile@11", "Dockerfile#stage1"),
        ("-c", "c.txt", "c.txt", "Dockerfile@59", "Dockerfile#stage1"),
        ("-r", "b.txt", "b.txt", "Dockerfile@59", "Dockerfile#stage1"),
        ("-r", "d.txt", "d.txt", "Dockerfile@59", "Dockerfile#stage1")]
    assert [(p.name, p.group) for p in s.tree.pins] == [("torch", "Dockerfile@11"), ("vllm", "Dockerfile@135")]
    script = src("setup.sh", "pip install -r requirements.txt\n", "shell")
    assert [(i.target, i.group, i.env) for i in pins_of(script).includes] == [
        ("requirements.txt", "setup.sh@0", "")]


def test_shell_script_pip_lines():
    text = "#!/bin/bash\n# pip install old==1\npip install transformers==4.46.3; python train.py\n"
    s = src("setup_env.sh", text, "shell")
    assert [(p.name, p.version) for p in pins_of(s).pins] == [("transformers", "4.46.3")]


def test_pinned_version_direct_and_implied():
    req = src("requirements.txt", "openrlhf[vllm]==0.8.11\ndeepspeed==0.17.6\n", "requirements")
    project = Project([req], Config())
    version, setting = pinned_version(project, "openrlhf")
    assert version == "0.8.11" and setting.key == "pin.openrlhf" and req.text[setting.span.start:setting.span.end] == "0.8.11"
    version, setting = pinned_version(project, "torch")
    assert version == "2.8.0" and setting.origin == "implied: openrlhf 0.8.11 [vllm] requires vllm==0.10.2, which requires torch==2.8.0"
    assert pinned_version(project, "trl") is None


LINES = st.lists(st.sampled_from([
    "torch==2.1.2", "vllm==0.7.2", "-r other.txt", "# c", "", "deepspeed>=0.1", "x @ https://a/b.whl", "\\", " --hash=x",
    "pip install", "==", "[", "\"", "'", "&&", "FROM x", "RUN pip install a==1 \\", "dependencies = [", "]", "-e .",
    "transformers==4.38.1; python_version<'3'", "\r",
]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(LINES)
def test_readers_never_crash(lines):
    text = "\n".join(lines)
    for path, kind, parse in (("requirements.txt", "requirements", parse_requirements_source),
                              ("pyproject.toml", "pyproject_toml", parse_pyproject_source),
                              ("setup.cfg", "setup_cfg", parse_setup_cfg_source),
                              ("Dockerfile", "dockerfile", parse_dockerfile_source)):
        s = Source.from_text(path, text, kind=kind)
        try:
            doc = parse(s)
        except ParseError:
            continue
        assert isinstance(doc, PinDocument)
        for pin in doc.pins:
            assert 0 <= pin.span.start <= pin.span.end <= len(text)
    pins_of(Source.from_text("x.sh", text, kind="shell"))
