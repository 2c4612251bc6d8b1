"""The serve-protocol client a Session moves to once a candidate's fault cost the process its
CUDA context (engine._ServeChild): requests and answers as src/serve/protocol.hpp defines them,
against a stand-in server on an abstract Unix socket (no GPU, no kerncap serve)."""
import json
import os
import socket
import threading

import pytest

from kerncap import engine


class FakeServer:
    """Answers each connection's one request line with the next canned response."""

    def __init__(self, responses):
        self.name = f"kerncap-test-{os.getpid()}-{id(self)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind("\0" + self.name)
        self.sock.listen(4)
        self.responses = list(responses)
        self.requests = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        for resp in self.responses:
            conn, _ = self.sock.accept()
            with conn:
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                self.requests.append(json.loads(buf))
                conn.sendall((json.dumps(resp) + "\n").encode())

    def close(self):
        self.sock.close()


def child_for(server):
    c = engine._ServeChild.__new__(engine._ServeChild)  # no process: the client alone
    c.socket = server.name
    c.path = "OUT"
    return c


def test_an_evaluation_goes_as_a_protocol_request_and_comes_back():
    ev = {"result": "PASS", "line": "Result: PASS (strong: ...)", "format": "kerncap-verdict", "version": 1}
    srv = FakeServer([{"kerncap_serve": 1, "ok": True, "evaluation": ev}])
    try:
        doc = child_for(srv).evaluate("v.cubin", "v.cubin", {"time": False, "exact": True})
        assert doc == ev
        req = srv.requests[0]
        assert req["kerncap_serve"] == 1 and req["op"] == "evaluate"
        assert req["cubin"] == os.path.abspath("v.cubin") and req["image"] == "v.cubin"
        assert req["options"] == {"time": False, "exact": True}
    finally:
        srv.close()


def test_the_captured_image_sends_no_cubin():
    srv = FakeServer([{"kerncap_serve": 1, "ok": True, "evaluation": {"result": "PASS"}}])
    try:
        child_for(srv).evaluate(None, None, {})
        assert "cubin" not in srv.requests[0]
    finally:
        srv.close()


@pytest.mark.parametrize("kind,code", [("input", engine.E_INPUT), ("usage", engine.E_INPUT),
                                       ("device", engine.E_DEVICE), ("stale", engine.E_INTERNAL)])
def test_a_refusal_is_an_engine_error_of_its_kind(kind, code):
    srv = FakeServer([{"kerncap_serve": 1, "ok": False, "error": {"kind": kind, "message": "no such kernel"}}])
    try:
        with pytest.raises(engine.EngineError) as e:
            child_for(srv).evaluate("v.cubin", "v.cubin", {})
        assert e.value.exit_code == code and "no such kernel" in str(e.value)
    finally:
        srv.close()


def test_another_protocol_version_is_refused():
    srv = FakeServer([{"kerncap_serve": 2, "ok": True, "evaluation": {}}])
    try:
        with pytest.raises(engine.EngineError, match="protocol"):
            child_for(srv).evaluate(None, None, {})
    finally:
        srv.close()
