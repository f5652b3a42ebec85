// The core's pass and backend timer as the page shows it beside the compile status:
// one row per step, lowering pass and backend part (core/support/timing.h), with its
// wall time and peak memory (for the wasm core: the growth of its linear memory).
import { formatBytes } from './model_view.js';

export function timingTable(timing) {
  const table = document.createElement('table');
  table.className = 'timing-table';
  const head = table.createTHead().insertRow();
  for (const h of ['', 'step, pass or backend', 'ms', `peak memory (${timing.memory})`]) head.insertCell().textContent = h;
  const body = table.createTBody();
  for (const row of timing.rows) {
    const tr = body.insertRow();
    tr.className = `timing-${row.kind}`;
    tr.insertCell().textContent = row.kind;
    tr.insertCell().textContent = `${'  '.repeat(row.depth)}${row.name}`;
    tr.insertCell().textContent = row.wall_ms.toFixed(1);
    tr.insertCell().textContent = formatBytes(row.peak_bytes);
  }
  return table;
}

// "812 ms in 13 passes and 6 steps": the top-level steps' time.
export function timingSummary(timing) {
  const top = timing.rows.filter((x) => x.depth === 0);
  const ms = top.reduce((a, x) => a + x.wall_ms, 0);
  return `${ms.toFixed(0)} ms in ${timing.rows.filter((x) => x.kind === 'pass').length} passes and ${top.length} steps`;
}
