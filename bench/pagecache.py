#!/usr/bin/env python3
"""bench/pagecache.py: a data set's files out of the page cache, without root, for the cold-cache
rows of bench/compare.py (--cold). Not on stoker's hot path; standard library only.

evict(files): os.sync() (dirty pages cannot be dropped), then posix_fadvise(POSIX_FADV_DONTNEED)
on every file, which drops its clean cached pages (any reader may ask; no root needed).
resident(files): the share of the files' pages in the page cache, counted with mincore(2) on a
read-only mapping of each file (through ctypes), so the eviction is verified, not assumed.
Limits: tmpfs (and ramfs) keeps files in memory whatever is asked, so nothing drops there (the
check says so: the share stays near 1); a page another process has mapped and locked stays; the
host's or the disk's own caches (a VM's host page cache, a RAID controller) are out of reach.

  python3 bench/pagecache.py DIR [--evict]   prints the resident share (before and after --evict)
"""
import ctypes, ctypes.util, mmap, os, sys

_libc = None


def _c():
    """libc with mmap, mincore and munmap typed, or None where mincore cannot be called."""
    global _libc
    if _libc is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
            libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _libc = libc
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


def mincore_available():
    return _c() is not None and hasattr(os, 'posix_fadvise')


def data_files(root):
    """Every regular file under root, sorted."""
    return sorted(os.path.join(d, f) for d, _, names in os.walk(root) for f in names
                  if os.path.isfile(os.path.join(d, f)))


def resident_pages(path):
    """(pages of the file in the page cache, pages of the file) through mincore on a read-only
    shared mapping; raises OSError when the file cannot be mapped or mincore fails."""
    libc = _c()
    if libc is None:
        raise OSError('mincore not callable here')
    size = os.path.getsize(path)
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    if pages == 0:
        return 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f'mmap {path}: {os.strerror(ctypes.get_errno())}')
        try:
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), f'mincore {path}: {os.strerror(ctypes.get_errno())}')
            return sum(v & 1 for v in vector), pages
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)


def resident(files):
    """Share of the files' pages in the page cache (0..1), over all files together; None where
    mincore is unavailable or a file cannot be mapped."""
    cached = total = 0
    try:
        for path in files:
            c, t = resident_pages(path)
            cached, total = cached + c, total + t
    except OSError:
        return None
    return cached / total if total else 0.0


def evict(files):
    """Drops the files' pages from the page cache (after os.sync(), so none is dirty). Returns
    the number of files advised; files that cannot be opened are left out."""
    os.sync()
    advised = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            advised += 1
        finally:
            os.close(fd)
    return advised


def evict_checked(root):
    """Evicts the files under root and measures it: {'files', 'bytes', 'resident_before',
    'resident_after', 'evict_s'} (the shares None where mincore is unavailable)."""
    import time
    files = data_files(root)
    before = resident(files)
    started = time.time()
    evict(files)
    took = time.time() - started
    return {'files': len(files), 'bytes': sum(os.path.getsize(f) for f in files), 'resident_before': before,
            'resident_after': resident(files), 'evict_s': round(took, 2)}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith('-'):
        print(__doc__)
        return 2
    root = sys.argv[1]
    if '--evict' in sys.argv[2:]:
        result = evict_checked(root)
        print(f"pagecache: {result['files']} files, {result['bytes'] / 2**20:.0f} MB; resident "
              f"{result['resident_before']} before, {result['resident_after']} after eviction ({result['evict_s']} s)")
    else:
        print(f'pagecache: {resident(data_files(root))} of {root} resident')
    return 0


if __name__ == '__main__':
    sys.exit(main())
