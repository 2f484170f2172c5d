// The usage charts: for each environment, admitted and refused requests per
// UTC day over the period, drawn with uPlot from the table the server
// rendered under the chart (the table stays: it is the chart's text
// alternative, with the same numbers). Days without a row had no requests.
(() => {
  const DAY_SECONDS = 86_400;
  const HEIGHT = 240;
  const WHOLE_STEPS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7].map((p) => m * p)).sort((a, b) => a - b);
  // Whole days between ticks, never hours: each point is a UTC day. uPlot
  // takes 30 days as a month and puts month ticks on the 1st.
  const DAY_STEPS = [1, 2, 3, 7, 14, 30, 60, 90, 180, 365].map((n) => n * DAY_SECONDS);
  // A tick's label, 2026-11-27, is about 70 px wide in the axis font.
  const DAY_LABEL_SPACE = 90;
  const dayOf = (t) => new Date(t * 1000).toISOString().slice(0, 10);
  for (const chart of document.querySelectorAll('.chart[data-chart-for]')) {
    const table = document.getElementById(chart.dataset.chartFor);
    const counts = new Map(
      [...table.querySelectorAll('tbody tr[data-day]')].map((row) => [row.dataset.day, [Number(row.dataset.admitted), Number(row.dataset.refused)]]),
    );
    const days = Number(chart.dataset.days);
    const lastDay = Date.parse(`${chart.dataset.today}T00:00:00Z`) / 1000;
    const x = [];
    const admitted = [];
    const refused = [];
    for (let back = days - 1; back >= 0; back--) {
      const t = lastDay - back * DAY_SECONDS;
      const [a, r] = counts.get(dayOf(t)) ?? [0, 0];
      x.push(t);
      admitted.push(a);
      refused.push(r);
    }
    const bars = (align) => uPlot.paths.bars({ size: [0.45, 12], align });
    const plot = new uPlot(
      {
        width: chart.clientWidth,
        height: HEIGHT,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        // Half a day of room at each end, so the first and last days' bars are whole.
        scales: {
          x: { time: true, range: () => [x[0] - DAY_SECONDS / 2, x[x.length - 1] + DAY_SECONDS / 2] },
          y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        },
        series: [
          { label: 'Day (UTC)', value: (_u, t) => (t == null ? '--' : dayOf(t)) },
          { label: 'Admitted', stroke: '#1d4f91', fill: 'rgba(29, 79, 145, 0.5)', paths: bars(-1), points: { show: false } },
          { label: 'Refused (429)', stroke: '#a4262c', fill: 'rgba(164, 38, 44, 0.5)', paths: bars(1), points: { show: false } },
        ],
        axes: [
          {
            incrs: DAY_STEPS,
            space: DAY_LABEL_SPACE,
            values: (_u, ticks) => {
              const labels = ticks.map(dayOf);
              // What the day axis shows (it is drawn on the canvas), for anyone checking it.
              chart.dataset.dayLabels = labels.join(' ');
              return labels;
            },
          },
          // Requests are whole: the y axis steps by 1, 2, 5, 10, 20, 50, ...
          { label: 'requests', incrs: WHOLE_STEPS },
        ],
      },
      [x, admitted, refused],
      chart,
    );
    // The chart fills its container's width whatever the window's: a resize
    // redraws it at the new width, in the next frame (setSize inside the
    // observer's callback would resize what it observes).
    new window.ResizeObserver(() =>
      window.requestAnimationFrame(() => {
        if (chart.clientWidth !== plot.width) plot.setSize({ width: chart.clientWidth, height: HEIGHT });
      }),
    ).observe(chart);
    // What was plotted, for anyone checking the chart against the table.
    chart.dataset.plotted = JSON.stringify({ days: x.length, admitted: admitted.reduce((n, v) => n + v, 0), refused: refused.reduce((n, v) => n + v, 0) });
  }
})();
