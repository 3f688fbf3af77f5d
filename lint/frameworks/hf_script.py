"""Training scripts that build their Hugging Face arguments in Python rather than parsing flags:

    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct", torch_dtype=torch.bfloat16)
    args = DPOConfig(output_dir="out", per_device_train_batch_size=8, gradient_checkpointing=True)
    DPOTrainer(model=model, args=args, peft_config=LoraConfig(r=16)).train()

The script is parsed with CPython's ast (parsing runs none of it). Only keywords whose values are literals, or names
bound once in the file to a literal, are read; anything else is an unknown value at its span. The calls read and
what their keywords mean are data (schemas/hf/script_calls.json); the keywords map through the TrainingArguments
field table of rlhf_lint.frameworks.hf, so a script's `bf16=True` and a flag `--bf16` are one setting.
"""
from __future__ import annotations

import ast
import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rlhf_lint.readers.source import Source

from rlhf_lint.model import UNKNOWN, Span
from rlhf_lint.startup.records import field, record


@functools.lru_cache(maxsize=1)
def calls() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/script_calls.json")


@record
class ScriptFacts:
    """What a script's calls say: ``entries`` {field: (value, span, origin)} in TrainingArguments field names."""

    entries: dict = field(default_factory=dict)
    kind: str = "hf"  # "trl" when a TRL class is called
    job_type: str | None = None
    type_span: Span | None = None
    span: Span | None = None  # the TrainingArguments-family call: the job's position
    parses_args: bool = False  # the script also parses a command line: flags may change what it builds
    loads_model: bool = False  # the script's own from_pretrained loads the trained model (not TRL from an id)
    notes: list = field(default_factory=list)


