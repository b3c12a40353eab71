"""``ace scopes`` and ``ace scope delete``: what the skill graph holds, and removing a scope."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

import typer

from ace.cli import app
from ace.cli.graphcmd import with_store
from ace.cli.options import config_options, experiment_option, json_option, parse_scope
from ace.cli.render import console, esc, table
from ace_graph.errors import ConfigError
from ace_graph.scopes import delete_scope, list_scopes, require_scope

scope_app = typer.Typer(help="One scope (experiment/policy/checkpoint) of the skill graph.", no_args_is_help=True)
app.add_typer(scope_app, name="scope")

COLUMNS = ("experiment", "key", "mode", "round", "rollouts", "rewarded", "near_success", "steps",
           "compositions_tool", "compositions_skill")


@app.command("scopes")
def scopes(
    experiment: Optional[str] = experiment_option(None, "Only this experiment's scopes."),
    as_json: bool = json_option("Print the scopes as a JSON list."),
) -> None:
    """List the experiments and their scopes with rollout, step and composition counts."""
    rows = with_store(lambda store: list_scopes(store, experiment))
    if as_json:
        print(json.dumps(rows))
        return
    if not rows:
        if experiment:  # an experiment that is not there is an error, in one `error:` line
            raise ConfigError(f"no scope of experiment {experiment!r} is stored; ingest rollouts with `ace ingest`")
        console(stderr=True).print(esc("no scope is stored; ingest rollouts with `ace ingest`"))
        return
    experiments = sorted({r["experiment"] for r in rows})
    console().print(table(
        f"{len(rows)} scopes in {len(experiments)} experiment{'s' * (len(experiments) != 1)}",
        COLUMNS, [[_key_note(r) if c == "key" else r[c] for c in COLUMNS] for r in rows],
        right=COLUMNS[3:],
    ))


def _key_note(row: dict) -> str:
    """A scope's key, with what to rerun when it is not data (a delete or an ingest stopped part-way)."""
    if row.get("deleting"):
        return f"{row['key']} (being deleted: rerun `ace scope delete`)"
    if row.get("incomplete"):
        return f"{row['key']} (incomplete: rerun the ingest)"
    return row["key"]


@dataclass(frozen=True)
class DeleteConfig:
    """Whether `ace scope delete` asks before it deletes."""

    yes: bool = field(default=False, metadata={"help": "Do not ask for confirmation."})


@scope_app.command("delete")
@config_options(DeleteConfig, names={"yes": ("--yes", "-y")}, param="confirm", in_place=True)
def delete(
    scope: str = typer.Argument(..., help="The scope experiment/policy/checkpoint to delete."),
    confirm: DeleteConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print what was deleted as JSON."),
) -> None:
    """Delete a scope with its rollouts, steps and aggregates (tasks and curricula stay).

    The scope is marked as being deleted first, then deleted in batches (one
    transaction each), so a scope of any size can be deleted; a delete that is
    stopped part-way leaves the scope marked (no command reads it) and running
    this again finishes it.
    """
    parse_scope(scope)

    def work(store):
        # a delete that stopped part-way is finished; an incomplete scope may be deleted
        row = require_scope(store, scope, allow_deleting=True, allow_incomplete=True)
        if not confirm.yes and not typer.confirm(
                f"Delete scope {scope} ({row['rollouts']} rollouts, {row['steps']} steps)?", default=False):
            return None
        return delete_scope(store, scope)

    result = with_store(work)
    if result is None:
        console(stderr=True).print("not deleted")
        raise typer.Exit(1)
    if as_json:
        print(json.dumps({"scope": scope, **result}))
        return
    console().print(esc(f"deleted scope {scope}: {result['rollouts']} rollouts, {result['steps']} steps, "
                        f"{result['compositions']} composition counts"))
