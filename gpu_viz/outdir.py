"""An output folder a command owns: it never deletes or overwrites a file it did not write.

``gpu-viz slides`` writes its decks, index, manifest, executed notebooks and ``vendor/`` through
an :class:`OwnedFolder`:

* **A ledger.**  ``<folder>/.gpu-viz-build.json`` lists every file the command wrote there, by
  path and SHA-256.  A file is *ours* when the ledger lists it with its current content; anything
  else (a file the user put there, or one of ours they edited since) is *foreign*.
* **Claiming.**  A folder that is new, empty, or holds only our files is claimed at once.  A folder
  with foreign files is refused (:class:`FolderError`, the files named) unless ``force``; even then
  a foreign file is never overwritten or deleted: writing to its path is an error naming it.
* **One writer.**  Claiming takes an exclusive lock (``.gpu-viz-build.lock``): a second build into
  the same folder is refused at once, naming the first one's process id, rather than both writing
  half an index each.
* **Whole files only.**  Every file is written beside its final name (in ``.gpu-viz-staging/``)
  and renamed into place when complete (:func:`os.replace`, atomic on one file system), so a full
  disk, a crash or Ctrl-C leaves the previous file, never half of a new one.  An ``OSError`` is
  reported as the path and the system's reason (``No space left on device``).
* **Nothing left behind by a failure.**  A folder the claim created is removed again when the
  command fails before writing anything in it.
* **Never a folder no command should own** (:func:`check_root`): an empty name (it would mean the
  current folder), the file system's root, the user's home folder or a folder holding it are
  refused at once, before anything in them is read (a claim reads every file under the folder).
"""
from __future__ import annotations

import contextlib
import errno as _errno
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path, PurePosixPath
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

#: The ledger of the files the command wrote in the folder.
LEDGER = ".gpu-viz-build.json"
#: The lock file held while a command writes in the folder.
LOCK = ".gpu-viz-build.lock"
#: Where files are written before they are renamed into place.
STAGING = ".gpu-viz-staging"
#: The folder's own bookkeeping: never listed, never foreign.
RESERVED = (LEDGER, LOCK, STAGING)
#: How many foreign files an error message names before it counts the rest.
NAMED = 5


class FolderError(RuntimeError):
    """The output folder cannot be used, or a file in it cannot be written; the message names the
    path and why (and, for a folder with files we did not write, what to do)."""

    def __init__(self, message: str, errno: Optional[int] = None):
        super().__init__(message)
        self.errno = errno


def check_root(root, option: str = "--out", example: str = "slides-build") -> Path:
    """``root`` as a Path, when a command may own it; refused at once, before anything in it is read.

    Refused: an empty name (``--out ""``: it would mean the current folder), the root of a file
    system (``/``, ``C:\\``), the user's home folder, and any folder that holds the home folder
    (``/home``): a claim reads every file under the folder (over a million under ``/``), and the
    folder's own files would all be foreign to the build.  ``example`` is the name the message
    suggests (``--out slides-build``).

    Raises:
        FolderError: one of the above, naming ``option``, the folder, and what to pass instead.
    """
    if str(root).strip() == "":
        raise FolderError(f"{option} is empty: name a folder (e.g. {option} {example})")
    path = Path(root).expanduser()
    where = path.resolve()
    if where.parent == where:
        raise FolderError(f"{option} {root}: the root of the file system; name a folder of its own "
                          f"(e.g. {option} {example})")
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError, OSError):  # no home folder known (no HOME, no passwd entry)
        return path
    if where == home or where in home.parents:
        what = "your home folder" if where == home else f"a folder holding your home folder ({home})"
        raise FolderError(f"{option} {root}: {what}; name a folder of its own (e.g. {option} "
                          f"{home / example})")
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _why(exc: OSError) -> str:
    """The system's words for an OSError (``No space left on device``), never a tuple."""
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))


def _lock(fd: int) -> bool:
    """Take an exclusive, non-blocking lock on ``fd``; False when another process holds it.  A file
    system without locks (some network mounts) cannot tell: the build goes on unlocked there."""
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (_errno.EAGAIN, _errno.EACCES):
            return False
    return True


