# The two commands of the README.  Both set everything up first and are safe to rerun.
#   make demo   set up, start the managed Neo4j, run ACE's main job end to end,
#               then one real round of the closed loop on the default model
#   make test   set up, start a separate test Neo4j, run the whole test suite
#
# Tests wipe the database they run against, so `make test` never touches the
# server `make demo` uses: it runs its own in $(ACE_TEST_HOME) on other ports.
.PHONY: setup demo test db-stop test-db-stop

ACE := .venv/bin/ace
ACE_TEST_HOME ?= $(CURDIR)/.ace/test
ACE_TEST_BOLT_PORT ?= 27687
ACE_TEST_HTTP_PORT ?= 27474
# Tests use the default model that setup prepared (in the user's ACE_HOME), not a second copy.
TEST_ENV = env -u NEO4J_URI ACE_HOME=$(ACE_TEST_HOME) ACE_MODELS=$${ACE_MODELS:-$${ACE_HOME:-$$HOME/.ace}/models} ACE_NEO4J_BOLT_PORT=$(ACE_TEST_BOLT_PORT) \
	ACE_NEO4J_HTTP_PORT=$(ACE_TEST_HTTP_PORT) ACE_NEO4J_HEAP=$${ACE_NEO4J_HEAP:-1g} \
	ACE_NEO4J_PAGECACHE=$${ACE_NEO4J_PAGECACHE:-512m}

setup:
	scripts/setup.sh

demo: setup
	$(ACE) db start
	$(ACE) init
	$(ACE) demo
	@echo "== one real round of the closed loop on SmolLM2-135M-Instruct (slow on 2 cores; a rerun resumes where it stopped):"
	@echo "   gold-prefix evaluation (exact match, NLL) before and after an SFT warm start on the seed tasks and one GRPO step"
	OMP_NUM_THREADS=1 $(ACE) loop -e demo-loop -p hf:smollm2-135m --rounds 1 --seeds 6 --eval-limit 3 --synth 4 --sft-warm-start \
		--train-tasks 4 --prompts-per-step 2 --generations 2 --max-groups-sampled 2 --max-tokens 48 --step-cap 2 \
		--synth-rollouts 1
	$(ACE) loop status -e demo-loop

# The tests serve a model through vLLM too, so their setup also builds .venv-vllm (ACE_VLLM=1).
test:
	ACE_VLLM=1 scripts/setup.sh
	$(TEST_ENV) $(ACE) db start
	$(TEST_ENV) $(ACE) init
	.venv/bin/ruff check .
	$(TEST_ENV) .venv/bin/python -m pytest -q --durations=15

db-stop:
	$(ACE) db stop

test-db-stop:
	$(TEST_ENV) $(ACE) db stop
