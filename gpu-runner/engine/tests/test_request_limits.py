"""What a misbehaving client must not do to the engine: requests whose client went away keep no rows queued or
sampling (a killed rollout used to leave thousands queued for minutes), and a multi-megabyte prompt is refused
from its length at once, without being tokenised (which used to run the engine out of memory)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

pytestmark = pytest.mark.conformance  # run against both backends (conftest.BACKEND)

MODEL = "SmolLM2-135M-Instruct"


def stats(served) -> dict:
    return served.client.get("/health").json()["stats"]


def raw_post(served, body: dict) -> socket.socket:
    """Send a chat request on a raw socket and return it unread: closing it is a client that went away."""
    data = json.dumps(body).encode()
    host, port = served.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def wait_for(cond, timeout: float) -> float:
    start = time.perf_counter()
    while not cond():
        assert time.perf_counter() - start < timeout, "condition not met in time"
        time.sleep(0.05)
    return time.perf_counter() - start


def test_requests_whose_client_went_away_leave_the_queue_and_the_batch(served):
    before = stats(served)
    story = {"model": MODEL, "max_tokens": 4000, "temperature": 1.0,
             "messages": [{"role": "user", "content": "Tell me a very long story about a dragon and a city."}]}
    # More rows than one batch holds (max_batch 32), plain and streamed, each allowed thousands of tokens.
    socks = [raw_post(served, {**story, "seed": i, "stream": i % 10 == 0}) for i in range(40)]
    try:
        # Sampling, with (nearly) all of them queued or in the batch: the server may still be reading the last.
        wait_for(lambda: (lambda s: s["running_rows"] > 0 and s["queued_rows"] + s["running_rows"] >= 36)(stats(served)),
                 120)
    finally:
        for sock in socks:
            sock.close()
    idle_after = wait_for(lambda: (lambda s: s["queued_rows"] == 0 and s["running_rows"] == 0)(stats(served)), 30)
    after = stats(served)
    # They were dropped, not sampled to the end: nearly every row counts as cancelled, and the engine stopped
    # producing tokens for them (4000 tokens × 40 rows would take many minutes here).
    assert after["cancelled_rows"] - before["cancelled_rows"] >= 30, (before, after)
    assert after["completion_tokens"] - before["completion_tokens"] < 40 * 400, (before, after)
    assert idle_after < 30
    # And the next request is served at once, not after a backlog.
    t0 = time.perf_counter()
    r = served.client.post("/v1/chat/completions", json={**story, "max_tokens": 2})
    assert r.status_code == 200 and time.perf_counter() - t0 < 20


def test_a_10_mb_prompt_is_refused_at_once_without_tokenising_it(served):
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "lorem ipsum " * 900_000}]}).encode()
    assert len(body) > 10_000_000
    tokenize_calls = []
    tok = served.store.tokenizer
    original = tok.encode
    tok.encode = lambda *a, **k: tokenize_calls.append(1) or original(*a, **k)  # a spy
    peak = [served.client.get("/health").json()["memory"]["rss_bytes"]]
    start_rss = peak[0]
    done = threading.Event()

    def sample_rss():  # the peak, not only the end: the old engine died during the request
        import psutil

        proc = psutil.Process()
        while not done.is_set():
            peak.append(proc.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample_rss)
    sampler.start()
    try:
        t0 = time.perf_counter()
        r = served.client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
        elapsed = time.perf_counter() - t0
    finally:
        done.set()
        sampler.join()
        tok.encode = original
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "messages" and "at least" in err["message"] and "context is 8192" in err["message"]
    assert tokenize_calls == []
    assert elapsed < 1.0, elapsed
    # Body, parsed request and rendered text are ~10 MB each; tokenising would have taken gigabytes.
    assert max(peak) - start_rss < 200 * 2**20, (max(peak) - start_rss) / 2**20


def test_a_body_over_the_limit_is_413_declared_or_not(served):
    big = b'{"model": "' + b"x" * (16 * 2**20) + b'"}'
    r = served.client.post("/v1/chat/completions", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "ROLLBOOK_MAX_REQUEST_BYTES" in r.json()["error"]["message"]

    def chunked():  # no Content-Length: refused once more than the limit has arrived
        for _ in range(20):
            yield b"x" * 2**20

    r = served.client.post("/v1/chat/completions", content=chunked(), headers={"content-type": "application/json"})
    assert r.status_code == 413
