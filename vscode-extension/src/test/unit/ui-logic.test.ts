/** The pure parts of the UI: status bar text, mode cycle, defect labels and diff sides, debounce. */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { debounce } from '../../common/debounce';
import { type DefectRecord, defectDescription, defectLabel, fileName, parseSidePath, sidePath, sideText } from '../../common/defects';
import { type ModelLoad, nextMode, statusText, statusTooltip } from '../../common/status';

describe('status bar', () => {
  it('cycles repair → monitor → off → repair, and unknown values to monitor', () => {
    assert.equal(nextMode('repair'), 'monitor');
    assert.equal(nextMode('monitor'), 'off');
    assert.equal(nextMode('off'), 'repair');
    assert.equal(nextMode('bogus'), 'repair');
  });

  it('shows the mode and the last verdict', () => {
    const v = { text: 'cctest: 2/11 outliers · repaired', suspect: true };
    assert.equal(statusText('repair', 'running', v), '$(beaker) cctest [repair]: 2/11 outliers · repaired');
    assert.equal(statusText('monitor', 'running'), '$(beaker) cctest [monitor]: ready');
    assert.equal(statusText('off', 'running', v), '$(beaker) cctest [off]: off');
    assert.equal(statusText('repair', 'starting'), '$(loading~spin) cctest [repair]: starting…');
    assert.equal(statusText('repair', 'failed', v), '$(error) cctest [repair]: failed');
    assert.match(statusTooltip('repair', 'running', v, '/py'), /\(\/py\)\nMode: repair — click to switch to monitor\nLast completion: 2\/11 outliers · repaired/);
  });

  it('shows "loading model …" while the server loads its model (cctest/model), then the verdicts again', () => {
    const loading: ModelLoad = { state: 'loading', model: 'bundled', text: 'cctest: loading model bundled…' };
    const ready: ModelLoad = { state: 'ready', model: 'bundled', seconds: 14.8, text: 'cctest: loading model bundled… done (14.8 s)' };
    const failed: ModelLoad = { state: 'failed', model: '/m/mine', seconds: 0.4, text: 'cctest: loading model /m/mine… failed (0.4 s)' };
    const v = { text: 'cctest: 2/11 outliers · repaired' };
    assert.equal(statusText('repair', 'running', undefined, loading), '$(loading~spin) cctest [repair]: loading model bundled…');
    assert.equal(statusText('monitor', 'running', v, loading), '$(loading~spin) cctest [monitor]: loading model bundled…');
    assert.equal(statusText('repair', 'running', undefined, ready), '$(beaker) cctest [repair]: ready');
    assert.equal(statusText('repair', 'running', v, ready), '$(beaker) cctest [repair]: 2/11 outliers · repaired');
    assert.equal(statusText('repair', 'starting', undefined, loading), '$(loading~spin) cctest [repair]: starting…');
    assert.match(statusTooltip('repair', 'running', undefined, '/py', loading), /\nModel: bundled, loading…$/);
    assert.match(statusTooltip('repair', 'running', v, '/py', ready), /\nModel: bundled, loaded in 14\.8 s\n/);
    assert.match(statusTooltip('repair', 'running', undefined, '/py', failed), /\nModel: \/m\/mine, failed to load \(see the output\)$/);
  });
});

const record: DefectRecord = {
  id: 7,
  time: '2026-11-22T10:00:00+00:00',
  uri: 'file:///w/my%20code.py',
  line: 4,
  character: 8,
  prompt: 'a\nb\nc\nd\ne\nf\ng\ndef add(x, y):\n    ',
  completions: [
    { source: 'original', text: 'return x * 2\n' },
    { source: 'REP_R', text: 'return x + y\n' },
    { source: 'REP_C', text: 'return x + y\n' },
  ],
  outliers: [0],
  suspect: true,
  chosen: 1,
  chosenCompletion: 'return x + y\n',
  originalCompletion: 'return x * 2\n',
  accepted: true,
};

describe('defect records', () => {
  it('labels a record with file, line and completion; describes its verdict', () => {
    assert.equal(fileName(record.uri), 'my code.py');
    assert.equal(defectLabel(record), 'my code.py:5  return x + y');
    assert.equal(defectDescription(record), '1/3 outliers · repaired · accepted');
    assert.equal(defectDescription({ ...record, suspect: false, accepted: false, outliers: [] }), '0/3 outliers · consistent');
    assert.equal(defectDescription({ ...record, chosenCompletion: record.originalCompletion, accepted: false }), '1/3 outliers · flagged');
  });

  it('shows both sides with the same context: the last six lines of the prompt', () => {
    const left = sideText(record, 'original');
    const right = sideText(record, 'repaired');
    assert.equal(left, 'd\ne\nf\ng\ndef add(x, y):\n    return x * 2\n');
    assert.equal(right, 'd\ne\nf\ng\ndef add(x, y):\n    return x + y\n');
  });

  it('round-trips the virtual document path', () => {
    assert.deepEqual(parseSidePath(sidePath(7, 'repaired')), { id: 7, side: 'repaired' });
    assert.equal(parseSidePath('/7/other.py'), undefined);
  });
});

describe('debounce', () => {
  it('runs once after a burst, and not at all when cancelled', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      let calls = 0;
      const d = debounce(() => calls++, 1000);
      d();
      d();
      mock.timers.tick(999);
      d();
      mock.timers.tick(999);
      assert.equal(calls, 0);
      mock.timers.tick(1);
      assert.equal(calls, 1);
      d();
      d.cancel();
      mock.timers.tick(5000);
      assert.equal(calls, 1);
    } finally {
      mock.timers.reset();
    }
  });
});
