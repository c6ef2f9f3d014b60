/** Interpreter choice: the setting, else the Python extension's interpreter, else python3. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setLogger } from '../../common/logging';
import { DEFAULT_PYTHON, chooseInterpreter } from '../../common/python';
import { FakeHost, MemoryLogger, pythonExtension } from './fakes';

describe('chooseInterpreter', () => {
  let host: FakeHost;
  let logger: MemoryLogger;
  beforeEach(() => {
    host = new FakeHost();
    logger = new MemoryLogger();
    setLogger(logger);
  });
  afterEach(() => setLogger(undefined));

  it('takes cctest.interpreter first, even when the Python extension has one', async () => {
    host.config.values.interpreter = '/opt/py/bin/python';
    host.python = pythonExtension('/other/python');
    assert.deepEqual(await chooseInterpreter(host), { path: '/opt/py/bin/python', source: 'setting' });
  });

  it('resolves ${workspaceFolder} in the setting', async () => {
    host.folder = '/proj';
    host.config.values.interpreter = '${workspaceFolder}/.venv/bin/python';
    assert.equal((await chooseInterpreter(host)).path, '/proj/.venv/bin/python');
  });

  it('takes the Python extension\'s selected interpreter when the setting is empty', async () => {
    host.config.values.interpreter = '';
    host.python = pythonExtension('/envs/a/bin/python');
    assert.deepEqual(await chooseInterpreter(host), { path: '/envs/a/bin/python', source: 'python-extension' });
  });

  it('falls back to python3 without the Python extension', async () => {
    assert.deepEqual(await chooseInterpreter(host), { path: DEFAULT_PYTHON, source: 'default' });
  });

  it('falls back to python3 when the Python extension cannot resolve its environment', async () => {
    host.python = pythonExtension(undefined);
    assert.equal((await chooseInterpreter(host)).source, 'default');
  });

  it('falls back to python3 and logs a warning when the Python extension throws', async () => {
    host.pythonError = new Error('activation failed');
    assert.equal((await chooseInterpreter(host)).path, DEFAULT_PYTHON);
    assert.ok(logger.lines.some((l) => l.startsWith('warn') && l.includes('activation failed')), logger.lines.join('\n'));
  });
});
