"""The benchmark suite (`python -m benchmarks`) and narrower benchmarks, each a `python -m` entry;
not part of the installed package and not timed tests."""
