"""A DSN's secrets (every libpq one, in both forms of the string) never reach a
terminal, a log line, an error or ``pg_dump``'s command line; a backup works with
the password in the DSN. Against the real CLI, the real daemon, the real cluster
with a role that must give its password, and the real ``pg_dump`` (behind a shim
that records the command line every local user could read in /proc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from readdod.runtime import dsn
from readdod.runtime.logging import scrub_text
from readdod.store.postgresql.backup import find_pg_dump
from tests import pg
from tests.daemon_proc import DaemonProc, run_cli

#: (DSN, the secrets a person meant, which none of what readdod shows may contain).
DSNS: list[tuple[str, list[str]]] = [
    ("host=db user=app password=hunter2 dbname=r", ["hunter2"]),
    ("host=db sslpassword=keypass77 sslmode=require", ["keypass77"]),
    ("host=db password = 'two words\\' and \\\\ quote' user=app", ["two words", "quote"]),
    ("host=db password=back\\ slashed user=app", ["back\\ slashed", "back slashed"]),
    ("host=db oauth_client_secret=oauthS3cret scram_client_key=Q2xpZW50S2V5", ["oauthS3cret"]),
    ("host=db scram_server_key=U2VydmVyS2V5 user=x", ["U2VydmVyS2V5"]),
    ("postgresql://app:hunter2@db:5432/r", ["hunter2"]),
    # a raw @ in the password: libpq reads password "p", host "ss@host"; all of it is hidden
    ("postgres://app:p@ss@host/db", ["p@ss", "ss@"]),
    ("postgresql://app:p%40ss%20w@db/r?sslmode=require", ["p%40ss", "p@ss w"]),
    ("postgresql://app@db/r?sslpassword=keypass77&sslmode=require", ["keypass77"]),
    ("postgresql:///r?host=/run/pg&password=hunter2&user=app", ["hunter2"]),
    ("postgresql://db/r?pass%77ord=encodedKey", ["encodedKey"]),
    ("postgresql://app:pw%2Fslash@h1:5432,h2:5433/r?target_session_attrs=any", ["pw%2Fslash"]),
    ("POSTGRES://app:UpperScheme@db/r", ["UpperScheme"]),
    ("host=db password='never closed", ["never closed"]),
]


@pytest.mark.parametrize(("conninfo", "secrets"), DSNS)
def test_every_libpq_secret_is_redacted_in_both_forms(conninfo: str, secrets: list[str]) -> None:
    shown = dsn.redact(conninfo)
    logged = scrub_text(f"store.dsn is {conninfo} (as configured)")
    for secret in secrets:
        assert secret not in shown and secret not in logged, (shown, logged)
    try:
        parsed = conninfo_to_dict(conninfo)
    except Exception:
        return  # libpq cannot read it either; its secrets are hidden all the same
    for key, value in parsed.items():
        if key in dsn.SECRET_PARAMS:
            # libpq's reading of the secret is inside what readdod hides
            assert any(str(value) in hidden for hidden in dsn.secret_values(conninfo))
    if "@" not in secrets[0]:
        # What is not secret is kept as written, so the string still says where it goes.
        kept = conninfo_to_dict(shown)
        assert kept == {k: "[redacted]" if k in dsn.SECRET_PARAMS else v for k, v in parsed.items()}


def test_the_secret_parameters_are_those_libpq_hides() -> None:
    """libpq marks a password-like parameter with display character ``*``; a new one
    in a newer libpq fails here until readdod hides it too."""
    hidden = {o.keyword.decode() for o in pq.Conninfo.get_defaults() if o.dispchar == b"*"}
    scram = {o.keyword.decode() for o in pq.Conninfo.get_defaults() if b"scram" in o.keyword}
    assert hidden | scram <= dsn.SECRET_PARAMS


def _config(tmp_path: Path, conninfo: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "c.toml"
    path.write_text(f'[store]\nbackend = "postgresql"\ndsn = {json.dumps(conninfo)}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    return subprocess.run(
        [sys.executable, "-m", "readdod", "config", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize(
    "conninfo",
    [
        "host=db user=app password=hunter2 sslpassword=keypass77",
        "postgres://app:p@ss@db/r?sslpassword=keypass77",
    ],
)
def test_readdod_config_shows_no_secret_of_the_dsn(tmp_path: Path, conninfo: str) -> None:
    out = _config(tmp_path, conninfo)
    assert out.returncode == 0, out.stderr
    for secret in ("hunter2", "keypass77", "p@ss", "ss@"):
        assert secret not in out.stdout
    assert "dsn = " in out.stdout and "[redacted]" in out.stdout


def _shim(tmp_path: Path) -> tuple[Path, Path]:
    """A ``pg_dump`` first on PATH that records its own /proc/PID/cmdline and how its
    secrets came, then runs the real one (or fails, when ``record/fail`` exists)."""
    real = find_pg_dump()
    assert real is not None
    bindir, record = tmp_path / "bin", tmp_path / "record"
    bindir.mkdir()
    record.mkdir()
    shim = bindir / "pg_dump"
    shim.write_text(
        "#!/bin/sh\n"
        f'tr "\\000" "\\n" < /proc/$$/cmdline > "{record}/cmdline"\n'
        f'printf "%s" "$PGPASSWORD" > "{record}/pgpassword"\n'
        f'if [ -n "$PGSERVICEFILE" ]; then echo "$PGSERVICEFILE" > "{record}/servicefile";'
        f' stat -c %a "$PGSERVICEFILE" > "{record}/servicefile.mode";'
        f' stat -c %a "$(dirname "$PGSERVICEFILE")" > "{record}/servicedir.mode";'
        f' cp "$PGSERVICEFILE" "{record}/service.conf"; fi\n'
        f'if [ -e "{record}/fail" ]; then echo "pg_dump: error: the disk is full" >&2; exit 1; fi\n'
        f'exec "{real}" "$@"\n'
    )
    shim.chmod(0o755)
    return bindir, record


@pytest.mark.parametrize("form", ["keywords", "uri"])
def test_a_backup_with_the_password_in_the_dsn_works_and_no_secret_is_on_a_command_line(
    pg_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc], form: str
) -> None:
    database = pg_cluster.new_database().rsplit("dbname=", 1)[1]
    role = f"pw_{database}_{form[0]}"
    password = "p@ss-W0rd x"
    pg_cluster.password_role(role, password, database)
    sslpassword = "keyPass-77"
    if form == "keywords":
        conninfo = (
            f"host={pg_cluster.sockets} port={pg_cluster.port} user={role} dbname={database}"
            f" password='{password}' sslpassword={sslpassword}"
        )
    else:
        conninfo = (
            f"postgresql://{role}:{quote(password, safe='')}@/{database}"
            f"?host={quote(str(pg_cluster.sockets), safe='')}&port={pg_cluster.port}"
            f"&sslpassword={sslpassword}"
        )
    bindir, record = _shim(tmp_path)
    (tmp_path / "d").mkdir()
    d = DaemonProc(tmp_path / "d", store={"backend": "postgresql", "dsn": conninfo})
    daemons.append(d)
    d.start(env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    secrets = [password, quote(password, safe=""), sslpassword, "p@ss"]

    done = run_cli(d, "backup", str(tmp_path / "copy.dump"), "--json")
    assert done.returncode == 0, done.stderr
    copy = Path(json.loads(done.stdout)["path"])
    listed = subprocess.run(
        [str(Path(find_pg_dump() or "").with_name("pg_restore")), "--list", str(copy)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "TABLE DATA public items" in listed

    cmdline = (record / "cmdline").read_text()
    assert role in cmdline and "service=readdod-backup" in cmdline
    assert not [s for s in secrets if s in cmdline], cmdline
    assert (record / "pgpassword").read_text() == password  # through the environment
    assert sslpassword in (record / "service.conf").read_text()  # through a private file
    assert (record / "servicefile.mode").read_text().strip() == "600"
    assert (record / "servicedir.mode").read_text().strip() == "700"
    assert not Path((record / "servicefile").read_text().strip()).parent.exists()

    (record / "fail").touch()
    failed = run_cli(d, "backup", str(tmp_path / "copy.dump"))
    assert failed.returncode != 0 and "the disk is full" in failed.stderr
    assert "pg_dump --format=custom" in failed.stderr
    assert not [s for s in secrets if s in failed.stderr], failed.stderr

    assert d.stop() == 0
    opened = [e for e in d.logs if e["event"] == "store.opened"]
    assert opened and "[redacted]" in opened[0]["dsn"]
    every_line = json.dumps(d.logs)
    assert not [s for s in secrets if s in every_line]
    assert not [s for s in secrets if s in d.stderr.decode()]
