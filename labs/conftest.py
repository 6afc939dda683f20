"""`pytest labs/` runs the solutions only: a starter stops at its exercises by design (tests/test_labs.py
runs the starters, expecting exactly that)."""

collect_ignore_glob = ["[0-9][0-9]_*.ipynb"]
