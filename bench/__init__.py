"""The benchmarks, each run from the repository root as ``python -m bench.NAME`` (see ``README.md``).

``bench._harness`` holds what they share; no benchmark imports another.
"""
