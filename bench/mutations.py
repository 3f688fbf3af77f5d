"""Real-shaped seed files of every kind and the mutations the fuzzing run (bench/fuzz.py) and the property tests
(tests/readers/test_mangled_inputs.py) apply to them."""
from __future__ import annotations

import os
import random
import re

from corpus import (accelerate_yaml, deepspeed_script, ds_config, helper_module, launch_script, orz_config,
                    requirements, verl_script, verl_yaml)

# (file name, text): the name decides the kind, as in a real repository
def seeds(seed: int = 0) -> list[tuple[str, str]]:
    return [
        ("train_ppo.sh", launch_script(seed)),
        ("train_sft.sh", deepspeed_script(seed, "ds_config_zero3.json")),
        ("run_verl.sh", verl_script(seed)),
        ("ds_config_zero3.json", ds_config(seed)),
        ("ppo_trainer.yaml", verl_yaml(seed)),
        ("accelerate_config.yaml", accelerate_yaml(seed)),
        ("ppo_exp.py", orz_config(seed)),
        ("rewards.py", helper_module(seed)),
        ("requirements.txt", requirements(seed)),
        ("pyproject.toml", '[project]\nname = "train"\ndependencies = ["openrlhf==0.9.5", "vllm>=0.8"]\n'),
        ("Dockerfile", "FROM nvcr.io/nvidia/pytorch:24.07-py3\nRUN pip install openrlhf==0.9.5 vllm==0.8.5\n"),
    ]


TOKENS = [b"{", b"}", b"[", b"]", b"\"", b"'", b"\\", b"$(", b"`", b"${", b"}", b"<<EOF\n", b"\nEOF\n", b"&a ", b"*a",
          b"!!python/object/apply:os.system [\"id\"]", b": ", b"\n---\n", b"\t", b"#", b"--", b"--zero_stage",
          b"=", b"\\\n", b"\r", b"\x00", b"\xff\xfe", b"\xc3", b"\xe2\x82", "\ufeff".encode(), b"1e999999",
          b"-0", b"NaN", b"Infinity", b"null", b"true", b"class X(", b"def f(:", b"lambda", b"@", b"%", b"\x1b[31m"]


def _op_truncate(data: bytes, r: random.Random) -> bytes:
    return data[: r.randrange(len(data) + 1)]


def _op_delete(data: bytes, r: random.Random) -> bytes:
    if not data:
        return data
    i = r.randrange(len(data))
    return data[:i] + data[i + r.randint(1, 40):]


