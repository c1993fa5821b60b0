"""The OpenAPI description and Swagger UI, served from this process: no CDN, works offline.

Consumes the app's OpenAPI document and the Swagger UI 5 files the `fastapi-offline` package
ships (Swagger UI 4 cannot read OpenAPI 3.1); produces `/docs` and the assets it loads from
`/assets/swagger/`. Swagger UI's online validator is turned off: the page asks nothing of
anyone but this server.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

SWAGGER_ASSETS = "/assets/swagger"


def add_docs(app: FastAPI) -> None:
    """`/docs` (Swagger UI) and its assets, from the installed package."""
    from importlib import resources

    assets = resources.files("fastapi_offline").joinpath("static")
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_ASSETS}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},
        )

    app.include_router(router)
    app.mount(SWAGGER_ASSETS, StaticFiles(directory=str(assets)), name="swagger-assets")
