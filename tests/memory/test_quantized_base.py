"""A quantized base (QLoRA) computes each linear layer on a 16-bit copy of its weight (bitsandbytes MatMul4Bit):
the largest decoder linear weight is a transient of the training phase (issue 15, docs/accuracy.md change 47)."""
from rlhf_lint.cli.estimate import _job_from_options
from rlhf_lint.engine.config import Hardware
from rlhf_lint.memory.estimate import estimate


def policy(quantization):
    extra = {"train.lora_rank": 64, "train.quantization": quantization}
    job = _job_from_options("meta-llama/Llama-2-70b-hf", 1, 1, 2, "cpu", None, "bf16", None, 1, 2048, True, True,
                            "sft", extra)
    return estimate(job, Hardware(gpu="A100-40GB")).role("policy")


def test_the_largest_linear_weight_is_dequantized_to_16_bits():
    role = policy("4bit")
    dequantized = [t for t in role.terms if "dequantized" in t.formula]
    # Llama-2-70B's MLP projections are 8192 x 28672: the largest linear weight of a layer
    assert [t.bytes for t in dequantized] == [2 * 8192 * 28672]
    assert not dequantized[0].phases  # a transient of the training phase, freed before the optimizer step


def test_a_16_bit_base_makes_no_copy():
    assert not [t for t in policy(None).terms if "dequantized" in t.formula]
