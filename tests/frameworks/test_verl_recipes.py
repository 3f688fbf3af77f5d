"""verl recipe launches (`python -m recipe.<name>.<module>`): the recipe's config over the trainer config, from the
repository's files or schemas/verl/recipes.json, and the start-up checks a recipe may not run."""
from pathlib import Path

from lintutil import run
from rlhf_lint.engine.config import Config
from rlhf_lint.engine.runner import build_project
from rlhf_lint.model import Severity
from rlhf_lint.schemas.build.verl_recipes import compose, hydra_main_of

DAPO = """#!/bin/bash
python3 -m recipe.dapo.main_dapo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size={batch} \\
    algorithm.filter_groups.enable=True \\
    reward_model.overlong_buffer.enable=True \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.actor.dtype=float16 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _lint(tmp_path, files: dict, version=None, select=("V",)):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    config = Config(root=str(tmp_path))
    if version:
        config.versions["verl"] = version
    return run([tmp_path], list(select), config)


def _by_code(result):
    out = {}
    for d in result.diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def test_hydra_main_is_read_from_the_decorator_without_running_the_module():
    text = 'import hydra\n\n@hydra.main(config_path="config", config_name="dapo_trainer", version_base=None)\n' \
           'def main(config):\n    run(config)\n'
    assert hydra_main_of(text) == ("config", "dapo_trainer")
    assert hydra_main_of("@hydra.main(config_path=PATH, config_name=NAME)\ndef main(c): pass\n") is None
    assert hydra_main_of("def main(:") is None  # a syntax error is no entry, not a crash


def test_compose_follows_the_defaults_list_to_the_trainer_config():
    configs = {"base_recipe": {"defaults": ["ppo_trainer", "_self_"], "algorithm": {"filter_groups": {"enable": False}}},
               "child": {"defaults": ["base_recipe", "_self_"], "trainer": {"project_name": "x"}},
               "eval": {"data": {"path": "a"}}}
    base, keys = compose(configs, "child")
    assert base == "ppo_trainer"
    assert keys["algorithm.filter_groups.enable"] is False and keys["trainer.project_name"] == "x"
    assert compose(configs, "eval")[0] is None  # not a trainer config: no recipe launch


def test_table_recipe_keys_are_known_and_unknown_keys_are_errors_on_a_pinned_release(tmp_path):
    result = _lint(tmp_path, {"run_dapo.sh": DAPO.format(batch=16)}, version="0.7.0")
    found = _by_code(result)
    # filter_groups and overlong_buffer are the recipe's keys (dapo_trainer.yaml at v0.7.0): not reported
    assert [d.start.line for d in found["V001"]] == [12]
    (dtype,) = found["V001"]
    assert dtype.severity == Severity.ERROR
    assert "recipe.dapo.main_dapo's dapo_trainer" in dtype.message
    assert "did you mean `actor_rollout_ref.actor.fsdp_config.dtype`" in dtype.message


def test_a_main_ppo_launch_still_refuses_the_recipe_keys(tmp_path):
    text = DAPO.format(batch=16).replace("recipe.dapo.main_dapo", "verl.trainer.main_ppo")
    found = _by_code(_lint(tmp_path, {"run.sh": text}, version="0.7.0"))
    assert sorted(d.start.line for d in found["V001"]) == [5, 6, 12]


def test_a_release_past_the_recipe_table_reads_the_newest_recipe_and_warns(tmp_path):
    # verl 0.9.1 is in the trainer table, not in the recipe table: dapo's 0.9.0 recipe moved overlong_buffer under
    # reward.reward_kwargs, so the key is unknown there, but only another release's recipe was read
    found = _by_code(_lint(tmp_path, {"run_dapo.sh": DAPO.format(batch=16)}, version="0.9.1"))
    lines = {d.start.line: d for d in found["V001"]}
    assert set(lines) == {6, 12}
    assert all(d.severity == Severity.WARNING for d in lines.values())
    assert "verl 0.9.0's recipe" in lines[6].message


def test_no_version_known_takes_the_keys_of_any_release_recipe(tmp_path):
    found = _by_code(_lint(tmp_path, {"run_dapo.sh": DAPO.format(batch=16)}))
    assert [(d.start.line, d.severity) for d in found["V001"]] == [(12, Severity.WARNING)]


def test_a_recipe_that_skips_verl_validation_gets_warnings_for_start_up_checks(tmp_path):
    # dapo at 0.7.0 does not import validate_config; one_step_off_policy does
    text = DAPO.format(batch=15).replace("    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\\n", "")
    found = _by_code(_lint(tmp_path, {"run_dapo.sh": text}, version="0.7.0"))
    assert found["V003"][0].severity == Severity.WARNING
    assert "does not run verl's start-up validation" in found["V003"][0].message
    assert found["V021"][0].severity == Severity.WARNING
    found = _by_code(_lint(tmp_path, {"run_dapo.sh": text.replace("recipe.dapo.main_dapo",
                                                                  "recipe.one_step_off_policy.main_ppo")},
                           version="0.7.0"))
    assert found["V003"][0].severity == Severity.ERROR


MAIN = 'import hydra\n\n@hydra.main(config_path="config", config_name="my_trainer", version_base=None)\n' \
       'def main(config):\n    pass\n'
MY_TRAINER = """hydra:
  searchpath:
    - file://verl/trainer/config
