"""Running generated code and its tests, one contained process per sample.

Each worker slot has a worker process, ``python -I -S`` started once (inside the private view,
layer 3) and kept; for each sample it forks a fresh child, in a new session, with a fresh
temporary directory as its working directory, ``HOME`` and ``TMPDIR``, waits for its exit on a
pidfd (the wall-clock limit is the wait's timeout), and kills every process the sample left
behind (by killing the init of the sample's pid namespace; without one, as a child subreaper).
As root the child goes to namespaces the worker made for it, next to an init that costs no copy
of the worker. Where a core is left over for it (more cores than workers), the child is forked
ahead, while the previous sample runs, and waits on a pipe for its sample; else when the request
comes (a live child makes the worker copy every page it writes, and on cores the workers already
fill the head start buys nothing).
A worker that dies or stops answering is replaced; it ends when cctest closes its stdin. cctest
sends a worker its next request while a sample runs, so that the worker does not wait for cctest
between samples; the worker makes the next sample's directory, holding its program, only once the
sample before is gone and everything it wrote removed (a worker that cannot remove it hands the
request back and ends), so that no sample sees another's files. Each
sample imports the standard library and, read-only, the packages installed where cctest itself
runs (the running interpreter's ``site-packages``, see :func:`site_packages`; not a user's
``pip install --user`` site, which lives in the home), so an answer or a reference that uses
NumPy runs as it would for its author; ``.pth`` files are not processed, and BLAS libraries are
held to one thread. Containment comes in layers, so that a layer the machine lacks (no
namespaces in a container, not root in CI) leaves the others in place:

1. **Limits** (always; ``resource.setrlimit`` in the child before the sample runs): CPU seconds
   (``RLIMIT_CPU``), address space (``RLIMIT_AS``), size of any file written (``RLIMIT_FSIZE``),
   number of processes (``RLIMIT_NPROC``), no core dumps. The worker adds a wall-clock timeout.
2. **Clean-up** (always): on timeout, and after every sample, the worker kills every process the
   sample left (with a pid namespace, by killing the namespace's init; without, they are
   re-parented to the worker, a subreaper, whatever session they moved to), so a process the
   sample forked does not outlive it. The samples' directories live
   under one directory per cctest process, locked while that process lives; a later run removes
   the directories of a process that was killed before it could.
3. **Private filesystem view** (when bubblewrap, ``bwrap``, is installed and the kernel lets it
   make namespaces): the sample sees a read-only ``/usr`` (and the ``/bin``, ``/lib``… links into
   it), the few files in ``/etc`` the dynamic loader reads, the interpreter's own ``lib``
   directory, the ``site-packages`` directories (read-only; of the directories leading to them,
   as of those leading to the interpreter, only the way through shows, not what lies beside it),
   fresh ``/proc`` and ``/dev`` (read-only, with a sized ``/dev/shm`` of its own), and its own
   directory, writable; nothing else exists for it: no
   ``/root``, no ``/home`` (but such a way through), no other ``/tmp`` entry, no ``/etc/shadow``.
   Bubblewrap also gives it new network, pid, IPC and UTS namespaces, and kills it when cctest
   dies. Where bubblewrap cannot run, one warning is logged and the sample sees the host's files
   with the rights of its user (the layers below still apply).
4. **Own user, no capabilities** (when cctest runs as root): the kernel does not enforce
   ``RLIMIT_NPROC`` for root, so the child drops to a user id of its own (unused by anything
   else, one per sample) and keeps no capability, not even in its bounding set, with
   ``no_new_privs`` set. The process limit then counts exactly the sample's processes, the sample
   can neither read nor write what root keeps to itself.
   Without the private view, an interpreter installed under a directory only root may enter
   (``/root/.pyenv``) is reached through directory descriptors opened before the drop.
5. **No network, own pids** (when the kernel allows it): each sample runs in an empty network
   namespace (a socket has no route anywhere, loopback included): as root, the worker's own, made
   once and used by its samples alone, one after another (none can change it, and nothing of a
   sample stays in it); without root, the same in a user namespace the worker makes for itself
   (where the kernel refuses one, one of the sample's own). It enters new IPC and UTS namespaces, and a pid
   namespace whose end kills every process left in it; in a mount namespace of its own, its
   ``/proc`` is that pid namespace's (``hidepid=2``), so it lists itself and its children only
   (not the worker, the inits or the next sample's process, which the ``/proc`` of the view or of
   the host shows), under the pids it knows itself by. Without root, these namespaces belong to a
   user namespace (the worker's, or the sample's own), whose capabilities (over those namespaces
   only) the sample gives up before its program runs: it holds none either.
6. **Audit hook** (always; ``sys.addaudithook``, which Python code cannot remove): refuses to
   create internet sockets or connect/bind, to start programs (``subprocess``, ``os.system``,
   ``exec``, ``spawn``), to load native libraries through ``ctypes``, to signal other processes,
   and to write, create, delete, rename or change files outside the sample's directory.
7. **Landlock** (where the kernel has it): the same bound on writes, enforced by the kernel for
   every process of the sample whatever it calls (a program started with
   ``_posixsubprocess.fork_exec``, which raises no audit event; SQLite's own ``open``): it may
   change nothing but the worker's directory, ``/dev/null`` and its kin and a private ``/dev/shm``;
   no TCP; no signal beyond its own processes. Without the view the worker's directory and
   ``/dev/shm`` are sized memory file systems of the worker's own, as in the view.

The threat model is code written by a model that may be wrong or careless (an endless loop, a fork
bomb, a huge list, a stray ``open('/x', 'w')``, a read of a file it has no business with), not an
attacker crafting a kernel escape: a sample runs with the privileges that remain after the layers
above, in the same kernel. Its verdict goes to the worker on a pipe whose descriptor is out of its
process while its program runs (in flight over a socket pair, taken back after the program), so a
program that writes a verdict of its own to its descriptors reaches no one; an audit hook
(``verdict_guard``) hands the descriptor back only to the harness's own frames, so a program that
calls the harness's report through frames it found reports nothing (docs/bench.md).

Each run ends in one outcome: ``passed``, ``syntax_error``, ``runtime_error``,
``assertion_failure``, ``timeout`` (wall clock or CPU time) or ``resource_limit`` (memory, file
size, process count).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import fcntl
import functools
import itertools
import json
import logging
import os
import secrets
import select
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


# The worker: started once per slot (inside bubblewrap's private view when there is one), it
# forks a fresh child per sample. Passed with ``-c`` so that nothing on disk has to be readable by
# the sandbox's user. Argument: a JSON object ("site": the package directories, "view": "bwrap"
# inside bubblewrap's view, "host" otherwise, "preload": modules to import once, "area": the
# worker's directory, where each sample's directory is made). It reads one request per line on
# stdin (the sample's name, its program, its user id, its limits, how much of its output to
# return) and answers one line on stdout, in order: how the sample ended (``status``,
# ``timed_out``, ``report``, ``seconds``, ``output``, ``said``), or ``{"retry": true}`` for a
# request it did not run (it could not empty its directory after the sample before, and ends).
# cctest may send the next request before the answer: the worker reads it only once the sample
# before is gone with everything it wrote.
# The errors (by errno name) that mean a sample ran out of something it was given (processes,
# file size, memory, open files, space) rather than failed: ``resource_limit`` for a bench sample,
# ``resource_exhaustion`` for a task's answer. Every program run in the sandbox (the worker's
# harness, the task oracle's and the syntactic suite's drivers, HumanEval+'s driver) reads it from
# here, so that they cannot drift apart.
RESOURCE_ERRNOS = ("EAGAIN", "EFBIG", "ENOMEM", "EMFILE", "ENFILE", "ENOSPC", "EDQUOT")

_WORKER = r"""
import _socket, ctypes, errno, gc, json, marshal, os, resource, select, signal, stat, sys, time, types
cfg = json.loads(sys.argv[1])
AREA = cfg["area"]
# the packages of cctest's own environment, after the standard library so they cannot shadow it
sys.path.extend(p for p in cfg["site"] if p not in sys.path)
for name in cfg["preload"]:  # what samples commonly import, imported once for every fork
    try:
        __import__(name)
    except Exception:
        pass
