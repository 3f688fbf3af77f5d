"""P004 flash-attn-no-prebuilt-wheel: the pinned flash-attn release has no prebuilt wheel for the pinned torch."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.pins._common import _where


@rule("P004", "flash-attn-no-prebuilt-wheel", Severity.WARNING, scope="project", when="pins", fixable=True)
def flash_attn_no_prebuilt_wheel(ctx):
    """The pinned flash-attn release has no prebuilt wheel for the pinned torch.

    ## What it does
    Compares an exact flash-attn pin with the torch version of the same install (written, or required by the
    pinned vLLM) using schemas/pins/flash_attn_wheels.tsv: the torch major.minor versions each flash-attn release
    publishes wheels for.

    ## Why it matters
    Without a matching wheel, `pip install flash-attn` compiles from source (nvcc, a long build, often killed for
    memory) or picks a wheel built against another torch, which fails at import with `undefined symbol`.

    ## Example
    ```
    vllm==0.8.5
    flash-attn==2.7.0.post2   # wheels for torch 2.1-2.5; vllm 0.8.5 needs torch 2.6.0
    ```

    ## Fix
    The pin moves to the nearest flash-attn release with wheels for that torch (unsafe).

    ## References
    https://github.com/Dao-AILab/flash-attention/issues/931
    https://github.com/Dao-AILab/flash-attention/issues/853
    https://github.com/OpenRLHF/OpenRLHF/issues/252
    """
    from rlhf_lint.frameworks.versions import wheel_gaps

    project = ctx.project
    for gap in wheel_gaps(project):
        torch = gap.torch
        where = f"pinned at {_where(project, torch.root.path, torch.root.span)}" if torch.direct else torch.why()
        if gap.row.flash_attn is None:
            message = (f"this flash-attn wheel ({gap.pin.version}) was built for torch {gap.row.torch[0]}; torch "
                       f"{torch.exact} ({where}) is installed with it: it fails at import with `undefined symbol`")
        else:
            message = (f"flash-attn {gap.pin.version} publishes wheels for torch {', '.join(gap.row.torch)} only; "
                       f"torch {torch.exact} ({where}) gets none: pip compiles it from source or a wheel for another "
                       f"torch fails at import with `undefined symbol`")
        fix = None
        if gap.target is not None:
            fix = Fix(f"pin flash-attn to {gap.target}", (Edit.replace(gap.pin.version_span, gap.target),),
                      Applicability.UNSAFE)
        related = ()
        if torch.root is not gap.pin:
            related = (Related(torch.root.path, torch.root.span, f"torch {torch.exact}: {where}"),)
        yield Finding(gap.pin.span, message, fix=fix, related=related, path=gap.pin.path)
