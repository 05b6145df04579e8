// The HUD's plots: the last minute of the server's step time, the
// snapshots per second this page receives and the bytes per second, as
// three small time series drawn by uPlot (npm, bundled like three.js; no
// hand-drawn canvas code). A point every HUD refresh; a minute kept.
import uPlot from 'uplot';

const WINDOW_S = 60;

// [key, caption, colour]: the series, in the order of push()'s values.
const SERIES = [
  ['step', 'step time, ms', '#ffb74d'],
  ['sps', 'snapshots per second', '#4fc3f7'],
  ['bps', 'received, kB/s', '#81c784'],
];

export class HudPlots {
  /** Draws into `root` (an element of the HUD); `width` px each. */
  constructor(root, width = 220) {
    this.t = []; // seconds (page time)
    this.values = SERIES.map(() => []);
    this.plots = SERIES.map(([key, label, colour]) => {
      const box = document.createElement('div');
      box.className = 'hud-plot';
      box.dataset.series = key;
      const caption = document.createElement('span');
      caption.className = 'caption';
      caption.textContent = `${label} (the last minute)`;
      box.append(caption);
      root.append(box);
      return new uPlot({
        width,
        height: 56,
        legend: { show: false },
        cursor: { show: false },
        padding: [6, 4, 8, 0], // room for the axis' top and bottom labels
        scales: {
          // The same minute on every plot, ending now.
          x: { time: false, range: (u, min, max) => [max - WINDOW_S, max] },
          y: { range: (u, min, max) => [0, Math.max(max * 1.15, 1e-3)] },
        },
        axes: [
          { show: false },
          {
            size: 30, stroke: '#aab', font: '9px sans-serif', ticks: { show: false },
            grid: { stroke: 'rgba(255,255,255,0.08)' },
          },
        ],
        series: [{}, { stroke: colour, width: 1.5, fill: `${colour}22`, points: { show: false } }],
      }, [[], []], box);
    });
    this.updates = 0;
  }

  /** Adds a point at `seconds` (page time): [step ms, snapshots/s, bytes/s]; null for unknown. */
  push(seconds, values) {
    this.t.push(seconds);
    values.forEach((v, i) => this.values[i].push(i === 2 && v != null ? v / 1000 : v));
    while (this.t.length > 0 && this.t[0] < seconds - WINDOW_S) {
      this.t.shift();
      for (const v of this.values) v.shift();
    }
    this.plots.forEach((p, i) => p.setData([this.t, this.values[i]]));
    this.updates++;
  }

  /** What the browser test reads: the points each plot holds. */
  get points() {
    return this.plots.map((p) => p.data[0].length);
  }
}
