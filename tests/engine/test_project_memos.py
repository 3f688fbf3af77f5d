"""What a Project derives from all of its sources is computed once, not once per file and rule (a sweep folder of
thousands of ds_configs took time quadratic in their number), and forgotten when its sources change."""
from rlhf_lint.engine import project as project_module
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.readers.source import Source

from lintutil import run_lint

DS_CONFIG = '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}\n'


def source(path, text, kind):
    s = Source.from_text(path, text, kind=kind)
    parse_source(s)
    return s


def test_the_pin_scan_runs_once_per_project_not_per_ds_config_and_rule(tmp_path, monkeypatch):
    files = 40
    for i in range(files):
        (tmp_path / f"run_{i:02d}").mkdir()
        (tmp_path / f"run_{i:02d}" / "ds_config.json").write_text(DS_CONFIG)
    asked = []
    counted = project_module.may_declare_pins

    def counting(source):
        asked.append(source.path)
        return counted(source)

    monkeypatch.setattr(project_module, "may_declare_pins", counting)
    run_lint([tmp_path], cache=False, jobs=1)
    # once per source for the project (before: once per source for each ds_config and rule, 40 x 40 x 19)
    assert len(asked) <= 2 * files


def test_a_source_added_later_is_seen(tmp_path):
    ds = source(str(tmp_path / "ds_config.json"), DS_CONFIG, "ds_config")
    project = Project([ds], Config())
    assert not project.declares_pins() and not project.may_declare_pins()
    project.add(source(str(tmp_path / "requirements.txt"), "deepspeed==0.16.3\n", "requirements"))
    assert project.may_declare_pins() and project.declares_pins()
