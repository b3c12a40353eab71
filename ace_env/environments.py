"""The tool environments ACE runs agents in, behind one interface.

An environment is a benchmark whose tasks ACE can replay, simulate, verify and describe: BFCL
multi-turn and τ²-bench today.  Everything above ``ace_env`` names tasks by spec (``bfcl:base``,
``tau2:airline``; :mod:`ace_env.tasksets` parses them) and asks :func:`environment_of` what to do with
the tasks it got; it never tests which benchmark a task came from.

A :class:`ToolEnvironment` is a table of functions, one per thing the layers above need:

========================  ==========================================================================
``replay``                every task's gold through the executor and the verifier, counted per group
                          (a BFCL category, a τ² domain): ``ace env replay``
``load_weakness``         a simulated agent's weakness file, checked against the tasks' tools
``simulate``              rollouts of that simulated agent, in ACE's rollout schema: ``ace sim rollouts``
``simulate_turns``        one such rollout's calls per turn and its slips (``ace diagnose``'s probes)
``verifier``              the bounded verifier ``ace ingest`` and ``ace verify`` stream rollouts through
``tool_info``             each tool's class and description, for the graph's Tool nodes
``tagging``               how the skill graph's tagger reads a task's steps: ``oracle`` (each turn's
                          gold executed, cached on disk) or ``gold-actions`` (the gold agent actions,
                          read through ``steps``)
``steps``                 the ``gold-actions`` step reader: the user's words and the gold agent actions
                          run, or run without one of them (:mod:`ace_env.steps`)
``tool_skills``           its tools' base skills, where ``ace_graph/skills.toml`` does not map them
``own_source``            the source the benchmark's own tasks carry (checked unchanged when loaded, so
                          a task file's restating them is not a change to a stored task)
``dialogues``             whether a policy's rollout is a dialogue with a simulated user (``ace eval``)
``gold_steps``            a task's steps as ``ace eval --gold-prefix`` scores them
``export_format``         the ``ace export --format`` of its own task files
``export_writer``         what writes them (``ace export``)
``export_rows``           its tasks as rows of the common JSON-lines formats (``trl``, ``openai-sft``), by
                          format (:class:`ExportRows`: the row, why a task is left out, the dataset's info)
``results_spec``          the task spec a result file in the benchmark's own format names (``ace ingest``)
``fill_hint``             how to fill a graph with its rollouts (the dashboard says it)
``load_spec``             its tasks by id from the groups of a ``NAME[:GROUP,...]`` spec (None for BFCL
                          and τ², whose grammar :mod:`ace_env.tasksets` spells out)
``probes``                whether ``ace diagnose`` can build probe tasks for its edges (BFCL only, today)
``demo_weakness``         the weakness file a simulated agent uses when none is named (BFCL only)
``gold_prefix_step``      the simulated agent's answer at one gold-prefix step (``sim:`` policies)
``gold_prefix``           what gold-prefix scoring asks of it (:mod:`ace_env.goldprefix`): a task's gold
                          transcript and the judging of an answer at a step (``ace eval --gold-prefix``)
``policy_dialogues``      what a policy's dialogues with its simulated user need (:mod:`ace_env.dialogues`:
                          ``ace eval`` of a policy as its agent, ``ace train user-sim``); None: no dialogues
``results_agent``         the agent a result file in its own format names (``ace ingest``), or None
``synthesis``             its synthesis strategies and their checks (:mod:`ace_env.synthesis`): ``ace synth``
``task_turns``            what the rollout engine plays of a task whose rollout is its own user turns
                          (:mod:`ace_env.taskturns`: each turn's user message and tools, one rollout's
                          state): ``ace rollout``, ``ace eval``; None: not rolled out so
``task_file``             the reader of its own task files (:class:`ace_env.taskfile.TaskFile`: whether a
                          file holds its tasks, and its tasks): ``--tasks FILE``, ``ace synth check``
``tool_catalogue``        its tools as classes with documented functions (:mod:`ace_env.toolcatalogue`:
                          each tool's class and doc, a fresh instance of a class), what BFCL's synthesis
                          strategies read of the tools (:func:`tool_catalogue_of`); None: it has none
========================  ==========================================================================

Each environment is a package, ``ace_env/<name>/`` (:mod:`ace_env.bfcl`, :mod:`ace_env.tau2`), whose
``environment`` module holds the functions its entry names; adding a third means one new package that
builds a :class:`ToolEnvironment`, and one entry in :data:`ENVIRONMENTS` (see docs/environments.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ace_env.bfcl.environment import BFCL_CATALOGUE, BFCL_TURNS, bfcl_tool_info, bfcl_verifier, replay_bfcl
from ace_env.bfcl.export import OWN_SOURCE as BFCL_SOURCE
from ace_env.bfcl.export import TRL_INFO, openai_sft_refusal, to_openai_sft, to_trl, trl_refusal, write_bfcl
from ace_env.bfcl.goldprefix import BFCL_GOLD_PREFIX
from ace_env.dialogues import PolicyDialogues
from ace_env.errors import ConfigError
from ace_env.goldprefix import GoldPrefix
from ace_env.sim import DEMO_WEAKNESS, WeaknessSpec, gold_prefix_step, load_weakness, simulate, simulate_one
from ace_env.steps import GoldSteps
from ace_env.taskfile import TaskFile
from ace_env.tasks import Task
from ace_env.taskturns import TaskTurns
from ace_env.tau2.dialogue import TAU2_DIALOGUES
from ace_env.tau2.environment import tau2_results_agent, tau2_results_spec, tau2_steps, tau2_verifier, tau2_weakness
from ace_env.tau2.export import write_tau2
from ace_env.tau2.goldprefix import TAU2_GOLD_PREFIX
from ace_env.tau2.replay import replay_tasks as replay_tau2
from ace_env.tau2.sim import gold_prefix_step as tau2_gold_prefix_step
from ace_env.tau2.sim import simulate as simulate_tau2
from ace_env.tau2.sim import simulate_turns
from ace_env.tau2.synthesis import SYNTHESIS as TAU2_SYNTHESIS
from ace_env.tau2.taskfile import is_tau2_task_file, load_tau2_task_file
from ace_env.tau2.tasks import Tau2Task, tau2_tool_info
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.worker import Budget

OnTask = Callable[[int], None] | None


@dataclass(frozen=True)
class ExportRows:
    """An environment's tasks as rows of one common JSON-lines format (``ace export --format trl``,
    ``openai-sft``): its entry's ``export_rows`` by format."""

    #: The task's row (a JSON object); a task it cannot write raises ``ace_env.goldprefix.GoldPrefixError``.
    row: Callable[[Any], dict[str, Any]]
    #: Why an export leaves the task out (the reason its report counts), or None to write it.
    refusal: Callable[[Any], str | None] = lambda task: None
    #: What the export's ``dataset_info.json`` says of its rows (its columns, how to load them); empty: that
    #: format's export writes no such file.
    info: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ToolEnvironment:
    """One benchmark ACE can run: what the layers above call, by name (see the module doc)."""

    name: str  # the spec prefix: bfcl, tau2
    title: str
    task_type: type
    replay: Callable[[Sequence[Any], Budget | None, OnTask], dict[str, dict[str, Any]]]
    load_weakness: Callable[[Any, Sequence[Any]], WeaknessSpec]
    simulate: Callable[[Sequence[Any], int, WeaknessSpec, int, str], Iterator[dict[str, Any]]]
    simulate_turns: Callable[[Any, WeaknessSpec, Any], tuple[list[Any], list[Any]]]  # (task, spec, rng)
    verifier: Callable[..., Any]
    tool_info: Callable[[Sequence[Any]], dict[str, tuple[str, str]]]
    tagging: str  # how ace_graph's tagger reads a task's steps: "oracle" (executed, per turn) or "gold-actions"
    own_source: str | None  # the source its own tasks carry (checked unchanged at load); None: no such tasks
    dialogues: bool  # whether a policy's rollout is a dialogue with a simulated user (not the task's own turns)
    gold_steps: Callable[[Any], int]  # a task's steps as `ace eval --gold-prefix` scores them (at least 1)
    export_format: str  # `ace export --format` of its own task files
    results_spec: Callable[[Path], str | None]  # the task spec a result file in its own format names; else None
    fill_hint: str  # how to fill a graph with its rollouts (the dashboard's hint)
    load_spec: Callable[[tuple[str, ...]], dict[str, Any]] | None  # NAME:GROUP,... -> tasks by id; None: tasksets'
    probes: bool  # whether ACE builds probe tasks for its edges (ace diagnose)
    demo_weakness: Path | None  # the simulated agent's weakness file when a command names none
    #: The simulated agent's answer at one gold-prefix step (task, turn, index, weakness, rng) -> (call, slip):
    #: a call string in BFCL's python-list form, or a tool-call object ({name, arguments}); None: no call.
    gold_prefix_step: Callable[[Any, int, int, WeaknessSpec, Any], tuple[Any, Any]] | None = None
    #: The tagger's ``gold-actions`` step reader (task, removed) -> :class:`~ace_env.steps.GoldSteps`: the
    #: user's words and the gold agent actions run in order (``removed``: an action's index, the run without
    #: it); None for ``oracle`` tagging.
    steps: Callable[[Any, int | None], GoldSteps] | None = None
    #: Base skills (1-3 skill ids of ``ace_graph/skills.toml``) of its tools that skills.toml's ``[tools]``
    #: does not map, by tool name: an environment's own tools, tagged without editing the taxonomy.
    tool_skills: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    #: What gold-prefix scoring asks of it (:class:`~ace_env.goldprefix.GoldPrefix`): a task's gold transcript
    #: and the judging of an answer at one of its steps; None: ``ace eval --gold-prefix`` refuses its tasks.
    gold_prefix: GoldPrefix | None = None
    #: The writer of its own ``export_format`` (tasks, folder, report): the report (``train.export.ExportReport``)
    #: takes ``skip(task_id, reason)``, ``note(task_id, note)`` and counts ``written``; None: no such format.
    export_writer: Callable[[Iterable[Any], Path, Any], None] | None = None
    #: Its tasks as rows of the common JSON-lines formats (``trl``, ``openai-sft``), by format
    #: (:class:`ExportRows`); a format it does not give is refused for its tasks (τ²'s: none).
    export_rows: Mapping[str, ExportRows] = field(default_factory=dict, hash=False)
    #: What a policy's dialogues with its simulated user need of it (:class:`~ace_env.dialogues.PolicyDialogues`:
    #: ``ace eval`` of a policy as its agent, ``ace train user-sim``); None: its rollouts are no dialogues.
    policy_dialogues: PolicyDialogues | None = None
    #: The agent (its ``policy`` name) a result file in its own format names (``results_spec``); None: none.
    results_agent: Callable[[Path], str | None] | None = None
    #: Its synthesis (:class:`ace_env.synthesis.Synthesis`): its strategies with their checks, and what the one
    #: pipeline calls on its tasks; None: BFCL's, registered by ``synth`` itself, or none (``ace synth`` refuses).
    synthesis: Any = None
    #: What the rollout engine plays of its tasks when a policy's rollout is the task's own user turns
    #: (:class:`~ace_env.taskturns.TaskTurns`: ``ace rollout``, ``ace eval``); None: not rolled out so.
    task_turns: TaskTurns | None = None
    #: Its tools as classes with documented functions (:class:`~ace_env.toolcatalogue.ToolCatalogue`:
    #: ``functions()`` -> {name: info with ``class_name`` and ``doc``}, ``instance(class_name, config)`` -> a fresh
    #: instance loaded from config), what the synthesis strategies that add or look up tools read; None: none
    #: (:func:`tool_catalogue_of` refuses its tasks).
    tool_catalogue: ToolCatalogue | None = None
    #: The reader of its own task files (:class:`~ace_env.taskfile.TaskFile`: ``holds(path)``, whether a JSONL
    #: file holds its tasks; ``load(path, budget)``, its tasks by id): ``--tasks FILE`` and ``ace synth check``
    #: read such a file through it. None: its tasks are written as ACE (BFCL) task lines, or not at all.
    task_file: TaskFile | None = None

    def owns(self, task: Any) -> bool:
        return isinstance(task, self.task_type)


