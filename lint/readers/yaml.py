"""YAML sources as PyYAML node trees: safe loading only, marks give every scalar its exact span."""
from __future__ import annotations

import os
import re

from rlhf_lint.model import ParseError, Span
from rlhf_lint.readers.numbers import MAX_INT_DIGITS, overlong_number, overlong_run
from rlhf_lint.readers.source import Source
from rlhf_lint.startup.lazyre import lazy_compile

MAX_BYTES = 128 << 10  # a relevant YAML config (the largest real one seen: 36 KB)
MAX_DEPTH = 200  # nesting of mappings and sequences (as the JSON reader)
MAX_NODES = 200_000  # nodes of a file once its aliases and merge keys (<<) are expanded; past it, it is not read

# Top-level keys of the YAML rlhf-lint has rules for: verl/Hydra trainer configs, accelerate configs, conda
# environments. Other YAML (CI workflows, docs, k8s) is skipped after one regex, before PyYAML's slow composer.
_RELEVANT_KEYS = lazy_compile(
    r"^(?:actor_rollout_ref|critic|reward_model|algorithm|trainer|data|compute_environment|distributed_type"
    r"|deepspeed_config|dependencies|model_name_or_path|tuner_type|train_type|rlhf_type|run)\s*:",
    re.MULTILINE)  # model_name_or_path: HF recipes; tuner_type, train_type, rlhf_type: ms-swift argument files;
# run: a SkyPilot task's launch script
_CONDA_NAME = lazy_compile(r"^(?:environment|conda|env)[\w.-]*\.ya?ml$", re.IGNORECASE)


def is_relevant_yaml(source: Source) -> bool:
    return bool(_CONDA_NAME.match(os.path.basename(source.path)) or _RELEVANT_KEYS.search(source.text))


def parse_yaml_source(source: Source, named: bool = False) -> list:
    """All documents of the file as composed nodes (no tags constructed, so no code runs and no alias expands).
    ``named``: a launch names the file (a recipe given to --config), so it is read whatever its keys."""
    if not named and not is_relevant_yaml(source):
        return None
    if len(source.raw) > MAX_BYTES:
        source.skipped.append((Span(0, 0), f"a YAML config of {len(source.raw) >> 10} KiB, over the {MAX_BYTES >> 10} "
                                            "KiB rlhf-lint reads: not checked"))
        return None
    if flow_depth(source.text) > MAX_DEPTH:
        # before composing: libyaml's composer recurses in C and a 30,000-deep '[' run crashes the process
        source.skipped.append((Span(0, 0), f"this YAML nests deeper than {MAX_DEPTH} levels, the most rlhf-lint "
                                            "reads: the file was not checked"))
        return None
    import yaml

    try:
        # libyaml's composer when PyYAML has it: the same nodes and character marks, ~10x faster (a 1 MB config
        # took minutes with the pure-Python one)
        loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
        docs = [d for d in yaml.compose_all(source.text, Loader=loader) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        raise ParseError(f"invalid YAML: {exc.problem or exc.context}", offset) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"invalid YAML: {exc}", 0) from None
    for doc in docs:
        if nesting_over(doc, MAX_DEPTH):
            source.skipped.append((node_span(doc), f"this YAML nests deeper than {MAX_DEPTH} levels, the most "
                                                   "rlhf-lint reads: the file was not checked"))
            return None
        size = expanded_size(doc)
        if size > MAX_NODES:
            # merge keys doubling over 25 levels: PyYAML's flattening would copy 2^25 entries (51 s, 800 MB)
            source.skipped.append((node_span(doc), f"aliases and merge keys expand this YAML to {size:,} nodes, over "
                                                   f"the {MAX_NODES:,} rlhf-lint reads: the file was not checked"))
            return None
    if overlong_run(source.text) is not None:  # one search of the text; only then are the scalars looked at
        overlong = overlong_int(docs, source.text)
        if overlong is not None:
            raise overlong
    return docs


JSON_AS_YAML_BYTES = 64 << 10  # an accelerate config, a recipe or an argument file written as JSON (a few KB)


