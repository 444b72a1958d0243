"""A writer of text files (an export) as the body of a streamed response.

The writer runs in a thread of its own and writes into a bounded queue of chunks that the
response reads, so memory holds a few chunks whatever the size of what is written, and a
client that goes away stops the writer at its next write.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable, Iterator
from queue import Empty, Queue
from threading import Event, Thread
from typing import TextIO

log = logging.getLogger(__name__)

CHUNK = 64 * 1024  # characters a chunk holds before it is sent
DEPTH = 8  # chunks written ahead of the client at most


class _Stopped(Exception):
    """The response was closed: the writer stops."""


class _Chunks(io.TextIOBase):
    def __init__(self, queue: Queue, stop: Event) -> None:
        self.queue, self.stop = queue, stop
        self.parts: list[str] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.stop.is_set():
            raise _Stopped
        self.parts.append(text)
        self.size += len(text)
        if self.size >= CHUNK:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self.parts:
            self.queue.put("".join(self.parts).encode("utf-8"))
            self.parts, self.size = [], 0


def streamed(write: Callable[[TextIO], object]) -> Iterator[bytes]:
    """The bytes ``write(out)`` writes to ``out``, as they are written."""
    queue: Queue = Queue(maxsize=DEPTH)
    stop = Event()

    def produce() -> None:
        out = _Chunks(queue, stop)
        try:
            write(out)  # type: ignore[arg-type]
            out.flush()
            queue.put(None)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the response, which ends unfinished
            queue.put(exc)

    thread = Thread(target=produce, daemon=True, name="stream-writer")
    thread.start()
    try:
        while (item := queue.get()) is not None:
            if isinstance(item, BaseException):
                log.error("a streamed response failed: %s", item)
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a writer waiting for room, so it sees the stop
            with contextlib.suppress(Empty):
                queue.get(timeout=0.05)