def _op_insert_bytes(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + bytes(r.randrange(256) for _ in range(r.randint(1, 8))) + data[i:]


def _op_insert_token(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + r.choice(TOKENS) + data[i:]


def _op_nul(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + b"\x00" + data[i:]


def _op_invalid_utf8(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + r.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + data[i:]


def _op_crlf(data: bytes, r: random.Random) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _op_bom(data: bytes, r: random.Random) -> bytes:
    return b"\xef\xbb\xbf" + data


def _op_cr_only(data: bytes, r: random.Random) -> bytes:
    return data.replace(b"\n", b"\r")


def _op_duplicate(data: bytes, r: random.Random) -> bytes:
    if not data:
        return data
    i = r.randrange(len(data))
    j = min(len(data), i + r.randint(1, 200))
    return data[:j] + data[i:j] * r.randint(1, 5) + data[j:]


def _op_swap_lines(data: bytes, r: random.Random) -> bytes:
    lines = data.split(b"\n")
    if len(lines) > 2:
        a, b = r.randrange(len(lines)), r.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
    return b"\n".join(lines)


def _op_deep_nesting(data: bytes, r: random.Random) -> bytes:
    depth = r.choice([100, 1000, 5000, 50_000])
    i = r.randrange(len(data) + 1)
    opener, closer = r.choice([(b"[", b"]"), (b"{\"a\":", b"}"), (b"- ", b""), (b"(", b")"), (b"$(", b")"),
                               (b"  ", b"")])
    return data[:i] + opener * depth + (closer * depth if r.random() < 0.5 else b"") + data[i:]


def _op_huge_value(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    value = r.choice([b"9" * 100_000, b"1" + b"0" * 5000, b"\"" + b"x" * 2_000_000 + b"\"", b"a" * 300_000,
                      b"1e" + b"9" * 400, b"-" * 100_000])
    return data[:i] + value + data[i:]


def _op_yaml_bomb(data: bytes, r: random.Random) -> bytes:
    lines = [b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 12):
        lines.append(b"a%d: &a%d [" % (n, n) + b", ".join([b"*a%d" % (n - 1)] * 10) + b"]")
    return b"\n".join(lines) + b"\n" + data


def _op_many_lines(data: bytes, r: random.Random) -> bytes:
    return data + b"\n" * r.choice([10_000, 200_000]) + data


# issue 17's classes: small inputs whose naive handling is exponential or quadratic
def _op_merge_key_bomb(data: bytes, r: random.Random) -> bytes:
    levels = r.choice([10, 20, 25])
    lines = [b"m0: &m0 {x: 1, y: 2}"]
    lines += [b"m%d: &m%d {<<: [*m%d, *m%d], k%d: 1}" % (n, n, n - 1, n - 1, n) for n in range(1, levels)]
    return b"\n".join(lines) + b"\n" + data


def _op_duplicate_keys_one_line(data: bytes, r: random.Random) -> bytes:
    i = data.find(b"{")
    if i < 0:
        return data
    return data[:i + 1] + b'"train_batch_size": 8, ' * r.choice([100, 10_000]) + data[i + 1:]


def _op_hostile_number(data: bytes, r: random.Random) -> bytes:
    digits = [m.start() for m in re.finditer(rb"\b\d+\b", data)]
    if not digits:
        return data
    i = r.choice(digits)
    end = i + len(re.match(rb"\d+", data[i:]).group())
    value = r.choice([b"Infinity", b"NaN", b".inf", b"-Infinity", b"9" * 4300, b"9" * 4301, b"1." + b"1" * 400,
                      b"4294967296", b"100000", b"1e309"])
    return data[:i] + value + data[end:]


def _op_repeated_flag(data: bytes, r: random.Random) -> bytes:
    i = data.find(b"\n")
    i = len(data) if i < 0 else i
    return data[:i] + b" --zero_stage 3" * r.choice([100, 4000]) + data[i:]


def _op_bracket_run(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + b"[" * r.choice([1000, 65536]) + data[i:]


def _op_variable_doubling(data: bytes, r: random.Random) -> bytes:
    return b"A=x\n" + b'A="$A$A"\n' * r.choice([10, 24, 32]) + b"echo $A $A\n" + data


def _op_continued_pins(data: bytes, r: random.Random) -> bytes:
    pins = [b"torch==2.%d.0 vllm==0.%d.0 transformers==4.4%d.0" % (n % 7, n % 9, n % 9) for n in range(25)]
    return data + b"\nRUN pip install \\\n    " + b" \\\n    ".join(pins) + b"\n"


OPERATIONS = [_op_truncate, _op_delete, _op_insert_bytes, _op_insert_token, _op_nul, _op_invalid_utf8, _op_crlf,
              _op_bom, _op_cr_only, _op_duplicate, _op_swap_lines, _op_deep_nesting, _op_huge_value, _op_yaml_bomb,
              _op_many_lines, _op_merge_key_bomb, _op_duplicate_keys_one_line, _op_hostile_number,
              _op_repeated_flag, _op_bracket_run, _op_variable_doubling, _op_continued_pins]
# the costly ones (megabytes, deep nesting) are rarer so a run of 10,000 files stays short
WEIGHTS = [6, 8, 6, 10, 2, 2, 2, 2, 1, 4, 4, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1]


def mutate(data: bytes, r: random.Random) -> tuple[bytes, list[str]]:
    ops = r.choices(OPERATIONS, weights=WEIGHTS, k=r.randint(1, 3))
    for op in ops:
        data = op(data, r)
    return data, [op.__name__[4:] for op in ops]


def special_cases(directory: str) -> list[str]:
    """Files and folders that are bad in themselves: huge, symlink loops, unreadable, folders named like files,
    a FIFO. Returns a description of each case written."""
    made = []

    def write(name: str, data: bytes) -> str:
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    big = os.path.join(directory, "ds_config_dump.json")
    with open(big, "wb") as fh:
        fh.write(b"{\"train_batch_size\": 1, \"x\": \"")
        fh.write(b"y" * (50 * 1024 * 1024))
        fh.write(b"\"}\n")
    made.append("50 MB JSON")
    os.symlink("loop_b.yaml", os.path.join(directory, "loop_a.yaml"))
    os.symlink("loop_a.yaml", os.path.join(directory, "loop_b.yaml"))
    made.append("symlink loop")
    os.symlink("missing_target.sh", os.path.join(directory, "dangling.sh"))
    made.append("dangling symlink")
    os.symlink(".", os.path.join(directory, "self_dir"))
    made.append("symlink to its own folder")
    locked = write("locked_ds_config.json", b"{\"zero_optimization\": {\"stage\": 3}}\n")
    os.chmod(locked, 0)
    made.append("unreadable file (mode 000; root can still read it)")
    os.makedirs(os.path.join(directory, "ds_config.json"), exist_ok=True)
    os.makedirs(os.path.join(directory, "train.sh", "inner.yaml"), exist_ok=True)
    made.append("folders named like files")
    if hasattr(os, "mkfifo"):
        os.mkfifo(os.path.join(directory, "launch"))
        os.mkfifo(os.path.join(directory, "pipe_config.json"))
        made.append("FIFOs (extension-less and .json)")
    write("empty.json", b"")
    write("empty.sh", b"")
    write("only_bom.yaml", b"\xef\xbb\xbf")
    made.append("empty files")
    write("binary.py", bytes(range(256)) * 10)
    made.append("binary file")
    return made