def json_as_yaml(source: Source) -> list:
    """A small JSON file composed as YAML (JSON is YAML), so what reads YAML configs and recipes reads it too, with
    exact spans: [] when it is over JSON_AS_YAML_BYTES, nests deeper than MAX_DEPTH, is refused by PyYAML, or is
    YAML in disguise whose aliases and merge keys expand past MAX_NODES."""
    text = source.text
    if len(text) > JSON_AS_YAML_BYTES or flow_depth(text) > MAX_DEPTH:
        return []
    import yaml

    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if node is None or nesting_over(node, MAX_DEPTH) or expanded_size(node) > MAX_NODES:
        return []
    return [node]


def named_yaml_docs(source: Source) -> list:
    """The documents of a YAML or small JSON file another file names (a recipe, an argument file): its tree, or the
    documents composed on demand, once (a YAML whose keys did not mark it as a config when the files were parsed, a
    JSON: json_as_yaml), within the same bounds; [] when they do not parse or are over one."""
    if source.kind == "yaml" and (source.tree is not None or source.parse_error is not None or source.skipped):
        return source.tree if isinstance(source.tree, list) else []
    if source.kind not in ("yaml", "json"):
        return []
    if source.named_docs is None:
        if source.kind == "json":
            source.named_docs = json_as_yaml(source)
        else:
            try:
                source.named_docs = parse_yaml_source(source, named=True) or []
            except (ParseError, RecursionError):
                source.named_docs = []
            source.skipped.clear()  # a bound it hits is no finding of the file's own: the file is left unread
    return source.named_docs


def overlong_int(docs: list, text: str):
    """A ParseError at the first scalar PyYAML reads as an integer (a plain one, or tagged !!int) that Python refuses
    to convert, or None. A quoted string of digits is no integer; each node is visited once, aliases too."""
    import yaml

    loader = yaml.SafeLoader("")
    seen: set[int] = set()
    stack = list(reversed(docs))
    try:
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if not isinstance(node, yaml.ScalarNode):
                stack.extend(reversed(_children(node)))
            elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
                try:
                    loader.construct_yaml_int(node)  # what yaml.safe_load does with it
                except ValueError:
                    start, end = node.start_mark.index, node.end_mark.index
                    at = text.find(node.value, start, end)  # past a tag or an anchor; an integer is written verbatim
                    return overlong_number(at if at >= 0 else start, sum(c.isdigit() for c in node.value))
    finally:
        loader.dispose()
    return None


_BRACKET = lazy_compile(r"[\[\]{}]")


def flow_depth(text: str) -> int:
    """The deepest nesting of flow brackets, every bracket counted (in quotes and comments too: an over-estimate,
    never an under-estimate that a crafted quote could cause), found without composing anything."""
    if "[" not in text and "{" not in text:
        return 0
    depth = deepest = 0
    for m in _BRACKET.finditer(text):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


def nesting_over(root, limit: int) -> bool:
    """Whether a node lies deeper than ``limit`` levels (each node visited once, iteratively)."""
    seen: set[int] = set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend((c, depth + 1) for c in _children(node))
    return False


def _children(node) -> list:
    """The nodes a node holds: a mapping's keys and values in order, a sequence's items; a scalar holds none."""
    if node.id == "mapping":
        return [c for pair in node.value for c in pair]
    return node.value if node.id == "sequence" else []


def expanded_size(root) -> int:
    """How many nodes the document has once every alias and merge key is expanded, counted once per distinct node
    (an alias is the same node object), so it costs the file's own size; a node that holds an alias to itself
    expands without end (MAX_EXPANDED)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()  # the nodes being expanded: the ancestors of the one popped
    stack = [(root, False)]
    while stack:  # iterative: the file's nesting depth must not meet the interpreter's recursion limit
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in _children(node)), MAX_EXPANDED)
            continue
        if key in sizes:
            continue
        if key in on_path:
            return MAX_EXPANDED
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    return sizes[id(root)]


MAX_EXPANDED = 1 << 62


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
