#!/usr/bin/env bash
# llama.cpp's server and llama-cpp-python's server, for the end-to-end tests against the servers
# people run (tests/e2e/llama/) and for converting cctest's models to GGUF (cctest.models.gguf).
# Run by `make setup-e2e` (and so by `make test`). Idempotent and cached by version:
#   1. PyPI's llama-cpp-python sdist (pinned below), which vendors llama.cpp (vendor/llama.cpp:
#      the server's source, convert_hf_to_gguf.py and gguf-py), fetched once with pip;
#   2. llama-server built from it with cmake (no download at build time: no curl, no prebuilt web UI);
#   3. llama-cpp-python with its [server] extra installed into .venv without compiling llama.cpp
#      again: its Python package, with the libraries built in step 2 linked into llama_cpp/lib.
# All of it lives in $CCTEST_LLAMA_CACHE/llama.cpp-VERSION (default ~/.cache/cctest), outside the
# clone, so a second setup, or a fresh clone on the same machine, costs nothing. cmake and g++ are
# installed with apt-get as root where missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
PY=${PYTHON:-python3}

# the one place the version is pinned; the tests find the build through the installed package's
# version (tests/e2e/llama/conftest.py)
VERSION=0.3.36
CACHE=${CCTEST_LLAMA_CACHE:-$HOME/.cache/cctest}/llama.cpp-$VERSION
SDIST=$CACHE/llama_cpp_python-$VERSION.tar.gz
SRC=$CACHE/llama_cpp_python-$VERSION
BUILD=$CACHE/build
SERVER=$BUILD/bin/llama-server
JOBS=${CCTEST_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}

fetch_sdist() {
  mkdir -p "$CACHE"
  # into a directory of its own first, so that an interrupted download leaves no partial tarball
  local tmp
  tmp=$(mktemp -d "$CACHE/download.XXXXXX")
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$tmp" "llama-cpp-python==$VERSION"
  mv "$tmp/llama_cpp_python-$VERSION.tar.gz" "$SDIST"
  rm -rf "$tmp"
}

unpack_sdist() {
  local tmp
  tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
  tar -xzf "$SDIST" -C "$tmp"
  rm -rf "$SRC"
  mv "$tmp/llama_cpp_python-$VERSION" "$SRC"
  rm -rf "$tmp"
}

build_server() {
  cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    >"$CACHE/cmake-configure.log" 2>&1 || {
    tail -n 30 "$CACHE/cmake-configure.log" >&2
    return 1
  }
  # a build interrupted half way goes on from where it stopped
  cmake --build "$BUILD" --target llama-server -j "$JOBS" >"$CACHE/cmake-build.log" 2>&1 || {
    tail -n 30 "$CACHE/cmake-build.log" >&2
    return 1
  }
  "$SERVER" --version >/dev/null 2>&1
}

site_lib() {  # where llama-cpp-python looks for its libraries in .venv
  .venv/bin/python - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llama_cpp")
print(pathlib.Path(spec.origin).parent / "lib")
PY
}

install_python_server() {
  # LLAMA_BUILD=OFF: the package alone, no llama.cpp build; its libraries are linked in below
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" LLAMA_CPP_LIB_PATH="$BUILD/bin" \
    .venv/bin/python -m pip install -q --disable-pip-version-check \
    "llama_cpp_python[server] @ file://$SDIST"
  link_libraries
}

link_libraries() {
  local lib
  lib=$(site_lib)
  mkdir -p "$lib"
  local so
  for so in "$BUILD"/bin/*.so; do ln -sfn "$so" "$lib/"; done
}

python_server_works() {
  [[ -x .venv/bin/python ]] &&
    .venv/bin/python - "$VERSION" <<'PY' 2>/dev/null
import importlib.metadata, sys
assert importlib.metadata.version("llama_cpp_python") == sys.argv[1]
import llama_cpp, llama_cpp.server.app  # loads libllama through llama_cpp/lib
PY
}

if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
  if ! can_install; then
    say "cmake and g++ are needed to build llama.cpp's server for the end-to-end tests; as root," \
      "'make setup-e2e' installs them (apt-get install cmake g++)." >&2
    exit 1
  fi
  step "cmake and g++" apt_install cmake g++
fi
[[ -f $SDIST ]] || step "llama-cpp-python $VERSION's source (pip download)" fetch_sdist
[[ -f $SRC/vendor/llama.cpp/CMakeLists.txt ]] || step "unpacking it" unpack_sdist
if [[ ! -x $SERVER ]] || ! "$SERVER" --version >/dev/null 2>&1; then
  step "llama-server from llama-cpp-python $VERSION's llama.cpp ($JOBS jobs, about 16 CPU-minutes)" \
    with_heartbeat "building llama-server" build_server
fi
if [[ ! -x .venv/bin/python ]]; then
  say "llama-server is built ($SERVER); llama-cpp-python's server needs .venv: run 'make setup' first." >&2
  exit 1
fi
if ! python_server_works; then
  step "llama-cpp-python $VERSION's server in .venv (no compiling: the libraries above)" \
    install_python_server
  python_server_works || {
    say "llama-cpp-python's server was installed but does not import; see the lines above." >&2
    exit 1
  }
fi
