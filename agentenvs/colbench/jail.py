"""The sandbox's child program: run untrusted code on call expressions in a jail.

Run by :mod:`agentenvs.colbench.sandbox` as ``python -I -S -B jail.py``; it
imports nothing from agentenvs (the interpreter starts without site-packages).
It reads its set-up from the first line of stdin::

    {"uid": int, "memory_bytes": int, "cpu_seconds": int, "max_processes": int,
     "file_bytes": int, "tmpfs_bytes": int, "hide": [path, ...], "output_chars": int,
     "workdir": path used only when no namespace can be made}

builds the jail, and only then reads its task, the rest of stdin up to EOF
(so a jail can be set up before its task is known)::

    {"code": str, "calls": [str, ...], "start": int, "split_namespace": bool}

As root it then:

1. unshares new mount, network, PID, IPC and UTS namespaces (no network
   device but a down loopback; no view of the host's processes);
2. remounts every mount of its namespace read-only, then mounts fresh
   size-capped tmpfs over ``/tmp``, ``/var/tmp``, ``/dev/shm``
   and every ``hide`` path (the official task files), so nothing outside the
   jail's own tmpfs can be written or those files read; when the standard
   library sits in a private folder (``/root/.pyenv``), that folder is
   covered too and only the interpreter's prefix is put back;
3. forks the jailed process, PID 1 of the new PID namespace: when it dies the
   kernel kills every process left in the namespace, however they detached;
4. the jailed process mounts its own ``/proc``, sets its rlimits (address
   space, CPU seconds, processes, file size, open files, no core dumps),
   drops to a uid and gid of its own with no supplementary groups, sets
   no_new_privs, moves to the empty tmpfs, points fds 0-2 at /dev/null, and
   only then runs the code.

Without root it tries the same inside a new user namespace; where even that
is refused it runs with the rlimits alone. The isolation reached is
reported: ``root``, ``userns`` or ``none``, with ``-rwN`` appended when N
mounts could not be made read-only. The first line on stdout is
``J <pid of the jailed process> <isolation>``; the jailed process then writes
``S`` (jail set up, waiting for its task), ``R`` (the code ran) or
``D <error>`` (it raised), then one JSON line per call:
``{"i": index, "v": encoded value}`` or ``{"i": index, "e": error}``.
"""

import ctypes
import json
import math
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 4096, 8192, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
MAX_DEPTH = 64

_type, _len, _str, _bool, _int, _float, _complex = type, len, str, bool, int, float, complex
_list, _tuple, _dict, _set, _frozenset, _bytes = list, tuple, dict, set, frozenset, bytes
_int_repr, _float_repr, _join = int.__repr__, float.__repr__, "".join
_isfinite, _isnan = math.isfinite, math.isnan
_escape = json.encoder.encode_basestring_ascii  # the C function: no builtins looked up at call time
_write, _exit, _range, _enumerate, _eval, _exec = os.write, os._exit, range, enumerate, eval, exec
_BaseException = BaseException
_TAGS = {_list: "l", _tuple: "t", _set: "s", _frozenset: "f"}


class Unserialisable(Exception):
    pass


class OutputTooLarge(Exception):
    pass


_cap = [65_536]  # set from the setup; checked before a long string or container is written


def encode(value, out, depth=0):
    """Append the tagged JSON of ``value`` to ``out``: exact builtin types only, so no
    object can pose as another; only names bound before the code ran are used, so
    patched builtins or modules cannot change how a value is written."""
    if depth > MAX_DEPTH:
        raise Unserialisable("nested too deeply")
    kind = _type(value)
    if value is None:
        out.append("null")
    elif kind is _bool:
        out.append("true" if value else "false")
    elif kind is _int:
        out.append(_int_repr(value))
    elif kind is _float:
        out.append(
            _float_repr(value)
            if _isfinite(value)
            else ("NaN" if _isnan(value) else "Infinity" if value > 0 else "-Infinity")
        )
    elif kind is _str:
        if _len(value) > _cap[0]:
            raise OutputTooLarge
        out.append(_escape(value))
    elif kind in _TAGS:
        if _len(value) > _cap[0]:
            raise OutputTooLarge
        out.append('{"' + _TAGS[kind] + '": [')
        for position, item in _enumerate(value):
            if position:
                out.append(", ")
            encode(item, out, depth + 1)
        out.append("]}")
    elif kind is _dict:
        if _len(value) > _cap[0]:
            raise OutputTooLarge
        out.append('{"d": [')
        for position, (key, item) in _enumerate(value.items()):
            out.append(", [" if position else "[")
            encode(key, out, depth + 1)
            out.append(", ")
            encode(item, out, depth + 1)
            out.append("]")
        out.append("]}")
    elif kind is _bytes:
        out.append('{"b": "' + value.hex() + '"}')
    elif kind is _complex:
        out.append('{"c": [')
        encode(value.real, out, depth + 1)
        out.append(", ")
        encode(value.imag, out, depth + 1)
        out.append("]}")
    else:
        raise Unserialisable(kind.__name__)


def libc_call(libc, name, *args):
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), f"{name} failed")


def mount_tmpfs(libc, path, size, mode):
    libc_call(
        libc,
        "mount",
        b"tmpfs",
        path.encode(),
        b"tmpfs",
        MS_NOSUID | MS_NODEV,
        f"size={size},mode={mode}".encode(),
    )


