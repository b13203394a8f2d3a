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

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .infersight build *.egg-info
