// A model's bundled samples as Run inputs: its test images (an .npy of N images) drawn as
// pictures to click, with their labels; a click runs the model on that image.

// The typed array reading each .npy dtype the page takes (little-endian or byte-sized).
const NPY_ARRAYS = {
  '<f4': Float32Array, '<f8': Float64Array, '|i1': Int8Array, '|u1': Uint8Array, '<i2': Int16Array,
  '<u2': Uint16Array, '<i4': Int32Array, '<u4': Uint32Array, '<i8': BigInt64Array, '|b1': Uint8Array,
};
const NPY_DTYPES = {
  '<f4': 'float32', '<f8': 'float64', '|i1': 'int8', '|u1': 'uint8', '<i2': 'int16',
  '<u2': 'uint16', '<i4': 'int32', '<u4': 'uint32', '<i8': 'int64', '|b1': 'bool',
};

// An .npy of version 1, 2 or 3 (C order): {shape, dtype, values}; a malformed or
// truncated file, a Fortran-order one or a dtype not in NPY_ARRAYS is an Error that says so.
export function parseNpy(buffer) {
  const bytes = new Uint8Array(buffer);
  if (bytes.length < 10 || bytes[0] !== 0x93 || String.fromCharCode(...bytes.subarray(1, 6)) !== 'NUMPY') throw new Error('not an .npy file');
  const v1 = bytes[6] < 2;
  const view = new DataView(buffer);
  const headerLen = v1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = (v1 ? 10 : 12) + headerLen;
  if (start > bytes.length) throw new Error('not an .npy file: its header is cut off');
  const header = new TextDecoder().decode(bytes.subarray(v1 ? 10 : 12, start));
  const descr = (/'descr':\s*'([^']+)'/.exec(header) || [])[1];
  const shapeText = (/'shape':\s*\(([^)]*)\)/.exec(header) || [])[1];
  if (descr === undefined || shapeText === undefined) throw new Error('not an .npy file: no dtype or shape in its header');
  const shape = shapeText.split(',').map((x) => x.trim()).filter(Boolean).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error('Fortran-order .npy files are not supported');
  const Array_ = NPY_ARRAYS[descr];
  if (!Array_) throw new Error(`.npy dtype ${descr} is not supported`);
  const count = shape.reduce((a, d) => a * d, 1);
  if (bytes.length - start < count * Array_.BYTES_PER_ELEMENT) {
    throw new Error(`the .npy file is cut off: shape (${shape.join(', ')}) needs ${count * Array_.BYTES_PER_ELEMENT} bytes of data, it has ${bytes.length - start}`);
  }
  const data = buffer.slice(start, start + count * Array_.BYTES_PER_ELEMENT);
  return { shape, dtype: NPY_DTYPES[descr], values: Array.from(new Array_(data), Number) };
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
