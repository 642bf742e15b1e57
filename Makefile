# pgfs-lab. The two commands a newcomer needs:
#   make run    set up what is missing, run the default study end to end, build paper/<study>.pdf
#   make test   the test suite (CI's .ci/run calls exactly this)
# More: make run CONFIG=config/<study>.yaml | make analyse STUDY=<name> | make test-fast | make lint | make docs
#       | make bench | make release | make unlock | make lock | make setup-slurm
# Many machines (README): make run CONFIG=... EXECUTOR=slurm HOSTS=node1,node2 [PIN_HOSTS=1]
#       | make run CONFIG=... HOST=<key> (this machine's share) | make analyse STUDY=<name> (merges hosts)

CONFIG ?= config/default.yaml
STUDY ?=
# local: this machine, one job at a time. slurm: one exclusive Slurm job per host key in HOSTS, through
# Snakemake's Slurm executor (workflow/profiles/slurm); the merge, notebooks and paper on this machine.
EXECUTOR ?= local
HOSTS ?=
HOST ?=
PIN_HOSTS ?= 0
# more Snakemake options for `make run`, e.g. SNAKE_ARGS="--slurm-status-command squeue" (a cluster without
# slurmdbd) or SNAKE_ARGS="--slurm-partition-config ..." (README, Many machines)
SNAKE_ARGS ?=
# The lab's own files are found from this Makefile's folder; config/, data/, figures/ and paper/ are
# relative to the current directory (`make -f /path/to/pgfs-lab/Makefile run` works from elsewhere).
LAB := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
PY := $(LAB)/.venv/bin/python
# Snakemake's cores: the analysis jobs (notebooks, which do not depend on each other) run side by side; a
# target's preparation and every run take all of them (workflow/rules/run.smk: threads), so nothing runs
# beside a measurement.
CORES ?= all
# Snakemake through pgfslab.cli.snakemake_main: `python -m snakemake`, without the second its exit waited for
# a scheduler timer after every invocation that ran a job, and without the Slurm plugin's import (pandas, 0.5 s)
# where the command line cannot use it
SNAKE := $(PY) -m pgfslab.cli.snakemake_main --snakefile $(LAB)/workflow/Snakefile --cores $(CORES) --scheduler greedy --rerun-incomplete \
         --keep-going --printshellcmds --quiet rules
ifeq ($(EXECUTOR),slurm)
RUN_SNAKE := $(PY) -m pgfslab.cli.snakemake_main --snakefile $(LAB)/workflow/Snakefile --profile $(LAB)/workflow/profiles/slurm --quiet rules
else ifeq ($(EXECUTOR),local)
RUN_SNAKE := $(SNAKE)
else
$(error EXECUTOR=$(EXECUTOR): local or slurm)
endif
# A no-op `make run`/`make analyse` without Snakemake's start-up: the state Snakemake last found up to date,
# stamped (pgfslab/noop.py says when that is provably the same answer); any change runs Snakemake.
NOOP := $(PY) -m pgfslab.noop
HOST_CONFIG := $(if $(HOSTS),hosts=$(HOSTS) pin_hosts=$(PIN_HOSTS)) $(if $(HOST),host=$(HOST))

.PHONY: setup setup-slurm run analyse test test-fast lint format bench release unlock lock clean-build sync-notebooks docs

setup:
	@bash $(LAB)/scripts/setup.sh

# Debian's slurm-wlm and munge (the test suite's one-node cluster; tests/slurm_cluster.py)
setup-slurm:
	@WITH_SLURM=1 bash $(LAB)/scripts/setup.sh

