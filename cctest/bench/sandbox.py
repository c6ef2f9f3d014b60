"""Running generated code and its tests, one contained subprocess per sample.

Each sample runs in ``python -I -S`` started in a new session, with a fresh temporary directory as
its working directory, ``HOME`` and ``TMPDIR``. It imports the standard library and, read-only, the
packages installed where cctest itself runs (the running interpreter's ``site-packages``, see
:func:`site_packages`; not a user's ``pip install --user`` site, which lives in the home), so an
answer or a reference that uses NumPy runs as it would for its author; ``.pth`` files are not
processed, and BLAS libraries are held to one thread. Containment comes in layers, so that a layer the
machine lacks (no namespaces in a container, not root in CI) leaves the others in place:

1. **Limits** (always; ``resource.setrlimit`` in the child before the sample runs): CPU seconds
   (``RLIMIT_CPU``), address space (``RLIMIT_AS``), size of any file written (``RLIMIT_FSIZE``),
   number of processes (``RLIMIT_NPROC``), no core dumps. The parent adds a wall-clock timeout.
2. **Clean-up** (always): on timeout, and after every sample, the whole process group is killed
   (``killpg``), so a process the sample forked does not outlive it. The samples' directories live
   under one directory per cctest process, locked while that process lives; a later run removes
   the directories of a process that was killed before it could.
3. **Private filesystem view** (when bubblewrap, ``bwrap``, is installed and the kernel lets it
   make namespaces): the sample sees a read-only ``/usr`` (and the ``/bin``, ``/lib``… links into
   it), the few files in ``/etc`` the dynamic loader reads, the interpreter's own ``lib``
   directory, the ``site-packages`` directories (read-only; of the directories leading to them,
   as of those leading to the interpreter, only the way through shows, not what lies beside it),
   fresh ``/proc`` and ``/dev``, and its own directory, writable; nothing else exists for it: no
   ``/root``, no ``/home`` (but such a way through), no other ``/tmp`` entry, no ``/etc/shadow``.
   Bubblewrap also gives it new network, pid, IPC and UTS namespaces, and kills it when cctest
   dies. Where bubblewrap cannot run, one warning is logged and the sample sees the host's files
   with the rights of its user (the layers below still apply).
4. **Own user, no capabilities** (when cctest runs as root): the kernel does not enforce
   ``RLIMIT_NPROC`` for root, so the child drops to a user id of its own (unused by anything
   else, one per sample) and keeps no capability, not even in its bounding set, with
   ``no_new_privs`` set. The process limit then counts exactly the sample's processes, the sample
   can neither read nor write what root keeps to itself, and after the sample ``kill(-1)`` as that
   user removes every process it left, even ones that escaped the process group with ``setsid``.
   Without the private view, an interpreter installed under a directory only root may enter
   (``/root/.pyenv``) is reached through directory descriptors opened before the drop.
5. **No network, own pids** (bubblewrap, or else when the kernel allows it): the child enters a new,
   empty network namespace (a socket has no route anywhere, loopback included) and a pid
   namespace whose end kills every process left in it.
6. **Audit hook** (always; ``sys.addaudithook``, which Python code cannot remove): refuses to
   create internet sockets or connect/bind, to start programs (``subprocess``, ``os.system``,
   ``exec``, ``spawn``), to load native libraries through ``ctypes``, to signal other processes,
   and to write, create, delete, rename or change files outside the sample's directory.

The threat model is code written by a model that may be wrong or careless (an endless loop, a fork
bomb, a huge list, a stray ``open('/x', 'w')``, a read of a file it has no business with), not an
attacker crafting a kernel escape: a sample runs with the privileges that remain after the layers
above, in the same kernel.

Each run ends in one outcome: ``passed``, ``syntax_error``, ``runtime_error``,
``assertion_failure``, ``timeout`` (wall clock or CPU time) or ``resource_limit`` (memory, file
size, process count).
"""

from __future__ import annotations

import atexit
import fcntl
import itertools
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger(__name__)

OUTCOMES = ("passed", "syntax_error", "runtime_error", "assertion_failure", "timeout", "resource_limit")


