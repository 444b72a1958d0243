"""``/docs``: Swagger UI served by the API itself, under a policy of its own.

FastAPI's page loads Swagger UI from a CDN and starts it with an inline script; the API's
HTML policy allows neither (and an API without internet access could not fetch it). Here the
assets come from the ``swagger-ui-bundle-v2`` package (Swagger UI 5: OpenAPI 3.1) and the start is a file of this site, so
``/docs`` runs scripts from this site only and fetches nothing from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse, HTMLResponse, Response

router = APIRouter(include_in_schema=False)

START = Path(__file__).with_name("docs.js")
# Swagger UI's own styles are partly inline (style attributes): styles may be; scripts not.
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>groundswell API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/static/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/docs.js"></script>
</body>
</html>
"""


def _assets() -> Path:
    from swagger_ui_bundle import swagger_ui_path

    return Path(swagger_ui_path)


@router.get("/docs")
def docs() -> HTMLResponse:
    return HTMLResponse(PAGE, headers={"content-security-policy": DOCS_CSP})


@router.get("/docs/static/{name}")
def asset(name: str) -> Response:
    # Assets change only with the installed package: a browser may keep them an hour.
    cache = {"cache-control": "public, max-age=3600"}
    if name == "docs.js":
        return FileResponse(START, media_type="text/javascript", headers=cache)
    if name not in ASSETS:  # a fixed list: no name reaches the file system unchecked
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {name[:100]!r}")
    return FileResponse(_assets() / name, media_type=ASSETS[name], headers=cache)
