"""P rules beyond the fixture snapshots (tests/rules/test_rule_snapshots.py): messages, and repositories written inline."""
from __future__ import annotations

import os
import shutil

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import Options, lint

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pins")


def run_case(name, tmp_path, fix=False):
    work = tmp_path / name
    shutil.copytree(os.path.join(FIXTURES, name), work)
    config = Config(root=str(work))
    result = lint([str(work)], config, Options(fix=fix, unsafe_fixes=fix, select=["P"]))
    found = [(d.code, os.path.relpath(d.path, work), d.start.line, d.start.column, d.severity.label)
             for d in result.diagnostics]
    return work, result, found


def test_conflict_message_names_both_ends(tmp_path):
    _, result, _ = run_case("P001_bad", tmp_path)
    (diag,) = result.diagnostics
    assert diag.message == "torch==2.6.0 cannot be installed with vllm==0.7.2: vllm 0.7.2 requires torch==2.5.1"
    assert [(os.path.basename(r.path), r.span.start) for r in diag.related] == [("requirements.txt", 0)]
    assert diag.fix.applicability.value == "unsafe"


def test_framework_whose_own_pins_contradict(tmp_path):
    _, result, _ = run_case("P001_self", tmp_path)
    (diag,) = result.diagnostics
    assert diag.message.startswith("openrlhf[vllm]==0.9.5 cannot be installed: its own requirements contradict")
    assert "transformers==5.3.0" in diag.message and "transformers<5,>=4.56.0" in diag.message


def test_constraints_file_pins_take_part(tmp_path):
    _, result, _ = run_case("P001_include", tmp_path)
    (diag,) = result.diagnostics
    assert diag.message == "torch==2.5.1 cannot be installed with vllm==0.8.5: vllm 0.8.5 requires torch==2.6.0"
    assert os.path.basename(diag.related[0].path) == "requirements.txt"


def test_known_bad_names_what_works_and_why_it_applies(tmp_path):
    _, result, _ = run_case("P002_bad", tmp_path)
    error = next(d for d in result.diagnostics if d.severity.label == "error")
    assert "4.38.2 with DeepSpeed 0.13.2" in error.message
    _, result, _ = run_case("P002_offload_bad", tmp_path)
    (diag,) = result.diagnostics
    assert "Applies because ZeRO stage 3 is used (ds_config.json:4)" in diag.message  # not the offload: #7116
    assert os.path.basename(diag.related[0].path) == "ds_config.json"


def test_unpinned_hint_names_a_pin_elsewhere(tmp_path):
    work = tmp_path / "repo"
    work.mkdir()
    (work / "requirements.txt").write_text("deepspeed\n")
    (work / "Dockerfile").write_text("FROM x\nRUN pip install deepspeed==0.15.0\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P003"]))
    (diag,) = result.diagnostics
    assert diag.message.endswith("the repository pins 0.15.0 in Dockerfile:2")


def test_library_without_training_context_is_quiet(tmp_path):
    work = tmp_path / "lib"
    work.mkdir()
    (work / "requirements.txt").write_text("torch\nnumpy\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P"]))
    assert result.diagnostics == []


def test_setup_py_reading_requirements_file_joins_its_extras(tmp_path):
    work = tmp_path / "fw"
    work.mkdir()
    (work / "requirements.txt").write_text("transformers==5.3.0\n")
    (work / "setup.py").write_text(
        "from setuptools import setup\n\ndef _fetch_requirements(path):\n    return open(path).read().splitlines()\n\n"
        "setup(name='fw', install_requires=_fetch_requirements('requirements.txt'),\n"
        "      extras_require={'vllm': ['vllm==0.17.0']})\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P001"]))
    (diag,) = result.diagnostics
    assert os.path.basename(diag.path) == "requirements.txt" and diag.start.line == 1
    assert diag.message == ("transformers==5.3.0 cannot be installed with vllm==0.17.0: vllm 0.17.0 requires "
                            "transformers<5,>=4.56.0")
    (related,) = diag.related
    assert os.path.basename(related.path) == "setup.py"


def test_flash_attn_built_from_source_or_for_its_torch_is_quiet(tmp_path):
    work = tmp_path / "img"
    work.mkdir()
    (work / "Dockerfile").write_text(
        "FROM x\nRUN pip install vllm==0.17.0\n"
        "RUN pip install https://example.org/flash_attn-2.8.3+cu130torch2.10-cp312-cp312-linux_x86_64.whl\n"
        "RUN pip install flash-attn==2.8.3 --no-build-isolation\n"
        "FROM y\nRUN pip install vllm==0.17.0 "
        "https://example.org/flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp312-cp312-linux_x86_64.whl\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P004"]))
    (diag,) = result.diagnostics
    assert diag.start.line == 6
    assert diag.message.startswith("this flash-attn wheel (2.8.3+cu12torch2.8cxx11abifalse) was built for torch 2.8;")


def test_separate_pip_commands_warn_and_one_command_errs(tmp_path):
    _, result, found = run_case("P001_docker_layers_bad", tmp_path)
    assert [(line, severity) for _, _, line, _, severity in found] == [
        (4, "warning"), (7, "error"), (11, "warning"), (15, "warning")]
    warning = result.diagnostics[0]
    assert warning.fix is None and warning.message.endswith("pip installs it anyway, with a resolver warning")
    assert [(os.path.basename(r.path), r.message) for r in warning.related] == [
        ("Dockerfile", "vllm 0.9.2 requires ray!=2.44.*,>=2.43.0")]


def test_flash_attn_wheel_is_judged_against_the_torch_an_earlier_command_installed(tmp_path):
    work = tmp_path / "img"
    work.mkdir()
    (work / "Dockerfile").write_text("FROM x\nRUN pip install torch==2.6.0\nRUN pip install flash-attn==2.7.0.post2\n"
                                     "FROM y\nRUN pip install torch==2.6.0\nRUN pip install torch==2.5.1\n"
                                     "RUN pip install flash-attn==2.7.0.post2\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P004"]))
    (diag,) = result.diagnostics  # the second stage replaced its torch 2.6.0 with 2.5.1, which has wheels
    assert diag.start.line == 3 and "torch 2.6.0 (pinned at Dockerfile:2)" in diag.message


def test_requirements_file_of_a_pip_command_is_reported_once(tmp_path):
    work = tmp_path / "repo"
    work.mkdir()
    (work / "requirements.txt").write_text("vllm==0.7.2\ntorch==2.6.0\n")
    (work / "setup.sh").write_text("pip install -r requirements.txt\n")
    result = lint([str(work)], Config(root=str(work)), Options(select=["P001"]))
    (diag,) = result.diagnostics
    assert os.path.basename(diag.path) == "requirements.txt" and diag.start.line == 2


def test_a_zero2_fact_does_not_apply_to_zero1_nor_a_zero3_fact_to_zero2_offload(tmp_path):
    # DeepSpeed #7718 is a ZeRO-2 gradient bug; #6726/#7116 a ZeRO-3 memory bug (the field report had optimizer
    # offload under ZeRO-2)
    for name in ("P002_zero1_good", "P002_zero2_offload_good"):
        _, result, _ = run_case(name, tmp_path / name)
        assert [d.code for d in result.diagnostics] == [], name
