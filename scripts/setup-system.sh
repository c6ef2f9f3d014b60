#!/usr/bin/env bash
# The system packages some features need beyond .venv, installed with apt-get as root; run by
# `make setup-all` and `make test`, never by `make demo`. Without root each missing one is named
# in one sentence with what lacks it, and setup goes on (the feature says the same when used):
#   bubblewrap  the bench's sandbox gives each sample a private filesystem view (docs/bench.md)
#   WordNet     ReplaceWord's default neighbours and METEOR (docs/operational.md)
# CCTEST_BWRAP and CCTEST_WORDNET_DIR (as cctest reads it) name other places, for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
BWRAP=${CCTEST_BWRAP:-bwrap}
WORDNET_DIR=${CCTEST_WORDNET_DIR:-/usr/share/wordnet}

have_bubblewrap() { command -v "$BWRAP" >/dev/null; }
have_wordnet() { [[ -f $WORDNET_DIR/data.noun ]]; }

if ! have_bubblewrap && can_install; then
  step "bubblewrap" apt_install bubblewrap || true
fi
if ! have_wordnet && can_install; then
  step "WordNet (wordnet-base)" apt_install wordnet-base || true
fi
# what is still missing (no root, or apt-get failed): one sentence each
if ! have_bubblewrap; then
  say "bubblewrap (bwrap) is not installed, so the bench's sandbox runs samples without a private" \
    "filesystem view; as root, 'make setup-all' installs it (apt-get install bubblewrap)." >&2
fi
if ! have_wordnet; then
  say "WordNet's data is not installed in $WORDNET_DIR, so 'cctest bench operational' (its default" \
    "neighbours and METEOR) cannot run;" \
    "as root, 'make setup-all' installs it (apt-get install wordnet-base)." >&2
fi
exit 0
