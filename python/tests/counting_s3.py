"""moto's S3 server behind a WSGI middleware that records every request, for the tests that
count what a distributed read fetches (test_remote.py's counted tests).

    python counting_s3.py LOG    # prints the port, then serves until killed

The application is moto's own (``DomainDispatcherApplication(create_backend_app)``, what
``python -m moto.server`` serves), on werkzeug's threaded server with moto's request handler, on
a free loopback port; the middleware only observes. Each request is one JSON line appended to
LOG before its response is sent: method, path, query, Range header, status and the
response body's bytes.

It runs in its own process, not in the test's: the extension holds the GIL while it resolves a
URL's format (ReadSpec::new reads the object's first bytes), so a server thread in the caller's
process could not answer that request.
"""
import json
import sys
import threading


def counting(app, log_path):
    """``app`` with each request's method, path, query, Range, status and body bytes appended
    to ``log_path`` (one JSON line) before its response is sent."""
    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8")

    def observed(environ, start_response):
        entry = {
            "method": environ["REQUEST_METHOD"],
            "path": environ.get("PATH_INFO", ""),
            "query": environ.get("QUERY_STRING", ""),
            "range": environ.get("HTTP_RANGE"),
            "status": None,
            "bytes": 0,
        }

        def start(status, headers, exc_info=None):
            entry["status"] = int(status.split()[0])
            return start_response(status, headers, exc_info)

        # moto builds each response in memory; taking it whole means the line is in the log
        # before the client has the response's first byte, so a test that has its answer
        # finds the request logged.
        body = app(environ, start)
        try:
            chunks = list(body)
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        entry["bytes"] = sum(len(chunk) for chunk in chunks)
        with lock:
            log.write(json.dumps(entry) + "\n")
            log.flush()
        return chunks

    return observed


def main():
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    class QuietHandler(MotoRequestHandler):
        def log_request(self, *args, **kwargs):
            pass

    app = counting(DomainDispatcherApplication(create_backend_app), sys.argv[1])
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