@dataclass(frozen=True)
class Limits:
    """What one sample may use."""

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_mb: int = 1024  # address space, not resident memory
    file_mb: int = 16  # largest file the sample (or its output) may write
    processes: int = 16  # processes the sample may have at once (itself included)


@dataclass(frozen=True)
class RunResult:
    """How one sample ended."""

    outcome: str  # one of OUTCOMES
    detail: str = ""  # the exception or the limit, one line
    seconds: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)  # which layers were in force
    sandbox_id: str = ""  # the name of the sample's temporary directory, unique to this run
    output: str = ""  # the end of what the sample printed, when asked for (``output_bytes``)

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The child: trusted set-up, then the sample. Passed with ``-c`` so that nothing on disk has to be
# readable by the sandbox's user. Argument: a JSON object (program path, result fd, limits, uid,
# and "view": "bwrap" when it runs inside bubblewrap's private view, "host" otherwise).
_HARNESS = r"""
import ctypes, ctypes.util, errno, json, os, resource, signal, sys
cfg = json.loads(sys.argv[1])
# the packages of cctest's own environment, after the standard library so they cannot shadow it
sys.path.extend(p for p in cfg["site"] if p not in sys.path)
bwrap = cfg["view"] == "bwrap"
iso = {"network": "audit-hook", "user": "same", "nproc": "rlimit",
       "filesystem": "private view (bubblewrap)" if bwrap else "host"}

MAIN = None  # the sample's pid, once the namespaces' processes are in place
def report(outcome, detail=""):
    if MAIN is not None and os.getpid() != MAIN:
        return  # a process the sample forked: only the sample itself reports
    try:
        record = {"outcome": outcome, "detail": detail[:500], "isolation": iso}
        os.write(cfg["result_fd"], json.dumps(record).encode())
    except OSError:
        pass

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38

# counted before entering a user namespace, where other users' processes all look like "nobody"
existing = 0
if os.geteuid() != 0 and not bwrap:
    me = os.getuid()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                existing += os.stat("/proc/" + p).st_uid == me
            except OSError:
                pass

# 5. an empty network namespace, and a pid namespace: bubblewrap made them, or we try here
pidns = False
if bwrap:
    iso["network"] = "namespace"
    iso["pid"] = "namespace"
else:
    try:
        CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID = 0x40000000, 0x10000000, 0x20000000
        if os.geteuid() == 0:
            if libc.unshare(CLONE_NEWNET) == 0:
                iso["network"] = "namespace"
            pidns = libc.unshare(CLONE_NEWPID) == 0
        else:
            uid, gid = os.getuid(), os.getgid()
            for flags in (CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWUSER | CLONE_NEWNET):
                if libc.unshare(flags) == 0:
                    with open("/proc/self/setgroups", "w") as f: f.write("deny")
                    with open("/proc/self/uid_map", "w") as f: f.write(f"{uid} {uid} 1")
                    with open("/proc/self/gid_map", "w") as f: f.write(f"{gid} {gid} 1")
                    iso["network"] = "namespace"
                    pidns = bool(flags & CLONE_NEWPID)
                    break
    except Exception as exc:  # no namespaces here: the audit hook still refuses sockets
        iso["network_error"] = repr(exc)[:200]
    iso["pid"] = "namespace" if pidns else "process group"

# 4. a user of our own when root, so that RLIMIT_NPROC applies and root's files are out of reach
lim = cfg["limits"]
nproc = lim["processes"]
if cfg.get("uid") is not None and os.geteuid() == 0:
    if not bwrap:
        # the interpreter may live under a directory only root may enter (/root/.pyenv): keep the
        # standard library reachable through descriptors of its directories, opened while root
        for i, entry in enumerate(sys.path):
            if os.path.isdir(entry):
                sys.path[i] = "/proc/self/fd/%d" % os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
        sys.path_importer_cache.clear()
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    # without PR_SET_KEEPCAPS, leaving uid 0 clears the permitted, effective and ambient sets
    os.setgroups([]); os.setgid(cfg["uid"]); os.setuid(cfg["uid"])
    # changing user makes the process undumpable, which hands /proc/self to root; take it back
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    iso["user"] = "uid %d" % cfg["uid"]
elif not bwrap:
    # the limit counts every process of this user, so allow the ones that already exist
    nproc += existing
    iso["nproc"] = "rlimit (%d existing processes of this user)" % existing
else:
    nproc += 1  # the count is the user namespace's own, bubblewrap's init included
libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nothing it runs can gain a privilege
with open("/proc/self/status") as f:
    status = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
held = [k for k in ("CapEff", "CapPrm", "CapAmb") if int(status.get(k, "0"), 16)]
iso["capabilities"] = "none" if not held else ", ".join("%s %s" % (k, status[k].strip()) for k in held)

# 1. limits
mb = 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_seconds"], lim["cpu_seconds"] + 1))
resource.setrlimit(resource.RLIMIT_AS, (lim["memory_mb"] * mb, lim["memory_mb"] * mb))
resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_mb"] * mb, lim["file_mb"] * mb))
nproc += 2 if pidns else 0  # the namespace's two waiting processes (only without bubblewrap)
resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

def relay(status):
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)  # death by signal N leaves as 128 + N

if pidns:
    # the next child is the namespace's init: when it exits, the kernel kills every process left
    # in the namespace, however the sample detached them. The init only waits, so the sample
    # (its child) is an ordinary process that signals and limits treat as usual.
    child = os.fork()
    if child:
        relay(os.waitpid(child, 0)[1])
    sample = os.fork()
    if sample:
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(1)
            if pid == sample:
                relay(status)
MAIN = os.getpid()  # an oversized write then fails with EFBIG instead of killing

# 6. the audit hook
root = os.path.realpath(cfg["dir"])
def inside(p):
    if isinstance(p, int) or p is None:
        return True
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    p = os.path.realpath(os.path.join(root, p))
    return p == root or p.startswith(root + os.sep) or p == "/dev/null"
def deny(what):
    raise PermissionError("cctest sandbox: " + what + " is not allowed")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
               "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "shutil.rmtree", "os.mkfifo",
               "os.mknod"}
TWO_PATH_EVENTS = {"os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.copymode",
                   "shutil.copystat",
                   "shutil.copytree", "shutil.move"}
NO_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn",
             "os.startfile", "ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "socket.getaddrinfo",
             "socket.gethostbyname", "socket.connect", "socket.bind", "socket.sendto", "os.forkpty"}
def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & WRITE_FLAGS)
        if writing and not inside(path):
            deny("writing %r outside the sample's directory" % (path,))
    elif event in PATH_EVENTS:
        if not inside(args[0]):
            deny("%s on %r outside the sample's directory" % (event, args[0]))
    elif event in TWO_PATH_EVENTS:
        if not (inside(args[0]) and inside(args[1])):
            deny("%s outside the sample's directory" % event)
    elif event == "socket.__new__":
        if args[1] != getattr(__import__("socket"), "AF_UNIX", 1):
            deny("network access")
    elif event in NO_EVENTS:
        deny("network access" if event.startswith("socket") else event)
    elif event in ("os.kill", "os.killpg"):
        if args[0] not in (0, os.getpid()):
            deny("signalling another process")

resource_errnos = {errno.EAGAIN, errno.EFBIG, errno.ENOMEM, errno.EMFILE, errno.ENFILE}
with open(cfg["program"], encoding="utf-8") as f:
    source = f.read()
try:
    code = compile(source, "sample.py", "exec")
except (SyntaxError, ValueError) as exc:
    report("syntax_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
sys.addaudithook(hook)
sys.argv = ["sample.py"]
try:
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
except AssertionError as exc:
    report("assertion_failure", ("AssertionError: %s" % exc).strip()); os._exit(1)
except MemoryError:
    report("resource_limit", "MemoryError: the memory limit was reached"); os._exit(1)
except OSError as exc:
    if exc.errno in resource_errnos:
        report("resource_limit", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
    report("runtime_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
except SystemExit as exc:
    # exit() before the tests finished must not count as passing them
    report("runtime_error", "SystemExit(%r) before the tests finished" % (exc.code,)); os._exit(1)
except BaseException as exc:
    report("runtime_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
report("passed"); os._exit(0)
"""

