# Developer targets. CI runs .ci/run (the README's test command).
PY ?= python
FUZZ_EXAMPLES ?= 2000

.PHONY: test lint fuzz security

test:
	$(PY) -m pytest

lint:
	ruff check --line-length 100 --select E,F,W,I,UP,B paradise tests benchmarks

# the adversarial suite on every reachable backend
security:
	$(PY) -m pytest tests/security -q

# long fuzzing run (CI runs the same properties with HYPOTHESIS_PROFILE=ci: 50 examples)
fuzz:
	$(PY) benchmarks/fuzz.py --examples $(FUZZ_EXAMPLES)
