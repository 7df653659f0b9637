"""What an archive of a run folder may hold, one owner: `./lab archive replay` and a fleet host's packed
run are both unpacked through members_of() (a received archive is data: nothing in it is run)."""
from lab.errors import LabError

# What an archive may unpack to: a run's data, raw output and environment are megabytes; a member or
# a total beyond these is a bomb (a 74 KB archive can hold a 1 GiB sparse file), not a run.
MAX_MEMBER = 256 << 20
MAX_TOTAL = 1 << 30
MAX_MEMBERS = 100_000
MAX_TOP = 100               # characters of the run folder's name


class ArchiveError(LabError):
    """An archive (or a fleet host's packed run) that is not a run folder; str() is the one line."""


def members_of(archive, t, max_total=MAX_TOTAL):
    """The members of an archive, refused (ArchiveError, one line) unless they are regular files and
    folders under one top folder, bounded in count and size, none sparse, none named twice."""
    members, total, tops, files, dirs = [], 0, set(), set(), set()
    for m in t:
        members.append(m)
        name = m.name.rstrip("/")
        parts = name.split("/")
        if len(members) > MAX_MEMBERS:
            raise ArchiveError(f"{archive}: more than {MAX_MEMBERS} members: not a run folder")
        if m.name.startswith("/") or ".." in parts or "" in parts or not (m.isfile() or m.isdir()):
            raise ArchiveError(f"{archive}: refusing member {m.name!r} (links, devices, absolute and .. "
                               "paths are not unpacked)")
        if m.issparse():
            raise ArchiveError(f"{archive}: refusing member {m.name!r}: a sparse file")
        if m.size > MAX_MEMBER:
            raise ArchiveError(f"{archive}: refusing member {m.name!r}: {m.size} bytes, more than "
                               f"{MAX_MEMBER >> 20} MiB")
        total += m.size
        if total > max_total:
            raise ArchiveError(f"{archive}: more than {max_total >> 30} GiB unpacked: not a run folder")
        if name in files or name in dirs:
            raise ArchiveError(f"{archive}: {name!r} is in it twice")
        (dirs if m.isdir() else files).add(name)
        tops.add(parts[0])
    if len(tops) != 1:
        raise ArchiveError(f"{archive}: expected one run folder inside, found {len(tops)}")
    top = next(iter(tops))
    if top in files:
        raise ArchiveError(f"{archive}: its top {top!r} is a file, not a run folder")
    if len(top) > MAX_TOP:
        raise ArchiveError(f"{archive}: its top folder's name has {len(top)} characters (at most {MAX_TOP})")
    for name in files | dirs:
        parts = name.split("/")
        clash = next((p for p in ("/".join(parts[:i]) for i in range(1, len(parts))) if p in files), None)
        if clash:
            raise ArchiveError(f"{archive}: {clash!r} is both a file and a folder")
    return members, top
