"""Streams (docs/streams.md): follow a corpus (POST /v1/streams), see a stream and its latest
windows (GET /v1/streams/{stream_id}), and take S3 event notifications pushed by a store
(POST /v1/events/s3, signed with GROUNDSWELL_STREAM_WEBHOOK_SECRET instead of an API key)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, HTTPException, Request, Response, status

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.guards import limits_for
from groundswell.api.routes.runs import checked_corpus
from groundswell.shared.hooks.signing import SIGNATURE_HEADER, verify
from groundswell.shared.runs.service import RunService
from groundswell.shared.settings import ApiKey
from groundswell.shared.streams.models import StreamRecord, StreamSpec
from groundswell.shared.streams.service import StreamService, TooManyStreams

router = APIRouter(tags=["streams"])
WINDOWS_SHOWN = 10


def stream_out(streams: StreamService, record: StreamRecord) -> dict[str, Any]:
    """The stream, where it is (documents waiting, ready, in the running window; lag) and
    its latest windows, newest first."""
    state = streams.status(record.id)
    last = state["window"] if state["window"] is not None else -1
    windows = (streams.store.window(record.id, n) for n in range(last, last - WINDOWS_SHOWN, -1))
    return {
        **record.model_dump(),
        "status": state,
        "windows": [w.model_dump() for w in windows if w is not None],
    }


@router.post(
    "/v1/streams",
    status_code=status.HTTP_201_CREATED,
    operation_id="follow_corpus",
    responses={409: {"description": "GROUNDSWELL_MAX_STREAMS reached"}},
)
def follow(body: StreamSpec, response: Response, service: ServiceDep, key: Principal) -> dict:
    """Follow an S3 corpus under a policy version: the standing stream of the pair (201 when
    made now, 200 when it was there). Its notifications come from SQS (`groundswell follow`)
    or POST /v1/events/s3; each window of them is a run."""
    # A stream starts runs: making one counts against the key's run submissions.
    limits = limits_for(service.settings)
    limits.hit(limits.runs, "runs", key.digest)
    checked, _ = checked_corpus(service.settings, body.corpus, key)
    streams = StreamService(service)
    try:
        record, created = streams.follow(body.model_copy(update={"corpus": checked}), key.name)
    except TooManyStreams as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    if not created:
        response.status_code = status.HTTP_200_OK
    response.headers["Location"] = f"/v1/streams/{record.id}"
    return stream_out(streams, record)


def _seen(service: RunService, stream_id: str, key: ApiKey) -> tuple[StreamService, StreamRecord]:
    streams = StreamService(service)
    record = streams.get(stream_id)
    if record is None or not key.sees(record.corpus):  # another team's is not there
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no stream {stream_id}")
    return streams, record


@router.get("/v1/streams/{stream_id}", operation_id="get_stream")
def get_stream(stream_id: str, service: ServiceDep, key: Principal) -> dict:
    streams, record = _seen(service, stream_id, key)
    return stream_out(streams, record)


@router.post(
    "/v1/events/s3",
    status_code=status.HTTP_202_ACCEPTED,
    operation_id="post_s3_events",
    responses={
        401: {"description": "the signature is missing, forged or stale"},
        403: {"description": "GROUNDSWELL_STREAM_WEBHOOK_SECRET is not set"},
    },
)
async def s3_events(
    request: Request,
    service: ServiceDep,
    signature: Annotated[str | None, Header(alias=SIGNATURE_HEADER)] = None,
) -> dict:
    """S3 event notifications (the AWS event JSON: ``Records[]``) pushed by a store, for the
    streams that follow their objects' corpora. Signed, not keyed: ``X-Groundswell-Signature:
    t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` keyed by the deployment's
    webhook secret; a stale timestamp or a wrong signature is refused. A record that cannot be
    read fails alone (listed in the answer); the others are applied."""
    settings = service.settings
    secret = settings.stream_webhook_secret
    if secret is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "GROUNDSWELL_STREAM_WEBHOOK_SECRET is not set: this API takes no S3 events",
        )
    body = await request.body()
    tolerance = settings.stream_webhook_tolerance_seconds
    if not signature or not verify(secret.get_secret_value(), signature, body, tolerance):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            f"{SIGNATURE_HEADER} is missing, does not sign this body, or is older than "
            f"{tolerance:.0f} s",
        )

    def take() -> dict[str, Any]:
        streams = StreamService(service)
        got = streams.ingest(body, "webhook")
        if got.events == 0 and got.errors and got.errors[0].line is None:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(got.errors[0]))
        return got.as_dict()

    return await anyio.to_thread.run_sync(take)
