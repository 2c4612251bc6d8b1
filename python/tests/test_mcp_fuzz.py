"""The MCP server's requests are untrusted input (issue 38, item 4): malformed, huge and deeply
nested JSON-RPC lines, tool calls with arguments of the wrong type, and path arguments that
point outside a capture (/etc, ../.., /dev/zero, a FIFO, a link out of OUT). Each must end in a
JSON-RPC error or a tool error carrying a message, within seconds; the server must stay up
(a later request is answered) and touch no file outside what a call names. Seeded, so a
failure replays. Skipped where the `mcp` package is not installed."""
import json
import os
import random
import select
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp", reason="the `mcp` Python package is not installed (pip install 'kerncap[mcp]'): "
                                  "the MCP server is not fuzzed")

from conftest import write_capture  # noqa: E402

ROUNDS = int(os.environ.get("KERNCAP_MCP_FUZZ_ROUNDS", "60"))  # tool calls per seed; the long run sets more
TOOLS = ["info", "lint", "validate", "replay", "footprint", "locate", "serve_stop", "diff", "baseline_save"]


class Server:
    """`kerncap mcp` spoken to line by line, as a hostile client would (no SDK client)."""

    def __init__(self, kerncap_bin, cwd):
        env = dict(os.environ, KERNCAP_PYTHON=sys.executable)
        env.pop("KERNCAP_BIN", None)
        self.p = subprocess.Popen([kerncap_bin, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.buf = b""
        self.next_id = 1

    def send_raw(self, data: bytes):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def request(self, method, params=None, timeout=60.0):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        return self.wait_for(rid, timeout)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def wait_for(self, rid, timeout):
        """The response with id `rid` (notifications and other responses skipped), or fail."""
        end = time.monotonic() + timeout
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                try:
                    doc = json.loads(line)
                except ValueError:
                    pytest.fail(f"the server wrote a line that is not JSON: {line[:200]!r}")
                if isinstance(doc, dict) and doc.get("id") == rid:
                    return doc
            left = end - time.monotonic()
            assert left > 0, f"no answer to request {rid} within {timeout} s (server hung?)"
            assert self.p.poll() is None, f"the server exited ({self.p.returncode}) before answering {rid}"
            ready, _, _ = select.select([self.p.stdout], [], [], left)
            if ready:
                chunk = os.read(self.p.stdout.fileno(), 1 << 16)
                assert chunk, f"the server closed its output (exit {self.p.poll()})"
                self.buf += chunk

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                        "clientInfo": {"name": "fuzz", "version": "0"}})
        assert "result" in r, r
        self.notify("notifications/initialized")

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=20)
        except Exception:
            self.p.kill()
            self.p.wait()


def hostile_values(rng, tmp):
    outside = [
        "/etc", "/etc/passwd", "/", "/dev/zero", "/proc/self", "../../../../etc", "..", ".", "",
        str(tmp / "fifo"), str(tmp / "out-link"), str(tmp / "out" / "capture" / ".." / ".." / ".."),
        "--help", "--version", "-rf", "--force", "$(touch PWNED)", "`touch PWNED`", "a\nb", "a\x00b",
        "x" * rng.choice([1000, 100000, 1 << 20]), "\u202e\u0000\ud7ff", str(tmp / "out"),
    ]
    nested = 1
    for _ in range(rng.choice([10, 200, 5000])):
        nested = [nested]
    return outside + [0, -1, 2 ** 64, 1e308, float("-1e308"), True, None, [], {}, ["a"] * 3, {"a": {"b": 1}}, nested]


def dumps_or_none(obj):
    try:
        return json.dumps(obj)
    except (ValueError, RecursionError):
        return None