_uid_counter = itertools.count()
_uid_lock = threading.Lock()


def _sandbox_uid() -> int:
    """A user id nothing else uses: high, and distinct per process and per sample."""
    with _uid_lock:
        n = next(_uid_counter) % 4096
    return 1_900_000_000 + (os.getpid() % 40_000) * 4096 + n


def _python() -> str:
    # the base interpreter, started with -S: the sample gets site_packages() on its path, read-only,
    # without the site module (no .pth file runs, no user site)
    return getattr(sys, "_base_executable", None) or sys.executable


def site_packages() -> list[str]:
    """The directories of the packages installed where cctest runs, real paths: the running
    interpreter's ``site-packages`` (a virtual environment's, or the system's). The user's own
    site (``pip install --user``, under the home) is not among them.

    >>> all(os.path.isabs(p) and os.path.isdir(p) for p in site_packages())
    True
    """
    import site

    found: list[str] = []
    for p in site.getsitepackages():
        real = os.path.realpath(p)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    return found


# ---- the samples' directories: one locked directory per cctest process, swept once it is dead

ROOT_PREFIX = "cctest-sandbox-"
_LOCK_NAME = ".lock"
_root_lock = threading.Lock()
_root: tuple[int, str, str, int] | None = None  # pid, temporary directory, root, lock descriptor
_root_cleanup_registered = False