# --keep-going: a failed run is recorded (run.json status failed) and the others go on; the status
# summary (what failed and why) is printed whatever happened, also after a Ctrl-C (the trap lets this
# shell outlive the interrupt; Snakemake and the run itself still get it). --rerun-incomplete: a run
# that was interrupted has no run.json, so the next `make run` redoes it (earlier output kept in
# data/raw/<study>/_attempts/).
run: setup
	@if [ "$(EXECUTOR)" = slurm ] && [ -z "$(HOSTS)" ]; then \
	  echo "EXECUTOR=slurm needs HOSTS=key1,key2,... (one Slurm job per host key; PIN_HOSTS=1: keys are node names)"; exit 2; fi
	@trap 'echo' INT TERM; set -- $(RUN_SNAKE) $(SNAKE_ARGS) --configfile $(CONFIG) $(if $(strip $(HOST_CONFIG)),--config $(HOST_CONFIG)); \
	$(NOOP) check -- "$$@"; rc=$$?; \
	if [ $$rc -ne 0 ]; then $(NOOP) snapshot -- "$$@"; "$$@"; rc=$$?; \
	  if [ $$rc -eq 0 ]; then $(NOOP) certify -- "$$@"; fi; fi; \
	$(PY) -m pgfslab status --config $(CONFIG); st=$$?; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$st

# Re-run every analysis and rebuild the paper from data/raw/$(STUDY)/ alone (no workload runs). The notebooks'
# warm interpreter (pgfslab.warm) starts importing while Snakemake starts (in a one-thread job's environment,
# as Snakemake gives the notebooks theirs: the same server).
analyse: setup
	@test -n "$(STUDY)" || { echo "usage: make analyse STUDY=<name of a folder in data/raw/>"; exit 2; }
	@set -- $(SNAKE) --config study=$(STUDY) raw_only=1; $(NOOP) check -- "$$@" && exit 0; \
	$(PY) -m pgfslab.warm --job-threads 1 start; $(NOOP) snapshot -- "$$@"; "$$@" || exit $$?; $(NOOP) certify -- "$$@"

# Test files side by side (pytest-xdist): a real study in a test spends most of its time waiting (its runs'
# fixed durations, Slurm, the disks), so more workers than cores. tests/conftest.py keeps each file on one
# worker (its study runs once), runs the files that change machine-wide settings one after another, and
# starts the longest first. TEST_WORKERS=0: one process, in file order. Four here, on 2 cores: /proc/stat
# shows both busy 94-98 % of the suite (its length is CPU, not waiting: the summary prints each unit's), four
# fill the gaps while a study waits on its runs; 7:38 against 7:49-7:56 with three (2026-11-26).
TEST_WORKERS ?= 4

# Everything (CI): lint, then every test including the slow ones (real file systems, PostgreSQL,
# notebooks, the paper).
test: setup setup-slurm lint
	@cd $(LAB) && $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The inner loop: the tests that need no root, no server and no notebook kernel (under a minute).
test-fast: setup
	@cd $(LAB) && $(PY) -m pytest -m "not slow" -q

lint: setup
	@cd $(LAB) && $(PY) -m ruff check . && $(PY) -m ruff format --check .

# Every notebook's percent-format pair (jupytext.toml: notebooks/x.py beside notebooks/x.ipynb) written again
# from the .ipynb, the source of truth; tests/test_notebook_pairs.py fails while a pair differs.
sync-notebooks: setup
	@cd $(LAB) && $(PY) -m jupytext --quiet --to py:percent notebooks/*.ipynb paper/whitepaper.ipynb

# docs/ as one site (mkdocs.yml) in build/site/: open build/site/index.html
docs: setup
	@cd $(LAB) && $(PY) -m mkdocs build

format: setup
	@cd $(LAB) && $(PY) -m ruff format . && $(PY) -m ruff check --fix .

bench: setup
	@cd $(LAB) && $(PY) -m benchmarks

# Unmount/detach what a hard-killed study left behind (only the lab's own images and mounts).
release: setup
	@$(PY) -m pgfslab release --config $(CONFIG)

# After a run killed with SIGKILL (or a power loss): Snakemake's locks on the study's files (`make run`'s
# status names them); only when no other Snakemake works in this folder.
unlock: setup
	@$(SNAKE) --configfile $(CONFIG) --unlock

lock:
	cd $(LAB) && uv pip compile pyproject.toml --extra dev --extra docs -o requirements.lock --python-version 3.11 -q --override requirements-overrides.txt \
	  && python3 scripts/environment_from_lock.py

clean-build:
	rm -rf build figures/*/ paper/*.pdf paper/*.html data/*.duckdb .snakemake
