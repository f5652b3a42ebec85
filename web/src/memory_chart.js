// The memory plan as a picture: one rectangle per tensor, x = the steps (operator calls)
// it is live, y = its byte range in the pool; lines for the pool size and lower bound.
const SVG = 'http://www.w3.org/2000/svg';

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// The kernel a step calls, without the model's "tvmgen_<model>_" prefix.
function shortName(name) {
  return name.replace(/^tvmgen_[A-Za-z0-9]+_/, '');
}

export function memoryChart(plan) {
  const callees = plan.step_callees || [];
  const named = callees.some((c) => c);
  const W = 640, H = named ? 380 : 320, left = 64, right = 16, top = 24, bottom = named ? 96 : 36;
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
  // Each step's column is named by the kernel it calls: the operator that writes the
  // tensors starting there.
  if (named && steps <= 48) {
    callees.forEach((c, s) => {
      if (!c) return;
      const cx = (x(s) + x(s + 1)) / 2, cy = H - bottom + 22;
      const t = el('text', { x: cx, y: cy, class: 'step-callee', 'text-anchor': 'end', transform: `rotate(-35 ${cx} ${cy})`, 'data-step': s }, shortName(c));
      t.append(el('title', {}, `step ${s}: ${c}`));
      svg.append(t);
    });
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
    const writer = callees[t.first_step] ? `, written by ${callees[t.first_step]}` : '';
    r.append(el('title', {}, `${t.name}: ${t.size} bytes at offset ${t.offset}, live steps ${t.first_step}..${t.last_step} (${t.pool})${writer}`));
    svg.append(r);
    const h = y(t.offset) - y(t.offset + t.size);
    if (h >= 12) {
      svg.append(el('text', { x: x(t.first_step) + 4, y: y(t.offset + t.size) + 12, class: 'tensor-label' }, t.name));
    }
  });
  return svg;
}
