"""The pure parts of the PostgreSQL store (search text) and its configuration."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from readdod.errors import ConfigError, ValidationFailed
from readdod.runtime.logging import scrub_text
from readdod.settings import config
from readdod.store.postgresql import search
from readdod.store.postgresql.backup import dump_command, shown_dsn
from tests import pg


def test_words_are_cut_as_the_sqlite_tokenizer_cuts_them() -> None:
    assert search.tokens("Straße-Café_déjà vu, example.org/giraffe-facts 42x") == [
        "straße",
        "cafe",
        "deja",
        "vu",
        "example",
        "org",
        "giraffe",
        "facts",
        "42x",
    ]


def test_a_query_is_a_prefix_phrase_per_word_and_nothing_of_it_is_syntax() -> None:
    assert search.query("Zebra o'kapi snake_case") == (
        "('zebra':*) & ('o':*) & ('kapi':*) & ('snake' <-> 'case':*)"
    )
    assert search.query("a&b | c:*") == "('a':*) & ('b':*) & ('c':*)"
    assert search.query("___") is None  # a word with no letter: nothing can match
    with pytest.raises(ValidationFailed):
        search.query("  ?! ")


def test_the_literals_are_what_postgresql_reads(pg_cluster: pg.Cluster) -> None:
    head = search.head_vector("Zebra crossings", "https://example.org/a", "learn")
    body = search.body_vector("the okapi")
    with psycopg.connect(pg_cluster.dsn()) as conn:
        row = conn.execute(
            "SELECT v @@ %s::tsquery, v @@ %s::tsquery, v @@ 'learn <-> the'::tsquery,"
            " v @@ %s::tsquery FROM (SELECT %s::tsvector || %s::tsvector AS v) AS s",
            (
                search.query("zeb okap"),
                search.query("learn the"),
                search.query("unicorn"),
                head,
                body,
            ),
        ).fetchone()
    # The head's last word and the body's first are both found, but never as one phrase.
    assert row == (True, True, False, False)


def test_a_phrase_does_not_match_across_two_columns(pg_cluster: pg.Cluster) -> None:
    head = search.head_vector("alpha", "beta", "gamma")
    with psycopg.connect(pg_cluster.dsn()) as conn:
        across = conn.execute(
            "SELECT %s::tsvector @@ 'alpha <-> beta'::tsquery,"
            " %s::tsvector @@ 'alpha & beta'::tsquery",
            (head, head),
        ).fetchone()
    assert across == (False, True)


def test_postgresql_needs_a_dsn_and_the_password_comes_from_env_or_credential(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"needs store\.dsn"):
        config.parse(b'[store]\nbackend = "postgresql"\n')
    cfg = config.parse(b'[store]\nbackend = "postgresql"\ndsn = "host=db dbname=r"\n')
    assert cfg.store.dsn == "host=db dbname=r" and cfg.store.password_env == "READDOD_DB_PASSWORD"
    (tmp_path / "READDOD_DB_PASSWORD").write_text("from-credential\n")
    creds = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert config.read_secret("READDOD_DB_PASSWORD", creds) == "from-credential"
    env = {**creds, "READDOD_DB_PASSWORD": "from-env"}
    assert config.read_secret("READDOD_DB_PASSWORD", env) == "from-env"
    assert config.read_secret("READDOD_DB_PASSWORD", {}) is None
    # The variable a config names as the password's holder is not a config override.
    assert config.apply_env(cfg, env)[1] == []


def test_a_dsn_password_never_reaches_a_log_line_or_a_message() -> None:
    dsn = "host=db dbname=r user=app password='s3cr et'"
    assert "s3cr" not in scrub_text(f"connecting to {dsn}")
    assert "s3cr" not in shown_dsn(dsn) and "dbname=r" in shown_dsn(dsn)
    assert "s3cr" not in " ".join(dump_command(dsn, "/tmp/x.dump"))
    assert "hunter2" not in shown_dsn("postgresql://app:hunter2@db/r")
