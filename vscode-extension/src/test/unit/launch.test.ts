/**
 * Launch: the interpreter check against real interpreters (the repo's .venv, a fresh venv without
 * cctest, a missing path), the install command, and the server command line, started for real and
 * spoken to over LSP.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { StreamMessageReader, StreamMessageWriter, createProtocolConnection } from 'vscode-languageserver-protocol/node';
import {
  checkInterpreter,
  checkoutCandidates,
  findCheckout,
  installCommand,
  problemMessage,
  shellQuote,
} from '../../common/launch';
import { setLogger } from '../../common/logging';
import { COPY_ACTION, OUTPUT_ACTION, SETTINGS_ACTION, planLaunch, reportLaunchProblem } from '../../common/startup';
import { serverSettingKeys } from '../../common/settings';
import { EXTENSION_ROOT, FakeHost, MemoryLogger, REPO_PYTHON, REPO_ROOT } from './fakes';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const keys = serverSettingKeys(require(path.join(EXTENSION_ROOT, 'package.json')));

let scratch: string;
let barePython: string; // a real interpreter without cctest: a fresh venv of the system python

before(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'cctest-launch-'));
  const venv = path.join(scratch, 'bare venv'); // a space: the install command must quote it
  execFileSync('python3', ['-m', 'venv', '--without-pip', venv]);
  barePython = path.join(venv, 'bin', 'python');
  setLogger(new MemoryLogger());
});

after(() => {
  setLogger(undefined);
  rmSync(scratch, { recursive: true, force: true });
});

describe('checkInterpreter', () => {
  it('accepts the repository interpreter and reports the cctest version', async () => {
    const r = await checkInterpreter(REPO_PYTHON);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.match((r as { version: string }).version, /^\d+\.\d+/);
  });

  it('says "no-package" for an interpreter without cctest', async () => {
    const r = await checkInterpreter(barePython);
    assert.equal(r.ok, false);
    assert.equal((r as { problem: string }).problem, 'no-package');
  });

  it('says "not-found" for a path that does not exist', async () => {
    const r = await checkInterpreter(path.join(scratch, 'nope', 'python'));
    assert.deepEqual({ ok: r.ok, problem: (r as { problem: string }).problem }, { ok: false, problem: 'not-found' });
  });
});

describe('install command', () => {
  it('installs from the index, quoting paths for the shell', () => {
    assert.equal(installCommand('/usr/bin/python3'), '/usr/bin/python3 -m pip install cctest');
    assert.equal(installCommand('/a b/python'), `'/a b/python' -m pip install cctest`);
    assert.equal(shellQuote(`it's`), `'it'\\''s'`);
  });

  it('installs the checkout (editable) when the interpreter lives in one', () => {
    const found = findCheckout(checkoutCandidates(path.join(REPO_ROOT, '.venv', 'bin', 'python')));
    assert.equal(found, REPO_ROOT);
    assert.equal(installCommand('/x/python', found), `/x/python -m pip install -e ${REPO_ROOT}`);
    assert.equal(findCheckout([scratch, undefined]), undefined);
  });

  it('names the interpreter and the command in the message', () => {
    const msg = problemMessage('/p/python', { ok: false, problem: 'no-package', detail: '' }, '/p/python -m pip install cctest');
    assert.match(msg, /"\/p\/python" does not have the cctest language server installed/);
    assert.ok(msg.endsWith('Install it with: /p/python -m pip install cctest'));
  });
});

describe('planLaunch and the install notification', () => {
  it('plans `<python> -m lsp_server` with the settings as initializationOptions', async () => {
    const host = new FakeHost();
    host.folder = scratch;
    host.config.values = { interpreter: REPO_PYTHON, backend: 'rules', mutants: 3, defectLog: '${workspaceFolder}/d.sqlite3' };
    const plan = await planLaunch(host, { settingKeys: keys });
    assert.ok(plan.ok, JSON.stringify(plan));
    assert.equal(plan.command.command, REPO_PYTHON);
    assert.deepEqual(plan.command.args, ['-m', 'lsp_server']);
    assert.equal(plan.command.options.cwd, scratch);
    assert.equal(plan.command.options.env.PYTHONUNBUFFERED, '1');
    assert.deepEqual(plan.initializationOptions, { backend: 'rules', mutants: 3, defectLog: path.join(scratch, 'd.sqlite3') });
    assert.equal(host.messages.length, 0);
  });

  it('refuses an interpreter without cctest and offers the exact install command', async () => {
    const host = new FakeHost();
    host.config.values = { interpreter: barePython };
    const plan = await planLaunch(host, { settingKeys: keys });
    assert.equal(plan.ok, false);
    assert.ok(!plan.ok);
    assert.equal(plan.install, `'${barePython}' -m pip install cctest`);

    host.answer = COPY_ACTION;
    await reportLaunchProblem(host, plan);
    assert.equal(host.messages.length, 1);
    assert.equal(host.messages[0].kind, 'warning');
    assert.ok(host.messages[0].message.includes(plan.install));
    assert.deepEqual(host.messages[0].actions, [COPY_ACTION, SETTINGS_ACTION, OUTPUT_ACTION]);
    assert.equal(host.clipboard, plan.install);

    host.answer = SETTINGS_ACTION;
    await reportLaunchProblem(host, plan);
    assert.deepEqual(host.commands.at(-1), { command: 'workbench.action.openSettings', args: ['cctest.interpreter'] });
  });

  it('uses python3 when nothing is configured (and checks it like any other)', async () => {
    const host = new FakeHost();
    const seen: string[] = [];
    const plan = await planLaunch(host, {
      settingKeys: keys,
      check: async (p) => (seen.push(p), { ok: false, problem: 'no-package', detail: '' }),
    });
    assert.deepEqual(seen, ['python3']);
    assert.equal(plan.interpreter.source, 'default');
  });
});

describe('the planned command starts a language server', () => {
  it('answers initialize with inline completions and applies the initializationOptions', async () => {
    const host = new FakeHost();
    host.folder = scratch;
    host.config.values = { interpreter: REPO_PYTHON, backend: 'rules', mutants: 2, defectLog: path.join(scratch, 'log.sqlite3') };
    const plan = await planLaunch(host, { settingKeys: keys });
    assert.ok(plan.ok);
    const proc = spawn(plan.command.command, plan.command.args, { ...plan.command.options, stdio: ['pipe', 'pipe', 'inherit'] });
    const conn = createProtocolConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
    conn.listen();
    try {
      const init = await conn.sendRequest('initialize', {
        processId: process.pid,
        rootUri: null,
        capabilities: {},
        initializationOptions: plan.initializationOptions,
      });
      assert.ok((init as { capabilities: Record<string, unknown> }).capabilities.inlineCompletionProvider);
      await conn.sendNotification('initialized', {});
      const stats = (await conn.sendRequest('cctest/stats', {})) as { settings: Record<string, unknown> };
      assert.equal(stats.settings.backend, 'rules');
      assert.equal(stats.settings.mutants, 2);
      await conn.sendRequest('shutdown');
      await conn.sendNotification('exit');
      const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
      assert.equal(code, 0);
    } finally {
      conn.dispose();
      proc.kill();
    }
  });
});
