"""Hostile and huge exports through ``readdod import --dry-run`` as a person runs it: a
bad entry is skipped with its line and the others still come in, a zip's members are
measured before they are read, and the client stays small whatever the file."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from readdod.capture.formats import Problem, jsonscan

#: The most memory an import client may take, whatever the file (MiB).
CLIENT_RSS_MIB = 200


def _dry_run(path: Path, *args: str) -> tuple[int, dict[str, Any], str, float]:
    """Run the import in a child process; (exit code, summary, stderr, peak RSS in MiB)."""
    probe = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.stdout)\n"
    )
    cmd = [sys.executable, "-m", "readdod", "import", str(path), "--dry-run", "--json", *args]
    out = subprocess.run(
        [sys.executable, "-c", probe, *cmd],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env={"HOME": str(path.parent), "PATH": "/usr/bin:/bin"},
    )
    code, rss_kib, summary = out.stdout.split("\n", 2)
    tally: dict[str, Any] = json.loads(summary)
    return int(code), tally, out.stderr, int(rss_kib) / 1024


def _accounted(tally: dict[str, Any]) -> int:
    skipped: dict[str, int] = tally["skipped"]
    counted: int = tally["new"] + tally["already"] + len(tally["refused"])
    return counted + sum(skipped.values())


def test_deeply_nested_json_is_one_refused_entry_and_the_rest_come_in(tmp_path: Path) -> None:
    good = {"url": "https://example.org/a", "title": "A", "created_at": "2021-01-01T00:00:00Z"}
    deep = "[" * 200_000 + "]" * 200_000
    after = dict(good, url="https://example.org/b")
    path = tmp_path / "wallabag.json"
    path.write_text(f"[\n{json.dumps(good)},\n{deep},\n{json.dumps(after)}\n]\n")
    code, tally, err, _ = _dry_run(path, "-i", "read")
    assert "Traceback" not in err and code == 1
    assert tally["new"] == 2 and tally["total"] == 3 == _accounted(tally)
    (refused,) = tally["refused"]
    assert refused["line"] == 3 and "nested too deeply" in refused["reason"]


def test_an_unterminated_quote_costs_one_row_not_the_rest(tmp_path: Path) -> None:
    rows = ["title,url,time_added,tags,status"]
    rows += [f"ok {i},https://example.org/{i},1600000000,,unread" for i in range(5)]
    rows.insert(3, '"never closed,https://example.org/bad,1600000000,,unread')
    path = tmp_path / "pocket.csv"
    path.write_text("\n".join(rows) + "\n")
    code, tally, _, _ = _dry_run(path, "-i", "read")
    assert code == 1 and tally["new"] == 5 and tally["total"] == 6 == _accounted(tally)
    assert [r["line"] for r in tally["refused"]] == [4]
    assert "unterminated quote" in tally["refused"][0]["reason"]


def test_zip_members_are_measured_before_they_are_read(tmp_path: Path) -> None:
    path = tmp_path / "omnivore-export.zip"
    meta = [{"url": "https://example.org/a", "slug": "a", "title": "A", "savedAt": "2024-01-01"}]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("metadata_0_to_0.json", json.dumps(meta))
        for name in ("metadata_1_to_1.json", "content/a.html"):
            with z.open(name, "w", force_zip64=True) as member:
                block = b" " * (1 << 20)
                for _ in range(300):  # 300 MiB each, a few hundred KiB compressed
                    member.write(block)
    assert path.stat().st_size < 4 << 20
    code, tally, err, rss = _dry_run(path, "-i", "read")
    assert "Traceback" not in err and code == 1
    assert tally["new"] == 1  # the kept page was too large: the link is fetched instead
    (refused,) = tally["refused"]
    assert "metadata_1_to_1.json" in refused["reason"] and "too large" in refused["reason"]
    assert rss < CLIENT_RSS_MIB, rss


def test_a_large_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 60,000 links with long titles: 125 MB, more than the client may take if it held them.
    path = tmp_path / "urls.txt"
    count = 60_000
    words = " ".join(f"word{i}" for i in range(300))
    with path.open("w") as f:
        for i in range(count):
            f.write(f"https://site{i % 97}.example.org/post/{i} Post {i} {words}\n")
        f.write("https://site0.example.org/post/0 again\n")  # a repeat, counted
    assert path.stat().st_size > (CLIENT_RSS_MIB / 2) * 2**20
    code, tally, _, rss = _dry_run(path, "-i", "read")
    assert code == 0 and tally["total"] == count + 1 == _accounted(tally)
    assert tally["duplicates"] == 1
    assert rss < CLIENT_RSS_MIB / 2, rss


def test_a_json_entry_cut_across_reads_is_read_whole() -> None:
    entries = [
        {"url": f"https://example.org/{i}", "title": "t" * (i * 37 % 500)} for i in range(200)
    ]
    text = json.dumps({"bookmarks": entries}, indent=1)
    got = list(jsonscan.entries(io.StringIO(text), "bookmarks", chunk=97))
    assert [g[1] for g in got if isinstance(g, tuple)] == entries
    assert not [g for g in got if isinstance(g, Problem)]


def test_a_bookmark_tag_that_never_ends_costs_that_link_only() -> None:
    from readdod.capture.formats import READERS, Entry

    doc = (
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        '<DT><A HREF="https://example.org/a">A</A>\n'
        '<DT><A HREF="https://example.org/b" ICON="' + "x" * (8 << 20) + "\n"
        '<DT><A HREF="https://example.org/c">C</A>\n'
        '<DT><A HREF="https://example.org/d">D</A>\n</DL>\n'
    )
    got = list(READERS["netscape"](doc))
    assert [g.url for g in got if isinstance(g, Entry)][-2:] == [
        "https://example.org/c",
        "https://example.org/d",
    ]
    (problem,) = [g for g in got if isinstance(g, Problem)]
    assert problem.line == 4 and "tag longer than" in problem.message