bwrap = cfg["view"] == "bwrap"
ROOT = os.geteuid() == 0
# the C library's functions, from the interpreter's own global symbols (``ctypes.util`` would
# bring subprocess, shutil and threading into every sample's fork, and 20 ms to the start)
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_CAPBSET_DROP = 1, 4, 15, 24
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID = 0x40000000, 0x10000000, 0x20000000
CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNS = 0x08000000, 0x04000000, 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
with open("/proc/sys/kernel/cap_last_cap") as f:
    LAST_CAP = int(f.read())
# capget's arguments (version 3: two 32-bit words of effective, permitted, inheritable), made once
CAP_HEADER = (ctypes.c_uint32 * 2)(0x20080522, 0)
CAP_DATA = (ctypes.c_uint32 * 6)()
# Without root, the worker makes a user namespace of its own (the user's ids mapped to
# themselves), in which it holds every capability, and a pid namespace whose first process it is:
# it then makes its samples' namespaces itself, as root does (NSROOT), instead of each sample's
# first process making a user namespace, a network namespace and two more forks of its own. The
# process that made them only waits for it. Where the kernel refuses, samples make their own.
NSROOT = ROOT
if not ROOT and libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0:
    try:
        uid, gid = os.getuid(), os.getgid()
        with open("/proc/self/setgroups", "w") as f: f.write("deny")
        with open("/proc/self/uid_map", "w") as f: f.write("%d %d 1" % (uid, uid))
        with open("/proc/self/gid_map", "w") as f: f.write("%d %d 1" % (gid, gid))
        worker = os.fork()
    except OSError as exc:  # (half made: its children would go to a pid namespace without init)
        os.write(2, ("cctest sandbox: no user namespace for the worker: %r\n" % (exc,)).encode())
        os._exit(1)
    if worker > 0:
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0); os.dup2(null, 1)  # (cctest's pipes close with the worker alone)
        code = os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
        os._exit(128 - code if code < 0 else code)
    # pid 1 of its pid namespace, with a /proc of it (the pids its children have) in a mount
    # namespace of its own, private
    NSROOT = (
        libc.unshare(CLONE_NEWNS) == 0
        and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0
        and libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0)
