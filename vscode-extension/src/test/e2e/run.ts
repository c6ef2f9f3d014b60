/**
 * End to end in a real VS Code: builds the .vsix, installs it into code-server, opens a Python
 * file of a fixture workspace in headless Chromium (driven by playwright-core), types a function
 * header, triggers an inline suggestion, checks the ghost text is the server's repaired
 * completion, accepts it with Tab, and checks the file now holds it and the defect log recorded
 * the acceptance. Screenshots go to test-results/.
 *
 *   npm run test:e2e                              (both scenarios below: rules, then hf)
 *   CCTEST_E2E_BACKENDS=rules npm run test:e2e    (only the fast, deterministic rule backend)
 *
 * Needs code-server and Chromium: `bash tools/install-code-server.sh` (scripts/setup-e2e.sh runs it).
 * Environment: CCTEST_PYTHON (default <repo>/.venv/bin/python), CODE_SERVER, CHROMIUM.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { type Browser, type Page, chromium } from 'playwright-core';
import { waitFor, waitForFile } from './wait';

const EXTENSION_ROOT = path.resolve(__dirname, '..', '..', '..');
const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..');
const PYTHON = process.env.CCTEST_PYTHON || path.join(REPO_ROOT, '.venv', 'bin', 'python');
const CODE_SERVER = process.env.CODE_SERVER || path.join(os.homedir(), '.cache', 'code-server-e2e', 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const RESULTS = path.join(EXTENSION_ROOT, 'test-results');
const FIXTURE = path.join(EXTENSION_ROOT, 'test-fixtures', 'workspace');
const BACKENDS = (process.env.CCTEST_E2E_BACKENDS || 'rules,hf').split(',').map((b) => b.trim()).filter(Boolean);

/**
 * Per backend: the settings (beyond the defaults), the same settings as `cctest complete` options,
 * and the function the test types (one line per Enter; the editor indents).
 *
 * rules: the rule backend completes `return <params joined by +>`, but answers `rate * 2  # fragile`
 * whenever the prompt contains "acc = amount\n    tax"; the REL mutants rename acc and tax, so their
 * completions agree with each other and not with the original's: the original is an outlier and
 * the repaired completion differs from it (as in tests/e2e/lsp).
 * hf: the bundled model, on a function header alone.
 */
const SCENARIOS: Record<string, { settings: Record<string, unknown>; cli: string[]; lines: string[]; repaired: boolean }> = {
  rules: {
    settings: { 'cctest.model': 'fragile=acc = amount\n    tax', 'cctest.schemes': ['REL_R', 'REL_C'], 'cctest.mutants': 6 },
    cli: ['--model', 'fragile=acc = amount\n    tax', '--scheme', 'REL_R', '--scheme', 'REL_C', '-k', '6'],
    lines: ['def total(amount, rate):', 'acc = amount', 'tax = rate'],
    repaired: true,
  },
  // the only change to the defaults: a generous per-call timeout, as an engine run of the bundled
  // model takes tens of seconds on a small, busy CPU
  hf: { settings: { 'cctest.timeout': 600 }, cli: ['--timeout', '600'], lines: ['def add(first, second):'], repaired: false },
};
/**
 * Every wait below is for an event (the editor shows something, the defect log changes, a process
 * appears), and its limit is only a guard against a hang: generous, so that a busy machine (a
 * laptop building beside the test, a 2-core CI runner) is slow, not red. UI: what code-server and
 * the editor do by themselves. WORK: what waits for the language server and its model, whose
 * engine runs take seconds to minutes on a small, loaded CPU.
 */
const UI_GUARD_MS = 3 * 60_000;
const WORK_GUARD_MS = 10 * 60_000;
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

const run = promisify(execFile);

