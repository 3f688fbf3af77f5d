"""A hypothesis test per reader: text built from the format's own tokens and hostile atoms (huge numbers, Infinity,
deep brackets, merge keys, aliases, control characters, continuations) never makes a reader raise or report an
internal error, and each file is read within the deadline. Bounded for CI: few examples; the long campaign is
bench/fuzz.py."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rlhf_lint.engine.project import parse_source
from rlhf_lint.readers.source import Source

HOSTILE = ["9" * 4400, "1." + "1" * 400, "Infinity", "-Infinity", "NaN", ".inf", ".nan", "[" * 300, "{" * 300,
           "\x1b[2J", "\u202e", "\u2028", "\\", "\t", "\r\n", "\x00", "'", '"', "$", "${", "$(", "`", "&&", "|", ";"]

TOKENS = {
    "json": ["{", "}", "[", "]", ",", ":", '"train_batch_size"', '"zero_optimization"', '"stage"', "3", "true",
             "null", "// c\n", "/* c */", "# c\n", " ", "\n"],
    "yaml": ["trainer:", "actor_rollout_ref:", "data:", "\n", "  ", "- ", ": ", "&a ", "*a", "<<: *a", "<<: [*a, *a]",
             "{", "}", "[", "]", ", ", "nnodes: 1", "n_gpus_per_node: 8", "!!python/object ", "? ", "|\n", "#"],
    "shell": ["deepspeed ", "--num_gpus 8 ", "train.py ", "--zero_stage 3 ", "\\\n", "\n", "X=", "$X", '"$X$X"',
              "export ", "source ./a.sh\n", "python3 -m verl.trainer.main_ppo ", "trainer.nnodes=", "<<EOF\n",
              "EOF\n", "$(", ")", "for i in 1 2; do ", "done\n", "if [ ", " ]; then ", "fi\n", "[[", "]]", "'"],
    "python": ["from dataclasses import dataclass\n", "@dataclass\n", "class C(PPOExpConfig):\n", "    x: int = ",
               "    y: float = ", "(", ")", "[", "]", "\n", "1", "float('inf')", "lambda: ", "if True:\n", "    pass\n"],
    "requirements": ["torch==2.5.1", "vllm>=0.7", "-r other.txt", "-c c.txt", "\n", " \\\n", "; python_version<'3'",
                     "[extra]", "@ https://x/y.whl", "--hash=sha256:ab", "#", "===", "~=", "*"],
    "pyproject_toml": ["[project]\n", "dependencies = [", "]", '"torch==2.5.1"', ", ", "\n",
                       "[project.optional-dependencies]\n", "x = [", "[tool.rlhf-lint]\n", "a = ", "1", "{", "}"],
    "dockerfile": ["FROM python:3.10\n", "RUN pip install ", "torch==2.5.1 ", "vllm==0.7.2 ", "\\\n", "&& ",
                   "uv pip install ", "ARG X\n", "$X", "\n"],
    "setup_cfg": ["[options]\n", "install_requires =\n", "    torch==2.5.1\n", "[options.extras_require]\n",
                  "x =\n", "    vllm>=0.7\n", "=", "\n"],
}
NAMES = {"json": "ds_config.json", "yaml": "ppo_trainer.yaml", "shell": "train.sh", "python": "orz_config.py",
         "requirements": "requirements.txt", "pyproject_toml": "pyproject.toml", "dockerfile": "Dockerfile",
         "setup_cfg": "setup.cfg"}
READER_FUZZ = settings(max_examples=25, deadline=5000, suppress_health_check=[HealthCheck.too_slow])


def texts(kind):
    return st.lists(st.sampled_from(TOKENS[kind] + HOSTILE) | st.text(max_size=8), max_size=60).map("".join)


def _check(kind, text):
    source = Source.from_text(NAMES[kind], text, kind="ds_config" if kind == "json" else kind)
    parse_source(source)  # never raises for bad input
    assert not source.internal_errors, source.internal_errors
    for span, message in source.skipped:
        assert 0 <= span.start <= span.end <= len(text) and message


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_each_reader_survives_generated_hostile_text(kind):
    @READER_FUZZ
    @given(text=texts(kind))
    def run(text):
        _check(kind, text)

    run()
