// ragdoll-load --html (issue 14, item 7): a short run writes a
// self-contained report that loads in Chromium with its plots and its
// table of phases, and no script error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { startServer } from '../lib/ragdolld.mjs';

const run = promisify(execFile);
const LOAD = process.env.RAGDOLL_LOAD ?? 'build/clients/c/ragdoll-load';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

test('a ragdoll-load --html report loads in Chromium with its plots', { timeout: 120000 }, async () => {
  const server = await startServer();
  const dir = mkdtempSync(join(tmpdir(), 'rd-report-'));
  const html = join(dir, 'report.html');
  try {
    const { stdout } = await run(LOAD, ['--url', server.url, '--clients', '5', '--duration', '3', '--quiet',
      '--html', html, 'clients/c/scenarios/demo.json']);
    assert.match(stdout, /latency/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
  const page = readFileSync(html, 'utf8');
  assert.ok(!/<script[^>]+src=/.test(page) && !/<link[^>]+href=/.test(page), 'nothing fetched: self-contained');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const p = await browser.newPage();
    const errors = [];
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`file://${html}`);
    const seen = await p.evaluate(() => ({
      plots: window.reportPlots?.length ?? 0,
      canvases: [...document.querySelectorAll('.plot canvas')].map((c) => [c.width, c.height]),
      phases: [...document.querySelectorAll('#phases tr td:first-child')].map((td) => td.textContent),
      points: window.reportPlots?.map((u) => u.data[0].length) ?? [],
    }));
    assert.deepEqual(errors, []);
    assert.equal(seen.plots, 4);
    assert.equal(seen.canvases.length, 4);
    assert.ok(seen.canvases.every(([w, h]) => w > 200 && h > 100), JSON.stringify(seen.canvases));
    assert.deepEqual(seen.phases, ['ramp', 'run', 'drain']);
    assert.ok(seen.points.every((n) => n >= 2), `points ${seen.points}`);
  } finally {
    await browser.close();
  }
});

test('ragdoll-load refuses, before running, a report it could not write or uPlot it cannot find', { timeout: 60000 }, async () => {
  const server = await startServer();
  // Exit code and stderr of a run expected to fail (execFile rejects).
  const fails = async (extra) => {
    const t0 = Date.now();
    const e = await run(LOAD, ['--url', server.url, '--clients', '1', '--duration', '5', '--quiet', ...extra,
      'clients/c/scenarios/demo.json']).then(() => null, (err) => err);
    assert.ok(e !== null, `${extra.join(' ')} succeeded`);
    assert.ok(Date.now() - t0 < 4000, 'refused before the 5 s run');
    return { code: e.code, stderr: e.stderr };
  };
  try {
    const dir = mkdtempSync(join(tmpdir(), 'rd-report-'));
    writeFileSync(join(dir, 'x'), '');
    let r = await fails(['--html', '/nonexistent/dir/r.html']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot write \/nonexistent\/dir\/r.html/);
    r = await fails(['--html', dir]); // a directory
    assert.equal(r.code, 2);
    r = await fails(['--html', join(dir, 'r.html'), '--uplot', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--html needs .*uPlot\.iife\.min\.js/);
    r = await fails(['--uplot', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--uplot is for --html/);
    r = await fails(['--json', '/nonexistent/dir/r.json']);
    assert.equal(r.code, 2);
    r = await fails(['--html', '/dev/full']); // opens, but no byte can be written
    assert.equal(r.code, 2);
    r = await fails(['--html', join(dir, 'same'), '--json', join(dir, 'same')]);
    assert.match(r.stderr, /the same file/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('ragdoll-load --html counts each phase where it happened', { timeout: 60000 }, async () => {
  // 10 clients at 4 a second: the ramp takes 2.25-2.5 s (the tenth starts
  // at 2.25 s); the run 4 s in all; the drain well under a second.
  const server = await startServer();
  const dir = mkdtempSync(join(tmpdir(), 'rd-report-'));
  const html = join(dir, 'r.html');
  try {
    await run(LOAD, ['--url', server.url, '--clients', '10', '--ramp', '4', '--duration', '4', '--quiet',
      '--html', html, 'clients/c/scenarios/demo.json']);
  } finally {
    assert.equal(await server.stop(), 0);
  }
  const rows = [...readFileSync(html, 'utf8').matchAll(/<tr><td>(\w+)<\/td><td>([\d.]+)<\/td>/g)]
    .map((m) => [m[1], Number(m[2])]);
  const secs = Object.fromEntries(rows);
  assert.ok(secs.ramp >= 2.1 && secs.ramp <= 2.7, JSON.stringify(secs));
  assert.ok(Math.abs(secs.ramp + secs.run - 4) < 0.3, JSON.stringify(secs));
  assert.ok(secs.drain < 1.0, JSON.stringify(secs));
});
