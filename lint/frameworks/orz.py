"""Open-Reasoner-Zero experiment configs: @dataclass classes read statically through libcst, never imported.

The effective value of a field is the subclass override or the base default, evaluated the way the class body
would be: literals, earlier names of the same class body, module-level names, arithmetic, comparisons, conditional
expressions and f-strings. Anything else stays UNKNOWN. Module-level flags read from the environment (``DEBUG_MODE``)
have no single value: every combination is evaluated as a *scenario*, and findings that differ between scenarios
name the one they hold in.
"""
from __future__ import annotations

import functools
import itertools
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.startup.records import field, record
from rlhf_lint.frameworks.jobs import Job, job_builder
from rlhf_lint.model import UNKNOWN, Setting, Settings, Span, is_known
from rlhf_lint.readers.source import Source
from rlhf_lint.readers.kinds import looks_like_orz

ORZ_BASE_CLASSES = ("BasePPOExpConfig",)
MAX_FLAGS = 3  # 2**3 scenarios at most


def release_defaults() -> dict:
    """BasePPOExpConfig defaults of the ORZ release (schemas/orz/base_defaults.json), used when the repository
    being linted does not contain orz/exps/examples/ppo/ppo_base_exp.py."""
    from rlhf_lint.schemas import load

    return load("orz/base_defaults.json")


# -- values ------------------------------------------------------------------------------------------------------
@record
class Resolved:
    """A field's value in one scenario and where it is written.

    node: the libcst node that produced the value (for a conditional, the branch taken), in ``path``; None for a
    release default. literal: the node is a literal a fix may replace.
    """

    value: Any
    node: Any = None
    path: str | None = None
    origin: str = ""
    literal: bool = False
    flags_used: frozenset = frozenset()


@record
class DeadBranch:
    """A conditional whose test never depends on a flag while its other branch does (ORZ issue #6)."""

    ifexp: Any
    dead: Any
    test_text: str
    test_value: Any
    flags: frozenset
    field: str


@record
class Scenario:
    flags: dict[str, bool]
    values: dict[str, Resolved]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.flags.items())

    def get(self, name: str) -> Any:
        r = self.values.get(name)
        return UNKNOWN if r is None else r.value


@record
class OrzConfig:
    path: str
    class_name: str
    class_node: Any
    name_node: Any
    base_chain: list[str]
    base_origin: str  # where inherited defaults came from
    base_path: str | None
    fields: list[str]  # every field name, base first
    own_fields: set[str]
    scenarios: list[Scenario]
    flags: list[str]
    dead_branches: list[DeadBranch] = field(default_factory=list)
    complete: bool = True  # False when a base class could not be found: missing fields are not "absent"


# -- expression evaluation ---------------------------------------------------------------------------------------
class _Env:
    def __init__(self, module_names: dict[str, Resolved], flags: dict[str, bool], path: str, code_for):
        self.local: dict[str, Resolved] = {}
        self.module = module_names
        self.flags = flags
        self.path = path
        self.code_for = code_for
        self.dead: list[tuple[Any, Any, Any, Any, frozenset]] = []


def _flag_names(node, flag_names: set[str]) -> frozenset:
    import libcst as cst

    found = set()

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, n):
            if n.value in flag_names:
                found.add(n.value)

    node.visit(Visitor())
    return frozenset(found)


_BINOPS = {
    "Add": lambda a, b: a + b, "Subtract": lambda a, b: a - b, "Multiply": lambda a, b: a * b,
    "Divide": lambda a, b: a / b, "FloorDivide": lambda a, b: a // b, "Modulo": lambda a, b: a % b,
    "Power": lambda a, b: a ** b if abs(b) < 64 else UNKNOWN,
}
_CMPOPS = {
    "Equal": lambda a, b: a == b, "NotEqual": lambda a, b: a != b, "LessThan": lambda a, b: a < b,
    "LessThanEqual": lambda a, b: a <= b, "GreaterThan": lambda a, b: a > b, "GreaterThanEqual": lambda a, b: a >= b,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b, "Is": lambda a, b: a is b,
    "IsNot": lambda a, b: a is not b,
}


