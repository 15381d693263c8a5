"""The web UI's files as the management listener serves them: the page at `/` and its assets
without a login (the page logs in to the API itself), JavaScript with a JavaScript type (module
scripts need it), and nothing fetched from another host, so the UI works offline."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

from rabbitish.management import ui

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["'](?:https?:)?//|import\s.*["']https?://|url\(\s*["']?https?://"""
)


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def test_page_and_assets_without_login(rabbitish_broker, rabbitish_management_url) -> None:
    base = f"http://127.0.0.1:{rabbitish_broker.management_port}"
    status, kind, page = fetch(base + "/")
    assert (status, kind.split(";")[0]) == (200, "text/html")
    assets = re.findall(r'(?:src|href)="(ui/[^"]+)"', page)
    assert {"ui/app.js", "ui/style.css"} <= set(assets)
    served = {}
    for name in ui._files():
        status, kind, text = fetch(f"{base}/ui/{name}")
        if name == ui.INDEX:
            assert status == 404  # only at /
            continue
        assert status == 200, name
        served[name] = (kind.split(";")[0], text)
    assert served["app.js"][0] == "text/javascript"
    assert served["style.css"][0] == "text/css"
    for name, (_, text) in {**served, "index.html": ("", page)}.items():
        assert not EXTERNAL.search(text), f"{name} loads something from another host"
    imports = {m for _, text in served.values() for m in re.findall(r'from "\./([^"]+)"', text)}
    assert imports <= set(served), imports - set(served)


def test_unknown_asset_and_the_api_still_needs_login(rabbitish_broker, rabbitish_management_url):
    base = f"http://127.0.0.1:{rabbitish_broker.management_port}"
    assert fetch(base + "/ui/nothing.js")[0] == 404
    assert fetch(base + "/ui/__init__.py")[0] == 404
    assert fetch(base + "/api/overview")[0] == 401


HTML_SINKS = re.compile(
    r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function"
)


def test_scripts_never_parse_text_as_markup() -> None:
    """Broker names (queues, users, vhosts, headers...) reach the page as text nodes only: the
    scripts build the DOM and never hand a string to the HTML parser."""
    for name, (body, kind) in ui._files().items():
        if kind == "text/javascript":
            found = HTML_SINKS.findall(body.decode())
            assert found == [], f"{name}: {found}"
