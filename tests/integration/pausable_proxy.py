"""A TCP proxy on loopback that a test can pause: while paused, no byte crosses it in either direction (bytes
already read are held, not dropped), so whatever sits behind it sees a silent network, not a closed one."""

from __future__ import annotations

import contextlib
import socket
import threading

from harness import free_port

HOST = "127.0.0.1"


class PausableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._open = threading.Event()
        self._open.set()
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server((HOST, self.port))
        threading.Thread(target=self._accept, daemon=True, name=f"proxy-{self.port}").start()

    def pause(self) -> None:
        self._open.clear()

    def resume(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self._open.set()
        for s in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection((HOST, self.target_port))
            except OSError:
                client.close()  # the target is down (a restart): the client's connection just closes
                continue
            self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                self._open.wait()
                if self._closed:
                    break
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
