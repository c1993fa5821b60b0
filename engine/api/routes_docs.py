"""The OpenAPI description and Swagger UI, served from this process: no CDN, works offline.

Consumes the app's OpenAPI document and the Swagger UI files of the `swagger-ui-bundle`
package; produces `/docs` and the assets it loads from `/assets/swagger/`.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

SWAGGER_ASSETS = "/assets/swagger"


def add_docs(app: FastAPI) -> None:
    """`/docs` (Swagger UI) and its assets, from the installed package."""
    from swagger_ui_bundle import swagger_ui_path

    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_ASSETS}/favicon-32x32.png",
        )

    app.include_router(router)
    app.mount(SWAGGER_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-assets")
