# pgfs-lab. The two commands a newcomer needs:
#   make run    set up what is missing, run the default study end to end, build paper/<study>.pdf
#   make test   the test suite (CI's .ci/run calls exactly this)
# More: make run CONFIG=config/<study>.yaml | make analyse STUDY=<name> [DAY2=<raw folder>] | make test-fast | make lint | make docs
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
DAY2 ?=
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
SNAKE := $(PY) -m snakemake --snakefile $(LAB)/workflow/Snakefile --cores $(CORES) --scheduler greedy --rerun-incomplete \
         --keep-going --printshellcmds --quiet rules
ifeq ($(EXECUTOR),slurm)
RUN_SNAKE := $(PY) -m snakemake --snakefile $(LAB)/workflow/Snakefile --profile $(LAB)/workflow/profiles/slurm --quiet rules
else ifeq ($(EXECUTOR),local)
RUN_SNAKE := $(SNAKE)
else
$(error EXECUTOR=$(EXECUTOR): local or slurm)
endif
HOST_CONFIG := $(if $(HOSTS),hosts=$(HOSTS) pin_hosts=$(PIN_HOSTS)) $(if $(HOST),host=$(HOST))
# One study measures on this machine at a time: a local `make run` holds this lock (the one `make bench`'s real
# runs take) from its first run to its paper, and a second one waits, saying so; two studies side by side would
# measure each other. The shell holds the lock on a descriptor Snakemake inherits: no process between them.
MACHINE_LOCK ?= /tmp/pgfslab-real.lock

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
# data/raw/<study>/_attempts/). The set-up runs under the machine lock too: a fresh clone's (apt, the
# environment, byte-compiling) takes both cores for a minute, and beside a study's run it slowed that run by half.
run:
	@if [ "$(EXECUTOR)" = slurm ] && [ -z "$(HOSTS)" ]; then \
	  echo "EXECUTOR=slurm needs HOSTS=key1,key2,... (one Slurm job per host key; PIN_HOSTS=1: keys are node names)"; exit 2; fi
	@trap 'echo' INT TERM; \
	if [ "$(EXECUTOR)" = local ]; then exec 9>>$(MACHINE_LOCK); if ! flock -n 9; then \
	  echo "make run: another study is measuring on this machine (it holds $(MACHINE_LOCK)): waiting for it to end"; \
	  flock 9; fi; fi; \
	bash $(LAB)/scripts/setup.sh || exit $$?; \
	$(RUN_SNAKE) $(SNAKE_ARGS) --configfile $(CONFIG) $(if $(strip $(HOST_CONFIG)),--config $(HOST_CONFIG)); rc=$$?; \
	$(PY) -m pgfslab status --config $(CONFIG); st=$$?; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$st

# Re-run every analysis and rebuild the paper from data/raw/$(STUDY)/ alone (no workload runs). DAY2=<an
# earlier raw folder of the same study>: both days in one database, the paper says whether they agree
# (docs/two-days.md).
analyse: setup
	@test -n "$(STUDY)" || { echo "usage: make analyse STUDY=<name of a folder in data/raw/>"; exit 2; }
	@$(SNAKE) --config study=$(STUDY) raw_only=1 $(if $(DAY2),day2=$(DAY2))

# Test files side by side (pytest-xdist, each file on one worker: its study set up once); a real study in a
# test spends much of its time waiting (its runs' fixed durations, Slurm, the disks), so more workers than
# cores. Then, one after another in one process, the files marked machine_wide (vm.* settings, dropped caches,
# cgroups), which must not run beside each other or beside a study. TEST_WORKERS=0: everything in one process.
TEST_WORKERS ?= 4

# Everything (CI): lint, then every test including the slow ones (real file systems, PostgreSQL,
# notebooks, the paper).
test: setup setup-slurm lint
	@cd $(LAB) && $(PY) -m pytest -m "not machine_wide" -n $(TEST_WORKERS) --dist loadfile --durations 15 \
	  && $(PY) -m pytest -m machine_wide -p no:xdist --durations 5

# The inner loop: the tests that need no root, no server and no notebook kernel (under a minute).
test-fast: setup
	@cd $(LAB) && $(PY) -m pytest -m "not slow" -q

lint: setup
	@cd $(LAB) && $(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m mypy

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
