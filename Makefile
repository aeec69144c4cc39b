# The two commands: `make run` (set up and serve) and `make test` (every test).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8765
STAMP  := $(VENV)/.installed

.PHONY: run test install migrate clean

run: install migrate
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

install: $(STAMP)

# Re-install whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Vetted needs Python 3.11 or newer; set PYTHON=python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# torch first, pinned: anything unpinned that depends on it would pull a CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

clean:
	rm -rf $(VENV) *.egg-info
