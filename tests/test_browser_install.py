"""`readdod browser install|uninstall`: the host manifest where each browser looks, a
wrapper that is a working host, and the extension's fixed identity."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from readdod.capture import browser_install as bi
from readdod.capture import native_messaging as nm
from tests.daemon_proc import DaemonProc

EXTENSION = Path(__file__).resolve().parent.parent / "browser"


def _env(home: Path, *, xdg: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("READDOD_", "XDG_"))}
    env["HOME"] = str(home)
    if xdg:
        env["XDG_CONFIG_HOME"] = str(home / "cfg")
        env["XDG_DATA_HOME"] = str(home / "data")
    return env


def _readdod(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "readdod", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("browser", "where"),
    [
        ("chromium", "cfg/chromium/NativeMessagingHosts"),
        ("chrome", "cfg/google-chrome/NativeMessagingHosts"),
        ("firefox", ".mozilla/native-messaging-hosts"),
    ],
)
def test_install_writes_the_manifest_where_the_browser_looks_and_uninstall_removes_it(
    tmp_path: Path, browser: str, where: str
) -> None:
    env = _env(tmp_path)
    sock = tmp_path / "run" / "readdod.sock"
    done = _readdod(env, "browser", "install", "--browser", browser, "--socket", str(sock))
    assert done.returncode == 0, done.stderr
    manifest_path = tmp_path / where / "org.readdod.host.json"
    wrapper = tmp_path / "data" / "readdod" / "browser" / f"{browser}-host"
    assert f"wrote {manifest_path}" in done.stdout
    manifest = json.loads(manifest_path.read_text())
    assert manifest["name"] == bi.HOST_NAME == manifest_path.stem
    assert manifest["type"] == "stdio"
    assert manifest["path"] == str(wrapper)
    if browser == "firefox":
        assert manifest["allowed_extensions"] == ["capture@readdod"]
        assert "allowed_origins" not in manifest
    else:
        assert manifest["allowed_origins"] == [f"chrome-extension://{bi.EXTENSION_ID}/"]
        assert "allowed_extensions" not in manifest
    assert wrapper.stat().st_mode & stat.S_IXUSR
    script = wrapper.read_text()
    assert script.startswith("#!/bin/sh\n")
    assert sys.executable in script and str(sock) in script

    # Installing again replaces the files with the same content.
    redo = _readdod(env, "browser", "install", "--browser", browser, "--socket", str(sock))
    assert redo.returncode == 0, redo.stderr
    assert json.loads(manifest_path.read_text()) == manifest

    gone = _readdod(env, "browser", "uninstall", "--browser", browser)
    assert gone.returncode == 0, gone.stderr
    assert not manifest_path.exists() and not wrapper.exists()
    assert f"removed {manifest_path}" in gone.stdout
    again = _readdod(env, "browser", "uninstall", "--browser", browser)
    assert again.returncode == 0
    assert "nothing of readdod's was installed" in again.stdout


def test_without_xdg_variables_the_folders_are_below_home(tmp_path: Path) -> None:
    env = _env(tmp_path, xdg=False)
    done = _readdod(env, "browser", "install", "--browser", "chrome", "--socket", "x.sock")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".config/google-chrome/NativeMessagingHosts/org.readdod.host.json").is_file()
    wrapper = tmp_path / ".local/share/readdod/browser/chrome-host"
    # A relative socket is made absolute: a browser starts the host in a folder of its own.
    assert str(Path.cwd() / "x.sock") in wrapper.read_text()


def test_a_profile_of_its_own_and_another_extension(tmp_path: Path) -> None:
    env = _env(tmp_path)
    folder = tmp_path / "profile" / "NativeMessagingHosts"
    other = "a" * 32
    done = _readdod(
        env, "browser", "install", "--browser", "chromium", "--dir", str(folder),
        "--extension-id", other, "--socket", "/s.sock",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((folder / "org.readdod.host.json").read_text())
    assert manifest["allowed_origins"] == [f"chrome-extension://{other}/"]
    gone = _readdod(env, "browser", "uninstall", "--browser", "chromium", "--dir", str(folder))
    assert gone.returncode == 0, gone.stderr
    assert not (folder / "org.readdod.host.json").exists()


@pytest.mark.parametrize(
    ("browser", "ext_id"),
    [("chromium", "not-an-id"), ("chrome", "q" * 32), ("firefox", "no at sign")],
)
def test_an_extension_id_the_browser_would_never_send_is_refused(
    tmp_path: Path, browser: str, ext_id: str
) -> None:
    env = _env(tmp_path)
    done = _readdod(
        env, "browser", "install", "--browser", browser, "--extension-id", ext_id, "--socket", "s"
    )
    assert done.returncode == 1
    assert f"{ext_id!r} is not a {browser} extension ID" in done.stderr
    assert not (tmp_path / "cfg").exists() and not (tmp_path / ".mozilla").exists()


def test_an_unknown_browser_is_a_usage_error(tmp_path: Path) -> None:
    done = _readdod(_env(tmp_path), "browser", "install", "--browser", "netscape")
    assert done.returncode == 64
    assert "invalid choice: 'netscape'" in done.stderr


def test_the_extension_has_the_ids_the_manifests_allow() -> None:
    manifest = json.loads((EXTENSION / "manifest.json").read_text())
    digest = hashlib.sha256(base64.b64decode(manifest["key"])).hexdigest()[:32]
    assert "".join(chr(ord("a") + int(c, 16)) for c in digest) == bi.EXTENSION_ID
    assert manifest["browser_specific_settings"]["gecko"]["id"] == bi.GECKO_ID
    assert manifest["manifest_version"] == 3
    assert "nativeMessaging" in manifest["permissions"]
    native = (EXTENSION / "native.js").read_text()
    assert f'const READDOD_HOST = "{bi.HOST_NAME}";' in native
    # Chrome's rule for a host's name: lowercase words joined by dots.
    assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)*", bi.HOST_NAME)


def test_the_wrapper_a_browser_runs_is_a_working_host(
    daemons: list[DaemonProc], tmp_path: Path
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start()
    env = _env(tmp_path / "home")
    done = _readdod(env, "browser", "install", "--browser", "firefox", "--socket", str(d.sock))
    assert done.returncode == 0, done.stderr
    wrapper = tmp_path / "home" / "data" / "readdod" / "browser" / "firefox-host"
    # Firefox passes the manifest's path and the extension's ID; the host ignores both.
    stdin = nm.encode({"method": "capture", "id": 1, "params": {"intent": "i", "text": "t " * 50}})
    stdin += nm.encode({"method": "list", "id": 2})
    ran = subprocess.run(
        [str(wrapper), "/path/to/org.readdod.host.json", bi.GECKO_ID],
        input=stdin,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},  # a browser's environment: no virtualenv, no READDOD_*
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    reader = nm.FrameReader(io.BytesIO(ran.stdout), nm.TO_BROWSER_MAX)
    first, second = reader.next_frame(), reader.next_frame()
    assert first is not None and second is not None and reader.next_frame() is None
    captured = json.loads(first)["result"]["item"]["id"]
    assert [i["id"] for i in json.loads(second)["result"]["items"]] == [captured]
