// Outputs people read: for every output its shape, dtype, range and first values, and
// for a classifier (a vector of probabilities) the top classes with a bar chart.

const TOP_K = 5;

export function formatValue(v) {
  return Number.isInteger(v) ? String(v) : v.toPrecision(4);
}

export function stats(values) {
  let min = Infinity, max = -Infinity, sum = 0;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
  }
  return { min, max, mean: values.length ? sum / values.length : NaN };
}

// A probability vector: one row of 2 to 1000 floats in [0, 1] summing to 1 (within
// `tolerance`: a quantized softmax's values are each rounded to a step of its scale).
export function isProbabilities(b, tolerance = 1e-3) {
  const rows = b.shape.filter((d) => d !== 1);
  if (!/^float/.test(b.dtype) || rows.length !== 1 || b.truncated || b.values.length < 2 || b.values.length > 1000) return false;
  const sum = b.values.reduce((a, v) => a + v, 0);
  return b.values.every((v) => v >= 0 && v <= 1) && Math.abs(sum - 1) < tolerance;
}

// An integer output with its quantization (a TFLite model's): the real numbers it stands
// for, real = scale * (q - zero point).
function dequantized(b, quant) {
  if (!quant || !/^u?int/.test(b.dtype) || !(quant.scale > 0)) return null;
  const zp = quant.zero_point || 0;
  return { ...b, dtype: 'float32', values: b.values.map((q) => quant.scale * (q - zp)) };
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// One card per output: a summary line, the first values (and the real values of a
// quantized output, given its {scale, zero_point}) and, for probabilities, the top
// classes as labelled bars.
export function outputCard(b, quant = null) {
  const card = el('div', 'output-card');
  card.dataset.name = b.name;
  const count = b.shape.reduce((a, d) => a * d, 1);
  const s = stats(b.values);
  card.append(el('h4', null, `${b.name}: ${b.dtype}[${b.shape.join(', ')}]`));
  card.append(el('p', 'output-stats', `${count} values · min ${formatValue(s.min)} · max ${formatValue(s.max)} · mean ${formatValue(s.mean)}` +
    `${b.truncated ? ` (of the first ${b.values.length})` : ''}`));
  const first = b.values.slice(0, 8).map(formatValue).join(', ');
  card.append(el('p', 'output-first', `first values: ${first}${b.values.length > 8 || b.truncated ? ', …' : ''}`));
  const real = dequantized(b, quant);
  if (real) {
    const shown = real.values.slice(0, 8).map((v) => v.toPrecision(4)).join(', ');
    card.append(el('p', 'output-real', `real values (scale ${quant.scale.toPrecision(6)}, zero point ${quant.zero_point || 0}): ${shown}${real.values.length > 8 || b.truncated ? ', …' : ''}`));
  }
  const probs = real && isProbabilities(real, 1e-3 + (real.values.length * quant.scale) / 2) ? real : isProbabilities(b) ? b : null;
  if (probs) {
    const top = probs.values.map((v, i) => ({ i, v })).sort((x, y) => y.v - x.v || x.i - y.i).slice(0, TOP_K);
    const list = el('ol', 'top-classes');
    list.setAttribute('aria-label', `top ${top.length} classes of ${b.name}`);
    for (const { i, v } of top) {
      const li = el('li', 'top-class');
      li.dataset.class = String(i);
      const label = el('span', 'class-label', `class ${i}`);
      const bar = el('span', 'bar');
      const fill = el('span', 'bar-fill');
      fill.style.width = `${(v * 100).toFixed(1)}%`;
      bar.append(fill);
      const p = el('span', 'class-prob', `${(v * 100).toFixed(1)}%`);
      li.append(label, bar, p);
      list.append(li);
    }
    card.append(el('p', 'output-kind', `a classifier's probabilities${probs === real ? ' (dequantized)' : ''}: the top ${top.length} classes`), list);
  }
  return card;
}
