"""A writer streamed as a response body: every byte in order, a bounded queue ahead of the
client, errors raised to the response, and a client that leaves stops the writer."""

from __future__ import annotations

import threading

import pytest

from groundswell.api import streaming
from groundswell.api.streaming import streamed


def test_what_is_written_arrives_in_order_in_chunks():
    def write(out):
        for i in range(50_000):
            out.write(f"{i},")

    chunks = list(streamed(write))
    assert b"".join(chunks).decode() == "".join(f"{i}," for i in range(50_000))
    assert len(chunks) > 1 and all(len(c) <= streaming.CHUNK + 10 for c in chunks)


def test_an_error_of_the_writer_ends_the_response():
    def write(out):
        out.write("x" * (streaming.CHUNK + 1))
        raise ValueError("the ledger went away")

    body = streamed(write)
    assert next(body).startswith(b"xxx")
    with pytest.raises(ValueError, match="went away"):
        next(body)


def test_a_client_that_leaves_stops_the_writer():
    wrote, stopped = [], threading.Event()

    def write(out):
        try:
            for _ in range(10_000):
                out.write("y" * streaming.CHUNK)
                wrote.append(1)
        finally:
            stopped.set()

    body = streamed(write)
    next(body)
    body.close()  # the client went away
    assert stopped.wait(5)
    # It stopped a few chunks ahead of the client, not at the end of what it had to write.
    assert len(wrote) <= streaming.DEPTH + 3