# --------------------------------------------------------------------------- BFCL multi-turn

BFCL = ToolEnvironment(
    name="bfcl", title="BFCL multi-turn", task_type=Task,
    replay=replay_bfcl,
    load_weakness=lambda path, tasks: load_weakness(path),
    simulate=simulate,
    simulate_turns=simulate_one,
    verifier=bfcl_verifier,
    tool_info=bfcl_tool_info,
    tagging="oracle",
    own_source=BFCL_SOURCE,
    dialogues=False,
    gold_steps=lambda task: sum(max(len(t.ground_truth), 1) for t in task.turns),
    export_format="bfcl",
    results_spec=lambda path: None,
    fill_hint="run `ace demo`.",
    load_spec=None,
    probes=True,
    demo_weakness=DEMO_WEAKNESS,
    gold_prefix_step=gold_prefix_step,
    gold_prefix=BFCL_GOLD_PREFIX,
    export_writer=write_bfcl,
    export_rows={"trl": ExportRows(to_trl, trl_refusal, TRL_INFO),
                 "openai-sft": ExportRows(to_openai_sft, openai_sft_refusal)},
    task_turns=BFCL_TURNS,
    tool_catalogue=BFCL_CATALOGUE,
)


# --------------------------------------------------------------------------- τ²-bench