# Without the view, the worker's directory and /dev/shm are memory file systems of its own,
# sized, in a mount namespace of its own (as root, made now; without root, the one made above),
# as bubblewrap's view gives them: whatever a sample's processes write there, by whatever call,
# is bounded, and the host's /dev/shm, writable by everyone, is out of their sight
PRIVATE_SHM = bwrap and cfg["shm_private"]
if not bwrap and (NSROOT if not ROOT else libc.unshare(CLONE_NEWNS) == 0 and libc.mount(
        b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0):
    libc.mount(b"tmpfs", AREA.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
               b"size=%dm,mode=755" % cfg["area_mb"])
    PRIVATE_SHM = os.path.isdir("/dev/shm") and libc.mount(
        b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=%dm,mode=755" % cfg["shm_mb"]) == 0
# whether a mount made in a copy of this mount namespace could reach the original (a shared
# mount: the host's, with systemd; bubblewrap's view has none): then a sample's copy is made
# private before its /proc is mounted (own_proc)
with open("/proc/self/mountinfo") as f:
    SHARED_MOUNTS = " shared:" in f.read()
# Landlock (where the kernel has it): a ruleset made once, which each sample's process enforces on
# itself before its program runs: of the file system it may change only the worker's directory
# (its own, with nothing else in it while it runs), /dev/null and its kin, and a private /dev/shm;
# no TCP; no signal or abstract socket beyond its own processes. The kernel enforces it for every
# process it starts, whatever it calls (the audit hook sees only Python's own calls)
LL_FS_WRITES = [(1, 0x1ff2), (2, 0x2000), (3, 0x4000)]  # (ABI, rights): write, remove, make; refer; truncate
LANDLOCK = -1
LL_ABI = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)
if LL_ABI >= 1:
    fs = sum(bits for abi, bits in LL_FS_WRITES if LL_ABI >= abi)
    attr = (ctypes.c_uint64 * 3)(fs, 0x3 if LL_ABI >= 4 else 0, 0x3 if LL_ABI >= 6 else 0)
    LANDLOCK = libc.syscall(444, attr, 8 * (3 if LL_ABI >= 6 else 2 if LL_ABI >= 4 else 1), 0)
    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
    places = [(AREA, fs)] + [(d, fs & 0x4002) for d in ("/dev/null", "/dev/zero", "/dev/full")]
    places += [("/dev/shm", fs)] if PRIVATE_SHM else []
    for place, allowed in places if LANDLOCK >= 0 else ():
        try:
            fd = os.open(place, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = Beneath(allowed, fd)
        if libc.syscall(445, LANDLOCK, 1, ctypes.byref(rule), 0) != 0 and place == AREA:
            os.close(LANDLOCK); LANDLOCK = -1  # (without its own directory a sample could not run)
        os.close(fd)
        if LANDLOCK < 0:
            break
# every process a sample leaves behind is re-parented to the worker, which kills it (clean_up)
libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
if not NSROOT:
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a sample of the same user cannot trace the worker
else:
    # (dumpable: a sample holds no capability, the worker and the inits every one, so it cannot
    # trace them, and a child must open its init's namespaces.) An empty bounding set, inherited
    # by every sample: what it runs can never gain a capability (the worker keeps its own, which
    # it needs, and never runs another program)
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
# the interpreter may live under a directory only root may enter (/root/.pyenv): as root without
# the private view, the standard library stays reachable through descriptors opened now
PATH_FDS = {}
if ROOT and not bwrap:
    for entry in sys.path:
        if os.path.isdir(entry):
            PATH_FDS[entry] = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
       # a BLAS thread pool (NumPy's) would spend the process limit and the address space
       "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# the samples' environment, made once: each sample adds its HOME and TMPDIR
os.environ.clear()
os.environ.update(ENV)

def relay(status):
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)  # death by signal N leaves as 128 + N

def own_processes():
    n = 0
    me = os.getuid()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                n += os.stat("/proc/" + p).st_uid == me
            except OSError:
                pass
    return n

# As root, the worker makes each sample's IPC, UTS and pid namespaces itself, ahead of the sample
# (after answering for the one before, when no sample of it runs): it enters fresh IPC and UTS
# namespaces, and its next child is the init of a fresh pid namespace. The
# child after it, the sample's process, is the worker's own child in that namespace (pid 2), so a
# sample costs one fork of the worker's image. The init only has to exist: on x86-64 it is a
# clone that shares the worker's memory and descriptor table (no copy of either) and blocks in
# ``pause`` until the worker kills it, with SIGCHLD ignored, so that whatever the sample leaves
# behind (orphans come to the init, not to the worker, which is in the parent namespace) is
# reaped by the kernel; elsewhere it is a fork that reaps (``be_init``). When the init dies the
# kernel kills every process left in the namespace. Without root the worker does the same in a
# user namespace of its own (NSROOT); where the kernel gives it none, the sample's first process
# makes its namespaces, a user namespace of its own among them, as below.
NS_ALL = CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
# The network namespace is the worker's, made once, empty (no interface up, loopback included),
# and shared by its samples only, one after another: a sample cannot change it (no capability in
# it) and leaves nothing in it (its sockets close when its processes die, all of them before the
# next sample gets its request), so a fresh one per sample (its creation, and the kernel's
# cleanup_net after it, about 1 ms of CPU a sample) would isolate no better. IPC objects outlive
# their processes: the IPC namespace stays one per sample. Where it cannot be made, each sample
# gets a network namespace of its own, as before.
if NSROOT and libc.unshare(CLONE_NEWNET) != 0:
    NS_ALL |= CLONE_NEWNET
# (a new pid namespace for the children can be asked for only while the children's is the
# worker's own: entering its own again, by a descriptor opened now, resets that)
OWN_PIDNS = os.open("/proc/self/ns/pid", os.O_RDONLY) if NSROOT else -1
ready = None  # the namespaces the next child gets (NS_ALL), or None: it makes its own

ns_init = 0  # the init of the pid namespace the next child goes to (0: none made)
ns_mnt = False  # whether that init also holds a fresh mount namespace for the child to enter
CLONE_VM, CLONE_FILES = 0x100, 0x400
SYS_PAUSE = {"x86_64": 34}.get(os.uname().machine)
STACKS = {}  # each cloned init's stack, kept for the next init when it is reaped
FREE_STACKS = []
if NSROOT and SYS_PAUSE:
    libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    SYSCALL = ctypes.cast(libc.syscall, ctypes.c_void_p)  # syscall(SYS_PAUSE): touches no memory

def prepare():
    # fresh namespaces, and the init of the pid one, for the next child the worker forks (none
    # made while those made before wait for their child: each pid namespace gets one child of the
    # worker, which the worker reaps before it kills the init, whose end waits for that reaping)
    global ready, ns_init, ns_mnt
    if ns_init:
        return
    ready, ns_init, ns_mnt = None, 0, False
    if not (NSROOT and libc.setns(OWN_PIDNS, CLONE_NEWPID) == 0 and libc.unshare(NS_ALL) == 0):
        return
    if SYS_PAUSE:
        stack = FREE_STACKS.pop() if FREE_STACKS else ctypes.create_string_buffer(16384)
        # (no sample runs now, whose exit would be reaped by the kernel while SIGCHLD is ignored)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        try:
            # with a mount namespace of its own (a copy of the worker's), which the child enters
            # for its /proc (own_proc): held by the init, it is torn down when the init dies,
            # after the answer, not when the sample's last process exits, before it (a mount
            # namespace's end waits for an expedited RCU grace period, every core interrupted)
            for flags in (CLONE_NEWNS, 0):
                pid = libc.clone(SYSCALL, ctypes.addressof(stack) + 16384 - 64,
                                 CLONE_VM | CLONE_FILES | flags | signal.SIGCHLD, SYS_PAUSE)
                if pid > 0:
                    ns_mnt = bool(flags)
                    break
        finally:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if pid > 0:
            STACKS[pid] = stack
    else:
        pid = os.fork()
        if pid == 0:
            be_init()
    if pid > 0:
        ready, ns_init = NS_ALL, pid
    else:
        libc.setns(OWN_PIDNS, CLONE_NEWPID)  # the next child makes its own (as without root)

dying = []  # inits killed with nothing left in their namespace, reaped after the answer

def reap(pid, wait=True):
    # (a cloned init's stack is reused once the init is gone)
    try:
        if not os.waitpid(pid, 0 if wait else os.WNOHANG)[0]:
            return False
    except ChildProcessError:
        pass
    stack = STACKS.pop(pid, None)
    if stack is not None:
        FREE_STACKS.append(stack)
    return True

CHLD = {signal.SIGCHLD}

def own_proc(join=0):
    # the /proc of the sample's own pid namespace, in a mount namespace of its own (called by a
    # process of that pid namespace: a proc mount shows the pid namespace of the process that
    # mounts it). Without it, the sample would see the /proc it inherited: the worker's namespace
    # (bubblewrap's, or the host's), the worker, the inits, the next sample's process. With
    # ``hidepid=2`` it shows only what the sample's user may trace: as root, where the sample has a
    # user of its own, the sample and its children (not the namespace's init). bubblewrap's
    # read-only covers of /proc/irq and /proc/bus go under it: the sample's user (not root, no
    # capability; an ordinary user's, unprivileged outside its namespaces) may write none of them.
    # The mount namespace is a copy of the view's (a few dozen mounts): the one the namespace's
    # init was cloned with (``join``: its pid), else a new one, which ends with the sample's last
    # process; done ahead of the sample, with the rest of the child's setup
    if join:
        fd = os.open("/proc/%d/ns/mnt" % join, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNS) != 0:
                return False
        finally:
            os.close(fd)
    elif libc.unshare(CLONE_NEWNS) != 0:
        return False  # (no mount namespaces here: a container's kernel, user namespaces refused)
    if SHARED_MOUNTS and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    return libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=2") == 0

def be_init():
    # the pid namespace's init, forked (where it cannot be cloned): it holds no descriptor (the
    # sample's request pipe must close when the worker closes it), dies with the worker, and reaps
    # what the sample leaves behind
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        os.closerange(0, 1 << 16)
        signal.pthread_sigmask(signal.SIG_BLOCK, CHLD)
        while True:
            signal.sigwait(CHLD)
            try:
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                pass
    finally:
        os._exit(0)

def child(req_fd, result_fd, made, mnt):
    # the sample's first process, forked ahead of its sample where a core is free for it (a warm
    # child, made while the previous sample runs), else when its request comes: a session of its
    # own, only its own descriptors, its namespaces; then it reads
    # its request (until the worker closes ``req_fd``) and takes its directory and a fresh
    # environment. ``made``: already in its namespaces, next to their init
    if not NSROOT:  # (the worker made itself undumpable: see above)
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    os.setsid()
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0); os.dup2(null, 1); os.dup2(null, 2)
    low = 3  # every descriptor but these goes (close_range: one system call a gap)
    for fd in sorted({req_fd, result_fd, *PATH_FDS.values(), *([LANDLOCK] if LANDLOCK >= 0 else [])}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    iso = {"network": "audit-hook", "user": "same", "nproc": "rlimit", "ipc": "shared",
           "filesystem": "private view (bubblewrap)" if bwrap else "host",
           "process": "fork of a sandboxed worker" if bwrap else "fork of a worker"}
    # fresh network, pid, IPC and UTS namespaces for this sample alone
    pidns, userns = bool(made), False
    if made:
        iso["network"], iso["ipc"] = "namespace", "namespace"
    try:
        if made:
            raise StopIteration  # nothing to make
        common = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
        if NSROOT:
            tries = [common | CLONE_NEWPID, CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWNET]
        else:
            tries = [CLONE_NEWUSER | common | CLONE_NEWPID, CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID,
                     CLONE_NEWUSER | CLONE_NEWNET]
        uid, gid = os.getuid(), os.getgid()
        for flags in tries:
            if libc.unshare(flags) == 0:
                if flags & CLONE_NEWUSER:
                    userns = True
                    with open("/proc/self/setgroups", "w") as f: f.write("deny")
                    with open("/proc/self/uid_map", "w") as f: f.write(f"{uid} {uid} 1")
                    with open("/proc/self/gid_map", "w") as f: f.write(f"{gid} {gid} 1")
                iso["network"] = "namespace"
                pidns = bool(flags & CLONE_NEWPID)
                if flags & CLONE_NEWIPC:
                    iso["ipc"] = "namespace"
                break
    except StopIteration:
        pass
    except Exception as exc:  # no namespaces here: the audit hook still refuses sockets
        iso["network_error"] = repr(exc)[:200]
    iso["pid"] = "namespace" if pidns else "process group"
    iso["proc"] = "inherited"
    if made and own_proc(mnt):  # (already in the sample's pid namespace: it is its pid 2)
        iso["proc"] = "own pid namespace"
    if pidns and not made:
        # the next child is the namespace's init: when it exits, the kernel kills every process
        # left in the namespace, however the sample detached them. The init only waits, so the
        # sample (its child) is an ordinary process that signals and limits treat as usual.
        init = os.fork()
        if init:
            relay(os.waitpid(init, 0)[1])
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the worker's kill reaches it
        if own_proc():  # (the init is the pid namespace's first process; the sample shares its view)
            iso["proc"] = "own pid namespace"
        # the sample's process is forked ahead too: it reads the request, the init only waits
        sample = os.fork()
        if sample:
            os.close(req_fd)
            while True:
                try:
                    pid, status = os.waitpid(-1, 0)
                except ChildProcessError:
                    os._exit(1)
                if pid == sample:
                    relay(status)
    raw = b""
    while True:
        chunk = os.read(req_fd, 65536)
        if not chunk:
            break
        raw += chunk
    if not raw:
        os._exit(0)  # the worker is gone, or stops: no sample for this one
    os.close(req_fd)
    req = marshal.loads(raw)
    wd = req["dir"]
    out = os.open(os.path.join(wd, ".out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1); os.dup2(out, 2); os.close(out)
    os.chdir(wd)
    if os.environ.get("HOME") != wd:  # (the rest of ENV is the worker's own)
        os.environ["HOME"] = os.environ["TMPDIR"] = wd
    existing = 0 if NSROOT or userns else own_processes()
    run_sample(req, result_fd, iso, existing, userns, pidns)

# what the audit hook looks at (made once, before the worker forks)
RESOURCE_ERRNOS = {getattr(errno, name) for name in cfg["resource_errnos"] if hasattr(errno, name)}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
               "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "shutil.rmtree", "os.mkfifo",
               "os.mknod"}
TWO_PATH_EVENTS = {"os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.copymode",
                   "shutil.copystat", "shutil.copytree", "shutil.move"}
NO_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn",
             "os.startfile", "ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function",
             "socket.getaddrinfo", "socket.gethostbyname", "socket.connect", "socket.bind",
             "socket.sendto", "os.forkpty"}
AF_UNIX = 1  # (Linux's; not imported from socket: every fork would carry that module)
SAMPLE_DIR = None  # the sample's directory (set in its process)

def inside(p):
    if isinstance(p, int) or p is None:
        return True
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    p = os.path.realpath(os.path.join(SAMPLE_DIR, p))
    return p == SAMPLE_DIR or p.startswith(SAMPLE_DIR + os.sep) or p in HARMLESS
HARMLESS = ("/dev/null", "/dev/zero", "/dev/full")  # (devices Landlock lets it write too)
def deny(what):
    raise PermissionError("cctest sandbox: " + what + " is not allowed")
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
        # (-1: a socket made on a descriptor, or the default family: the verdict's guard decides)
        if args[1] != AF_UNIX and args[1] != -1:
            deny("network access")
    elif event in NO_EVENTS:
        deny("network access" if event.startswith("socket") else event)
    elif event in ("os.kill", "os.killpg"):
        if args[0] not in (0, os.getpid()):
            deny("signalling another process")

SCM = (_socket.SOL_SOCKET, _socket.SCM_RIGHTS)
FD_SPACE = _socket.CMSG_SPACE(4)

def hide(fd):
    # the verdict's descriptor out of the process while the sample's program runs: sent, in flight,
    # over a socket pair whose other end is kept (non-blocking) to take it back afterwards. No
    # descriptor of the process then leads to the worker's verdict pipe, so the program cannot
    # write a verdict of its own there; and the end kept is a bare descriptor, which only a socket
    # made on it can read the verdict's descriptor from (``guard`` allows that to the harness alone)
    keep, send = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_DGRAM)
    send.sendmsg([b"v"], [(SCM[0], SCM[1], fd.to_bytes(4, sys.byteorder))])
    send.close(); os.close(fd)
    keep.setblocking(False)
    return keep.detach()

