"""A stand-in for `dst serve`'s clock side, for the clock's unit tests: an HTTP server
(the standard library's `http.server`) whose answers carry the `x-umi-timing` the query
string asks for, after a REAL delay the query asks for too, so a test can make a
response arrive late in real time but early in simulated time (or the other way round).

    GET /?delay_s=0.2&head_us=1000&first_us=1000&last_us=5000&end_us=5000&ending=complete&body=hi

`ending=reset|stall` sends the body, then breaks the connection before its promised
length (what `dst serve` does at `--time-scale 0`); `no_response=reset|stall` is the 502
that stands for no response at all. Each request's `x-umi-clock-us` is kept in `seen`.
"""

import http.server
import threading
import time
import urllib.parse

# Bound at import, before any test puts `time.sleep` on the simulated clock.
_real_sleep = time.sleep


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args):
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        self.server.seen.append((query.get("name"), self.headers.get("x-umi-clock-us")))
        _real_sleep(float(query.get("delay_s", "0")))
        body = query.get("body", "").encode()
        head = int(query.get("head_us", "0"))
        first = int(query.get("first_us", head))
        last = int(query.get("last_us", first))
        end = int(query.get("end_us", last))
        ending = query.get("ending", "complete")
        no_response = query.get("no_response")
        self.send_response(502 if no_response else 200)
        self.send_header("x-umi-timing", f"head_us={head}, first_us={first}, last_us={last}, "
                                         f"end_us={end}, ending={ending}")
        if no_response:
            self.send_header("x-umi-no-response", no_response)
            body, ending = b"", "complete"
        cut = ending != "complete"
        self.send_header("content-length", str(len(body) + (10 if cut else 0)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if cut:
            self.close_connection = True


class TimedServer:
    """The server on an ephemeral port, in a thread; `url`, `seen`, `stop()`."""

    def __init__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.seen = []
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def seen(self):
        return self.httpd.seen

    def at(self, **query):
        return f"{self.url}/?{urllib.parse.urlencode(query)}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
