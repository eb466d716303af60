# Systolic Toolkit. Every target creates and reuses .venv on first use, so on a
# fresh machine `make demo` and `make test` work with nothing installed beforehand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# make sim OP=matmul M=64 N=64 K=64 BACKEND=verilator CONFIG=gemmini
OP      ?= matmul
M       ?= 64
N       ?= 64
K       ?= 64
BACKEND ?= functional
CONFIG  ?= gemmini
# make tune M=.. N=.. K=.. TRIALS=100 DB=tuning.db ; make bench SUITE=gemmini_gemms
TRIALS  ?= 100
DB      ?= tuning.db
SUITE   ?= gemmini_gemms
JOBS    ?= 2
# make networks NET_TUNE=200 MODELS="resnet50 mobilenetv2"
NET_TUNE ?= 0
MODELS   ?= resnet18 resnet50 mobilenetv2 bert

.PHONY: help venv demo test test-quick docs docs-build sim asm tune bench golden tables bench-tables bench-all networks clean

help:
	@echo "make demo                 tune a MobileNetV2 conv on the RTL of the SoC model; compare with the default and Gemmini's library"
	@echo "make test                 the regression suite (pytest, cocotb, cycle goldens)"
	@echo "make test-quick           the quick loop: the suite without the slow and the RTL (Verilator) tests"
	@echo "make docs                 serve the docs site locally (mkdocs serve); make docs-build: build it strictly into site/"
	@echo "make sim OP=matmul M= N= K= BACKEND=functional|verilator|cpu|gpu CONFIG=gemmini|tiny|FILE.toml"
	@echo "make tune M= N= K= TRIALS=100 DB=tuning.db"
	@echo "make bench SUITE=gemmini_gemms|resnet50|bert_base|mobilenetv2 BACKEND=functional|verilator"
	@echo "make golden               re-record the cycle regression suite (on purpose)"
	@echo "make networks NET_TUNE=0  ResNet-18/50, MobileNetV2, a BERT layer from quantized ONNX on the RTL vs onnxruntime"
	@echo "make tables               measure the RTL ground-truth tables that are missing or stale (benchmarks/tables/)"
	@echo "make bench-tables         tuners, cost model and stand-in judged on the RTL tables"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $@

venv: $(STAMP)

# a first look builds its model plain (SYSTOLIC_PGO=0: one compile, 42 s at dim 16 on two cores, where the
# profile-guided build, whose model runs ~1.2x faster, takes 79-96 s); SYSTOLIC_PGO=1 make demo builds that
demo: $(STAMP)
	SYSTOLIC_PGO=$${SYSTOLIC_PGO:-0} $(BIN)/python -m toolkit.cli.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) tests

test-quick: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not slow and not rtl" tests

# the docs site (docs/, mkdocs.yml); `make test` builds it strictly too (tests/test_docs.py)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

sim: $(STAMP)
	$(BIN)/systolic run $(OP) --m $(M) --n $(N) --k $(K) --backend $(BACKEND) --config $(CONFIG)

asm: $(STAMP)
	$(BIN)/systolic asm $(OP) --m $(M) --n $(N) --k $(K) --config $(CONFIG)

tune: $(STAMP)
	$(BIN)/systolic tune $(OP) --m $(M) --n $(N) --k $(K) --config $(CONFIG) --trials $(TRIALS) --db $(DB)

bench: $(STAMP)
	$(BIN)/systolic bench $(SUITE) --backend $(BACKEND) --config $(CONFIG)

golden: $(STAMP)
	$(BIN)/python tests/golden_cycles.py --update

tables: $(STAMP)
	$(BIN)/python benchmarks/make_tables.py --workers $(JOBS)

bench-tables: tables
	$(BIN)/python benchmarks/bench_tuner_tables.py --workers $(JOBS)

bench-all: $(STAMP)
	$(BIN)/python benchmarks/bench_lowering.py
	$(BIN)/python benchmarks/bench_verilator.py
	$(BIN)/python benchmarks/bench_tuner.py
	$(BIN)/python benchmarks/bench_tuner_quality.py
	$(BIN)/python benchmarks/bench_tuner_tables.py --workers $(JOBS)

networks: $(STAMP)
	$(BIN)/python benchmarks/bench_networks.py --models $(MODELS) --backend verilator --config $(CONFIG) --tune $(NET_TUNE)

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache
