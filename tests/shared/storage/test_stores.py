"""Both object stores behave alike: create-once puts, byte-ordered paginated listing, missing keys."""

from __future__ import annotations

import os
import uuid

import pytest

from groundswell.shared.settings import Settings
from groundswell.shared.storage import StorageError, open_store
from tests.conftest import S3_CREDENTIALS, s3_client


@pytest.fixture(params=["local", "moto", "seaweedfs"])
def store(request, tmp_path):
    """The same contract on a folder, moto's S3 server and SeaweedFS (a real object store)."""
    if request.param == "local":
        return open_store(str(tmp_path / "store"))
    if request.param == "moto":
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
    else:
        endpoint = request.getfixturevalue("seaweedfs_endpoint")
        bucket = f"gs-{uuid.uuid4().hex[:12]}"
        s3_client(endpoint).create_bucket(Bucket=bucket)
    settings = Settings(s3_endpoint_url=endpoint, **S3_CREDENTIALS)
    return open_store(f"s3://{bucket}/some/prefix", settings)


def test_put_get_and_missing_key(store):
    assert store.put("a/b.txt", b"hello")
    assert store.get("a/b.txt") == b"hello"
    assert store.exists("a/b.txt")
    assert store.head("a/b.txt").size == 5
    with pytest.raises(KeyError):
        store.get("a/missing.txt")
    assert store.head("a/missing.txt") is None
    store.delete("a/b.txt")
    assert not store.exists("a/b.txt")


def test_create_once_put_refuses_the_second_writer(store):
    assert store.put("receipts/x.json", b"first", create_only=True) is True
    assert store.put("receipts/x.json", b"second", create_only=True) is False
    assert store.get("receipts/x.json") == b"first"
    store.put("receipts/x.json", b"replaced")
    assert store.get("receipts/x.json") == b"replaced"


def test_listing_is_paged_in_utf8_byte_order_and_resumes(store):
    names = ["a-b", "a.b", "a", "z", "é", "B", "a0"]
    for name in names:
        store.put(f"docs/{name}.txt", name.encode())
    store.put("other/x.txt", b"x")
    pages = list(store.list_pages("docs/", page_size=3))
    assert [len(p) for p in pages] == [3, 3, 1]
    keys = [info.key for page in pages for info in page]
    assert keys == sorted((f"docs/{n}.txt" for n in names), key=lambda k: k.encode())
    after = [i.key for p in store.list_pages("docs/", start_after=keys[3]) for i in p]
    assert after == keys[4:]


def test_local_store_refuses_keys_that_escape_its_root(tmp_path):
    store = open_store(str(tmp_path))
    with pytest.raises(StorageError):
        store.put("../outside.txt", b"x")


def test_unknown_url_scheme_is_refused():
    with pytest.raises(StorageError, match="unsupported storage URL"):
        open_store("gs://bucket/prefix")


def test_delete_many_removes_every_key_and_ignores_missing_ones(store):
    keys = [f"runs/r/segments/{i:04d}.json" for i in range(1203)]
    for key in keys[:5]:
        store.put(key, b"x")
    assert store.delete_many(iter(keys)) == len(keys)
    assert list(store.list_pages("runs/")) == []


def test_a_local_snapshot_lists_like_the_walk_and_resumes_by_binary_search(tmp_path, monkeypatch):
    from groundswell.shared.storage import drop_snapshot, local

    monkeypatch.setattr(local, "SNAPSHOT_SORT_CHUNK", 7)  # an external sort of many chunks
    store = open_store(str(tmp_path / "store"))
    names = [f"doc-{i:03d}" for i in range(60)] + ["a-b", "a.b", "a", "é", "B", "a0", "sub/x"]
    for name in names:
        store.put(f"documents/{name}.txt", name.encode())
    store.put("documents.txt", b"not under the prefix")
    walked = [i.key for p in store.list_pages("documents/", page_size=9) for i in p]
    assert walked == sorted((f"documents/{n}.txt" for n in names), key=lambda k: k.encode())
    snap = [i.key for p in store.list_pages("documents/", page_size=9, snapshot="run-1") for i in p]
    assert snap == walked
    # A file added after the snapshot is not in this pass (it was listed once).
    store.put("documents/zz-late.txt", b"late")
    for i, after in enumerate(walked):
        pages = store.list_pages("documents/", start_after=after, snapshot="run-1")
        assert [info.key for page in pages for info in page] == walked[i + 1 :]
    before_all = store.list_pages("documents/", start_after="documents/", snapshot="run-1")
    assert [i.key for p in before_all for i in p] == walked
    sizes = {i.key: i.size for p in store.list_pages("documents/", snapshot="run-1") for i in p}
    assert sizes["documents/a-b.txt"] == 3
    drop_snapshot(store, "documents/", "run-1")
    fresh = [i.key for p in store.list_pages("documents/", snapshot="run-1") for i in p]
    assert "documents/zz-late.txt" in fresh and len(fresh) == len(walked) + 1


@pytest.mark.parametrize("snapshot", [None, "pass-1"])
def test_a_local_listing_refuses_prefixes_that_escape_its_root(tmp_path, snapshot):
    """As keys are: ``..`` segments, an absolute prefix or a NUL never list outside the root
    (``GET /v1/policies/..`` once listed the whole output store)."""
    from groundswell.shared.storage import StorageRefused

    store = open_store(str(tmp_path / "store"))
    store.put("policies/default/1.json", b"{}")
    (tmp_path / "secret.txt").write_text("outside")
    for prefix in ("policies/../", "../", "policies/../../", "/etc/", "/", "a\0b/", ".."):
        with pytest.raises(StorageRefused, match="invalid listing prefix"):
            list(store.list_pages(prefix, snapshot=snapshot))
    listed = [i.key for p in store.list_pages("policies/", snapshot=snapshot) for i in p]
    assert listed == ["policies/default/1.json"]


@pytest.mark.parametrize("snapshot", [None, "pass-1"])
def test_a_symlinked_folder_of_a_corpus_is_not_listed_into_errors(tmp_path, snapshot):
    """``claims/`` as a link to another folder: that folder's names never become keys (and
    then errors naming them); the listing is refused, naming the folder."""
    from groundswell.shared.storage import StorageRefused

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private-payroll.jsonl").write_text("{}\n")
    corpus = tmp_path / "corpus"
    (corpus / "documents").mkdir(parents=True)
    (corpus / "documents" / "d.txt").write_text("text")
    (corpus / "claims").symlink_to(elsewhere)
    (corpus / "nested").mkdir()
    (corpus / "nested" / "deeper").symlink_to(elsewhere)
    store = open_store(str(corpus))
    for prefix in ("claims/", "claims/private", "nested/deeper/"):
        with pytest.raises(StorageRefused, match="a symbolic link to a folder") as refused:
            list(store.list_pages(prefix, snapshot=snapshot))
        assert "payroll" not in str(refused.value)
    # Walking past a link (a listing of the whole corpus) lists the link, never its names.
    everything = [i.key for p in store.list_pages("", snapshot=snapshot) for i in p]
    assert not [k for k in everything if "payroll" in k]
    assert "documents/d.txt" in everything


def test_listing_snapshots_live_in_a_private_folder_of_this_user(tmp_path, monkeypatch):
    """Not a shared, predictable /tmp/groundswell-listings: a folder of this user, 0700; one
    that another user could write into (or owns) is refused, not used."""
    import stat

    from groundswell.shared.storage import StorageRefused, local

    monkeypatch.setattr(local.tempfile, "gettempdir", lambda: str(tmp_path))
    store = open_store(str(tmp_path / "store"))
    store.put("documents/a.txt", b"a")
    assert [i.key for p in store.list_pages("documents/", snapshot="s") for i in p]
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("groundswell-listings")]
    assert folder.name == f"groundswell-listings-{os.getuid()}"
    st = folder.stat()
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    assert [p.suffix for p in folder.iterdir()] == [".lst"]
    folder.chmod(0o777)  # as a folder another user made for us would be
    with pytest.raises(StorageRefused, match="0700"):
        list(store.list_pages("documents/", snapshot="t"))
    folder.chmod(0o700)
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()
    folder.symlink_to(tmp_path / "store")  # a link planted where the folder would be
    with pytest.raises(StorageRefused, match="0700"):
        list(store.list_pages("documents/", snapshot="u"))


def test_a_range_read_gives_those_bytes_and_nothing_past_the_end(store):
    store.put("producer/a.jsonl", b"0123456789")
    assert store.get_range("producer/a.jsonl", 2, 5) == b"234"
    assert store.get_range("producer/a.jsonl", 8, 50) == b"89"
    assert store.get_range("producer/a.jsonl", 10, 20) == b""
    assert store.get_range("producer/a.jsonl", 4, 4) == b""
    with pytest.raises(KeyError):
        store.get_range("producer/none.jsonl", 0, 4)


