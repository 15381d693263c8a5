"""The management web UI: a static page and a few ES modules (no framework, no build step,
nothing fetched from elsewhere) shipped as package data and served by the management listener
at `/`. The page logs in with the broker's users and reads and drives the JSON API under
`/api`, as RabbitMQ's UI does; it re-reads the API every few seconds to stay live."""

from __future__ import annotations

from importlib import resources

from aiohttp import web

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


def add_routes(app: web.Application) -> None:
    """`/` (the page) and `/ui/{file}` (its scripts and style sheet)."""
    files = _files()

    def respond(name: str) -> web.Response:
        found = files.get(name)
        if found is None or name.endswith(".py"):
            raise web.HTTPNotFound()
        body, content_type = found
        return web.Response(
            body=body,
            content_type=content_type,
            charset="utf-8",
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    async def index(request: web.Request) -> web.StreamResponse:
        return respond(INDEX)

    async def asset(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name == INDEX:
            raise web.HTTPNotFound()
        return respond(name)

    app.router.add_get("/", index)
    app.router.add_get("/ui/{name}", asset)
