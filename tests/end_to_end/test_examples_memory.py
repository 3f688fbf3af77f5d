"""Field cases 1 and 5 end to end: the launch scripts in examples/ through the OpenRLHF reader and the M rules."""
from pathlib import Path

from click.testing import CliRunner

from lintutil import ROOT, run, triples
from rlhf_lint.engine.config import Config, parse_size
from rlhf_lint.cli.estimate import estimate as estimate_command
from rlhf_lint.memory.catalog import GIB
from rlhf_lint.memory.estimate import estimate, with_settings
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.readers.source import Source

EXAMPLES = Path(ROOT) / "examples"
CASE1 = EXAMPLES / "case1_70b_cpu_adam" / "train_ppo_70b.sh"
CASE5 = EXAMPLES / "case5_7b_4090" / "train_ppo_7b_4090.sh"


def job_and_hardware(path: Path, text: str | None = None):
    source = Source.from_text(str(path), text if text is not None else path.read_text(), kind="shell")
    parse_source(source)
    config = Config()
    (job,) = Project([source], config).jobs
    return job, config.hardware_for(job.hardware)


# -- case 1 --------------------------------------------------------------------------------------------------------
def test_case1_names_cpu_adam_per_model_and_what_sharing_a_node_would_need():
    result = run([CASE1], ["M"])
    assert triples(result) == [("M002", 9, 1), ("M002", 9, 1)]
    actor, critic = (d.message for d in result.diagnostics)
    assert "actor 3 x 4 B x 68.98B = 828 GB (770.9 GiB), 4 of its 4 ranks here" in actor
    assert "critic keeps its states on another node: actor and critic on one node would need 1652 GB" in actor
    assert "critic 3 x 4 B x 68.71B = 825 GB" in critic
    assert "its host RAM is 931.3 GiB" in actor


def test_case1_actor_and_critic_on_one_node_add_up(tmp_path):
    text = CASE1.read_text().replace("meta-llama/Llama-2-70b-hf", "70b").replace(
        "   --adam_offload \\\n", "   --adam_offload \\\n   --colocate_actor_ref \\\n")
    script = tmp_path / "train.sh"
    script.write_text(text)
    result = run([script], ["M"])
    shared = next(d.message for d in result.diagnostics if "node 0" in d.message)
    assert "actor x4, ref x4, critic x4" in shared
    assert "actor 3 x 4 B x 70.00B = 840 GB (782.3 GiB)" in shared
    assert "actor and critic share this node, so their CPU Adam states add up to" in shared
    job, hardware = job_and_hardware(script)
    node = estimate(job, hardware).nodes[0]
    assert sum(here for here, _ in node.cpu_adam.values()) > 1.6e12  # both 70B models' states on one node


# -- case 5 --------------------------------------------------------------------------------------------------------
def test_case5_fits_on_rtx4090_with_zero3_checkpointing_and_adam_offload():
    assert triples(run([CASE5.parent], ["M"])) == []
    job, hardware = job_and_hardware(CASE5)
    est = estimate(job, hardware)
    (group,) = est.groups
    assert group.shared_process and group.names == ["actor", "ref", "critic", "reward"]
    assert group.fits is True and group.peak < 16 * GIB
    for role in est.roles:  # a per-GPU breakdown for every role
        assert role.term("weights") == 2 * role.params // 8
    assert est.role("actor").term("optimizer_states") == 0  # in host RAM
    assert est.nodes[0].fits is True and est.nodes[0].limit == parse_size("256GB")


def test_case5_plain_zero3_with_checkpointing_does_not_fit():
    job, hardware = job_and_hardware(CASE5)
    est = estimate(with_settings(job, {"offload.optimizer": "none"}), hardware)
    (group,) = est.groups
    assert group.fits is False and group.peak_phase == "training"
    states = sum(r.term("weights") + r.term("gradients") + r.term("optimizer_states") for r in est.roles)
    assert states / GIB > 19  # 16 B x 7.72B / 8 + 16 B x 1.53B / 8 + 2 B x (7.72B + 1.53B) / 8
    assert group.peak / GIB > 25


def test_case5_unsharded_does_not_fit():
    result = CliRunner().invoke(estimate_command, ["--model", "Qwen/Qwen1.5-7B", "--gpus", "8", "--gpu", "RTX-4090",
                                                   "--zero", "0"])
    assert result.exit_code == 0 and "DOES NOT FIT" in result.output
    job, hardware = job_and_hardware(CASE5)
    assert estimate(with_settings(job, {"zero.stage": 0}), hardware).groups[0].fits is False