function step(message: string): void {
  console.log(`[e2e ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

function need(file: string, hint: string): void {
  if (!existsSync(file)) {
    throw new Error(`${file} is missing: ${hint}`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** code-server in its own process group, so the extension host and the language server die with it. */
class CodeServer {
  proc: ChildProcess | undefined;

  constructor(
    readonly port: number,
    readonly dirs: { userData: string; extensions: string },
    readonly log: string,
  ) {}

  start(folder: string): void {
    const out = createWriteStream(this.log);
    this.proc = spawn(
      CODE_SERVER,
      [
        '--auth', 'none',
        '--bind-addr', `127.0.0.1:${this.port}`,
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--user-data-dir', this.dirs.userData,
        '--extensions-dir', this.dirs.extensions,
        folder,
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CCTEST_E2E: '1' } },
    );
    this.proc.stdout?.pipe(out);
    this.proc.stderr?.pipe(out);
  }

  async ready(): Promise<void> {
    await waitFor('code-server to answer /healthz', UI_GUARD_MS, async () => {
      if (this.proc?.exitCode !== null && this.proc?.exitCode !== undefined) {
        throw new Error(`code-server exited with ${this.proc.exitCode}; see ${this.log}`);
      }
      const res = await fetch(`http://127.0.0.1:${this.port}/healthz`);
      return res.ok ? true : undefined;
    });
  }

  /** The processes of code-server's group: itself, the extension host, the language server, … */
  group(): string[] {
    const pid = this.proc?.pid;
    if (!pid) {
      return [];
    }
    try {
      return execFileSync('ps', ['-o', 'pid=,args=', '-g', String(pid)], { encoding: 'utf8' })
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
    } catch {
      return []; // ps exits 1 when the group is empty
    }
  }

  /** SIGTERM to the whole group, SIGKILL to what is left after 5 s; throws if anything survives. */
  async stop(): Promise<void> {
    const pid = this.proc?.pid;
    if (!pid) {
      return;
    }
    const alive = () => {
      try {
        process.kill(-pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      return;
    }
    const end = Date.now() + 5000;
    while (alive() && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
    }
    if (alive()) {
      process.kill(-pid, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
    }
    const left = this.group();
    if (left.length) {
      throw new Error(`processes left behind by code-server:\n${left.join('\n')}`);
    }
  }
}

/** The text of the editor, as the DOM shows it (non-breaking spaces back to spaces). */
async function editorText(page: Page): Promise<string> {
  return (await page.locator('.monaco-editor .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
}

async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: UI_GUARD_MS });
  await page.keyboard.press('Enter');
  // the palette is gone when its input is hidden, or holds something else: a command that opens a
  // quick input of its own (the export's save dialog) reuses it, often before a hidden state is seen
  await waitFor(`the command palette to close after ${JSON.stringify(title)}`, UI_GUARD_MS, async () =>
    !(await input.isVisible()) || (await input.inputValue()) !== `>${title}` ? true : undefined,
  );
}

/** What `cctest complete` says at a position of a file: the completion the server must offer. */
async function expectedCompletion(file: string, line: number, col: number, backend: string): Promise<{ completion: string; original: string }> {
  const args = ['-m', 'cctest', 'complete', `${file}:${line}:${col}`, '--backend', backend, ...SCENARIOS[backend].cli, '--json'];
  const { stdout } = await run(PYTHON, args, {
    cwd: REPO_ROOT,
    timeout: WORK_GUARD_MS,
    maxBuffer: 64 << 20,
  });
  const result = JSON.parse(stdout);
  return { completion: result.completion, original: result.completions[0].text };
}

interface DefectRow {
  id: number;
  accepted: boolean;
  suspect: boolean;
  chosen_completion: string;
  uri: string | null;
}

async function defects(db: string): Promise<DefectRow[]> {
  if (!existsSync(db)) {
    return [];
  }
  const { stdout } = await run(PYTHON, ['-m', 'cctest', 'defects', '--db', db, 'list', '--json', '--limit', '100'], { cwd: REPO_ROOT });
  return stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as DefectRow);
}