def evaluate(node, env: _Env) -> Resolved:
    """The value of an expression node, with the leaf node it came from."""
    import libcst as cst

    def lit(value):
        return Resolved(value, node, env.path, literal=True)

    try:
        if isinstance(node, (cst.Integer, cst.Float)):
            return lit(node.evaluated_value)
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            value = node.evaluated_value
            return lit(value) if isinstance(value, (str, bytes)) else Resolved(UNKNOWN, node, env.path)
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return lit({"True": True, "False": False, "None": None}[node.value])
            if node.value in env.local:
                r = env.local[node.value]
                return Resolved(r.value, node, env.path, origin=f"= {node.value}", flags_used=r.flags_used)
            if node.value in env.flags:
                return Resolved(env.flags[node.value], node, env.path, origin=node.value,
                                flags_used=frozenset({node.value}))
            if node.value in env.module:
                r = env.module[node.value]
                return Resolved(r.value, node, env.path, origin=f"= {node.value}", flags_used=r.flags_used)
            return Resolved(UNKNOWN, node, env.path)
        if isinstance(node, cst.UnaryOperation):
            inner = evaluate(node.expression, env)
            op = type(node.operator).__name__
            value = UNKNOWN
            if is_known(inner.value):
                value = {"Not": lambda v: not v, "Minus": lambda v: -v, "Plus": lambda v: +v,
                         "BitInvert": lambda v: ~v}[op](inner.value)
            # -1 is a literal a fix may replace as a whole
            return Resolved(value, node, env.path, literal=inner.literal and op in ("Minus", "Plus"),
                            flags_used=inner.flags_used)
        if isinstance(node, cst.BinaryOperation):
            left, right = evaluate(node.left, env), evaluate(node.right, env)
            fn = _BINOPS.get(type(node.operator).__name__)
            value = UNKNOWN
            if fn and is_known(left.value) and is_known(right.value):
                value = fn(left.value, right.value)
            return Resolved(value, node, env.path, origin=env.code_for(node),
                            flags_used=left.flags_used | right.flags_used)
        if isinstance(node, cst.BooleanOperation):
            left = evaluate(node.left, env)
            right = evaluate(node.right, env)
            used = left.flags_used | right.flags_used
            if not is_known(left.value):
                return Resolved(UNKNOWN, node, env.path, flags_used=used)
            is_and = isinstance(node.operator, cst.And)
            if bool(left.value) != is_and:  # short circuit
                return Resolved(left.value, node, env.path, flags_used=used)
            return Resolved(right.value, node, env.path, flags_used=used)
        if isinstance(node, cst.Comparison):
            left = evaluate(node.left, env)
            used = left.flags_used
            value: Any = True
            current = left.value
            for target in node.comparisons:
                right = evaluate(target.comparator, env)
                used |= right.flags_used
                fn = _CMPOPS.get(type(target.operator).__name__)
                if fn is None or not is_known(current) or not is_known(right.value):
                    value = UNKNOWN
                    break
                if not fn(current, right.value):
                    value = False
                current = right.value
            return Resolved(value, node, env.path, flags_used=used)
        if isinstance(node, cst.IfExp):
            test = evaluate(node.test, env)
            if not is_known(test.value):
                return Resolved(UNKNOWN, node, env.path, flags_used=test.flags_used)
            taken, other = (node.body, node.orelse) if test.value else (node.orelse, node.body)
            if not test.flags_used:
                other_flags = _flag_names(other, set(env.flags))
                if other_flags:
                    env.dead.append((node, other, node.test, test.value, other_flags))
            chosen = evaluate(taken, env)
            chosen.flags_used = chosen.flags_used | test.flags_used
            if test.flags_used:
                chosen.origin = chosen.origin or "branch for " + ", ".join(f"{f}={env.flags[f]}" for f in sorted(test.flags_used))
            return chosen
        if isinstance(node, cst.FormattedString):
            parts = []
            used = frozenset()
            for part in node.parts:
                if isinstance(part, cst.FormattedStringText):
                    parts.append(part.value)
                    continue
                inner = evaluate(part.expression, env)
                used |= inner.flags_used
                if part.format_spec or part.conversion or not is_known(inner.value):
                    return Resolved(UNKNOWN, node, env.path, flags_used=used)
                parts.append(str(inner.value))
            return Resolved("".join(parts), node, env.path, flags_used=used)
        if isinstance(node, (cst.Tuple, cst.List)):
            items = [evaluate(e.value, env) for e in node.elements if isinstance(e, cst.Element)]
            if len(items) != len(node.elements) or not all(is_known(i.value) for i in items):
                return Resolved(UNKNOWN, node, env.path)
            values = [i.value for i in items]
            return Resolved(tuple(values) if isinstance(node, cst.Tuple) else values, node, env.path)
    except (ArithmeticError, TypeError, ValueError, OverflowError):
        return Resolved(UNKNOWN, node, env.path)
    return Resolved(UNKNOWN, node, env.path)


