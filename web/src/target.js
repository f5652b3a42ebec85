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