async function oneBackend(backend: string, vsix: string, browser: Browser): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), `cctest-e2e-${backend}-`));
  const dirs = { userData: path.join(tmp, 'user-data'), extensions: path.join(tmp, 'extensions') };
  const workspace = path.join(tmp, 'workspace');
  const db = path.join(tmp, 'defects.sqlite3');
  cpSync(FIXTURE, workspace, { recursive: true });
  mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  writeFileSync(
    path.join(dirs.userData, 'User', 'settings.json'),
    JSON.stringify(
      {
        'cctest.interpreter': PYTHON,
        'cctest.backend': backend,
        'cctest.defectLog': db,
        'cctest.logAll': true,
        ...SCENARIOS[backend].settings,
        // the editor's own suggestion widget would cover the ghost text and take the Tab key
        'editor.quickSuggestions': { other: 'off', comments: 'off', strings: 'off' },
        'editor.suggestOnTriggerCharacters': false,
        'editor.wordBasedSuggestions': 'off',
        'editor.inlineSuggest.enabled': true,
        'editor.autoClosingBrackets': 'never',
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.welcomePage.walkthroughs.openOnInstall': false,
        'security.workspace.trust.enabled': false,
        'extensions.autoUpdate': false,
        'extensions.autoCheckUpdates': false,
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'files.autoSave': 'off',
      },
      null,
      2,
    ),
  );

  step(`[${backend}] installing ${path.basename(vsix)} into code-server`);
  const installed = execFileSync(CODE_SERVER, ['--extensions-dir', dirs.extensions, '--user-data-dir', dirs.userData, '--install-extension', vsix], {
    encoding: 'utf8',
  });
  if (!/successfully installed/i.test(installed)) {
    throw new Error(`installing the extension failed:\n${installed}`);
  }

  const port = await freePort();
  const server = new CodeServer(port, dirs, path.join(RESULTS, `code-server-${backend}.log`));
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  // playwright's own 30 s default for every wait and click is a window sized for a quiet machine
  context.setDefaultTimeout(UI_GUARD_MS);
  context.setDefaultNavigationTimeout(UI_GUARD_MS);
  const page = await context.newPage();
  let failed = false;
  try {
    step(`[${backend}] starting code-server on 127.0.0.1:${port}`);
    server.start(workspace);
    await server.ready();
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: UI_GUARD_MS });

    step(`[${backend}] opening demo.py`);
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'demo.py' }).first().click({ timeout: UI_GUARD_MS });
    const editor = page.locator('.monaco-editor[data-uri$="demo.py"]').first();
    await editor.waitFor({ timeout: UI_GUARD_MS });
    await waitFor('demo.py in the editor', UI_GUARD_MS, async () => ((await editorText(page)).includes('def scale') ? true : undefined));

    step(`[${backend}] waiting for the language server (status bar)`);
    const status = page.locator('.statusbar-item', { hasText: 'cctest [' }).first();
    await waitFor('the status bar to say the server is ready', WORK_GUARD_MS, async () => {
      const t = await status.innerText();
      if (/failed|stopped/.test(t)) {
        throw new Error(`status bar: ${t}`);
      }
      return /ready|outliers/.test(t) ? t : undefined;
    });

    step(`[${backend}] typing a function header`);
    await editor.locator('.view-lines').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    const scenario = SCENARIOS[backend];
    for (const line of scenario.lines) {
      await page.keyboard.type(line, { delay: 20 });
      await page.keyboard.press('Enter'); // the editor indents the body
    }
    await page.keyboard.press('Control+S');
    const file = path.join(workspace, 'demo.py');
    const typed = await waitFor('the save', UI_GUARD_MS, async () => {
      const t = readFileSync(file, 'utf8');
      return t.includes(scenario.lines[scenario.lines.length - 1]) ? t : undefined;
    });
    const lines = typed.split('\n');
    const cursorLine = lines.length; // 1-based: the last line, the indented empty body line
    const indent = lines[lines.length - 1];
    if (indent !== '    ') {
      throw new Error(`expected the editor to indent the body by 4 spaces, got ${JSON.stringify(indent)}`);
    }
    // the CLI runs the engine on its own (for hf: loads the model, generates) while the editor asks
    // the server: started now, awaited once the editor shows a suggestion
    step(`[${backend}] triggering an inline suggestion; meanwhile cctest complete runs on the same prompt`);
    const cliRun = expectedCompletion(file, cursorLine, indent.length + 1, backend);
    cliRun.catch(() => undefined); // awaited below; no unhandled rejection in between
    await runCommand(page, 'Trigger Inline Suggestion');
    const ghost = page.locator('.monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text');
    await waitFor('a suggestion', WORK_GUARD_MS, async () => ((await ghost.count()) > 0 ? true : undefined));
    const cli = await cliRun;
    const expected = cli.completion.replace(/\n+$/, '');
    step(`[${backend}] cctest complete: original ${JSON.stringify(cli.original)}, repaired ${JSON.stringify(cli.completion)}`);
    if (!expected.trim()) {
      throw new Error('cctest complete gave no completion for the typed prompt');
    }
    if (scenario.repaired && cli.original.trim() === expected.trim()) {
      throw new Error('the scenario should make the original completion an outlier that repair replaces');
    }

    // The DOM splits multi-line ghost text into an inline decoration (the rest of the cursor's
    // line) and view zones (the lines below), in no fixed order, and wraps long lines: check that
    // the pieces shown are exactly the completion's pieces, whatever their order. The exact text,
    // in order, is checked in the saved file after Tab.
    const squash = (t: string) => t.replace(/\s+/g, '');
    const shows = (text: string) => {
      const pieces = text.split('\n').map(squash).filter(Boolean);
      const whole = squash(expected);
      return pieces.every((p) => whole.includes(p)) && pieces.join('').length === whole.length;
    };
    let seen = '';
    const ghostText = await waitFor(`ghost text ${JSON.stringify(expected)}`, WORK_GUARD_MS, async () => {
      // while typing, the editor may still show a suggestion for an earlier prompt: wait it out
      if ((await ghost.count()) === 0) {
        return undefined;
      }
      seen = (await ghost.allInnerTexts()).join('\n').replace(/\u00a0/g, ' ');
      return shows(seen) ? seen : undefined;
    }).catch((err) => {
      throw new Error(`${String(err)}; the last ghost text seen was ${JSON.stringify(seen)}`);
    });
    step(`[${backend}] ghost text: ${JSON.stringify(ghostText)}`);
    const shot1 = path.join(RESULTS, `e2e-${backend}-ghost-text.png`);
    await page.screenshot({ path: shot1 });
    console.log(`screenshot: ${shot1}`);

    // the verdict on the request whose ghost text is shown; read before Tab, as a request at the
    // cursor after acceptance replaces it
    const wanted = scenario.repaired ? /[1-9]\d*\/\d+ outliers · repaired/ : /\d+\/\d+ outliers/;
    let said = '';
    const verdict = await waitFor(`a verdict in the status bar matching ${wanted}`, WORK_GUARD_MS, async () => {
      said = await status.innerText();
      return wanted.test(said) ? said : undefined;
    }).catch((err) => {
      throw new Error(`${String(err)}; it says ${JSON.stringify(said)}`);
    });
    step(`[${backend}] status bar: ${JSON.stringify(verdict)}`);

    step(`[${backend}] accepting it with Tab`);
    await page.keyboard.press('Tab');
    // After Tab the editor may at once ask for, and show, a suggestion at the new cursor (the
    // rules backend answers in milliseconds), so "no ghost text" is no sign of acceptance: the
    // saved file is. Save until it holds the completion.
    const want = `${scenario.lines[scenario.lines.length - 1]}\n${indent}${expected}`;
    let saved = typed;
    await waitFor('the saved file to hold the completion', UI_GUARD_MS, async () => {
      await page.keyboard.press('Control+S');
      saved = readFileSync(file, 'utf8');
      return saved.includes(want) ? true : undefined;
    }).catch((err) => {
      throw new Error(`${String(err)}; after Tab the file should contain ${JSON.stringify(want)}; it is:\n${saved}`);
    });
    step(`[${backend}] the file now contains ${JSON.stringify(`${indent}${expected}`)}`);

    // the server stores an acceptance at once (with the verdict known then; a verdict settled later
    // updates the record): wait for the log to hold it, however long a loaded machine takes
    step(`[${backend}] checking the defect log records the acceptance`);
    const accepted = await waitForFile('an accepted record in the defect log', db, WORK_GUARD_MS, async () => {
      const rows = await defects(db);
      return rows.find((r) => r.accepted && r.uri?.endsWith('demo.py') && r.chosen_completion.replace(/\n+$/, '') === expected);
    });
    if (scenario.repaired && !accepted.suspect) {
      throw new Error(`record #${accepted.id} should be a suspected defect`);
    }
    step(`[${backend}] record #${accepted.id}: accepted`);

    const servers = server.group().filter((l) => l.includes('-m lsp_server'));
    if (servers.length !== 1) {
      throw new Error(`expected one language server in code-server's process group, found:\n${server.group().join('\n')}`);
    }
    step(`[${backend}] language server process: ${servers[0]}`);

    step(`[${backend}] opening the defects view and the record's diff`);
    await runCommand(page, 'cctest: Show logged defects');
    const row = page
      .locator('.monaco-list-row', { hasText: `demo.py:${cursorLine}` })
      .filter({ hasText: scenario.repaired ? 'repaired · accepted' : 'accepted' })
      .first();
    await row.waitFor({ timeout: WORK_GUARD_MS });
    await row.click();
    const diff = page.locator('.tab', { hasText: `cctest #${accepted.id}` }).first();
    await diff.waitFor({ timeout: UI_GUARD_MS });
    const diffEditor = page.locator('.monaco-diff-editor.side-by-side').first();
    await diffEditor.waitFor({ timeout: UI_GUARD_MS });
    if (scenario.repaired) {
      // the left side shows the original completion, the right side the repaired one
      const sides = diffEditor.locator('.editor.original .view-lines, .editor.modified .view-lines');
      await waitFor('both sides of the diff', UI_GUARD_MS, async () => ((await sides.count()) === 2 ? true : undefined));
      const [left, right] = (await sides.allInnerTexts()).map((t) => t.replace(/\u00a0/g, ' '));
      const firstWords = (t: string) => t.trim().split('\n')[0].trim();
      if (!left.includes(firstWords(cli.original)) || !right.includes(firstWords(expected))) {
        throw new Error(`the diff should show ${JSON.stringify(cli.original)} vs ${JSON.stringify(expected)}; it shows\n${left}\n---\n${right}`);
      }
    }
    const shot2 = path.join(RESULTS, `e2e-${backend}-accepted.png`);
    await page.screenshot({ path: shot2 });
    console.log(`screenshot: ${shot2}`);

    if (backend !== 'rules') {
      step(`[${backend}] passed (export, mode toggle, restart and install notification: see the rules scenario)`);
      return;
    }

    step(`[${backend}] exporting the defect log through the save dialog`);
    await runCommand(page, 'cctest: Export the defect log');
    // code-server's save dialog is VS Code's simple file dialog: a quick input holding the path
    const pathInput = page.locator('.quick-input-widget .quick-input-box input');
    await pathInput.waitFor({ state: 'visible' });
    const exported = path.join(workspace, 'cctest-defects.jsonl');
    // the dialog offers <workspace>/cctest-defects.jsonl (the command's default): accept it as is
    // (typing into it races with the dialog's own completion of the path)
    await waitFor('the proposed export path', UI_GUARD_MS, async () =>
      (await pathInput.inputValue()).endsWith('/cctest-defects.jsonl') ? true : undefined,
    );
    await page.keyboard.press('Enter');
    const exportedLines = await waitFor('the exported file', WORK_GUARD_MS, async () =>
      existsSync(exported) ? readFileSync(exported, 'utf8').split('\n').filter(Boolean) : undefined,
    );
    if (!exportedLines.some((l) => JSON.parse(l).id === accepted.id)) {
      throw new Error(`the export ${exported} lacks record #${accepted.id}`);
    }
    step(`[${backend}] exported ${exportedLines.length} records`);

    step(`[${backend}] clicking the status bar item toggles the mode`);
    await status.click();
    await waitFor('the status bar to show monitor mode', UI_GUARD_MS, async () => ((await status.innerText()).includes('cctest [monitor]') ? true : undefined));
    const userSettings = JSON.parse(readFileSync(path.join(dirs.userData, 'User', 'settings.json'), 'utf8'));
    if (userSettings['cctest.mode'] !== 'monitor') {
      throw new Error(`the toggle should write cctest.mode = monitor to the user settings, they hold ${JSON.stringify(userSettings['cctest.mode'])}`);
    }

    step(`[${backend}] restarting the server by command`);
    const before = servers[0].split(' ')[0];
    await runCommand(page, 'cctest: Restart the language server');
    const restarted = await waitFor('a new language server process', WORK_GUARD_MS, async () => {
      const now = server.group().filter((l) => l.includes('-m lsp_server'));
      return now.length === 1 && now[0].split(' ')[0] !== before && /ready|outliers/.test(await status.innerText()) ? now[0] : undefined;
    });
    step(`[${backend}] new language server process: ${restarted}`);

    {
      step(`[${backend}] pointing cctest.interpreter at a Python without cctest`);
      const bare = path.join(tmp, 'bare-venv');
      execFileSync('python3', ['-m', 'venv', '--without-pip', bare]);
      const barePython = path.join(bare, 'bin', 'python');
      // as a user would: the settings JSON editor, find and replace, save
      await runCommand(page, 'Preferences: Open User Settings (JSON)');
      await page.locator('.monaco-editor[data-uri$="settings.json"]').first().waitFor({ timeout: UI_GUARD_MS });
      await page.keyboard.press('Control+H');
      const find = page.locator('.find-widget textarea[aria-label="Find"], .find-widget input[aria-label="Find"]').first();
      const replace = page.locator('.find-widget textarea[aria-label="Replace"], .find-widget input[aria-label="Replace"]').first();
      await find.waitFor({ state: 'visible' });
      await find.fill(PYTHON);
      await replace.fill(barePython);
      await replace.press('Control+Alt+Enter'); // replace all
      await page.keyboard.press('Escape');
      await page.keyboard.press('Control+S');
      const settingsFile = path.join(dirs.userData, 'User', 'settings.json');
      await waitFor('the saved user settings', UI_GUARD_MS, async () =>
        JSON.parse(readFileSync(settingsFile, 'utf8'))['cctest.interpreter'] === barePython ? true : undefined,
      );
      const install = `${barePython} -m pip install cctest`;
      const toast = page.locator('.notification-toast', { hasText: install }).first();
      await toast.waitFor({ timeout: WORK_GUARD_MS });
      const toastText = (await toast.innerText()).replace(/\s+/g, ' ');
      for (const action of ['Copy install command', 'Choose interpreter', 'Show output']) {
        if (!toastText.includes(action)) {
          throw new Error(`the notification lacks the action ${JSON.stringify(action)}: ${toastText}`);
        }
      }
      await waitFor('the status bar to say the start failed', WORK_GUARD_MS, async () => ((await status.innerText()).includes('failed') ? true : undefined));
      // the old server was told to shut down and exit; give it a moment to do so
      await waitFor('the old language server to exit', WORK_GUARD_MS, async () =>
        server.group().some((l) => l.includes('-m lsp_server')) ? undefined : true,
      );
      const shot3 = path.join(RESULTS, `e2e-${backend}-install-notification.png`);
      await page.screenshot({ path: shot3 });
      console.log(`screenshot: ${shot3}`);
      step(`[${backend}] notification: ${JSON.stringify(toastText.slice(0, 160))}…`);
    }
    step(`[${backend}] passed`);
  } catch (err) {
    failed = true;
    const shot = path.join(RESULTS, `e2e-${backend}-failure.png`);
    await page.screenshot({ path: shot }).catch(() => undefined);
    console.error(`screenshot of the failure: ${shot}`);
    if (existsSync(server.log)) {
      console.error(`--- last lines of ${server.log} ---\n${readFileSync(server.log, 'utf8').split('\n').slice(-40).join('\n')}`);
    }
    throw err;
  } finally {
    await context.close().catch(() => undefined);
    try {
      await server.stop();
      step(`[${backend}] code-server and its processes are gone`);
    } catch (err) {
      if (!failed) {
        throw err;
      }
      console.error(String(err)); // the first failure is the one to report
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}

async function main(): Promise<void> {
  need(PYTHON, 'run `make setup` (or set CCTEST_PYTHON to a Python with cctest installed)');
  need(CODE_SERVER, 'run `bash tools/install-code-server.sh` (or set CODE_SERVER)');
  need(CHROMIUM, 'run `bash tools/install-code-server.sh` (it installs chromium) or set CHROMIUM');
  mkdirSync(RESULTS, { recursive: true });

  step('building the .vsix (esbuild bundle + vsce package --no-dependencies)');
  execFileSync('npm', ['run', '--silent', 'package'], { cwd: EXTENSION_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const vsix = path.join(EXTENSION_ROOT, 'cctest.vsix');
  need(vsix, 'vsce did not write it');

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    for (const backend of BACKENDS) {
      await oneBackend(backend, vsix, browser);
    }
  } finally {
    await browser.close();
  }
  step(`all passed (${BACKENDS.join(', ')})`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`e2e FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    process.exit(1);
  },
);
