// Rewrites package.json's `contributes.configuration` (and docs/lsp.md's settings table) from the
// server's settings, with the repository's generator tools/sync_settings.py.
//   npm run sync-settings            (uses ../.venv/bin/python, or $CCTEST_PYTHON)
import { syncSettings } from './settings-schema.mjs';

process.stdout.write(syncSettings());
