"""A bare aiohttp server: the yardstick ``bench.retry_throughput`` measures the proxy against.

It answers every ``POST /v1/chat/completions`` with fixed bytes (the completion the proxy
delivered), after reading the request body, with nothing else in between: no parsing, no
store, no desk. Run as its own process, like the proxy:
``python -m bench.bare_server --port P --body FILE``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web


def bare_app(body: bytes) -> web.Application:
    """Return an app whose completion route answers ``body`` as JSON at once."""

    async def completion(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, content_type="application/json")

    async def ready(request: web.Request) -> web.Response:
        return web.json_response({"status": "ready"})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completion)
    app.router.add_get("/readyz", ready)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the bare app on 127.0.0.1 until killed."""
    parser = argparse.ArgumentParser(prog="python -m bench.bare_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body", type=Path, required=True, help="file holding the answer bytes")
    args = parser.parse_args(argv)
    web.run_app(
        bare_app(args.body.read_bytes()),
        host="127.0.0.1",
        port=args.port,
        print=None,
        access_log=None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
