#include "sim/wasm_module_runner.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "sim/process.h"
#include "support/diagnostic.h"

namespace fs = std::filesystem;

namespace mtir::sim {

const char* const kWasmModuleEnv =
#include "wasm_module_env.inc"
    ;

const char* const kWasmModuleRunner = R"JS(// Runs a microtir wasm module under node.
//   node run_module.mjs model MODULE.wasm SPEC.json   a model's run export
//     SPEC: {"inputs": [{"name", "files": [one raw file per run]}], "outputs": [{"name", "bytes"}],
//            "out_dir", "timing_runs"}; prints "@mtir time_ns N" (mean per inference).
//   node run_module.mjs call MODULE.wasm SPEC.json    exported functions on buffers
//     SPEC: {"calls": [{"function", "args": [{"file", "bytes"}]}]}: for each call, the buffers
//     are placed in fresh memory, the function called with their addresses, and each
//     buffer written back to FILE.out.
import fs from 'node:fs';

import { env, lastError } from './module_env.mjs';

const f = Math.fround;
const [mode, modulePath, specPath] = process.argv.slice(2);
const spec = JSON.parse(fs.readFileSync(specPath, 'utf8'));

// The simulated NPU of sim/npu/sim_npu.c (the same arithmetic, call order checks and
// counters) for models with device kernels: run gets the contexts 1, 2, ... in the
// order of spec.devices, and the kernels and hooks are the module's "env" imports.
const LAUNCH_CYCLES = 100, MACS_PER_CYCLE = 4, EBADSTATE = -0x4e50;
const npus = (spec.devices || []).map((name) => ({ name, active: 0, open: 0, activations: 0, kernels: 0, macs: 0, cycles: 0 }));
let ex;
const npu = (ctx) => npus[ctx - 1];
function kernel(ctx) {
  const n = npu(ctx);
  if (!n || !n.open) return null;
  n.kernels++;
  return n;
}
function charge(n, macs) {
  n.macs += macs;
  n.cycles += LAUNCH_CYCLES + Math.ceil(macs / MACS_PER_CYCLE);
}
const device = {
  TVMDeviceNpuActivate(ctx) { const n = npu(ctx); if (!n || n.active) return EBADSTATE; n.active = 1; n.activations++; return 0; },
  TVMDeviceNpuOpen(ctx) { const n = npu(ctx); if (!n || !n.active || n.open) return EBADSTATE; n.open = 1; return 0; },
  TVMDeviceNpuClose(ctx) { const n = npu(ctx); if (!n || !n.open) return EBADSTATE; n.open = 0; return 0; },
  TVMDeviceNpuDeactivate(ctx) { const n = npu(ctx); if (!n || !n.active || n.open) return EBADSTATE; n.active = 0; return 0; },
  npu_conv2d(data, weight, bias, out, hasBias, n, c, h, w, o, kh, kw, groups, sh, sw, dh, dw, pt, pl, oh, ow, ctx) {
    const d = kernel(ctx);
    if (!d || groups <= 0 || c % groups || o % groups) return EBADSTATE;
    const m = new Float32Array(ex.memory.buffer), x = data >> 2, k = weight >> 2, b = bias >> 2, y = out >> 2;
    const cg = c / groups, og = o / groups;
    for (let bn = 0; bn < n; bn++)
      for (let oc = 0; oc < o; oc++)
        for (let yh = 0; yh < oh; yh++)
          for (let yw = 0; yw < ow; yw++) {
            let acc = hasBias ? m[b + oc] : 0;
            for (let ic = 0; ic < cg; ic++)
              for (let ry = 0; ry < kh; ry++)
                for (let rx = 0; rx < kw; rx++) {
                  const iy = yh * sh + ry * dh - pt, ix = yw * sw + rx * dw - pl;
                  const channel = Math.floor(oc / og) * cg + ic;
                  const v = iy >= 0 && iy < h && ix >= 0 && ix < w ? m[x + ((bn * c + channel) * h + iy) * w + ix] : 0;
                  acc = f(acc + f(v * m[k + ((oc * cg + ic) * kh + ry) * kw + rx]));
                }
            m[y + ((bn * o + oc) * oh + yh) * ow + yw] = acc;
          }
    charge(d, n * o * oh * ow * cg * kh * kw);
    return 0;
  },
  npu_dense(data, weight, bias, out, hasBias, batch, inFeatures, outFeatures, ctx) {
    const d = kernel(ctx);
    if (!d) return EBADSTATE;
    const m = new Float32Array(ex.memory.buffer), x = data >> 2, k = weight >> 2, b = bias >> 2, y = out >> 2;
    for (let i = 0; i < batch; i++)
      for (let j = 0; j < outFeatures; j++) {
        let acc = hasBias ? m[b + j] : 0;
        for (let q = 0; q < inFeatures; q++) acc = f(acc + f(m[x + i * inFeatures + q] * m[k + j * inFeatures + q]));
        m[y + i * outFeatures + j] = acc;
      }
    charge(d, batch * outFeatures * inFeatures);
    return 0;
  },
};

const { instance } = await WebAssembly.instantiate(fs.readFileSync(modulePath), { env: { ...env, ...device } });
ex = instance.exports;
function check(rc, what) {
  if (rc !== 0) {
    console.error(`${what} returned ${rc}: ${lastError(ex) || '(no message)'}`);
    process.exit(3);
  }
}

if (mode === 'call') {
  const round16 = (n) => Math.ceil(Math.max(n, 1) / 16) * 16;
  for (const c of spec.calls) {
    let at = ex.memory.buffer.byteLength;
    const need = c.args.reduce((n, a) => n + round16(a.bytes), 0);
    ex.memory.grow(Math.ceil(need / 65536));
    const ptrs = c.args.map((a) => {
      const p = at;
      new Uint8Array(ex.memory.buffer, p, a.bytes).set(fs.readFileSync(a.file));
      at += round16(a.bytes);
      return p;
    });
    check(ex[c.function](...ptrs), c.function);
    c.args.forEach((a, i) => fs.writeFileSync(a.file + '.out', new Uint8Array(ex.memory.buffer, ptrs[i], a.bytes)));
  }
  process.exit(0);
}

const ins = spec.inputs.map((i) => ex['input:' + i.name].value);
const outs = spec.outputs.map((o) => ex['output:' + o.name].value);
const runs = spec.inputs.length ? spec.inputs[0].files.length : 1;
const contexts = npus.map((_, i) => i + 1);
const call = () => check(ex.run(...ins, ...outs, ...contexts), 'run');
for (let s = 0; s < runs; s++) {
  if (ex.reset) check(ex.reset(), 'reset');  // every input set from the initial state
  spec.inputs.forEach((input, i) => {
    const bytes = fs.readFileSync(input.files[s]);
    new Uint8Array(ex.memory.buffer, ins[i], bytes.length).set(bytes);
  });
  call();
  spec.outputs.forEach((o, k) => {
    fs.writeFileSync(`${spec.out_dir}/out_${s}_${k}.bin`, new Uint8Array(ex.memory.buffer, outs[k], o.bytes));
  });
}
for (const d of npus)
  console.log(`@mtir device ${d.name}: ${d.activations} activations, ${d.kernels} kernels, ${d.macs} MACs, ${d.cycles} cycles`);
const n = spec.timing_runs;
const t0 = process.hrtime.bigint();
for (let r = 0; r < n; r++) call();
const t1 = process.hrtime.bigint();
console.log(`@mtir time_ns ${n ? Number(t1 - t0) / n : 0}`);
console.log(`@mtir memory_bytes ${ex.memory.buffer.byteLength}`);
)JS";