defaults:
  - ppo_trainer
  - _self_
data:
  train_batch_size: 16
algorithm:
  my_weight: 0.5
trainer:
  project_name: mine
"""
LAUNCH = """#!/bin/bash
python3 -m recipe.mine.main_mine algorithm.my_weight=0.2 algorithm.my_wieght=0.3 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def test_a_repository_recipe_is_read_from_its_module_and_config(tmp_path):
    files = {"recipe/mine/main_mine.py": MAIN, "recipe/mine/config/my_trainer.yaml": MY_TRAINER,
             "recipe/mine/run.sh": LAUNCH}
    found = _by_code(_lint(tmp_path, files, version="0.7.0"))
    (typo,) = found["V001"]
    assert typo.start.line == 2 and "algorithm.my_wieght" in typo.message
    assert "with recipe.mine.main_mine's my_trainer" in typo.message
    project, _ = build_project([str(tmp_path)], Config(root=str(tmp_path)))
    jobs = [j for j in project.jobs if j.framework == "verl"]
    # the recipe's config is the launch's defaults, not a launch of its own
    assert [Path(j.path).name for j in jobs] == ["run.sh"]
    assert jobs[0].verl.yaml_path.endswith("my_trainer.yaml")
    # with no launch script running the recipe, the config stays a launch of its own (its values are checked)
    (tmp_path / "recipe/mine/run.sh").unlink()
    project, _ = build_project([str(tmp_path)], Config(root=str(tmp_path)))
    assert [Path(j.path).name for j in project.jobs if j.framework == "verl"] == ["my_trainer.yaml"]


def test_a_recipe_package_that_is_not_verl_stays_an_ordinary_program(tmp_path):
    files = {"recipe/train/main.py": "def main():\n    pass\n",
             "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 -m recipe.train.main --lr 1e-5\n"}
    _write(tmp_path, files)
    project, _ = build_project([str(tmp_path / n) for n in files], Config(root=str(tmp_path)))
    (job,) = project.jobs
    assert job.framework != "verl" and job.settings.value("topology.gpus_per_node") == 4


def _write(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return True


def test_a_recipe_with_its_own_rollout_gpus_places_the_rollout_apart(tmp_path):
    from rlhf_lint.memory.estimate import estimate
    from rlhf_lint.engine.config import Hardware

    text = DAPO.format(batch=12).replace("recipe.dapo.main_dapo", "recipe.one_step_off_policy.main_ppo").replace(
        "trainer.n_gpus_per_node=8", "trainer.n_gpus_per_node=6 rollout.n_gpus_per_node=2 rollout.nnodes=1")
    _write(tmp_path, {"run.sh": text})
    config = Config(root=str(tmp_path))
    config.versions["verl"] = "0.7.0"
    project, _ = build_project([str(tmp_path / "run.sh")], config)
    (job,) = [j for j in project.jobs if j.framework == "verl"]
    assert job.settings.value("topology.colocate_all") is False
    assert job.settings.value("vllm.num_engines") == 1  # 2 rollout GPUs / tensor parallel 2 (0.7.0 default)
    groups = estimate(job, Hardware(gpu="H100-80GB", gpus_per_node=8)).groups
    assert sorted(tuple(g.names) for g in groups) == [("actor",), ("vllm",)]  # no KL term: no reference


def test_a_recipe_module_that_cannot_be_parsed_falls_back_to_the_table(tmp_path):
    # 200000 nested parentheses: ast gives up (RecursionError); the launch is still read, from the recipe table
    files = {"recipe/dapo/main_dapo.py": "x = " + "(" * 200000 + ")" * 200000 + "\n",
             "run_dapo.sh": DAPO.format(batch=16)}
    found = _by_code(_lint(tmp_path, files, version="0.7.0"))
    assert [d.start.line for d in found["V001"]] == [12]


def test_a_rollout_pool_of_its_own_adds_to_the_gpus_ray_must_hold(tmp_path):
    text = DAPO.format(batch=16).replace("recipe.dapo.main_dapo", "recipe.one_step_off_policy.main_ppo").replace(
        "trainer.n_gpus_per_node=8", "rollout.n_gpus_per_node=2 rollout.nnodes=1 trainer.n_gpus_per_node={n}")
    header = "# rlhf-lint: hardware gpu=H100-80GB gpus-per-node=8 nodes=1\n"
    found = _by_code(_lint(tmp_path / "8", {"run.sh": header + text.format(n=8)}, "0.7.0", ("M010",)))
    (d,) = found["M010"]
    assert "holds 10 GPUs at once (trainer 8 + rollout 2)" in d.message
    assert _lint(tmp_path / "6", {"run.sh": header + text.format(n=6)}, "0.7.0", ("M010",)).diagnostics == []
