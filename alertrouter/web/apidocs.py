"""The API's documentation pages, /docs (Swagger UI) and /redoc, with every asset served by alertrouter itself.

FastAPI's own pages load their JavaScript, CSS, favicon and (ReDoc) Google Fonts from CDNs, which a cluster's
management network often cannot reach, and which learn who reads the docs. The assets come from the
`fastapi-offline` package (Swagger UI 5 and ReDoc 2 as released, no copy in this repo) and are served under
`STATIC_URL`. Swagger UI's online validator badge is turned off: it sends the schema's URL to swagger.io.
What a bundle still fetches from elsewhere by itself (ReDoc 2 always draws its maker's logo from their CDN) the
pages' Content-Security-Policy refuses before any request leaves the browser.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS_PACKAGE", "DOCS_URL", "REDOC_URL", "STATIC_URL", "install_api_docs"]

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/static/docs"
ASSETS_PACKAGE = ("fastapi_offline", "static")  # package, folder in it: swagger-ui-bundle.js, redoc.standalone.js...
_OAUTH2_REDIRECT_URL = f"{DOCS_URL}/oauth2-redirect"
# The bundles style elements inline and ReDoc searches in a worker made from a blob: URL; nothing else is
# needed from anywhere but alertrouter. Inline scripts are allowed by their hash only (`_with_policy`).
_POLICY = (
    "default-src 'none'; script-src 'self'{scripts}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'"
)
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def _with_policy(page: HTMLResponse) -> HTMLResponse:
    """`page` with a Content-Security-Policy that allows its own inline scripts, as they are, and nothing else
    from another origin."""
    digests = [
        base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        for script in _INLINE_SCRIPT.findall(bytes(page.body).decode())
    ]
    page.headers["Content-Security-Policy"] = _POLICY.format(scripts="".join(f" 'sha256-{d}'" for d in digests))
    page.headers["Referrer-Policy"] = "no-referrer"
    return page


def install_api_docs(app: FastAPI) -> None:
    """The pages and their assets on `app`, which must be built with `docs_url=None, redoc_url=None`.
    URLs carry the ASGI root path, as FastAPI's own pages do."""
    openapi_url = app.openapi_url or "/openapi.json"
    app.mount(STATIC_URL, StaticFiles(packages=[ASSETS_PACKAGE]), name="apidocs-static")

    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _with_policy(
            get_swagger_ui_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - Swagger UI",
                oauth2_redirect_url=f"{root}{_OAUTH2_REDIRECT_URL}",
                swagger_js_url=f"{root}{STATIC_URL}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{STATIC_URL}/swagger-ui.css",
                swagger_favicon_url=f"{root}{STATIC_URL}/favicon.png",
                swagger_ui_parameters={**(app.swagger_ui_parameters or {}), "validatorUrl": None},
            )
        )

    async def oauth2_redirect() -> HTMLResponse:
        return _with_policy(get_swagger_ui_oauth2_redirect_html())

    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _with_policy(
            get_redoc_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{root}{STATIC_URL}/redoc.standalone.js",
                redoc_favicon_url=f"{root}{STATIC_URL}/favicon.png",
                with_google_fonts=False,
            )
        )

    app.add_api_route(DOCS_URL, swagger_ui, methods=["GET"], include_in_schema=False)
    app.add_api_route(_OAUTH2_REDIRECT_URL, oauth2_redirect, methods=["GET"], include_in_schema=False)
    app.add_api_route(REDOC_URL, redoc, methods=["GET"], include_in_schema=False)
