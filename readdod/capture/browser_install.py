"""`readdod browser install|uninstall`: register the native-messaging host with a browser.

A browser finds a host by its manifest, a JSON file named for the host in a
per-user folder that each browser fixes. The manifest names the extensions
allowed to start the host and the program to run: a small wrapper script
that runs `readdod browser-host` with this Python and this daemon's socket,
since a browser starts hosts with neither a shell's PATH nor a virtualenv.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from readdod.errors import ReaddodError

#: The host's name: the manifest's file name, and what an extension connects to.
HOST_NAME: Final = "org.readdod.host"
#: The extension in ``browser/``, its ID fixed by the ``key`` in its manifest.json.
EXTENSION_ID: Final = "abnmfloikjgahngjojoegpnkejnfamle"
#: The same extension in Firefox (``browser_specific_settings.gecko.id``).
GECKO_ID: Final = "capture@readdod"


#: What each family accepts as an extension's ID: Chrome's 32 letters a-p; a Gecko
#: ID, an email-like name or a {GUID}.
ID_FORMS: Final = {
    "chromium": re.compile(r"[a-p]{32}"),
    "firefox": re.compile(r"[A-Za-z0-9._-]*@[A-Za-z0-9._-]+|\{[0-9A-Fa-f-]{36}\}"),
}


@dataclass(frozen=True)
class Browser:
    name: str
    #: ``chromium`` for the Chrome family's manifest, ``firefox`` for Firefox's.
    family: str
    #: The per-user folder, below XDG_CONFIG_HOME (``config``) or HOME (``home``).
    base: str
    folder: str


BROWSERS: Final = {
    b.name: b
    for b in (
        Browser("chromium", "chromium", "config", "chromium/NativeMessagingHosts"),
        Browser("chrome", "chromium", "config", "google-chrome/NativeMessagingHosts"),
        Browser("firefox", "firefox", "home", ".mozilla/native-messaging-hosts"),
    )
}


@dataclass(frozen=True)
class Installed:
    browser: str
    manifest: Path
    wrapper: Path


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def manifest_dir(browser: Browser, environ: Mapping[str, str]) -> Path:
    """Where ``browser`` looks for a user's host manifests (Linux)."""
    if browser.base == "config":
        config = environ.get("XDG_CONFIG_HOME") or str(_home(environ) / ".config")
        return Path(config) / browser.folder
    return _home(environ) / browser.folder


def wrapper_path(browser: Browser, environ: Mapping[str, str]) -> Path:
    data = environ.get("XDG_DATA_HOME") or str(_home(environ) / ".local" / "share")
    return Path(data) / "readdod" / "browser" / f"{browser.name}-host"


def host_manifest(browser: Browser, wrapper: Path, extension_id: str) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "name": HOST_NAME,
        "description": "readdod: capture pages from the browser",
        "path": str(wrapper),
        "type": "stdio",
    }
    if browser.family == "firefox":
        manifest["allowed_extensions"] = [extension_id]
    else:
        manifest["allowed_origins"] = [f"chrome-extension://{extension_id}/"]
    return manifest


def wrapper_script(python: str, socket: Path, config: str | None) -> str:
    """The program a browser runs: this Python, this socket; the browser's own
    arguments (the caller's origin) are passed on and ignored."""
    # -P: the browser's working directory never decides which readdod is imported.
    argv = [python, "-P", "-m", "readdod", "browser-host", "--socket", str(socket)]
    if config:
        argv += ["--config", config]
    return (
        "#!/bin/sh\n"
        "# readdod's native-messaging host, written by `readdod browser install`.\n"
        f'exec {shlex.join(argv)} "$@"\n'
    )


def _write(path: Path, text: str, mode: int) -> None:
    """Write ``text`` whole or not at all: a browser never reads half a manifest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(mode)
    tmp.replace(path)


def _browser(name: str) -> Browser:
    try:
        return BROWSERS[name]
    except KeyError:
        raise ReaddodError(
            f"unknown browser {name!r}; readdod knows {', '.join(BROWSERS)}"
        ) from None


def install(
    name: str,
    *,
    socket: Path,
    config: str | None = None,
    extension_id: str | None = None,
    directory: Path | None = None,
    python: str = sys.executable,
    environ: Mapping[str, str] = os.environ,
) -> Installed:
    """Write the wrapper and the host manifest for browser ``name``.

    ``directory`` replaces the browser's per-user folder (a browser run with its
    own ``--user-data-dir`` reads ``<dir>/NativeMessagingHosts``).
    """
    browser = _browser(name)
    ext = extension_id or (GECKO_ID if browser.family == "firefox" else EXTENSION_ID)
    if not ID_FORMS[browser.family].fullmatch(ext):
        form = "32 letters a-p" if browser.family == "chromium" else "name@domain or {GUID}"
        raise ReaddodError(f"{ext!r} is not a {browser.name} extension ID ({form})")
    wrapper = wrapper_path(browser, environ)
    manifest = (directory or manifest_dir(browser, environ)) / f"{HOST_NAME}.json"
    try:
        _write(wrapper, wrapper_script(python, socket.absolute(), config), 0o755)
        body = msgspec.json.format(msgspec.json.encode(host_manifest(browser, wrapper, ext)))
        _write(manifest, body.decode() + "\n", 0o644)
    except OSError as exc:
        raise ReaddodError(f"cannot install the browser host: {exc}") from exc
    return Installed(browser.name, manifest, wrapper)


def uninstall(
    name: str, *, directory: Path | None = None, environ: Mapping[str, str] = os.environ
) -> list[Path]:
    """Remove what :func:`install` wrote for ``name``; the files removed."""
    browser = _browser(name)
    removed = []
    manifest = (directory or manifest_dir(browser, environ)) / f"{HOST_NAME}.json"
    for path in (manifest, wrapper_path(browser, environ)):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ReaddodError(f"cannot remove {path}: {exc}") from exc
        removed.append(path)
    return removed
