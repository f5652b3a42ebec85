// The memory plan as a picture: one rectangle per tensor, x = the steps (operator calls)
// it is live, y = its byte range in the pool; lines for the pool size and lower bound.
const SVG = 'http://www.w3.org/2000/svg';

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function memoryChart(plan) {
  const W = 640, H = 320, left = 64, right = 16, top = 24, bottom = 36;
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'memory-chart', role: 'img' });
  const steps = Math.max(plan.steps, 1);
  const pool = Math.max(plan.pool_bytes, 1);
  const x = (s) => left + (s / steps) * (W - left - right);
  const y = (b) => H - bottom - (b / pool) * (H - top - bottom);
  svg.append(el('rect', { x: left, y: top, width: W - left - right, height: H - top - bottom, class: 'frame' }));
  for (let s = 0; s <= steps; ++s) {
    if (steps > 24 && s % Math.ceil(steps / 12)) continue;
    svg.append(el('text', { x: x(s), y: H - bottom + 14, class: 'tick', 'text-anchor': 'middle' }, String(s)));
  }
  svg.append(el('text', { x: (left + W - right) / 2, y: H - 4, class: 'axis', 'text-anchor': 'middle' }, 'step (operator call)'));
  svg.append(el('text', { x: 4, y: top - 8, class: 'axis' }, 'offset (bytes)'));
  svg.append(el('text', { x: left - 4, y: y(0) + 4, class: 'tick', 'text-anchor': 'end' }, '0'));
  svg.append(el('text', { x: left - 4, y: y(pool) + 4, class: 'tick', 'text-anchor': 'end' }, String(plan.pool_bytes)));
  const bound = el('line', { x1: left, x2: W - right, y1: y(plan.lower_bound), y2: y(plan.lower_bound), class: 'lower-bound' });
  bound.append(el('title', {}, `lower bound ${plan.lower_bound} bytes`));
  svg.append(bound);
  plan.tensors.forEach((t, i) => {
    if (t.first_step < 0) return;
    const r = el('rect', {
      x: x(t.first_step) + 1, width: Math.max(x(t.last_step + 1) - x(t.first_step) - 2, 2),
      y: y(t.offset + t.size), height: Math.max(y(t.offset) - y(t.offset + t.size), 1),
      class: 'tensor', 'data-name': t.name, fill: `hsl(${(i * 67) % 360} 60% 70%)`,
    });
    r.append(el('title', {}, `${t.name}: ${t.size} bytes at offset ${t.offset}, live steps ${t.first_step}..${t.last_step} (${t.pool})`));
    svg.append(r);
    const h = y(t.offset) - y(t.offset + t.size);
    if (h >= 12) {
      svg.append(el('text', { x: x(t.first_step) + 4, y: y(t.offset + t.size) + 12, class: 'tensor-label' }, t.name));
    }
  });
  return svg;
}
