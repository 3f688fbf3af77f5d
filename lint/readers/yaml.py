"""YAML sources as PyYAML node trees: safe loading only, marks give every scalar its exact span."""
from __future__ import annotations

import os
import re

from rlhf_lint.model import ParseError, Span
from rlhf_lint.readers.source import Source
from rlhf_lint.startup.lazyre import lazy_compile

MAX_NODES = 200_000

# Top-level keys of the YAML rlhf-lint has rules for: verl/Hydra trainer configs, accelerate configs, conda
# environments. Other YAML (CI workflows, docs, k8s) is skipped after one regex, before PyYAML's slow composer.
_RELEVANT_KEYS = lazy_compile(
    r"^(?:actor_rollout_ref|critic|reward_model|algorithm|trainer|data|compute_environment|distributed_type"
    r"|deepspeed_config|dependencies|model_name_or_path)\s*:", re.MULTILINE)  # model_name_or_path: HF recipes
_CONDA_NAME = lazy_compile(r"^(?:environment|conda|env)[\w.-]*\.ya?ml$", re.IGNORECASE)


def is_relevant_yaml(source: Source) -> bool:
    return bool(_CONDA_NAME.match(os.path.basename(source.path)) or _RELEVANT_KEYS.search(source.text))


def parse_yaml_source(source: Source) -> list:
    """All documents of the file as composed nodes (no tags constructed, so no code runs and no alias expands)."""
    if not is_relevant_yaml(source):
        return None
    import yaml

    try:
        docs = [d for d in yaml.compose_all(source.text, Loader=yaml.SafeLoader) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        raise ParseError(f"invalid YAML: {exc.problem or exc.context}", offset) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"invalid YAML: {exc}", 0) from None
    return docs


def node_span(node) -> Span:
    """Where a PyYAML node was written (character offsets: PyYAML reads the decoded text)."""
    return Span(node.start_mark.index, node.end_mark.index)


def mapping_get(node, key: str):
    """The value node for ``key`` in a mapping node (last one wins), or None."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            found = v
    return found
