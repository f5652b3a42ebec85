// The playground end to end in Debian's Chromium (headless, driven by playwright-core)
// against the built page served on 127.0.0.1: compile the examples, the pass list and
// its diff, the C artifact, the memory chart, located errors, the timeout; then issue
// 28: stale results, Cancel, the target form, lingering results, artifact folders, change
// marks, layout at three sizes, dark mode and contrast, keyboard, outputs, the model view,
// source <-> output, Share, test images, and no page or console error in the whole suite.
// One browser serves every test. Screenshots of the main views go to MICROTIR_SCREENSHOTS
// (default: beside the built page).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');
const { serve } = require('./serve.js');
const { tfliteMacs } = require('../../wasm/test/tflite_macs.js');

const webDir = path.resolve(process.env.MICROTIR_WEB_DIR || path.join(__dirname, '../../build-wasm/web'));
const shots = path.resolve(process.env.MICROTIR_SCREENSHOTS || path.join(webDir, '../screenshots'));
const chromiumPath = process.env.MICROTIR_CHROMIUM || '/usr/bin/chromium';
const source = path.resolve(__dirname, '../..');
// Third-party models and TFLM's outputs (never in the project): ../shared/tflite beside the
// source tree, when it is there; the tests that need it say plainly that they were skipped.
const sharedTflite = process.env.MICROTIR_SHARED_TFLITE || path.join(source, '..', 'shared', 'tflite');
const SHARED_SKIP = 'skipped: ../shared/tflite not found';
const haveShared = () => { if (fs.existsSync(sharedTflite)) return true; console.log(SHARED_SKIP); return false; };
// The bundled TFLite example as the page serves it (made by the build with flatc).
const digitsTflite = () => path.join(webDir, 'examples/tflite/digits_int8.tflite');

let server, browser, base;
test.before(async () => {
  assert.ok(fs.existsSync(path.join(webDir, 'index.html')), `${webDir} holds the built page (npm run build)`);
  fs.mkdirSync(shots, { recursive: true });
  server = await serve(webDir, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});
test.after(async () => {
  if (browser) await browser.close();
  if (server) server.close();
});

// Every page error and console error of the whole suite, with the test it happened in:
// the last test checks there were none.
const suiteErrors = [];

async function openPage(query = '', viewport = { width: 1500, height: 1000 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  const where = query || '/';
  page.on('pageerror', (e) => { errors.push(String(e)); suiteErrors.push(`${where}: page error: ${e}`); });
  page.on('console', (m) => { if (m.type() === 'error') suiteErrors.push(`${where}: console error: ${m.text()}`); });
  await page.goto(base + query);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  return { page, errors };
}

async function setSource(page, f) {
  await page.evaluate((fs) => {
    const { editor } = window.microtirPlayground;
    const text = (0, eval)(fs)(editor.state.doc.toString());
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: text } });
  }, f.toString());
}

async function clearStatus(page) {
  await page.evaluate(() => { document.getElementById('status').textContent = ''; });
}

async function compileStatus(page) {
  // ... and the pass IR texts and archive that follow a compile in the background (issue 43).
  await page.waitForFunction(() => /compiled|error|stopped|cancelled/.test(document.getElementById('status').textContent) &&
    document.body.dataset.details !== 'pending', null, { timeout: 60000 });
  return page.textContent('#status');
}

test('the matmul example: passes, IR, a diff, the C artifact', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled in \d+ ms/);
  const passes = await page.$$eval('#passes .pass', (els) => els.map((e) => ({ text: e.textContent, changed: e.classList.contains('changed') })));
  assert.equal(passes.length, 15);
  assert.match(passes[0].text, /verify_well_formed/);
  assert.ok(passes.some((p) => p.changed && /flatten_buffer/.test(p.text)));
  assert.ok(passes.some((p) => !p.changed && /unchanged/.test(p.text)));
  // The C kernel is on screen.
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  const c = await page.textContent('#artifact-view');
  assert.match(c, /int32_t matmul\(TVMValue\* args/);
  // A TIR module's default target is build's, written out: the packed functions above.
  assert.equal(await page.inputValue('#target'), 'c -unpacked-api=0');
  await page.screenshot({ path: path.join(shots, 'matmul.png'), fullPage: true });

  // Click a pass that changed the IR, then its diff with the previous pass.
  await page.click('#passes .pass:has-text("flatten_buffer")');
  assert.match(await page.textContent('#pass-view'), /C_flat\[i \* 3 \+ j\]/);
  await page.click('#show-diff');
  await page.waitForSelector('#pass-view .cm-mergeView');
  assert.match(await page.textContent('#pass-title'), /plan_memory → flatten_buffer/);
  const deleted = await page.$$eval('#pass-view .cm-deletedChunk, #pass-view .cm-changedLine', (els) => els.length);
  assert.ok(deleted > 0, 'the diff marks changed lines');
  assert.match(await page.textContent('#pass-view .cm-merge-b'), /C_flat/);
  await page.screenshot({ path: path.join(shots, 'pass-diff.png'), fullPage: true });

  // A diff against any step: the input against the last pass.
  await page.click('#passes .pass:last-child');
  await page.selectOption('#diff-base', 'input');
  await page.waitForSelector('#pass-view .cm-mergeView');
  assert.match(await page.textContent('#pass-title'), /input → verify_well_formed/);
  // The editors draw the lines in view only: scroll down the (wrapped) diff until it shows.
  await page.waitForFunction(() => {
    const m = document.querySelector('#pass-view .cm-mergeView');
    m.scrollTop += 150;
    return /arg_type_ids/.test(m.querySelector('.cm-merge-b').textContent);
  }, null, { polling: 100, timeout: 10000 });
  await page.selectOption('#diff-base', 'prev');

  // Hiding unchanged passes leaves the changed ones (and the selected one).
  await page.check('#hide-unchanged');
  const visible = await page.$$eval('#passes .pass', (els) => els.map((e) => e.textContent));
  assert.ok(visible.length < 9 && visible.length >= 2, visible.join(' | '));
  assert.deepEqual(errors, []);
  await page.close();
});