def _read_fd(fd: int) -> str:
    """The lock file's text (the holder's pid); "" where the holder's lock keeps it from being read."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        return ""


def _write_fd(fd: int, text: str) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, text.encode("ascii"))


class OwnedFolder:
    """A folder written only through this object (see the module docstring).

    Args:
        root: the folder (made when the first file is written).
        option: how the user named it (``"--out"``), for messages.
        force: claim a folder that holds foreign files (they are still never touched).
        adopt: ``adopt(root) -> rel paths``: files of an earlier build that predates the ledger,
            taken as ours when the folder has no ledger (e.g. a ``gpu-viz slides`` build whose
            ``manifest.json`` lists its decks).

    Use as a context manager: ``with OwnedFolder(out, "--out") as folder: folder.write_text(...)``.

    Raises:
        FolderError: at once, a folder :func:`check_root` refuses (empty, a file system's root, the
            home folder); from :meth:`claim` -- not a folder, held by another build, or foreign files
            without ``force``; from the writers -- a foreign path, or the system's error on a path.
    """

    def __init__(self, root: Path, option: str = "--out", *, force: bool = False,
                 adopt: Optional[Callable[[Path], Set[str]]] = None):
        self.root, self.option, self.force, self._adopt = check_root(root, option), option, force, adopt
        self.files: Dict[str, List[str]] = {}   # rel -> acceptable SHA-256s (more than one while pending)
        self.foreign: Dict[str, str] = {}       # rel -> why it is not ours
        self._lock_fd: Optional[int] = None
        self._lock_made = False                 # whether the claim created the lock file
        self._made: List[Path] = []             # folders this object created, outermost first
        self._wrote = False
        self.adopted = 0

    # -- claiming ---------------------------------------------------------------------------------
    def __enter__(self) -> "OwnedFolder":
        self.claim()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.release(failed=exc_type is not None)

    def claim(self) -> "OwnedFolder":
        """Lock the folder and read what in it is ours (see the class docstring)."""
        root = self.root
        if root.exists() and not root.is_dir():
            raise FolderError(f"{self.option} {root}: not a folder")
        self._mkdir(root)
        self._lock_made = not (root / LOCK).exists()
        try:
            fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise FolderError(f"{self.option} {root}: cannot write there: {_why(exc)}", exc.errno) from None
        if not _lock(fd):
            try:
                holder = _read_fd(fd) or "?"
            finally:
                os.close(fd)
            self._cleanup_made()  # (the lock file is the other build's)
            raise FolderError(f"{self.option} {root}: another gpu-viz build (process {holder}) is writing there; "
                              f"wait for it to finish, or choose another {self.option}")
        self._lock_fd = fd
        _write_fd(fd, str(os.getpid()))
        try:
            self._read_ledger()
        except BaseException:
            self.release(failed=True)
            raise
        if self.foreign and not self.force:
            shown = sorted(self.foreign)[:NAMED]
            more = len(self.foreign) - len(shown)
            listed = "; ".join(f"{rel} ({self.foreign[rel]})" for rel in shown) + (f"; and {more} more" if more else "")
            self.release(failed=True)
            raise FolderError(
                f"{self.option} {root} holds {len(self.foreign)} file(s) a gpu-viz build did not write: {listed}. "
                f"Nothing was changed. Choose a new or empty folder for {self.option}, or pass --force to build "
                "beside them (a file of yours is still never overwritten or deleted)")
        return self

    def _read_ledger(self) -> None:
        ledger = self.root / LEDGER
        files: Dict[str, List[str]] = {}
        known = False
        if ledger.is_file():
            try:
                data = json.loads(ledger.read_text(encoding="utf-8"))
                files = {str(k): [str(h) for h in (v if isinstance(v, list) else [v])]
                         for k, v in data["files"].items()}
                known = True
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                files = {}
        staging = self.root / STAGING
        if staging.is_dir() and known:  # what an interrupted run of ours left half-written
            shutil.rmtree(staging, ignore_errors=True)
        present = self._present()
        if not known and self._adopt is not None:
            adopted = {rel for rel in self._adopt(self.root) & set(present)
                       if (self.root / rel).is_file() and not (self.root / rel).is_symlink()}
            files = {rel: [sha256_file(self.root / rel)] for rel in adopted}
            self.adopted = len(adopted)
        for rel in present:
            path = self.root / rel
            if rel not in files:
                self.foreign[rel] = "not written by a gpu-viz build"
            elif path.is_symlink() or not path.is_file() or sha256_file(path) not in files[rel]:
                self.foreign[rel] = "changed since the build wrote it"
                files.pop(rel)
            else:
                files[rel] = [sha256_file(path)]
        # a file the ledger lists that is gone is no longer ours to keep track of
        self.files = {rel: h for rel, h in files.items() if rel in present and rel not in self.foreign}

    def _present(self) -> List[str]:
        """Every file and link under the folder (its bookkeeping left out), as POSIX relative paths."""
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            if here == self.root:
                dirnames[:] = [d for d in dirnames if d not in RESERVED]
                filenames = [f for f in filenames if f not in RESERVED]
            for d in list(dirnames):
                if (here / d).is_symlink():  # a link to a folder is a file to us: never followed
                    filenames.append(d)
                    dirnames.remove(d)
            found += [(here / f).relative_to(self.root).as_posix() for f in filenames]
        return sorted(found)

    def release(self, failed: bool = False) -> None:
        """Unlock; after a failure that wrote nothing, remove what the claim made (the lock file,
        the staging folder, the folders it created when they are empty)."""
        staging = self.root / STAGING
        if staging.is_dir():
            shutil.rmtree(staging, ignore_errors=True)
        if self._lock_fd is not None:
            if failed and not self._wrote and self._lock_made:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / LOCK)
            os.close(self._lock_fd)
            self._lock_fd = None
        if failed and not self._wrote:
            self._cleanup_made()

    def _cleanup_made(self) -> None:
        for d in reversed(self._made):
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty
        self._made = []

    def _mkdir(self, path: Path) -> None:
        missing = []
        p = path
        while not p.exists():
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                raise FolderError(f"{self.option} {self.root}: cannot create {d}: {_why(exc)}", exc.errno) from None
            self._made.append(d)

    # -- what is ours -----------------------------------------------------------------------------
    def _rel(self, rel) -> str:
        r = PurePosixPath(Path(rel).as_posix())
        if r.is_absolute() or ".." in r.parts or not r.parts or r.parts[0] in RESERVED:
            raise ValueError(f"not a path inside {self.root}: {rel}")
        return str(r)

    def path(self, rel) -> Path:
        """The absolute path of ``rel`` in the folder."""
        return self.root / self._rel(rel)

    def owns(self, rel) -> bool:
        """Whether ``rel`` is a file this command (or an earlier run of it) wrote and nobody changed."""
        return self._rel(rel) in self.files

    def owned(self, under: str = "") -> List[str]:
        """The files of ours under the folder ``under`` (all when "")."""
        prefix = self._rel(under) + "/" if under else ""
        return sorted(r for r in self.files if r.startswith(prefix))

    def _check_writable(self, rel: str) -> Path:
        if self._lock_fd is None:
            raise RuntimeError("OwnedFolder: claim() the folder before writing in it")
        target = self.root / rel
        if rel in self.foreign or ((target.exists() or target.is_symlink()) and rel not in self.files):
            raise FolderError(f"will not overwrite {target}: a gpu-viz build did not write it "
                              f"({self.foreign.get(rel, 'not in ' + LEDGER)}); move it away, or choose another "
                              f"{self.option}")
        for parent in PurePosixPath(rel).parents:
            p = self.root / parent
            if str(parent) != "." and (p.is_symlink() or (p.exists() and not p.is_dir())):
                raise FolderError(f"cannot write {target}: {p} is not a folder")
        return target

    # -- writing ----------------------------------------------------------------------------------
    def write_bytes(self, rel, data: bytes) -> Path:
        """Write ``data`` to ``rel`` whole (staged, then renamed into place); returns the path."""
        return self.write_many([(rel, data)])[0]

    def write_text(self, rel, text: str) -> Path:
        """:meth:`write_bytes` of ``text`` in UTF-8."""
        return self.write_bytes(rel, text.encode("utf-8"))

    def copy_files(self, pairs: Iterable[Tuple[Path, str]]) -> List[Path]:
        """Copy each ``(source file, rel)``; an unchanged file is left as it is.  Returns the paths."""
        items = []
        for src, rel in pairs:
            try:
                items.append((rel, Path(src).read_bytes()))
            except OSError as exc:
                raise FolderError(f"cannot read {src}: {_why(exc)}", exc.errno) from None
        return self.write_many(items)

    def produce(self, rel, make: Callable[[Path], None]) -> Path:
        """Let ``make(path)`` write a file (e.g. a PDF printer that takes a path) at a staging path,
        then put it at ``rel`` as :meth:`write_bytes` would; returns the path."""
        rel = self._rel(rel)
        target = self._check_writable(rel)
        tmp = self._staging() / f"{uuid.uuid4().hex}-{PurePosixPath(rel).name}"
        try:
            make(tmp)
            data = tmp.read_bytes()
        except OSError as exc:
            raise FolderError(f"could not write {target}: {_why(exc)}", exc.errno) from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return self.write_bytes(rel, data)

    def write_many(self, items: Iterable[Tuple[str, bytes]]) -> List[Path]:
        """Write every ``(rel, data)``: the ledger first lists each new content as pending, then
        each file is staged and renamed into place, then the ledger keeps only the new contents
        (a run cut short between the two leaves files the next run still knows as its own)."""
        items = [(self._rel(rel), data) for rel, data in items]
        todo = []
        for rel, data in items:
            rel = self._rel(rel)
            target = self._check_writable(rel)
            digest = hashlib.sha256(data).hexdigest()
            if self.files.get(rel) == [digest] and target.is_file():
                continue  # already there, unchanged
            todo.append((rel, target, data, digest))
        if todo:
            for rel, _target, _data, digest in todo:
                self.files[rel] = [*self.files.get(rel, []), digest]
            self._save_ledger()
            self._wrote = True
            for rel, target, data, _digest in todo:
                self._put(target, data)
            for rel, _target, _data, digest in todo:
                self.files[rel] = [digest]
            self._save_ledger()
        return [self.root / rel for rel, _ in items]

    def remove(self, rel) -> bool:
        """Delete ``rel`` if it is ours (True); a foreign or missing file is left alone (False)."""
        rel = self._rel(rel)
        if rel not in self.files:
            return False
        try:
            (self.root / rel).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise FolderError(f"could not remove {self.root / rel}: {_why(exc)}", exc.errno) from None
        del self.files[rel]
        self._wrote = True
        self._save_ledger()
        return True

    def _staging(self) -> Path:
        staging = self.root / STAGING
        try:
            staging.mkdir(exist_ok=True)
        except OSError as exc:
            raise FolderError(f"cannot write in {self.root}: {_why(exc)} ({staging})", exc.errno) from None
        return staging

    def _put(self, target: Path, data: bytes) -> None:
        """``data`` at ``target``, whole or not at all."""
        tmp = self._staging() / f"{uuid.uuid4().hex}-{target.name}"
        try:
            self._mkdir(target.parent)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise FolderError(f"could not write {target}: {_why(exc)}"
                              + (" (the disk is full: free some space and build again; the earlier file is "
                                 "unchanged)" if exc.errno == _errno.ENOSPC else ""), exc.errno) from None

    def _save_ledger(self) -> None:
        data = json.dumps({"tool": "gpu-viz", "files": {k: self.files[k] for k in sorted(self.files)}},
                          indent=0, sort_keys=True).encode("utf-8")
        self._put(self.root / LEDGER, data)
