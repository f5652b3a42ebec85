// The page's side of the compiler worker (worker.js): one request at a time, each with a
// timeout. A runaway compile cannot be interrupted inside wasm: the worker is terminated
// and a fresh one takes its place (Cancel, a timeout, or a newer request superseding it).
export function workerClient(script, timeoutMs) {
  let worker = null;
  let pending = null;  // { id, resolve, reject, timer }
  let nextId = 1;

  // The pending request's promise settles once, with the worker's answer or a failure.
  const settle = (fn, value) => {
    if (!pending) return;
    const p = pending;
    pending = null;
    clearTimeout(p.timer);
    p[fn](value);
  };

  function startWorker() {
    worker = new Worker(script);
    worker.onmessage = (e) => {
      if (!pending || e.data.id !== pending.id) return;
      if (e.data.error) settle('reject', new Error(e.data.error));
      else settle('resolve', e.data);
    };
    worker.onerror = (e) => settle('reject', new Error(e.message || 'the compiler worker failed'));
  }

  function stopWorker(reason) {
    if (worker) worker.terminate();
    startWorker();
    settle('reject', new Error(reason));
  }

  // `message`: {request} (a compile), {details} (the texts a compile deferred), {onnx:
  // bytes, filename} or {tflite: bytes, filename} (a model import); `what` names the job
  // in the timeout's message ("compile", "run", "ONNX import").
  function runInWorker(message, what) {
    if (pending) stopWorker('superseded by a newer request');
    return new Promise((resolve, reject) => {
      const id = nextId++;
      const ms = timeoutMs();
      const timer = setTimeout(() => stopWorker(`the ${what} took longer than ${ms / 1000} s and was stopped`), ms);
      pending = { id, resolve, reject, timer };
      const spin = Number(new URLSearchParams(location.search).get('debug_spin_ms')) || 0;
      const model = message.onnx || message.tflite;
      worker.postMessage({ id, ...message, debugSpinMs: spin }, model ? [model] : []);
    });
  }

  return { startWorker, stopWorker, runInWorker };
}