TAU2 = ToolEnvironment(
    name="tau2", title="τ²-bench", task_type=Tau2Task,
    replay=lambda tasks, budget=None, on_task=None: replay_tau2(tasks, budget, on_task=on_task),
    load_weakness=tau2_weakness,
    simulate=simulate_tau2,
    simulate_turns=simulate_turns,
    verifier=tau2_verifier,
    tool_info=lambda tasks: tau2_tool_info([t for t in tasks if isinstance(t, Tau2Task)]),
    tagging="gold-actions",
    own_source=None,
    dialogues=True,
    gold_steps=lambda task: max(task.n_steps, 1),
    export_format="tau2",
    results_spec=tau2_results_spec,
    fill_hint=("simulate some: `ace sim rollouts --tasks tau2:airline --weakness ace_env/tau2_airline_weakness.toml "
               "--n 1500 --out r.jsonl`, then `ace ingest r.jsonl --tasks tau2:airline --scope E/sim/round-0` "
               "(or run `ace demo`)."),
    load_spec=None,
    probes=False,
    demo_weakness=None,
    gold_prefix_step=lambda task, turn, index, spec, rng: tau2_gold_prefix_step(task, index, spec, rng),
    steps=tau2_steps,
    gold_prefix=TAU2_GOLD_PREFIX,
    export_writer=write_tau2,
    policy_dialogues=TAU2_DIALOGUES,
    results_agent=tau2_results_agent,
    synthesis=TAU2_SYNTHESIS,
    task_file=TaskFile(holds=is_tau2_task_file, load=load_tau2_task_file),
)


