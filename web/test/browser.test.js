// The playground end to end in Debian's Chromium (headless, driven by playwright-core)
// against the built page served on 127.0.0.1: compile the examples, the pass list and
// its diff, the C artifact, the memory chart, located errors, the timeout. Screenshots
// of the main views go to MICROTIR_SCREENSHOTS (default: beside the built page).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');
const { serve } = require('./serve.js');

const webDir = path.resolve(process.env.MICROTIR_WEB_DIR || path.join(__dirname, '../../build-wasm/web'));
const shots = path.resolve(process.env.MICROTIR_SCREENSHOTS || path.join(webDir, '../screenshots'));
const chromiumPath = process.env.MICROTIR_CHROMIUM || '/usr/bin/chromium';

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

async function openPage(query = '') {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + query);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  return { page, errors };
}

async function compileStatus(page) {
  await page.waitForFunction(() => /compiled|error|stopped|cancelled/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
  return page.textContent('#status');
}

test('the matmul example: passes, IR, a diff, the C artifact', async () => {
  const { page, errors } = await openPage();
  assert.match(await compileStatus(page), /compiled in \d+ ms/);
  const passes = await page.$$eval('#passes .pass', (els) => els.map((e) => ({ text: e.textContent, changed: e.classList.contains('changed') })));
  assert.equal(passes.length, 11);
  assert.match(passes[0].text, /verify_well_formed/);
  assert.ok(passes.some((p) => p.changed && /flatten_buffer/.test(p.text)));
  assert.ok(passes.some((p) => !p.changed && /unchanged/.test(p.text)));
  // The C kernel is on screen.
  await page.click('.artifact-tab[data-path="codegen/host/src/lib0.c"]');
  const c = await page.textContent('#artifact-view');
  assert.match(c, /int32_t matmul\(TVMValue\* args/);
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
  assert.match(await page.textContent('#pass-view .cm-merge-b'), /arg_type_ids/);
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

  const fresh = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await fresh.goto(url);
  await fresh.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
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
  const names = await page.$$eval('#examples option', (els) => els.map((e) => e.value));
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
  const source = path.resolve(__dirname, '../..');
  const onnx = path.join(source, 'models/digits/digits.onnx');
  const native = fs.mkdtempSync(path.join(require('os').tmpdir(), 'mtir-onnx-'));
  try {
    require('child_process').execFileSync(cli, ['compile', onnx, '-o', native]);
    const { page, errors } = await openPage();
    await compileStatus(page);
    await page.evaluate(() => { document.getElementById('status').textContent = ''; });
    await page.setInputFiles('#load', onnx);
    assert.match(await compileStatus(page), /compiled/, await page.textContent('#diagnostics'));
    assert.equal(await page.textContent('#source-name'), 'digits.json (from digits.onnx)');
    assert.equal(await page.inputValue('#target'), 'c -executor=aot -interface-api=c -unpacked-api=1');  // compile's default
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