# -- modules and classes -----------------------------------------------------------------------------------------
def _mentions_environment(node) -> bool:
    import libcst as cst

    hit = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, n):
            if n.value in ("environ", "getenv"):
                hit.append(n)

    node.visit(Visitor())
    return bool(hit)


def _is_boolean_shaped(node) -> bool:
    import libcst as cst

    if isinstance(node, (cst.Comparison, cst.BooleanOperation)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return True
    if isinstance(node, cst.IfExp):
        return all(isinstance(b, cst.Name) and b.value in ("True", "False") for b in (node.body, node.orelse))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("bool", "strtobool"):
        return True
    return False


def _simple_assignments(body):
    """(name, value node, statement) for ``name = value`` and ``name: T = value`` statements of a block."""
    import libcst as cst

    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                yield small.target.value, small.value, small
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target,
                                                                                             cst.Name):
                yield small.targets[0].target.value, small.value, small


def _dotted(node) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return _dotted(node.func)
    return ""


def _is_dataclass(classdef) -> bool:
    return any(_dotted(d.decorator).split(".")[-1] == "dataclass" for d in classdef.decorators)


@record
class _Module:
    path: str
    tree: Any
    flags: list[str]
    names: dict[str, Resolved]  # module-level names evaluated without flags (flag-free values only)
    name_nodes: dict[str, Any]
    classes: dict[str, Any]  # name -> ClassDef (dataclasses and others)
    code_for: Any


def _read_module(source: Source) -> _Module:
    import libcst as cst

    tree = source.tree
    flags: list[str] = []
    names: dict[str, Resolved] = {}
    name_nodes: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    code_for = functools.lru_cache(maxsize=None)(lambda n: tree.code_for_node(n))
    for stmt in tree.body:
        if isinstance(stmt, cst.ClassDef):
            classes[stmt.name.value] = stmt
    for name, value, _stmt in _simple_assignments(tree.body):
        if value is None:
            continue
        if _mentions_environment(value) and _is_boolean_shaped(value):
            if name not in flags:
                flags.append(name)
            continue
        name_nodes[name] = value
    return _Module(source.path, tree, flags, names, name_nodes, classes, code_for)


def _module_env(mod: _Module, flags: dict[str, bool]) -> dict[str, Resolved]:
    """Module-level names in order, under the given flag values."""
    env = _Env({}, flags, mod.path, mod.code_for)
    out: dict[str, Resolved] = {}
    for name, node in mod.name_nodes.items():
        env.module = out
        out[name] = evaluate(node, env)
    return out


def _eval_class(mod: _Module, classdef, flags: dict[str, bool], module_names: dict[str, Resolved]):
    env = _Env(module_names, flags, mod.path, mod.code_for)
    order: list[str] = []
    body = classdef.body.body if hasattr(classdef.body, "body") else []
    for name, value, _small in _simple_assignments(body):
        if value is None:
            continue
        resolved = evaluate(value, env)
        env.local[name] = resolved
        if name not in order:
            order.append(name)
    return env.local, order, env.dead


