"""`python -m benchmarks.scaling` must keep working: every dimension measured on tiny sizes
against the in-process broker, its tables and its figure. Nothing asserts a speed."""

from __future__ import annotations

import importlib.util

import pytest

from benchmarks.scaling import DIMENSIONS, Result, Settings, load, measure_dimension, parse, save
from benchmarks.scaling_report import draw, markdown
from rabbitish.testing import running_broker

TINY = Settings(
    seconds=0.3,
    warmup=0.1,
    settle=0.0,
    per_connection_rate=50.0,
    messages=200,
    depth_messages=100,
    size_bytes=256 * 1024,
    size_min=2,
    size_max=50,
    window_bytes=256 * 1024,
    timeout=30.0,
)
# two points each; a body larger than a frame, and a depth the consumer drains past
POINTS = {
    "connections": (1, 3),
    "queues": (1, 30),
    "consumers": (1, 3),
    "size": (16, 200_000),
    "depth": (0, 500),
    "transactions": (1, 5),
}


def test_every_dimension_runs_on_tiny_sizes_and_reports(tmp_path) -> None:
    assert set(POINTS) == set(DIMENSIONS)
    results = []
    with running_broker() as broker:
        for name, points in POINTS.items():
            found = measure_dimension(DIMENSIONS[name], points, TINY, broker.url, [])
            assert [p.x for p in found] == list(points), name
            assert all(p.rate > 0 and p.cpu_us is None and p.rss_mib is None for p in found)
            results.append(Result(name, "today", (0.0,) * 3, (0.0,) * 3, {"rabbitish": found}))
        assert all(p.extra["consume msgs/s"] > 0 for p in results[4].brokers["rabbitish"])
    text = markdown(results)
    for name in POINTS:
        assert f"| {name} | rabbitish " in text
    assert "| 200000 B |" in text and "| 16 B |" in text
    save(results, tmp_path / "scaling.json")
    assert load(tmp_path / "scaling.json") == results
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib (the bench extra) is not installed: no figure")
    from PIL import Image

    draw(results, tmp_path / "scaling.png")
    with Image.open(tmp_path / "scaling.png") as image:
        assert image.mode == "P"  # a reduced palette keeps the PNG small


def test_the_command_line_picks_dimensions_and_refuses_unknown_ones() -> None:
    args = parse(["--quick", "--dimensions", "queues, depth"])
    assert args.quick and args.dimensions == ["queues", "depth"]
    assert parse([]).dimensions == list(DIMENSIONS)
    with pytest.raises(SystemExit):
        parse(["--dimensions", "queues,widgets"])
