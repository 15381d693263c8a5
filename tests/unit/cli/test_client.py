"""The management API client's one rule for a missing object (cli/client.py): with `missing`,
a 404 ends the command as "no <missing>"; any other failure keeps the API's own words."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rabbitish.cli.client import REFUSED, ApiFailure, Client, CliError


class Answers(BaseHTTPRequestHandler):
    """Answers the status the path names (/404, /400, /204) with the management API's body."""

    def _answer(self) -> None:
        status = int(self.path.strip("/"))
        body = b"" if status == 204 else json.dumps({"error": "e", "reason": "r"}).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_DELETE = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def client() -> Iterator[Client]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Client(f"http://127.0.0.1:{server.server_address[1]}", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("method", ["GET", "DELETE", "POST"])
def test_a_404_of_a_named_object_says_no_such_object(client, method):
    with pytest.raises(CliError) as info:
        client.request(method, "/404", missing="queue 'q' in vhost '/'")
    assert type(info.value) is CliError
    assert (info.value.message, info.value.code) == ("no queue 'q' in vhost '/'", REFUSED)
    with pytest.raises(CliError) as info:
        client.get("/404", missing="user 'u'")
    assert info.value.message == "no user 'u'"


def test_other_failures_keep_the_api_s_words(client):
    with pytest.raises(ApiFailure) as info:
        client.request("DELETE", "/404")
    assert (info.value.status, info.value.message) == (404, "404 e: r")
    with pytest.raises(ApiFailure) as info:
        client.request("DELETE", "/400", missing="queue 'q'")
    assert (info.value.status, info.value.code) == (400, REFUSED)
    assert client.request("DELETE", "/204", missing="queue 'q'") is None
