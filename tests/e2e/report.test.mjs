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

test('ragdoll-load --html says when it cannot write the report or find uPlot', { timeout: 60000 }, async () => {
  const server = await startServer();
  try {
    const args = ['--url', server.url, '--clients', '1', '--duration', '1', '--quiet'];
    const a = await run(LOAD, [...args, '--html', '/nonexistent/dir/r.html', 'clients/c/scenarios/demo.json']);
    assert.match(a.stderr, /cannot write \/nonexistent\/dir\/r.html/);
    const dir = mkdtempSync(join(tmpdir(), 'rd-report-'));
    writeFileSync(join(dir, 'x'), '');
    const b = await run(LOAD, [...args, '--html', join(dir, 'r.html'), '--uplot', dir, 'clients/c/scenarios/demo.json']);
    assert.match(b.stderr, /cannot read .*uPlot\.iife\.min\.js/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
