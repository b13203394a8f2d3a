# Two commands for a fresh machine that has only Python, make and pip.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test lint demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[collector,dev]'
	touch $(STAMP)

# ruff over the whole tree, mypy over the packages (both configured in pyproject.toml).
lint: $(STAMP)
	$(PY) -m ruff check . && $(PY) -m mypy

# The dashboards' browser test drives Debian's chromium; install it where apt-get is usable (CI
# runs as root), and skip this step when chromium is already there or apt-get is not.
# One test worker more than cores: about a quarter of the suite's time is spent waiting (servers
# starting, exporters backing off), which a worker per core leaves idle.
test: $(STAMP) lint
	@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
		echo "installing chromium for the browser test (apt-get)"; \
		($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null) \
			|| echo "could not install chromium: the browser test will be skipped"; \
	fi
	$(PY) -m pytest -q -n $$($(PY) -c 'import os; print((os.cpu_count() or 1) + 1)') --dist worksteal

demo: $(STAMP)
	$(VENV)/bin/infersight demo $(DEMO_ARGS)

# The benchmarks compare against Langfuse and Traceloop, which configure OpenTelemetry their own
# way: they get a venv of their own, never the test venv.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	# The peers (the 'bench' extra) first and on their own: traceloop-sdk pins OpenTelemetry a patch
	# release behind the newest, and resolved together with our own requirements ('-e .[bench]') pip
	# backtracked for over 30 minutes; alone they resolve in ~2 minutes, and ours then fit their pins.
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $$($(PYTHON) -c \
		"import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench']))")
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[collector]'
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) .infersight .infersight-demo build *.egg-info
