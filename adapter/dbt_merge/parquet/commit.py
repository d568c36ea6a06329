"""Publishing a merge on a local file system: one atomic directory swap.

The commit protocol, whole:

1. A lock (`flock`) on `<parent>/.<name>.dbt_merge/lock` serializes writers of one dataset.
   Everything else in that work folder is scratch: whatever a killed merge left there is
   deleted by the next merge, under the lock, before it starts. The work folder is outside
   the dataset: for a folder of hive partitions (`sales/d=1`, `k=v` names) it is next to the
   outermost folder above them on the same file system that the process may write in
   (`.sales.dbt_merge` beside `sales`), whose readers of `sales/**/*.parquet` would otherwise
   read the work files (work_dir). A plain folder above the dataset is not climbed.
2. New files are written into the work folder, never into the dataset.
3. The directory holding every change (layout.plan_swap) is rebuilt in the work folder: hard
   links to each file that stays (no data is copied), plus the new files.
4. The dataset is listed again: a data file that appeared, changed or went since the merge
   listed it, or any entry of the live directory that differs from what step 3 linked, is
   another writer's doing, and the publish is refused (its files would otherwise be swapped
   out with the old directory and deleted, or left unread beside rows they may duplicate).
5. One `renameat2(RENAME_EXCHANGE)` (macOS: `renamex_np(RENAME_SWAP)`) swaps the rebuilt
   directory with the live one. A directory that did not exist yet (a new partition, a new
   dataset) is instead renamed into place. This is the commit: before it the live dataset is
   the old one, after it the new one, and no state in between ever exists on disk. Steps 4
   and 5 hold the publish lock (`publish.lock` in the work folder) exclusively: readers that
   take it shared (dataset_files) never see a swap while they list and read.
6. The old directory, now in the work folder, is deleted.

A dry run takes the lock shared, and only when it exists: it creates nothing.

So the live dataset is always the truth and no journal is needed: a process killed at any
point leaves the dataset as it was before step 5 or as it is after it, and the next merge
starts from there. New files and the rebuilt directories are fsynced before the swap and the
parent directory after it, so this also holds across a power loss (with `durable=True`).

What it does not give: isolation for a reader that globs the files *while* the swap happens
without taking the publish lock. DuckDB lists a folder's names, then looks at each by its path:
a name of the old folder that the new one lacks (a rewritten file) is then skipped, silently,
so such a reader may get the rows of the unchanged files only; in a dataset with partition
folders it may list some folders before the swap and others after it. dataset_files gives
readers the lock.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import shutil
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dbt_merge.parquet.errors import ParquetMergeError
from dbt_merge.parquet.layout import SwapPlan, is_data_file, relative_to


def checkpoint(name: str) -> None:
    """A named point of the commit. It does nothing; the crash tests replace it in a child
    process to kill that process exactly there."""


_HIVE_FOLDER = re.compile(r"^[^=/]+=[^/]*$")


def work_dir(root: Path) -> Path:
    """The dataset's work folder: hidden, on the same file system, outside every dataset a
    reader may glob. Next to the dataset, or, when the dataset is a partition folder of a
    larger one (its name and its parents' are `k=v`), next to the outermost folder above those
    (`sales/d=1` -> `.sales.dbt_merge` beside `sales`): inside `sales`, a reader of
    `sales/**/*.parquet` would read its work files (the new files, the swapped-out old
    folder). Merges into `sales` and into any of its partition folders share it, and so take
    turns. It climbs only to a folder on the dataset's file system that this process may
    write in: a `k=v` folder just inside a mount point (`/dev/shm/run=1`) or inside a folder
    it cannot write keeps its work folder beside itself (the swap is a rename, which cannot
    cross file systems, and a folder that cannot be made there is no work folder)."""
    top = root
    device = _device(root)
    while _HIVE_FOLDER.match(top.name) and top.parent != top and top.parent.name:
        above = top.parent.parent
        if _device(above) != device or not _writable(above):
            break
        top = top.parent
    return top.parent / f".{top.name}.dbt_merge"


def _existing(path: Path) -> Path:
    """`path`, or its nearest parent that exists (a first merge creates the rest)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _device(path: Path) -> int:
    return _existing(path).stat().st_dev


def _writable(folder: Path) -> bool:
    """Whether this process may create a folder in `folder` (or, when it does not exist yet,
    in its nearest existing parent, where the first merge creates it)."""
    return os.access(_existing(folder), os.W_OK | os.X_OK)


def _old_work_dir(root: Path) -> Path | None:
    """The work folder an earlier release kept next to a partition folder, inside the larger
    dataset (see work_dir), when that differs from today's: None otherwise."""
    old = root.parent / f".{root.name}.dbt_merge"
    return None if old == work_dir(root) else old


@dataclass
class Transaction:
    root: Path
    work: Path
    id: str

    @property
    def folder(self) -> Path:
        return self.work / f"tx-{self.id}"

    @property
    def new_files(self) -> Path:
        """Where the merge writes its new files (the dataset's layout, relative to the root)."""
        return self.folder / "new"

    @property
    def spill(self) -> Path:
        return self.folder / "spill"


def new_id() -> str:
    """A merge's id: its work folder's and new files' names."""
    return uuid.uuid4().hex[:16]


@contextmanager
def transaction(
    root: Path, read_only: bool = False, tx_id: str | None = None
) -> Iterator[Transaction]:
    """Lock the dataset, clear what earlier merges left in its work folder, and give a fresh
    transaction; its scratch files are deleted on the way out, whatever happens.

    read_only (a dry run): write nothing anywhere, no folder, no lock file. The dataset's lock
    is taken shared when it exists (a merge publishing meanwhile is waited for; dry runs do not
    wait for each other), and the transaction's folders are never created."""
    if root.exists() and not root.is_dir():
        raise ParquetMergeError(
            f"target_path {root} is a file, not a folder: a dataset is a folder of Parquet "
            "files. Name a folder."
        )
    work = work_dir(root)
    tx_id = tx_id or new_id()
    if read_only:
        with _shared_lock(work / "lock"):
            yield Transaction(root, work, tx_id)
        return
    if _blocks().get(work):
        raise ParquetMergeError(
            f"the merge into '{root}' runs inside a `with dataset_files(...)` block (or a "
            "read_dataset) of the same thread over this dataset (or the larger one it is a "
            "partition of): the block holds the dataset's publish lock until it ends, and the "
            "merge's publish would wait for it forever. Merge after the block ends (read what "
            "you need into memory inside it). The dataset was not changed."
        )
    root.parent.mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    with open(work / "lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            for leftover in work.glob("tx-*"):
                shutil.rmtree(leftover, ignore_errors=True)
            _clear_old_work_dir(root)
            tx = Transaction(root, work, tx_id)
            tx.folder.mkdir()
            try:
                yield tx
            finally:
                shutil.rmtree(tx.folder, ignore_errors=True)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _clear_old_work_dir(root: Path) -> None:
    """Delete what a merge of an earlier release left in its work folder inside a larger
    dataset (_old_work_dir), under that folder's lock: readers of the larger dataset would read
    its files. The folder itself goes once empty."""
    old = _old_work_dir(root)
    if old is None or not old.is_dir():
        return
    with open(old / "lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            for leftover in old.glob("tx-*"):
                shutil.rmtree(leftover, ignore_errors=True)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def dataset_files(root: Path) -> Iterator[list[str]]:
    """Every data file of the dataset at `root` (absolute paths), with no merge of the package
    publishing until the block ends: read them inside it, and the read is the dataset before
    a merge or after it, never a mix (a glob of `root/**/*.parquet` taken while a merge
    publishes may not be: see the module). The publish lock is taken shared; when no merge of
    the package ever ran there, there is none to take."""
    work = work_dir(root)
    blocks = _blocks()  # a merge of this thread inside the block would wait for it forever
    blocks[work] = blocks.get(work, 0) + 1
    try:
        with _shared_lock(work / "publish.lock"):
            yield [str(root / rel) for rel in list_files(root)]
    finally:
        blocks[work] -= 1


_READING = threading.local()


def _blocks() -> dict[Path, int]:
    """This thread's open dataset_files blocks, by work folder."""
    if not hasattr(_READING, "blocks"):
        _READING.blocks = {}
    return _READING.blocks


@contextmanager
def _shared_lock(path: Path) -> Iterator[None]:
    try:
        lock = open(path)  # noqa: SIM115 - held until the with block ends
    except (FileNotFoundError, NotADirectoryError):
        yield  # no merge of the package has run here: nothing to wait for
        return
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every data file of the dataset (list_files) with its inode, size and modification time:
    what the merge read, to tell later whether another writer changed the dataset since."""
    found = {}
    for rel in list_files(root):
        st = os.lstat(root / rel)
        found[rel] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def publish(
    tx: Transaction,
    plan: SwapPlan,
    durable: bool = True,
    listed: dict[str, tuple[int, int, int]] | None = None,
) -> None:
    """Make the merge's changes live (see the module docstring). `plan.added` are paths
    relative to the root, each written at the same relative path under tx.new_files.

    `listed` (listing() when the merge listed the dataset): just before the swap the dataset is
    listed again, and the publish is refused, nothing changed, when a data file appeared,
    changed or went since, or when anything in the swapped folder differs from what was
    mirrored (another tool's file would be swapped out and deleted with the old folder). What
    remains is the moment between that last look and the swap itself."""
    if plan.mode == "none":
        return
    for path in (plan.directory, *plan.added, *plan.removed):
        if not _is_inside(path):
            raise ValueError(f"not a path inside the dataset: {path!r}")
    staged = tx.folder / "swap"
    live = tx.root / plan.directory if plan.directory else tx.root
    mirrored = None
    if plan.mode == "exchange":
        mirrored = _mirror(live, staged, plan)
    else:
        staged.mkdir()
    for path in plan.added:
        target = staged / relative_to(path, plan.directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tx.new_files / path, target)
        if durable:
            _fsync_file(target)
    if durable:
        _fsync_dirs(staged)
    checkpoint("before_swap")
    with open(tx.work / "publish.lock", "a+") as lock:
        # readers holding it shared (dataset_files) finish first; none starts meanwhile
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if listed is not None:
                _refuse_other_writes(tx.root, live, listed, mirrored)
            if plan.mode == "exchange":
                exchange(staged, live)
            else:
                live.parent.mkdir(parents=True, exist_ok=True)
                os.rename(staged, live)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    checkpoint("after_swap")
    if durable:
        _fsync_dir(live.parent)
    # `staged` now holds the old directory (exchange); the transaction's cleanup deletes it.


def _is_inside(path: str) -> bool:
    """A relative, normalized path that stays inside the dataset ("" is its root)."""
    return path == "" or (
        not path.startswith("/")
        and not os.path.isabs(path)
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def _mirror(live: Path, staged: Path, plan: SwapPlan) -> set[tuple[str, int]]:
    """Rebuild `live` at `staged` with hard links, leaving out the removed files and the
    folders that only held them. Returns every entry it found in `live` (see _walk)."""
    staged.mkdir()
    emptied = set()
    found = set()
    for rel_dir, dirpath, links, filenames in _walk(live, found):
        target_dir = staged / rel_dir if rel_dir else staged
        target_dir.mkdir(exist_ok=True)
        for name in links:
            os.symlink(os.readlink(dirpath / name), target_dir / name)
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full_rel = f"{plan.directory}/{rel}" if plan.directory else rel
            if full_rel in plan.removed:
                emptied.add(rel_dir)
                continue
            source = dirpath / name
            if source.is_symlink():
                os.symlink(os.readlink(source), target_dir / name)
            else:
                os.link(source, target_dir / name)
        checkpoint("mirroring")
    _prune_emptied(staged, emptied)
    return found


def _walk(top: Path, found: set[tuple[str, int]]) -> Iterator[tuple[str, Path, list, list]]:
    """os.walk of `top` not following symlinked folders: (relative folder, folder, symlinked
    subfolders, files) per folder; every entry met is added to `found` as (relative path,
    inode)."""
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if d not in links]
        for name in [*dirnames, *links, *filenames]:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            found.add((rel, os.lstat(os.path.join(dirpath, name)).st_ino))
        yield rel_dir, Path(dirpath), links, filenames


def _refuse_other_writes(root: Path, live: Path, listed, mirrored) -> None:
    """Refuse the publish when another writer changed the dataset since the merge listed it
    (see publish)."""
    changed = _differences(listed, listing(root), "")
    prefix = os.path.relpath(live, root).replace(os.sep, "/")
    prefix = "" if prefix == "." else prefix + "/"
    if mirrored is not None:
        current: set[tuple[str, int]] = set()
        for _ in _walk(live, current):
            pass
        seen = {c.rsplit(" ", 1)[0] for c in changed}
        changed += [
            c
            for c in _differences(dict(mirrored), dict(current), prefix)
            if c.rsplit(" ", 1)[0] not in seen
        ]
    elif live.exists() or live.is_symlink():
        changed.append(f"'{prefix.rstrip('/') or live.name}' appeared")
    if changed:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        raise ParquetMergeError(
            f"another writer changed the dataset while this merge ran: {', '.join(changed[:5])}"
            f"{more} since the merge listed its files. Nothing was published: the dataset is as "
            "that writer left it, and this merge's work files were removed. Merge again once "
            "the other writer is done (the package's merges of one dataset take turns by a "
            "lock; another tool must not write into the dataset while a merge runs)."
        )


def _differences(before: dict, after: dict, prefix: str) -> list[str]:
    """ "'path' appeared / went / changed" for each path whose entry differs."""
    found = []
    for rel in sorted(before.keys() | after.keys()):
        if before.get(rel) != after.get(rel):
            what = "appeared" if rel not in before else "went" if rel not in after else "changed"
            found.append(f"'{prefix}{rel}' {what}")
    return found


def _prune_emptied(staged: Path, emptied: set[str]) -> None:
    """Remove folders (and their parents) that are empty because their files were removed,
    up to but not including `staged` itself."""
    for rel in sorted(emptied, key=lambda r: -r.count("/")):
        path = staged / rel if rel else staged
        while path != staged and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
            path = path.parent


def list_files(root: Path) -> list[str]:
    """Every `*.parquet` file under `root` (what `root/**/*.parquet` matches), relative."""
    if not root.is_dir():
        return []
    found = []
    for dirpath, _, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            if is_data_file(name):
                rel = name if rel_dir == "." else os.path.join(rel_dir, name)
                found.append(rel.replace(os.sep, "/"))
    return sorted(found)


# ----------------------------------------------------------------- atomic exchange

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
_RENAME_SWAP = 2  # macOS sys/stdio.h


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Swap two paths atomically (both must exist), or raise without changing anything."""
    if sys.platform.startswith("linux"):
        result = _libc().renameat2(
            _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
        )
    elif sys.platform == "darwin":
        result = _libc().renamex_np(os.fsencode(a), os.fsencode(b), _RENAME_SWAP)
    else:
        raise ParquetMergeError(
            f"merging into a local Parquet dataset needs an atomic directory swap, which "
            f"{sys.platform} does not offer (Linux renameat2, macOS renamex_np)."
        )
    if result != 0:
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
            raise ParquetMergeError(
                f"the file system of {b} cannot swap two folders atomically "
                f"({os.strerror(err)}), so a merge could not be published safely. Use a local "
                f"file system such as ext4, xfs, btrfs, tmpfs or APFS. The dataset was not "
                f"changed."
            )
        raise OSError(err, os.strerror(err), str(b))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dirs(path: Path) -> None:
    """fsync every folder of a tree (the hard links it holds are entries of those folders)."""
    for dirpath, _, _ in os.walk(path):
        _fsync_dir(Path(dirpath))
