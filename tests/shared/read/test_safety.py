"""Reading is bounded and never reaches out: no external entity or DTD is fetched (no file, no
network), entity expansion is bounded, and size and time have limits from settings."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from groundswell.shared.read import ReadError, ReadTimeout, read_bytes, read_path
from groundswell.shared.read.guard import check_deadline, time_limit
from groundswell.shared.settings import get_settings

BOMB = (
    b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
"""
    + b"".join(
        b' <!ENTITY lol%d "%s">\n'
        % (i, (b"&lol%s;" % (str(i - 1).encode() if i > 1 else b"")) * 10)
        for i in range(1, 10)
    )
    + b"]>\n<lolz>&lol9;</lolz>\n"
)


@pytest.fixture
def read_settings(monkeypatch: pytest.MonkeyPatch):
    """Set GROUNDSWELL_READ_* for one test."""

    def apply(**values: object) -> None:
        for key, value in values.items():
            monkeypatch.setenv(f"GROUNDSWELL_{key.upper()}", str(value))
        get_settings.cache_clear()

    yield apply
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to open a connection is recorded and fails."""
    attempts: list[object] = []

    def refuse(_sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network access in a test of reading")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_an_entity_bomb_fails_fast_with_a_clear_error() -> None:
    started = time.monotonic()
    with pytest.raises(ReadError, match=r"bomb\.xml: unsafe XML: the entity &lol\d; expands to"):
        read_bytes(BOMB, "bomb.xml")
    assert time.monotonic() - started < 1


def test_many_references_to_a_large_entity_are_bounded() -> None:
    big = b"x" * 50_000
    data = b'<!DOCTYPE r [<!ENTITY a "' + big + b'">]><r>' + b"&a;" * 2000 + b"</r>"
    with pytest.raises(ReadError, match="expand to more than"):
        read_bytes(data, "quadratic.xml")


def test_a_few_internal_entities_still_expand() -> None:
    data = b'<!DOCTYPE r [<!ENTITY co "Acme">]><r>' + b"&co; " * 100 + b"</r>"
    assert read_bytes(data, "ok.xml").text == " ".join(["Acme"] * 100)


def test_an_external_entity_is_never_read(tmp_path: Path, no_network: list[object]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    for target in (secret.as_uri(), "file:///etc/passwd", "http://127.0.0.1:9/x"):
        data = (
            f'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "{target}">]>'
            "<r>before &xxe; after</r>"
        ).encode()
        with pytest.raises(ReadError) as caught:
            read_bytes(data, "xxe.xml")
        message = str(caught.value)
        assert "the external entity &xxe;" in message and "is not read" in message
        assert "TOP-SECRET" not in message and "root:" not in message
    assert no_network == []


def test_external_dtds_and_parameter_entities_are_not_fetched(
    tmp_path: Path, no_network: list[object]
) -> None:
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY leak "LEAKED-FROM-DTD">')
    for doctype in (
        f'<!DOCTYPE r SYSTEM "{dtd.as_uri()}">',
        f'<!DOCTYPE r [<!ENTITY % p SYSTEM "{dtd.as_uri()}"> %p;]>',
        '<!DOCTYPE r PUBLIC "-//X//DTD X//EN" "http://127.0.0.1:9/x.dtd">',
    ):
        data = f'<?xml version="1.0"?>{doctype}<r>a &leak; b</r>'.encode()
        with pytest.raises(ReadError, match="undefined entity &leak;") as caught:
            read_bytes(data, "dtd.xml")
        assert "LEAKED" not in str(caught.value)
        no_leak = f'<?xml version="1.0"?>{doctype}<r>plain</r>'.encode()
        assert read_bytes(no_leak, "dtd.xml").text == "plain"
    assert no_network == []


def test_html_never_fetches_anything(no_network: list[object]) -> None:
    data = (
        b'<!DOCTYPE html SYSTEM "http://127.0.0.1:9/x.dtd"><link rel=stylesheet '
        b'href="http://127.0.0.1:9/s.css"><img src="file:///etc/passwd"><p>&xxe; text</p>'
    )
    assert read_bytes(data, "a.html").text == "&xxe; text"
    assert no_network == []


def test_deep_nesting_reads_without_recursion() -> None:
    depth = 50_000
    data = b"<a>" * depth + b"deep" + b"</a>" * depth
    assert read_bytes(data, "deep.xml").text == "deep"
    assert read_bytes(b"<div>" * depth + b"deep", "deep.html").text == "deep"


def test_too_large_a_source_is_refused_before_it_is_read(tmp_path: Path, read_settings) -> None:
    read_settings(read_max_bytes=100)
    with pytest.raises(ReadError, match=r"big\.txt: 101 bytes, more than the 100 .*read_max_bytes"):
        read_bytes(b"x" * 101, "big.txt")
    path = tmp_path / "big.html"
    path.write_bytes(b"<p>" + b"x" * 200)
    with pytest.raises(ReadError, match="read_max_bytes"):
        read_path(path)
    assert read_bytes(b"x" * 100, "fits.txt").text == "x" * 100


def _many_tags(count: int) -> bytes:
    return b"<r>" + b"<p>word</p>" * count + b"</r>"


def test_the_time_limit_holds_in_any_thread(read_settings) -> None:
    """Away from the main thread there is no alarm: the readers look at the deadline."""
    read_settings(read_seconds=0.001)
    data = _many_tags(200_000)
    outcome: list[BaseException] = []

    def work() -> None:
        for name in ("slow.xml", "slow.html"):
            try:
                read_bytes(data, name)
            except ReadError as exc:
                outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert [type(e) for e in outcome] == [ReadTimeout, ReadTimeout]
    assert "slow.xml: reading took longer than 0.001 s (setting read_seconds)" in str(outcome[0])


def test_the_alarm_interrupts_a_reader_in_one_long_step(read_settings) -> None:
    """In the main thread a SIGALRM timer stops a reader that never looks at the deadline
    (here one long decode of a text file). pytest-timeout's own timer is paused meanwhile."""
    read_settings(read_seconds=0.001)
    paused = signal.setitimer(signal.ITIMER_REAL, 0)
    handler = signal.getsignal(signal.SIGALRM)
    try:
        with pytest.raises(ReadTimeout, match=r"longer than 0\.001 s"):
            read_bytes("é".encode() * 20_000_000, "long.txt")
        assert signal.getsignal(signal.SIGALRM) is handler
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, *paused)


