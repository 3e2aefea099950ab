"""The store scan on Dask: the records and summary of ``histfix scan``, on a cluster you already run.

``pip install 'histfix[dask]'``. Reading, examining and summarizing are ``dask.bag`` operations,
so whichever Dask scheduler you use runs them (a ``distributed`` cluster, or Dask's local ones);
histfix schedules nothing itself::

    from distributed import Client
    from histfix.store import dask as histfix_dask

    client = Client("tcp://scheduler:8786")
    items = histfix_dask.read_jsonl("s3://bucket/exports/chats-*.jsonl")  # a bag of Stored
    records = histfix_dask.examine_bag(items, provider="anthropic")  # a bag of Record
    summary = histfix_dask.summarize(records).compute()  # a Summary

Each history gets :func:`histfix.store.examine`, the record the local scan makes, under the
pydantic-ai release installed on the worker that runs it: :func:`check_workers` says whether
every worker runs the release this process does. Keys are the local sources' keys (a JSONL line's
key field or line number, a file's relative path, a table's key), so the records and the
summary equal the local scan's (``histfix scan`` without ``--dask``) on the same store.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable, Iterator
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import dask.bag as db
    from dask.delayed import delayed
    from fsspec.core import OpenFile, get_fs_token_paths  # type: ignore[import-untyped]
    from fsspec.utils import infer_compression, read_block  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("histfix.store.dask needs Dask: pip install 'histfix[dask]'") from exc

from .._oneline import first_line
from ._record import Options, Record, examine
from ._source import RangeSource, Stored, StoreError
from ._summary import Summary
from .sources import names_table, open_source
from .sources._files import DirectorySource, jsonl_entry

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "check_workers",
    "connect",
    "disconnect",
    "examine_bag",
    "iter_records",
    "read_directory",
    "read_jsonl",
    "read_source",
    "read_table",
    "summarize",
]

#: Bytes of JSONL per partition: a task of a second or more (a task costs Dask about a
#: millisecond), while a worker holds the block, its lines and their records a few times over.
JSONL_BLOCKSIZE = 16 << 20
#: Files, or table rows, per partition.
FILES_PER_PARTITION = 1_000
ROWS_PER_PARTITION = 10_000


# --- reading -------------------------------------------------------------------------------------


def _block(file: OpenFile, start: int, length: int | None) -> bytes:
    """The whole lines of ``file`` that start in ``[start, start + length)`` (fsspec's
    ``read_block``, the cut Dask's own ``read_bytes`` makes); the whole file when ``length`` is None."""
    with copy.copy(file) as opened:  # each task opens its own handle
        if length is None:
            data: bytes = opened.read()
            return data
        cut: bytes = read_block(opened, start, length, b"\n")
        return cut


def _line_count(file: OpenFile, start: int, length: int | None) -> int:
    """The lines of one block (each ends with a newline, but perhaps the file's last)."""
    return _block(file, start, length).count(b"\n")


def _lines_before(counts: list[int]) -> list[int]:
    """The line count before each block of a file."""
    return list(itertools.accumulate(counts, initial=0))[:-1]


def _jsonl_block(block: bytes, offset: int, path: str | None) -> list[Stored]:
    """The histories of one block of whole lines whose first line is line ``offset + 1``."""
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()  # the newline ends the last line; nothing follows it
    found = []
    for number, body in enumerate(lines, start=offset + 1):
        stored = jsonl_entry(body, number)
        if stored is not None:
            found.append(stored if path is None else Stored(f"{path}:{stored.key}", stored.raw))
    return found


def _jsonl_part(
    file: OpenFile, cut: tuple[int, int | None], before: list[int], index: int, path: str | None
) -> list[Stored]:
    """Block ``index`` of ``file`` (its ``cut``), its lines numbered after the ``before[index]`` before it."""
    return _jsonl_block(_block(file, *cut), before[index], path)


def _cuts(size: int | None, blocksize: int | None) -> list[tuple[int, int | None]]:
    """(start, length) of each block of a file of ``size`` bytes (none for an empty file); the
    whole file as one block without a ``blocksize`` (a compressed file, whose size is not asked)."""
    if size is None or blocksize is None:
        return [(0, None)]
    return [(start, min(blocksize, size - start)) for start in range(0, size, blocksize)]


def read_jsonl(
    urlpath: str | list[str],
    *,
    blocksize: int | None = JSONL_BLOCKSIZE,
    include_path: bool = False,
    compression: str | None = "infer",
    storage_options: dict[str, Any] | None = None,
) -> db.Bag:
    """The histories of JSONL files on any fsspec path (``s3://...``, ``gs://...``, a local path or
    glob), as a bag of :class:`~histfix.store.Stored`, in file order.

    Each file is split into blocks of whole lines. A key is what the local JSONL source gives (the
    line's key field, else its line number from 1), so several files repeat keys;
    ``include_path`` makes them ``PATH:KEY``. Line numbers need the lines before each block: a
    file of several blocks is read twice, once to count its lines block by block and once to
    examine them, so that no task holds a block while it waits for another (memory stays one
    block per task, whatever the file's size). A compressed file (``.gz``, ``.bz2``, ...,
    inferred from the name unless ``compression`` says) is one block: it cannot be split.
    """
    if blocksize is not None:
        _positive("blocksize", blocksize)
    names = [urlpath] if isinstance(urlpath, str) else list(urlpath)
    if compression == "infer":
        found = {infer_compression(name) for name in names}
        if len(found) > 1:
            raise ValueError(f"{urlpath}: files of several compressions; read each kind on its own")
        compression = found.pop() if found else None
    if compression is not None:
        blocksize = None
    try:
        fs, _, paths = get_fs_token_paths(names, mode="rb", storage_options=storage_options)
        if not paths:
            raise FileNotFoundError(f"no file matches {urlpath}")
        sizes = [None if blocksize is None else fs.info(path)["size"] for path in paths]
    except (OSError, ValueError) as exc:
        raise StoreError(f"{urlpath}: cannot read it ({exc})") from exc
    parts = []
    for path, size in zip(paths, sizes, strict=True):
        file = OpenFile(fs, path, compression=compression)
        cuts = _cuts(size, blocksize)
        named = path if include_path else None
        if len(cuts) == 1:  # one block: its first line is line 1, nothing to count
            parts.append(delayed(_jsonl_part, pure=True)(file, cuts[0], [0], 0, named))
            continue
        counts = [delayed(_line_count, pure=True)(file, start, length) for start, length in cuts]
        before = delayed(_lines_before, pure=True)(counts)
        for index, cut in enumerate(cuts):
            parts.append(delayed(_jsonl_part, pure=True)(file, cut, before, index, named))
    if not parts:
        return db.from_sequence([], npartitions=1)
    return db.from_delayed(parts)


def _directory_part(root: str, keys: list[str]) -> list[Stored]:
    source = DirectorySource(Path(root))
    return [source.read_key(key) for key in keys]


def read_directory(path: str | Path, *, files_per_partition: int = FILES_PER_PARTITION) -> db.Bag:
    """Every ``*.json`` history below a directory every worker sees at the same path (a shared file
    system), as a bag of :class:`~histfix.store.Stored` in key order: this process lists the keys,
    the workers read the files (never through a symlink, FIFO or device, as the local scan)."""
    _positive("files_per_partition", files_per_partition)
    root = Path(path)
    if not root.is_dir():
        raise StoreError(f"{root}: no such directory")
    keys = list(DirectorySource(root).keys())
    chunks = [keys[i : i + files_per_partition] for i in range(0, len(keys), files_per_partition)]
    if not chunks:
        return db.from_sequence([], npartitions=1)
    return db.from_delayed([delayed(_directory_part, pure=True)(str(root), chunk) for chunk in chunks])


def _ranged(source: object) -> RangeSource:
    if not hasattr(source, "split_points"):
        raise StoreError(f"{getattr(source, 'url', source)}: not a table that reads in key ranges")
    ranged: Any = source
    return ranged


def _table_part(url: str, after: str | None, upto: str | None, batch_size: int) -> list[Stored]:
    with open_source(url) as source:
        batches = _ranged(source).read(after=after, upto=upto, batch_size=batch_size)
        return [stored for batch in batches for stored in batch]


def read_table(
    url: str, *, rows_per_partition: int = ROWS_PER_PARTITION, partitions: int | None = None
) -> db.Bag:
    """The histories of an SQLite or PostgreSQL table (``sqlite:///...`` or ``postgresql://...``
    with ``?table=T&key=K&column=C``), as a bag of :class:`~histfix.store.Stored` in key order.

    The table is cut into key ranges of about ``rows_per_partition`` rows (or into ``partitions``)
    from one pass over its key index; each task opens its own connection and pages through its
    range. The URL, with its password, travels to the workers in the task graph. Rows whose key
    is NULL are not read, as in the local scan.
    """
    _positive("rows_per_partition", rows_per_partition)
    if partitions is not None:
        _positive("partitions", partitions)
    with open_source(url) as source:
        table = _ranged(source)
        if partitions is None:
            rows = table.count() or 0
            partitions = max(1, math.ceil(rows / rows_per_partition))
        points = table.split_points(partitions)
    bounds: list[str | None] = [None, *points, None]
    return db.from_delayed(
        [delayed(_table_part, pure=True)(url, after, upto, 500) for after, upto in itertools.pairwise(bounds)]
    )


def read_source(url: str, **options: Any) -> db.Bag:
    """The store ``url`` names, as a bag of :class:`~histfix.store.Stored`: a table URL
    (:func:`read_table`), a local directory (:func:`read_directory`), else JSONL on any fsspec
    path (:func:`read_jsonl`). ``options`` go to that function."""
    if names_table(url):
        return read_table(url, **options)
    if "://" not in url and Path(url).is_dir():
        return read_directory(url, **options)
    return read_jsonl(url, **options)


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")


# --- examining -----------------------------------------------------------------------------------


def _examine_part(items: Iterable[Stored | tuple[str, bytes]], options: Options) -> list[Record]:
    records = []
    for item in items:
        if isinstance(item, Stored):
            key, raw, error = item.key, item.raw, item.error
        else:
            key, raw = item
            error = None
        if not isinstance(raw, bytes):
            raise TypeError(f"{key}: a stored history is bytes, not {type(raw).__name__}")
        records.append(examine(str(key), raw, options, error=error))
    return records


def examine_bag(items: db.Bag, *, provider: str | None = None, include_pending: bool = False) -> db.Bag:
    """:func:`histfix.store.examine` of every item (a :class:`~histfix.store.Stored`, or a
    ``(key, raw bytes)`` pair), as a bag of :class:`~histfix.store.Record` in the same order.

    ``provider`` and ``include_pending`` are ``histfix scan``'s. The records carry no repaired
    bytes: writing stays with ``histfix repair --write``, which guards each write.
    """
    if provider is not None:
        from .._profiles.targets import resolve_provider

        resolve_provider(provider)  # an unknown name fails here, not on every worker
    options = Options(provider=provider, include_pending=include_pending)
    return items.map_partitions(_examine_part, options)


# --- summarizing and streaming -------------------------------------------------------------------


def _summary_of(records: Iterable[Record]) -> Summary:
    summary = Summary()
    for record in records:
        summary.add(record)
    return summary


def _merged(summaries: Iterable[Summary]) -> Summary:
    # Dask hands the partial summaries over in partition order, which Summary.merge needs.
    return reduce(Summary.merge, summaries, Summary())


def summarize(records: db.Bag, *, split_every: int = 16) -> db.Item:
    """The :class:`Summary` ``histfix scan`` prints, of a bag of records, as a Dask item
    (``.compute()`` it): one partial summary per partition, merged in partition order."""
    return records.reduction(_summary_of, _merged, split_every=split_every)


def iter_records(records: db.Bag, client: Client, *, timeout: float | None = None) -> Iterator[Record]:
    """Every record of the bag in order, as the cluster finishes each partition: what ``histfix
    scan --dask`` prints. The whole bag is submitted at once; each partition's records are
    released once handed out. ``timeout``: seconds to wait for any one partition (TimeoutError)."""
    futures = client.compute(records.to_delayed())
    futures.reverse()
    try:
        while futures:
            future = futures.pop()
            part = future.result(timeout=timeout)
            future.release()
            yield from part
    finally:  # stopped early (an error, a closed pipe): the cluster drops the rest of the scan
        client.cancel(futures)


def _release_on_worker() -> tuple[str, str]:
    import histfix

    info = histfix.backend_info()
    return f"{info.distribution} {info.version}", histfix.__version__


def check_workers(client: Client) -> None:
    """ValueError unless every worker runs this process's histfix and pydantic-ai release: a
    worker on another release would answer "does it load here" for that release instead."""
    here = _release_on_worker()
    try:
        answers = client.run(_release_on_worker)
    except Exception as exc:  # a worker without histfix, or without pydantic-ai
        raise ValueError(f"the Dask workers cannot run histfix: {first_line(exc)}") from exc
    if not answers:
        raise ValueError("the Dask cluster has no workers")
    for worker, there in sorted(answers.items()):
        if there != here:
            raise ValueError(
                f"Dask worker {worker} runs {there[0]} with histfix {there[1]}, this process "
                f"{here[0]} with histfix {here[1]}: install the same on both"
            )


def connect(address: str, *, workers: int | None = None, timeout: float = 10) -> Client:
    """A client of the scheduler at ``address`` (``tcp://HOST:8786``), or with ``local`` of a new
    cluster of ``workers`` processes on this machine (default: every core), on 127.0.0.1 only.
    ValueError in one line when the scheduler does not answer within ``timeout`` seconds."""
    from distributed import Client, LocalCluster

    if address == "local":
        from ._runner import default_jobs

        cluster = LocalCluster(
            n_workers=workers or default_jobs(),
            threads_per_worker=1,  # the work holds the GIL: one process per core
            processes=True,
            host="127.0.0.1",
            # loopback and a free port: the scheduler serves its HTTP routes even without a dashboard
            dashboard_address="127.0.0.1:0",
        )
        return Client(cluster)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"{address}: cannot reach the Dask scheduler ({first_line(exc)})") from None


def disconnect(client: Client) -> None:
    """Close ``client``, and the cluster :func:`connect` started for it, if it did."""
    cluster = client.cluster  # set only for a cluster started with the client
    client.close()
    if cluster is not None:
        cluster.close()