test('a broken program shows file:line:col and an editor marker; clicking jumps there', async () => {
  const { page, errors } = await openPage();
  await compileStatus(page);
  await page.evaluate(() => {
    const { editor } = window.microtirPlayground;
    const text = editor.state.doc.toString().replace('T.grid(4, 3):', 'T.grid(4, 3:');
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: text } });
  });
  await page.click('#compile');
  assert.match(await compileStatus(page), /error/);
  const diag = await page.textContent('#diagnostics .diagnostic');
  const line = (await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString())).split('\n').findIndex((l) => l.includes('T.grid(4, 3:')) + 1;
  assert.match(diag, new RegExp(`matmul\\.tir:${line}:\\d+: error:`));
  await page.waitForSelector('#editor .cm-lintRange-error, #editor .cm-lint-marker-error');
  await page.click('#diagnostics .diagnostic.located');
  const cursorLine = await page.evaluate(() => {
    const { editor } = window.microtirPlayground;
    return editor.state.doc.lineAt(editor.state.selection.main.head).number;
  });
  assert.equal(cursorLine, line);
  await page.screenshot({ path: path.join(shots, 'error.png'), fullPage: true });
  // A refused target is an error too, and the target form follows the text.
  await page.evaluate(() => {
    const { editor } = window.microtirPlayground;
    const text = editor.state.doc.toString().replace('T.grid(4, 3:', 'T.grid(4, 3):');
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: text } });
  });
  await page.fill('#target', 'c -runtime=cpp -unpacked-api=1');
  assert.equal(await page.inputValue('#opt-unpacked'), '1');
  await page.click('#compile');
  await compileStatus(page);
  assert.match(await page.textContent('#diagnostics'), /runtime=cpp/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the digits model: MLF artifacts and a memory chart with one rectangle per tensor', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  const tabs = await page.$$eval('.artifact-tab', (els) => els.map((e) => e.dataset.path));
  assert.ok(tabs.includes('codegen/host/include/tvmgen_digits.h'));
  assert.ok(tabs.includes('metadata.json'));
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  assert.match(await page.textContent('#artifact-view'), /tvmgen_digits_/);
  const plan = await page.evaluate(() => window.microtirPlayground.state.response.memory);
  const rects = await page.$$eval('.memory-chart rect.tensor', (els) => els.length);
  assert.equal(rects, plan.reduce((n, p) => n + p.tensors.filter((t) => t.first_step >= 0).length, 0));
  assert.match(await page.textContent('#memory'), /pool 2560 bytes, lower bound 2560 bytes/);
  // The main's steps are named by the kernel each calls (the operator writing there).
  assert.deepEqual(await page.$$eval('.memory-chart >> nth=0', (svgs) => [...svgs[0].querySelectorAll('text.step-callee')].map((t) => t.firstChild.textContent)),
    ['fused_bn1_relu1', 'pool1', 'fused_conv2_relu2', 'pool2', 'fc', 'probs']);  // flat is a view of pool2: no call
  assert.match(await page.$eval('.memory-chart rect.tensor[data-name="pool1"] title', (t) => t.textContent), /written by tvmgen_digits_pool1$/);
  // Run: the model's main in the interpreter; the output is ten probabilities.
  await page.click('#run');
  await page.waitForSelector('#run-output tr.run-buffer.output');
  const probs = await page.evaluate(() => window.microtirPlayground.state.response.run.buffers.find((b) => b.role === 'output').values);
  assert.equal(probs.length, 10);
  assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 1) < 1e-4, 'softmax sums to 1');
  // The whole MLF downloads as a .tar made from the compiler's archive.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-tar')]);
  assert.equal(download.suggestedFilename(), 'digits.tar');
  await page.screenshot({ path: path.join(shots, 'digits.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('the digits model through the wasm backend: Binaryen loads only then, outputs equal the interpreter', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  const requests = [];
  page.context().on('request', (r) => requests.push(r.url()));
  assert.match(await compileStatus(page), /compiled/);
  assert.ok(!requests.some((u) => /binaryen\.js|wasm_backend\.js/.test(u)), 'no Binaryen before a wasm run');
  await page.selectOption('#run-backend', 'wasm');
  await page.click('#run');
  await page.waitForSelector('#wasm-run', { timeout: 120000 });
  const run = await page.evaluate(() => window.microtirPlayground.state.response.run);
  assert.equal(run.wasm.error, undefined);
  const ref = run.buffers.find((b) => b.role === 'output');
  const got = run.wasm.outputs.find((o) => o.name === ref.name);
  assert.equal(got.values.length, 10);
  assert.deepEqual(got.values, ref.values, 'the wasm module equals the interpreter bit for bit');
  assert.equal(await page.getAttribute('#wasm-run', 'data-equal'), '1');
  assert.match(await page.textContent('#wasm-run .wasm-timing'),
    /wasm \(Binaryen -O2, \d+ bytes\): [\d.]+ µs per inference \(mean of 20\) vs the interpreter's [\d.]+ ms; outputs equal/);
  assert.ok(requests.some((u) => /binaryen\.js$/.test(u)), 'Binaryen was fetched for the wasm run');
  // The compile used target "wasm": the core's .wat, and the page's .wasm among the artifacts.
  const tabs = await page.$$eval('.artifact-tab', (els) => els.map((e) => e.dataset.path));
  assert.ok(tabs.includes('codegen/host/src/digits.wat'));
  assert.ok(tabs.includes('codegen/host/lib/digits.wat'));
  await page.click('.artifact-tab[data-path="codegen/host/lib/digits.wasm"]');
  assert.match(await page.textContent('#artifact-view'), /digits\.wasm: \d+ bytes of WebAssembly/);
  // A layer of the model view shows its kernel as WebAssembly text.
  await page.click('#model-graph .graph-node[data-name="fc"]');
  assert.match(await page.textContent('#model-detail h5 >> nth=1'), /codegen\/host\/src\/digits\.wat/);
  const wat = await page.textContent('#model-detail .node-generated');
  assert.match(wat, /^\(func \$tvmgen_digits_fc \(param/);
  // The cost table times each layer of the wasm run: one time per kernel, fused layers
  // pointing at it, and the chosen layer names its time.
  const nodes = await page.evaluate(() => window.microtirPlayground.state.response.model.nodes);
  const kernels = [...new Set(nodes.map((n) => n.kernel).filter(Boolean))];  // flat is a view: no kernel
  assert.ok(kernels.length >= 5 && kernels.length < nodes.length, 'digits has fused layers');
  assert.deepEqual(run.wasm.layers.map((l) => l.kernel), kernels);
  for (const l of run.wasm.layers) assert.ok(l.calls === 1 && Number.isFinite(l.ms) && l.ms >= 0, JSON.stringify(l));
  const times = await page.$$eval('#model-costs tr.layer-row', (rows) => rows.map((r) => r.lastElementChild.textContent));
  assert.equal(times.length, nodes.length);
  nodes.forEach((n, i) => assert.match(times[i], !n.kernel ? /^—$/ : nodes.findIndex((m) => m.kernel === n.kernel) < i ? /^fused ↑$/ : /^[\d.]+ (µs|ms)$/, n.name));
  assert.match(await page.textContent('#model-detail .node-facts'), /· [\d.]+ (µs|ms) per inference in the last wasm run \(kernel tvmgen_digits_fc\)/);
  assert.equal((wat.match(/\(/g) || []).length, (wat.match(/\)/g) || []).length, 'one whole function');
  await page.screenshot({ path: path.join(shots, 'digits-wasm.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('device placement: layers on two simulated NPUs get their own source files', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  await page.fill('#devices', 'npu0=conv2d npu1=dense');
  await page.click('#compile');
  await page.waitForSelector('.artifact-tab[data-path="codegen/npu0/src/lib0.c"]', { timeout: 60000 });
  const tabs = await page.$$eval('.artifact-tab', (els) => els.map((e) => e.dataset.path));
  assert.ok(tabs.includes('codegen/npu0/src/lib0.c'), tabs.join(' '));
  assert.ok(tabs.includes('codegen/npu1/src/lib0.c'), tabs.join(' '));
  await page.click('.artifact-tab[data-path="codegen/host/include/tvmgen_digits.h"]');
  assert.match(await page.textContent('#artifact-view'), /struct tvmgen_digits_devices/);
  // An op the device does not run is a diagnostic.
  await page.fill('#devices', 'npu0=softmax');
  await page.click('#compile');
  await page.waitForFunction(() => document.querySelector('#diagnostics').textContent.includes('cannot run on device'));
  assert.deepEqual(errors, []);
  await page.close();
});

test('a shared URL reproduces the state in a fresh page', async () => {
  const { page } = await openPage();
  await compileStatus(page);
  await page.evaluate(() => {
    const { editor } = window.microtirPlayground;
    editor.dispatch({ changes: { from: 0, insert: '# shared by a link\n' } });
  });
  await page.fill('#target', 'c -unpacked-api=1');
  await page.click('#compile');
  await compileStatus(page);
  await page.click('#passes .pass:has-text("make_unpacked_api")');
  await page.click('#show-diff');
  await page.click('.artifact-tab[data-path="codegen/host/src/lib1.c"]');
  const url = page.url();
  assert.match(url, /#s=/);
  const text = await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString());
  await page.close();

  const { page: fresh } = await openPage(url.slice(base.length));
  assert.equal(await fresh.evaluate(() => window.microtirPlayground.editor.state.doc.toString()), text);
  assert.equal(await fresh.inputValue('#target'), 'c -unpacked-api=1');
  assert.equal(await fresh.inputValue('#opt-unpacked'), '1');
  assert.match(await fresh.textContent('#passes .pass.selected'), /make_unpacked_api/);
  await fresh.waitForSelector('#pass-view .cm-mergeView');
  assert.equal(await fresh.getAttribute('.artifact-tab.active', 'data-path'), 'codegen/host/src/lib1.c');
  await fresh.close();
});

test('a runaway compile is stopped by the timeout and the page still compiles', async () => {
  const { page } = await openPage('?timeout_ms=1500&debug_spin_ms=600000');
  assert.match(await compileStatus(page), /longer than 1.5 s and was stopped/);
  // The page answers: a click still works and the (fresh) worker still compiles, once the
  // spinning hook is off.
  await page.evaluate(() => history.replaceState(null, '', '?timeout_ms=30000'));
  await page.click('#compile');
  await page.waitForFunction(() => /compiled/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
  await page.close();
});

test('every example compiles in the page', async () => {
  const { page } = await openPage();
  await compileStatus(page);
  const names = await page.$$eval('#examples option:not([disabled])', (els) => els.map((e) => e.value));
  assert.ok(names.length >= 5);
  for (const name of names) {
    await page.evaluate(() => { document.getElementById('status').textContent = ''; });
    await page.selectOption('#examples', name);
    const status = await compileStatus(page);
    assert.match(status, /compiled/, `${name}: ${status} ${await page.textContent('#diagnostics')}`);
    assert.ok(await page.$$eval('#passes .pass', (els) => els.length) > 0, name);
  }
  await page.close();
});

// The browser's ONNX path: an .onnx file opened in the page becomes a JSON graph in the
// worker (src/onnx_import.js) and compiles through the wasm core to the artifact the
// native `microtir compile model.onnx` writes, file for file.
test('digits.onnx opened in the page compiles to the native artifact', async (t) => {
  const cli = process.env.MICROTIR_NATIVE_CLI;
  if (!cli || !fs.existsSync(cli)) return t.skip('MICROTIR_NATIVE_CLI (the native microtir) is not given');
  const onnx = path.join(source, 'models/digits/digits.onnx');
  const native = fs.mkdtempSync(path.join(require('os').tmpdir(), 'mtir-onnx-'));
  try {
    // The page's target string, written out (metadata.json names the keys a string leaves out).
    require('child_process').execFileSync(cli, ['compile', onnx, '--target', 'c -executor=aot -interface-api=c -unpacked-api=1', '-o', native]);
    const { page, errors } = await openPage();
    await compileStatus(page);
    await page.evaluate(() => { document.getElementById('status').textContent = ''; });
    await page.setInputFiles('#load', onnx);
    assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
    assert.equal(await page.textContent('#source-name'), 'digits.json (from digits.onnx)');
    assert.equal(await page.inputValue('#target'), 'c -executor=aot -interface-api=c -unpacked-api=1');  // compile's default, written out
    const graph = JSON.parse(await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString()));
    assert.equal(graph.format, 'microtir-graph');
    assert.deepEqual(graph.nodes.map((n) => n.op), ['conv2d', 'batch_norm', 'relu', 'max_pool2d', 'conv2d', 'relu', 'max_pool2d', 'flatten', 'dense', 'softmax']);
    const artifacts = await page.evaluate(() => window.microtirPlayground.state.response.artifacts);
    const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
    // Every file but the model's own copy in src/ (the page compiled the JSON graph).
    const nativeFiles = walk(native).map((f) => path.relative(native, f)).filter((f) => !f.startsWith('src/')).sort();
    assert.deepEqual(artifacts.map((a) => a.path).filter((f) => !f.startsWith('src/')).sort(), nativeFiles);
    assert.ok(artifacts.some((a) => a.path === 'src/digits.json'), 'the graph is the source in the artifact');
    let cFiles = 0;
    for (const a of artifacts.filter((x) => !x.path.startsWith('src/'))) {
      const bytes = a.text !== undefined ? Buffer.from(a.text, 'utf8') : Buffer.from(a.base64, 'base64');
      assert.ok(bytes.equals(fs.readFileSync(path.join(native, a.path))), `${a.path} differs from the native compile's`);
      if (a.path.endsWith('.c')) ++cFiles;
    }
    assert.ok(cFiles >= 2, `${cFiles} C files`);
    await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
    assert.match(await page.textContent('#artifact-view'), /tvmgen_digits_/);
    await page.screenshot({ path: path.join(shots, 'onnx.png'), fullPage: true });

    // A model the converter refuses, dropped on the editor: the native message, no compile.
    const bytes = [...fs.readFileSync(path.join(source, 'tests/onnx/malformed/unsupported_op.onnx'))];
    await page.evaluate((b) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(b)], 'elu.onnx'));
      document.getElementById('status').textContent = '';
      document.getElementById('source-pane').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, bytes);
    assert.match(await compileStatus(page), /import error: elu\.onnx was not converted/);
    assert.match(await page.textContent('#diagnostics'), /unsupported: node 'y' \(Elu\): operator 'Elu'/);
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    fs.rmSync(native, { recursive: true, force: true });
  }
});

// ---- issue 28: no stale state, cancel, the target form, lingering results, artifacts ----

test('a failed compile marks the results out of date; nothing throws, downloads say why they are off', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.isEnabled('#download-tar'), true);
  assert.equal(await page.isHidden('#stale-note'), true);
  await setSource(page, (t) => t.replace('T.grid(4, 3):', 'T.grid(4, 3:'));
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /error/);
  assert.match(await page.textContent('#stale-note'), /Out of date: the last compile failed with 1 error\(s\)\. The passes, artifacts and memory plan below are from the last successful compile/);
  assert.equal(await page.getAttribute('#result-pane', 'class'), 'stale');
  // Every control of the panels still works on the results shown.
  await page.click('#passes .pass:has-text("flatten_buffer")');
  assert.match(await page.textContent('#pass-view'), /C_flat/);
  await page.click('#show-diff');
  await page.waitForSelector('#pass-view .cm-mergeView');
  await page.check('#hide-unchanged');
  await page.click('#show-ir');
  await page.click('.artifact-tab[data-path="codegen/host/src/lib1.c"]');
  assert.match(await page.textContent('#artifact-view'), /TVMSystemLibEntryPoint/);
  for (const b of ['#download-file', '#download-tar']) {
    assert.equal(await page.isDisabled(b), true, b);
    assert.match(await page.getAttribute(b, 'title'), /nothing to download: the last compile failed/);
  }
  // Fixed, it compiles and the marks go.
  await setSource(page, (t) => t.replace('T.grid(4, 3:', 'T.grid(4, 3):'));
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.isHidden('#stale-note'), true);
  assert.equal(await page.isEnabled('#download-tar'), true);
  const url = page.url();
  assert.deepEqual(errors, []);
  await page.close();

  // A link to a broken program: no results, said so, nothing to download.
  const broken = await openPage(url.slice(base.length));
  await broken.page.evaluate(() => {
    const { editor } = window.microtirPlayground;
    editor.dispatch({ changes: { from: 0, insert: ')' } });
  });
  await clearStatus(broken.page);
  await broken.page.click('#compile');
  assert.match(await compileStatus(broken.page), /error/);
  const link = broken.page.url();
  await broken.page.close();
  const { page: third, errors: thirdErrors } = await openPage(link.slice(base.length));
  assert.match(await compileStatus(third), /error/);
  assert.equal(await third.textContent('#stale-note'), 'No results: the last compile failed with 1 error(s).');
  await third.click('#show-diff');
  await third.check('#hide-unchanged');
  assert.equal(await third.isDisabled('#download-tar'), true);
  assert.deepEqual(thirdErrors, []);
  await third.close();
});