def _samples_root() -> str:
    """This process's directory for its samples, made (and stale ones swept) on first use.

    A directory named ``cctest-sandbox-PID-…`` in the temporary directory, holding a file this
    process keeps locked (``flock``) while it lives; removed at exit, or by a later run if the
    process was killed first (see :func:`sweep_stale`).
    """
    global _root, _root_cleanup_registered
    with _root_lock:
        tmp = tempfile.gettempdir()
        if _root is not None and _root[:2] == (os.getpid(), tmp) and os.path.isdir(_root[2]):
            return _root[2]
        sweep_stale(tmp)
        path = tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-", dir=tmp)
        os.chmod(path, 0o711)  # a sample's own user passes through to its directory, lists nothing
        fd = os.open(os.path.join(path, _LOCK_NAME), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _root = (os.getpid(), tmp, path, fd)
        if not _root_cleanup_registered:
            atexit.register(_remove_root)
            _root_cleanup_registered = True
        return path


def _remove_root() -> None:
    global _root
    with _root_lock:
        if _root is not None and _root[0] == os.getpid():
            _remove_tree(_root[2])
            os.close(_root[3])
            _root = None


def sweep_stale(tmp: str | None = None) -> list[str]:
    """Remove the sample directories of cctest processes that died without removing them.

    A process killed with SIGKILL cannot clean up; its lock died with it, so any later run (this
    function runs when a process first uses the sandbox) can tell its directory from a live one,
    also one of a process in another pid namespace. Only directories of the calling user are
    touched. Returns the directories removed.
    """
    tmp = tmp or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(tmp) if n.startswith(ROOT_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        try:
            fd = os.open(os.path.join(path, _LOCK_NAME), os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            # made but not yet locked, or the process died in between: wait an hour to be sure
            if time.time() - st.st_mtime > 3600:
                _remove_tree(path)
                removed.append(path)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its process is alive (this one's own directory included)
        else:
            _remove_tree(path)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        # a sample may have taken the permissions off its own sub-directories
        for parent, dirs, _files in os.walk(path):
            for d in dirs:
                try:
                    os.chmod(os.path.join(parent, d), 0o700, follow_symlinks=False)
                except OSError:
                    pass
        shutil.rmtree(path, ignore_errors=True)


# ---- the private filesystem view (bubblewrap)

# what the dynamic loader and the interpreter read in /etc; nothing else of it is visible
_ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
_TOP_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_probe_lock = threading.Lock()
_probed: tuple[str | None] | None = None  # (bwrap's path, or None when the view is unavailable)


def _interpreter_paths() -> list[str]:
    """What of the interpreter lies outside /usr: its executable, its prefixes' lib directories and
    the site-packages directories (each once: none inside another)."""
    paths = {os.path.realpath(_python()), *site_packages()}
    for prefix in {sys.base_prefix, sys.base_exec_prefix}:
        for lib in ("lib", "lib64"):
            d = os.path.realpath(os.path.join(prefix, lib))
            if os.path.isdir(d):
                paths.add(d)
    outside = [p for p in paths if p != "/usr" and not p.startswith("/usr/")]
    return sorted(p for p in outside if not any(p.startswith(q + os.sep) for q in outside))


def view_args(workdir: str) -> list[str]:
    """bubblewrap's options for a sample: the private view, ``workdir`` its only writable place."""
    args = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent", "--ro-bind", "/usr", "/usr"]
    for path in _TOP_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    # bubblewrap would make the directories leading to a mount point private (0700): make them
    # passable for the sample's user first
    made: set[str] = set()
    binds = [p for p in _ETC_FILES if os.path.exists(p)] + _interpreter_paths()
    for path in [*binds, workdir]:
        for parent in _ancestors(path):
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
        args += ["--bind", path, path] if path == workdir else ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--chdir", workdir]
    return [*args, "--remount-ro", "/"]


def _ancestors(path: str) -> list[str]:
    """The directories above ``path``, outermost first, without ``/``: ``/a/b/c`` → ``/a``, ``/a/b``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bubblewrap() -> str | None:
    """bwrap's path when samples get the private view here, else None (warned about once).

    Checked once per process by starting the interpreter inside the view: a kernel that refuses
    the namespaces (a container's seccomp filter, user namespaces turned off) fails that check.
    """
    global _probed
    with _probe_lock:
        if _probed is None:
            _probed = (_probe_bubblewrap(),)
        return _probed[0]


def _probe_bubblewrap() -> str | None:
    exe = shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin")
    if exe is None:
        reason = "bubblewrap (bwrap) is not installed; on Debian or Ubuntu: apt-get install bubblewrap"
    else:
        workdir = tempfile.mkdtemp(prefix="cctest-probe-", dir=_samples_root())
        try:
            proc = subprocess.run(
                [exe, *view_args(workdir), "--", _python(), "-I", "-S", "-c", "import encodings"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"{exe} did not start: {exc}"
        else:
            if proc.returncode == 0:
                return exe
            said = proc.stderr.strip().splitlines()
            reason = said[-1] if said else f"{exe} exited with status {proc.returncode}"
        finally:
            _remove_tree(workdir)
    log.warning(
        "cctest sandbox: no private filesystem view for samples (%s); they run with the other layers "
        "only and can read whatever their user may read.",
        reason,
    )
    return None


def run_program(source: str, limits: Limits | None = None, *, output_bytes: int = 0) -> RunResult:
    """Run ``source`` as a fresh program in the sandbox and say how it ended.

    ``output_bytes``: keep the last that many bytes of the program's stdout and stderr in
    ``RunResult.output`` (for a program that reports through its output, like the task oracle).
    """
    limits = limits or Limits()
    root = os.geteuid() == 0
    uid = _sandbox_uid() if root else None
    bwrap = bubblewrap()
    workdir = tempfile.mkdtemp(prefix="cctest-sample-", dir=_samples_root())
    sid = os.path.basename(workdir)
    start = time.perf_counter()
    try:
        program = os.path.join(workdir, "sample.py")
        with open(program, "w", encoding="utf-8") as f:
            f.write(source)
        if uid is not None:
            os.chmod(workdir, 0o700)
            os.chown(workdir, uid, uid)
            os.chown(program, uid, uid)
        with tempfile.TemporaryFile() as result_file, open(os.path.join(workdir, ".out"), "wb") as out:
            if uid is not None:
                os.chown(os.path.join(workdir, ".out"), uid, uid)
            cfg = {
                "program": program,
                "dir": workdir,
                "result_fd": result_file.fileno(),
                "limits": asdict(limits),
                "uid": uid,
                "view": "bwrap" if bwrap else "host",
                "site": site_packages(),
            }
            env = {
                "HOME": workdir,
                "TMPDIR": workdir,
                "PATH": "/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "PYTHONHASHSEED": "0",
                # a BLAS thread pool (NumPy's) would spend the process limit and the address space
                "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            }
            command = [_python(), "-I", "-S", "-c", _HARNESS, json.dumps(cfg)]
            if bwrap:
                command = [bwrap, *view_args(workdir), "--", *command]
            proc = subprocess.Popen(
                command,
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(result_file.fileno(),),
                start_new_session=True,
            )
            timed_out = False
            try:
                proc.wait(timeout=limits.wall_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_all(proc.pid, uid)
            proc.wait()
            seconds = time.perf_counter() - start
            result_file.seek(0)
            raw = result_file.read()
        output = _tail(os.path.join(workdir, ".out"), output_bytes) if output_bytes > 0 else ""
        report: dict[str, Any] = {}
        if raw:
            try:
                report = json.loads(raw)
            except ValueError:
                report = {}
        if timed_out:
            return RunResult(
                "timeout",
                f"wall-clock limit of {limits.wall_seconds:g} s",
                seconds,
                report.get("isolation", {}),
                sid,
                output,
            )
        if report.get("outcome") in OUTCOMES:
            return RunResult(
                report["outcome"], report.get("detail", ""), seconds, report.get("isolation", {}), sid, output
            )
        outcome, detail = _classify_exit(proc.returncode, _tail(os.path.join(workdir, ".out")), limits)
        return RunResult(outcome, detail, seconds, sandbox_id=sid, output=output)
    finally:
        _remove_tree(workdir)


def _classify_exit(code: int, output: str, limits: Limits) -> tuple[str, str]:
    """An outcome for a child that died without reporting (killed by a signal, or crashed)."""
    if code < 0 or code > 128:
        sig = -code if code < 0 else code - 128
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            # SIGXCPU at the soft CPU limit, SIGKILL at the hard one
            return "timeout", f"CPU-time limit of {limits.cpu_seconds} s"
        if sig == signal.SIGXFSZ:
            return "resource_limit", f"file-size limit of {limits.file_mb} MB"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return "runtime_error", f"killed by {name}"
    if "MemoryError" in output:
        return "resource_limit", "MemoryError: the memory limit was reached"
    last = output.strip().splitlines()[-1:] or [f"exit status {code}"]
    return "runtime_error", last[0][:300]


def _kill_all(pid: int, uid: int | None) -> None:
    """Kill the sample's process group and, with a user of its own, every process of that user."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if uid is not None:
        # kill(-1) signals every process the caller may signal: as the sample's user, exactly the
        # processes the sample started, wherever they moved (setsid, double fork)
        subprocess.run(
            ["/bin/sh", "-c", "kill -9 -1"],
            user=uid,
            group=uid,
            extra_groups=[],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def _tail(path: str, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_many(
    sources: Sequence[str],
    limits: Limits | None = None,
    workers: int = 2,
    on_done: Callable[[int, RunResult], None] | None = None,
    *,
    output_bytes: int = 0,
) -> list[RunResult]:
    """Run several programs, at most ``workers`` at a time; results in the order given."""
    results: list[RunResult | None] = [None] * len(sources)
    if not sources:
        return []

    def one(i: int) -> None:
        results[i] = run_program(sources[i], limits, output_bytes=output_bytes)
        if on_done is not None:
            on_done(i, results[i])  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, range(len(sources))))
    return [r for r in results if r is not None]


def check_program(prompt: str, completion: str, tests: str, entry_point: str | None) -> str:
    """The program that checks a completion: prompt + completion, then the tests.

    HumanEval-style tests define ``check(candidate)``; it is called with the entry point.
    """
    parts = [prompt + completion, "", tests]
    if entry_point and "def check(" in tests:
        parts += ["", f"check({entry_point})"]
    return "\n".join(parts) + "\n"


def unique(items: Iterable[str]) -> list[str]:
    """Distinct items in first-seen order (identical completions are run once)."""
    return list(dict.fromkeys(items))