def _find_class_source(project, class_name: str, exclude: str) -> Source | None:
    if project is None:
        return None
    pattern = re.compile(rf"^class\s+{re.escape(class_name)}\b", re.MULTILINE)
    for source in project.of_kind("python"):
        # only ORZ-like modules have a libcst tree (setup.py has an ast one)
        if source.path != exclude and source.tree is not None and looks_like_orz(source.text) \
                and pattern.search(source.text):
            return source
    return None


def _base_values(mod: _Module, classdef, project, depth: int = 0):
    """(values, chain, origin, path, complete) inherited by ``classdef`` from its first base (evaluated with every
    flag False: base classes are read for their defaults)."""
    if depth > 8 or not classdef.bases:
        return {}, [], "", None, True
    base_name = _dotted(classdef.bases[0].value).split(".")[-1]
    base_mod = None
    if base_name in mod.classes and base_name != classdef.name.value:
        base_mod = mod
    else:
        other = _find_class_source(project, base_name, mod.path)
        if other is not None and base_name in _module(other).classes:
            base_mod = _module(other)
    if base_mod is not None:
        base_def = base_mod.classes[base_name]
        inherited, chain, _origin, _path, complete = _base_values(base_mod, base_def, project, depth + 1)
        flags = {f: False for f in base_mod.flags}
        own, _order, _dead = _eval_class(base_mod, base_def, flags, _module_env(base_mod, flags))
        where = "" if base_mod is mod else f" ({base_mod.path})"
        merged = dict(inherited)
        for k, v in own.items():
            v.origin = f"default of {base_name}{where}"
            merged[k] = v
        return merged, [base_name] + chain, f"{base_name} in {base_mod.path}", base_mod.path, complete
    if base_name in ORZ_BASE_CLASSES or base_name == "BaseConfig":
        data = release_defaults()
        origin = f"ORZ {data['release']} default of {base_name}"
        fields = data["fields"] if base_name in ORZ_BASE_CLASSES else {"seed": data["base_config_fields"]["seed"]}
        values = {k: Resolved(v["default"] if "default" in v else UNKNOWN, None, None, origin=origin)
                  for k, v in fields.items()}
        return values, [base_name], origin, None, True
    return {}, [base_name], "", None, False


def _inherits_orz(mod: _Module, classdef, project, depth: int = 0) -> bool:
    if depth > 8:
        return False
    for arg in classdef.bases:
        base = _dotted(arg.value).split(".")[-1]
        if base in ORZ_BASE_CLASSES:
            return True
        if base in mod.classes and base != classdef.name.value and _inherits_orz(mod, mod.classes[base], project,
                                                                                   depth + 1):
            return True
    return False


_MODULES: dict[int, tuple[Any, _Module]] = {}
_CONFIGS: dict[tuple[int, int], tuple[Any, Any, list[OrzConfig]]] = {}


def _module(source: Source) -> _Module:
    cached = _MODULES.get(id(source.tree))
    if cached is not None and cached[0] is source.tree:
        return cached[1]
    mod = _read_module(source)
    if len(_MODULES) > 16:  # a group of files holds a few configs; more entries only keep old trees alive
        _MODULES.clear()
    _MODULES[id(source.tree)] = (source.tree, mod)
    return mod


def analyze(source: Source, project=None) -> list[OrzConfig]:
    """Every ORZ config class of a Python source (leaf classes: those no other class of the file extends)."""
    if source.kind != "python" or source.tree is None or not looks_like_orz(source.text):
        return []
    key = (id(source.tree), id(project))
    cached = _CONFIGS.get(key)
    if cached is not None and cached[0] is source.tree and cached[1] is project:
        return cached[2]
    configs = _analyze(source, project)
    if len(_CONFIGS) > 16:  # each entry keeps its whole project (every parse tree of a group) alive
        _CONFIGS.clear()
    _CONFIGS[key] = (source.tree, project, configs)
    return configs


