/**
 * The end-to-end test's wait on the defect log: it wakes on a change of the log's files (an event),
 * not on a clock, and its limit is only a hang guard.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitForFile } from '../e2e/wait';

const HOUR = 3_600_000;

describe('waitForFile', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cctest-wait-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('probes again when the file or its write-ahead log changes, with no poll to wake it', { timeout: 120_000 }, async () => {
    const log = path.join(dir, 'defects.sqlite3');
    writeFileSync(log, '');
    let probes = 0;
    let wrote = false;
    const found = waitForFile('a line', log, HOUR, async () => {
      probes += 1;
      if (!wrote) {
        wrote = true;
        // the change comes after this probe found nothing; only its notice can wake the wait
        setImmediate(() => appendFileSync(`${log}-wal`, 'commit\n'));
        return undefined;
      }
      return 'seen';
    }, HOUR);
    assert.equal(await found, 'seen');
    assert.ok(probes >= 2);
  });

  it('gives up at its hang guard, saying what it waited for and the last error', async () => {
    const log = path.join(dir, 'other.sqlite3');
    await assert.rejects(
      waitForFile('a record', log, 50, async () => {
        throw new Error('no such table');
      }, HOUR),
      /timed out after 50 ms \(a hang guard\) waiting for a record \(last error: Error: no such table\)/,
    );
  });
});
