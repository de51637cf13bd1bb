# Quick start:  make demo   (set up, then run the built-in example)
#               make test   (set up, then run the whole test suite)
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
OUT    ?= out

.PHONY: demo test setup system-deps bench notebooks clean fuzz

demo: setup
	$(PY) -m tapeviz.commands.demo --out $(OUT)

test: setup
	CI=$${CI:-true} $(PY) -m pytest -q

setup: system-deps $(VENV)/.installed

# Debian's graphviz (`dot`), chromium (the browser tests) and nodejs (runs the static page's
# module against the kernel's output), installed when missing and root.
system-deps:
	@missing=""; command -v dot >/dev/null || missing="$$missing graphviz"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	  else echo "warning: missing$$missing (install with: sudo apt-get install$$missing)"; fi; \
	fi

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

bench: setup
	$(VENV)/bin/pip install -q -e '.[bench]'
	$(PY) -m bench.run

# the differential fuzzer for hours: FUZZ_HOURS, FUZZ_WORKERS, FUZZ_SEED, findings in FUZZ_OUT
FUZZ_HOURS   ?= 2
FUZZ_WORKERS ?= 2
FUZZ_SEED    ?= 1000
FUZZ_OUT     ?= fuzz-findings
fuzz: setup
	nice -n 19 $(PY) -m ad.checktools.fuzz --hours $(FUZZ_HOURS) --workers $(FUZZ_WORKERS) --seed $(FUZZ_SEED) \
	  --programs 500 --out $(FUZZ_OUT)

# the teaching notebooks, executed, as static HTML, each debugger with its whole session embedded
notebooks: setup
	$(PY) -m tapeviz.commands.notebooks render --out $(OUT)/notebooks

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
