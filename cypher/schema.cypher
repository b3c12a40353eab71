// Purpose: the graph schema: one uniqueness constraint per node key, plus
//   lookup indexes. Every statement is idempotent (IF [NOT] EXISTS, and one
//   migration that gives Task nodes of older graphs their key), so `ace init`
//   can run it any number of times.
// Parameters: $default_source (the default environment's name: the source of tasks stored before
//   tasks had one)
// Columns: none
// Mode: write

CREATE CONSTRAINT skill_id IF NOT EXISTS
FOR (n:Skill) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT tool_name IF NOT EXISTS
FOR (n:Tool) REQUIRE n.name IS UNIQUE;

// Task ids are scoped by their source: the key is "source:id" (the default
// environment's tasks are "<its name>:<id>"; a user's file cannot overwrite them). The
// constraint on the bare id, from graphs made before, goes; ids stay indexed.
DROP CONSTRAINT task_id IF EXISTS;

CREATE CONSTRAINT task_key IF NOT EXISTS
FOR (n:Task) REQUIRE n.key IS UNIQUE;

CREATE INDEX task_id_lookup IF NOT EXISTS
FOR (n:Task) ON (n.id);

MATCH (t:Task) WHERE t.key IS NULL
SET t.key = coalesce(t.source, $default_source) + ':' + t.id;

CREATE CONSTRAINT rollout_id IF NOT EXISTS
FOR (n:Rollout) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT scope_key IF NOT EXISTS
FOR (n:Scope) REQUIRE n.key IS UNIQUE;

CREATE INDEX rollout_scope IF NOT EXISTS
FOR (n:Rollout) ON (n.scope);

CREATE INDEX rollout_failing_pair IF NOT EXISTS
FOR (n:Rollout) ON (n.scope, n.fail_prev_tool, n.fail_tool);

CREATE INDEX scope_experiment IF NOT EXISTS
FOR (n:Scope) ON (n.experiment, n.policy);

CREATE INDEX composes_scope_level IF NOT EXISTS
FOR ()-[c:COMPOSES]-() ON (c.scope, c.level);

CREATE CONSTRAINT composition_key IF NOT EXISTS
FOR (n:Composition) REQUIRE n.key IS UNIQUE;

CREATE CONSTRAINT plan_id IF NOT EXISTS
FOR (n:Plan) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT curriculum_experiment IF NOT EXISTS
FOR (n:Curriculum) REQUIRE n.experiment IS UNIQUE;

CREATE CONSTRAINT curriculum_unit_id IF NOT EXISTS
FOR (n:CurriculumUnit) REQUIRE n.id IS UNIQUE;

CREATE CONSTRAINT curriculum_decision_id IF NOT EXISTS
FOR (n:CurriculumDecision) REQUIRE n.id IS UNIQUE;

CREATE INDEX curriculum_decision_round IF NOT EXISTS
FOR (n:CurriculumDecision) ON (n.experiment, n.round);
