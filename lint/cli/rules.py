"""Rule documentation: one text per rule (its docstring), shown by `rlhf-lint rule` and gathered in docs/rules.md."""
from __future__ import annotations

from rlhf_lint.engine.registry import FAMILIES, REGISTRY


def rules_reference() -> str:
    out = ["# Rules", "",
           "Generated from the rules' own documentation by `python -m rlhf_lint.cli.rules > docs/rules.md`; "
           "`rlhf-lint rule CODE` prints the same text.", ""]
    rules = REGISTRY.all()
    out += ["| Code | Name | Severity | Fix | Summary |", "|---|---|---|---|---|"]
    for r in rules:
        out.append(f"| [{r.code}](#{r.anchor}) | {r.name} | {r.severity.label} | "
                   f"{'yes' if r.fixable else ''} | {r.summary} |")
    family = None
    for r in rules:
        if r.family != family:
            family = r.family
            out += ["", f"## {family}: {FAMILIES[family]}"]
        out += ["", r.markdown(heading="###").rstrip()]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(rules_reference())