def snapshot(root):
    """What must not change: the tree around the work directory, names, sizes and mtimes."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = (st.st_mode, st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns if not os.path.isdir(p) else 0)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_requests_get_errors_and_the_server_stays_up(kerncap_bin, tmp_path, seed):
    rng = random.Random(seed)
    out = tmp_path / "out"
    write_capture(str(out), name="_Z10add_kernelPfS_i", regions=[(0, 0x7f0000000000, b"\1" * 64)],
                  after=[(0, 0, b"\2" * 16)])
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("outside the capture\n")
    os.symlink(tmp_path / "outside", tmp_path / "out-link")
    guarded = snapshot(str(tmp_path / "outside"))
    guarded_out = snapshot(str(out))
    work = tmp_path / "cwd"
    work.mkdir()

    s = Server(kerncap_bin, str(work))
    try:
        # Raw lines that are not JSON-RPC: the server answers with an error or ignores them.
        for raw in [b"not json\n", b"{\n", b"[]\n", b"null\n", b"{\"jsonrpc\":\"2.0\"}\n",
                    b"[" * 100000 + b"]" * 100000 + b"\n", b"{\"a\":" * 5000 + b"1" + b"}" * 5000 + b"\n",
                    b"\"" + b"x" * (4 << 20) + b"\"\n", b"\xff\xfe\x00\n", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}\n"]:
            s.send_raw(raw)
        s.initialize()  # still answering
        values = hostile_values(rng, tmp_path)
        for i in range(ROUNDS):
            tool = rng.choice(TOOLS + ["no_such_tool"])
            args = {}
            for key in rng.sample(["dir", "cubin", "baseline", "name", "names", "capture", "fuzz", "iterations",
                                   "source_repos", "require", "verify", "unknown"], rng.randint(0, 4)):
                args[key] = rng.choice(values)
            if rng.random() < 0.5 and tool != "locate":
                args["dir"] = rng.choice(values[:12])  # a path pointing outside, most often
            text = dumps_or_none({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
                                  "params": {"name": tool, "arguments": args}})
            if text is None:
                continue
            s.send_raw(text.encode() + b"\n")
            r = s.wait_for(1000 + i, 60)
            if "error" in r:
                assert r["error"].get("message"), r  # a JSON-RPC error says something
                continue
            result = r["result"]
            # A tool error carries the CLI's message; nothing here is a valid capture call but
            # `info`/`lint` of OUT itself, and serve_stop (a status).
            if result.get("isError"):
                msg = " ".join(c.get("text", "") for c in result.get("content", []))
                assert msg.strip(), r
                assert "Traceback" not in msg, msg
                assert "exit 70" not in msg and "internal error" not in msg, msg
        assert "result" in s.request("tools/list", {}), "the server stopped answering"
    finally:
        s.close()
    assert snapshot(str(tmp_path / "outside")) == guarded, "a call changed files outside what it named"
    assert not (work / "PWNED").exists() and not (tmp_path / "PWNED").exists()
    after_out = snapshot(str(out))
    assert {k: v for k, v in after_out.items() if "kerncap.toml" not in k and "baselines" not in k} == \
        {k: v for k, v in guarded_out.items()}, "a call changed the capture"


def test_an_argument_that_looks_like_an_option_is_not_one(kerncap_bin, tmp_path):
    # dir="--help" reached the CLI as an option (help printed, then an internal error): a path
    # keeps its meaning as ./--help, a name that starts with '-' is refused.
    s = Server(kerncap_bin, str(tmp_path))
    try:
        s.initialize()
        r = s.request("tools/call", {"name": "info", "arguments": {"dir": "--help"}})["result"]
        msg = " ".join(c.get("text", "") for c in r.get("content", []))
        assert r.get("isError") and "exit 2" in msg and "./--help" in msg, msg
        r = s.request("tools/call", {"name": "diff", "arguments": {"dir": str(tmp_path), "baseline": "--force"}})["result"]
        msg = " ".join(c.get("text", "") for c in r.get("content", []))
        assert r.get("isError") and "starts with '-'" in msg, msg
    finally:
        s.close()
