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


def lora_job(model, **extra):
    values = {"train.lora_rank": 8} | extra
    return _job_from_options(model, 1, 1, None, None, None, "bf16", None, 1, 1024, True, True, "sft", values)


def test_a_pre_quantized_checkpoint_is_a_quantized_base_by_its_name():
    est = estimate(lora_job("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"), Hardware(gpu="A100-80GB"))
    plain = estimate(lora_job("Qwen/Qwen2.5-7B-Instruct"), Hardware(gpu="A100-80GB"))
    # 4-bit linear layers; the embedding and the LM head (1.09B of 7.6B) stay 16-bit
    assert est.role("policy").term("weights") < plain.role("policy").term("weights") / 2.5
    assert any("pre-quantized checkpoint by its name (4bit" in a for a in est.assumptions)
    int8 = estimate(lora_job("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8"), Hardware(gpu="A100-80GB"))
    assert any("(8bit base" in a for a in int8.assumptions)


def test_the_name_is_read_only_when_the_launch_says_nothing():
    # a launch's own quantization wins; a full fine-tune (no LoRA) of such a name is not read as quantized
    said = estimate(lora_job("Qwen/Qwen2.5-7B-Instruct-AWQ", **{"train.quantization": "8bit"}),
                    Hardware(gpu="A100-80GB"))
    assert not any("pre-quantized" in a for a in said.assumptions)
    full = estimate(lora_job("Qwen/Qwen2.5-7B-Instruct-AWQ", **{"train.lora_rank": 0}), Hardware(gpu="A100-80GB"))
    assert not any("pre-quantized" in a for a in full.assumptions)
    # "int4" inside another word is not a quantization tag
    other = estimate(lora_job("someone/printer-int4x-7B"), Hardware(gpu="A100-80GB"))
    assert not any("pre-quantized" in a for a in other.assumptions)


def trl_qlora_weights(trl, dtype, quantization="4bit"):
    job = _job_from_options("Qwen/Qwen2.5-7B", 1, 1, None, None, None, dtype, None, 1, 1024, True, True, "sft",
                            {"train.lora_rank": 16, "train.quantization": quantization, "train.strategy": "ddp"},
                            "trl")
    est = estimate(job, Hardware(gpu="T4"), versions={"trl": trl} if trl else None)
    return est.role("policy").term("weights")


def test_trls_kbit_preparation_keeps_the_unquantized_parameters_in_fp32():
    """TRL 0.4.2-0.21 runs PEFT's k-bit preparation (the embedding, LM head and norms to fp32); from 0.7.5 a bf16
    run with a 4-bit base casts the embedding and LM head back."""
    # embedding and LM head (152064 x 3584 each: 1,089,994,752) with the norms and biases (204,288): 2 B more each
    extra = 2 * 1_090_199_040
    plain = trl_qlora_weights("0.23.0", "fp16")
    assert trl_qlora_weights("0.8.6", "fp16") - plain == extra
    assert trl_qlora_weights("0.8.6", "bf16") == plain  # cast back to bf16
    assert trl_qlora_weights("0.6.0", "bf16") - plain == extra  # before 0.7.5 nothing casts back
    assert trl_qlora_weights("0.8.6", "bf16", "8bit") - trl_qlora_weights("0.23.0", "bf16", "8bit") == extra
    assert trl_qlora_weights(None, "fp16") == plain  # release unknown: the current one's (no preparation)
