"""Export tasks as training and evaluation datasets.

Four formats:

``bfcl``
    BFCL v4 multi-turn files (written by BFCL's entry's ``export_writer``,
    :mod:`ace_env.bfcl.export`), so BFCL's own harness can evaluate on ACE's
    tasks: ``BFCL_v4_multi_turn_ace_question.json`` (one JSON per line:
    ``id, question, initial_config, path, involved_classes`` and, when they
    apply, ``missed_function`` and ``excluded_function``) and
    ``possible_answer/BFCL_v4_multi_turn_ace_possible_answer.json``
    (``id, ground_truth``).  A turn whose only news is new tools gets an empty
    question list, as in BFCL.  Long-context tasks go to their own pair of
    files, ``BFCL_v4_multi_turn_ace_long_context_question.json`` (and its
    possible answer), with ids ``multi_turn_ace_long_context_<id>``: BFCL loads
    the long context when the category name says ``long_context``.
    Distractors are written as offered function docs (a distractor of another
    class brings its class, with the class's other functions excluded); BFCL
    cannot declare them wrong, so there calling one fails only through the
    state it leaves.  ACE's wrong-way twins (:mod:`ace_env.twins`) are real
    functions there too: their docs in BFCL's doc format go to
    ``multi_turn_func_doc/<BFCL's doc file name>`` (lines to append to BFCL's
    file of that name) and their implementation to ``ace_twins.py``, a plain
    Python module whose ``install()`` attaches them to BFCL's classes as
    methods; the turn that offers one names it in ``missed_function``.
    Output views (ambiguity, cascade) cannot be expressed:
    such tasks are written with their canonical ground truth and counted in
    the report's ``notes``.  Tasks that are not built purely from BFCL's
    functions are skipped with a reason.
``trl`` and ``openai-sft`` are JSON lines, one row per task, written by the
task's environment (its entry's ``export_rows``, :class:`ace_env.environments.ExportRows`:
the row, why a task is left out, what ``dataset_info.json`` says); this module
only writes the files.  BFCL's rows (:mod:`ace_env.bfcl.export`) are described
below; an environment that gives none of a format has its tasks skipped with a
reason (τ²'s), and the tests' toy environment writes its own.

``trl``
    ``train.jsonl`` for TRL's ``GRPOTrainer``, one row per task, carrying every
    turn (BFCL's rows):

    * ``prompt``: the system message and the first turn's user messages (what
      GRPO's single-turn mode needs), and ``tools``: the OpenAI tool schemas
      offered in turn 0;
    * ``turns``: every turn in order, each ``{user, tools_added, tools_offered}``:
      its user messages, the schemas of the tools first offered in that turn
      (empty for turn 0, whose tools are ``tools``) and the names of every tool
      offered in it, so a multi-turn consumer can play the whole conversation;
    * ``task``: the whole task as a JSON string, what a reward needs
      (:func:`train.rewards.verifier_reward` and
      :class:`train.trlenv.TrlToolEnv` rebuild it with
      :meth:`Task.from_dict` and verify against its ground truth);
    * ``environment``: the name of the task's turn-0 tool set, which routes the
      row to its environment class when ``GRPOTrainer`` gets
      ``environment_factory=train.trlenv.environment_factories(rows)``;
    * ``task_id`` and ``n_turns``;

    plus ``dataset_info.json`` describing the columns.
``openai-sft``
    ``train.jsonl`` of chat transcripts of the oracle (BFCL's rows) in OpenAI's chat
    fine-tuning format, and nothing else at the top level (``messages``,
    ``tools``): per turn the user's message, one assistant message per oracle
    call (``tool_calls`` with an id, the function name and JSON arguments by
    parameter name), the tool result (the oracle's output, ``tool_call_id``),
    and a closing assistant message written from the turn's tool results and
    marked ``"weight": 0`` (OpenAI's per-message mask: context, never a training
    target; see :func:`ace_env.bfcl.export.closing_text`).  A turn whose right behaviour is to make
    no call ends with :data:`ABSTAIN_MESSAGE`, which *is* the target.
    ``task_ids.jsonl`` beside it names the task of each line (``{"task_id"}``;
    line n of one is line n of the other).  ``tools`` lists every tool the task
    offers in any turn.  A task with a no-call turn that lacks a tool a later
    turn offers (BFCL's ``miss_func``) is skipped
    (:func:`ace_env.bfcl.export.refuses_a_later_tool`): listing
    that tool from the start would teach the model to refuse a tool it was offered.

``tau2``
    τ²-bench tasks (τ²'s own and ACE's synthesized ones) in τ²'s own task schema, one
    ``<domain>/tasks.json`` per domain, each task written only after its exported gold passed τ²'s
    evaluator (:mod:`ace_env.tau2.export`, τ²'s entry's ``export_writer``).

Writing is atomic: files go to a temporary folder next to ``out`` that is
renamed into place; a non-empty ``out`` is refused unless ``force``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ace_env.environments import DEFAULT, ENVIRONMENTS, environment_of
from ace_env.errors import ConfigError
from ace_env.goldprefix import ABSTAIN_MESSAGE, SYSTEM_PROMPT, GoldPrefixError  # noqa: F401 (both importable here)
from ace_env.workspace import check_out, check_writable_kind
from train.errors import ExportError

#: Formats tasks export to as JSON lines, where their environment's entry gives rows of them (its ``export_rows``:
#: BFCL's task-turns rows, the toy's gold transcripts; τ²'s tasks are refused).
COMMON_FORMATS = ("trl", "openai-sft")


#: The formats of the environments registered when this module was imported (:func:`formats` asks again).
FORMATS = tuple(env.export_format for env in ENVIRONMENTS.values() if env.export_format) + COMMON_FORMATS


def formats() -> tuple[str, ...]:
    """Every ``--format``: each environment's own (its ``export_format``, written by its ``export_writer``), then
    the common ones."""
    return tuple(env.export_format for env in ENVIRONMENTS.values() if env.export_format) + COMMON_FORMATS


JSONL_FILE = "train.jsonl"
INFO_FILE = "dataset_info.json"

# SYSTEM_PROMPT (of TRL prompts and SFT transcripts) and ABSTAIN_MESSAGE are ace_env.goldprefix's, imported above;
# BFCL's rows (closing_text, refuses_a_later_tool, REFUSES_A_LATER_TOOL, TRL_COLUMNS) are ace_env.bfcl.export's.
#: Side file of an ``openai-sft`` export: ``{"task_id"}`` of each line of ``train.jsonl``, in the same order.
TASK_IDS_FILE = "task_ids.jsonl"


@dataclass(frozen=True)
class ExportConfig:
    """What ``ace export`` writes (its flags; ``--out``, a required folder, is the command's own: a required flag
    derived from a field is a str, int, float or bool one)."""

    format: str = field(metadata={"help": "bfcl, trl, openai-sft or tau2 (τ²-bench's task schema; τ² tasks only)."})
    force: bool = field(default=False, metadata={"help": "Replace an earlier export in --out.", "negatable": False})


@dataclass
class ExportReport:
    """What an export wrote and what it skipped (reason -> task ids)."""

    format: str
    out: str
    written: int = 0
    skipped: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: Written, but with something the format cannot carry (note -> task ids).
    notes: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, task_id: str, reason: str) -> None:
        self.skipped.setdefault(reason, []).append(task_id)

    def note(self, task_id: str, note: str) -> None:
        self.notes.setdefault(note, []).append(task_id)

    @property
    def n_skipped(self) -> int:
        return sum(len(v) for v in self.skipped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "out": self.out,
            "written": self.written,
            "skipped": self.n_skipped,
            "skipped_by_reason": {r: len(ids) for r, ids in sorted(self.skipped.items())},
            "skipped_examples": {r: ids[:5] for r, ids in sorted(self.skipped.items())},
            "notes": {r: len(ids) for r, ids in sorted(self.notes.items())},
            "files": self.files,
        }


# --------------------------------------------------------------------------- trl / openai-sft rows


def task_row(task: Any, fmt: str) -> dict[str, Any]:
    """The task's row of ``fmt`` (``trl``, ``openai-sft``) as its environment writes it (its entry's
    ``export_rows``); :class:`~train.errors.ExportError` when it writes none, or cannot write this task."""
    env = environment_of((task,))
    rows = env.export_rows.get(fmt)
    if rows is None:
        raise ExportError(f"{env.title} tasks are not written as {fmt}")
    try:
        return rows.row(task)
    except GoldPrefixError as e:
        raise ExportError(str(e)) from e


def to_trl(task: Any) -> dict[str, Any]:
    """The task's GRPO row (for a BFCL task: the first turn as ``prompt``, every turn in ``turns``, and the task
    for the reward; see the module doc)."""
    return task_row(task, "trl")


def to_openai_sft(task: Any) -> dict[str, Any]:
    """The task's gold as an OpenAI chat fine-tuning example, ``{"messages", "tools"}`` (for a BFCL task: the
    oracle over its own turns; see the module doc)."""
    return task_row(task, "openai-sft")


# --------------------------------------------------------------------------- writing


#: Written into every export folder; --force replaces only folders that carry it.
MARKER = ".ace-export"


def _check_out(out: Path, force: bool) -> None:
    """The one ``--out`` rule (:func:`ace_env.workspace.check_out`) for a folder; ``--force`` replaces only an
    earlier export (a folder holding :data:`MARKER`)."""
    try:
        check_out(out, force, directory=True, marker=MARKER)
    except ConfigError as e:
        raise ExportError(str(e)) from e


def _install(tmp: Path, out: Path) -> None:
    """Move the finished temporary folder into place (replacing ``out``)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
        try:
            os.rename(tmp, out)
        except OSError:
            os.rename(old / out.name, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)