#: Every environment ACE knows, by spec prefix.
ENVIRONMENTS: dict[str, ToolEnvironment] = {env.name: env for env in (BFCL, TAU2)}

#: The environment of an empty task set, and of a command given no task set: its tools are the ones whose
#: class names no environment (view-scope-environments), and every command takes its tasks.
DEFAULT = BFCL


def environment_named(name: str) -> ToolEnvironment:
    """The environment a spec prefix names; one line listing the known ones otherwise."""
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise ConfigError(f"unknown environment {name!r}; use one of {', '.join(ENVIRONMENTS)}") from None


def environment_of(tasks: Iterable[Any]) -> ToolEnvironment:
    """The one environment all ``tasks`` belong to (BFCL for an empty set).

    A set mixing environments is refused in one line: a rollout file, a scope's verification and a
    simulated agent each belong to one environment.
    """
    found: dict[str, int] = {}
    for task in tasks:
        env = next((e for e in ENVIRONMENTS.values() if e.owns(task)), None)
        if env is None:
            raise ConfigError(f"{type(task).__name__} {getattr(task, 'id', '?')!r} belongs to no known environment")
        found[env.name] = found.get(env.name, 0) + 1
    if len(found) > 1:
        counts = ", ".join(f"{n} {name}" for name, n in found.items())
        raise ConfigError(f"the task set mixes environments ({counts} tasks); use one environment per command")
    return ENVIRONMENTS[next(iter(found))] if found else DEFAULT


