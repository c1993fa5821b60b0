"""A Slack slash command (`/denpex`): diagnose pasted log lines, or show a recorded diagnosis.

Consumes Slack's form-encoded command request, verified as Slack documents it: the signature
`v0=HMAC-SHA256(signing secret, "v0:{X-Slack-Request-Timestamp}:{body}")` in
`X-Slack-Signature`, a timestamp within five minutes, and (beyond what Slack asks) each
signature accepted once, in the same nonce ledger the API's own signatures use. The timestamp
and the declared length are checked before the body is read, and the body is read only up to a
small limit. Produces a Block Kit message, visible only to the user who asked.

Diagnoses are made and recorded for the tenant `denpex serve --slack-tenant` names, with that
tenant's plan.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from denpex.api.jobs import new_id
from denpex.api.service import allow, bounded_body, state_of
from denpex.errors import DenpexError
from denpex.render import render_slack

router = APIRouter(tags=["slack"])

SLACK_WINDOW_S = 300.0
SLACK_MAX_BODY = 64 * 1024
_TIMESTAMP = re.compile(r"\d{1,12}")
_SIGNATURE = re.compile(r"v0=([0-9a-f]{64})")
_ID = re.compile(r"(?:show\s+)?([0-9a-f]{32})")
USAGE = (
    "*Usage:* `/denpex <log lines>` diagnoses the pasted lines; `/denpex show <id>` shows a "
    "recorded diagnosis; larger logs go to the API (`POST /v1/diagnoses`)."
)


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack sends for this timestamp and body."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def _ephemeral(message: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"response_type": "ephemeral", **message})


def _text(text: str) -> JSONResponse:
    return _ephemeral(
        {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}
    )


async def _verified_form(request: Request, secret: str) -> dict[str, str]:
    state = state_of(request)
    timestamp = request.headers.get("x-slack-request-timestamp", "")
    if not _TIMESTAMP.fullmatch(timestamp):
        raise HTTPException(401, "X-Slack-Request-Timestamp must be integer Unix seconds")
    now = time.time()
    if abs(now - int(timestamp)) > SLACK_WINDOW_S:
        raise HTTPException(401, "the Slack request is older than five minutes")
    body = await bounded_body(
        request, SLACK_MAX_BODY, f"a slash command is at most {SLACK_MAX_BODY} bytes"
    )
    given = request.headers.get("x-slack-signature", "")
    expected = slack_signature(secret, timestamp, body)
    matched = _SIGNATURE.fullmatch(given)
    if matched is None or not hmac.compare_digest(expected.encode(), given.encode()):
        raise HTTPException(401, "the request is not signed with the Slack signing secret")
    try:
        fresh = state.verifier.nonces.first_use("slack", matched.group(1), now, SLACK_WINDOW_S)
    except DenpexError as error:
        raise HTTPException(503, str(error)) from None
    if not fresh:
        raise HTTPException(401, "this Slack request was already answered: a replay")
    try:
        form = parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        raise HTTPException(400, "the slash command is not UTF-8 form data") from None
    return {key: values[0] for key, values in form.items() if values}


@router.post("/v1/slack/commands", summary="Slack slash command (verified with Slack's secret)")
async def slash_command(request: Request) -> JSONResponse:
    state = state_of(request)
    settings = state.settings
    if not settings.slack_signing_secret or not settings.slack_tenant:
        raise HTTPException(404, "the Slack command is not configured on this server")
    form = await _verified_form(request, settings.slack_signing_secret)
    if form.get("ssl_check") == "1":
        return JSONResponse({})
    tenant = settings.tenants[settings.slack_tenant]
    allow(tenant, "diagnose")
    text = form.get("text", "").strip()
    if not text or text == "help":
        return _text(USAGE)
    diagnoser = state.diagnoser
    if shown := _ID.fullmatch(text):
        diagnosis = diagnoser.diagnosis(tenant.id, shown.group(1))
        if diagnosis is None:
            return _text(f"No diagnosis `{shown.group(1)}` is recorded for this workspace.")
        return _ephemeral(json.loads(render_slack(diagnosis)))
    diagnosis_id = new_id()
    try:
        diagnosis = await run_in_threadpool(
            diagnoser.diagnose, tenant.id, text.encode("utf-8") + b"\n", diagnosis_id
        )
    except DenpexError as error:
        return _text(f"denpex could not diagnose that: {error}")
    message = json.loads(render_slack(diagnosis))
    message["blocks"].append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"`/denpex show {diagnosis_id}`"}],
        }
    )
    return _ephemeral(message)