def test_a_deadline_applies_only_inside_its_reading() -> None:
    with time_limit(0.001, "one"):
        time.sleep(0.01)
        with pytest.raises(ReadTimeout, match="one: reading took longer"):
            check_deadline()
    check_deadline()  # no reading in progress: nothing to enforce
    with time_limit(None, "unlimited"):
        check_deadline()


def test_pdfs_get_the_page_and_time_limits_and_errors_get_the_name(
    monkeypatch: pytest.MonkeyPatch, read_settings
) -> None:
    """The dispatcher hands read_max_pages and read_seconds to the PDF reader (a stand-in
    here), and names the file in the reader's errors."""
    import sys
    import types

    from groundswell.shared.read import Reading

    calls: list[dict[str, object]] = []

    def read_pdf(data: bytes, **kwargs: object) -> Reading:
        calls.append(kwargs)
        if kwargs["pages"] == [9]:
            raise ReadError("the PDF is encrypted and needs a password; decrypt it first")
        return Reading("text", "pdf", pages=5)

    monkeypatch.setitem(
        sys.modules, "groundswell.shared.read.pdf", types.SimpleNamespace(read_pdf=read_pdf)
    )
    read_settings(read_max_pages=4, read_seconds=7)
    assert read_bytes(b"%PDF-1.7\n", "a.PDF", pages="1-2,4").pages == 5
    assert calls == [{"pages": [1, 2, 4], "max_pages": 4, "time_limit": 7.0}]
    with pytest.raises(ReadError, match=r"^b\.pdf: the PDF is encrypted"):
        read_bytes(b"%PDF-1.7\n", "b.pdf", pages="9")
