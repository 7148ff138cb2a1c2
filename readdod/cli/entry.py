"""`readdod`'s entry point: parse the command line, run its verb, and end in an exit code.

Every error a verb raises is said here once, in one line for people (and as
``{"error": ...}`` under ``--json``), and mapped to the exit code docs/errors.md lists.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO, cast

import msgspec

from readdod.cli.exits import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
)
from readdod.cli.local_verbs import LOCAL_VERBS
from readdod.cli.parser import build_parser
from readdod.cli.render import json_text
from readdod.cli.socket_verbs import CLIENT_VERBS, socket_path
from readdod.control.client import Client, RpcError
from readdod.errors import (
    ConfigError,
    DaemonUnavailable,
    InstanceLocked,
    ReaddodError,
    RequestError,
    StoreAuthFailed,
    UnsafeSocket,
)
from readdod.text.controls import visible


def _config_hint(args: argparse.Namespace, exc: ConfigError) -> str:
    """Where the bad config came from, and what to do about it."""
    if exc.message.startswith("environment"):
        return "fix or unset that variable (`readdod config` shows what applies once it loads)"
    if getattr(args, "config", None):
        return "fix the file, or give another with --config"
    if os.environ.get("READDOD_CONFIG"):
        return "fix the file, or point $READDOD_CONFIG at another one (or unset it)"
    return "fix the file, or give another with --config"


class _Visible:
    """A text stream that shows control characters visibly (:func:`visible`): whatever a
    verb prints (a title, an intent, a todo from anywhere) cannot drive the terminal."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        return self._inner.write(visible(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str] | None = None) -> int:
    """Run one command line (``sys.argv`` when ``argv`` is None); answer its exit code."""
    if not isinstance(sys.stdout, _Visible):
        sys.stdout = cast(TextIO, _Visible(sys.stdout))
    if not isinstance(sys.stderr, _Visible):
        sys.stderr = cast(TextIO, _Visible(sys.stderr))
    args = build_parser().parse_args(argv)
    try:
        local = LOCAL_VERBS.get(args.verb)
        if local is not None:
            return local(args)
        path = socket_path(args)
        with Client(path) as client:
            return CLIENT_VERBS[args.verb](args, client)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`readdod stats | head`): stop quietly, as `watch` does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except StoreAuthFailed as exc:
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_CONFIG
    except ConfigError as exc:
        print(f"readdod: config error: {exc}", file=sys.stderr)
        print(f"readdod: {_config_hint(args, exc)}", file=sys.stderr)
        return EXIT_CONFIG
    except InstanceLocked as exc:
        print(f"readdod: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except UnsafeSocket as exc:
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except DaemonUnavailable as exc:
        print(f"readdod: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except RpcError as exc:
        if getattr(args, "json", False):
            rpc_error = {"code": exc.rpc_code, "message": exc.message, "data": exc.data}
            print(json_text({"error": rpc_error}))
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except RequestError as exc:
        # Refused here before asking the daemon (a file too big, binary): said as it would.
        if getattr(args, "json", False):
            error = {"code": exc.http_status, "message": exc.message, "data": exc.data()}
            print(json_text({"error": error}))
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except ReaddodError as exc:
        print(f"readdod: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except msgspec.DecodeError as exc:
        print(f"readdod: the daemon sent something unreadable: {exc}", file=sys.stderr)
        return EXIT_ERROR
