#!/usr/bin/env python3
"""tests/wds_http_server.py: a small HTTP server for the webdataset tests, loopback only.

Serves files of --root at /MODE/NAME with Range support ("bytes=N-" and "bytes=N-M"), where
MODE says how the server misbehaves:
  ok         plain 200/206 answers
  drop       the first request for NAME sends half of the body and closes the connection
  stall      the first request for NAME sends half of the body, then sends nothing (the client
             must time out and resume with a Range request)
  deadstall  the first request sends half of the body, later ones nothing; then each stalls
             (the client must give up after its retries)
  norange    ignores Range (always 200 with the whole file); the first request drops at half
  close      200/206 without Content-Length: the body ends when the connection closes (HTTP/1.0)
  e503, e500, e429  every request answers that status with a short text body
Writes its port to --port-file once listening; exits by itself after --lifetime seconds so a
crashed test never leaves it behind. Logs each request's mode, name and Range to --log.
"""
import argparse
import http.server
import os
import threading
import time

counts = {}
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        # "?tag" after the name is no part of the file: it makes a fresh (mode, name) for the
        # first-request misbehaviours, so one server serves several test cases.
        path_only, _, tag = self.path.partition("?")
        parts = path_only.lstrip("/").split("/", 1)
        if len(parts) != 2:
            self.send_error(404)
            return
        mode, name = parts
        path = os.path.join(self.server.root, name)
        if not os.path.isfile(path) or mode not in ("ok", "drop", "stall", "deadstall", "norange", "close",
                                                     "e503", "e500", "e429"):
            self.send_error(404)
            return
        if mode.startswith("e"):
            body = b"the server is unwell\n"
            self.send_response(int(mode[1:]))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        with lock:
            n = counts.get((mode, name, tag), 0)
            counts[(mode, name, tag)] = n + 1
        data = open(path, "rb").read()
        size = len(data)
        start, end = 0, size - 1
        rng = self.headers.get("Range")
        if self.server.log:
            with lock, open(self.server.log, "a") as f:
                f.write("%s %s %s\n" % (mode, name, rng or "-"))
        if rng and mode != "norange" and rng.startswith("bytes="):
            first, _, last = rng[6:].partition("-")
            start = int(first)
            end = int(last) if last else size - 1
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        else:
            self.send_response(200)
        body = data[start:end + 1]
        if mode == "close":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        misbehave = (mode in ("drop", "stall", "norange") and n == 0) or mode == "deadstall"
        if not misbehave:
            self.wfile.write(body)
            return
        self.wfile.write(body[: len(body) // 2] if n == 0 else b"")
        self.wfile.flush()
        if mode in ("stall", "deadstall"):
            time.sleep(self.server.stall_s)
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", default="")
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--stall", type=float, default=60)
    a = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.root, server.log, server.stall_s = a.root, a.log, a.stall
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
