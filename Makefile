# The two commands of the README.  Both set everything up first and are safe to rerun.
#   make demo   set up, start the managed Neo4j, run ACE's main job end to end
#   make test   set up, start the managed Neo4j, run the whole test suite
.PHONY: setup demo test db-stop

ACE := .venv/bin/ace

setup:
	scripts/setup.sh

demo: setup
	$(ACE) db start
	$(ACE) init
	$(ACE) demo

test: setup
	$(ACE) db start
	$(ACE) init
	.venv/bin/python -m pytest -q

db-stop:
	$(ACE) db stop
