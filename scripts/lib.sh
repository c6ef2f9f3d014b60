# shellcheck shell=bash
# What the setup scripts share (sourced, not run):
#   step NAME COMMAND...      "TAG: NAME …" before, "TAG: NAME done (N s)" after (or "failed after")
#   with_heartbeat WHAT CMD   runs CMD, printing "TAG: still WHAT… (N s)" every CCTEST_HEARTBEAT_S (60) s
#   can_install               true where apt-get can install packages (root with apt-get)
#   apt_install PACKAGE...    apt-get install, waiting for another package manager instead of failing;
#                             apt's output goes to a log shown only when it fails
# TAG is $SETUP_TAG (default "setup").

SETUP_TAG=${SETUP_TAG:-setup}

say() { echo "$SETUP_TAG: $*"; }

duration() {  # duration SECONDS: "42 s" or "3 min 05 s"
  local s=$1
  if ((s < 120)); then echo "$s s"; else printf '%d min %02d s\n' $((s / 60)) $((s % 60)); fi
}

step() {
  local name=$1 t0=$SECONDS rc=0
  shift
  say "$name …"
  "$@" || rc=$?
  if ((rc == 0)); then
    say "$name done ($(duration $((SECONDS - t0))))"
  else
    say "$name failed after $(duration $((SECONDS - t0)))" >&2
  fi
  return "$rc"
}

with_heartbeat() {
  local what=$1 every=${CCTEST_HEARTBEAT_S:-60} t0=$SECONDS pid rc=0
  shift
  "$@" &
  pid=$!
  local next=$((SECONDS + every))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS >= next)) && kill -0 "$pid" 2>/dev/null; then
      say "still $what… ($(duration $((SECONDS - t0))))"
      next=$((SECONDS + every))
    fi
  done
  wait "$pid" || rc=$?
  return "$rc"
}

can_install() { [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; }

# dpkg and apt hold these with fcntl (POSIX) locks; CCTEST_DPKG_LOCKS names others for the tests
wait_for_package_manager() {
  # shellcheck disable=SC2086  # a list of paths
  SETUP_TAG=$SETUP_TAG "${PYTHON:-python3}" - \
    ${CCTEST_DPKG_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock} <<'PY'
import fcntl, os, sys, time

def held(path):
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False  # no lock file (or not ours to take): nothing to wait for here
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock if we got it

t0, limit = time.monotonic(), float(os.environ.get("CCTEST_DPKG_LOCK_TIMEOUT", "600"))
tag = os.environ["SETUP_TAG"]
if any(held(p) for p in sys.argv[1:]):
    print(f"{tag}: waiting for another package manager to finish…", flush=True)
    while any(held(p) for p in sys.argv[1:]) and time.monotonic() - t0 < limit:
        time.sleep(1)
    waited = f"{time.monotonic() - t0:.0f} s"
    if any(held(p) for p in sys.argv[1:]):
        print(f"{tag}: another package manager still holds apt's lock after {waited}; trying anyway", flush=True)
    else:
        print(f"{tag}: the other package manager is done ({waited})", flush=True)
PY
}

_APT_UPDATED=
apt_install() {
  local log rc=0
  log=$(mktemp "${TMPDIR:-/tmp}/cctest-apt.XXXXXX")
  wait_for_package_manager
  # Lock::Timeout: apt's own wait, for a package manager that starts after the check above
  {
    if [[ -z $_APT_UPDATED ]]; then apt-get -o DPkg::Lock::Timeout=600 update -qq; fi &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@"
  } >"$log" 2>&1 || rc=$?
  if ((rc == 0)); then
    _APT_UPDATED=1
  else
    say "apt-get install $* failed (exit $rc); its last lines:" >&2
    tail -n 20 "$log" >&2
  fi
  rm -f "$log"
  return "$rc"
}