def _analyze(source: Source, project) -> list[OrzConfig]:
    mod = _module(source)
    extended = {_dotted(a.value).split(".")[-1] for c in mod.classes.values() for a in c.bases}
    configs = []
    for name, classdef in mod.classes.items():
        if name in extended or not _is_dataclass(classdef) or not _inherits_orz(mod, classdef, project):
            continue
        inherited, chain, base_origin, base_path, complete = _base_values(mod, classdef, project)
        flags = mod.flags[:MAX_FLAGS]
        scenarios: list[Scenario] = []
        own: set[str] = set()
        order: list[str] = list(inherited)
        dead_seen: dict[int, DeadBranch] = {}
        for combo in itertools.product((False, True), repeat=len(flags)):
            flag_values = dict(zip(flags, combo))
            names = _module_env(mod, flag_values)
            values, own_order, dead = _eval_class(mod, classdef, flag_values, names)
            own |= set(values)
            for n in own_order:
                if n not in order:
                    order.append(n)
            merged = dict(inherited)
            merged.update(values)
            scenarios.append(Scenario(flag_values, merged))
            for ifexp, other, test, test_value, used in dead:
                if id(ifexp) not in dead_seen:
                    field_name = next((n for n, r in values.items() if _contains(r, ifexp)), "")
                    dead_seen[id(ifexp)] = DeadBranch(ifexp, other, mod.code_for(test), test_value, used, field_name)
        configs.append(OrzConfig(
            path=source.path, class_name=name, class_node=classdef, name_node=classdef.name, base_chain=chain,
            base_origin=base_origin, base_path=base_path, fields=order, own_fields=own, scenarios=scenarios,
            flags=flags, dead_branches=list(dead_seen.values()), complete=complete,
        ))
    return configs


def _contains(resolved: Resolved, node) -> bool:
    """Whether the node a field's value came from lies inside ``node`` (libcst nodes have no parent links)."""
    import libcst as cst

    if resolved.node is None:
        return False
    found = []

    class Visitor(cst.CSTVisitor):
        def on_visit(self, n):
            if n is resolved.node:
                found.append(n)
                return False
            return True

    node.visit(Visitor())
    return bool(found)


# -- jobs --------------------------------------------------------------------------------------------------------
def _span(source_for, resolved: Resolved) -> tuple[str | None, Span | None]:
    from rlhf_lint.readers.python import node_span

    if resolved.node is None or resolved.path is None:
        return None, None
    src = source_for(resolved.path)
    if src is None:
        return resolved.path, None
    return resolved.path, node_span(src, resolved.node)


def settings_for(config: OrzConfig, scenario: Scenario, source_for, overrides: dict | None = None) -> Settings:
    """The common vocabulary (rlhf_lint.settings) from one scenario of a config (``overrides``: field -> Setting
    from a launch script's ``exp.<field>=value``, which win)."""
    overrides = overrides or {}
    settings = Settings()

    def add(key: str, name: str, convert=lambda v: v):
        if name in overrides:
            o = overrides[name]
            value = convert(o.value) if is_known(o.value) else UNKNOWN
            settings.add(Setting(key, value, o.path, o.span, origin=f"exp.{name} override", raw=o.raw))
            return
        r = scenario.values.get(name)
        if r is None:
            return
        path, span = _span(source_for, r)
        value = convert(r.value) if is_known(r.value) else UNKNOWN
        settings.add(Setting(key, value, path, span, origin=r.origin))

    settings.add(Setting("framework", "orz", config.path, None))
    add("job.type", "use_grpo", lambda v: "grpo" if v else "ppo")
    for role in ("actor", "ref"):
        add(f"model.{role}.path", "pretrain")
    add("model.critic.path", "critic_pretrain")
    add("model.reward.path", "reward_pretrain")
    for role in ("actor", "critic", "ref", "reward"):
        add(f"topology.{role}.nodes", f"{role}_num_nodes")
        add(f"topology.{role}.gpus_per_node", f"{role}_num_gpus_per_node")
    for name in ("colocate_all", "colocate_actor_ref", "colocate_critic_reward"):
        add(f"topology.{name}", name)
    add("vllm.num_engines", "vllm_num_engines")
    add("vllm.tensor_parallel_size", "vllm_tensor_parallel_size")
    add("vllm.gpu_memory_utilization", "gpu_memory_utilization")
    add("vllm.max_num_seqs", "micro_rollout_batch_size")  # ORZ passes it to vLLM as max_num_seqs
    add("vllm.enforce_eager", "enforce_eager")
    add("zero.stage", "zero_stage")
    add("precision.param_dtype", "bf16", lambda v: "bf16" if v else UNKNOWN)
    add("precision.grad_accum_dtype", "grad_accum_dtype", lambda v: v if v else UNKNOWN)
    add("offload.optimizer", "adam_offload", lambda v: "cpu" if v else "none")
    add("offload.ref", "ref_reward_offload")
    add("offload.reward", "ref_reward_offload")
    add("batch.micro_train", "micro_train_batch_size")
    add("batch.train", "train_batch_size")
    # ORZ's micro_rollout_batch_size is vLLM's generation batch (max_num_seqs above); the experience forward passes
    # run micro_forward_batch_size packed sequences
    add("batch.micro_rollout", "micro_forward_batch_size")
    add("batch.rollout", "rollout_batch_size")
    add("batch.n_samples_per_prompt", "n_samples_per_prompt")
    add("seq.prompt_max_len", "prompt_max_len")
    add("seq.generate_max_len", "generate_max_len")
    add("seq.max_len", "max_len", lambda v: v if v is not None else UNKNOWN)
    add("train.gradient_checkpointing", "gradient_checkpointing")
    add("train.flash_attn", "flash_attn")
    settings.add(Setting("train.packing", True, config.path, None, origin="ORZ always packs samples"))
    if settings.value("topology.colocate_all") is True:
        _colocate_all_sleeps(settings, config.path)
    return settings


