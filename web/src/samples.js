// A model's bundled samples as Run inputs: its test images (an .npy of N images) drawn as
// pictures to click, with their labels; a click runs the model on that image.

// A little-endian .npy of version 1 or 2: {shape, values} for <f4, <f8, <i4 and <i8.
export function parseNpy(buffer) {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(...bytes.subarray(1, 6));
  if (bytes[0] !== 0x93 || magic !== 'NUMPY') throw new Error('not an .npy file');
  const v2 = bytes[6] >= 2;
  const view = new DataView(buffer);
  const headerLen = v2 ? view.getUint32(8, true) : view.getUint16(8, true);
  const start = (v2 ? 12 : 10) + headerLen;
  const header = new TextDecoder().decode(bytes.subarray(v2 ? 12 : 10, start));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((x) => x.trim()).filter(Boolean).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error('Fortran-order .npy files are not supported');
  const count = shape.reduce((a, d) => a * d, 1);
  const data = buffer.slice(start);
  const read = { '<f4': () => Array.from(new Float32Array(data, 0, count)), '<f8': () => Array.from(new Float64Array(data, 0, count)),
    '<i4': () => Array.from(new Int32Array(data, 0, count)), '<i8': () => Array.from(new BigInt64Array(data, 0, count), Number) }[descr];
  if (!read) throw new Error(`.npy dtype ${descr} is not supported`);
  return { shape, values: read() };
}

// One picture of an image [.., H, W] (its last two axes; channels averaged), grey from its
// own min to max, scaled up.
export function drawImage(values, h, w, scale = 4) {
  const canvas = document.createElement('canvas');
  canvas.width = w * scale;
  canvas.height = h * scale;
  const ctx = canvas.getContext('2d');
  const channels = values.length / (h * w);
  const px = (y, x) => { let s = 0; for (let c = 0; c < channels; ++c) s += values[c * h * w + y * w + x]; return s / channels; };
  let min = Infinity, max = -Infinity;
  for (let y = 0; y < h; ++y) for (let x = 0; x < w; ++x) { const v = px(y, x); min = Math.min(min, v); max = Math.max(max, v); }
  for (let y = 0; y < h; ++y) {
    for (let x = 0; x < w; ++x) {
      const g = Math.round(255 * (1 - (px(y, x) - min) / ((max - min) || 1)));  // dark ink on white
      ctx.fillStyle = `rgb(${g},${g},${g})`;
      ctx.fillRect(x * scale, y * scale, scale, scale);
    }
  }
  return canvas;
}

// The first `count` samples as buttons; `onPick(index, values, label)` runs one.
export function sampleStrip(images, labels, count, onPick) {
  const [n, ...rest] = images.shape;
  const size = rest.reduce((a, d) => a * d, 1);
  const h = rest[rest.length - 2], w = rest[rest.length - 1];
  const strip = document.createElement('div');
  strip.className = 'sample-strip';
  for (let i = 0; i < Math.min(n, count); ++i) {
    const values = images.values.slice(i * size, (i + 1) * size);
    const label = labels ? labels.values[i] : undefined;
    const b = document.createElement('button');
    b.className = 'sample';
    b.dataset.index = String(i);
    b.title = `test image ${i}${label !== undefined ? `, label ${label}` : ''}: run the model on it`;
    b.setAttribute('aria-label', b.title);
    const caption = document.createElement('span');
    caption.textContent = label !== undefined ? String(label) : `#${i}`;
    b.append(drawImage(values, h, w), caption);
    b.addEventListener('click', () => onPick(i, values, label));
    strip.append(b);
  }
  return strip;
}
