"""Fuzzing the broker's input paths with generated inputs, on the sans-IO connection objects (no
sockets, so hundreds of inputs a second): `targets` holds one check per input path, the
strategies that generate its inputs, and the invariant each input must keep. The suite runs a
short pass (tests/fuzz/test_fuzz.py); `make fuzz` (python -m tests.fuzz) a long one."""