def task_turns_of(task: Any) -> TaskTurns:
    """What the rollout engine plays of ``task`` (its environment's ``task_turns``); one line when its
    environment's rollouts are not its own turns."""
    env = environment_of((task,))
    if env.task_turns is None:
        how = "dialogues with a simulated user" if env.dialogues else "not rolled out freely (use --gold-prefix)"
        raise ConfigError(f"{env.title} task {getattr(task, 'id', '?')!r}: its rollouts are {how}, not its own "
                          "user turns played by the rollout engine")
    return env.task_turns


def tool_catalogue_of(task: Any) -> ToolCatalogue:
    """The tool catalogue of ``task``'s environment (its entry's ``tool_catalogue``); one line when its
    environment has none."""
    env = environment_of((task,))
    if env.tool_catalogue is None:
        raise ConfigError(f"{env.title} task {getattr(task, 'id', '?')!r}: its environment has no tool catalogue "
                          "(its entry's `tool_catalogue`), which this synthesis step reads of the tools")
    return env.tool_catalogue


def verifier_for(tasks: Mapping[str, Any], budget: Budget | None = None, address: str | None = None,
                 **kwargs: Any) -> Any:
    """The verifier of the tasks' environment: for BFCL a local watched one, or a Ray one when ``address``
    is given; for τ² the local τ² one."""
    return environment_of(tasks.values()).verifier(tasks, budget, address, **kwargs)


def environment_names() -> list[str]:
    """Every environment's name, the default first: the ``$environments`` parameter of the queries that tell
    environments apart (view-scope-environments, view-environment-members)."""
    return [DEFAULT.name, *(name for name in ENVIRONMENTS if name != DEFAULT.name)]


def spec_of_results(path: Path) -> str | None:
    """The task spec a benchmark's own result file names (a τ²-bench result file: ``tau2:DOMAIN``); None for
    a file no environment reads as its result file."""
    for env in ENVIRONMENTS.values():
        spec = env.results_spec(path)
        if spec is not None:
            return spec
    return None


def own_tool_skills() -> list[tuple[str, Mapping[str, tuple[str, ...]]]]:
    """(name, its ``tool_skills``) of every environment that maps tools of its own (none of BFCL and τ²,
    whose tools ``ace_graph/skills.toml`` maps): what the taxonomy adds to its ``[tools]``."""
    return [(env.name, env.tool_skills) for env in ENVIRONMENTS.values() if env.tool_skills]


def tool_info(tasks: Sequence[Any]) -> dict[str, tuple[str, str]]:
    """Class and description of every tool the environments know of for ``tasks`` (BFCL's always; τ²'s
    when ``tasks`` hold τ² tasks).  A name two environments share keeps BFCL's."""
    out: dict[str, tuple[str, str]] = {}
    for env in reversed(tuple(ENVIRONMENTS.values())):
        out.update(env.tool_info(tasks))
    return out
