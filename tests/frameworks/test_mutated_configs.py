"""No crash on mutated ORZ / verl / accelerate configs, and value fixes that keep every other byte."""
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lintutil import ROOT
from rlhf_lint.engine.config import Config
from rlhf_lint.fixers.text import apply_edits
from rlhf_lint.fixers.yaml import replace_scalar
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.engine.registry import REGISTRY
from rlhf_lint.engine.project import Context
from rlhf_lint.readers.source import Source

FIXTURES = Path(ROOT) / "tests" / "fixtures"
SAMPLES = {
    "python": (FIXTURES / "orz" / "Z002_playground_bad.py").read_text(),
    "yaml": (FIXTURES / "verl" / "V006_trainer_bad.yaml").read_text()
    + "\n---\n" + (FIXTURES / "accelerate" / "A002_bad.yaml").read_text(),
}
_snippets = st.sampled_from(["", " if DEBUG_MODE else ", "(", ")", ":", "\n", "  ", "0", "-", "'", "${x}", "\t", "f'{",
                             "zero_stage: int = ", "class A(BasePPOExpConfig):\n", "- ", "{", "!!python/name:os.system"])


def _mutate(text, cuts):
    for at, length, snippet in cuts:
        at = at % (len(text) + 1)
        text = text[:at] + snippet + text[at + length:]
    return text


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["python", "yaml"]),
       cuts=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 8), _snippets), min_size=1, max_size=4))
def test_mutated_configs_never_crash(kind, cuts):
    text = _mutate(SAMPLES[kind], cuts)
    source = Source.from_text("x.py" if kind == "python" else "x.yaml", text, kind)
    parse_source(source)
    project = Project([source], Config())
    jobs = project.jobs
    for r in REGISTRY.all():
        if r.family not in "ZVA":
            continue
        contexts = [Context(project, source=source, job=j) for j in jobs] if r.scope == "job" else (
            [Context(project, source=source)] if source.tree is not None and source.kind in r.kinds else [])
        for ctx in contexts:
            for finding in r.run(ctx):
                if finding.fix is not None and (finding.path in (None, source.path)):
                    apply_edits(text, finding.fix.edits)


@settings(max_examples=80, deadline=None)
@given(value=st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.none(),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=10)))
def test_yaml_scalar_replacement_round_trips(value):
    text = "# keep me\nroot:\n  a: 1   # and me\n  b: 'x'\n"
    node = yaml.compose(text)
    a_node = node.value[0][1].value[0][1]
    edit = replace_scalar(a_node, value)
    new = apply_edits(text, [edit])
    assert new[:edit.start] == text[:edit.start]
    assert new.endswith(text[edit.end:])
    assert yaml.safe_load(new)["root"]["a"] == value
