"""The management web UI: a static page and a few ES modules (no framework, no build step,
nothing fetched from elsewhere) shipped as package data and served by the management listener
at `/`. The page logs in with the broker's users and reads and drives the JSON API under
`/api`, as RabbitMQ's UI does; it re-reads the API every few seconds to stay live."""

from __future__ import annotations

from importlib import resources

from rabbitish.management.http_server import Request, Response
from rabbitish.management.routing import RouteNotFound, Router

CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
}
INDEX = "index.html"


def _files() -> dict[str, tuple[bytes, str]]:
    """name -> (content, content type) of every file the UI serves, read once."""
    found: dict[str, tuple[bytes, str]] = {}
    for entry in resources.files(__package__).iterdir():
        suffix = entry.name[entry.name.rfind(".") :]
        if entry.is_file() and suffix in CONTENT_TYPES:
            found[entry.name] = (entry.read_bytes(), CONTENT_TYPES[suffix])
    return found


def add_routes(router: Router) -> None:
    """`/` (the page) and `/ui/{file}` (its scripts and style sheet)."""
    files = _files()

    def respond(name: str) -> Response:
        found = files.get(name)
        if found is None or name.endswith(".py"):
            raise RouteNotFound(name)
        body, content_type = found
        return Response(
            body=body,
            content_type=content_type,
            charset="utf-8",
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    async def index(request: Request) -> Response:
        return respond(INDEX)

    async def asset(request: Request) -> Response:
        name = request.match_info["name"]
        if name == INDEX:
            raise RouteNotFound(name)
        return respond(name)

    router.add_get("/", index)
    router.add_get("/ui/{name}", asset)
