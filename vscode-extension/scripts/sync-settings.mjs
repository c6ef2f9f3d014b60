// Rewrites package.json's `contributes.configuration` from the language server's settings.
//   npm run sync-settings            (uses ../.venv/bin/python, or $CCTEST_PYTHON)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EXTENSION_ROOT, configurationFromOptions, serverOptions } from './settings-schema.mjs';

const file = path.join(EXTENSION_ROOT, 'package.json');
const pkg = JSON.parse(readFileSync(file, 'utf8'));
pkg.contributes.configuration = configurationFromOptions(serverOptions());
writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
console.log(`${Object.keys(pkg.contributes.configuration.properties).length} settings written to ${file}`);
