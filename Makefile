# The two commands: `make run` and `make test`. Both create .venv if missing and install the pinned
# stack (constraints.txt) once; a second call with nothing changed goes straight to work.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt
# Each pass in one xdist worker (the controller reports a worker that crashes and goes on): the two
# passes run side by side, one per core of a 2-core machine; more workers each pay their imports
# and shared inputs again, and contend (docs/measurements.md, "One worker per pass").
PYTEST_ARGS ?= -n 1 --durations=20
ARGS ?=
LINTED := albert pipelines model flows infra tests benchmarks

.PHONY: run test test-tf test-jax browser bench lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[test,jax,dev]"
	touch $@ $(VENV)/.installed-run

# The benchmarks need the tests' stack and datatrove, the peer near_dedup measures against.
$(VENV)/.installed-bench: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[test,jax,dev,bench]"
	touch $@ $(VENV)/.installed-test $(VENV)/.installed-run

## make run: the end-to-end flow on the embedded default corpus (ARGS="..." adds flow flags)
run: $(VENV)/.installed-run
	$(PY) -m flows.pipeline.flow $(ARGS)

## make test: the suite on the TensorFlow backend and, beside it, the Keras tests again on JAX with
# the backend-free tests, which run once, in that shorter pass (each pass's output is printed whole
# when it ends), both on one Prefect server (tests/prefect_session.py)
test: $(VENV)/.installed-test browser
	$(PY) tests/prefect_session.py \
		$(MAKE) --no-print-directory --jobs=2 --output-sync=target test-tf test-jax

# The report test looks at the HTML report in a real headless browser: Debian's chromium, installed
# once when missing and run as root (CI on a fresh machine); elsewhere that test skips with a reason.
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

test-tf:
	$(PY) -m pytest -m "not backend_free" $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The JAX pass collects only the modules that hold its tests.
JAX_PASS_TESTS = $(shell grep -lE "mark\.(keras|backend_free)" tests/test_*.py)

test-jax:
	KERAS_BACKEND=jax $(PY) -m pytest -m "keras or backend_free" $(PYTEST_ARGS) $(JAX_PASS_TESTS) \
		|| [ $$? -eq 5 ]

# The living benchmarks that need no input but ../shared/data (docs/measurements.md cites each);
# demo_downstream (a finished run), finetune_parity (a checkpoint) and learning_parity_report (logs)
# take theirs; benchmarks/studies/ and benchmarks/helpers/ are not run.
BENCHMARKS := segment vocab tfrecords tokenizer_export scale scale_plan model_params pretrain \
	pretrain_quality learning_parity finetune_steps faults domain_line near_dedup decontamination

## make bench: the living benchmarks in benchmarks/, one JSON line each
bench: $(VENV)/.installed-bench
	@for name in $(BENCHMARKS); do echo "== benchmarks.$$name" >&2; \
		$(PY) -m benchmarks.$$name || exit 1; done

## make lint: ruff's rules (line length 100 included) and its formatting, as CI checks them
lint: $(VENV)/.installed-test
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)

clean:
	rm -rf $(VENV) runs .pytest_cache
