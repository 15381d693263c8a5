"""Start-up order and `rabbitish wait-ready`: the management API's port accepts before the AMQP
port does (a script that waits for 5672 may call the API at once, and is answered), and
wait-ready exits 0 once both answer, 3 when the time runs out first."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import urllib.request

from tests.support.broker_process import MODULE
from tests.support.ports import ReservedPort
from tests.support.waiting import wait_until


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_management_accepts_before_amqp(tmp_path):
    with ReservedPort() as amqp, ReservedPort() as http:
        log = (tmp_path / "serve.log").open("wb")
        argv = [*MODULE, "serve", "--port", str(amqp.port), "--management-port", str(http.port)]
        proc = subprocess.Popen([*argv, "--data-dir", ":memory:"], stdout=log, stderr=log)
        try:
            wait_until(lambda: _accepts(amqp.port), timeout=30, interval=0.001)
            assert _accepts(http.port)  # at the first moment AMQP accepts, the API already does
            # and a request sent then is answered (the API loads after AMQP is served: the
            # connection waits for it instead of being refused)
            overview = urllib.request.Request(
                f"http://127.0.0.1:{http.port}/api/overview",
                headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
            )
            with urllib.request.urlopen(overview, timeout=30) as reply:
                assert reply.status == 200
            wait_ready = [*MODULE, "wait-ready", "--url", f"http://127.0.0.1:{http.port}"]
            done = subprocess.run(
                [*wait_ready, "--amqp-port", str(amqp.port), "--timeout", "30"],
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith("ready: AMQP on 127.0.0.1:")
        finally:
            proc.terminate()
            assert proc.wait(30) == 0
            log.close()


def test_wait_ready_times_out_with_3():
    with ReservedPort() as nothing:
        url = f"http://127.0.0.1:{nothing.port}"
        done = subprocess.run(
            [sys.executable, "-m", "rabbitish", "wait-ready", "--url", url, "--timeout", "0.3"],
            capture_output=True,
            text=True,
        )
    assert done.returncode == 3
    assert done.stderr == "error: broker not ready after 0.3 s\n"
