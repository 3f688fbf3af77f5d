"""Rule documentation: one text per rule (its docstring), shown by `rlhf-lint rule` and gathered in docs/rules.md."""
from __future__ import annotations

from rlhf_lint.engine.registry import FAMILIES, REGISTRY, Rule


def rule_markdown(rule: Rule, heading: str = "#") -> str:
    sections = rule.sections()
    fix = "yes" if rule.fixable else "no"
    lines = [f"{heading} {rule.code} {rule.name}", "",
             f"{sections.get('', rule.summary).strip()}", "",
             f"Default severity: {rule.severity.label}. Fixable: {fix}."
             + ("" if rule.default_enabled else " Not enabled by default (select it explicitly).")]
    for title, body in sections.items():
        if title and body.strip():
            lines += ["", f"{heading}# {title}", "", body.strip()]
    return "\n".join(lines) + "\n"


def rules_reference() -> str:
    out = ["# Rules", "",
           "Generated from the rules' own documentation by `python -m rlhf_lint.cli.rules > docs/rules.md`; "
           "`rlhf-lint rule CODE` prints the same text.", ""]
    rules = REGISTRY.all()
    out += ["| Code | Name | Severity | Fix | Summary |", "|---|---|---|---|---|"]
    for r in rules:
        out.append(f"| [{r.code}](#{r.code.lower()}-{r.name}) | {r.name} | {r.severity.label} | "
                   f"{'yes' if r.fixable else ''} | {r.summary} |")
    family = None
    for r in rules:
        if r.family != family:
            family = r.family
            out += ["", f"## {family}: {FAMILIES[family]}"]
        out += ["", rule_markdown(r, heading="###").rstrip()]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(rules_reference())
