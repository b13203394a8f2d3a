# Two commands for a fresh machine that has only Python, make and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[collector,dev]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(VENV)/bin/infersight demo $(DEMO_ARGS)

# The benchmarks compare against Langfuse and Traceloop, which configure OpenTelemetry their own
# way: they get a venv of their own, never the test venv.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[collector,dev,bench]'
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) .infersight build *.egg-info