def take_back(keep, _socket_type=_socket.socket, _space=FD_SPACE, _scm=SCM, _order=sys.byteorder,
              _from_bytes=int.from_bytes, _len=len):
    # the verdict's descriptor again (None where it is gone: read by the program). Only what was
    # bound here when the worker started is called from now on (a program may have replaced the
    # names of builtins and modules): the descriptor is in this frame's locals
    try:
        sock = _socket_type(fileno=keep)
        _, ancillary, _, _ = sock.recvmsg(1, _space)
    except OSError:
        return None
    for level, kind, data in ancillary:
        if (level, kind) == _scm and _len(data) >= 4:
            return _from_bytes(data[:4], _order)
    return None

def quiet(_signal=signal.signal, _ign=signal.SIG_IGN, _range=range, _disable=gc.disable):
    # no code of the program's may run on top of the harness once it holds the verdict's
    # descriptor: no signal handler of its, no finaliser run by a collection
    _disable()
    for sig in _range(1, 65):
        try:
            _signal(sig, _ign)
        except (OSError, ValueError, RuntimeError):
            pass

FRAME_EVENTS = {"sys._current_frames", "sys.addaudithook", "gc.get_objects", "gc.get_referrers",
                "gc.get_referents"}

def verdict_guard(chain, report, _getframe=sys._getframe, _gettrace=sys.gettrace,
                  _getprofile=sys.getprofile, _events=FRAME_EVENTS, _error=PermissionError, _none=None):
    # The audit hook that keeps the verdict the harness's alone. The verdict's descriptor is read
    # back by ``take_back`` with a socket made on the descriptor kept (``hide``); this hook allows
    # that socket only when the frames that ask for it are exactly the harness's own (``chain``,
    # their code objects from ``take_back`` down to the worker's module), as after the program has
    # run to its end or raised, and not when the program calls into the harness (its frames would
    # be in between), from a thread, a finaliser or a callback (the chain's bottom is elsewhere).
    # A "passed" is not taken back once a trace or profile function of the program's has run
    # (it could have jumped over the tests); doctest's restoring of no trace function is allowed.
    # It also refuses what could change that chain or what runs in it: the frames of other
    # threads, collected objects, another audit hook, a function's code or defaults replaced, and
    # ctypes' memory access. Everything it uses is bound here, so replaced names change nothing.
    def guard(event, args, _chain=chain, _report=report, _getframe=_getframe, _gettrace=_gettrace,
              _getprofile=_getprofile, _events=_events, _error=_error, _none=_none, _traced=[],
              _take_back=take_back, _quiet=quiet, _write=os.write):
        if event == "socket.__new__":
            if args[1] != -1:
                return
            frame = _getframe(1)
            reporting = frame.f_back
            caller = reporting.f_back if reporting is not _none else _none
            codes = ()
            while frame is not _none:
                codes += (frame.f_code,)
                frame = frame.f_back
            if codes != _chain or caller is _none or caller.f_locals.get("report") is not _report:
                raise _error("cctest sandbox: network access is not allowed")
            if reporting.f_locals.get("outcome") == "passed" and (
                _traced or _gettrace() is not _none or _getprofile() is not _none
            ):
                # said last on the program's output, which the verdict's detail then shows
                _write(2, b"\ncctest sandbox: not passed: a trace or profile function of the program's "
                          b"ran, which can jump over the tests\n")
                raise _error("cctest sandbox: a trace function ran")
        elif event == "sys.settrace" or event == "sys.setprofile":
            if _gettrace() is not _none or _getprofile() is not _none:
                _traced.append(event)  # (one was set, and is being replaced or removed)
        elif event in _events or event[:7] == "ctypes.":
            raise _error("cctest sandbox: " + event + " is not allowed")
        elif event == "object.__setattr__" and (args[0] is _report or args[0] is _take_back
                                                or args[0] is _quiet):
            raise _error("cctest sandbox: changing the harness's functions is not allowed")
    return guard