// Issue 43: the first artifact first. The artifacts, the pass list and the timer's table
// come with the compile; the pass IR texts and the archive follow from the core's kept
// compile (held back here by a test hook), and Cancel stops them, leaving the page usable.
test('the artifacts come first, the pass IR texts follow; Cancel stops them; the timer\'s table', async () => {
  const { page, errors } = await openPage();
  await compileStatus(page);
  // The texts of every compile from now on are held back until stopped.
  await page.evaluate(() => history.replaceState(null, '', '?timeout_ms=600000&debug_details_ms=600000'));
  await clearStatus(page);
  await page.click('#compile');
  await page.waitForFunction(() => /compiled/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
  assert.equal(await page.getAttribute('body', 'data-details'), 'pending');
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  assert.match(await page.textContent('#artifact-view'), /int32_t matmul\(TVMValue\* args/);
  assert.equal(await page.$$eval('#passes .pass', (els) => els.length), 15);
  assert.match(await page.textContent('#pass-view'), /the IR text is being produced/);
  assert.equal(await page.isDisabled('#download-tar'), true);
  assert.equal(await page.isEnabled('#cancel'), true, 'Cancel stops the background texts too');
  // The editor answers while the texts are being made.
  await page.click('#editor .cm-content');
  await page.keyboard.type('# typed while the texts are made\n');
  assert.match(await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString()), /typed while/);
  // The timer's table beside the status: every pass of the list, and every step.
  assert.equal(await page.isHidden('#timing'), false);
  await page.click('#timing > summary');
  const rows = await page.$$eval('.timing-table tbody tr', (els) => els.map((e) => [...e.cells].map((c) => c.textContent.trim())));
  const passNames = await page.$$eval('#passes .pass', (els) => els.map((e) => e.textContent.replace(/^\d+\. /, '').replace(/ \(unchanged\)$/, '')));
  assert.deepEqual(rows.filter((r) => r[0] === 'pass').map((r) => r[1]), passNames);
  assert.deepEqual(rows.filter((r) => r[0] === 'step').map((r) => r[1]), ['lower', 'codegen', 'pass list']);
  assert.ok(rows.some((r) => r[0] === 'backend' && r[1] === 'c: kernels (lib0.c)'));
  assert.ok(rows.every((r) => Number(r[2]) >= 0), JSON.stringify(rows));
  await page.click('#timing > summary');  // closed again: the table lies over the panes
  await page.click('#cancel');
  await page.waitForFunction(() => document.body.dataset.details === 'done');
  assert.match(await page.textContent('#pass-view'), /the IR text was not produced: cancelled/);
  assert.match(await page.textContent('#status'), /compiled/);
  // Without the hook, the next compile's texts arrive.
  await page.evaluate(() => history.replaceState(null, '', '?'));
  await clearStatus(page);
  await page.click('#compile');
  await compileStatus(page);
  await page.click('#passes .pass:has-text("flatten_buffer")');
  assert.match(await page.textContent('#pass-view'), /C_flat\[i \* 3 \+ j\]/);
  assert.equal(await page.isEnabled('#download-tar'), true);
  assert.ok((await page.$$eval('.timing-table tbody tr', (els) => els.map((e) => e.cells[1].textContent.trim()))).includes('print IR'));
  assert.deepEqual(errors, []);
  await page.close();
});

test('Cancel stops the second of two quick compiles; a Run that times out says "run"', async () => {
  const { page, errors } = await openPage('?timeout_ms=60000');
  assert.match(await compileStatus(page), /compiled/);
  // Every compile from now on spins in the worker until stopped.
  await page.evaluate(() => history.replaceState(null, '', '?timeout_ms=60000&debug_spin_ms=600000'));
  await clearStatus(page);
  await page.click('#compile');
  await page.click('#compile');
  await page.waitForTimeout(300);
  assert.equal(await page.textContent('#status'), 'compiling…');
  assert.equal(await page.isEnabled('#cancel'), true, 'Cancel stays on for the compile that runs');
  await page.click('#cancel');
  assert.equal(await compileStatus(page), 'cancelled');
  assert.equal(await page.isDisabled('#cancel'), true);
  // A Run that takes too long is called a run.
  await page.evaluate(() => history.replaceState(null, '', '?timeout_ms=1500&debug_spin_ms=600000'));
  await clearStatus(page);
  await page.click('#run');
  assert.equal(await compileStatus(page), 'the run took longer than 1.5 s and was stopped');
  assert.match(await page.textContent('#run-output'), /no run: the run took longer/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the target form shows the target compiled and offers only combinations the core accepts', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  const used = () => page.evaluate(() => window.microtirPlayground.state.shown.target);
  // The model's weights are linked (the MLF default): the form says so.
  assert.match(await used(), /-link-params=1/);
  assert.match(await page.textContent('#target-used'), /compiled as: c .*-interface-api=c -unpacked-api=1 -link-params=1/);
  assert.equal(await page.inputValue('#opt-link-params'), '1');
  assert.equal(await page.inputValue('#opt-interface'), 'c');
  // The C interface refuses packed arguments (the core's words on the refused choice).
  assert.equal(await page.$eval('#opt-unpacked option[value="0"]', (o) => o.disabled), true);
  assert.equal(await page.$eval('#opt-unpacked option[value="0"]', (o) => o.title), '-interface-api=c with -runtime=c needs -unpacked-api=1');
  // Kind wasm: the form shows what wasm compiles with, and refuses the rest.
  await page.selectOption('#opt-kind', 'wasm');
  assert.match(await page.inputValue('#target'), /^wasm\b/);
  assert.equal(await page.inputValue('#opt-interface'), 'c');
  assert.equal(await page.inputValue('#opt-unpacked'), '1');
  assert.equal(await page.inputValue('#opt-link-params'), '1');
  assert.equal(await page.$eval('#opt-interface option[value="packed"]', (o) => o.disabled), true);
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  assert.match(await used(), /^wasm -opt=O2 .*-interface-api=c -unpacked-api=1 -link-params=1/);
  // wasm has no CPU: the form refuses every one with the core's words.
  assert.equal(await page.$eval('#opt-cpu option[value="cortex-m55"]', (o) => o.title), '-mcpu is an option of the c and llvm targets, not of "wasm"');
  // A CPU of the run targets: -mcpu (which picks the int8 schedules); with llvm, its triple too.
  await page.selectOption('#opt-kind', 'c');
  await page.selectOption('#opt-cpu', 'cortex-m55');
  assert.match(await page.inputValue('#target'), /^c .*-mcpu=cortex-m55/);
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  assert.match(await used(), /-mcpu=cortex-m55/);
  await page.selectOption('#opt-kind', 'llvm');
  assert.match(await page.inputValue('#target'), /^llvm .*-mcpu=cortex-m55.* -mtriple=thumbv8\.1m\.main-none-eabihf/);
  await page.selectOption('#opt-cpu', 'cortex-m33');
  assert.match(await page.inputValue('#target'), /-mcpu=cortex-m33.* -mtriple=thumbv8m\.main-none-eabihf/);
  await page.selectOption('#opt-cpu', '');
  assert.doesNotMatch(await page.inputValue('#target'), /-mcpu|-mtriple/);
  // Back to C, then the packed interface: the form sets -link-params=0 (the packed main
  // takes the weights as arguments) and the whole MLF downloads, metadata and header in it.
  await page.selectOption('#opt-kind', 'c');
  await page.selectOption('#opt-interface', 'packed');
  assert.equal(await page.inputValue('#opt-link-params'), '0');
  // (Linked weights are allowed with the packed interface too: its run entry adds them.)
  assert.equal(await page.$eval('#opt-link-params option[value="1"]', (o) => o.disabled), false);
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  assert.match(await used(), /-interface-api=packed -unpacked-api=1 -link-params=0/);
  for (const [id, v] of [['#opt-kind', 'c'], ['#opt-interface', 'packed'], ['#opt-unpacked', '1'], ['#opt-link-params', '0']])
    assert.equal(await page.inputValue(id), v, id);
  assert.equal(await page.textContent('#download-tar'), 'Download MLF .tar');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-tar')]);
  const tar = fs.readFileSync(await download.path()).toString('latin1');
  for (const f of ['metadata.json', 'codegen/host/include/tvmgen_digits.h', 'codegen/host/src/lib0.c', 'codegen/host/src/lib1.c'])
    assert.ok(tar.includes(f), `${f} in the .tar`);
  assert.match(tar, /"interface_api": "packed"/);
  // A target the core refuses typed into the box is its diagnostic, word for word.
  await page.fill('#target', 'c -interface-api=c -unpacked-api=0');
  assert.equal(await page.$eval('#opt-unpacked option[value="0"]', (o) => o.title),
    '-interface-api=c with -runtime=c needs -unpacked-api=1');
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /error/);
  assert.match(await page.textContent('#diagnostics'), /needs -unpacked-api=1/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('results of the last source do not linger: Run box, examples menu, TIR output roles', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  await page.click('#run');
  await page.waitForSelector('#run-output tr.run-buffer.output');
  await clearStatus(page);
  await page.selectOption('#examples', 'matmul (TIR)');
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.textContent('#run-output'), '', 'the digits outputs are gone');
  // A TIR run: C is computed (it started random), A and B are random inputs.
  await page.click('#run');
  await page.waitForSelector('#run-output tr.run-buffer');
  const roles = await page.$$eval('#run-output tr.run-buffer', (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
  assert.deepEqual(roles, [['A', 'random'], ['B', 'random'], ['C', 'output (started random)']]);
  assert.match(await page.textContent('#run-output .output-card[data-name="C"]'), /C: float32\[4, 3\]/);

  // A graph the user opened: the menu says so, and so does the link's page.
  const digits = path.resolve(__dirname, '../../models/digits');
  const graph = JSON.parse(fs.readFileSync(path.join(digits, 'digits.json'), 'utf8'));
  const files = [path.join(digits, 'digits.json'), ...graph.constants.flatMap((c) => [c.file, c.blob]).filter((f) => typeof f === 'string').map((f) => path.join(digits, f))];
  await clearStatus(page);
  await page.setInputFiles('#load', files);
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  const menu = () => page.$eval('#examples', (s) => s.options[s.selectedIndex].textContent);
  assert.equal(await menu(), '(your own source)');
  const link = page.url();
  await page.close();
  const { page: fresh } = await openPage(link.slice(base.length));
  await compileStatus(fresh);
  assert.equal(await fresh.$eval('#examples', (s) => s.options[s.selectedIndex].textContent), '(your own source)');
  await fresh.close();
  assert.deepEqual(errors, []);
});

test('artifacts: host and device kernels tabbed with their folders', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN on two NPUs (model)'));
  assert.match(await compileStatus(page), /compiled/);
  const labels = await page.$$eval('.artifact-tab', (els) => els.map((e) => e.textContent));
  for (const l of ['host/src/lib0.c', 'npu0/src/lib0.c', 'npu1/src/lib0.c', 'host/include/tvmgen_digits.h', 'metadata.json'])
    assert.ok(labels.includes(l), `${l} in ${labels.join(' ')}`);
  assert.equal(new Set(labels).size, labels.length, 'no two tabs with one name');
  assert.deepEqual(errors, []);
  await page.close();
});

test('every pass is marked changed exactly when its IR differs from the step before', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled/);
  for (const example of ['matmul (TIR)', 'digits CNN (model)']) {
    if (example !== 'matmul (TIR)') {
      await clearStatus(page);
      await page.selectOption('#examples', example);
      assert.match(await compileStatus(page), /compiled/);
    }
    const marks = await page.$$eval('#passes .pass', (els) => els.map((e) => e.classList.contains('changed')));
    const ir = await page.evaluate(() => { const r = window.microtirPlayground.state.shown; return [r.input_ir, ...r.passes.map((p) => p.ir)]; });
    assert.deepEqual(marks, ir.slice(1).map((t, i) => t !== ir[i]), example);
    // The first check changes nothing: its diff against the input is empty.
    await page.click('#passes .pass >> nth=0');
    await page.click('#show-diff');
    await page.waitForSelector('#pass-view .cm-mergeView');
    assert.match(await page.textContent('#pass-title'), /input → verify_well_formed \(no change\)/);
    assert.equal(await page.$$eval('#pass-view .cm-changedLine, #pass-view .cm-deletedChunk', (els) => els.length), 0);
    await page.click('#show-ir');
  }
  assert.deepEqual(errors, []);
  await page.close();
});

// ---- layout, access, outputs people read ----

test('layout: screenshots at three sizes; at 390 px the panes stack and nothing scrolls sideways; the splitter resizes', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'), { width: 1440, height: 900 });
  assert.match(await compileStatus(page), /compiled/);
  await page.click('#run');
  await page.waitForSelector('#run-output .top-classes');
  const box = (sel) => page.$eval(sel, (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
  for (const [w, h] of [[1440, 900], [800, 900], [390, 844]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.screenshot({ path: path.join(shots, `layout-${w}x${h}.png`), fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${w}px: the page is ${overflow}px wider than the window`);
    const src = await box('#source-pane');
    const res = await box('#result-pane');
    if (w <= 900) assert.ok(res.y >= src.y + src.h, `${w}px: the results are below the source`);
    else assert.ok(res.x >= src.x + src.w, `${w}px: the results are beside the source`);
  }
  // Wide: dragging the splitter and its arrow keys change the panes' widths.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.evaluate(() => window.scrollTo(0, 0));
  const before = (await box('#source-pane')).w;
  const s = await box('#splitter');
  await page.mouse.move(s.x + s.w / 2, s.y + 20);
  await page.mouse.down();
  await page.mouse.move(s.x + s.w / 2 + 200, s.y + 20, { steps: 4 });
  await page.mouse.up();
  const dragged = (await box('#source-pane')).w;
  assert.ok(dragged > before + 150, `dragged from ${before} to ${dragged}`);
  await page.focus('#splitter');
  await page.keyboard.press('ArrowLeft');
  assert.ok((await box('#source-pane')).w < dragged - 30);
  assert.deepEqual(errors, []);
  await page.close();
});

test('dark mode follows the system; the editor is labelled; the pass list works from the keyboard', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled/);
  const bg = (sel) => page.$eval(sel, (e) => getComputedStyle(e).backgroundColor);
  assert.equal(await bg('body'), 'rgb(246, 247, 249)');
  // Text contrast of at least 4.5:1 (WCAG AA) against the background it sits on.
  const contrasts = () => page.evaluate(() => {
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
      .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
    const background = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
    const out = {};
    for (const sel of ['header h1', '#version', '#source-name', '#status', '#target-used', '.pass.unchanged', '.pass.changed', '.pass.selected', 'summary', '.artifact-tab.active', '.artifact-tab:not(.active)', '#timings', '#intro p', '.diagnostic', '#model-summary']) {
      const e = document.querySelector(sel);
      if (!e) continue;
      const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(background(e))];
      out[sel] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    }
    return out;
  });
  for (const [scheme, ratios] of [['light', await contrasts()]]) {
    for (const [sel, r] of Object.entries(ratios)) assert.ok(r >= 4.5, `${scheme}: ${sel} has contrast ${r.toFixed(2)}`);
    assert.ok(Object.keys(ratios).length >= 10, Object.keys(ratios).join(' '));
  }
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => getComputedStyle(document.querySelector('#editor .cm-editor')).backgroundColor === 'rgb(30, 34, 42)');
  assert.equal(await bg('body'), 'rgb(21, 24, 30)');
  for (const [sel, r] of Object.entries(await contrasts())) assert.ok(r >= 4.5, `dark: ${sel} has contrast ${r.toFixed(2)}`);
  await page.screenshot({ path: path.join(shots, 'dark.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });

  // The editor is a labelled text box; Tab indents there and Ctrl+F searches.
  const source = page.getByRole('textbox', { name: 'Source: a TIR program or a JSON model graph' });
  assert.equal(await source.count(), 1);
  await page.evaluate(() => { const { editor } = window.microtirPlayground; editor.dispatch({ selection: { anchor: 0 } }); editor.focus(); });
  const first = await page.evaluate(() => window.microtirPlayground.editor.state.doc.line(1).text);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => window.microtirPlayground.editor.state.doc.line(1).text), `    ${first}`);
  await page.keyboard.press('Control+z');
  await page.keyboard.press('Control+f');
  await page.waitForSelector('#editor .cm-search input[name="search"]');
  await page.keyboard.type('T.grid');
  await page.keyboard.press('Enter');
  assert.match(await page.evaluate(() => { const { editor } = window.microtirPlayground; const r = editor.state.selection.main; return editor.state.sliceDoc(r.from, r.to); }), /^T\.grid$/);
  await page.keyboard.press('Escape');
  // The pass list: one tab stop, arrows move the selection, the view follows.
  const selected = () => page.$eval('#passes .pass.selected', (e) => Number(e.dataset.index));
  await page.click('#passes .pass >> nth=0');
  assert.equal(await selected(), 0);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  assert.equal(await selected(), 3);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.index), '3', 'focus follows the selection');
  assert.match(await page.textContent('#pass-title'), /after lower_allocate_const/);
  await page.keyboard.press('End');
  assert.equal(await selected(), 14);
  assert.equal(await page.getAttribute('#passes .pass.selected', 'aria-selected'), 'true');
  assert.equal(await page.$$eval('#passes .pass[tabindex="0"]', (els) => els.length), 1);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a classifier\'s outputs: the top classes with probabilities and bars; every output summarised', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  await page.click('#run');
  await page.waitForSelector('#run-output .top-classes');
  const out = await page.evaluate(() => window.microtirPlayground.state.shown.run.buffers.find((b) => b.role === 'output'));
  const order = out.values.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, 5);
  const rows = await page.$$eval('.top-class', (els) => els.map((e) => ({ cls: e.dataset.class, prob: e.querySelector('.class-prob').textContent, width: e.querySelector('.bar-fill').style.width })));
  assert.deepEqual(rows.map((r) => Number(r.cls)), order.map(([, i]) => i));
  assert.deepEqual(rows.map((r) => r.prob), order.map(([v]) => `${(v * 100).toFixed(1)}%`));
  assert.equal(rows[0].width, `${(order[0][0] * 100).toFixed(1)}%`);
  const min = Math.min(...out.values), max = Math.max(...out.values);
  const stats = await page.textContent(`.output-card[data-name="${out.name}"] .output-stats`);
  assert.ok(stats.startsWith(`10 values · min ${min.toPrecision(4)} · max ${max.toPrecision(4)}`), stats);
  assert.match(await page.textContent(`.output-card[data-name="${out.name}"] h4`), /float32\[1, 10\]/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the model view: the operator graph laid out by dagre, per-layer cost, a layer\'s kernel, TIR, C and memory', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.isVisible('#model-box'), true);
  const model = await page.evaluate(() => window.microtirPlayground.state.shown.model);
  // MACs from the shapes, by hand: conv2 is 16x4x4 outputs of 8x3x3 filters, fc 10 outputs of 64.
  const byName = Object.fromEntries(model.nodes.map((n) => [n.name, n]));
  assert.equal(byName.conv2.macs, 16 * 4 * 4 * 8 * 3 * 3);
  assert.equal(byName.fc.macs, 10 * 64);
  assert.equal(byName.fc.weight_bytes, (10 * 64 + 10) * 4);
  assert.equal(byName.pool1.activation_bytes, 8 * 4 * 4 * 4);
  assert.equal(model.macs, model.nodes.reduce((a, n) => a + n.macs, 0));
  assert.match(await page.textContent('#model-summary'), /^digits: 9 layers · 23\.7 k MACs · weights 7\.4 KiB/);
  // One box per operator and input, one edge per tensor between them, top to bottom.
  assert.equal(await page.$$eval('#model-graph .graph-node', (els) => els.length), model.nodes.length + model.inputs.length);
  const edges = model.nodes.reduce((a, n) => a + n.inputs.filter((x) => !model.constants.some((c) => c.name === x)).length, 0);
  assert.equal(await page.$$eval('#model-graph path.edge', (els) => els.length), edges);
  const ys = await page.$$eval('#model-graph .graph-node[data-name]', (els) => Object.fromEntries(els.map((e) => [e.dataset.name, e.getBoundingClientRect().y])));
  for (let i = 1; i < model.nodes.length; ++i) assert.ok(ys[model.nodes[i].name] > ys[model.nodes[i - 1].name], `${model.nodes[i].name} below its producer`);
  assert.match(await page.textContent('#model-costs tr[data-name="conv2"]'), /conv2conv2dfloat32\[1×16×4×4\]18\.4 k/);
  // A click shows the layer's kernel: its TIR, its C, its tensor in the memory plan.
  await page.click('#model-graph .graph-node[data-name="fc"]');
  assert.equal(await page.textContent('#model-detail h4'), 'fc (dense)');
  assert.match(await page.textContent('#model-detail .node-tir'), /^@T\.prim_func\n\s*def tvmgen_digits_fc\(/);
  assert.match(await page.textContent('#model-detail h5 >> nth=1'), /codegen\/host\/src\/lib0\.c/);
  assert.match(await page.textContent('#model-detail .node-generated'), /int32_t tvmgen_digits_fc\(.*\{/);
  assert.match(await page.textContent('#model-detail .node-memory'), /^fc: 40 bytes at offset \d+ of \w+, live from step \d+ to \d+ of tvmgen_digits___tvm_main__$/);
  // From the keyboard: a fused-away layer never reaches memory.
  await page.focus('#model-graph .graph-node[data-name="bn1"]');
  await page.keyboard.press('Enter');
  assert.match(await page.textContent('#model-detail .node-memory'), /bn1 stays inside the fused kernel tvmgen_digits_fused_bn1_relu1/);
  assert.match(await page.textContent('#model-detail h5'), /fused: bn1 \+ relu1/);
  await page.screenshot({ path: path.join(shots, 'model-view.png'), fullPage: true });
  // The ONNX model has the same view; a TIR program has none.
  await clearStatus(page);
  await page.selectOption('#examples', 'digits CNN (ONNX)');
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.$$eval('#model-graph .graph-node[data-name]', (els) => els.length), 9);
  await clearStatus(page);
  await page.selectOption('#examples', 'matmul (TIR)');
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.isHidden('#model-box'), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('Share copies the link (and says what it cannot carry); a first visit gets a "try this" strip', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled/);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  assert.equal(await page.isVisible('#intro'), true);
  assert.match(await page.textContent('#intro'), /What is this\?.*Try this:/s);
  await page.click('#intro-close');
  assert.equal(await page.isHidden('#intro'), true);
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  assert.equal(await page.isHidden('#intro'), true, 'dismissed for good');
  await page.click('#share');
  await page.waitForFunction(() => document.getElementById('share-note').textContent !== '');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), page.url());
  assert.match(await page.textContent('#share-note'), /^link copied \(\d+ characters\)$/);
  // A graph opened from files: its weights are not in the link, and Share says so.
  const digits = path.resolve(__dirname, '../../models/digits');
  const graph = JSON.parse(fs.readFileSync(path.join(digits, 'digits.json'), 'utf8'));
  const files = [path.join(digits, 'digits.json'), ...graph.constants.flatMap((c) => [c.file, c.blob]).filter((f) => typeof f === 'string').map((f) => path.join(digits, f))];
  await clearStatus(page);
  await page.setInputFiles('#load', files);
  assert.match(await compileStatus(page), /compiled/);
  await page.click('#share');
  await page.waitForFunction(() => /weight file/.test(document.getElementById('share-note').textContent));
  assert.match(await page.textContent('#share-note'), /link copied .*the link carries the graph's text, not its 9 weight file\(s\): send those too/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('source <-> output: hovering a TIR line marks the C lines it became, and back', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled/);
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  const text = await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString());
  const line = text.split('\n').findIndex((l) => l.includes('C[i, j] = C[i, j] + A[i, k] * B[k, j]')) + 1;
  await page.hover(`#editor .cm-line >> nth=${line - 1}`);
  await page.waitForSelector('#artifact-view .cm-mapped');
  const marked = await page.$$eval('#artifact-view .cm-mapped', (els) => els.map((e) => e.textContent.trim()));
  assert.deepEqual(marked, ['C[k_inv0] = (C[k_inv0] + (A[j_inv3 + k] * B[(k * 3) + j]));']);
  // The loop's line became the C loop, its invariants and its closing brace.
  const loop = text.split('\n').findIndex((l) => l.includes('for k in range(8):')) + 1;
  await page.hover(`#editor .cm-line >> nth=${loop - 1}`);
  await page.waitForFunction(() => document.querySelectorAll('#artifact-view .cm-mapped').length === 3);
  assert.deepEqual(await page.$$eval('#artifact-view .cm-mapped', (els) => els.map((e) => e.textContent.trim())),
    ['int32_t k_inv0 = (j_inv2 + j);', 'for (int32_t k = 0; k < 8; ++k) {', '}']);
  // Back: a C line marks its TIR line.
  await page.hover('#artifact-view .cm-line:has-text("C[j_inv2 + j] = 0.0f;")');
  await page.waitForFunction(() => /T\.float32\(0\)/.test((document.querySelector('#editor .cm-mapped') || {}).textContent || ''));
  assert.equal((await page.textContent('#editor .cm-mapped')).trim(), 'C[i, j] = T.float32(0)');
  // LLVM IR and WebAssembly text have the core's map too: the statement's arithmetic.
  for (const [target, file, inner] of [['llvm', 'codegen/host/src/lib0.ll', /= fadd float/], ['wasm -unpacked-api=1 -interface-api=c', 'codegen/host/src/lib0.wat', /f32\.add/]]) {
    await page.fill('#target', target);
    await clearStatus(page);
    await page.click('#compile');
    assert.match(await compileStatus(page), /compiled/);
    await page.click(`.artifact-tab[data-path="${file}"]`);
    await page.hover('#editor .cm-line >> nth=0');
    await page.hover(`#editor .cm-line >> nth=${line - 1}`);
    await page.waitForSelector('#artifact-view .cm-mapped');
    const lines = await page.$$eval('#artifact-view .cm-mapped', (els) => els.map((e) => e.textContent.trim()));
    assert.ok(lines.some((l) => inner.test(l)), `${file}: ${lines.join(' | ')}`);
  }
  await page.fill('#target', 'c');
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /compiled/);
  // Out of date results map nothing.
  await setSource(page, (t) => t.replace('T.grid(4, 3):', 'T.grid(4, 3:'));
  await clearStatus(page);
  await page.click('#compile');
  assert.match(await compileStatus(page), /error/);
  await page.hover(`#editor .cm-line >> nth=${line - 1}`);
  assert.equal(await page.$$eval('#artifact-view .cm-mapped', (els) => els.length), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

// A model's nodes against its generated files: hovering a node's line in the graph marks
// its kernel (and the AOT call of it); hovering a kernel line marks the nodes fused into it.
async function checkModelMapping(page, artifactPath, head) {
  await page.click(`.artifact-tab[data-path="${artifactPath}"]`);
  const r = await page.evaluate(() => window.microtirPlayground.state.response);
  const text = await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString());
  const lines = text.split('\n');
  const lineOf = (name) => lines.findIndex((l, i) => i > lines.findIndex((x) => /"nodes"/.test(x)) && l.replace(/"name"\s*:\s*/, '"name": ').includes(`"name": ${JSON.stringify(name)}`)) + 1;
  // The last layer with MACs (a dense layer): its kernel's lines and its call.
  const dense = [...r.model.nodes].reverse().find((n) => n.macs > 0);
  await page.hover(`#editor .cm-line >> nth=${lineOf(dense.name) - 1}`);
  await page.waitForSelector('#artifact-view .cm-mapped');
  assert.match(await page.textContent('#artifact-view .cm-mapped >> nth=0'), new RegExp(dense.kernel), 'scrolled to the kernel');
  // The view draws only the lines in sight: the map says which lines are marked.
  const map = await page.evaluate(() => window.microtirPlayground.state.lineMap.map);
  const out = r.artifacts.find((a) => a.path === artifactPath).text.split('\n');
  const marked = out.filter((_, i) => map[i].includes(lineOf(dense.name)));
  const definition = out.findIndex((l) => new RegExp(head(dense.kernel)).test(l));
  assert.ok(definition >= 0 && map[definition].includes(lineOf(dense.name)), `the definition of ${dense.kernel} is marked`);
  assert.ok(marked.length >= 3, marked.join('\n'));
  assert.ok(marked.some((l, i) => l.includes(dense.kernel) && !new RegExp(head(dense.kernel)).test(l) && /\(/.test(l)), `the call of ${dense.kernel} is marked`);
  assert.ok(out.some((l, i) => map[i].length === 0), 'lines outside the kernels map to nothing');
  // A kernel several nodes were fused into marks each of them.
  // (TFLite models fuse their activations in the operator: there a kernel is one node.)
  const fused = r.model.nodes.find((n, i) => r.model.nodes.some((m, j) => j !== i && m.kernel === n.kernel)) || r.model.nodes.find((n) => n.kernel);
  const together = r.model.nodes.filter((n) => n.kernel === fused.kernel).map((n) => lineOf(n.name));
  const fusedAt = out.findIndex((l) => new RegExp(head(fused.kernel)).test(l)) + 1;
  await page.evaluate((n) => {
    const v = window.microtirPlayground.state.artifactView;
    v.scrollDOM.scrollTop = v.lineBlockAt(v.state.doc.line(n).from).top;
  }, fusedAt);
  await page.hover(`#artifact-view .cm-line:has-text("${fused.kernel}") >> nth=0`);
  await page.waitForFunction((n) => document.querySelectorAll('#editor .cm-mapped').length === n, together.length);
  const editorMarked = await page.$$eval('#editor .cm-mapped', (els) => els.map((e) => e.textContent));
  assert.deepEqual(editorMarked, together.map((n) => lines[n - 1]));
}

test('source <-> output for models: graph nodes against their kernels in C, LLVM IR and WebAssembly text; ONNX and TFLite too', async () => {
  // Tall enough that the editor and the artifact view are on screen together: a view
  // draws only the lines in the window.
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'), { width: 1500, height: 3200 });
  assert.match(await compileStatus(page), /compiled/);
  // A C definition starts at the margin; an infallible kernel's call is an indented statement.
  await checkModelMapping(page, 'codegen/host/src/lib0.c', (k) => `^\\w[\\w ]*\\b${k}\\(`);
  for (const [target, file, head] of [['llvm -executor=aot -interface-api=c -unpacked-api=1', 'codegen/host/src/lib0.ll', (k) => `^define .*@${k}\\(`],
    ['wasm', 'codegen/host/src/digits.wat', (k) => `\\(func \\$${k}[\\s)]`]]) {
    await clearStatus(page);
    await page.fill('#target', target);
    await page.click('#compile');
    assert.match(await compileStatus(page), /compiled/);
    await checkModelMapping(page, file, head);
  }
  for (const model of [path.join(source, 'models/digits/digits.onnx'), digitsTflite()]) {
    await page.fill('#target', 'c');
    await clearStatus(page);
    await page.setInputFiles('#load', model);
    assert.match(await compileStatus(page), /compiled/, model);
    await checkModelMapping(page, 'codegen/host/src/lib0.c', (k) => `^\\w[\\w ]*\\b${k}\\(`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

function readNpy(file) {
  const b = fs.readFileSync(file);
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString('latin1');
  const data = b.subarray(10 + headerLen);
  if (/<i8/.test(header)) return Array.from({ length: data.length / 8 }, (_, i) => Number(data.readBigInt64LE(i * 8)));
  if (/\|i1/.test(header)) return Array.from(new Int8Array(data.buffer, data.byteOffset, data.length));
  return Array.from({ length: data.length / 4 }, (_, i) => data.readFloatLE(i * 4));
}

test('Run inputs from the model\'s test images: drawn as pictures, a click runs one; the numpy reference', async () => {
  const { page, errors } = await openPage('?example=' + encodeURIComponent('digits CNN (model)'));
  assert.match(await compileStatus(page), /compiled/);
  await page.waitForSelector('#samples .sample canvas');
  assert.equal(await page.$$eval('#samples .sample', (els) => els.length), 16);
  const labels = readNpy(path.resolve(__dirname, '../../models/digits/test_labels.npy'));
  const ref = readNpy(path.resolve(__dirname, '../../models/digits/reference_probs.npy'));
  assert.deepEqual(await page.$$eval('#samples .sample span', (els) => els.slice(0, 5).map((e) => Number(e.textContent))), labels.slice(0, 5));
  // The picture is the image: a dark pixel where the image is at its maximum.
  const dark = await page.$eval('#samples .sample[data-index="3"] canvas', (c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] === 0) ++n; return n; });
  assert.ok(dark >= 16, `${dark} black pixels`);
  await page.click('#samples .sample[data-index="3"]');
  await page.waitForSelector('#run-output .sample-result');
  const probs = await page.evaluate(() => window.microtirPlayground.state.shown.run.buffers.find((b) => b.role === 'output').values);
  probs.forEach((p, k) => assert.ok(Math.abs(p - ref[3 * 10 + k]) < 1e-5, `class ${k}: ${p} vs numpy ${ref[3 * 10 + k]}`));
  const top = probs.indexOf(Math.max(...probs));
  assert.equal(await page.textContent('#run-output .sample-result'), `test image 3 (label ${labels[3]}): predicted ${top}${top === labels[3] ? ', right' : ', wrong'}`);
  assert.equal(await page.getAttribute('#run-output .top-class >> nth=0', 'data-class'), String(top));
  // A TIR program has no samples.
  await clearStatus(page);
  await page.selectOption('#examples', 'matmul (TIR)');
  assert.match(await compileStatus(page), /compiled/);
  assert.equal(await page.$$eval('#samples .sample', (els) => els.length), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

// ---- issue 23: a .tflite model in the page, read by the core's own TFLite frontend ----

// Drops files ({name, bytes}) on an element of the page, as a user dragging them there.
async function dropFiles(page, selector, files) {
  await page.evaluate(({ selector, files }) => {
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(new File([new Uint8Array(f.bytes)], f.name));
    document.getElementById('status').textContent = '';
    document.querySelector(selector).dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { selector, files: files.map((f) => ({ name: f.name, bytes: [...f.bytes] })) });
}

test('Run on .npy files; a dropped .tflite compiles: its layers in the model view, Run on an .npy classifies, a malformed file is the core\'s named error', async () => {
  const tflite = digitsTflite();
  const { page, errors } = await openPage();
  await compileStatus(page);
  // First the .npy inputs on a TIR program (matmul, before any run): files named after its
  // buffers fill them; a name no buffer has is pointed out.
  const A = readNpy(path.join(source, 'examples/matmul_A.npy'));
  const B = readNpy(path.join(source, 'examples/matmul_B.npy'));
  await page.setInputFiles('#run-npy', [
    { name: 'A.npy', mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(source, 'examples/matmul_A.npy')) },
    { name: 'B.npy', mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(source, 'examples/matmul_B.npy')) },
    { name: 'X.npy', mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(source, 'examples/matmul_B.npy')) }]);
  await page.waitForSelector('#run-output .output-card');
  const C = (await page.evaluate(() => window.microtirPlayground.state.shown.run)).buffers.find((b) => b.name === 'C').values;
  for (let i = 0; i < 4; ++i) {
    for (let j = 0; j < 3; ++j) {
      let c = 0;
      for (let k = 0; k < 8; ++k) c = Math.fround(c + Math.fround(A[i * 8 + k] * B[k * 3 + j]));
      assert.ok(Math.abs(C[i * 3 + j] - c) <= 1e-5 * Math.max(1, Math.abs(c)), `C[${i}, ${j}] = ${C[i * 3 + j]}, A x B gives ${c}`);
    }
  }
  assert.equal(await page.textContent('#run-output .run-warning'), 'inputs given for no buffer of matmul: X (its buffers: A, B, C); they were not used');
  // The project's own int8 .tflite (digits), dropped on the editor as a user's file.
  await clearStatus(page);
  await dropFiles(page, '#source-pane', [{ name: 'digits_int8.tflite', bytes: fs.readFileSync(tflite) }]);
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  assert.equal(await page.textContent('#source-name'), 'digits_int8.json (from digits_int8.tflite)');
  // The core's TFLite frontend wrote the graph: TFLite's names, int8 input and its quantization.
  const graph = JSON.parse(await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString()));
  assert.deepEqual(graph.inputs, [{ name: 'x', shape: [1, 8, 8, 1], dtype: 'int8' }]);
  assert.deepEqual(graph.outputs, ['probs']);
  assert.ok(Math.abs(graph.quantization.x.scale - 1 / 255) < 1e-9);
  assert.deepEqual(graph.nodes.map((n) => n.op), ['qconv2d', 'max_pool2d', 'qconv2d', 'max_pool2d', 'reshape', 'qdense', 'qsoftmax']);
  // The model view lists every layer (one graph box and one cost row each); passes and C.
  const model = await page.evaluate(() => window.microtirPlayground.state.shown.model);
  assert.deepEqual(model.nodes.map((n) => n.name), graph.nodes.map((n) => n.name));
  assert.match(await page.textContent('#model-summary'), new RegExp(`^${graph.name}: ${graph.nodes.length} layers · 23\\.7 k MACs · weights `));
  assert.deepEqual(await page.$$eval('#model-costs tr.layer-row', (els) => els.map((e) => e.dataset.name)), graph.nodes.map((n) => n.name));
  assert.equal(await page.$$eval('#model-graph .graph-node[data-name]', (els) => els.length), graph.nodes.length);
  assert.ok(await page.$$eval('#passes .pass', (els) => els.length) > 5);
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  assert.match(await page.textContent('#artifact-view'), new RegExp(`tvmgen_${graph.name}_`));
  assert.match(await page.textContent('#artifact-count'), /\d/);
  await page.screenshot({ path: path.join(shots, 'tflite.png'), fullPage: true });

  // Run on an .npy (test image 0, int8 as the model's input): its label comes out on top.
  const images = fs.readFileSync(path.join(source, 'web/examples/digits_int8_images.npy'));
  const labels = readNpy(path.join(source, 'models/digits/test_labels.npy'));
  const image0 = images.subarray(images.length - 100 * 64, images.length - 99 * 64);
  const npy = (descr, shape, data) => {
    const header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')},), }`.padEnd(117, ' ') + '\n';
    return Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0, header.length, 0]), Buffer.from(header, 'latin1'), Buffer.from(data)]);
  };
  await page.setInputFiles('#run-npy', { name: 'x.npy', mimeType: 'application/octet-stream', buffer: npy('|i1', [1, 8, 8, 1], image0) });
  await page.waitForSelector('#run-output .output-card');
  const run = await page.evaluate(() => window.microtirPlayground.state.shown.run);
  assert.equal(run.buffers.find((b) => b.name === 'x').role, 'given');
  const out = run.buffers.find((b) => b.role === 'output');
  assert.equal(out.dtype, 'int8');
  assert.equal(out.values.indexOf(Math.max(...out.values)), labels[0]);
  assert.match(await page.textContent('#run-output .output-real'), /^real values \(scale 0\.00390625, zero point -128\): /);
  // An .npy of the wrong shape is refused before any run, naming both.
  await page.setInputFiles('#run-npy', { name: 'x.npy', mimeType: 'application/octet-stream', buffer: npy('|i1', [3], [1, 2, 3]) });
  await page.waitForFunction(() => /is int8\[3\], the input 'x' is int8\[1, 8, 8, 1\]/.test(document.getElementById('run-output').textContent));

  // A malformed .tflite (cut short), dropped: the core's named error, nothing compiled.
  await dropFiles(page, '#source-pane', [{ name: 'cut.tflite', bytes: fs.readFileSync(tflite).subarray(0, 2000) }]);
  assert.match(await compileStatus(page), /import error: cut\.tflite was not converted/);
  assert.match(await page.textContent('#diagnostics'), /cut\.tflite: not a valid TFLite model: the flatbuffer verifier rejects it/);
  assert.equal(await page.textContent('#source-name'), 'digits_int8.json (from digits_int8.tflite)');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a .tflite of MLPerf Tiny (../shared/tflite): Run on TFLite Micro\'s input gives TFLM\'s bytes', async (t) => {
  if (!haveShared()) return t.skip(SHARED_SKIP);
  const tflite = path.join(sharedTflite, 'models/ad01_int8.tflite');
  const ref = path.join(sharedTflite, 'reference/ad/lcg_00000001');
  const { page, errors } = await openPage();
  await compileStatus(page);
  await clearStatus(page);
  await page.setInputFiles('#load', tflite);
  assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
  assert.equal(await page.textContent('#source-name'), 'ad01_int8.json (from ad01_int8.tflite)');
  const graph = JSON.parse(await page.evaluate(() => window.microtirPlayground.editor.state.doc.toString()));
  assert.equal(graph.nodes.length, 10);
  assert.ok(graph.nodes.every((n) => n.op === 'qdense'), graph.nodes.map((n) => n.op).join(' '));
  assert.match(await page.textContent('#model-summary'), /^model: 10 layers · 264\.2 k MACs · weights 264\.5 KiB/);
  await page.setInputFiles('#run-npy', path.join(ref, 'input.npy'));
  await page.waitForSelector('#run-output .output-card');
  const run = await page.evaluate(() => window.microtirPlayground.state.shown.run);
  const input = graph.inputs[0].name;
  assert.equal(run.buffers.find((b) => b.name === input).role, 'given');
  const out = run.buffers.find((b) => b.role === 'output');
  assert.equal(out.dtype, 'int8');
  assert.deepEqual(out.values, readNpy(path.join(ref, 'output.npy')));
  assert.deepEqual(errors, []);
  await page.close();
});

// ---- issue 35: the model view's MACs and its labels ----

// Every text of every box in the model graph lies inside its box and over no other text of
// it (the layer name once sat over the operator name): the problems, by bounding boxes.
async function labelProblems(page) {
  return page.$$eval('#model-graph .graph-node', (groups) => {
    const problems = [];
    const r = (e) => e.getBoundingClientRect();
    for (const g of groups) {
      const box = r(g.querySelector('rect'));
      const texts = [...g.querySelectorAll('text')].map((t) => ({ text: t.textContent, r: r(t) }));
      for (const t of texts) {
        if (t.r.left < box.left - 0.5 || t.r.right > box.right + 0.5 || t.r.top < box.top - 0.5 || t.r.bottom > box.bottom + 0.5) problems.push(`"${t.text}" leaves its box`);
      }
      for (let i = 0; i < texts.length; ++i) {
        for (let j = i + 1; j < texts.length; ++j) {
          const a = texts[i].r, b = texts[j].r;
          if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) problems.push(`"${texts[i].text}" overlaps "${texts[j].text}"`);
        }
      }
    }
    return problems;
  });
}

// The view's MACs against the count from the .tflite's own tensors (wasm/test/tflite_macs.js),
// or for the float graphs of digits the same network's count; readable boxes; screenshots.
test('the model view: nominal MACs of every bundled model and the MLPerf .tflite files, readable layer boxes', async () => {
  const digitsMacs = tfliteMacs(fs.readFileSync(digitsTflite())).macs;
  const { page, errors } = await openPage();
  await compileStatus(page);
  const examples = await page.$$eval('#examples option', (els) => els.map((e) => e.value).filter(Boolean));
  const models = examples.filter((e) => /\((model|ONNX|TFLite)\)$/.test(e));
  assert.ok(models.includes('digits CNN int8 (TFLite)'), models.join(', '));
  for (const name of models) {
    await clearStatus(page);
    await page.selectOption('#examples', name);
    assert.match(await compileStatus(page), /compiled/, name);
    const model = await page.evaluate(() => window.microtirPlayground.state.shown.model);
    assert.equal(model.macs, digitsMacs, `${name}: the view's MACs`);
    assert.deepEqual(await labelProblems(page), [], name);
    console.log(`${name}: ${model.macs} MACs in the view, ${digitsMacs} from digits_int8.tflite's tensors`);
    if (name !== 'digits CNN int8 (TFLite)') continue;
    await page.locator('#model-graph').screenshot({ path: path.join(shots, 'model-boxes-digits-int8.png') });
    // Its pictures are the test images quantized as its int8 input: a click classifies one.
    await page.waitForSelector('#samples .sample canvas');
    await page.click('#samples .sample[data-index="3"]');
    await page.waitForSelector('#run-output .sample-result');
    assert.match(await page.textContent('#run-output .sample-result'), /^test image 3 \(label (\d)\): predicted \1, right$/);
  }
  if (haveShared()) {
    for (const [file, shot] of [['models/kws_ref_model.tflite', 'model-boxes-kws.png'], ['zoo/models/person_detect.tflite', 'model-boxes-person-detect.png']]) {
      const expected = tfliteMacs(fs.readFileSync(path.join(sharedTflite, file)));
      await clearStatus(page);
      await page.setInputFiles('#load', path.join(sharedTflite, file));
      assert.match(await compileStatus(page), /compiled/, file);
      const model = await page.evaluate(() => window.microtirPlayground.state.shown.model);
      assert.equal(model.macs, expected.macs, `${file}: the view's MACs`);
      const layers = (xs) => xs.map((x) => x.macs).filter((m) => m > 0).sort((a, b) => a - b);
      assert.deepEqual(layers(model.nodes), layers(expected.ops), `${file}: the layers' MACs`);
      assert.ok((await page.textContent('#model-summary')).includes(`${(expected.macs / 1e6).toFixed(2)} M MACs`));
      assert.deepEqual(await labelProblems(page), [], file);
      await page.locator('#model-graph').screenshot({ path: path.join(shots, shot) });
      console.log(`${file}: ${model.macs} MACs in the view, ${expected.macs} from its tensors`);
    }
  }
  assert.deepEqual(errors, []);
  await page.close();
});

// Last: the suite as a whole raised no page error and logged no console error.
test('no page error or console error during the whole suite', () => {
  assert.deepEqual(suiteErrors, []);
});
