from pathlib import Path

import pytest

from lintutil import ROOT, fix_copy, run, triples
from rlhf_lint.engine.config import Config
from rlhf_lint.model import UNKNOWN
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.readers.source import Source

FIXTURES = Path(ROOT) / "tests" / "fixtures" / "orz"


def test_bad_playground_reports_each_start_up_error():
    result = run([FIXTURES / "Z002_playground_bad.py"], ["Z"])
    assert triples(result) == [
        ("Z003", 12, 7),   # micro_forward_batch_size inherited (32): reported at the class name
        ("Z010", 12, 7),   # colocate_all with actor_num_gpus_per_node = 2 (ORZ asks 1)
        ("Z004", 16, 38),
        ("Z002", 19, 28),  # only the DEBUG_MODE=False branch is too small
        ("Z003", 20, 35),
        ("Z005", 22, 35),
        ("Z006", 24, 59),  # ORZ issue #6: the DEBUG_MODE branch is dead while use_grpo is True
    ]
    by_code = {d.code: d.message for d in result.diagnostics}
    assert "(with DEBUG_MODE=False)" in by_code["Z002"]
    assert "10048" in by_code["Z002"]
    assert "the test `use_grpo` is always True" in by_code["Z006"]


def test_fixes_edit_only_the_wrong_branch_and_keep_everything_else(tmp_path):
    original = (FIXTURES / "Z002_playground_bad.py").read_text(encoding="utf-8")
    fixed, result = fix_copy(FIXTURES / "Z002_playground_bad.py", tmp_path, ["Z"])
    expected = original.replace("packing_max_len: int = 8192 if", "packing_max_len: int = 10048 if").replace(
        "micro_train_batch_size: int = 2", "micro_train_batch_size: int = 1")
    assert fixed == expected
    compile(fixed, "fixed.py", "exec")
    assert [d.code for d in result.diagnostics] == ["Z003", "Z010", "Z004", "Z005", "Z006"]
    # a second run changes nothing
    (tmp_path / "again").mkdir()
    again, _ = fix_copy(tmp_path / "Z002_playground_bad.py", tmp_path / "again", ["Z"])
    assert again == fixed


def _project(tmp_path, files: dict[str, str]):
    sources = []
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        kind = "python" if rel.endswith(".py") else "shell"
        s = Source.from_text(str(p), text, kind)
        parse_source(s)
        sources.append(s)
    return Project(sources, Config(root=str(tmp_path))), sources


def test_jobs_carry_settings_with_spans_per_scenario(tmp_path):
    project, (src,) = _project(tmp_path, {"playground/orz_x.py": (FIXTURES / "Z002_playground_good.py").read_text()})
    jobs = project.jobs
    assert [j.name for j in jobs] == ["orz_x.py:PPOExpConfig [DEBUG_MODE=False]",
                                      "orz_x.py:PPOExpConfig [DEBUG_MODE=True]"]
    normal, debug = jobs
    assert normal.framework == "orz"
    assert normal.value("topology.actor.nodes") == 16 and debug.value("topology.actor.nodes") == 8
    util = debug.settings.get("vllm.gpu_memory_utilization")
    assert util.value == 0.5 and src.text[util.span.start:util.span.end] == "0.5"
    assert normal.value("vllm.gpu_memory_utilization") == 0.7
    assert normal.value("zero.stage") == 3  # inherited from the ORZ release defaults
    assert normal.settings.get("zero.stage").origin.startswith("ORZ 3fdd9a0 default")
    assert normal.value("offload.optimizer") == "cpu"  # adam_offload defaults to True
    assert normal.value("model.critic.path") == "Qwen/Qwen2.5-1.5B"
    assert normal.roles == ("actor", "ref", "vllm", "critic")


def test_base_class_in_the_repository_wins_over_release_defaults(tmp_path):
    base = ("from dataclasses import dataclass\n\n@dataclass\nclass BasePPOExpConfig:\n"
            "    zero_stage: int = 2\n    gpu_memory_utilization: float = 0.9\n")
    sub = ("from dataclasses import dataclass\nfrom orz.exps.examples.ppo.ppo_base_exp import BasePPOExpConfig\n\n"
           "@dataclass\nclass Exp(BasePPOExpConfig):\n    colocate_all: bool = True\n")
    project, _ = _project(tmp_path, {"orz/exps/examples/ppo/ppo_base_exp.py": base, "playground/exp.py": sub})
    (job,) = project.jobs
    assert job.value("zero.stage") == 2
    setting = job.settings.get("vllm.gpu_memory_utilization")
    assert setting.value == 0.9 and setting.path.endswith("ppo_base_exp.py")
    assert job.value("vllm.num_engines") is None  # not in the repository's base: unknown, not the release default


def test_unknown_values_stay_unknown(tmp_path):
    text = ("from dataclasses import dataclass\nfrom orz.exps.examples.ppo.ppo_base_exp import BasePPOExpConfig\n"
            "import json\n\n@dataclass\nclass Exp(BasePPOExpConfig):\n"
            "    gpu_memory_utilization: float = json.loads('0.5')\n    zero_stage: int = undefined_name\n")
    project, _ = _project(tmp_path, {"exp.py": text})
    (job,) = project.jobs
    assert job.value("vllm.gpu_memory_utilization") is UNKNOWN
    assert job.value("zero.stage") is UNKNOWN


def test_launch_overrides_apply_and_unknown_fields_are_reported(tmp_path):
    script = ("#!/bin/bash\nDEBUG_MODE=True python -m playground.orz_x exp.gpu_memory_utilization=0.5 \\\n"
              "    exp.gpu_memory_utilisation=0.6\n")
    project, (cfg_src, sh) = _project(tmp_path, {"playground/orz_x.py": (FIXTURES / "Z002_playground_good.py").read_text(),
                                                "train.sh": script})
    jobs = [j for j in project.jobs if j.path == sh.path]
    assert len(jobs) == 2 and all(j.framework == "orz" for j in jobs)
    setting = jobs[0].settings.get("vllm.gpu_memory_utilization")
    assert setting.value == 0.5 and script[setting.span.start:setting.span.end] == "0.5"
    result = run([tmp_path], ["Z007"])
    assert triples(result) == [("Z007", 3, 5)]
    assert "did you mean exp.gpu_memory_utilization?" in result.diagnostics[0].message


@pytest.mark.parametrize("expr,value", [
    ("2048 + 8000", 10048), ("-1", -1), ("4 if not FLAG else 1", 4), ("f'run_{3 * 2}'", "run_6"),
    ("(0.9, 0.95)", (0.9, 0.95)), ("1 < 2 <= 2", True), ("'a' 'b'", "ab"), ("10 // 0", UNKNOWN),
])
def test_expression_evaluation(expr, value):
    import libcst

    from rlhf_lint.frameworks import orz

    env = orz._Env({}, {"FLAG": False}, "x.py", lambda n: "")
    assert orz.evaluate(libcst.parse_expression(expr), env).value == value
