"""Launch commands as the shell would run them: words after expansion, each remembering where it was written.

The shell reader (rlhf_lint.readers.shell) produces Commands; framework interpreters (rlhf_lint.frameworks.openrlhf,
verl, ORZ, the generic deepspeed/torchrun/accelerate launchers) turn a Command into a Job. Rules that check flags read
Commands; rules that check memory and topology read Jobs."""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.startup.records import field, record
from rlhf_lint.model import UNKNOWN, Span


@record(frozen=True)
class WordPart:
    """A stretch of a word's expanded text that is the whole value of one expansion (``$VAR`` in ``key=$VAR``).

    start / end: offsets into the word's text; origin_span: where that value was written in the word's file.
    """

    start: int
    end: int
    origin: str
    origin_span: Span


@record(eq=False)
class Word:
    """One argv word after expansion.

    text: the expanded value, or UNKNOWN (``$(cmd)``, an unset variable, a positional parameter).
    span: the token as written in the command (or in the heredoc body the command expands).
    origin / origin_span: when the value came from elsewhere (``$ZERO`` assigned on line 3), a human note and the
    span of the assigned value there, which is where a fix must edit.
    literal_quotes: the word still contains quote characters because bash does not remove quotes from an
    expanded variable (the ``read -r -d '' cmd <<EOF`` pattern).
    parts: for a word mixing literal text and expansions (``key=$VAR``, ``key=${VAR:-8}``), each expansion whose
    whole value lands in the word, so the value after ``=`` can still be fixed where it was assigned.
    prefix: for a word whose text is UNKNOWN, the text written literally at its start before the first unknown
    expansion (``--nproc_per_node=$(nvidia-smi -L | wc -l)``: ``--nproc_per_node=``), so the flag is still read;
    prefix_start: where that text begins (after an opening quote).
    suffix: for a word whose text is UNKNOWN, the known text after its last unknown expansion
    (``$HOME/models/Qwen2.5-7B``: ``/models/Qwen2.5-7B``), which may still name a model.
    """

    text: Any
    span: Span
    path: str
    origin: str = ""
    origin_span: Span | None = None
    literal_quotes: bool = False
    parts: tuple[WordPart, ...] = ()
    prefix: str = ""
    prefix_start: int = -1
    suffix: str = ""

    def origin_span_of(self, start: int, end: int) -> Span | None:
        """Where the text[start:end] was assigned, when exactly one expansion supplied all of it."""
        if start == 0 and end == len(self.text) and self.origin_span is not None:
            return self.origin_span
        return next((p.origin_span for p in self.parts if p.start == start and p.end == end), None)

    @property
    def known(self) -> bool:
        return self.text is not UNKNOWN

    @property
    def edit_span(self) -> Span:
        """Where a fix of this value belongs: the assignment it came from, or the token itself."""
        return self.origin_span or self.span


@record(eq=False)
class Arg:
    """A flag and the plain words after it (argparse decides later how many it consumes).

    For ``--flag=value`` the flag word is split: ``flag_span`` covers ``--flag`` and the value word covers ``value``.
    """

    flag: str
    flag_span: Span
    values: list[Word] = field(default_factory=list)
    word: Word | None = None  # the flag's own word

    @property
    def value(self) -> Word | None:
        return self.values[0] if self.values else None

    @property
    def span(self) -> Span:
        end = self.values[-1].span.end if self.values and self.values[-1].span.start >= self.flag_span.end else self.flag_span.end
        return Span(self.flag_span.start, max(end, self.flag_span.end))


@record(eq=False)
class Command:
    path: str
    span: Span  # the whole command as written (for a heredoc-expanded one, the command that expands it)
    words: list[Word]  # full argv after expansion, launcher included
    launcher: str = ""  # deepspeed | torchrun | accelerate | python | ray | srun | bash | ""
    launcher_args: list[Arg] = field(default_factory=list)
    entry: Word | None = None  # the module (python -m / deepspeed --module) or script that trains
    entry_kind: str = ""  # "module" | "script"
    args: list[Arg] = field(default_factory=list)  # arguments of the training program
    positionals: list[Word] = field(default_factory=list)  # non-flag words before the first flag (verl: key=value)
    # layout facts the shell fixer uses to add a flag the way a person would
    continuation: str = ""  # " \\\n" plus indentation, "" for a one-line command
    heredoc_span: Span | None = None  # body of the heredoc the args came from, if any
    hardware: dict = field(default_factory=dict)  # hardware declared in a comment of the script
    env: dict[str, Word] = field(default_factory=dict)  # GPU-selecting variables the launch gets (CUDA_VISIBLE_DEVICES)
    # the SLURM allocation around the launch: the script's `#SBATCH` options, then those of an `srun` wrapping it
    scheduler_args: list[Arg] = field(default_factory=list)

    def find(self, *flags: str) -> list[Arg]:
        return [a for a in self.args if a.flag in flags]

    def last(self, *flags: str) -> Arg | None:
        found = self.find(*flags)
        return found[-1] if found else None