ORZ_SRC = "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/blob/3fdd9a07b4/orz"


def _colocate_all_sleeps(settings: Settings, path: str) -> None:
    """What ``colocate_all`` makes ORZ do with the GPU between uses (the memory model reads these)."""
    def derived(key: str, value, origin: str) -> None:
        settings.add(Setting(key, value, path, None, origin=f"ORZ colocate_all: {origin}"))

    # vLLM is offloaded after each generation and backloaded before the next; its weights go to the meta device
    # (re-sent by the policy), so no host copy is kept
    derived("vllm.enable_sleep", True, f"vLLM engines offloaded after generation ({ORZ_SRC}/ppo/trainer.py#L232-L235)")
    derived("vllm.sleep_level", 2, "offload_cpu moves vLLM's weights to the meta device and frees the KV cache "
                                   f"({ORZ_SRC}/exp_engine/accelerators/inference/vllm_worker_wrap.py#L84-L100)")
    # backload_to_gpu re-creates the weights and the whole KV cache before the weights are sent
    derived("vllm.sync_wake", "all", f"backload_to_gpu rebuilds weights and KV cache ({ORZ_SRC}/exp_engine/"
                                     "accelerators/inference/vllm_engine.py#L74-L89)")
    # policy and critic are backloaded around each use and offloaded after it; the policy is backloaded while it
    # sends its weights (at start-up and after each update)
    derived("deepspeed.enable_sleep", True, f"policy and critic offloaded between uses ({ORZ_SRC}/ppo/trainer.py"
                                            "#L142-L151, #L384-L449)")
    derived("deepspeed.sync_loaded", True, f"policy backloaded for the weight sync ({ORZ_SRC}/ppo/trainer.py#L66-L80, "
                                           "#L730-L742)")
    # offload_to_cpu offloads optim_states, contiguous_grad_buffer and hp_params, not lp_params or lp_grads
    derived("deepspeed.sleep_keeps", ("weights", "gradients"), f"16-bit parameter and gradient partitions stay "
                                                               f"({ORZ_SRC}/ppo/actors.py#L182-L208)")
    # the reference and reward models run with DeepSpeed parameter offload
    for role in ("ref", "reward"):
        if settings.value(f"offload.{role}") is not True:
            derived(f"offload.{role}", True, f"ref/reward parameters offloaded ({ORZ_SRC}/ppo/actors.py#L925, #L955)")