def _name(node) -> str:
    """The last name of a callee: ``SFTConfig`` of ``trl.SFTConfig(...)``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


HF_PACKAGES = ("transformers", "trl")


def hf_imports(tree: ast.Module) -> tuple[dict, set]:
    """({local name: imported name} of what the file imports from transformers or trl, {local names of those
    modules}): a ``Trainer`` of another library (Lightning's) is no HF trainer."""
    names, modules = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in HF_PACKAGES:
            for alias in node.names:
                names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in HF_PACKAGES:
                    modules.add((alias.asname or alias.name).split(".")[0])
    return names, modules


def _callee(func, imported: dict, modules: set) -> tuple[str, bool]:
    """(the class a callee names, through an import alias; whether transformers or trl provide it)."""
    if isinstance(func, ast.Name):
        return imported.get(func.id, func.id), func.id in imported
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return _name(func), isinstance(func, ast.Attribute) and isinstance(root, ast.Name) and root.id in modules


class _Reader:
    def __init__(self, source: "Source", tree: ast.Module):
        self.source = source
        self.tree = tree
        self.consts = self._constants()

    # -- positions -------------------------------------------------------------------------------------------------
    def span(self, node) -> Span | None:
        end_line = getattr(node, "end_lineno", None)
        if end_line is None:
            return None
        return Span(self._offset(node.lineno, node.col_offset), self._offset(end_line, node.end_col_offset))

    def _offset(self, line: int, byte_col: int) -> int:
        """ast columns count UTF-8 bytes of the line; Source offsets count characters."""
        text = self.source.line_text(max(1, min(line, self.source.line_count())))
        col = len(text.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))
        return self.source.offset(line, col + 1)

    # -- values ----------------------------------------------------------------------------------------------------
    def _constants(self) -> dict:
        """Names bound exactly once in the whole file, to a literal (``MODEL = "Qwen/..."``): a name bound twice,
        a parameter or a loop variable may hold anything when the call runs."""
        bindings: dict[str, int] = {}
        literal: dict[str, object] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bindings[node.id] = bindings.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                bindings[node.arg] = bindings.get(node.arg, 0) + 2
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    bindings[name] = bindings.get(name, 0) + 2
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name):
                    literal[targets[0].id] = self.literal(node.value, {})
        return {name: value for name, value in literal.items()
                if bindings.get(name) == 1 and value is not UNKNOWN}

    def literal(self, node, consts=None):
        """The value of a literal expression: constants, negative numbers, lists and tuples of them, a name bound
        once to one, ``torch.bfloat16``; else UNKNOWN."""
        consts = self.consts if consts is None else consts
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) in (int, float):
            return -node.operand.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.literal(i, consts) for i in node.elts]
            return UNKNOWN if any(i is UNKNOWN for i in items) else items
        if isinstance(node, ast.Name):
            return consts.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            return node.attr  # torch.bfloat16 -> "bfloat16", mapped like the string
        return UNKNOWN

    # -- calls -----------------------------------------------------------------------------------------------------
    def read(self) -> ScriptFacts | None:
        table = calls()
        configs = table["configs"]["classes"]
        trainers = table["trainers"]["classes"]
        trl_only = set(table["trainers"]["trl_only"])
        loaders = tuple(table["model_loaders"]["suffixes"])
        facts = ScriptFacts()
        assigned: dict[str, ast.Call] = {}  # name -> the call assigned to it (a model, a LoRA config)
        found: list[tuple[str, ast.Call]] = []
        imported, modules = hf_imports(self.tree)
        hf_classes = set(configs) | set(trainers)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, node.value)
            if isinstance(node, ast.Call):
                name, from_hf = _callee(node.func, imported, modules)
                if name in hf_classes and not from_hf:
                    continue  # a class of that name from another library
                found.append((name, node))
        found.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
        parsers = set(table["argument_parsers"]["classes"])
        facts.parses_args = any(name in parsers for name, _ in found)
        config_calls = [(name, call) for name, call in found if name in configs]
        trainer_calls = [(name, call) for name, call in found if name in trainers]
        if not config_calls and not trainer_calls:
            return None
        if any(name in trl_only for name, _ in found):
            facts.kind = "trl"
        training = [call for name, call in config_calls if name != "ModelConfig"]
        facts.span = self.span(training[0] if training else (config_calls or trainer_calls)[0][1])
        if len(training) > 1:
            facts.notes.append(f"{len(training)} TrainingArguments-family calls in the script: the first one's "
                               "values read, the others ignored")
            config_calls = [(n, c) for n, c in config_calls if c is training[0] or n == "ModelConfig"]
        for name, call in config_calls:
            self._keywords(facts, call)
            kind = configs[name]
            if kind is not None and facts.job_type is None:
                facts.job_type, facts.type_span = kind, self.span(call.func)
        trainer = trainer_calls[0] if trainer_calls else None
        if trainer is not None and trainers[trainer[0]] is not None:
            facts.job_type, facts.type_span = trainers[trainer[0]], self.span(trainer[1].func)
        model_call = self._model_call(trainer[1] if trainer else None, assigned, found, loaders, facts)
        if model_call is not None:
            self._model(facts, model_call, assigned, table)
        self._lora(facts, found, trainer[1] if trainer else None, assigned, table["lora"])
        self._checkpointing(facts, found, table["checkpointing_calls"])
        return facts

    def _keywords(self, facts: ScriptFacts, call: ast.Call) -> None:
        from rlhf_lint.schemas import load

        fields = load("hf/training_args.json")["fields"]
        for kw in call.keywords:
            if kw.arg is None:
                facts.notes.append(f"{_name(call.func)}(**...) at line {call.lineno}: the unpacked values are not read")
                continue
            if kw.arg == "model_init_kwargs" and isinstance(kw.value, ast.Dict):
                self._dict_keywords(facts, kw.value, ("torch_dtype", "dtype", "attn_implementation"))
                continue
            if kw.arg in fields:
                self._entry(facts, kw.arg, kw.value, f"{kw.arg}= in {_name(call.func)}(...)")

    def _dict_keywords(self, facts: ScriptFacts, node: ast.Dict, names) -> None:
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and key.value in names:
                self._entry(facts, key.value, value, f"{key.value} in model_init_kwargs")

    def _entry(self, facts: ScriptFacts, name: str, node, origin: str) -> None:
        value = self.literal(node)
        if isinstance(node, ast.Name) and value is not UNKNOWN:
            origin = f"{origin}: {node.id} bound once in the script"
        facts.entries[name] = (value, self.span(node), origin)

    def _model_call(self, trainer, assigned, found, loaders, facts) -> ast.Call | None:
        """The from_pretrained call of the model the trainer trains (its model= names it), else the first model
        loader of the script; a model id string given as model= is recorded instead."""
        def is_loader(call) -> bool:
            func = call.func
            return (isinstance(func, ast.Attribute) and func.attr == "from_pretrained"
                    and _name(func.value).endswith(loaders))

        if trainer is not None:
            model = next((kw.value for kw in trainer.keywords if kw.arg == "model"), None)
            if model is None and trainer.args:
                model = trainer.args[0]
            if isinstance(model, ast.Name) and model.id in assigned and is_loader(assigned[model.id]):
                return assigned[model.id]
            if isinstance(model, ast.Call) and is_loader(model):
                return model
            if model is not None and isinstance(self.literal(model), str):
                self._entry(facts, "model_name_or_path", model, f"model= in {_name(trainer.func)}(...)")
                return None
        return next((call for _, call in found if is_loader(call)), None)

    def _model(self, facts: ScriptFacts, call: ast.Call, assigned: dict, table: dict) -> None:
        facts.loads_model = True
        path = call.args[0] if call.args else next(
            (kw.value for kw in call.keywords if kw.arg == "pretrained_model_name_or_path"), None)
        if path is not None:
            self._entry(facts, "model_name_or_path", path, "the model from_pretrained loads")
        wanted = set(table["model_loaders"]["keywords"])
        for kw in call.keywords:
            if kw.arg in wanted:
                self._entry(facts, kw.arg, kw.value, f"{kw.arg}= in from_pretrained(...)")
            elif kw.arg == "use_flash_attention_2" and self.literal(kw.value) is True:
                facts.entries["attn_implementation"] = ("flash_attention_2", self.span(kw.value),
                                                        "use_flash_attention_2=True in from_pretrained(...)")
            elif kw.arg == "quantization_config":
                quant = kw.value
                if isinstance(quant, ast.Name):
                    quant = assigned.get(quant.id)
                if isinstance(quant, ast.Call) and _name(quant.func) in table["quantization"]["classes"]:
                    for qkw in quant.keywords:
                        if qkw.arg in table["quantization"]["keywords"]:
                            self._entry(facts, qkw.arg, qkw.value, f"{qkw.arg}= in {_name(quant.func)}(...)")

    def _lora(self, facts: ScriptFacts, found, trainer, assigned, spec: dict) -> None:
        """LoRA when a LoraConfig is applied (get_peft_model, or a trainer's peft_config=)."""
        applied = None
        for name, call in found:
            if name in spec["apply_calls"]:
                applied = call.args[1] if len(call.args) > 1 else next(
                    (kw.value for kw in call.keywords if kw.arg in ("peft_config", "config")), None)
                break
        if applied is None and trainer is not None:
            applied = next((kw.value for kw in trainer.keywords if kw.arg == spec["trainer_keyword"]), None)
            if isinstance(applied, ast.Constant) and applied.value is None:
                return
        if applied is None:
            return
        config = assigned.get(applied.id) if isinstance(applied, ast.Name) else applied
        if not (isinstance(config, ast.Call) and _name(config.func) in spec["classes"]):
            facts.entries.setdefault("lora_r", (UNKNOWN, self.span(applied), "a PEFT config not read"))
            return
        given = {kw.arg for kw in config.keywords}
        for kw in config.keywords:
            name = spec["fields"].get(kw.arg or "")
            if name is not None:
                self._entry(facts, name, kw.value, f"{kw.arg}= in {_name(config.func)}(...)")
        if "r" not in given:
            facts.entries["lora_r"] = (spec["default_r"], self.span(config.func),
                                       f"{_name(config.func)} default r {spec['default_r']}")

    def _checkpointing(self, facts: ScriptFacts, found, spec: dict) -> None:
        if "gradient_checkpointing" in facts.entries:
            return
        for name, call in found:
            if name in spec["methods"] and isinstance(call.func, ast.Attribute):
                facts.entries["gradient_checkpointing"] = (True, self.span(call.func), f"{name}() call")
                return
            keyword = spec["functions"].get(name)
            if keyword is not None:
                given = next((kw.value for kw in call.keywords if kw.arg == keyword), None)
                value = True if given is None else self.literal(given)
                if value is not False:
                    facts.entries["gradient_checkpointing"] = (value, self.span(given if given is not None else
                                                                                call.func), f"{name}(...)")
                    return


_FACTS: dict[int, tuple[object, ScriptFacts | None]] = {}


def script_facts(source: "Source") -> ScriptFacts | None:
    """The facts of an HF training script (its tree an ast.Module from rlhf_lint.readers.python), else None."""
    from rlhf_lint.readers.kinds import looks_like_hf_script

    tree = getattr(source, "tree", None)
    if not isinstance(tree, ast.Module) or not looks_like_hf_script(source.text):
        return None
    cached = _FACTS.get(id(tree))
    if cached is not None and cached[0] is tree:
        return cached[1]
    try:
        facts = _Reader(source, tree).read()
    except RecursionError:  # the gate bounds nesting; a pathological tree still gives no job rather than a crash
        facts = None
    if len(_FACTS) > 64:
        _FACTS.clear()
    _FACTS[id(tree)] = (tree, facts)
    return facts
