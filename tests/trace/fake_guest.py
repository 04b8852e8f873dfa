"""A fake OS end of the trace stream, for testing tools/mscope without QEMU.

Why: mscope's record and control paths must be shown to handle the framing of
kernel/uapi/trace.h (and to refuse a broken stream) on the host alone.  A
FakeGuest listens on a unix socket like QEMU's console-port chardev and runs
a script against the one connection mscope makes: the script reads control
lines and raw bytes and writes frames.
"""
import os
import socket
import struct
import tempfile
import threading

FRAME_MAGIC = 0x5254534D
FRAME_METADATA, FRAME_PACKET, FRAME_END, FRAME_TEXT = 1, 2, 3, 4


def frame(kind, payload, stream=0, magic=FRAME_MAGIC):
    return struct.pack("<IHHII", magic, kind, stream, len(payload), 0) + payload


def text(answer):
    return frame(FRAME_TEXT, answer.encode())


def end(recorded, delivered, dropped):
    return frame(FRAME_END, struct.pack("<QQQ", recorded, delivered, dropped))


class Connection:
    """The guest's side of one connection: lines and bytes in, frames out."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.lines = []  # every control line read, in order

    def read_line(self):
        while b"\n" not in self.buffer:
            data = self.sock.recv(4096)
            if not data:
                raise EOFError("mscope closed the channel")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    def read_bytes(self, n):
        while len(self.buffer) < n:
            data = self.sock.recv(4096)
            if not data:
                raise EOFError("mscope closed the channel")
            self.buffer += data
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def send(self, data):
        self.sock.sendall(data)


def hang_up(sock):
    """Closes the sending side, then reads until mscope closes too: a close
    with unread bytes would reset the connection and lose what was sent."""
    try:
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(4096):
            pass
    except OSError:
        pass


class FakeGuest:
    """Serves script(connection) to the first client of a unix socket, in a
    thread; error holds what the script raised."""

    def __init__(self, script, timeout=30):
        self.tmp = tempfile.TemporaryDirectory(prefix="fake-guest-")
        self.path = os.path.join(self.tmp.name, "console.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.server.settimeout(timeout)
        self.script, self.timeout = script, timeout
        self.connection, self.error = None, None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            sock, _ = self.server.accept()
            sock.settimeout(self.timeout)
            with sock:
                self.connection = Connection(sock)
                try:
                    self.script(self.connection)
                finally:
                    hang_up(sock)
        except Exception as e:  # reported by the test that reads .error
            self.error = f"{type(e).__name__}: {e}"

    def finish(self):
        """Waits for the script; returns the lines it read."""
        self.thread.join(self.timeout)
        self.server.close()
        self.tmp.cleanup()
        return self.connection.lines if self.connection else []
