"""The management API's routes: method + path pattern -> handler. A pattern is matched one
path segment at a time against the segments as decoded (`/api/queues/{vhost}/{name}` takes
`/api/queues/%2F/a%2Fb` as vhost `/` and name `a/b`), `{name}` takes any non-empty segment and
`{name:regex}` one the regex matches whole. GET routes answer HEAD too, and every route under
`/api/` also answers with one trailing slash, as RabbitMQ's router does."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rabbitish.management.http_server import Request, Response

Handler = Callable[[Request], Awaitable[Response]]
# A pattern segment: a literal, or (variable name, compiled regex or None for any).
Segment = str | tuple[str, "re.Pattern[str] | None"]


class RouteNotFound(Exception):
    """No route has this path."""


class MethodNotAllowed(Exception):
    """Routes have this path, none this method."""

    def __init__(self, allowed: set[str]) -> None:
        super().__init__(", ".join(sorted(allowed)))
        self.allowed = allowed


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    pattern: str
    segments: tuple[Segment, ...]
    handler: Handler

    def match(self, segments: list[str]) -> dict[str, str] | None:
        """The variables of `segments` when this route's pattern takes them, else None."""
        found: dict[str, str] = {}
        for wanted, given in zip(self.segments, segments, strict=True):
            if isinstance(wanted, str):
                if wanted != given:
                    return None
            else:
                name, regex = wanted
                if not given or (regex is not None and not regex.fullmatch(given)):
                    return None
                found[name] = given
        return found


def _compile(pattern: str) -> tuple[Segment, ...]:
    segments: list[Segment] = []
    for part in pattern.split("/")[1:]:
        if part.startswith("{") and part.endswith("}"):
            name, _, regex = part[1:-1].partition(":")
            segments.append((name, re.compile(regex) if regex else None))
        else:
            segments.append(part)
    return tuple(segments)


class Router:
    """Routes in the order added; the first whose pattern and method match answers."""

    def __init__(self) -> None:
        self._by_length: dict[int, list[Route]] = {}

    def add_route(self, method: str, pattern: str, handler: Handler) -> None:
        segments = _compile(pattern)
        shapes = [segments]
        if pattern.startswith("/api/") and not pattern.endswith("/"):
            shapes.append((*segments, ""))  # the same route with a trailing slash
        methods = [method, "HEAD"] if method == "GET" else [method]
        for shape in shapes:
            for each in methods:
                route = Route(each, pattern, shape, handler)
                self._by_length.setdefault(len(shape), []).append(route)

    def add_get(self, pattern: str, handler: Handler) -> None:
        self.add_route("GET", pattern, handler)

    def add_put(self, pattern: str, handler: Handler) -> None:
        self.add_route("PUT", pattern, handler)

    def add_post(self, pattern: str, handler: Handler) -> None:
        self.add_route("POST", pattern, handler)

    def add_delete(self, pattern: str, handler: Handler) -> None:
        self.add_route("DELETE", pattern, handler)

    def resolve(self, request: Request) -> Handler:
        """The handler for `request`, its variables put in `request.match_info`; raises
        RouteNotFound or MethodNotAllowed."""
        allowed: set[str] = set()
        for route in self._by_length.get(len(request.segments), ()):
            found = route.match(request.segments)
            if found is None:
                continue
            if route.method == request.method:
                request.match_info = found
                return route.handler
            allowed.add(route.method)
        if allowed:
            raise MethodNotAllowed(allowed)
        raise RouteNotFound(request.path)
