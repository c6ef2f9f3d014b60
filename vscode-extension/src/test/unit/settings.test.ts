/** Settings: which keys reach the server, with which values, and what a change asks for. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  INTERPRETER,
  classifyChange,
  interpreterSetting,
  readServerSettings,
  resolveVariables,
  serverSettingKeys,
  targetOf,
} from '../../common/settings';
import { EXTENSION_ROOT, FakeConfig, REPO_PYTHON, REPO_ROOT } from './fakes';

const packageJSON = JSON.parse(readFileSync(path.join(EXTENSION_ROOT, 'package.json'), 'utf8'));

/** The server's own settings, asked of the server's Python code (lsp_server/settings.py). */
function serverOptions(): { name: string; type: string; default: unknown; enum: string[] }[] {
  const code = 'import dataclasses, json\nfrom lsp_server.settings import OPTIONS\nprint(json.dumps([dataclasses.asdict(o) for o in OPTIONS]))';
  return JSON.parse(execFileSync(REPO_PYTHON, ['-c', code], { cwd: REPO_ROOT, encoding: 'utf8' }));
}

describe('package.json mirrors the server settings', () => {
  it('has exactly the server settings (same order), plus cctest.interpreter', () => {
    const names = serverOptions().map((o) => o.name);
    assert.deepEqual(serverSettingKeys(packageJSON), names);
    assert.ok(packageJSON.contributes.configuration.properties[`cctest.${INTERPRETER}`]);
  });

  it('matches the configuration generated from the server (types, defaults, enums, descriptions)', async () => {
    // the same generator `npm run sync-settings` uses; a mismatch means package.json is stale
    const schema = await import(path.join(EXTENSION_ROOT, 'scripts', 'settings-schema.mjs'));
    const expected = schema.generatedConfiguration(REPO_PYTHON);
    assert.deepEqual(packageJSON.contributes.configuration, expected);
  });

  it('gives every server setting its server default', () => {
    const props = packageJSON.contributes.configuration.properties;
    for (const o of serverOptions()) {
      assert.deepEqual(props[`cctest.${o.name}`].default, o.default, o.name);
      if (o.enum.length) {
        const prop = props[`cctest.${o.name}`];
        assert.deepEqual(prop.type === 'array' ? prop.items.enum : prop.enum, o.enum, o.name);
      }
    }
    assert.equal(props['cctest.backend'].default, 'hf', 'no configuration must mean the bundled model');
  });
});

describe('readServerSettings', () => {
  const keys = serverSettingKeys(packageJSON);

  it('sends every known setting, resolving paths and turning empty paths into null', () => {
    const config = new FakeConfig({
      backend: 'rules',
      mutants: 4,
      schemes: ['REP_R'],
      threshold: null,
      defectLog: '${workspaceFolder}/.cctest/defects.sqlite3',
      model: '',
      interpreter: '/usr/bin/python3',
    });
    const out = readServerSettings(config, keys, '/w');
    assert.deepEqual(out, { backend: 'rules', mutants: 4, schemes: ['REP_R'], threshold: null, defectLog: '/w/.cctest/defects.sqlite3', model: null });
    assert.ok(!(INTERPRETER in out), 'the interpreter is the client\'s business, not the server\'s');
  });

  it('skips settings this VS Code does not know (undefined) so the server uses its default', () => {
    assert.deepEqual(readServerSettings(new FakeConfig({}), keys), {});
  });
});

describe('resolveVariables', () => {
  it('expands ${workspaceFolder}, ${userHome}, ${env:X} and ~', () => {
    assert.equal(resolveVariables('${workspaceFolder}/.venv/bin/python', '/proj'), '/proj/.venv/bin/python');
    assert.equal(resolveVariables('${userHome}/x', undefined), path.join(os.homedir(), 'x'));
    assert.equal(resolveVariables('~/y', undefined), path.join(os.homedir(), 'y'));
    assert.equal(resolveVariables('${env:CCTEST_T}/z', undefined, { CCTEST_T: '/e' }), '/e/z');
  });

  it('leaves ${workspaceFolder} alone when there is no folder', () => {
    assert.equal(resolveVariables('${workspaceFolder}/p', undefined), '${workspaceFolder}/p');
  });

  it('interpreterSetting: blank means unset', () => {
    assert.equal(interpreterSetting(new FakeConfig({ interpreter: '  ' })), undefined);
    assert.equal(interpreterSetting(new FakeConfig({ interpreter: '${workspaceFolder}/py' }), '/w'), '/w/py');
  });
});

describe('classifyChange', () => {
  const affecting = (...changed: string[]) => (s: string) => changed.some((c) => c === s || c.startsWith(`${s}.`));

  it('restarts for the interpreter, pushes other cctest settings, ignores the rest', () => {
    assert.equal(classifyChange(affecting('cctest.interpreter')), 'restart');
    assert.equal(classifyChange(affecting('cctest.mode')), 'push');
    assert.equal(classifyChange(affecting('cctest.backend')), 'push');
    assert.equal(classifyChange(affecting('editor.fontSize')), 'none');
  });
});

describe('targetOf', () => {
  it('writes back where the value is set, user settings by default', () => {
    assert.equal(targetOf(new FakeConfig({ mode: 'off' }, { mode: 'workspace' }), 'mode'), 'workspace');
    assert.equal(targetOf(new FakeConfig({ mode: 'off' }, { mode: 'workspaceFolder' }), 'mode'), 'workspaceFolder');
    assert.equal(targetOf(new FakeConfig({}), 'mode'), 'global');
  });
});