def _roles(settings: Settings) -> tuple[str, ...]:
    roles = ["actor", "ref", "vllm"]
    if settings.value("model.critic.path"):
        roles.append("critic")
    if settings.value("model.reward.path"):
        roles.append("reward")
    return tuple(roles)


def jobs_for(config: OrzConfig, project, launch_path: str | None = None, launch_span: Span | None = None,
             overrides: dict | None = None) -> list[Job]:
    """One job per scenario whose settings differ; a single job when the flags change nothing that matters."""

    def source_for(path):
        return None if project is None else project.sources.get(path)

    jobs: list[Job] = []
    seen: list[list[tuple]] = []
    for scenario in config.scenarios:
        settings = settings_for(config, scenario, source_for, overrides)
        signature = [(s.key, repr(s.value)) for s in settings]
        if signature in seen:
            continue
        seen.append(signature)
        src = source_for(config.path)
        name = f"{os.path.basename(config.path)}:{config.class_name}"
        job_span = None
        if src is not None:
            from rlhf_lint.readers.python import node_span

            job_span = node_span(src, config.name_node)
        assumptions = []
        if len(config.scenarios) > 1 and scenario.label:
            name += f" [{scenario.label}]"
            assumptions.append(f"evaluated with {scenario.label}")
        if not config.complete:
            assumptions.append(f"base class {config.base_chain[-1] if config.base_chain else '?'} not found: "
                               "inherited fields unknown")
        jobs.append(OrzJob(name=name, path=launch_path or config.path, span=launch_span or job_span,
                           framework="orz", settings=settings, roles=_roles(settings), assumptions=assumptions,
                           config=config, scenario=scenario.label if len(config.scenarios) > 1 else ""))
    if len(jobs) == 1:
        jobs[0].scenario = ""  # every scenario gave the same settings
    return jobs


@record
class OrzJob(Job):
    config: OrzConfig | None = None
    unknown_overrides: list = field(default_factory=list)  # (Override, message) from the launch command
    scenario: str = ""  # "DEBUG_MODE=True" when the config's environment flags give several jobs


def interpret(command, source, project) -> list[Job]:
    """``python -m playground.<config> exp.<field>=value ...``: the config module's jobs with the overrides applied."""
    from rlhf_lint.frameworks.verl import override_words, split_override

    entry = command.entry.text if command.entry is not None else None
    if not isinstance(entry, str) or project is None:
        return []
    target = project.resolve(command.path, entry.replace(".", "/") + ".py")
    if target is None or target.tree is None:
        return []
    configs = analyze(target, project)
    if not configs:
        return []
    config = configs[-1]
    overrides: dict[str, Setting] = {}
    unknown = []
    for word in override_words(command):
        o = split_override(word, source.text if source is not None and word.path == command.path else None)
        if o is None or not o.key.startswith("exp."):
            continue
        name = o.key[len("exp."):]
        if name in config.fields or not config.complete:
            overrides[name] = Setting(name, o.value, o.path, o.value_span or o.span, raw=o.text)
        else:
            import difflib

            near = difflib.get_close_matches(name, config.fields, n=1, cutoff=0.8)
            hint = f"; did you mean exp.{near[0]}?" if near else ""
            unknown.append((o, f"exp.{name}: {config.class_name} has no field {name!r}: ORZ raises ValueError at "
                               f"start-up{hint}"))
    if not overrides and not unknown:
        return []  # the config module's own job already says everything this launch runs
    jobs = jobs_for(config, project, command.path, command.span, overrides)
    for job in jobs:
        job.unknown_overrides = list(unknown)
        job.hardware = dict(command.hardware)
    return jobs


@job_builder(kinds={"python"})
def build_orz_jobs(source: Source, project) -> list[Job]:
    configs = analyze(source, project)
    if not configs:
        return []
    from rlhf_lint.readers.shell import parse_hardware  # the `# rlhf-lint: hardware ...` comment reads the same in Python

    hardware, _span = parse_hardware(source.text)
    jobs: list[Job] = []
    for config in configs:
        for job in jobs_for(config, project):
            job.hardware = dict(hardware)
            jobs.append(job)
    return jobs
