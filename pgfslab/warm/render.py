"""Vega-Lite -> SVG for the warm interpreter's children, by a process whose vl-convert is already running.

vl-convert starts a JavaScript engine at its first conversion: 0.75 s here, in every notebook that draws a
chart, and more than its charts take. Its engine runs threads, so a fork of a process that started it
hangs at the next conversion; the warm server therefore *spawns* this renderer beside itself, and tells
each child where it listens (PGFSLAB_RENDER_SOCKET). `pgfslab.analysis.charts` asks it first and renders
in its own process when the renderer is not there or refuses a spec, so a chart is the same SVG either way
(the same vl-convert, spec and Vega-Lite version), and outside the pipeline nothing changes.

The renderer ends when the server does (its standard input, the server's pipe, closes).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import sys
import threading
from pathlib import Path

ENV = "PGFSLAB_RENDER_SOCKET"
_HEADER = struct.Struct("!Q")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("renderer connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv(sock: socket.socket) -> bytes:
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return _recv_exact(sock, n)


def remote_svg(spec: dict, vl_version: str, path: str | None = None, timeout: float = 120.0) -> str | None:
    """The spec's SVG from the renderer named by PGFSLAB_RENDER_SOCKET (or `path`); None when there is none,
    it is gone, or it could not render this spec (the caller renders it itself, and sees the error)."""
    path = path or os.environ.get(ENV)
    if not path:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            _send(s, json.dumps({"spec": spec, "vl_version": vl_version}).encode())
            answer = _recv(s)
    except (OSError, ConnectionError):
        return None
    status, body = answer[:1], answer[1:]
    return body.decode() if status == b"+" else None


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        import vl_convert as vlc

        try:
            request = json.loads(_recv(self.request))
            svg = vlc.vegalite_to_svg(request["spec"], vl_version=request["vl_version"])
            _send(self.request, b"+" + svg.encode())
        except ConnectionError:
            return
        except Exception as exc:  # the client renders this one itself, and reports its error
            _send(self.request, b"-" + str(exc).encode())


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def serve(path: Path) -> int:
    """Start vl-convert's engine, listen at `path`, end when standard input closes (the server is gone)."""
    import vl_convert as vlc

    vlc.vegalite_to_svg({"mark": "point", "data": {"values": [{"x": 1}]}, "encoding": {"x": {"field": "x"}}})
    path.unlink(missing_ok=True)
    server = _Server(str(path), _Handler)
    os.chmod(path, 0o600)

    def watch_parent() -> None:
        sys.stdin.buffer.read()  # EOF: the warm server closed its end (exited, or was killed)
        server.shutdown()

    threading.Thread(target=watch_parent, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1])))