# Keys a lean listing must give back byte for byte: XML's own characters, URL-encoding's,
# spaces, non-ASCII (two and four UTF-8 bytes) and a carriage return (which XML would turn
# into a newline unless the keys come URL-encoded, as the stores ask for them).
ODD_NAMES = ["a&b", "<x>", "q\"uo'te", "sp ace", "plus+", "pct%41", "é", "😀", "cr\rlf", "semi;"]


def test_a_listing_pass_reads_odd_keys_as_botocore_parses_them(store, monkeypatch):
    """Planning's pass (a ``snapshot``: pages parsed lean, read ahead) lists what a plain
    botocore paginator lists: the same keys, sizes and ETags, page for page."""
    from groundswell.shared.storage import s3

    lean: list[int] = []

    def counted(body: bytes, _lean=s3.lean_listing) -> dict:
        out = _lean(body)
        lean.append(len(out.get("Contents", ())))
        return out

    monkeypatch.setattr(s3, "lean_listing", counted)
    for name in ODD_NAMES:
        store.put(f"odd/{name}.txt", name.encode())
    passed = [
        [(i.key, i.size, i.etag) for i in page]
        for page in store.list_pages("odd/", page_size=3, snapshot="pass")
    ]
    assert [len(p) for p in passed] == [3, 3, 3, 1]
    keys = [k for page in passed for k, _, _ in page]
    assert keys == sorted((f"odd/{n}.txt" for n in ODD_NAMES), key=lambda k: k.encode())
    assert [list(p) for p in store.list_pages("odd/", page_size=3)] == [
        [i for i in page] for page in store.list_pages("odd/", page_size=3, snapshot="again")
    ]
    if not hasattr(store, "client"):
        return
    assert lean == [3, 3, 3, 1] * 3  # every page of the passes was parsed lean
    cut = len(store.prefix)
    paginator = store.client.get_paginator("list_objects_v2")
    plain = [
        [(o["Key"][cut:], o["Size"], o["ETag"].strip('"')) for o in page.get("Contents", ())]
        for page in paginator.paginate(
            Bucket=store.bucket, Prefix=store.prefix + "odd/", PaginationConfig={"PageSize": 3}
        )
    ]
    assert passed == plain


def test_a_lean_listing_leaves_what_it_does_not_know_to_botocore():
    from groundswell.shared.storage.s3 import _LEAN, _lean_listing, lean_listing

    ns = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    page = (
        f"<?xml version='1.0' encoding='UTF-8'?><ListBucketResult {ns}><Name>b</Name>"
        "<KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>t1</NextContinuationToken><EncodingType>url</EncodingType>"
        "<Contents><Key>p/a%26b.txt</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
        '<ETag>"e1"</ETag><Size>7</Size><StorageClass>STANDARD</StorageClass></Contents>'
        "<Contents><Key>p/c.txt</Key><ETag>&quot;e2&quot;</ETag><Size>0</Size></Contents>"
        "</ListBucketResult>"
    ).encode()
    assert lean_listing(page) == {
        "KeyCount": 2,
        "IsTruncated": True,
        "NextContinuationToken": "t1",
        "EncodingType": "url",
        "Contents": [
            {"Key": "p/a%26b.txt", "ETag": '"e1"', "Size": 7},
            {"Key": "p/c.txt", "ETag": '"e2"', "Size": 0},
        ],
    }

    def hook(body: bytes, status: int = 200, lean: bool = True) -> tuple[dict, dict]:
        response, custom = {"status_code": status, "body": body}, {}
        token = _LEAN.set(lean)
        try:
            _lean_listing(response_dict=response, customized_response_dict=custom)
        finally:
            _LEAN.reset(token)
        return response, custom

    response, custom = hook(page)
    assert response["body"] == b"" and custom["Contents"][1]["Key"] == "p/c.txt"
    # Not a pass's listing, an error, a delimited listing, a page without sizes, not XML:
    # botocore parses the body as it came.
    delimited = page.replace(
        b"</ListBucketResult>",
        b"<CommonPrefixes><Prefix>p/d/</Prefix></CommonPrefixes></ListBucketResult>",
    )
    for body, status, lean in (
        (page, 200, False),
        (page, 500, True),
        (delimited, 200, True),
        (page.replace(b"<Size>0</Size>", b""), 200, True),
        (b"<ListBucketResult><Contents>", 200, True),
        (b"<Error><Code>SlowDown</Code></Error>", 200, True),
    ):
        assert hook(body, status, lean) == ({"status_code": status, "body": body}, {})
