"""`readdod server check` against the fake server playing the servers people run.

The check runs as a person runs it (a subprocess with a config file) and needs
no daemon. The real llama-cpp-python server's check is in
tests/test_real_model_server.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.daemon_proc import write_config
from tests.fake_openai import LLAMA_CPP_PYTHON_REFUSAL, FakeOpenAI, ai_config


def check(root: Path, base_url: str, *extra: str, **ai: Any) -> subprocess.CompletedProcess[str]:
    cfg = write_config(root, {"ai": ai_config(base_url, timeout_s=30.0, **ai)})
    return subprocess.run(
        [sys.executable, "-m", "readdod", "server", "check", "--config", str(cfg), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_check_finds_the_format_probes_the_context_and_keeps_what_it_found(
    tmp_path: Path,
) -> None:
    llama_like: dict[str, Any] = {
        "accepts": ("json_object_schema", "json_object", "prompt"),
        "format_status": 500,
        "format_message": LLAMA_CPP_PYTHON_REFUSAL,
        "context_tokens": 3_000,
    }
    with FakeOpenAI(**llama_like) as fake:
        done = check(tmp_path, fake.base_url, "--json", context_tokens=8_192, concurrency=3)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [(f["format"], f["taken"]) for f in found["formats"]] == [
        ("json_schema", False),
        ("json_object_schema", True),
    ]
    assert "json_object" in found["formats"][0]["said"]
    assert found["context_tokens"] == 3_000 and found["context_from"].startswith("probed")
    assert found["speed"]["finished"] and found["tokens_per_s"] > 0
    assert found["two_streams_hold"] is True
    assert found["settings"] == {
        "structured_output": "json_object_schema",
        "context_tokens": 3_000,
        "concurrency": 3,
    }
    # Kept where the daemon keeps what it learns, so a daemon started later begins with it.
    learned = json.loads((tmp_path / "data" / "model-servers.json").read_text())
    assert learned == {
        f"{fake.base_url} fake-small": {
            "format": "json_object_schema",
            "context_tokens": 3_000,
            "concurrency": 3,
        }
    }


def test_a_server_that_cuts_one_of_two_streams_gets_concurrency_one(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        # The second of the two streams at once is cut short, as a proxy or a server
        # that drops a request it cannot hold would.
        fake.fault("Name ten colours", "cut")
        done = check(tmp_path, fake.base_url)
    assert done.returncode == 0, done.stderr
    assert "two streams one was cut short" in done.stdout
    assert "tokens/s written" in done.stdout
    assert "  concurrency = 1" in done.stdout
    assert "interrupt_requests" in done.stdout


def test_an_unreachable_server_says_so(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        url = fake.base_url
    done = check(tmp_path, url)
    assert done.returncode == 4
    assert "unreachable" in done.stdout
