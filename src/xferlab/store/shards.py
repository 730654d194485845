"""Shards: runs recorded on other machines (a campaign's nodes, a colleague's store), as files
``results export`` writes: JSON (``{"run", "samples", "failures"}``) or Parquet (the samples, with the
run and its failures in the file's key-value metadata, ``xferlab_run``). ``results import`` merges
them into a store by run id: importing the same shard twice adds nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import BadFile, BadValue
from .db import Store
from .rows import Imported, imported

META_KEY = "xferlab_run"


def read_shard(path: Path) -> Imported:
    """A shard file's run, samples and failures, checked and converted as the store takes them
    (rows.imported), so that a set of shards can be refused before anything is written;
    :class:`BadFile` naming the file and the part otherwise."""
    path = Path(path)
    if not path.is_file():
        raise BadFile(f"shard '{path}' is not a file")
    if path.suffix.lower() == ".parquet":
        run, samples, failures = _parquet(path)
    else:
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise BadFile(f"shard '{path}' is not JSON written by `xferlab results export` ({error})") from None
        except RecursionError:
            raise BadFile(f"shard '{path}' nests its JSON too deep for a file written by `xferlab results export`") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("run"), dict) or not isinstance(doc.get("samples"), list):
            raise BadFile(f"shard '{path}' has no run and samples; give a file written by `xferlab results export`")
        run, samples, failures = doc["run"], doc["samples"], doc.get("failures") or []
    try:
        return imported(run, samples, failures)
    except BadValue as problem:
        raise BadFile(f"shard '{path}': {problem}") from None
    except RecursionError:
        raise BadFile(f"shard '{path}' nests its values too deep for a file written by `xferlab results export`") from None


def _parquet(path: Path):
    import duckdb

    conn = duckdb.connect()
    try:
        meta = conn.execute("SELECT value::VARCHAR FROM parquet_kv_metadata(?) WHERE key::VARCHAR = ?",
                            [str(path), META_KEY]).fetchall()
        rows = conn.execute("SELECT * FROM read_parquet(?) ORDER BY seq", [str(path)]).fetchall()
        names = [d[0] for d in conn.description]
    except duckdb.Error as error:
        raise BadFile(f"shard '{path}' is not a Parquet file xferlab can read ({str(error).splitlines()[0]})") from None
    if not meta:
        raise BadFile(f"shard '{path}' has no run in its metadata ('{META_KEY}'): export it again with this xferlab")
    try:
        doc = json.loads(_unescape(meta[0][0]))
    except RecursionError:
        raise BadFile(f"shard '{path}': its '{META_KEY}' metadata nests too deep") from None
    except json.JSONDecodeError as error:
        raise BadFile(f"shard '{path}': its '{META_KEY}' metadata is not JSON ({error})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("run"), dict):
        raise BadFile(f"shard '{path}': its '{META_KEY}' metadata holds no run; export it again with this xferlab")
    samples = []
    for row in rows:
        r = dict(zip(names, row))
        r["params"] = json.loads(r["params"]) if isinstance(r.get("params"), str) else (r.get("params") or {})
        samples.append({k: v for k, v in r.items() if v is not None or k == "params"})
    return doc["run"], samples, doc.get("failures") or []


def _unescape(text: str) -> str:
    """DuckDB shows non-printable bytes of a BLOB as \\xNN; the JSON is ASCII apart from those."""
    import re

    return re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def read_shards(paths: list[Path]) -> list[tuple[Path, Imported]]:
    """Every shard read and checked (:func:`read_shard`), before a store is opened: one bad shard and
    nothing is written."""
    return [(Path(path), read_shard(path)) for path in paths]


def import_shards(store: Store, shards: list[tuple[Path, Imported]]) -> list[dict[str, Any]]:
    """Shards read by :func:`read_shards` into ``store``: per shard its run id, samples and whether it
    was new (a run of that id already there is left as it is)."""
    return [{"shard": str(path), "run_id": shard.run_id, "samples": len(shard.samples),
             "imported": store.insert_imported(shard)} for path, shard in shards]
