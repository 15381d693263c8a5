"""The query parameters RabbitMQ's list endpoints take: `sort` / `sort_reverse`, `columns`, and
pagination (`page`, `page_size`, `name`, `use_regex`), which turns the answer into a page
object."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from rabbitish.management.errors import ApiError, bad_request

MAX_PAGE_SIZE = 500


def _lookup(item: dict[str, Any], dotted: str) -> Any:
    value: Any = item
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool | int | float):
        return (1, value)
    return (2, str(value))


def _columns(item: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    picked: dict[str, Any] = {}
    for column in columns:
        parts = column.split(".")
        value = _lookup(item, column)
        if value is None and not _present(item, parts):
            continue
        target = picked
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    return picked


def _present(item: dict[str, Any], parts: list[str]) -> bool:
    value: Any = item
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def _int_param(query: Mapping[str, str], name: str, default: int) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer") from None


def apply(
    items: list[dict[str, Any]], query: Mapping[str, str], default_sort: tuple[str, ...] = ()
) -> Any:
    """Sort, filter, paginate and pick columns as the query asks. A list with `default_sort`
    keys is sorted by `sort` then those, each only if the columns asked for keep it: RabbitMQ
    picks the columns before it sorts (its bindings listed without their vhost column are
    ordered by source across vhosts)."""
    sort = query.get("sort")
    if default_sort:
        wanted = [c for c in query.get("columns", "").split(",") if c]
        keys = [k for k in (*([sort] if sort else []), *default_sort) if not wanted or k in wanted]
        items = sorted(items, key=lambda i: [_sort_key(_lookup(i, k)) for k in keys])
    elif sort:
        items = sorted(items, key=lambda i: _sort_key(_lookup(i, sort)))
    if query.get("sort_reverse") == "true":
        items = list(reversed(items))
    page_object = None
    if "page" in query:
        page = _int_param(query, "page", 1)
        size = _int_param(query, "page_size", 100)
        if size > MAX_PAGE_SIZE or size < 1 or page < 1:
            raise bad_request("Invalid page size or page number")
        total = len(items)
        name = query.get("name")
        if name:
            if query.get("use_regex") == "true":
                try:
                    pattern = re.compile(name)
                except re.error:
                    raise bad_request("Invalid regex") from None
                items = [i for i in items if pattern.search(str(i.get("name", "")))]
            else:
                items = [i for i in items if name in str(i.get("name", ""))]
        filtered = len(items)
        page_count = max(1, math.ceil(filtered / size))
        if page > page_count:
            raise ApiError(
                400,
                "page_out_of_range",
                f"Page out of range, page: {page} page size: {size}, len: {filtered}",
            )
        start = (page - 1) * size
        chunk = items[start : start + size]
        page_object = {
            "filtered_count": filtered,
            "item_count": len(chunk),
            "page": page,
            "page_count": page_count,
            "page_size": size,
            "total_count": total,
        }
        items = chunk
    columns = query.get("columns")
    if columns:
        wanted = [c for c in columns.split(",") if c]
        items = [_columns(i, wanted) for i in items]
    if page_object is not None:
        return {**page_object, "items": items}
    return items