namespace {

[[noreturn]] void fail(const std::string& message) { user_error(Span{}, message); }

void write_bytes(const fs::path& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) fail("cannot write " + path.string());
}

void write_text_file(const fs::path& path, const std::string& text) { write_bytes(path, text.data(), text.size()); }

// Writes the runner and the spec into `work`, runs node under a timeout, returns its output.
std::string run_node(const fs::path& work, const std::string& mode, const std::string& module,
                     const nlohmann::json& spec, int timeout_seconds) {
  write_text_file(work / "module_env.mjs", kWasmModuleEnv);
  write_text_file(work / "run_module.mjs", kWasmModuleRunner);
  write_text_file(work / "spec.json", spec.dump(2));
  const fs::path log = work / "run.log";
  const std::string timeout = std::to_string(timeout_seconds);
  int rc = run_process({"timeout", timeout, "node", "--no-warnings", (work / "run_module.mjs").string(), mode, module,
                        (work / "spec.json").string()},
                       log);
  std::string out = read_text(log);
  if (rc == 124) fail("the wasm module did not finish within " + timeout + " s (a hang?); see " + log.string());
  if (rc != 0) {
    std::string first = out.substr(0, out.find('\n'));
    fail("the wasm module failed under node (exit " + std::to_string(rc) + "): " + first + "; see " + log.string());
  }
  return out;
}

}  // namespace