def run_sample(req, result_fd, iso, existing, userns, pidns):
    MAIN = os.getpid()
    # the code objects of the frames the harness reports from: take_back's, report's, then this
    # function's and its callers' down to the worker's module
    below = ()
    frame = sys._getframe(0)
    while frame is not None:
        below += (frame.f_code,)
        frame = frame.f_back
    channel = [result_fd, None]  # the verdict's descriptor, or the descriptor it is hidden behind
    def report(outcome, detail="", _write=os.write, _quiet=quiet, _take_back=take_back, _str=str,
               _type=type, _encode=json.encoder.encode_basestring_ascii, _getpid=os.getpid,
               _listdir=os.listdir, _len=len, _fork=os.fork, _waitpid=os.waitpid, _exit=os._exit):
        if _getpid() != MAIN:
            return  # a process the sample forked: only the sample itself reports
        try:  # what it printed before it failed too (os._exit, next, flushes nothing)
            sys.stdout.flush(); sys.stderr.flush()
        except Exception:
            pass
        try:
            _quiet()
            if channel[1] is None:
                fd = channel[0]
            else:
                # a thread of the program's could write to every descriptor while this one holds
                # the verdict's, where threads run side by side (a free-threaded Python; with the
                # GIL nothing here lets one in): where the process has more than this thread, a
                # fork of it (this thread alone) takes the descriptor back and writes
                try:
                    alone = _len(_listdir("/proc/self/task")) == 1
                except OSError:
                    alone = False
                if not alone:
                    pid = _fork()
                    if pid:
                        _waitpid(pid, 0)
                        return
                fd = _take_back(channel[1])
            if fd is not None:
                # the record made with what was bound when the worker started (see take_back)
                fields = ", ".join([_encode(k) + ": " + _encode(v) for k, v in iso.items()
                                    if _type(k) is _str and _type(v) is _str])
                record = '{"outcome": %s, "detail": %s, "isolation": {%s}}' % (
                    _encode(outcome), _encode(detail[:500]), fields)
                _write(fd, record.encode())
            if channel[1] is not None and not alone:
                _exit(0)
        except (OSError, ValueError, TypeError):
            pass
    libc.prctl(PR_SET_NAME, req["name"].encode()[:15], 0, 0, 0)  # what ps shows of it
    # a user of our own when root, so that RLIMIT_NPROC applies and root's files are out of reach
    lim = req["limits"]
    nproc = lim["processes"]
    if req.get("uid") is not None and ROOT:
        if PATH_FDS:
            sys.path[:] = ["/proc/self/fd/%d" % PATH_FDS[p] if p in PATH_FDS else p for p in sys.path]
            sys.path_importer_cache.clear()
        # without PR_SET_KEEPCAPS, leaving uid 0 clears the permitted, effective and ambient sets
        os.setgroups([]); os.setgid(req["uid"]); os.setuid(req["uid"])
        # changing user makes the process undumpable, which hands /proc/self to root; take it back
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        iso["user"] = "uid %d" % req["uid"]
    elif userns or NSROOT:
        # the count is that of the user namespace, the sample's own (its first process and init)
        # or the worker's (every process in it)
        nproc += 2 if userns else req["existing"]
        iso["userns"] = "its own" if userns else "the worker's"
        # the capabilities the user namespace gave (over its own namespaces: to make them) go,
        # none is needed from here on; with no_new_privs (below) none can come back
        for i in range(6):
            CAP_DATA[i] = 0
        libc.capset(CAP_HEADER, CAP_DATA)
    else:
        # the limit counts every process of this user, so allow the ones that already exist
        nproc += existing
        iso["nproc"] = "rlimit (%d existing processes of this user)" % existing
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nothing it runs can gain a privilege
    # the capabilities it holds, asked of the kernel (capget: a system call, where /proc/self/status
    # costs a file's reading and parsing); none permitted means none ambient either (the kernel
    # keeps ambient ones within the permitted), else what it holds is read from /proc
    if libc.capget(CAP_HEADER, CAP_DATA) == 0 and not any(CAP_DATA[i] for i in (0, 1, 3, 4)):
        iso["capabilities"] = "none"
    else:
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
        held = [k for k in ("CapEff", "CapPrm", "CapAmb") if int(status.get(k, "0"), 16)]
        caps = ", ".join("%s %s" % (k, status[k].strip()) for k in held)
        iso["capabilities"] = caps or "none"

    # limits
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_seconds"], lim["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memory_mb"] * mb, lim["memory_mb"] * mb))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_mb"] * mb, lim["file_mb"] * mb))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write then fails with EFBIG
    # what it may change, enforced by the kernel (with no_new_privs, set above)
    iso["writes"] = "audit hook"
    if LANDLOCK >= 0:
        if libc.syscall(446, LANDLOCK, 0) == 0:
            iso["writes"] = "landlock (ABI %d)" % LL_ABI
        os.close(LANDLOCK)

    # the audit hook (defined once, in the worker, for the directory set now)
    global SAMPLE_DIR
    SAMPLE_DIR = os.path.realpath(req["dir"])

    try:
        code = compile(req["source"], "sample.py", "exec")
    except (SyntaxError, ValueError) as exc:
        report("syntax_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
    # a module of its own as __main__, as in a fresh interpreter (the worker's is not its business)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    sys.argv = ["sample.py"]
    channel[1] = hide(result_fd)
    sys.addaudithook(hook)
    sys.addaudithook(verdict_guard((take_back.__code__, report.__code__) + below, report))
    try:
        exec(code, main.__dict__)
    except AssertionError as exc:
        report("assertion_failure", ("AssertionError: %s" % exc).strip()); os._exit(1)
    except MemoryError:
        report("resource_limit", "MemoryError: the memory limit was reached"); os._exit(1)
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            report("resource_limit", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
        report("runtime_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
    except SystemExit as exc:
        # exit() before the tests finished must not count as passing them
        report("runtime_error", "SystemExit(%r) before the tests finished" % (exc.code,)); os._exit(1)
    except BaseException as exc:
        report("runtime_error", "%s: %s" % (type(exc).__name__, exc)); os._exit(1)
    try:
        sys.stdout.flush(); sys.stderr.flush()
    except Exception:
        pass
    report("passed"); os._exit(0)

def leave():
    # cctest is gone: so is everything the worker started (a cloned init would outlive it)
    for kid in children():
        try:
            os.kill(kid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(0)

def children():
    found = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                found += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return found

def clean_up(spare=()):
    # every process of the sample is the worker's descendant, and becomes its child when its
    # parent dies (the worker is a subreaper): kill the children until none is left (but the next
    # sample's warm child and its init, ``spare``)
    while True:
        kids = [pid for pid in children() if pid not in spare]
        if not kids:
            break
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in kids:
            try:
                reap(pid)
            except ChildProcessError:
                pass

def clean_shm():
    # without root the sample could write in the worker's own /dev/shm (its user owns it)
    for name in os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else ():
        p = os.path.join("/dev/shm", name)
        try:
            os.unlink(p)
        except IsADirectoryError:
            __import__("shutil").rmtree(p, ignore_errors=True)
        except OSError:
            pass

def spawn():
    # a warm child for the next sample, in the namespaces made for it (``prepare``: after their
    # init), which no other child gets
    global ready, ns_init, ns_mnt
    prepare()  # (usually made already, after the answer before)
    made, init, mnt = ready, ns_init, ns_init if ns_mnt else 0
    ready, ns_init, ns_mnt = None, 0, False
    req_r, req_w = os.pipe()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(req_w); os.close(r)
            child(req_r, w, made, mnt)
        finally:
            os._exit(70)
    os.close(req_r); os.close(w)
    return pid, init, req_w, r

warm = None

def place(req):
    # the sample's directory, holding its program, made only now: the sample before it is gone
    wd = os.path.join(AREA, req["name"])
    os.mkdir(wd, 0o700)
    path = os.path.join(wd, "sample.py")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        data = req["source"].encode("utf-8", "surrogatepass")
        while data:
            data = data[os.write(fd, data):]
        if req["uid"] is not None and ROOT:
            os.fchown(fd, req["uid"], req["uid"])
            os.chown(wd, req["uid"], req["uid"])
    finally:
        os.close(fd)
    return wd

def tail(wd, n):
    # the end of what the sample printed (its .out, which it may have replaced: only a regular
    # file of one link is read, never through a link)
    if n <= 0:
        return ""
    try:
        fd = os.open(os.path.join(wd, ".out"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return ""
        return os.pread(fd, n, max(0, st.st_size - n)).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW

def emptied():
    # the worker's directory emptied after a sample (every process of which is gone), so that the
    # next sample finds nothing of it. One descriptor at a time, down and back up by "..": no
    # recursion and no path grows, however deep the sample nested its directories, and a
    # directory it took its own rights off is given them back first
    fd = os.open(AREA, DIR_FLAGS)
    down = []  # the names from AREA to fd
    try:
        while True:
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            sub = entry.name
                            break
                        os.unlink(entry.name, dir_fd=fd)
                    except OSError:
                        pass
            if sub is not None:
                try:
                    os.chmod(sub, 0o700, dir_fd=fd)
                except OSError:
                    pass
                inner = os.open(sub, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = inner
                down.append(sub)
                continue
            if not down:
                return not os.listdir(fd)
            outer = os.open("..", DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = outer
            os.rmdir(down.pop(), dir_fd=fd)  # (what would not go makes it fail: the worker ends)
    except OSError:
        return False
    finally:
        os.close(fd)

def run(req):
    global warm
    wd = place(req)
    if warm is None:
        # (the child's environment, set before it is forked: the pages it would copy to set it)
        os.environ["HOME"] = os.environ["TMPDIR"] = wd
        warm = spawn()
    pid, init, req_w, r = warm
    # without root, in the worker's user namespace, the process limit counts its every process
    # (the process that made it included): the sample is allowed its own beyond them
    existing = 0 if ROOT or not NSROOT else 1 + sum(p.isdigit() for p in os.listdir("/proc"))
    if req["ahead"]:
        # the next child's namespaces made while this one still waits for its request: making the
        # init ignores SIGCHLD for a moment, when the kernel would reap a child of the worker that
        # exits, and the sample's exit would be lost
        prepare()
    os.write(req_w, marshal.dumps({"dir": wd, "source": req["source"], "uid": req["uid"],
                                   "limits": req["limits"], "name": req["name"],
                                   "existing": existing}))
    os.close(req_w)
    # the next sample's child, forked now to make itself ready while this one runs where a core is
    # free for it (``ahead``); else when its request comes: every page the worker writes while a
    # child of it lives is copied, and on a busy machine the head start buys nothing
    warm = spawn() if req["ahead"] else None
    start = time.monotonic()
    deadline = start + req["limits"]["wall_seconds"]
    timed_out = False
    # wait for the exit on a pidfd: no polling, no sleep; stdin closing means cctest is gone
    poller = select.poll()
    pidfd = os.pidfd_open(pid)
    poller.register(pidfd, select.POLLIN)
    # (its hang-up only: the next request may be waiting there already)
    poller.register(0, select.POLLHUP)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        events = poller.poll(max(1, int(left * 1000 + 1)))
        if any(fd == pidfd for fd, _ in events):
            break
        if events:  # cctest is gone
            leave()
    os.close(pidfd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    status = os.waitpid(pid, 0)[1]
    seconds = time.monotonic() - start
    if init:
        # the sample's processes cannot leave its pid namespace, and once the sample is gone
        # (reaped: the init's exit waits for every process of its namespace to be reaped) each of
        # them is the init's child or a descendant of one. With none, the namespace is empty and
        # the init is reaped after the answer; else its death kills them, waited for now
        left = True
        try:
            fd = os.open("/proc/%d/task/%d/children" % (init, init), os.O_RDONLY)
            try:
                left = bool(os.read(fd, 64).strip())
            finally:
                os.close(fd)
        except OSError:
            pass
        os.kill(init, signal.SIGKILL)
        if left:
            reap(init)
        else:
            dying.append(init)
    else:
        clean_up(spare=(warm[0], warm[1]) if warm else ())
    if PRIVATE_SHM and not ROOT:
        clean_shm()
    os.set_blocking(r, False)
    raw = b""
    while True:
        try:
            chunk = os.read(r, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        raw += chunk
    os.close(r)
    return {"status": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "seconds": seconds,
            "report": raw.decode("utf-8", "replace"), "output": tail(wd, req["output"]),
            # (what the sample said last, for cctest to classify an exit without a report)
            "said": "" if raw or timed_out else tail(wd, 4000)}

# what the worker holds now is never collected: a child's collections do not walk it (nor copy
# its pages on write)
compile("def f(x):\n    assert f(x) == [x]\n", "sample.py", "exec")  # the first compile costs ms
gc.collect(); gc.freeze()
prepare()
warm = spawn()
prepare()
buf = b""
clean = True  # whether the worker's directory is empty
while True:
    while b"\n" not in buf:
        chunk = os.read(0, 65536)
        if not chunk:
            leave()
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    if not clean:  # (then cctest runs this sample on another worker and removes the directory)
        os.write(1, b'{"retry": true}\n')
        leave()
    out = (json.dumps(run(json.loads(line))) + "\n").encode()
    while out:
        out = out[os.write(1, out):]
    clean = emptied()
    dying[:] = [pid for pid in dying if not reap(pid, wait=False)]  # (those still ending: later)
    prepare()  # the namespaces of the sample after the next, while cctest reads the answer
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


def close_sandbox() -> None:
    """Stop every worker and remove this process's samples' directory (at exit; Ctrl-C)."""
    _remove_root()


def _remove_root() -> None:
    global _root
    stop_workers(for_good=True)
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
    """Remove ``path`` and everything under it, as far as it can be removed."""
    with contextlib.suppress(RecursionError):  # (shutil recurses: a sample may nest thousands deep)
        shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        with contextlib.suppress(OSError):
            _empty_dir(path)
            os.rmdir(path)


def _empty_dir(path: str) -> None:
    """Remove everything under the directory ``path`` one descriptor at a time, down and back up by
    "..", so that neither the stack nor a path grows with the depth of the tree, giving a directory
    its owner's rights back first (a sample may have taken them off). The worker does the same
    after each sample (its ``emptied``); this is for a worker that could not."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(path, flags)
    down: list[str] = []
    try:
        while True:
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    with contextlib.suppress(OSError):
                        os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700, dir_fd=fd)
                inner = os.open(sub, flags, dir_fd=fd)
                os.close(fd)
                fd = inner
                down.append(sub)
                continue
            if not down:
                return
            outer = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = outer
            os.rmdir(down.pop(), dir_fd=fd)
    finally:
        os.close(fd)


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


def view_args(workdir: str, die_with_parent: bool = True, area_mb: int = 0) -> list[str]:
    """bubblewrap's options for a sample: the private view, ``workdir`` its only writable place.

    A worker is started without ``die_with_parent``: bubblewrap would tie it to the thread that
    started it (``PR_SET_PDEATHSIG``), not to the process; it ends when its stdin closes instead.
    ``area_mb``: ``workdir`` is a memory file system of that size, the view's own, instead of the
    directory on disk (where this bubblewrap can size one)."""
    args = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent"] if die_with_parent else []
    args += ["--ro-bind", "/usr", "/usr"]
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
        if path != workdir:
            args += ["--ro-bind", path, path]
        elif area_mb and _bwrap_sizes_tmpfs():
            args += ["--size", str(area_mb << 20), "--tmpfs", path]
        else:
            args += ["--bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if area_mb and _bwrap_sizes_tmpfs():
        # its own /dev/shm, sized (bubblewrap's is a directory of /dev, the view's user's to fill)
        args += ["--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm"]
    # /dev read-only (its devices still work): without root, the view's user owns it
    args += ["--remount-ro", "/dev", "--chdir", workdir]
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


def _view() -> str | None:
    """bwrap's path for the next worker's view, or None. Before the probe has run, bwrap's path if
    it is installed: the worker's own start inside the view is the check, and the probe runs only
    if such a worker ends before its first answer (``_serve``), so a run does not wait for the
    probe's interpreter to start before its workers start theirs."""
    with _probe_lock:
        if _probed is not None:
            return _probed[0]
    return _bwrap_path() or bubblewrap()


def _view_works(exe: str) -> None:
    """A worker in bwrap's view answered: the view works here (the probe need not run)."""
    global _probed
    with _probe_lock:
        if _probed is None:
            _probed = (exe,)


def _bwrap_path() -> str | None:
    return shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin")


@functools.lru_cache(maxsize=1)
def _bwrap_sizes_tmpfs() -> bool:
    """Whether this bubblewrap can give a memory file system a size (``--size``, since 0.5)."""
    exe = _bwrap_path()
    if exe is None:
        return False
    try:
        said = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in said.stdout + said.stderr


def _probe_bubblewrap() -> str | None:
    exe = _bwrap_path()
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


# ---- the workers: one process per slot, started once, forking a child per sample

# standard modules HumanEval-style programs import, imported once by each worker (not NumPy: its
# BLAS threads and address space would be every sample's). Each module preloaded makes every
# fork dearer (the page tables of its memory are copied, and torn down at the sample's exit), so
# only the common ones are: hashlib (OpenSSL), decimal, fractions, statistics, datetime and socket,
# which few samples use, cost those samples their import instead (measured: about 1 ms less CPU
# per HumanEval sample without them). Not random either: imported, it reseeds itself in every
# child the worker forks (its at-fork hook: about 40 pages copied, 0.16 ms, whether the sample uses
# it or not), where the few samples that use it import it, seeded afresh as in a new interpreter
_PRELOAD = (
    "math",
    "re",
    "collections",
    "itertools",
    "functools",
    "typing",
    "heapq",
    "bisect",
    "string",
    "copy",
    "operator",
)
_IDLE_MAX = 16  # idle workers kept for the next samples; more are stopped
# In bubblewrap's view, the worker's directory (where each sample's directory is made, and emptied
# after it) is a memory file system of the view's own, of at most this many MiB: a sample's files
# never reach the disk, a sample that fills it ends as ``resource_limit`` (ENOSPC), and making and
# removing a sample's files costs no journal (measured: 8% more samples a second, 14 interleaved
# runs of 246 HumanEval samples, twice). Without the view the directory is on disk.
AREA_MB = 256
# The samples' /dev/shm, a memory file system of the view's own (or of the worker's, without the
# view), of at most this many MiB, emptied after each sample; a sample's user may write in it only
# without root (as root it is root's).
SHM_MB = 64
_pool_lock = threading.Lock()
_idle: list[_Worker] = []
_busy: set[_Worker] = set()  # workers running a sample now
_refusing = False  # stopped for good (an interrupted run): no sample starts any more
_started = 0  # workers this process has started
_STOPPED = "the sandbox was stopped (the run was interrupted)"


class _Worker:
    """One worker process (in bubblewrap's view when ``bwrap``): a directory of its own under the
    samples' root that holds the current sample's directory and nothing else, a request pipe
    (its stdin) and an answer pipe (its stdout)."""

    def __init__(self, bwrap: str | None) -> None:
        global _started
        self.bwrap = bwrap
        self.pid = os.getpid()  # the cctest process that owns it (a fork must not use it)
        self.area = tempfile.mkdtemp(prefix="w-", dir=_samples_root())
        # listable: it holds the current sample's directory and nothing else (the samples' root,
        # above it, lists nothing)
        os.chmod(self.area, 0o755)
        cfg = {
            "site": site_packages(),
            "view": "bwrap" if bwrap else "host",
            "preload": list(_PRELOAD),
            "resource_errnos": list(RESOURCE_ERRNOS),
            "area": self.area,
            "area_mb": AREA_MB,
            "shm_mb": SHM_MB,
            "shm_private": bool(bwrap and _bwrap_sizes_tmpfs()),
        }
        command = [_python(), "-I", "-S", "-c", _WORKER, json.dumps(cfg)]
        if bwrap:
            command = [bwrap, *view_args(self.area, die_with_parent=False, area_mb=AREA_MB), "--", *command]
        self._errors = tempfile.TemporaryFile()  # what the worker itself says on stderr, if it fails
        self.proc = subprocess.Popen(
            command,
            cwd=self.area,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            start_new_session=True,
        )
        self._buf = b""  # what the worker answered, not yet read as an answer
        self._out = b""  # requests not yet written to its stdin
        self.broken = False  # its stdin is closed: it takes no more requests
        self.answered = False  # whether it has answered a request
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in_fd, self._out_fd = self.proc.stdout.fileno(), self.proc.stdin.fileno()
        os.set_blocking(self._out_fd, False)  # (written between reads: see receive)
        with _pool_lock:
            _started += 1

    def send(self, request: dict[str, Any]) -> None:
        """Queue one request; it is written while waiting for an answer (``receive``)."""
        self._out += (json.dumps(request) + "\n").encode()

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The answer to the oldest request not answered yet, writing the queued requests
        meanwhile (without blocking on either pipe, so neither side waits for the other with a
        full pipe); None if the worker died or gave no answer within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        poller = select.poll()
        while b"\n" not in self._buf:
            poller.register(self._in_fd, select.POLLIN)
            if self._out and not self.broken:
                poller.register(self._out_fd, select.POLLOUT)
            else:
                with contextlib.suppress(KeyError):
                    poller.unregister(self._out_fd)
            left = deadline - time.monotonic()
            events = poller.poll(max(1, int(left * 1000) + 1)) if left > 0 else []
            if not events:
                return None
            for fd, _ in events:
                if fd == self._out_fd:
                    try:
                        self._out = self._out[os.write(fd, self._out) :]
                    except BlockingIOError:
                        pass
                    except OSError:  # the worker closed its stdin: it ends
                        self.broken, self._out = True, b""
                else:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        return None
                    self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        self.answered = True
        return answer

    def why_not(self) -> str:
        """The last line the worker wrote on stderr (why it died), or its exit status."""
        try:
            self._errors.seek(0)
            said = self._errors.read()[-4000:].decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            said = []
        return said[-1] if said else f"exit status {self.proc.poll()}"

    def alive(self) -> bool:
        return self.proc.poll() is None and self.pid == os.getpid()

    def kill(self) -> None:
        """Kill the worker's session from another thread; the thread waiting for its answer sees
        the pipe close and stops it (``stop``)."""
        if self.pid == os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop the worker and everything it started (its session: bubblewrap, whose end takes the
        worker's pid namespace with it, or the worker and its children)."""
        if self.pid != os.getpid():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self._errors):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()
        _remove_tree(self.area)


def _take_worker(bwrap: str | None) -> _Worker:
    with _pool_lock:
        for i in range(len(_idle) - 1, -1, -1):
            worker = _idle[i]
            if not worker.alive():
                del _idle[i]
                threading.Thread(target=worker.stop, daemon=True).start()
            elif worker.bwrap == bwrap:  # (one of the other kind is kept for its next sample)
                del _idle[i]
                _busy.add(worker)
                return worker
    worker = _Worker(bwrap)
    with _pool_lock:
        _busy.add(worker)
        refused = _refusing
    if refused:  # stopped for good (Ctrl-C) while it started: it serves nothing, and is not waited for
        worker.kill()
    return worker


def _give_back(worker: _Worker, keep: bool = True) -> None:
    with _pool_lock:
        _busy.discard(worker)
        if keep and not _refusing and worker.alive() and len(_idle) < _IDLE_MAX:
            _idle.append(worker)
            return
    worker.stop()


def stop_workers(for_good: bool = False) -> None:
    """Stop the idle workers (the next sample starts new ones). ``for_good`` (Ctrl-C, exit): also
    kill the busy ones, whose samples end at once as ``runtime_error``, and start no sample any more."""
    global _refusing
    with _pool_lock:
        idle, busy = list(_idle), list(_busy) if for_good else []
        _idle.clear()
        _refusing = _refusing or for_good
    for worker in busy:
        worker.kill()
    for worker in idle:
        worker.stop()


def workers_started() -> int:
    """How many worker processes this process has started (each serves many samples)."""
    return _started


def _forget_workers() -> None:
    """In a forked child the parent's workers are not ours: the next sample starts its own."""
    global _idle, _busy, _pool_lock
    _idle, _busy, _pool_lock = [], set(), threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


def run_program(source: str, limits: Limits | None = None, *, output_bytes: int = 0) -> RunResult:
    """Run ``source`` as a fresh program in the sandbox and say how it ended.

    ``output_bytes``: keep the last that many bytes of the program's stdout and stderr in
    ``RunResult.output`` (for a program that reports through its output, like the task oracle).
    """
    return run_many([source], limits, workers=1, output_bytes=output_bytes)[0]


def run_many(
    sources: Sequence[str],
    limits: Limits | None = None,
    workers: int = 2,
    on_done: Callable[[int, RunResult], None] | None = None,
    *,
    output_bytes: int = 0,
) -> list[RunResult]:
    """Run several programs, on at most ``workers`` worker processes; results in the order given
    (``on_done`` is called as each ends)."""
    limits = limits or Limits()
    results: list[RunResult | None] = [None] * len(sources)
    if not sources:
        return []
    todo = iter(range(len(sources)))
    todo_lock = threading.Lock()

    def next_index() -> int | None:
        with todo_lock:
            return next(todo, None)

    def finish(i: int, result: RunResult) -> None:
        results[i] = result
        if on_done is not None:
            on_done(i, result)

    slots = max(1, min(workers, len(sources)))
    # whether each worker forks the next sample's child ahead, while a sample runs: only where a
    # core is left over for it
    ahead = _cores() > slots

    def slot() -> None:
        _serve(sources, limits, output_bytes, ahead, next_index, finish)

    if slots == 1:
        slot()
    else:
        with ThreadPoolExecutor(max_workers=slots) as pool:
            for future in [pool.submit(slot) for _ in range(slots)]:
                future.result()
    return [r for r in results if r is not None]


# requests a worker holds at once: the sample it runs and the next, so that between two samples it
# does not wait for cctest to read the answer and send the next request
_DEPTH = 2


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _serve(
    sources: Sequence[str],
    limits: Limits,
    output_bytes: int,
    ahead: bool,
    next_index: Callable[[], int | None],
    finish: Callable[[int, RunResult], None],
) -> None:
    """One worker slot of ``run_many``: the samples ``next_index`` gives, on one worker at a time
    (another when it dies; a sample it was sent and did not start goes to the next one)."""
    bwrap = _view()
    uid_of = _sandbox_uid if os.geteuid() == 0 else (lambda: None)
    worker: _Worker | None = None
    pending: collections.deque[tuple[int, str]] = collections.deque()  # sent, not answered: (index, name)
    again: collections.deque[int] = collections.deque()  # sent to a worker that did not run them
    try:
        while True:
            while len(pending) < _DEPTH and not (worker is not None and worker.broken):
                i = again.popleft() if again else next_index()
                if i is None:
                    break
                if _refusing:
                    finish(i, RunResult("runtime_error", _STOPPED))
                    continue
                if worker is None:
                    worker = _take_worker(bwrap)
                # the name of the sample's directory, also the name its processes show (at most
                # 15 characters)
                sid = "cctest-" + secrets.token_hex(4)
                limits_dict = _as_dict(limits)
                worker.send(
                    {
                        "name": sid,
                        "source": sources[i],
                        "uid": uid_of(),
                        "limits": limits_dict,
                        "output": output_bytes,
                        "ahead": ahead,
                    }
                )
                pending.append((i, sid))
            if not pending:
                break
            assert worker is not None
            start = time.perf_counter()
            # the worker keeps the wall-clock limit; this is only in case the worker itself hangs
            answer = worker.receive(limits.wall_seconds + 30)
            i, sid = pending.popleft()
            if answer is not None and not answer.get("retry"):
                if worker.bwrap is not None:
                    _view_works(worker.bwrap)
                finish(i, _result(answer, sid, limits, output_bytes))
                continue
            if answer is None and not (worker.bwrap and not worker.answered and bubblewrap() is None):
                finish(i, _lost(worker, sid, time.perf_counter() - start, output_bytes))
            else:  # (a retry, or a worker whose view cannot be made here: the sample did not run)
                again.append(i)
            again.extend(j for j, _ in pending)
            pending.clear()
            _give_back(worker, keep=False)
            worker, bwrap = None, _view()
    finally:
        if worker is not None:
            _give_back(worker, keep=not pending)


def _lost(worker: _Worker, sid: str, seconds: float, output_bytes: int) -> RunResult:
    """The outcome of a sample whose worker died or stopped answering (or was stopped)."""
    if _refusing:
        return RunResult("runtime_error", _STOPPED, seconds)
    log.warning("cctest sandbox: a worker stopped answering (%s); it is replaced.", worker.why_not())
    # (what it printed, where its directory is on disk: in a memory file system of the worker's,
    # the view's or its own, it went with the worker)
    said = _tail(os.path.join(worker.area, sid, ".out"), output_bytes) if output_bytes > 0 else ""
    return RunResult("runtime_error", "the sandbox's worker died", seconds, sandbox_id=sid, output=said)


def _result(answer: dict[str, Any], sid: str, limits: Limits, output_bytes: int) -> RunResult:
    """The outcome of a sample from its worker's answer."""
    report: dict[str, Any] = {}
    if answer["report"]:
        try:
            report = json.loads(answer["report"])
        except (ValueError, RecursionError):
            report = {}
    isolation = report.get("isolation", {})
    seconds = answer["seconds"]
    output = answer["output"] if output_bytes > 0 else ""
    if answer["timed_out"]:
        return RunResult(
            "timeout", f"wall-clock limit of {limits.wall_seconds:g} s", seconds, isolation, sid, output
        )
    if report.get("outcome") in OUTCOMES:
        return RunResult(report["outcome"], report.get("detail", ""), seconds, isolation, sid, output)
    outcome, detail = _classify_exit(answer["status"], answer["said"], limits)
    return RunResult(outcome, detail, seconds, sandbox_id=sid, output=output)


@functools.lru_cache(maxsize=64)
def _as_dict(limits: Limits) -> dict[str, Any]:
    return asdict(limits)  # (the same few limits for every sample: asdict copies deeply)


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


def _tail(path: str, n: int = 4000) -> str:
    """The last ``n`` bytes of a file, never through a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, n, max(0, size - n)).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


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