def enter_namespaces(libc, setup):
    """Namespaces and mounts (needs root or a user namespace); returns the isolation reached."""
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if os.geteuid() == 0:
        libc_call(libc, "unshare", flags)
        level = "root"
    else:
        uid, gid = os.geteuid(), os.getegid()
        libc_call(libc, "unshare", flags | CLONE_NEWUSER)
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"0 {gid} 1")
        level = "userns"
    libc_call(libc, "mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    left_writable = make_mounts_read_only(libc)
    for path in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(path):
            mount_tmpfs(libc, path, setup["tmpfs_bytes"], "1777" if path != "/tmp" else "0755")
    for path in setup["hide"]:
        if os.path.isdir(path):
            mount_tmpfs(libc, path, 4096, "0000")
    if level == "root":
        expose_python(libc)
    return level if not left_writable else f"{level}-rw{left_writable}"


_OPTION_FLAGS = {
    "ro": 1,
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": 1024,
    "nodiratime": 2048,
    "relatime": 1 << 21,
}


def make_mounts_read_only(libc):
    """Remount every mount of the jail's namespace read-only (the fresh tmpfs come after);
    returns how many could not be (they stay writable, and the isolation level says so)."""
    failed = 0
    with open("/proc/self/mountinfo") as handle:
        mounts = [line.split() for line in handle]
    for fields in mounts:
        point = fields[4].encode().decode("unicode_escape").encode("latin-1")
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in fields[5].split(","):
            flags |= _OPTION_FLAGS.get(option, 0)
        if libc.mount(None, point, None, flags, None) != 0:
            failed += 1
    return failed


def expose_python(libc):
    """Keep the standard library readable by the jail's uid when it lives in a private folder
    (e.g. ``/root/.pyenv``): the folder's top private ancestor is covered by an empty tmpfs (so
    the rest of it is hidden too) and the interpreter's prefix is moved back into place."""
    prefix = os.path.realpath(sys.base_prefix)
    blocked, path = None, prefix
    while path != "/":
        path = os.path.dirname(path)
        if not os.stat(path).st_mode & 0o001:
            blocked = path
    if blocked is None:
        return
    parking = "/tmp/.python"
    os.mkdir(parking)
    libc_call(libc, "mount", prefix.encode(), parking.encode(), None, MS_BIND | MS_REC, None)
    mount_tmpfs(libc, blocked, 2**20, "0755")
    os.makedirs(prefix, mode=0o755)
    libc_call(libc, "mount", parking.encode(), prefix.encode(), None, MS_MOVE, None)
    os.rmdir(parking)


def jailed(libc, setup, level, results_fd):
    """PID 1 of the jail: drop everything, then run the code."""
    uid = setup["uid"]
    if level != "none":
        libc_call(libc, "mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    if level == "root":
        os.chown("/tmp", uid, uid)
    os.chdir("/tmp" if level != "none" else setup["workdir"])
    limits = (
        (resource.RLIMIT_AS, setup["memory_bytes"]),
        (resource.RLIMIT_CPU, setup["cpu_seconds"]),
        (resource.RLIMIT_FSIZE, setup["file_bytes"]),
        (resource.RLIMIT_NOFILE, 64),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, setup["max_processes"]),
    )
    for which, value in limits:
        resource.setrlimit(which, (value, value))
    _cap[0] = setup["output_chars"]
    if level == "root":
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    elif level == "userns":
        libc_call(libc, "unshare", CLONE_NEWUSER)  # no capabilities over the jail's own mounts
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    emit(results_fd, "S")
    task = read_all(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    run(json.loads(task), results_fd)


def emit(fd, text):
    data = (text + "\n").encode("utf-8", "surrogatepass")
    while data:
        data = data[_write(fd, data) :]


def run(task, fd):
    builtins_dict = dict(__builtins__.__dict__ if hasattr(__builtins__, "__dict__") else __builtins__)
    scope = {"__builtins__": builtins_dict, "__name__": "__main__"}
    local_scope = {} if task["split_namespace"] else scope
    try:
        _exec(task["code"], scope, local_scope)
    except _BaseException as exc:  # the code's own failure is the result; report it
        emit(fd, "D " + _type(exc).__name__)
        _exit(0)
    emit(fd, "R")
    cap = _cap[0]
    calls = task["calls"]
    for index in _range(task["start"], _len(calls)):
        head = '{"i": ' + _int_repr(index) + ", "
        try:
            out = [head, '"v": ']
            encode(_eval(calls[index], scope, local_scope), out)
            line = _join(out) + "}"
            if _len(line) > cap:
                raise OutputTooLarge
        except OutputTooLarge:
            line = head + '"e": "output too large"}'
        except _BaseException as exc:  # SystemExit and KeyboardInterrupt included: a failed call
            line = head + '"e": ' + _escape(_type(exc).__name__) + "}"
        emit(fd, line)
    _exit(0)


def read_line(fd):
    """One line from ``fd``, read a byte at a time so nothing after it is consumed."""
    data = b""
    while not data.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
    return data


def read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def main():
    setup = json.loads(read_line(0))
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        level = enter_namespaces(libc, setup)
    except OSError:
        level = "none"
    results_fd = os.dup(1)
    if level == "none":
        emit(results_fd, f"J {os.getpid()} none")
        jail_then_exit(libc, setup, level, results_fd)
    gate_read, gate_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(gate_write)
        os.read(gate_read, 1)  # the J line goes first
        os.close(gate_read)
        jail_then_exit(libc, setup, level, results_fd)
    emit(results_fd, f"J {pid} {level}")
    os.close(gate_write)
    os.waitpid(pid, 0)


def jail_then_exit(libc, setup, level, results_fd):
    try:
        jailed(libc, setup, level, results_fd)
    finally:
        _exit(70)


if __name__ == "__main__":
    main()
