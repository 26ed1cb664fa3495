"""The Python test app, built with both SDK generations (sdk4/, sdk5/, each with `-p ../handler`): the
`http-py` template's handler with one route per capability the e2e tests
(tests/tests/polyglot.rs) and `compare` ask for."""

from urllib.parse import urlparse

from spin_sdk import http, key_value, variables
from spin_sdk.http import Request, Response


def text(status: int, body: str) -> Response:
    return Response(status, {"content-type": "text/plain"}, bytes(body, "utf-8"))


class HttpHandler(http.Handler):
    async def handle_request(self, request: Request) -> Response:
        path = urlparse(request.uri).path
        if path in ("/", "/hello"):
            return text(200, "Hello, World!")
        if path == "/kv":
            # A counter in the `default` store: each request adds one.
            with await key_value.open_default() as store:
                stored = await store.get("count")
                count = int(stored or b"0") + 1
                await store.set("count", bytes(str(count), "utf-8"))
            return text(200, str(count))
        if path == "/variable":
            return text(200, await variables.get("greeting"))
        if path == "/echo" and request.method == "POST":
            content_type = request.headers.get("content-type", "application/octet-stream")
            return Response(200, {"content-type": content_type}, request.body)
        return text(404, f"no route for {path}")
