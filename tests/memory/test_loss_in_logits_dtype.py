"""The model's own cross entropy on 16-bit logits (issue 15, change 61): model code without an fp32 upcast
(schemas/hf/causal_lm_loss.json: transformers' llama before 4.31, opt and gpt2 before 4.48, Qwen-1's remote code)
run without autocast (DeepSpeed) holds 3 x w bytes per logit at the backward's start, not the fp32 path's 12."""
import ast

import pytest

from rlhf_lint.engine.config import Hardware
from rlhf_lint.frameworks.jobs import Job
from rlhf_lint.memory.catalog import arch_from_config_json, resolve_model
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.model import Setting, Settings
from rlhf_lint.schemas import load
from rlhf_lint.schemas.build.causal_lm_loss import REMOTE_CODE, forward_loss, loss_function_upcasts, ranges

SEQ = 4096


def job(model="meta-llama/Llama-2-7b-hf", framework="hf", **values):
    settings = Settings()
    base = {"model.policy.path": model, "topology.policy.nodes": 1, "topology.policy.gpus_per_node": 8,
            "train.strategy": "deepspeed", "zero.stage": 3, "precision.param_dtype": "bf16",
            "batch.micro_train": 1, "seq.max_len": SEQ, "train.gradient_checkpointing": True, "job.type": "sft"}
    for key, value in {**base, **values}.items():
        settings.add(Setting(key, value))
    return Job("test", "test.yaml", None, framework, settings, roles=("policy",))


def logits(j, versions=None):
    est = estimate(j, Hardware(gpu="A100-80GB"), versions=versions)
    return est.role("policy").term("logits")


def per_logit(j, versions=None, vocab=32000):
    return logits(j, versions) / (SEQ * vocab)


def test_llama_before_4_31_under_deepspeed_keeps_the_loss_in_bf16():
    assert per_logit(job(), {"transformers": "4.30.2"}) == 6
    assert per_logit(job(), {"transformers": "4.31.0"}) == 12


def test_an_unknown_release_keeps_the_fp32_path():
    assert per_logit(job()) == 12


def test_autocast_without_deepspeed_computes_the_loss_in_fp32():
    """The HF Trainer's DDP runs the forward under autocast, whose cross entropy is fp32 whatever the model does."""
    assert per_logit(job(**{"train.strategy": "ddp", "zero.stage": 0}), {"transformers": "4.30.2"}) == 12


def test_trainers_with_their_own_loss_are_not_moved():
    assert per_logit(job(framework="openrlhf"), {"transformers": "4.30.2"}) == 12


def test_qwen1_remote_code_keeps_the_loss_in_its_dtype_whatever_the_release():
    assert per_logit(job("Qwen/Qwen-7B"), vocab=151936) == 6
    assert per_logit(job("Qwen/Qwen1.5-7B"), vocab=151936) == 12  # native qwen2 code upcasts


def test_baichuan_remote_code_keeps_the_loss_in_its_dtype():
    vocab = resolve_model("baichuan-inc/Baichuan2-7B-Base").arch.vocab_size
    assert per_logit(job("baichuan-inc/Baichuan2-7B-Base"), vocab=vocab) == 6
    assert per_logit(job("baichuan-inc/Baichuan2-7B-Base", **{"train.strategy": "ddp", "zero.stage": 0}),
                     vocab=vocab) == 12


def test_a_size_guess_knows_no_model_code():
    assert resolve_model("ckpt-13b").arch.model_type == ""
    assert per_logit(job("7B"), {"transformers": "4.30.2"}, vocab=resolve_model("7B").arch.vocab_size) == 12


def test_qwen1_config_json_splits_its_intermediate_size_over_w1_and_w2():
    text = ('{"model_type": "qwen", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, '
            '"intermediate_size": 22016, "vocab_size": 151936}')
    arch = arch_from_config_json(text, "local/qwen-7b")
    assert (arch.intermediate_size, arch.model_type, arch.qkv_bias) == (11008, "qwen", True)
    catalog = resolve_model("Qwen/Qwen-7B").arch
    assert (catalog.intermediate_size, catalog.hidden_size, catalog.vocab_size) == (11008, 4096, 151936)


def test_the_table_holds_the_releases_read():
    table = load("hf/causal_lm_loss.json")
    llama = table["model_types"]["llama"]
    assert [(r["since"], r["until"], r["path"]) for r in llama[:2]] == [("4.30", "4.31", "logits_dtype"),
                                                                        ("4.31", None, "fp32")]
    assert all(r["source"].startswith("https://github.com/huggingface/transformers/blob/v") for r in llama)
    assert table["remote_code"] == REMOTE_CODE  # the hand-read entries are the builder's
    assert table["remote_code"]["qwen"]["path"] == "logits_dtype"


# -- the extractor on source text --------------------------------------------------------------------------------
def forward(body: str) -> ast.FunctionDef:
    return ast.parse("def forward(self, labels=None):\n" + "".join(f"    {line}\n" for line in body.splitlines()))\
        .body[0]


@pytest.mark.parametrize("body, upcasts, path", [
    ("logits = self.lm_head(h)\nloss = CrossEntropyLoss()(logits, labels)", False, "logits_dtype"),
    ("logits = self.lm_head(h)\nlogits = logits.float()\nloss = CrossEntropyLoss()(logits, labels)", False, "fp32"),
    ("logits = self.lm_head(h).to(torch.float32)\nloss = nn.functional.cross_entropy(logits, labels)", False, "fp32"),
    ("logits = self.lm_head(h)\nloss = self.loss_function(logits, labels)", True, "fp32"),
    ("logits = self.lm_head(h)\nloss = self.loss_function(logits, labels)", False, "logits_dtype"),
    ("logits = self.lm_head(h)\nreturn logits", False, None),
    ("x = h.float()\nlogits = self.lm_head(x)\nloss = CrossEntropyLoss()(logits, labels)", False, "logits_dtype"),
])
def test_forward_loss_reads_the_upcast(body, upcasts, path):
    assert forward_loss(forward(body), upcasts) == path


def test_loss_function_upcast_is_read_from_loss_utils():
    assert loss_function_upcasts("def ForCausalLMLoss(logits, labels):\n    logits = logits.float()\n    return 0\n")
    assert not loss_function_upcasts("def ForCausalLMLoss(logits, labels):\n    return 0\n")
    assert not loss_function_upcasts(None)


def test_ranges_close_a_path_where_it_changes():
    per_release = [("4.30.2", {"opt": ("logits_dtype", "OPTForCausalLM", "f.py")}),
                   ("4.47.1", {"opt": ("logits_dtype", "OPTForCausalLM", "f.py")}),
                   ("4.48.3", {"opt": ("fp32", "OPTForCausalLM", "f.py"), "new": ("fp32", "NewForCausalLM", "g.py")})]
    table = ranges(per_release)
    assert [(r["since"], r["until"], r["path"]) for r in table["opt"]] == [("4.30", "4.48", "logits_dtype"),
                                                                          ("4.48", None, "fp32")]
    assert [(r["since"], r["until"]) for r in table["new"]] == [("4.48", None)]