def export(tasks: Iterable[Any], fmt: str, out: str | Path, force: bool = False) -> ExportReport:
    """Write ``tasks`` in format ``fmt`` to the folder ``out``; see the module doc."""
    if fmt not in formats():
        raise ExportError(f"unknown export format {fmt!r}; use one of: {', '.join(formats())}")
    out = Path(out).resolve()
    _check_out(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = ExportReport(fmt, str(out))
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it owner-only
    try:
        own = own_format_writers().get(fmt)
        if own is not None:  # an environment's own task files (τ²'s: each task round-tripped through its evaluator)
            own(tasks, tmp, report)
        else:
            _write_jsonl(tasks, fmt, tmp, report)
        report.files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        (tmp / MARKER).write_text(f"written by `ace export --format {fmt}`\n")
        check_writable_kind(out)  # again, just before the rename
        _install(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def own_format_writers() -> dict[str, Any]:
    """The writer of each environment's own format (its ``export_format``): its entry's ``export_writer``."""
    return {env.export_format: env.export_writer for env in ENVIRONMENTS.values()
            if env.export_format and env.export_writer is not None}


def _write_jsonl(tasks: Iterable[Any], fmt: str, tmp: Path, report: ExportReport) -> None:
    """Each task's row of ``fmt`` (its environment's ``export_rows``), a task its environment leaves out
    counted by reason; ``dataset_info.json`` beside them where the rows carry info (BFCL's ``trl``)."""
    ids = open(tmp / TASK_IDS_FILE, "w", encoding="utf-8") if fmt == "openai-sft" else None
    convert = to_trl if fmt == "trl" else to_openai_sft
    infos: dict[str, Mapping[str, Any]] = {}  # by environment, of the tasks given
    try:
        with open(tmp / JSONL_FILE, "w", encoding="utf-8") as f:
            for task in tasks:
                env = environment_of((task,))
                rows = env.export_rows.get(fmt)
                why = f"{env.title} tasks are not written as {fmt}" if rows is None else rows.refusal(task)
                if rows is not None:
                    infos.setdefault(env.name, rows.info)
                if why:
                    report.skip(task.id, why)
                    continue
                try:
                    row = convert(task)
                except ExportError as e:
                    report.skip(task.id, str(e).split(": ", 1)[-1] if str(e).startswith("task ") else str(e))
                    continue
                f.write(json.dumps(row) + "\n")
                if ids is not None:
                    ids.write(json.dumps({"task_id": task.id}) + "\n")
                report.written += 1
    finally:
        if ids is not None:
            ids.close()
    if not infos and fmt in DEFAULT.export_rows:  # no task given: the default environment's rows
        infos[DEFAULT.name] = DEFAULT.export_rows[fmt].info
    if any(infos.values()):
        about = next(iter(infos.values())) if len(infos) == 1 else {"environments": infos}
        with open(tmp / INFO_FILE, "w", encoding="utf-8") as f:
            json.dump({"format": fmt, "file": JSONL_FILE, "rows": report.written, **about}, f, indent=2)
            f.write("\n")

