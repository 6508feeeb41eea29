# Developer targets. CI runs .ci/run (the README's test command).
PY ?= python
FUZZ_EXAMPLES ?= 2000

.PHONY: test lint fuzz security sql-snapshot

test:
	$(PY) -m pytest

# style, then the import contracts of pyproject.toml (layers, no cycles, private modules)
lint:
	ruff check --line-length 100 --select E,F,W,I,UP,B paradise tests benchmarks scripts
	lint-imports

# the adversarial suite on every reachable backend
security:
	$(PY) -m pytest tests/security -q

# long fuzzing run (CI runs the same properties with HYPOTHESIS_PROFILE=ci: 50 examples)
fuzz:
	$(PY) benchmarks/fuzz.py --examples $(FUZZ_EXAMPLES)

# the generated SQL of every query corpus, three dialects (scripts/sql_snapshot.py):
# `make sql-snapshot OUT=dir` writes it; add BASE=dir to print every difference against
# a snapshot taken before a change (a refactoring must leave none)
sql-snapshot:
	$(PY) scripts/sql_snapshot.py $(OUT) $(if $(BASE),--compare $(BASE))
