// The target string and the options form, kept in sync: the text is the truth, the
// form edits one option of it at a time.
export function parseTarget(text) {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const kind = words.length && !words[0].startsWith('-') ? words.shift() : 'c';
  const options = [];
  for (const w of words) {
    const m = /^-([\w-]+)(?:=(.*))?$/.exec(w);
    if (m) options.push([m[1], m[2] === undefined ? '' : m[2]]);
  }
  return { kind, options };
}

export function formatTarget(t) {
  return [t.kind, ...t.options.map(([k, v]) => (v === '' ? `-${k}` : `-${k}=${v}`))].join(' ');
}

// A TIR module's default, as `microtir build`'s: packed functions with the registry.
export const TIR_DEFAULT = 'c -unpacked-api=0';
// A model opened over the TIR default (or a bare "c") gets compile's C interface.
export const isTirDefault = (text) => ['c', TIR_DEFAULT].includes(text.trim());

export function getOption(t, key, fallback) {
  const o = t.options.find(([k]) => k === key);
  return o ? o[1] : fallback;
}

// Sets (or, with value === undefined, removes) one option, keeping the others' order.
export function setOption(t, key, value) {
  const options = t.options.filter(([k]) => k !== key || value !== undefined).map(([k, v]) => [k, k === key ? value : v]);
  if (value !== undefined && !options.some(([k]) => k === key)) options.push([key, value]);
  return { kind: t.kind, options };
}

// What the core does with an option the text leaves out (driver/target.cc): the wasm
// target fixes the C interface with plain pointers and linked weights; a model compiles
// to a Model Library Format whose weights are linked unless -link-params=0
// (artifact/mlf.cc); otherwise the C interface with unpacked kernels, unless the text
// asks for the packed side (-unpacked-api=0 alone: the packed interface;
// -interface-api=packed alone: packed kernels), and no linked weights.
export function effectiveOption(t, key, sourceKind) {
  const given = getOption(t, key, undefined);
  if (given !== undefined) return given === 'true' ? '1' : given === 'false' ? '0' : given;
  if (key === 'workspace-byte-alignment') return '16';
  if (key === 'mcpu') return '';
  if (t.kind === 'wasm') return { 'interface-api': 'c', 'unpacked-api': '1', 'link-params': '1' }[key];
  if (key === 'interface-api') return ['0', 'false'].includes(getOption(t, 'unpacked-api', undefined)) ? 'packed' : 'c';
  if (key === 'unpacked-api') return getOption(t, 'interface-api', undefined) === 'packed' ? '0' : '1';
  if (key === 'link-params') return sourceKind === 'graph' ? '1' : '0';
  return undefined;
}

// The CPUs of the QEMU run targets (sim/cross_targets.cc): -mcpu picks the int8 schedules
// (the DSP ones on M4/M7/M33/M55), and the llvm kind builds for the CPU's triple.
export const CPU_TRIPLES = {
  'cortex-m3': 'thumbv7m-none-eabi',
  'cortex-m4': 'thumbv7em-none-eabihf',
  'cortex-m7': 'thumbv7em-none-eabihf',
  'cortex-m33': 'thumbv8m.main-none-eabihf',
  'cortex-m55': 'thumbv8.1m.main-none-eabihf',
};

// The core's refusals of option combinations, word for word, so the form can mark the
// choices it would refuse: [option, value] -> message, for the target `t`.
export const REFUSED = {
  wasm: 'the wasm target needs -interface-api=c -unpacked-api=1 -link-params=1 (its run export takes plain pointers and the module holds the weights)',
  cNeedsUnpacked: '-interface-api=c with -runtime=c needs -unpacked-api=1',
  wasmCpu: '-mcpu is an option of the c and llvm targets, not of "wasm"',
};

export function refusal(t, key, value, sourceKind) {
  const iface = effectiveOption(t, 'interface-api', sourceKind);
  if (t.kind === 'wasm' && ((key === 'interface-api' && value !== 'c') || (key === 'unpacked-api' && value !== '1') ||
    (key === 'link-params' && value !== '1'))) return REFUSED.wasm;
  // An interface left out follows -unpacked-api=0 to packed: only a written c is refused.
  if (key === 'unpacked-api' && value === '0' && iface === 'c' && getOption(t, 'interface-api', undefined) !== undefined)
    return REFUSED.cNeedsUnpacked;
  if (key === 'mcpu' && value !== '' && t.kind === 'wasm') return REFUSED.wasmCpu;
  return null;
}

// The target after the form set `key` (null: the kind) to `value`, with the options the
// change implies, so the form never produces a string the core refuses.
export function withFormChange(t, key, value, sourceKind) {
  if (key === null) {
    const dropped = (k) => (value === 'wasm' && ['interface-api', 'unpacked-api', 'link-params', 'mcpu'].includes(k)) ||
      (value !== 'wasm' && k === 'opt') || (value !== 'llvm' && k === 'mtriple');
    let next = { kind: value, options: t.options.filter(([k]) => !dropped(k)) };
    const cpu = getOption(next, 'mcpu', undefined);
    if (value === 'llvm' && CPU_TRIPLES[cpu]) next = setOption(next, 'mtriple', CPU_TRIPLES[cpu]);
    // A model leaving wasm keeps the C interface it compiled with there.
    if (value !== 'wasm' && sourceKind === 'graph' && getOption(next, 'interface-api', undefined) === undefined) {
      next = setOption(setOption(next, 'interface-api', 'c'), 'unpacked-api', '1');
    }
    return next;
  }
  // No CPU ('') is no -mcpu; with llvm, a CPU brings its triple along.
  let next = setOption(t, key, key === 'mcpu' && value === '' ? undefined : value);
  if (key === 'mcpu' && t.kind === 'llvm') next = setOption(next, 'mtriple', CPU_TRIPLES[value]);
  if (key === 'interface-api' && value === 'c') next = setOption(next, 'unpacked-api', '1');
  if (key === 'interface-api' && value === 'packed' && sourceKind === 'graph') next = setOption(next, 'link-params', '0');
  return next;
}