void run_wasm_calls(const std::string& module, const std::vector<WasmCall>& calls, const std::string& work_dir,
                    int timeout_seconds) {
  const fs::path work = work_dir;
  fs::create_directories(work);
  nlohmann::json spec = {{"calls", nlohmann::json::array()}};
  std::vector<std::pair<fs::path, NDArray*>> files;
  for (const auto& call : calls) {
    nlohmann::json args = nlohmann::json::array();
    for (NDArray* b : call.buffers) {
      fs::path p = work / ("arg" + std::to_string(files.size()) + ".bin");
      write_bytes(p, b->data.data(), b->data.size());
      args.push_back({{"file", p.string()}, {"bytes", b->data.size()}});
      files.emplace_back(p, b);
    }
    spec["calls"].push_back({{"function", call.function}, {"args", args}});
  }
  run_node(work, "call", module, spec, timeout_seconds);
  for (const auto& [path, b] : files) {
    std::string bytes = read_text(path.string() + ".out");
    if (bytes.size() != b->data.size()) fail("the wasm call did not write back " + path.string());
    std::copy(bytes.begin(), bytes.end(), b->data.begin());
  }
}

ArtifactRunResult run_wasm_module(const ArtifactInfo& info, const std::vector<ArtifactTensor>& inputs,
                                  const std::vector<std::vector<NDArray>>& samples,
                                  const std::vector<ArtifactTensor>& outputs, const ArtifactRunOptions& options) {
  const CrossTarget& t = find_cross_target(options.target);
  require_target_tools(t);
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const fs::path work = options.work_dir;
  fs::create_directories(work);
  progress("[1/2] wasm-binaryen: writing the inputs and run_module.mjs to " + work.string());
  nlohmann::json spec = {{"inputs", nlohmann::json::array()}, {"outputs", nlohmann::json::array()},
                         {"out_dir", work.string()}, {"timing_runs", 20}, {"devices", info.devices}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    nlohmann::json files = nlohmann::json::array();
    for (size_t s = 0; s < samples.size(); ++s) {
      const NDArray& a = samples[s].at(i);
      fs::path p = work / ("in_" + std::to_string(s) + "_" + std::to_string(i) + ".bin");
      write_bytes(p, a.data.data(), a.data.size());
      files.push_back(p.string());
    }
    spec["inputs"].push_back({{"name", inputs[i].c_name}, {"files", files}});  // exported as input:<c_name>
  }
  for (const auto& o : outputs) {
    int64_t n = 1;
    for (int64_t d : o.shape) n *= d;
    spec["outputs"].push_back({{"name", o.c_name}, {"bytes", n * o.dtype.bytes()}});
  }
  progress("[2/2] wasm-binaryen: running " + info.wasm_module + " under node");
  const fs::path log = work / "run.log";
  std::string out = run_node(work, "model", info.wasm_module, spec, options.timeout_seconds);
  ArtifactRunResult result;
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<NDArray> run_outputs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      NDArray a = NDArray::zeros(outputs[k].dtype, outputs[k].shape);
      std::string bytes = read_text(work / ("out_" + std::to_string(s) + "_" + std::to_string(k) + ".bin"));
      if (bytes.size() != a.data.size()) fail("the wasm module's output '" + outputs[k].name + "' is missing; see " + log.string());
      std::copy(bytes.begin(), bytes.end(), a.data.begin());
      run_outputs.push_back(std::move(a));
    }
    result.outputs.push_back(std::move(run_outputs));
  }
  TargetReport& r = result.report;
  r.target = t.name;
  r.board = t.board;
  r.compiler = "microtir wasm backend + Binaryen";
  r.flash_bytes = static_cast<int64_t>(fs::file_size(info.wasm_module));
  r.workspace_bytes = info.workspace_bytes;
  auto figure = [&](const std::string& key) -> double {
    size_t at = out.find("@mtir " + key + " ");
    return at == std::string::npos ? -1 : std::stod(out.substr(at + 7 + key.size()));
  };
  r.ram_bytes = static_cast<int64_t>(figure("memory_bytes"));
  char timing[128];
  std::snprintf(timing, sizeof timing, "node has no instruction counter; %.1f us per inference, mean of 20 runs",
                figure("time_ns") / 1000.0);
  r.counter_method = timing;
  r.run_log = log.string();
  // The simulated NPU's counters after the input sets (before the timing runs).
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("@mtir device ", 0) == 0) result.devices.push_back(l.substr(13));
  return result;
}

}  // namespace mtir::sim
